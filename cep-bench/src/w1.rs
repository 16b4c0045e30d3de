//! W1 ticks (DESIGN.md §3), generated exactly as specified so that anyone
//! can regenerate the same stream.
//!
//! An xorshift64 generator (state `0x9E3779B97F4A7C15`; `x ^= x << 13;
//! x ^= x >> 7; x ^= x << 17`, each draw returning the new state) drives,
//! per tick `i`, four draws in this order: the key (`% 10000`); the price
//! step (`% 41 - 20`); a jump (`% 400 == 0` adds `p / 30` of the old price);
//! the volume (`% 50 == 0` gives 2000, else 10). Prices start at 10000 and
//! never fall below 1; `ts = 2 * i` ms; type `Tick`; columns
//! `type,ts,key,price,vol`.

use std::io::{self, Write};

use cep_core::{Event, Schema, Sym, Timestamp, Value};
use cep_nfa::builder::PatternBuilder;
use cep_nfa::engine::StreamEvent;
use cep_nfa::program::{Program, Selection, Window};

/// The rise / spike / quiet query of LANGUAGE.md §7.
pub const RISE_SPIKE: &str = include_str!("../../testdata/rise_spike.cep");

/// Number of keys.
pub const KEYS: usize = 10_000;
/// Number of ticks in the full stream.
pub const TICKS: usize = 3_000_000;

/// The xorshift64 generator of DESIGN.md §3.
#[derive(Clone, Debug)]
pub struct XorShift64(u64);

impl Default for XorShift64 {
    fn default() -> Self {
        XorShift64(0x9E37_79B9_7F4A_7C15)
    }
}

impl XorShift64 {
    /// The next draw.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// One W1 tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Row number, from 0.
    pub row: u64,
    /// Milliseconds.
    pub ts: i64,
    /// 0..10000.
    pub key: i64,
    /// Cents, ≥ 1.
    pub price: i64,
    /// 10 or 2000.
    pub vol: i64,
}

impl StreamEvent for Tick {
    #[inline]
    fn timestamp(&self) -> Timestamp {
        self.ts
    }
    #[inline]
    fn row(&self) -> Option<u64> {
        Some(self.row)
    }
}

/// The rise / spike / quiet pattern of [`RISE_SPIKE`], built with closures
/// over [`Tick`]s instead of compiled from text: the same matches, without
/// the dynamic event rows.
pub fn rise_spike_builder() -> Program<Tick> {
    let mut p = PatternBuilder::<Tick>::new("rise_spike");
    p.partition_by(|t| Value::Int(t.key)).select(Selection::Earliest);
    let prev = p.previous(|t| Value::Int(t.price), 1);
    let r = p.element("r", |_| true);
    p.condition(r, move |t, ctx| ctx.frame(prev).as_i64().is_some_and(|pp| t.price * 100 >= pp * 102));
    let s = p.element("s", |t| t.vol >= 1000);
    p.element_within(s, Window::Time(60_000));
    let sp = p.capture(s, |t| Value::Int(t.price));
    p.trailing_not(
        "v",
        |_| true,
        10_000,
        move |t, ctx| ctx.captured(sp).as_i64().is_some_and(|sp| t.price * 100 <= sp * 99),
    );
    p.build().expect("the rise_spike pattern builds")
}

/// The W1 tick stream.
///
/// # Examples
/// ```
/// use cep_bench::w1::Ticks;
/// let first: Vec<_> = Ticks::new(3).collect();
/// assert_eq!(first.len(), 3);
/// assert_eq!(first[1].ts, 2);
/// assert!(first.iter().all(|t| (0..10_000).contains(&t.key)));
/// ```
#[derive(Clone, Debug)]
pub struct Ticks {
    rng: XorShift64,
    prices: Vec<i64>,
    i: u64,
    n: u64,
}

impl Ticks {
    /// The first `n` ticks.
    pub fn new(n: usize) -> Ticks {
        Ticks { rng: XorShift64::default(), prices: vec![10_000; KEYS], i: 0, n: n as u64 }
    }
}

impl Iterator for Ticks {
    type Item = Tick;

    fn next(&mut self) -> Option<Tick> {
        if self.i >= self.n {
            return None;
        }
        let key = (self.rng.next_u64() % KEYS as u64) as usize;
        let p = self.prices[key];
        let step = (self.rng.next_u64() % 41) as i64 - 20;
        let jump = if self.rng.next_u64() % 400 == 0 { p / 30 } else { 0 };
        let price = (p + step + jump).max(1);
        self.prices[key] = price;
        let vol = if self.rng.next_u64() % 50 == 0 { 2000 } else { 10 };
        let t = Tick { row: self.i, ts: 2 * self.i as i64, key: key as i64, price, vol };
        self.i += 1;
        Some(t)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.n - self.i) as usize;
        (left, Some(left))
    }
}

/// A schema with the W1 columns (`key`, `price`, `vol`), complete.
pub fn schema() -> Schema {
    let mut s = Schema::new();
    for f in ["key", "price", "vol"] {
        s.field(f);
    }
    s.close_fields();
    s.observe(Sym::new("Tick"), &[Value::Int(0), Value::Int(0), Value::Int(0)]);
    s.set_complete(true);
    s
}

/// Fills `e` with tick `t` (fields in [`schema`] order), reusing its buffer.
#[inline]
pub fn fill(e: &mut Event, t: &Tick, tick_type: cep_core::Sym) {
    e.ty = tick_type;
    e.ts = t.ts;
    e.row = t.row;
    e.fields.clear();
    e.fields.extend([Value::Int(t.key), Value::Int(t.price), Value::Int(t.vol)]);
}

/// Writes the first `n` ticks as JSON lines (one object per tick: `type`,
/// `ts`, `key`, `price`, `vol`), as a Kafka topic carries them.
pub fn write_jsonl(out: &mut impl Write, n: usize) -> io::Result<()> {
    for t in Ticks::new(n) {
        writeln!(out, r#"{{"type":"Tick","ts":{},"key":{},"price":{},"vol":{}}}"#, t.ts, t.key, t.price, t.vol)?;
    }
    Ok(())
}

/// Writes the first `n` ticks as CSV (`type,ts,key,price,vol`).
pub fn write_csv(out: &mut impl Write, n: usize) -> io::Result<()> {
    writeln!(out, "type,ts,key,price,vol")?;
    for t in Ticks::new(n) {
        writeln!(out, "Tick,{},{},{},{}", t.ts, t.key, t.price, t.vol)?;
    }
    Ok(())
}

//! W4, the SASE+ Kleene benchmark (DESIGN.md §3): two stock symbols, each
//! with its own price random walk, and [`QUERY`] (`SEQ(Stock+ a[], Stock b)`
//! under skip-till-next-match, partitioned by symbol).
//!
//! Generator: the W1 xorshift64 ([`XorShift64::default`], state
//! `0x9E3779B97F4A7C15`; each `rnd` is a fresh draw), per event `i`, in
//! this order:
//!
//! 1. `s = rnd % 2`: the symbol, the string `"S0"` or `"S1"`;
//! 2. `m = rnd % 100`: if `m < 70` the symbol's price `p` rises by
//!    `1 + rnd % 3` (a third draw); else if `m < 85` it falls by
//!    `1 + rnd % 3` (a third draw), floored at 1; else it is unchanged (no
//!    third draw);
//! 3. `volume = rnd % 1000`.
//!
//! Both prices start at 1000 (the event carries the new price); `ts = i`
//! (so `WITHIN 500` is 500 positions of the whole stream); type `Stock`;
//! CSV columns `type,ts,symbol,price,volume`. 1,000,000 events by default.
//! The symbol is a string column, as in SASE+'s stock stream; `[symbol]`
//! partitions by it. The stream has 5,025 matches ([`MATCHES`]).

use std::io::{self, Write};

use cep_core::{Event, Schema, Sym, Value};

use crate::w1::XorShift64;

/// Events in the default stream.
pub const EVENTS: usize = 1_000_000;

/// Number of symbols.
pub const SYMBOLS: usize = 2;

/// The symbol names, indexed by [`Trade::symbol`].
pub const SYMBOL_NAMES: [&str; SYMBOLS] = ["S0", "S1"];

/// Matches of [`QUERY`] over the 1,000,000 events (found by the run
/// engine; it agrees with the reference matcher on prefixes).
pub const MATCHES: usize = 5_025;

/// The starting price of every symbol.
pub const START_PRICE: i64 = 1000;

/// The W4 query, exactly as DESIGN.md §3 states it.
pub const QUERY: &str = "PATTERN SEQ(Stock+ a[], Stock b) WHERE skip-till-next-match AND [symbol] \
AND a[1].price % 500 = 0 AND a[i].price > a[i-1].price AND b.volume < 150 WITHIN 500";

/// One W4 event (type `Stock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trade {
    /// Row number, from 0.
    pub row: u64,
    /// Equal to `row`.
    pub ts: i64,
    /// 0 or 1: `"S0"` or `"S1"` (see [`SYMBOL_NAMES`]).
    pub symbol: u8,
    /// The symbol's new price, ≥ 1.
    pub price: i64,
    /// 0..1000.
    pub volume: i64,
}

/// The W4 stream.
///
/// # Examples
/// ```
/// use cep_bench::w4::Trades;
/// let v: Vec<_> = Trades::new(10_000).collect();
/// assert_eq!(v.len(), 10_000);
/// assert!(v.iter().all(|t| t.symbol < 2 && t.volume < 1000 && t.price >= 1));
/// // The walks drift upwards: 70 % up, 15 % down, by 1..=3.
/// assert!(v.last().unwrap().price > 1000);
/// ```
#[derive(Clone, Debug)]
pub struct Trades {
    rng: XorShift64,
    prices: [i64; SYMBOLS],
    i: u64,
    n: u64,
}

impl Trades {
    /// The first `n` events.
    pub fn new(n: usize) -> Trades {
        Trades { rng: XorShift64::default(), prices: [START_PRICE; SYMBOLS], i: 0, n: n as u64 }
    }
}

impl Iterator for Trades {
    type Item = Trade;

    fn next(&mut self) -> Option<Trade> {
        if self.i >= self.n {
            return None;
        }
        let symbol = (self.rng.next_u64() % SYMBOLS as u64) as usize;
        let m = self.rng.next_u64() % 100;
        let p = &mut self.prices[symbol];
        if m < 70 {
            *p += 1 + (self.rng.next_u64() % 3) as i64;
        } else if m < 85 {
            *p = (*p - 1 - (self.rng.next_u64() % 3) as i64).max(1);
        }
        let price = *p;
        let volume = (self.rng.next_u64() % 1000) as i64;
        let t = Trade { row: self.i, ts: self.i as i64, symbol: symbol as u8, price, volume };
        self.i += 1;
        Some(t)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.n - self.i) as usize;
        (left, Some(left))
    }
}

/// Interned names for [`fill`]: the type `Stock` and the symbols.
#[derive(Clone, Copy, Debug)]
pub struct Syms {
    /// `Stock`.
    pub stock: Sym,
    /// `S0`, `S1`.
    pub symbols: [Sym; SYMBOLS],
}

impl Syms {
    /// Interns the names.
    pub fn new() -> Syms {
        Syms { stock: Sym::new("Stock"), symbols: SYMBOL_NAMES.map(Sym::new) }
    }
}

impl Default for Syms {
    fn default() -> Syms {
        Syms::new()
    }
}

/// A complete schema: fields `symbol` (string), `price`, `volume` (ints), in
/// that order; type `Stock`.
pub fn schema() -> Schema {
    let mut s = Schema::new();
    for f in ["symbol", "price", "volume"] {
        s.field(f);
    }
    s.close_fields();
    s.observe(Sym::new("Stock"), &[Value::str("S0"), Value::Int(0), Value::Int(0)]);
    s.set_complete(true);
    s
}

/// Fills `e` with trade `t` (fields in [`schema`] order), reusing its buffer.
#[inline]
pub fn fill(e: &mut Event, t: &Trade, syms: &Syms) {
    e.ty = syms.stock;
    e.ts = t.ts;
    e.row = t.row;
    e.fields.clear();
    e.fields.extend([Value::Str(syms.symbols[t.symbol as usize]), Value::Int(t.price), Value::Int(t.volume)]);
}

/// Writes the first `n` events as CSV (`type,ts,symbol,price,volume`).
pub fn write_csv(out: &mut impl Write, n: usize) -> io::Result<()> {
    writeln!(out, "type,ts,symbol,price,volume")?;
    for t in Trades::new(n) {
        writeln!(out, "Stock,{},{},{},{}", t.ts, SYMBOL_NAMES[t.symbol as usize], t.price, t.volume)?;
    }
    Ok(())
}

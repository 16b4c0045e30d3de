//! W3, the CORE synthetic sequence stream (DESIGN.md §3): three pattern
//! types `AA`, `AB`, `AC` among six noise types `N1`..`N6`, for
//! `SEQ(AA a, AB b, AC c)` under skip-till-any-match `WITHIN 100 EVENTS`.
//!
//! Generator: the W1 xorshift64 ([`XorShift64::default`], state
//! `0x9E3779B97F4A7C15`), one draw per event: type = [`TYPES`]`[rnd % 9]`,
//! i.e. `AA AB AC N1 N2 N3 N4 N5 N6` for 0..9; `ts = row`; no fields (CSV
//! columns `type,ts`). 1,000,000 events by default.

use std::io::{self, Write};

use cep_core::{Event, Schema, Sym};

use crate::w1::XorShift64;

/// Events in the default stream.
pub const EVENTS: usize = 1_000_000;

/// The nine type names, indexed by [`W3Event::ty`].
pub const TYPES: [&str; 9] = ["AA", "AB", "AC", "N1", "N2", "N3", "N4", "N5", "N6"];

/// The W3 query.
pub const QUERY: &str = "PATTERN SEQ(AA a, AB b, AC c) WHERE skip-till-any-match WITHIN 100 EVENTS";

/// One W3 event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct W3Event {
    /// Row number, from 0.
    pub row: u64,
    /// Equal to `row`.
    pub ts: i64,
    /// 0..9, an index into [`TYPES`].
    pub ty: u8,
}

impl W3Event {
    /// The type name.
    pub fn type_name(&self) -> &'static str {
        TYPES[self.ty as usize]
    }
}

/// The W3 stream.
///
/// # Examples
/// ```
/// use cep_bench::w3::Events;
/// let v: Vec<_> = Events::new(9_000).collect();
/// assert_eq!(v.len(), 9_000);
/// assert_eq!(v[7].ts, 7);
/// // Roughly uniform over the nine types.
/// let aa = v.iter().filter(|e| e.type_name() == "AA").count();
/// assert!((800..1200).contains(&aa));
/// ```
#[derive(Clone, Debug)]
pub struct Events {
    rng: XorShift64,
    i: u64,
    n: u64,
}

impl Events {
    /// The first `n` events.
    pub fn new(n: usize) -> Events {
        Events { rng: XorShift64::default(), i: 0, n: n as u64 }
    }
}

impl Iterator for Events {
    type Item = W3Event;

    fn next(&mut self) -> Option<W3Event> {
        if self.i >= self.n {
            return None;
        }
        let i = self.i;
        let ty = (self.rng.next_u64() % 9) as u8;
        self.i += 1;
        Some(W3Event { row: i, ts: i as i64, ty })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.n - self.i) as usize;
        (left, Some(left))
    }
}

/// The interned type names, indexed by [`W3Event::ty`].
pub fn type_syms() -> [Sym; 9] {
    TYPES.map(Sym::new)
}

/// A complete schema: the nine types, no fields.
pub fn schema() -> Schema {
    crate::typed::schema(&TYPES)
}

/// Fills `e` with `w` (no fields), reusing its buffer. `types` is
/// [`type_syms`].
#[inline]
pub fn fill(e: &mut Event, w: &W3Event, types: &[Sym; 9]) {
    crate::typed::fill(e, types[w.ty as usize], w.ts, w.row);
}

/// Writes the first `n` events as CSV (`type,ts`).
pub fn write_csv(out: &mut impl Write, n: usize) -> io::Result<()> {
    crate::typed::write_csv(out, Events::new(n).map(|e| (e.type_name(), e.ts)))
}

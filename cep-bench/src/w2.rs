//! W2 aggregated links (DESIGN.md §2.3, §3): streams of four event types
//! `A`, `B`, `C`, `D` for `SEQ(A a, B b, D d)` and `SEQ(A a, B b, D d, C c)`
//! under skip-till-any-match.
//!
//! Three streams, all with `ts = row` (so a window of `w` time units is a
//! window of `w` positions) and no fields besides `type` and `ts` (CSV
//! columns `type,ts`):
//!
//! - [`Kind::Uniform`] (the paper's stream, 10,000 events by default): the
//!   W1 xorshift64 ([`XorShift64::default`], state `0x9E3779B97F4A7C15`),
//!   one draw per event: type = `"ABCD"[rnd % 4]`.
//! - [`Kind::ClusterFriendly`]: `a b b b d d d d d d`, repeating (period 10;
//!   row `i` has the type at `i % 10`). Six `d`s in a row link to the same
//!   `b`, so batch construction packs them into one cluster.
//! - [`Kind::ClusterFree`]: `a b d b d a b d b d`, repeating (period 10).
//!   No two consecutive `d`s link to the same `b`: clustering gains nothing.

use std::io::{self, Write};

use cep_core::{Event, Schema, Sym};

use crate::w1::XorShift64;

/// Events in the paper's stream.
pub const EVENTS: usize = 10_000;

/// The windows the paper measures (time units = rows).
pub const WINDOWS: [i64; 6] = [500, 600, 700, 800, 900, 1000];

/// The aggregated-link paper's speed-up of batch over per-event construction
/// for a query, stream and window, where it reports one: the text for the
/// table and the least ratio it implies. Its figures (DESIGN.md §2.3):
/// `SEQ(A,B,D)` 1.10× at window 500 up to 1.55× at 1000; `SEQ(A,B,D,C)`
/// 1.55×–1.62×; up to 5.24× on the clustering-friendly stream at 1000;
/// about 1× on the clustering-free one. Between the reported ends the
/// paper's curve is not given: the lower end stands as the bar.
///
/// # Examples
/// ```
/// use cep_bench::w2::{paper_ratio, Kind};
/// assert_eq!(paper_ratio("SEQ(A,B,D)", Kind::Uniform, 1000), Some(("1.55×".to_string(), 1.55)));
/// assert_eq!(paper_ratio("SEQ(A,B,D)", Kind::ClusterFree, 1000), Some(("≈ 1×".to_string(), 0.9)));
/// ```
pub fn paper_ratio(query: &str, kind: Kind, window: i64) -> Option<(String, f64)> {
    match (query, kind, window) {
        ("SEQ(A,B,D)", Kind::Uniform, 500) => Some(("1.10×".into(), 1.10)),
        ("SEQ(A,B,D)", Kind::Uniform, 1000) => Some(("1.55×".into(), 1.55)),
        ("SEQ(A,B,D)", Kind::Uniform, _) => Some(("1.10–1.55×".into(), 1.10)),
        ("SEQ(A,B,D,C)", Kind::Uniform, _) => Some(("1.55–1.62×".into(), 1.55)),
        ("SEQ(A,B,D)", Kind::ClusterFriendly, 1000) => Some(("5.24×".into(), 5.24)),
        ("SEQ(A,B,D)", Kind::ClusterFree, _) => Some(("≈ 1×".into(), 0.9)),
        _ => None,
    }
}

/// The paper's batch / per-event ratio at exactly this point, for the
/// chart: the ends of its reported ranges (`SEQ(A,B,D)` 1.10× at 500 and
/// 1.55× at 1000; `SEQ(A,B,D,C)` 1.55× and 1.62× placed at 500 and 1000),
/// 5.24× clustering-friendly at 1000, 1× clustering-free.
pub fn paper_point(query: &str, kind: Kind, window: i64) -> Option<f64> {
    match (query, kind, window) {
        ("SEQ(A,B,D)", Kind::Uniform, 500) => Some(1.10),
        ("SEQ(A,B,D)", Kind::Uniform, 1000) => Some(1.55),
        ("SEQ(A,B,D,C)", Kind::Uniform, 500) => Some(1.55),
        ("SEQ(A,B,D,C)", Kind::Uniform, 1000) => Some(1.62),
        ("SEQ(A,B,D)", Kind::ClusterFriendly, 1000) => Some(5.24),
        ("SEQ(A,B,D)", Kind::ClusterFree, _) => Some(1.0),
        _ => None,
    }
}

/// The four type names, indexed by [`W2Event::ty`].
pub const TYPES: [&str; 4] = ["A", "B", "C", "D"];

/// `PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN {window}`.
///
/// # Examples
/// ```
/// assert_eq!(
///     cep_bench::w2::seq_abd(500),
///     "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 500"
/// );
/// ```
pub fn seq_abd(window: i64) -> String {
    format!("PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN {window}")
}

/// `PATTERN SEQ(A a, B b, D d, C c) WHERE skip-till-any-match WITHIN {window}`.
pub fn seq_abdc(window: i64) -> String {
    format!("PATTERN SEQ(A a, B b, D d, C c) WHERE skip-till-any-match WITHIN {window}")
}

/// Which W2 stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Types A–D uniform from the seeded generator.
    Uniform,
    /// `a b b b d d d d d d`, repeating.
    ClusterFriendly,
    /// `a b d b d a b d b d`, repeating.
    ClusterFree,
}

impl Kind {
    /// All three streams.
    pub const ALL: [Kind; 3] = [Kind::Uniform, Kind::ClusterFriendly, Kind::ClusterFree];

    /// A short name (`uniform`, `cluster-friendly`, `cluster-free`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Uniform => "uniform",
            Kind::ClusterFriendly => "cluster-friendly",
            Kind::ClusterFree => "cluster-free",
        }
    }
}

const FRIENDLY: [u8; 10] = [0, 1, 1, 1, 3, 3, 3, 3, 3, 3];
const FREE: [u8; 10] = [0, 1, 3, 1, 3, 0, 1, 3, 1, 3];

/// One W2 event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct W2Event {
    /// Row number, from 0.
    pub row: u64,
    /// Equal to `row`.
    pub ts: i64,
    /// 0..4: `A`, `B`, `C`, `D` (see [`TYPES`]).
    pub ty: u8,
}

impl W2Event {
    /// The type name.
    pub fn type_name(&self) -> &'static str {
        TYPES[self.ty as usize]
    }
}

/// A W2 stream.
///
/// # Examples
/// ```
/// use cep_bench::w2::{Events, Kind};
/// let friendly: String = Events::new(Kind::ClusterFriendly, 12).map(|e| e.type_name()).collect();
/// assert_eq!(friendly, "ABBBDDDDDDAB");
/// let free: String = Events::new(Kind::ClusterFree, 10).map(|e| e.type_name()).collect();
/// assert_eq!(free, "ABDBDABDBD");
/// assert_eq!(Events::new(Kind::Uniform, 10_000).count(), 10_000);
/// ```
#[derive(Clone, Debug)]
pub struct Events {
    kind: Kind,
    rng: XorShift64,
    i: u64,
    n: u64,
}

impl Events {
    /// The first `n` events of stream `kind`.
    pub fn new(kind: Kind, n: usize) -> Events {
        Events { kind, rng: XorShift64::default(), i: 0, n: n as u64 }
    }

    /// The first `n` events of the uniform stream.
    pub fn uniform(n: usize) -> Events {
        Events::new(Kind::Uniform, n)
    }
}

impl Iterator for Events {
    type Item = W2Event;

    fn next(&mut self) -> Option<W2Event> {
        if self.i >= self.n {
            return None;
        }
        let i = self.i;
        let ty = match self.kind {
            Kind::Uniform => (self.rng.next_u64() % 4) as u8,
            Kind::ClusterFriendly => FRIENDLY[(i % 10) as usize],
            Kind::ClusterFree => FREE[(i % 10) as usize],
        };
        self.i += 1;
        Some(W2Event { row: i, ts: i as i64, ty })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.n - self.i) as usize;
        (left, Some(left))
    }
}

/// The interned type names, indexed by [`W2Event::ty`].
pub fn type_syms() -> [Sym; 4] {
    TYPES.map(Sym::new)
}

/// A complete schema: types `A`–`D`, no fields.
pub fn schema() -> Schema {
    crate::typed::schema(&TYPES)
}

/// Fills `e` with `w` (no fields), reusing its buffer. `types` is
/// [`type_syms`].
#[inline]
pub fn fill(e: &mut Event, w: &W2Event, types: &[Sym; 4]) {
    crate::typed::fill(e, types[w.ty as usize], w.ts, w.row);
}

/// Writes the first `n` events of the uniform stream as CSV (`type,ts`).
pub fn write_csv(out: &mut impl Write, n: usize) -> io::Result<()> {
    write_csv_of(out, Kind::Uniform, n)
}

/// Writes the first `n` events of stream `kind` as CSV (`type,ts`).
pub fn write_csv_of(out: &mut impl Write, kind: Kind, n: usize) -> io::Result<()> {
    crate::typed::write_csv(out, Events::new(kind, n).map(|e| (e.type_name(), e.ts)))
}

//! Baselines that the general engines are measured against, in the same
//! process and on the same events (issue 3, DESIGN.md §3):
//!
//! - [`rise_spike::HandWritten`]: a hand-written engine for exactly the
//!   rise / spike / quiet query of LANGUAGE.md §7 ([`w1::RISE_SPIKE`]) — the
//!   bar for the compiled query on W1a;
//! - [`naive::Naive`]: the naive tier for the same query: it stores each
//!   key's recent ticks and re-runs the pattern over them by brute force on
//!   every tick of the key — to show the gap incremental matching closes;
//! - [`levels::TwoBTreeMaps`]: the two-BTreeMap level index of DESIGN.md
//!   §2.6, the W1b baseline for `cep_index`.
//!
//! The two rise / spike engines take W1 [`Tick`]s (or [`Event`]s laid out
//! as [`w1::schema`]) and give exactly the [`Match`]es, in exactly the
//! order, that the engine compiled from [`w1::RISE_SPIKE`] gives (tested in
//! `tests/baselines.rs`).
//!
//! [`w1::RISE_SPIKE`]: crate::w1::RISE_SPIKE
//! [`w1::schema`]: crate::w1::schema
//! [`Tick`]: crate::w1::Tick
//! [`Event`]: cep_core::Event
//! [`Match`]: cep_core::Match

pub mod levels;
pub mod naive;
pub mod rise_spike;
pub mod timers;

use cep_core::{Event, Value};

use crate::w1::Tick;

/// Reads a W1 tick from an event laid out as [`crate::w1::schema`]
/// (`key`, `price`, `vol` in field slots 0, 1, 2). A missing or non-int
/// field reads as 0 (W1 events always have all three).
#[inline]
pub fn tick_of(e: &Event) -> Tick {
    let int = |i: usize| match e.fields.get(i) {
        Some(Value::Int(x)) => *x,
        _ => 0,
    };
    Tick { row: e.row, ts: e.ts, key: int(0), price: int(1), vol: int(2) }
}

/// `a * 100 >= b * 102` (a rise of at least 2 %), false on overflow, as the
/// query's integer arithmetic gives NULL (and a false comparison) there.
#[inline]
pub(crate) fn is_rise(price: i64, prev: i64) -> bool {
    match (price.checked_mul(100), prev.checked_mul(102)) {
        (Some(a), Some(b)) => a >= b,
        _ => false,
    }
}

/// `price * 100 <= spike * 99` (a reversal of at least 1 %), false on
/// overflow.
#[inline]
pub(crate) fn is_reversal(price: i64, spike: i64) -> bool {
    match (price.checked_mul(100), spike.checked_mul(99)) {
        (Some(a), Some(b)) => a <= b,
        _ => false,
    }
}

/// The spike condition `s.vol >= 1000`.
#[inline]
pub(crate) fn is_spike(vol: i64) -> bool {
    vol >= 1000
}

/// The spike's element window: 60 s.
pub(crate) const SPIKE_WITHIN: i64 = 60_000;
/// The quiet period of the trailing `NOT`: 10 s.
pub(crate) const QUIET: i64 = 10_000;

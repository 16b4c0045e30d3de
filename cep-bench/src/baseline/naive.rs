//! The naive tier for the rise / spike / quiet query: no partial matches at
//! all, only stored events, and the pattern re-run by brute force.
//!
//! Per key it stores the ticks of the last 70 s (the longest a match that
//! is not yet final can reach back: 60 s from rise to spike plus the 10 s
//! quiet period) and the one tick before them (the rise's `PREV`). On every
//! tick it appends the tick to its key's window and re-runs the pattern over
//! the whole window, straight from LANGUAGE.md §3: for every spike `s` whose
//! quiet period has not ended, every earlier tick `r` is tried — a rise over
//! the tick before it, within 60 s of `s`, with no spike between them
//! (skip-till-next-match: such a spike would be relevant to `r`), and no
//! 1 % reversal after `s` in the window up to `s.ts + 10 s` — and the
//! earliest such `r` is kept (`SELECT EARLIEST`). The key's candidates are
//! replaced by what this run finds. Candidates of all keys wait in one
//! ordered map keyed by `(end, start, rows)`; before a tick at `ts` is
//! stored, those with `end < ts` are final and emitted in that order — the
//! order the compiled engine emits them in.
//!
//! It exists to show the gap: per tick it does work proportional to the cube
//! of the key's window, where the incremental engines do a constant amount.

use std::collections::{BTreeMap, VecDeque};

use ahash::AHashMap;
use cep_core::{Event, Match, Timestamp, Value};

use super::{QUIET, SPIKE_WITHIN, is_reversal, is_rise, is_spike, tick_of};
use crate::w1::Tick;

/// How far back a match that is not yet final can reach.
const HORIZON: i64 = SPIKE_WITHIN + QUIET;

/// `(end, start, rise row, spike row)`: the emission order.
type Cand = (Timestamp, Timestamp, u64, u64);

#[derive(Debug, Default)]
struct Window {
    ticks: VecDeque<Tick>,
    cands: Vec<Cand>,
}

/// The naive rise / spike / quiet engine.
///
/// # Examples
/// ```
/// use cep_bench::baseline::naive::Naive;
/// use cep_bench::w1::Tick;
/// let ticks = [(0, 10000, 10), (1000, 10250, 10), (21000, 10260, 5000), (40000, 10270, 10)];
/// let mut n = Naive::new();
/// for (row, &(ts, price, vol)) in ticks.iter().enumerate() {
///     n.push(&Tick { row: row as u64, ts, key: 1, price, vol });
/// }
/// n.finish();
/// let m: Vec<_> = n.drain().collect();
/// assert_eq!((m.len(), m[0].end), (1, 31000));
/// ```
#[derive(Debug, Default)]
pub struct Naive {
    windows: AHashMap<i64, Window>,
    pending: BTreeMap<Cand, i64>,
    watermark: Timestamp,
    out: Vec<Match>,
    matches: u64,
}

impl Naive {
    /// An engine with no state.
    pub fn new() -> Naive {
        Naive { watermark: Timestamp::MIN, ..Naive::default() }
    }

    /// Processes one tick. Ticks must come in non-decreasing `ts` order.
    pub fn push(&mut self, t: &Tick) {
        self.advance(t.ts);
        let w = self.windows.entry(t.key).or_default();
        w.ticks.push_back(*t);
        // Keep the last 70 s and the one tick before them.
        while w.ticks.len() >= 2 && w.ticks[1].ts < t.ts - HORIZON {
            w.ticks.pop_front();
        }
        for c in w.cands.drain(..) {
            self.pending.remove(&c);
        }
        find_candidates(&w.ticks, t.ts, &mut w.cands);
        for &c in &w.cands {
            self.pending.insert(c, t.key);
        }
    }

    /// Processes one event laid out as [`crate::w1::schema`].
    pub fn push_event(&mut self, e: &Event) {
        self.push(&tick_of(e));
    }

    /// Moves the watermark to `wm`: candidates with `end < wm` are final.
    pub fn advance(&mut self, wm: Timestamp) {
        if wm <= self.watermark {
            return;
        }
        self.watermark = wm;
        while let Some((&c, _)) = self.pending.first_key_value() {
            if c.0 >= wm {
                break;
            }
            let (c, key) = self.pending.pop_first().expect("not empty");
            if let Some(w) = self.windows.get_mut(&key) {
                w.cands.retain(|x| *x != c);
            }
            let (end, start, r, s) = c;
            self.matches += 1;
            self.out.push(Match {
                query: 0,
                key: Value::Int(key),
                start,
                end,
                rows: vec![r, s],
                ends: vec![1, 2],
                emit: vec![],
                unverified: false,
            });
        }
    }

    /// Ends the input: every candidate becomes a match.
    pub fn finish(&mut self) {
        self.advance(Timestamp::MAX);
        self.windows.clear();
    }

    /// Matches emitted and not yet taken, in emission order.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Match> {
        self.out.drain(..)
    }

    /// Matches emitted so far.
    pub fn matches(&self) -> u64 {
        self.matches
    }
}

/// The matches of the window `w` (one key's ticks) that are not final at
/// `now` (their `end >= now`), by brute force.
fn find_candidates(w: &VecDeque<Tick>, now: Timestamp, out: &mut Vec<Cand>) {
    for q in 1..w.len() {
        let s = &w[q];
        if !is_spike(s.vol) || s.ts + QUIET < now {
            continue;
        }
        // Rule 4: no reversal after the spike within the quiet period.
        let reversed = w.iter().skip(q + 1).any(|v| v.ts <= s.ts + QUIET && is_reversal(v.price, s.price));
        if reversed {
            continue;
        }
        // The earliest rise that the spike completes (SELECT EARLIEST).
        let earliest = (1..q).find(|&p| {
            let r = &w[p];
            is_rise(r.price, w[p - 1].price)
                && s.ts - r.ts <= SPIKE_WITHIN
                // Rule 5 (skip-till-next-match): no event between r and s could bind s.
                && !(p + 1..q).any(|x| is_spike(w[x].vol) && w[x].ts - r.ts <= SPIKE_WITHIN)
        });
        if let Some(p) = earliest {
            out.push((s.ts + QUIET, w[p].ts, w[p].row, s.row));
        }
    }
}

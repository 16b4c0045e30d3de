//! A hand-written engine for exactly the rise / spike / quiet query of
//! LANGUAGE.md §7 ([`RISE_SPIKE`]), as DESIGN.md §3 W1a describes it.
//!
//! What the query means, specialised (LANGUAGE.md §3, per key):
//!
//! - a tick is a **rise** when the key has a previous tick and
//!   `price * 100 >= prev * 102`; every rise starts a partial match, which
//!   waits for a spike;
//! - under skip-till-next-match every **spike** (`vol >= 1000`) within 60 s
//!   of a waiting rise is relevant to it, so the *first* later spike of the
//!   key within 60 s completes the rise, and the rise's partial match ends
//!   there (whatever the quiet period does later); a rise with no spike
//!   within 60 s expires. A spike completes every waiting rise at once, and
//!   `SELECT EARLIEST` keeps, of the matches sharing that spike, only the
//!   one with the earliest rise — so a spike yields at most one candidate,
//!   and all waiting rises are consumed;
//! - the candidate is final when no tick of the key with
//!   `price * 100 <= spike_price * 99` arrives at `ts <= spike_ts + 10 s`
//!   (its `end`); it becomes final when the watermark passes `end` (an event
//!   of any key with `ts > end`, or the end of the input), like the compiled
//!   engine, and matches final at the same moment are emitted in order of
//!   `(end, start, rows)`.
//!
//! State: per key (a `Vec` indexed by the key for keys `0..2^20`, a hash
//! map to further slots for other keys), the last price, the waiting rises
//! `(ts, row)` and the running quiet periods, both oldest first; a binary
//! heap of `(deadline, slot)` for the expiry of rises and the end of quiet
//! periods (a stale entry only causes a sweep that finds nothing). Per
//! tick: one slot lookup, a few comparisons, and a heap peek. Nothing
//! allocates per tick once the vectors have grown, except a [`Match`].
//!
//! Integer arithmetic follows the query's: an overflowing product compares
//! as false.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use ahash::AHashMap;
use cep_core::{Event, Match, Timestamp, Value};

use super::{QUIET, SPIKE_WITHIN, is_reversal, is_rise, is_spike, tick_of};
#[cfg(doc)]
use crate::w1::RISE_SPIKE;
use crate::w1::Tick;

/// Keys `0..DENSE` index the state vector directly.
const DENSE: i64 = 1 << 20;
/// No previous price yet.
const NO_PREV: i64 = i64::MIN;

#[derive(Clone, Copy, Debug)]
struct Rise {
    ts: Timestamp,
    row: u64,
}

/// A completed rise / spike (the earliest rise of its spike) in its quiet
/// period.
#[derive(Clone, Copy, Debug)]
struct Quiet {
    start: Timestamp,
    r_row: u64,
    s_row: u64,
    spike_price: i64,
    end: Timestamp,
}

#[derive(Clone, Debug)]
struct KeyState {
    key: i64,
    prev: i64,
    rises: Vec<Rise>,
    quiet: Vec<Quiet>,
}

impl KeyState {
    fn new(key: i64) -> KeyState {
        KeyState { key, prev: NO_PREV, rises: Vec::new(), quiet: Vec::new() }
    }
}

/// A candidate that became final, with its key.
#[derive(Clone, Copy, Debug)]
struct Due {
    key: i64,
    q: Quiet,
}

/// The hand-written rise / spike / quiet engine.
///
/// # Examples
/// ```
/// use cep_bench::baseline::rise_spike::HandWritten;
/// use cep_bench::w1::Tick;
/// // LANGUAGE.md §7: a rise at 1000, a spike at 21000, quiet until 31000.
/// let ticks = [(0, 10000, 10), (1000, 10250, 10), (21000, 10260, 5000), (40000, 10270, 10)];
/// let mut hw = HandWritten::new();
/// for (row, &(ts, price, vol)) in ticks.iter().enumerate() {
///     hw.push(&Tick { row: row as u64, ts, key: 1, price, vol });
/// }
/// hw.finish();
/// let m: Vec<_> = hw.drain().collect();
/// assert_eq!(m.len(), 1);
/// assert_eq!((m[0].start, m[0].end, m[0].rows.clone()), (1000, 31000, vec![1, 2]));
/// ```
#[derive(Debug)]
pub struct HandWritten {
    dense: Vec<KeyState>,
    sparse_index: AHashMap<i64, u32>,
    sparse: Vec<KeyState>,
    timers: BinaryHeap<Reverse<(Timestamp, u32)>>,
    watermark: Timestamp,
    due: Vec<Due>,
    out: Vec<Match>,
    matches: u64,
}

impl Default for HandWritten {
    fn default() -> HandWritten {
        HandWritten::new()
    }
}

impl HandWritten {
    /// An engine with no state.
    pub fn new() -> HandWritten {
        HandWritten {
            dense: Vec::new(),
            sparse_index: AHashMap::new(),
            sparse: Vec::new(),
            timers: BinaryHeap::new(),
            watermark: Timestamp::MIN,
            due: Vec::new(),
            out: Vec::new(),
            matches: 0,
        }
    }

    /// An engine with state for keys `0..keys` allocated up front.
    pub fn with_keys(keys: usize) -> HandWritten {
        let mut hw = HandWritten::new();
        hw.dense = (0..keys.min(DENSE as usize) as i64).map(KeyState::new).collect();
        hw
    }

    #[inline]
    fn slot(&mut self, key: i64) -> u32 {
        if (0..DENSE).contains(&key) {
            let k = key as usize;
            if k >= self.dense.len() {
                let from = self.dense.len() as i64;
                self.dense.extend((from..=key).map(KeyState::new));
            }
            key as u32
        } else {
            let next = self.sparse.len() as u32;
            let s = *self.sparse_index.entry(key).or_insert(next);
            if s == next {
                self.sparse.push(KeyState::new(key));
            }
            DENSE as u32 + s
        }
    }

    #[inline]
    fn state(&mut self, slot: u32) -> &mut KeyState {
        if (slot as i64) < DENSE {
            &mut self.dense[slot as usize]
        } else {
            &mut self.sparse[slot as usize - DENSE as usize]
        }
    }

    /// Processes one tick. Ticks must come in non-decreasing `ts` order.
    #[inline]
    pub fn push(&mut self, t: &Tick) {
        if t.ts > self.watermark {
            self.advance(t.ts);
        }
        let slot = self.slot(t.key);
        let st = self.state(slot);
        // A reversal ends the quiet period of the candidates it falls in.
        if !st.quiet.is_empty() {
            st.quiet.retain(|q| !(t.ts <= q.end && is_reversal(t.price, q.spike_price)));
        }
        let mut deadline = None;
        if is_spike(t.vol) && !st.rises.is_empty() {
            // Every waiting rise within 60 s is completed; the earliest is kept.
            if let Some(r) = st.rises.iter().find(|r| t.ts - r.ts <= SPIKE_WITHIN) {
                let end = t.ts + QUIET;
                st.quiet.push(Quiet { start: r.ts, r_row: r.row, s_row: t.row, spike_price: t.price, end });
                deadline = Some(end);
            }
            st.rises.clear();
        }
        let mut rise_deadline = None;
        if st.prev != NO_PREV && is_rise(t.price, st.prev) {
            st.rises.push(Rise { ts: t.ts, row: t.row });
            rise_deadline = Some(t.ts + SPIKE_WITHIN);
        }
        st.prev = t.price;
        if let Some(d) = deadline {
            self.timers.push(Reverse((d, slot)));
        }
        if let Some(d) = rise_deadline {
            self.timers.push(Reverse((d, slot)));
        }
    }

    /// Processes one event laid out as [`crate::w1::schema`].
    #[inline]
    pub fn push_event(&mut self, e: &Event) {
        self.push(&tick_of(e));
    }

    /// Moves the watermark to `wm`: rises older than 60 s expire, and
    /// candidates whose quiet period ended before `wm` become matches.
    pub fn advance(&mut self, wm: Timestamp) {
        if wm <= self.watermark {
            return;
        }
        while let Some(&Reverse((d, slot))) = self.timers.peek() {
            if d >= wm {
                break;
            }
            self.timers.pop();
            let st = if (slot as i64) < DENSE {
                &mut self.dense[slot as usize]
            } else {
                &mut self.sparse[slot as usize - DENSE as usize]
            };
            let expired = st.rises.iter().take_while(|r| r.ts + SPIKE_WITHIN < wm).count();
            st.rises.drain(..expired);
            let done = st.quiet.iter().take_while(|q| q.end < wm).count();
            let key = st.key;
            self.due.extend(st.quiet.drain(..done).map(|q| Due { key, q }));
        }
        self.watermark = wm;
        if self.due.is_empty() {
            return;
        }
        if self.due.len() > 1 {
            self.due.sort_by_key(|d| (d.q.end, d.q.start, d.q.r_row, d.q.s_row));
        }
        self.matches += self.due.len() as u64;
        self.out.extend(self.due.drain(..).map(|d| Match {
            query: 0,
            key: Value::Int(d.key),
            start: d.q.start,
            end: d.q.end,
            rows: vec![d.q.r_row, d.q.s_row],
            ends: vec![1, 2],
            emit: Vec::new(),
            unverified: false,
        }));
    }

    /// Ends the input: every candidate still in its quiet period becomes a
    /// match, and all state is released.
    pub fn finish(&mut self) {
        self.advance(Timestamp::MAX);
        for st in self.dense.iter_mut().chain(&mut self.sparse) {
            st.rises.clear();
        }
        self.timers.clear();
    }

    /// Matches emitted and not yet taken, in emission order.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Match> {
        self.out.drain(..)
    }

    /// Matches emitted so far.
    pub fn matches(&self) -> u64 {
        self.matches
    }

    /// Live partial matches: waiting rises and candidates in their quiet
    /// period.
    pub fn partials(&self) -> usize {
        self.dense.iter().chain(&self.sparse).map(|s| s.rises.len() + s.quiet.len()).sum()
    }
}

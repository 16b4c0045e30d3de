//! The reorder buffer: out-of-order input in, timestamp order out.
//!
//! Events may arrive out of order by up to `max_delay` (LANGUAGE.md §1). The
//! buffer holds each event until the watermark — the largest timestamp seen
//! minus `max_delay` — reaches it, then releases events in `ts` order, events
//! with equal `ts` in arrival order. An event with `ts` below the watermark
//! when it arrives is *late*: [`ReorderBuffer::push`] hands it back untouched
//! (the caller applies the [`LatePolicy`](crate::LatePolicy)).
//!
//! An event at exactly the watermark is released: no event can arrive before
//! it any more (one with the same `ts` would come after it in arrival order,
//! which is where it belongs). With `max_delay = 0` every on-time event is
//! released as soon as it is pushed.
//!
//! # Memory
//!
//! The buffer holds the events with `ts` in `(watermark, max ts seen]`, an
//! interval `max_delay` wide: about `max_delay × rate` events (rate in events
//! per timestamp unit), each stored with 16 bytes of key beside it.
//! [`ReorderBuffer::peak_len`] reports the high-water mark.
//!
//! # Time
//!
//! Most events of a stream arrive in order even when some do not. An event
//! at or after the last one held goes on the back of a queue, which stays
//! sorted: O(1) in and out. Only an event that arrives before an event held
//! already goes into a binary heap, O(log n); release takes the smaller of
//! the two fronts. (With everything in one heap, W1a with `--max-delay 500`
//! spent most of its time moving events up and down the heap.)

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use cep_core::Timestamp;

use crate::Watermark;

/// An event behind the watermark, handed back by [`ReorderBuffer::push`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Late<E> {
    /// The event's timestamp.
    pub ts: Timestamp,
    /// The watermark it was behind.
    pub watermark: Timestamp,
    /// The event, not stored.
    pub event: E,
}

#[derive(Debug)]
struct Held<E> {
    ts: Timestamp,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Held<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.ts, self.seq) == (other.ts, other.seq)
    }
}

impl<E> Eq for Held<E> {}

impl<E> PartialOrd for Held<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Held<E> {
    /// Reversed, so the max-heap pops the smallest (ts, arrival).
    fn cmp(&self, other: &Self) -> Ordering {
        (other.ts, other.seq).cmp(&(self.ts, self.seq))
    }
}

/// The saved state of a [`ReorderBuffer`] (see [`ReorderBuffer::snapshot`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReorderSnapshot<E> {
    /// Held events: (ts, arrival number, event), in release order.
    pub held: Vec<(Timestamp, u64, E)>,
    /// The watermark.
    pub watermark: Watermark,
    /// The next arrival number.
    pub seq: u64,
    /// The most events held at once.
    pub peak: usize,
}

/// Holds events until the watermark passes them; releases them in `ts`
/// order, ties in arrival order (see the [module](self) docs).
///
/// # Examples
/// ```
/// use cep_time::reorder::ReorderBuffer;
/// let mut buf = ReorderBuffer::new(5);
/// for (ts, e) in [(10, 'a'), (8, 'b'), (12, 'c'), (8, 'd'), (16, 'e')] {
///     buf.push(ts, e).unwrap();
/// }
/// let late = buf.push(3, 'x').unwrap_err(); // 3 < watermark 16 − 5
/// assert_eq!((late.ts, late.watermark, late.event), (3, 11, 'x'));
///
/// let mut out = Vec::new();
/// buf.release(&mut |ts, e| out.push((ts, e)));
/// assert_eq!(out, [(8, 'b'), (8, 'd'), (10, 'a')]);
/// buf.flush(&mut |ts, e| out.push((ts, e))); // end of input
/// assert_eq!(out[3..], [(12, 'c'), (16, 'e')]);
/// assert!(buf.is_empty());
/// ```
#[derive(Debug)]
pub struct ReorderBuffer<E> {
    /// Events that arrived at or after the last event held when they came:
    /// sorted by (ts, arrival) as they are.
    run: VecDeque<Held<E>>,
    /// Events that arrived before an event already held.
    heap: BinaryHeap<Held<E>>,
    watermark: Watermark,
    seq: u64,
    peak: usize,
}

impl<E> ReorderBuffer<E> {
    /// An empty buffer allowing `max_delay` units of disorder, watermark −∞.
    pub fn new(max_delay: i64) -> ReorderBuffer<E> {
        ReorderBuffer {
            run: VecDeque::new(),
            heap: BinaryHeap::new(),
            watermark: Watermark::new(max_delay),
            seq: 0,
            peak: 0,
        }
    }

    /// The current watermark.
    pub fn watermark(&self) -> Timestamp {
        self.watermark.get()
    }

    /// The number of events held.
    pub fn len(&self) -> usize {
        self.run.len() + self.heap.len()
    }

    /// Whether no event is held.
    pub fn is_empty(&self) -> bool {
        self.run.is_empty() && self.heap.is_empty()
    }

    /// The most events held at once so far.
    pub fn peak_len(&self) -> usize {
        self.peak
    }

    /// Takes an event: stores it and advances the watermark, or returns it
    /// as [`Late`] (not stored) if `ts` is below the watermark. O(1) when
    /// `ts` is at or after every held event's, else O(log len).
    pub fn push(&mut self, ts: Timestamp, event: E) -> Result<(), Late<E>> {
        if let Err(watermark) = self.watermark.observe(ts) {
            return Err(Late { ts, watermark, event });
        }
        let held = Held { ts, seq: self.seq, event };
        if self.run.back().is_none_or(|last| last.ts <= ts) {
            self.run.push_back(held);
        } else {
            self.heap.push(held);
        }
        self.seq += 1;
        self.peak = self.peak.max(self.len());
        Ok(())
    }

    /// Moves the watermark to `to` if that is later (an explicit watermark,
    /// or the idle clock); never moves it back.
    pub fn advance_watermark(&mut self, to: Timestamp) {
        self.watermark.advance(to);
    }

    /// The earliest held event by (ts, arrival), and whether it is the run's
    /// front (else the heap's): `Held`'s order is reversed for the heap, so
    /// the earlier of the two fronts is the greater.
    fn front(&self) -> Option<(&Held<E>, bool)> {
        match (self.run.front(), self.heap.peek()) {
            (Some(a), Some(b)) => Some(if a > b { (a, true) } else { (b, false) }),
            (Some(a), None) => Some((a, true)),
            (None, Some(b)) => Some((b, false)),
            (None, None) => None,
        }
    }

    /// The earliest held event if the watermark has reached it.
    pub fn pop_ready(&mut self) -> Option<(Timestamp, E)> {
        let (front, from_run) = self.front()?;
        if front.ts > self.watermark.get() {
            return None;
        }
        let held = if from_run { self.run.pop_front() } else { self.heap.pop() }?;
        Some((held.ts, held.event))
    }

    /// The `ts` of the next event to be released (the earliest held), if
    /// any is held.
    pub fn first_ts(&self) -> Option<Timestamp> {
        self.front().map(|(h, _)| h.ts)
    }

    /// Passes every event at or behind the watermark to `out`, in order.
    pub fn release(&mut self, out: &mut impl FnMut(Timestamp, E)) {
        while let Some((ts, event)) = self.pop_ready() {
            out(ts, event);
        }
    }

    /// The buffer's state, for a checkpoint: the held events (with their
    /// arrival numbers, so ties keep their order), the watermark and the
    /// counters.
    ///
    /// # Examples
    /// ```
    /// use cep_time::reorder::ReorderBuffer;
    /// let mut buf = ReorderBuffer::new(5);
    /// buf.push(10, 'a').unwrap();
    /// buf.push(8, 'b').unwrap();
    /// let mut resumed = ReorderBuffer::from_snapshot(buf.snapshot());
    /// assert!(resumed.push(4, 'x').is_err()); // the watermark (5) came along
    /// let mut out = Vec::new();
    /// resumed.flush(&mut |ts, e| out.push((ts, e)));
    /// assert_eq!(out, [(8, 'b'), (10, 'a')]);
    /// ```
    pub fn snapshot(&self) -> ReorderSnapshot<E>
    where
        E: Clone,
    {
        let mut held: Vec<(Timestamp, u64, E)> =
            self.run.iter().chain(self.heap.iter()).map(|h| (h.ts, h.seq, h.event.clone())).collect();
        held.sort_by_key(|h| (h.0, h.1));
        ReorderSnapshot { held, watermark: self.watermark, seq: self.seq, peak: self.peak }
    }

    /// A buffer in the state of a [`snapshot`](Self::snapshot).
    pub fn from_snapshot(snap: ReorderSnapshot<E>) -> ReorderBuffer<E> {
        // Sorted into release order (as `snapshot` gives it), all of it is
        // one run.
        let mut held = snap.held;
        held.sort_by_key(|h| (h.0, h.1));
        let run = held.into_iter().map(|(ts, seq, event)| Held { ts, seq, event }).collect();
        ReorderBuffer { run, heap: BinaryHeap::new(), watermark: snap.watermark, seq: snap.seq, peak: snap.peak }
    }

    /// The end of the input: the watermark moves to +∞ and every held event
    /// goes to `out`, in order. Later pushes are late (except at `i64::MAX`).
    pub fn flush(&mut self, out: &mut impl FnMut(Timestamp, E)) {
        self.watermark.advance(Timestamp::MAX);
        self.release(out);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Events `(ts, arrival index)` whose arrival order is sorted by
    /// `ts + jitter`, jitter in `0..=max_delay`: shuffled within max-delay.
    fn shuffled(max_delay: i64) -> impl Strategy<Value = Vec<(i64, usize)>> {
        proptest::collection::vec((0i64..4, 0..=max_delay), 0..300).prop_map(|gaps| {
            let mut ts = -100;
            let mut keyed: Vec<(i64, i64)> = gaps
                .into_iter()
                .map(|(gap, jitter)| {
                    ts += gap;
                    (ts + jitter, ts)
                })
                .collect();
            keyed.sort_by_key(|&(arrival, _)| arrival);
            keyed.into_iter().enumerate().map(|(i, (_, ts))| (ts, i)).collect()
        })
    }

    /// Pushes `input`, releasing after every push; returns (released, late)
    /// and checks the watermark invariants on the way.
    type Events = Vec<(i64, usize)>;

    fn run(max_delay: i64, input: &[(i64, usize)]) -> (Events, Events) {
        let mut buf = ReorderBuffer::new(max_delay);
        let (mut out, mut late) = (Vec::new(), Vec::new());
        for &(ts, e) in input {
            match buf.push(ts, e) {
                Ok(()) => {}
                Err(l) => {
                    assert_eq!((l.ts, l.event), (ts, e));
                    assert!(l.ts < l.watermark);
                    late.push((ts, e));
                }
            }
            let wm = buf.watermark();
            buf.release(&mut |ts, e| {
                assert!(ts <= wm);
                out.push((ts, e));
            });
            assert!(buf.run.iter().chain(buf.heap.iter()).all(|h| h.ts > wm));
        }
        buf.flush(&mut |ts, e| out.push((ts, e)));
        assert!(buf.is_empty());
        (out, late)
    }

    proptest! {
        #[test]
        fn shuffled_within_delay_comes_out_sorted(
            (max_delay, input) in (0i64..20).prop_flat_map(|d| (Just(d), shuffled(d)))
        ) {
            let (out, late) = run(max_delay, &input);
            prop_assert!(late.is_empty());
            let mut sorted = input.clone();
            sorted.sort_by_key(|&(ts, _)| ts); // stable: ties in arrival order
            prop_assert_eq!(out, sorted);
        }

        #[test]
        fn late_events_are_exactly_those_behind_the_watermark(
            max_delay in 0i64..10,
            input in proptest::collection::vec(-50i64..50, 0..300),
        ) {
            let input: Vec<(i64, usize)> = input.into_iter().enumerate().map(|(i, ts)| (ts, i)).collect();
            let (out, late) = run(max_delay, &input);
            // The model: the watermark is the largest on-time ts minus the delay.
            let mut wm = i64::MIN;
            let mut want_late = Vec::new();
            let mut want_out = Vec::new();
            for &(ts, e) in &input {
                if ts < wm {
                    want_late.push((ts, e));
                } else {
                    wm = wm.max(ts - max_delay);
                    want_out.push((ts, e));
                }
            }
            want_out.sort_by_key(|&(ts, _)| ts);
            prop_assert_eq!(&late, &want_late);
            prop_assert_eq!(out.len() + late.len(), input.len());
            prop_assert_eq!(out, want_out);
        }
    }

    #[test]
    fn memory_is_max_delay_times_rate() {
        // 4 events per unit, shuffled within max_delay: the buffer holds about
        // max_delay × 4 events at its peak.
        for max_delay in [10i64, 100, 1000] {
            let mut buf = ReorderBuffer::new(max_delay);
            let mut state = 12345u64;
            let mut input: Vec<(i64, i64)> = (0..200_000i64)
                .map(|i| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let ts = i / 4;
                    (ts + (state >> 33) as i64 % (max_delay + 1), ts)
                })
                .collect();
            input.sort_by_key(|&(arrival, _)| arrival);
            let mut released = 0usize;
            for (_, ts) in input {
                buf.push(ts, ()).unwrap();
                buf.release(&mut |_, ()| released += 1);
            }
            let peak = buf.peak_len() as f64;
            let bound = (max_delay * 4) as f64;
            assert!(peak >= 0.5 * bound && peak <= bound + 4.0, "max_delay {max_delay}: peak {peak}");
            buf.flush(&mut |_, ()| released += 1);
            assert_eq!(released, 200_000);
        }
    }

    /// Events in order go to the run, earlier ones to the heap; release
    /// interleaves the two by (ts, arrival), ties across both included.
    #[test]
    fn run_and_heap_are_merged_in_order() {
        let mut buf = ReorderBuffer::new(100);
        for (ts, e) in [(10, 'a'), (12, 'b'), (10, 'c'), (12, 'd'), (11, 'e'), (13, 'f'), (12, 'g')] {
            buf.push(ts, e).unwrap();
        }
        assert_eq!((buf.run.len(), buf.heap.len()), (4, 3)); // a b d f | c e g
        let snap = buf.snapshot();
        let mut out = Vec::new();
        buf.flush(&mut |ts, e| out.push((ts, e)));
        let want = [(10, 'a'), (10, 'c'), (11, 'e'), (12, 'b'), (12, 'd'), (12, 'g'), (13, 'f')];
        assert_eq!(out, want);
        let held: Vec<(i64, char)> = snap.held.iter().map(|&(ts, _, e)| (ts, e)).collect();
        assert_eq!(held, want);
    }

    #[test]
    fn explicit_watermark_and_extremes() {
        let mut buf = ReorderBuffer::new(i64::MAX);
        buf.push(i64::MIN, 'a').unwrap();
        buf.push(i64::MAX, 'b').unwrap();
        assert_eq!(buf.watermark(), 0);
        assert_eq!(buf.pop_ready(), Some((i64::MIN, 'a')));
        assert_eq!(buf.pop_ready(), None);
        buf.advance_watermark(-5); // never moves back
        assert_eq!(buf.watermark(), 0);
        buf.advance_watermark(i64::MAX);
        assert_eq!(buf.pop_ready(), Some((i64::MAX, 'b')));
        assert!(buf.push(7, 'c').is_err());
    }
}

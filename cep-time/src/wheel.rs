//! Event-time timers: a hierarchical timing wheel and a FIFO fast path.
//!
//! Both structures are keyed by **event time** (`i64` timestamps), never by
//! the wall clock, and both fire a timer when the watermark *passes* its
//! deadline: [`TimerWheel::advance_to`]`(wm, …)` returns every live timer
//! whose deadline is **strictly before** `wm`, in deadline order, timers with
//! equal deadlines in insertion order. A timer with deadline `wm` itself
//! stays until the watermark moves past it (or until [`TimerWheel::drain`] at
//! the end of the input, when the watermark is +∞).
//!
//! # The wheel
//!
//! Timestamps are mapped order-preservingly onto `u64` keys (the sign bit is
//! flipped). The wheel keeps the key up to which it has fired (`elapsed`) and
//! 11 levels of 64 slots each: level `l` covers bits `6l .. 6l + 6` of the key,
//! so the 11 levels cover the whole 64-bit range and no overflow list is
//! needed (the top level uses 16 of its slots). A timer sits on the level of
//! the highest 6-bit group in which its key differs from `elapsed`, in the
//! slot given by that group of its key. Each level has a `u64` bitmap of its
//! occupied slots, so finding the next slot to process is a `trailing_zeros`,
//! whatever the gap: a watermark that jumps far ahead costs nothing per empty
//! slot. When time reaches a slot of level `l ≥ 1`, its timers are re-filed
//! ("cascaded") onto lower levels; each timer is cascaded at most 10 times.
//!
//! Entries live in a [`slab::Slab`]; each slot is a doubly linked list through
//! the entries (`u32` links), appended at the tail, so insert and cancel are
//! O(1). A [`TimerId`] carries the slab index and a generation number unique
//! to the insertion: cancelling a timer that has fired or was cancelled
//! returns `None` and never touches the timer that reused its slab entry.
//!
//! Deadlines at or behind the wheel's position when inserted go to a separate
//! "past" list and fire on the next `advance_to` whose watermark is after them.
//!
//! # The FIFO fast path
//!
//! With one window length, deadlines are armed in non-decreasing order;
//! [`FifoTimers`] keeps them in a `VecDeque` and cancels by marking the entry
//! empty (skipped when it reaches the front).

use std::collections::VecDeque;

use cep_core::Timestamp;
use slab::Slab;

/// Bits per level: 64 slots.
const BITS: u32 = 6;
/// Slots per level.
const SLOTS: usize = 1 << BITS;
/// Levels: 11 × 6 bits ≥ 64 bits, so every key has a level.
const LEVELS: usize = 11;
/// The list index of the "past" list (after the `LEVELS * SLOTS` slot lists).
const PAST: usize = LEVELS * SLOTS;
/// The null link.
const NIL: u32 = u32::MAX;

/// Maps a timestamp onto an order-preserving `u64` key (`i64::MIN` → 0).
#[inline]
fn to_key(ts: Timestamp) -> u64 {
    (ts as u64) ^ (1 << 63)
}

/// The inverse of [`to_key`].
#[inline]
fn from_key(key: u64) -> Timestamp {
    (key ^ (1 << 63)) as i64
}

/// The level a timer with `key ≥ elapsed` belongs on: the 6-bit group of its
/// highest bit that differs from `elapsed` (level 0 when they differ only in
/// the low 6 bits).
#[inline]
fn level_for(elapsed: u64, key: u64) -> usize {
    let masked = (elapsed ^ key) | (SLOTS as u64 - 1);
    let significant = 63 - masked.leading_zeros();
    (significant / BITS) as usize
}

/// The slot of `key` on `level`.
#[inline]
fn slot_for(key: u64, level: usize) -> usize {
    ((key >> (BITS as usize * level)) & (SLOTS as u64 - 1)) as usize
}

/// The first key covered by `slot` on `level`, given the current `elapsed`:
/// `elapsed`'s bits above the level, the slot's bits, zeros below.
#[inline]
fn slot_start(elapsed: u64, level: usize, slot: usize) -> u64 {
    let shift = BITS as usize * (level + 1);
    let high = if shift >= 64 { 0 } else { elapsed & !((1u64 << shift) - 1) };
    high | ((slot as u64) << (BITS as usize * level))
}

/// A handle to a timer in a [`TimerWheel`]: its slab index and the
/// generation of the insertion (unique per wheel), so a stale handle is
/// detected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerId {
    index: u32,
    generation: u64,
}

#[derive(Debug)]
struct Entry<T> {
    key: u64,
    generation: u64,
    prev: u32,
    next: u32,
    /// The list this entry is on: `level * SLOTS + slot`, or `PAST`.
    list: u16,
    value: T,
}

#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

const EMPTY: List = List { head: NIL, tail: NIL };

/// A hierarchical timing wheel over event time (see the [module](self) docs).
///
/// # Examples
/// ```
/// use cep_time::wheel::TimerWheel;
/// let mut wheel = TimerWheel::new();
/// let a = wheel.insert(30, "a");
/// wheel.insert(10, "b");
/// wheel.insert(10, "c");
/// wheel.insert(1 << 40, "far");
/// assert_eq!(wheel.cancel(a), Some("a"));
/// assert_eq!(wheel.cancel(a), None); // stale: already cancelled
///
/// let mut out = Vec::new();
/// wheel.advance_to(10, &mut out); // fires deadlines < 10: none
/// assert!(out.is_empty());
/// wheel.advance_to(11, &mut out);
/// assert_eq!(out, [(10, "b"), (10, "c")]);
/// out.clear();
/// wheel.drain(&mut out); // end of input: the watermark is +∞
/// assert_eq!(out, [(1 << 40, "far")]);
/// ```
#[derive(Debug)]
pub struct TimerWheel<T> {
    entries: Slab<Entry<T>>,
    /// `LEVELS * SLOTS` slot lists, then the past list.
    lists: Box<[List]>,
    occupied: [u64; LEVELS],
    /// Every key below this has fired; every key on a level is ≥ it.
    elapsed: u64,
    next_generation: u64,
}

impl<T> Default for TimerWheel<T> {
    fn default() -> Self {
        TimerWheel::new()
    }
}

impl<T> TimerWheel<T> {
    /// An empty wheel at watermark −∞.
    pub fn new() -> TimerWheel<T> {
        TimerWheel::with_capacity(0)
    }

    /// An empty wheel with room for `capacity` timers before reallocating.
    pub fn with_capacity(capacity: usize) -> TimerWheel<T> {
        TimerWheel {
            entries: Slab::with_capacity(capacity),
            lists: vec![EMPTY; PAST + 1].into_boxed_slice(),
            occupied: [0; LEVELS],
            elapsed: 0,
            next_generation: 0,
        }
    }

    /// The number of live (armed, not fired, not cancelled) timers.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no timer is live.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The watermark of the last [`advance_to`](Self::advance_to) (the
    /// largest so far), or `i64::MIN` before any.
    pub fn watermark(&self) -> Timestamp {
        from_key(self.elapsed)
    }

    /// Arms a timer; O(1). A deadline behind the current watermark fires on
    /// the next `advance_to` (whose watermark is after it).
    ///
    /// # Panics
    /// With more than `u32::MAX - 1` live timers.
    pub fn insert(&mut self, deadline: Timestamp, value: T) -> TimerId {
        let key = to_key(deadline);
        let generation = self.next_generation;
        self.next_generation += 1;
        let index = self.entries.insert(Entry { key, generation, prev: NIL, next: NIL, list: 0, value });
        assert!(index < NIL as usize, "TimerWheel: too many live timers");
        self.link(index as u32, key);
        TimerId { index: index as u32, generation }
    }

    /// Disarms a timer and returns its value; O(1). `None` if it has already
    /// fired or been cancelled.
    pub fn cancel(&mut self, id: TimerId) -> Option<T> {
        let entry = self.entries.get(id.index as usize)?;
        if entry.generation != id.generation {
            return None;
        }
        self.unlink(id.index);
        Some(self.entries.remove(id.index as usize).value)
    }

    /// A lower bound on the earliest live deadline, `None` when no timer is
    /// live; O(levels). It is exact when that timer sits on the lowest level,
    /// and never above it, so `watermark <= next_bound()` means an
    /// [`advance_to`](Self::advance_to) to `watermark` would fire nothing.
    ///
    /// # Examples
    /// ```
    /// use cep_time::wheel::TimerWheel;
    /// let mut wheel = TimerWheel::new();
    /// assert_eq!(wheel.next_bound(), None);
    /// wheel.insert(1000, ());
    /// assert!(wheel.next_bound().unwrap() <= 1000);
    /// ```
    pub fn next_bound(&self) -> Option<Timestamp> {
        if self.lists[PAST].head != NIL {
            return Some(from_key(0));
        }
        let level = self.occupied.iter().position(|&bits| bits != 0)?;
        let slot = self.occupied[level].trailing_zeros() as usize;
        Some(from_key(slot_start(self.elapsed, level, slot)))
    }

    /// The deadline of a live timer.
    pub fn deadline(&self, id: TimerId) -> Option<Timestamp> {
        self.entries.get(id.index as usize).filter(|e| e.generation == id.generation).map(|e| from_key(e.key))
    }

    /// Moves the watermark to `watermark` and appends to `out` every timer
    /// with deadline **strictly before** `watermark`, in deadline order (equal
    /// deadlines in insertion order). A watermark behind the current one does
    /// not move it back (it only fires past-inserted timers before it).
    ///
    /// The cost is O(fired + cascaded + levels), independent of how far the
    /// watermark jumps.
    pub fn advance_to(&mut self, watermark: Timestamp, out: &mut Vec<(Timestamp, T)>) {
        self.advance_key(to_key(watermark), out);
    }

    /// The end of the input (watermark +∞): appends every live timer to `out`
    /// in deadline order, including those at `i64::MAX`, and leaves the wheel
    /// empty.
    pub fn drain(&mut self, out: &mut Vec<(Timestamp, T)>) {
        self.advance_key(u64::MAX, out);
        // All that is left has key u64::MAX and, with elapsed = u64::MAX, sits
        // on level 0, slot 63.
        let last = SLOTS - 1;
        if self.occupied[0] & (1 << last) != 0 {
            self.fire_list(last, out);
        }
        debug_assert!(self.entries.is_empty());
    }

    fn advance_key(&mut self, target: u64, out: &mut Vec<(Timestamp, T)>) {
        if self.lists[PAST].head != NIL {
            self.fire_past(target, out);
        }
        if target <= self.elapsed {
            return;
        }
        // The lowest occupied level holds the earliest slot: every key on
        // level l shares elapsed's bits above l, and lies above elapsed's
        // slot on l (for l ≥ 1), so it is after every key on lower levels.
        while let Some(level) = self.occupied.iter().position(|&bits| bits != 0) {
            let slot = self.occupied[level].trailing_zeros() as usize;
            let start = slot_start(self.elapsed, level, slot);
            if level == 0 {
                if start >= target {
                    break;
                }
                self.elapsed = start;
                self.fire_list(slot, out);
            } else {
                // Cascade when the target reaches into the slot (even its
                // first key): once elapsed is inside, its timers belong lower.
                if start > target {
                    break;
                }
                self.elapsed = start;
                self.cascade(level * SLOTS + slot);
            }
        }
        self.elapsed = target;
    }

    /// Fires the whole level-0 list `slot` (one key) in list order.
    fn fire_list(&mut self, slot: usize, out: &mut Vec<(Timestamp, T)>) {
        let list = std::mem::replace(&mut self.lists[slot], EMPTY);
        self.occupied[0] &= !(1 << slot);
        let mut cur = list.head;
        while cur != NIL {
            let entry = self.entries.remove(cur as usize);
            cur = entry.next;
            out.push((from_key(entry.key), entry.value));
        }
    }

    /// Re-files every entry of a higher-level list relative to the new
    /// `elapsed`, in list order (which keeps ties in insertion order).
    fn cascade(&mut self, list_index: usize) {
        let list = std::mem::replace(&mut self.lists[list_index], EMPTY);
        self.occupied[list_index / SLOTS] &= !(1 << (list_index % SLOTS));
        let mut cur = list.head;
        while cur != NIL {
            let entry = &self.entries[cur as usize];
            let (next, key) = (entry.next, entry.key);
            self.link(cur, key);
            cur = next;
        }
    }

    /// Fires the past-list timers with key below `target`, in key order
    /// (stable, so ties stay in insertion order); the others stay.
    fn fire_past(&mut self, target: u64, out: &mut Vec<(Timestamp, T)>) {
        let mut due = Vec::new();
        let mut cur = self.lists[PAST].head;
        while cur != NIL {
            let entry = &self.entries[cur as usize];
            if entry.key < target {
                due.push((entry.key, cur));
            }
            cur = entry.next;
        }
        due.sort_by_key(|&(key, _)| key);
        for (_, index) in due {
            self.unlink(index);
            let entry = self.entries.remove(index as usize);
            out.push((from_key(entry.key), entry.value));
        }
    }

    /// Appends entry `index` (with `key`) to the tail of its list.
    #[inline]
    fn link(&mut self, index: u32, key: u64) {
        let list_index = if key < self.elapsed {
            PAST
        } else {
            let level = level_for(self.elapsed, key);
            let slot = slot_for(key, level);
            self.occupied[level] |= 1 << slot;
            level * SLOTS + slot
        };
        let tail = self.lists[list_index].tail;
        {
            let entry = &mut self.entries[index as usize];
            entry.list = list_index as u16;
            entry.prev = tail;
            entry.next = NIL;
        }
        if tail == NIL {
            self.lists[list_index].head = index;
        } else {
            self.entries[tail as usize].next = index;
        }
        self.lists[list_index].tail = index;
    }

    /// Takes entry `index` off its list (it stays in the slab).
    #[inline]
    fn unlink(&mut self, index: u32) {
        let (prev, next, list_index) = {
            let e = &self.entries[index as usize];
            (e.prev, e.next, e.list as usize)
        };
        if prev == NIL {
            self.lists[list_index].head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            self.lists[list_index].tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
        if self.lists[list_index].head == NIL && list_index != PAST {
            self.occupied[list_index / SLOTS] &= !(1 << (list_index % SLOTS));
        }
    }
}

/// A handle to a timer in a [`FifoTimers`] (its insertion number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FifoId(u64);

#[derive(Debug)]
struct FifoEntry<T> {
    deadline: Timestamp,
    value: Option<T>,
}

/// Timers armed in non-decreasing deadline order (one window length): a
/// `VecDeque`, with the API of [`TimerWheel`]. Cancelled entries are emptied
/// in place and skipped when they reach the front, so memory is the span from
/// the oldest armed-and-unfired entry to the newest.
///
/// # Examples
/// ```
/// use cep_time::wheel::FifoTimers;
/// let mut timers = FifoTimers::new();
/// let a = timers.insert(10, 'a');
/// timers.insert(10, 'b');
/// timers.insert(20, 'c');
/// assert_eq!(timers.cancel(a), Some('a'));
/// let mut out = Vec::new();
/// timers.advance_to(20, &mut out);
/// assert_eq!(out, [(10, 'b')]);
/// assert_eq!(timers.cancel(a), None);
/// ```
#[derive(Debug)]
pub struct FifoTimers<T> {
    queue: VecDeque<FifoEntry<T>>,
    /// The insertion number of `queue[0]`.
    front: u64,
    live: usize,
    last_deadline: Timestamp,
}

impl<T> Default for FifoTimers<T> {
    fn default() -> Self {
        FifoTimers::new()
    }
}

impl<T> FifoTimers<T> {
    /// No timers.
    pub fn new() -> FifoTimers<T> {
        FifoTimers { queue: VecDeque::new(), front: 0, live: 0, last_deadline: Timestamp::MIN }
    }

    /// The number of live timers.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no timer is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The largest deadline armed so far (`i64::MIN` before any): the
    /// smallest deadline [`insert`](Self::insert) accepts.
    pub fn last_deadline(&self) -> Timestamp {
        self.last_deadline
    }

    /// Arms a timer; O(1) amortised.
    ///
    /// # Panics
    /// If `deadline` is before [`last_deadline`](Self::last_deadline) (use
    /// [`try_insert`](Self::try_insert) to check instead).
    pub fn insert(&mut self, deadline: Timestamp, value: T) -> FifoId {
        match self.try_insert(deadline, value) {
            Ok(id) => id,
            Err(_) => panic!("FifoTimers: deadline {deadline} before {}", self.last_deadline),
        }
    }

    /// Arms a timer, or gives the value back if `deadline` is before
    /// [`last_deadline`](Self::last_deadline).
    pub fn try_insert(&mut self, deadline: Timestamp, value: T) -> Result<FifoId, T> {
        if deadline < self.last_deadline {
            return Err(value);
        }
        self.last_deadline = deadline;
        let id = FifoId(self.front + self.queue.len() as u64);
        self.queue.push_back(FifoEntry { deadline, value: Some(value) });
        self.live += 1;
        Ok(id)
    }

    /// Disarms a timer and returns its value; O(1). `None` if it has already
    /// fired or been cancelled.
    pub fn cancel(&mut self, id: FifoId) -> Option<T> {
        let position = usize::try_from(id.0.checked_sub(self.front)?).ok()?;
        let value = self.queue.get_mut(position)?.value.take()?;
        self.live -= 1;
        self.pop_cancelled();
        Some(value)
    }

    /// Appends every timer with deadline strictly before `watermark` to
    /// `out`, in deadline order (ties in insertion order).
    pub fn advance_to(&mut self, watermark: Timestamp, out: &mut Vec<(Timestamp, T)>) {
        while let Some(entry) = self.queue.front() {
            if entry.deadline >= watermark {
                break;
            }
            let entry = self.queue.pop_front().expect("front exists");
            self.front += 1;
            if let Some(value) = entry.value {
                self.live -= 1;
                out.push((entry.deadline, value));
            }
        }
        self.pop_cancelled();
    }

    /// The end of the input: appends every live timer to `out`, in order.
    pub fn drain(&mut self, out: &mut Vec<(Timestamp, T)>) {
        self.front += self.queue.len() as u64;
        out.extend(self.queue.drain(..).filter_map(|e| Some((e.deadline, e.value?))));
        self.live = 0;
    }

    fn pop_cancelled(&mut self) {
        while self.queue.front().is_some_and(|e| e.value.is_none()) {
            self.queue.pop_front();
            self.front += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_preserve_order_and_round_trip() {
        let ts = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
        for w in ts.windows(2) {
            assert!(to_key(w[0]) < to_key(w[1]));
        }
        for t in ts {
            assert_eq!(from_key(to_key(t)), t);
        }
        assert_eq!(to_key(i64::MIN), 0);
        assert_eq!(to_key(i64::MAX), u64::MAX);
    }

    #[test]
    fn levels() {
        assert_eq!(level_for(0, 0), 0);
        assert_eq!(level_for(0, 63), 0);
        assert_eq!(level_for(0, 64), 1);
        assert_eq!(level_for(64, 127), 0);
        assert_eq!(level_for(63, 64), 1); // differs in bit 6
        assert_eq!(level_for(0, 4095), 1);
        assert_eq!(level_for(0, 4096), 2);
        assert_eq!(level_for(0, 1 << 59), 9);
        assert_eq!(level_for(0, 1 << 60), 10);
        assert_eq!(level_for(0, u64::MAX), 10);
        assert_eq!(level_for(u64::MAX - 1, u64::MAX), 0);
    }

    #[test]
    fn slots_and_starts() {
        assert_eq!(slot_for(0, 0), 0);
        assert_eq!(slot_for(63, 0), 63);
        assert_eq!(slot_for(64, 0), 0);
        assert_eq!(slot_for(64, 1), 1);
        assert_eq!(slot_for(5 << 12 | 7, 2), 5);
        assert_eq!(slot_for(u64::MAX, 10), 15); // the top level uses 16 slots
        // The start of a slot keeps elapsed's bits above the level.
        assert_eq!(slot_start(0, 0, 5), 5);
        assert_eq!(slot_start(130, 0, 5), 133);
        assert_eq!(slot_start(130, 1, 3), 3 << 6);
        assert_eq!(slot_start((7 << 12) | 130, 1, 3), (7 << 12) | (3 << 6));
        assert_eq!(slot_start(0, 10, 15), 15 << 60);
        assert_eq!(slot_start(u64::MAX, 0, 63), u64::MAX);
        // A key's slot on its level starts at or below the key.
        for (elapsed, key) in [(0u64, 1u64 << 40), (100, 4096 + 7), (u64::MAX - 70, u64::MAX), (5, 5)] {
            let level = level_for(elapsed, key);
            let start = slot_start(elapsed, level, slot_for(key, level));
            assert!(start <= key && u128::from(key - start) < 1u128 << (6 * level));
        }
    }

    #[test]
    fn stale_handle_does_not_touch_reused_entry() {
        let mut w = TimerWheel::new();
        let a = w.insert(5, 'a');
        assert_eq!(w.cancel(a), Some('a'));
        let b = w.insert(6, 'b'); // reuses a's slab entry
        assert_eq!(a.index, b.index);
        assert_eq!(w.cancel(a), None);
        assert_eq!(w.len(), 1);
        let mut out = Vec::new();
        w.advance_to(7, &mut out);
        assert_eq!(out, [(6, 'b')]);
        assert_eq!(w.cancel(b), None);
    }

    #[test]
    fn past_and_extremes() {
        let mut w = TimerWheel::new();
        let mut out = Vec::new();
        w.advance_to(1000, &mut out);
        w.insert(i64::MAX, 'z');
        w.insert(999, 'b');
        w.insert(i64::MIN, 'a');
        w.insert(1000, 'c');
        w.advance_to(1000, &mut out);
        assert_eq!(out, [(i64::MIN, 'a'), (999, 'b')]);
        out.clear();
        w.advance_to(i64::MAX, &mut out);
        assert_eq!(out, [(1000, 'c')]);
        out.clear();
        w.drain(&mut out);
        assert_eq!(out, [(i64::MAX, 'z')]);
        assert!(w.is_empty());
    }

    #[test]
    fn ties_survive_cascades() {
        let mut w = TimerWheel::new();
        let mut out = Vec::new();
        w.insert(10_000, 0); // level 2 from 0
        w.advance_to(8192, &mut out); // cascades into level 1
        w.insert(10_000, 1); // level 1
        w.advance_to(9990, &mut out);
        w.insert(10_000, 2); // level 0
        w.advance_to(10_001, &mut out);
        assert_eq!(out, [(10_000, 0), (10_000, 1), (10_000, 2)]);
    }
}

#[cfg(test)]
mod model_tests {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};

    use proptest::prelude::*;

    use super::*;

    /// The model: a heap of (deadline, insertion) with lazy deletion.
    #[derive(Default)]
    struct Model {
        heap: BinaryHeap<Reverse<(i64, u64)>>,
        live: HashMap<u64, i64>,
    }

    impl Model {
        fn insert(&mut self, deadline: i64, seq: u64) {
            self.heap.push(Reverse((deadline, seq)));
            self.live.insert(seq, deadline);
        }
        fn cancel(&mut self, seq: u64) -> Option<u64> {
            self.live.remove(&seq).map(|_| seq)
        }
        fn advance(&mut self, wm: Option<i64>, out: &mut Vec<(i64, u64)>) {
            while let Some(&Reverse((d, seq))) = self.heap.peek() {
                if wm.is_some_and(|wm| d >= wm) {
                    break;
                }
                self.heap.pop();
                if self.live.remove(&seq).is_some() {
                    out.push((d, seq));
                }
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(i64),
        /// Cancel the n-th handle ever returned (modulo), live or stale.
        Cancel(usize),
        Advance(i64),
    }

    fn timestamp() -> impl Strategy<Value = i64> {
        prop_oneof![
            4 => -3000i64..3000,
            2 => 0i64..1 << 20,
            1 => -(1i64 << 42)..1 << 42,
            1 => any::<i64>(),
            1 => i64::MIN..i64::MIN + 100,
            1 => i64::MAX - 100..=i64::MAX,
        ]
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            5 => timestamp().prop_map(Op::Insert),
            2 => any::<usize>().prop_map(Op::Cancel),
            2 => timestamp().prop_map(Op::Advance),
        ];
        proptest::collection::vec(op, 0..300)
    }

    /// Runs `ops` against the wheel and the model; panics on a difference.
    fn check_wheel(ops: &[Op]) {
        let mut wheel = TimerWheel::new();
        let mut model = Model::default();
        let mut ids = Vec::new();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for op in ops {
            match *op {
                Op::Insert(d) => {
                    let seq = ids.len() as u64;
                    ids.push(wheel.insert(d, seq));
                    model.insert(d, seq);
                }
                Op::Cancel(n) if !ids.is_empty() => {
                    let n = n % ids.len();
                    assert_eq!(wheel.cancel(ids[n]), model.cancel(n as u64), "cancel {n}");
                }
                Op::Cancel(_) => {}
                Op::Advance(wm) => {
                    wheel.advance_to(wm, &mut got);
                    model.advance(Some(wm), &mut want);
                    assert_eq!(got, want, "advance_to({wm})");
                }
            }
            assert_eq!(wheel.len(), model.live.len());
        }
        wheel.drain(&mut got);
        model.advance(None, &mut want);
        assert_eq!(got, want, "drain");
        assert!(wheel.is_empty());
        for id in ids {
            assert_eq!(wheel.cancel(id), None);
        }
    }

    proptest! {
        #[test]
        fn wheel_matches_heap(ops in ops()) {
            check_wheel(&ops);
        }

        #[test]
        fn fifo_matches_heap(steps in proptest::collection::vec((0u8..3, 0i64..50, any::<usize>()), 0..300),
                             start in prop_oneof![Just(i64::MIN), -1000i64..1000, Just(i64::MAX - 5000)]) {
            let mut fifo = FifoTimers::new();
            let mut model = Model::default();
            let mut ids = Vec::new();
            let (mut got, mut want) = (Vec::new(), Vec::new());
            let mut last = start;
            for (kind, delta, n) in steps {
                match kind {
                    0 => {
                        last = last.saturating_add(delta / 5); // many ties
                        let seq = ids.len() as u64;
                        ids.push(fifo.insert(last, seq));
                        model.insert(last, seq);
                    }
                    1 if !ids.is_empty() => {
                        let n = n % ids.len();
                        prop_assert_eq!(fifo.cancel(ids[n]), model.cancel(n as u64));
                    }
                    1 => {}
                    _ => {
                        let wm = last.saturating_add(delta - 25);
                        fifo.advance_to(wm, &mut got);
                        model.advance(Some(wm), &mut want);
                        prop_assert_eq!(&got, &want);
                    }
                }
                prop_assert_eq!(fifo.len(), model.live.len());
            }
            prop_assert!(fifo.last_deadline().checked_sub(1).is_none_or(|d| fifo.try_insert(d, 0).is_err()));
            fifo.drain(&mut got);
            model.advance(None, &mut want);
            prop_assert_eq!(&got, &want);
            prop_assert!(fifo.is_empty());
        }
    }

    /// A long deterministic run: many live timers, steady advances, cancels
    /// of live and stale handles, and occasional jumps.
    #[test]
    fn wheel_matches_heap_long() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut ops = Vec::new();
        let mut now = -50_000i64;
        for _ in 0..60_000 {
            let r = next();
            ops.push(match r % 10 {
                0..=5 => Op::Insert(now + (next() % 100_000) as i64 - 100),
                6..=7 => Op::Cancel(next() as usize),
                8 => {
                    now += (next() % 500) as i64;
                    Op::Advance(now)
                }
                _ if r % 1000 == 9 => {
                    now += (next() % (1 << 30)) as i64;
                    Op::Advance(now)
                }
                _ => Op::Advance(now),
            });
        }
        check_wheel(&ops);
    }

    #[test]
    fn next_bound_never_exceeds_the_earliest_deadline() {
        let mut wheel = TimerWheel::new();
        let mut live: Vec<(TimerId, i64)> = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut wm = -1_000_000i64;
        let mut out = Vec::new();
        for _ in 0..20_000 {
            match rnd() % 4 {
                0 | 1 => {
                    let d = wm + (rnd() % 5_000_000) as i64;
                    live.push((wheel.insert(d, ()), d));
                }
                2 if !live.is_empty() => {
                    let (id, _) = live.swap_remove((rnd() as usize) % live.len());
                    assert!(wheel.cancel(id).is_some());
                }
                _ => {
                    wm += (rnd() % 200_000) as i64;
                    out.clear();
                    wheel.advance_to(wm, &mut out);
                    live.retain(|&(_, d)| d >= wm);
                }
            }
            let min = live.iter().map(|&(_, d)| d).min();
            match (wheel.next_bound(), min) {
                (None, None) => {}
                (Some(b), Some(m)) => assert!(b <= m, "bound {b} above the earliest deadline {m}"),
                other => panic!("bound and live timers disagree: {other:?}"),
            }
        }
    }
}

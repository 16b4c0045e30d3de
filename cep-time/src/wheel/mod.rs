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
//! When the watermark passes a whole slot at once, its timers are not
//! cascaded but fired straight from it, put in order by a stable radix sort
//! of the `l` 6-bit digits below the slot's: re-filing each of them level by
//! level would take a block of a lower slot per timer when the wheel is
//! sparse (see docs/perf-log.md, 2026-12-02, W6 expiry).
//!
//! Cancel is lazy: it leaves the timer's index on its list as a
//! *tombstone*, marked in a bitmap of live indexes (128 KB per million
//! timers) that firing and cascading consult. Cancel reads no timer and no
//! neighbour (a doubly linked list would touch three timers, two of them
//! only after the first arrives: with a million live timers each is a cache
//! miss), and not even the timer's list: it checks the handle's generation,
//! clears the timer's bit and counts a tombstone, under 30 instructions, so
//! that many cancels' cache misses overlap. It never does more: cancel is
//! O(1) in the worst case, not only amortised.
//!
//! A caller that has no use for cancel's answer can [`TimerWheel::discard`]
//! instead: the handle is only noted, and the wheel checks the noted handles
//! 64 at a time (or sooner, before anything that could see their timers).
//! With a million timers the generation's read is a miss of every cache,
//! and consecutive cancels overlap their misses only when nothing much
//! runs between them; a cancel followed by an arm, as an engine moving a
//! deadline does, leaves each miss on its own, and `discard` lets them
//! overlap again (see docs/perf-log.md, 2026-12-03, W6 `discard`).
//!
//! The tombstones are reclaimed where memory would otherwise grow: an arm
//! that finds no free index, when the tombstones are at least as many as
//! the live timers were at the last compaction or `advance_to`, compacts
//! every list in place and takes a reclaimed index instead of a new one.
//! The work, at most two timers scanned per cancel and one per arm, reading
//! the lists and the bitmap, so falls on the one operation that already
//! has an O(n) worst case, the arm that grows the wheel's arrays, as a
//! collector runs when an allocation would grow the heap (see
//! docs/perf-log.md, 2026-12-02, W6 compaction). Arming only writes, never
//! reads, so it does not wait for cache misses either.
//!
//! A [`TimerId`] carries the index, the deadline and a generation, the
//! number of timers armed before it (modulo 2³²), kept per index in a `Vec`
//! of its own (4 bytes a timer, so cancel's one random read is of a small
//! array): a handle is live while its index's bit is set and the index holds
//! its generation, so a stale handle cancels nothing and never touches the
//! timer that reused its index (unless exactly a multiple of 2³² timers were
//! armed in between while the stale handle was kept).
//!
//! Deadlines at or behind the wheel's position when inserted go to a separate
//! "past" list and fire on the next `advance_to` whose watermark is after them.

use cep_core::Timestamp;

mod free_indexes;
mod key;
mod lists;
mod sort;

use free_indexes::FreeIndexes;
use key::{BITS, LEVELS, SLOTS, from_key, level_for, slot_for, slot_start, to_key};
use lists::{BLOCK, Block, EMPTY, List, NIL, Slot};
use sort::sort_by_low_digits;

pub use crate::fifo::{FifoId, FifoTimers};

/// The list index of the "past" list (after the `LEVELS * SLOTS` slot lists).
const PAST: usize = LEVELS * SLOTS;
/// Discarded handles ([`TimerWheel::discard`]) checked at once: enough
/// that their cache misses overlap, few enough to scan when asked whether
/// a timer is live.
const DISCARD_BATCH: usize = 64;
/// The fewest tombstones that trigger a compaction (so a wheel of a few
/// timers does not sweep its lists on every other cancel).
const MIN_COMPACT: usize = 64;

/// A handle to a timer in a [`TimerWheel`]: its index, its generation (the
/// wheel's count of timers armed before it, modulo 2³²), so a stale handle
/// is detected, and its deadline ([`TimerId::deadline`]), which the owner
/// can read without asking the wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerId {
    index: u32,
    generation: u32,
    key: u64,
}

impl TimerId {
    /// The deadline the timer was armed with.
    pub fn deadline(&self) -> Timestamp {
        from_key(self.key)
    }
}

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
/// assert!(wheel.cancel(a));
/// assert!(!wheel.cancel(a)); // stale: already cancelled
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
    /// For each index, the generation of the timer armed on it last. A
    /// handle is to a live timer when its generation matches and the index's
    /// bit in `alive` is set.
    generations: Vec<u32>,
    /// A bit per index, set while it holds a live timer (so a tombstone is
    /// a timer on a list whose index's bit is clear): 128 KB per million
    /// timers, which firing, cascading and compaction read.
    alive: Vec<u64>,
    /// The indexes on no list, to reuse, smallest first.
    free: FreeIndexes,
    /// A whole slot's timers being fired at once, and the other buffer of
    /// their sort (see [`fire_slot`](Self::fire_slot); kept to reuse their
    /// memory).
    sorting: Vec<Slot<T>>,
    sorted: Vec<Slot<T>>,
    /// Tombstones on all lists. The live timers are the indexes neither free
    /// nor tombstones, so arming updates no count of its own.
    tombstones: usize,
    /// An arm that finds no free index compacts every list when
    /// `tombstones` has reached this: the live timers after the last
    /// compaction or `advance_to`, at least `MIN_COMPACT`.
    compact_at: usize,
    /// Handles discarded and not yet checked, at most `DISCARD_BATCH`
    /// (see [`discard`](Self::discard)).
    discarded: Vec<TimerId>,
    /// The generation of the next timer armed.
    next_generation: u32,
    /// `LEVELS * SLOTS` slot lists, then the past list; empty until the
    /// first timer is armed. (8.5 KB of lists per wheel, and an engine has a
    /// wheel per query and per shard or slice: a file of 10,000 queries held
    /// 85 MB of empty lists, most of `cep run`'s memory.)
    lists: Box<[List]>,
    /// The blocks of all lists.
    blocks: Vec<Block<T>>,
    /// For each block, the next block of its list (or `NIL`).
    next_blocks: Vec<u32>,
    /// Blocks on no list.
    free_blocks: Vec<u32>,
    /// A bit per slot whose list is not empty.
    occupied: [u64; LEVELS],
    /// Every key below this has fired; every key on a level is ≥ it.
    elapsed: u64,
}

impl<T: Copy> Default for TimerWheel<T> {
    fn default() -> Self {
        TimerWheel::new()
    }
}

impl<T: Copy> TimerWheel<T> {
    /// An empty wheel at watermark −∞.
    pub fn new() -> TimerWheel<T> {
        TimerWheel::with_capacity(0)
    }

    /// An empty wheel with room for `capacity` timers before reallocating
    /// its generations.
    pub fn with_capacity(capacity: usize) -> TimerWheel<T> {
        TimerWheel {
            generations: Vec::with_capacity(capacity),
            alive: Vec::with_capacity(capacity.div_ceil(64)),
            free: FreeIndexes::new(),
            sorting: Vec::new(),
            sorted: Vec::new(),
            tombstones: 0,
            compact_at: MIN_COMPACT,
            discarded: Vec::new(),
            next_generation: 0,
            lists: Box::default(),
            blocks: Vec::new(),
            next_blocks: Vec::new(),
            free_blocks: Vec::new(),
            occupied: [0; LEVELS],
            elapsed: 0,
        }
    }

    /// The number of live (armed, not fired, cancelled or discarded)
    /// timers.
    pub fn len(&self) -> usize {
        self.on_lists() - self.tombstones - self.discarded_live()
    }

    /// How many of the discarded handles not yet checked are of distinct
    /// live timers (a handle may be discarded twice, or be stale).
    fn discarded_live(&self) -> usize {
        let d = &self.discarded;
        (0..d.len()).filter(|&i| self.is_live(d[i]) && !d[..i].contains(&d[i])).count()
    }

    /// The indexes on lists: live timers and tombstones.
    #[inline]
    fn on_lists(&self) -> usize {
        self.generations.len() - self.free.len()
    }

    /// Whether no timer is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The watermark of the last [`advance_to`](Self::advance_to) (the
    /// largest so far), or `i64::MIN` before any.
    pub fn watermark(&self) -> Timestamp {
        from_key(self.elapsed)
    }

    /// Arms a timer; O(1) amortised. A deadline behind the current watermark
    /// fires on the next `advance_to` (whose watermark is after it).
    ///
    /// An arm that finds no free index either grows the wheel's arrays or,
    /// once cancelled timers (tombstones) are at least as many as the live
    /// timers were at the last compaction or `advance_to`, compacts every
    /// list to reclaim theirs: either way that arm takes time in proportion
    /// to the timers, as a push onto a full `Vec` does.
    ///
    /// # Panics
    /// With more than `u32::MAX` timers and tombstones.
    #[inline]
    pub fn insert(&mut self, deadline: Timestamp, value: T) -> TimerId {
        let key = to_key(deadline);
        let generation = self.next_generation;
        self.next_generation = generation.wrapping_add(1);
        // With many live timers the generation is a cache miss, which
        // stores need not wait for; but a core commits its stores in order,
        // so one waiting store holds up the stores behind it: arming writes
        // nothing it can do without (no count of live timers, no occupancy
        // bit unless the list was empty).
        let index = match self.free.pop_first().or_else(|| self.reclaim()) {
            Some(index) => {
                self.generations[index as usize] = generation;
                index
            }
            None => self.grow(generation),
        };
        self.mark_alive(index);
        if self.lists.is_empty() {
            self.allocate_lists();
        }
        self.push(self.list_of(key), Slot { key, index, value });
        TimerId { index, generation, key }
    }

    /// Gives the wheel its lists, at the first timer armed.
    #[cold]
    #[inline(never)]
    fn allocate_lists(&mut self) {
        self.lists = vec![EMPTY; PAST + 1].into_boxed_slice();
    }

    /// Whether the past list holds timers (it does not exist before the
    /// first timer is armed).
    #[inline]
    fn has_past(&self) -> bool {
        self.lists.get(PAST).is_some_and(|past| past.len != 0)
    }

    /// When no index is free: once the tombstones are at least
    /// `compact_at`, one of their indexes, reclaimed by compacting every
    /// list (tombstones dropped, order kept); `None` otherwise (the arm
    /// grows the arrays). That scan covers at most twice the tombstones plus
    /// the timers armed since, so it costs each cancel at most two timers
    /// scanned and each arm one, and its look-ups are independent of one
    /// another (a scan of the lists' blocks against a bitmap, not a pointer
    /// chase).
    #[inline(never)]
    fn reclaim(&mut self) -> Option<u32> {
        // Discarded timers become tombstones first, to be reclaimed too.
        self.settle_discarded();
        if self.tombstones < self.compact_at {
            return None;
        }
        self.compact_all();
        self.free.pop_first()
    }

    /// Adds index `generations.len()` for a new timer.
    #[inline(never)]
    fn grow(&mut self, generation: u32) -> u32 {
        let index = u32::try_from(self.generations.len()).expect("TimerWheel: too many timers");
        self.generations.push(generation);
        self.free.reserve(index);
        if index % 64 == 0 {
            self.alive.push(0);
        }
        index
    }

    /// Disarms a timer; O(1). Returns whether it was live (`false` if it
    /// has already fired or been cancelled or discarded). Handles
    /// [discarded](Self::discard) before it, at most 64, are checked first.
    ///
    /// Cancel reads the timer's generation and its bit in the bitmap of live
    /// indexes, clears the bit and counts a tombstone: it reads neither the
    /// timer nor its list. The timer stays on its list as a *tombstone*,
    /// which firing and cascading skip, until an arm that finds no free
    /// index compacts the lists (see [`insert`](Self::insert)).
    #[inline]
    pub fn cancel(&mut self, id: TimerId) -> bool {
        self.settle_discarded();
        self.cancel_now(id)
    }

    /// Disarms a timer, as [`cancel`](Self::cancel) does, but later, and
    /// without saying whether it was live: for a caller that throws the
    /// answer away anyway, as an engine replacing a partition's deadline
    /// does.
    ///
    /// Discard only notes the handle; the wheel checks and cancels 64 at a
    /// time, and before anything that could see the timer (advancing,
    /// draining, compacting, [`cancel`](Self::cancel)). With a million
    /// timers, a cancel's read of the timer's generation is a miss of every
    /// cache; a core overlaps consecutive cancels' misses, but not when each
    /// cancel is followed by an arm, which fills its window of instructions
    /// in flight. 64 checks in a row overlap (see docs/perf-log.md,
    /// 2026-12-03, W6 `discard`).
    ///
    /// [`len`](Self::len), [`contains`](Self::contains) and
    /// [`is_empty`](Self::is_empty) already leave a discarded timer out;
    /// [`next_bound`](Self::next_bound), a lower bound, may still count it.
    ///
    /// # Examples
    /// ```
    /// use cep_time::wheel::TimerWheel;
    /// let mut wheel = TimerWheel::new();
    /// let a = wheel.insert(10, "a");
    /// wheel.insert(20, "b");
    /// wheel.discard(a);
    /// assert!(!wheel.contains(a));
    /// assert_eq!(wheel.len(), 1);
    /// let mut out = Vec::new();
    /// wheel.drain(&mut out);
    /// assert_eq!(out, [(20, "b")]);
    /// ```
    #[inline]
    pub fn discard(&mut self, id: TimerId) {
        if self.discarded.len() == DISCARD_BATCH {
            self.settle_nonempty();
        }
        self.discarded.push(id);
    }

    /// Cancels the timers of the handles discarded so far (a test of an
    /// empty list when there are none).
    #[inline]
    fn settle_discarded(&mut self) {
        if !self.discarded.is_empty() {
            self.settle_nonempty();
        }
    }

    /// [`settle_discarded`](Self::settle_discarded)'s work, out of line.
    #[inline(never)]
    fn settle_nonempty(&mut self) {
        for i in 0..self.discarded.len() {
            self.cancel_now(self.discarded[i]);
        }
        self.discarded.clear();
    }

    /// [`cancel`](Self::cancel) with no handle discarded before it.
    #[inline(always)]
    fn cancel_now(&mut self, id: TimerId) -> bool {
        if self.generations.get(id.index as usize) != Some(&id.generation) {
            return false;
        }
        if !self.clear_alive(id.index) {
            return false;
        }
        self.tombstones += 1;
        true
    }

    /// Whether index `index` holds a live timer (0 or 1, for branch-free
    /// use).
    #[inline]
    fn alive_bit(&self, index: u32) -> usize {
        (self.alive[index as usize / 64] >> (index % 64) & 1) as usize
    }

    /// Whether index `index` holds a live timer.
    #[inline]
    fn is_alive(&self, index: u32) -> bool {
        self.alive_bit(index) != 0
    }

    /// Marks index `index` live.
    #[inline]
    fn mark_alive(&mut self, index: u32) {
        self.alive[index as usize / 64] |= 1 << (index % 64);
    }

    /// Marks index `index` not live; returns whether it was. (Tests and
    /// clears the bit in one go, clearing a clear bit changing nothing:
    /// fewer instructions per cancel let more cancels' cache misses
    /// overlap.)
    #[inline]
    fn clear_alive(&mut self, index: u32) -> bool {
        let (word, bit) = (&mut self.alive[index as usize / 64], 1 << (index % 64));
        let was = *word & bit;
        *word &= !bit;
        was != 0
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
        if self.is_empty() {
            return None;
        }
        if self.has_past() {
            return Some(from_key(0));
        }
        let level = self.occupied.iter().position(|&bits| bits != 0)?;
        let slot = self.occupied[level].trailing_zeros() as usize;
        Some(from_key(slot_start(self.elapsed, level, slot)))
    }

    /// Whether the timer is live (armed, not fired, not cancelled).
    pub fn contains(&self, id: TimerId) -> bool {
        self.is_live(id) && !self.discarded.contains(&id)
    }

    /// Whether the handle's timer is live, discarded or not.
    fn is_live(&self, id: TimerId) -> bool {
        self.generations.get(id.index as usize) == Some(&id.generation) && self.is_alive(id.index)
    }

    /// Moves the watermark to `watermark` and appends to `out` every timer
    /// with deadline **strictly before** `watermark`, in deadline order (equal
    /// deadlines in insertion order). A watermark behind the current one does
    /// not move it back (it only fires past-inserted timers before it).
    ///
    /// The cost is O(fired × levels + cascaded + levels), independent of
    /// how far the watermark jumps.
    pub fn advance_to(&mut self, watermark: Timestamp, out: &mut Vec<(Timestamp, T)>) {
        self.advance_key(to_key(watermark), out);
        self.compact_at = self.len().max(MIN_COMPACT);
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
        debug_assert!(self.is_empty());
    }

    fn advance_key(&mut self, target: u64, out: &mut Vec<(Timestamp, T)>) {
        self.settle_discarded();
        if self.has_past() {
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
                let end = start.checked_add(1 << (BITS as usize * level));
                if end.is_some_and(|end| end <= target) {
                    // The whole slot fires: sort it rather than re-file its
                    // timers level by level.
                    self.fire_slot(level, slot, out);
                } else {
                    self.cascade(level * SLOTS + slot);
                }
            }
        }
        self.elapsed = target;
    }

    /// Fires live timer `slot` (already off its list): frees its index and
    /// returns the deadline and the value.
    #[inline]
    fn release(&mut self, slot: Slot<T>) -> (Timestamp, T) {
        let was_live = self.clear_alive(slot.index);
        debug_assert!(was_live, "only a live timer fires");
        self.free.insert(slot.index);
        (from_key(slot.key), slot.value)
    }

    /// Fires the whole level-0 list `slot` (one key) in list order.
    fn fire_list(&mut self, slot: usize, out: &mut Vec<(Timestamp, T)>) {
        self.drain_list(slot, |wheel, timer| out.push(wheel.release(timer)));
    }

    /// Fires every timer of slot `slot` on level `level ≥ 1`, all of which
    /// are due (the watermark is past the slot's last key), in key order,
    /// equal keys in list order (which is their insertion order: timers of
    /// one key are always on one list). Cascading them instead would file
    /// each onto a lower level, once per level, and there a slot of a sparse
    /// wheel takes a block per timer; sorting them costs one pass of a
    /// 64-bucket counting sort per level below (`level` passes of the 6-bit
    /// digits their keys can differ in), over memory already in the cache.
    fn fire_slot(&mut self, level: usize, slot: usize, out: &mut Vec<(Timestamp, T)>) {
        let mut timers = std::mem::take(&mut self.sorting);
        timers.clear();
        self.drain_list(level * SLOTS + slot, |_, timer| timers.push(timer));
        sort_by_low_digits(&mut timers, &mut self.sorted, level);
        out.reserve(timers.len());
        for &timer in &timers {
            out.push(self.release(timer));
        }
        self.sorting = timers;
    }

    /// Re-files every live timer of a higher-level list relative to the new
    /// `elapsed`, in list order (which keeps ties in insertion order), and
    /// frees its tombstones.
    fn cascade(&mut self, list_index: usize) {
        self.drain_list(list_index, |wheel, timer| wheel.file(timer));
    }

    /// Drops every tombstone, list by list (see [`compact`](Self::compact)),
    /// and frees their indexes at once. An arm calls it when no index is
    /// free and the tombstones have reached `compact_at` (see
    /// [`reclaim`](Self::reclaim) for its cost), so every index is on a list
    /// then, and once the lists hold no tombstone the free indexes are
    /// exactly those whose bit in `alive` is clear: the free set is rebuilt
    /// from the bitmap, a sequential pass costing a 64th of the lists' scan.
    /// (Compaction once collected each tombstone's index as it met it and
    /// set it in the free set: a compaction of a million tombstones among a
    /// million live timers took a median 7.2 ms, against 4.4–5.5 ms this
    /// way.) Out of line: it runs once per many arms, which stay small
    /// enough to inline.
    #[inline(never)]
    fn compact_all(&mut self) {
        debug_assert_eq!(self.free.len(), 0, "an arm compacts when no index is free");
        for level in 0..LEVELS {
            let mut slots = self.occupied[level];
            while slots != 0 {
                self.compact(level * SLOTS + slots.trailing_zeros() as usize);
                slots &= slots - 1;
            }
        }
        if self.has_past() {
            self.compact(PAST);
        }
        self.free.assign_clear_bits(&self.alive, self.generations.len());
        debug_assert_eq!(self.free.len(), self.tombstones, "every tombstone is on a list");
        self.tombstones = 0;
        self.compact_at = self.len().max(MIN_COMPACT);
    }

    /// Drops the tombstones of list `list_index` in place, keeping the
    /// order of the rest, and frees the blocks it no longer needs.
    fn compact(&mut self, list_index: usize) {
        let list = self.lists[list_index];
        let (mut read, mut write, mut at) = (list.head, list.head, 0);
        let (mut left, mut kept) = (list.len as usize, 0);
        // The write position never passes the read position, and each block
        // is copied before it is read, so writing in place is safe. Live
        // timers and tombstones are interleaved at random, so the inner loop
        // is branch-free: each timer is written, and the write position moves
        // on past a live one only.
        while left > 0 {
            let Block(slots) = self.blocks[read as usize];
            let next = self.next_blocks[read as usize];
            let used = left.min(BLOCK);
            for &slot in &slots[..used] {
                let live = self.alive_bit(slot.index);
                self.blocks[write as usize].0[at] = slot;
                at += live;
                kept += live;
                if at == BLOCK {
                    write = self.next_blocks[write as usize];
                    at = 0;
                }
            }
            left -= used;
            read = next;
        }
        // Keep the blocks holding `kept` timers; free the rest.
        let mut tail = NIL;
        let mut block = list.head;
        for _ in 0..kept.div_ceil(BLOCK) {
            tail = block;
            block = self.next_blocks[block as usize];
        }
        if tail != NIL {
            self.next_blocks[tail as usize] = NIL;
        }
        while block != NIL {
            self.free_blocks.push(block);
            block = self.next_blocks[block as usize];
        }
        let head = if kept == 0 { NIL } else { list.head };
        self.lists[list_index] = List { head, tail, len: kept as u32 };
        if kept == 0 && list_index != PAST {
            self.occupied[list_index / SLOTS] &= !(1 << (list_index % SLOTS));
        }
    }

    /// Fires the past-list timers with key below `target`, in key order
    /// (stable, so ties stay in insertion order); the others stay, in order.
    fn fire_past(&mut self, target: u64, out: &mut Vec<(Timestamp, T)>) {
        let mut due = Vec::new();
        self.drain_list(PAST, |wheel, timer| {
            if timer.key < target {
                due.push(timer);
            } else {
                wheel.push(PAST, timer);
            }
        });
        due.sort_by_key(|timer| timer.key);
        for timer in due {
            out.push(self.release(timer));
        }
    }

    /// The list of a timer with `key`: `PAST` if the key is behind
    /// `elapsed`, else its slot. A live timer is always on this list, for
    /// the current `elapsed`: `elapsed` only grows; a key behind it when
    /// armed stays behind it; and while `elapsed` stays below the start of
    /// the slot a key was filed in, it still shares the key's bits above
    /// that level (it lies between the key and the `elapsed` the key was
    /// filed for) and differs from them on that level, so the key maps to the
    /// same slot; `advance_to` re-files a slot before `elapsed` passes its
    /// start.
    #[inline]
    fn list_of(&self, key: u64) -> usize {
        if key < self.elapsed {
            PAST
        } else {
            let level = level_for(self.elapsed, key);
            level * SLOTS + slot_for(key, level)
        }
    }

    /// Appends live timer `slot` to the tail of its list.
    #[inline]
    fn file(&mut self, slot: Slot<T>) {
        self.push(self.list_of(slot.key), slot);
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod model_tests;

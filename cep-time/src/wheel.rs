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
//! A slot's list holds its timers themselves — key, value and a `u32`
//! index — in insertion order, in blocks of 16 chained from one arena shared
//! by all slots, so insert is an append, firing and cascading read whole
//! cache lines and nothing else, and the wheel allocates only when it needs
//! more blocks than ever before (not whenever one slot gets busier than it
//! ever was, as a `Vec` per slot would). The index stands for the timer in
//! the two arrays handles are checked against: its generation and its bit
//! in a bitmap of live indexes. Vacated indexes are reused smallest first
//! (module `free_indexes`), so that consecutive arms write neighbouring
//! generations instead of lines scattered by the order timers were cancelled
//! and fired in (see docs/perf-log.md, 2026-12-01, W6 free indexes). Keeping
//! the timers on the lists, not in an array by index beside lists of
//! indexes, saves 4 bytes a timer and a line read at random per arm, firing
//! and cascade (see docs/perf-log.md, 2026-12-01, W6 timers on the lists).
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
//!
//! # The FIFO fast path
//!
//! With one window length, deadlines are armed in non-decreasing order;
//! [`FifoTimers`] keeps them in a `VecDeque` and cancels by marking the entry
//! empty (skipped when it reaches the front).

use std::collections::VecDeque;

use cep_core::Timestamp;

mod free_indexes;

use free_indexes::FreeIndexes;

/// Bits per level: 64 slots.
const BITS: u32 = 6;
/// Slots per level.
const SLOTS: usize = 1 << BITS;
/// Levels: 11 × 6 bits ≥ 64 bits, so every key has a level.
const LEVELS: usize = 11;
/// The list index of the "past" list (after the `LEVELS * SLOTS` slot lists).
const PAST: usize = LEVELS * SLOTS;
/// Discarded handles ([`TimerWheel::discard`]) checked at once: enough
/// that their cache misses overlap, few enough to scan when asked whether
/// a timer is live.
const DISCARD_BATCH: usize = 64;
/// The fewest tombstones that trigger a compaction (so a wheel of a few
/// timers does not sweep its lists on every other cancel).
const MIN_COMPACT: usize = 64;

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

/// Sorts `timers` stably by the low `digits` 6-bit digits of their keys
/// (the others being equal), with `spare` as the second buffer: insertion
/// sort for a few timers, else a least-significant-digit radix sort that
/// skips the digits all of them share. O(digits × timers), and it allocates
/// only when `spare` must grow.
fn sort_by_low_digits<T: Copy>(timers: &mut Vec<Slot<T>>, spare: &mut Vec<Slot<T>>, digits: usize) {
    /// Below this many timers, insertion sort.
    const FEW: usize = 16;
    if timers.len() <= FEW {
        for i in 1..timers.len() {
            let timer = timers[i];
            let mut j = i;
            while j > 0 && timers[j - 1].key > timer.key {
                timers[j] = timers[j - 1];
                j -= 1;
            }
            timers[j] = timer;
        }
        return;
    }
    let digit = |key: u64, shift: usize| (key >> shift) as usize & (SLOTS - 1);
    for d in 0..digits {
        let shift = BITS as usize * d;
        let mut starts = [0u32; SLOTS];
        for timer in timers.iter() {
            starts[digit(timer.key, shift)] += 1;
        }
        if starts.contains(&(timers.len() as u32)) {
            continue; // one digit for all: already in order by it
        }
        let mut at = 0;
        for start in &mut starts {
            (*start, at) = (at, at + *start);
        }
        spare.clear();
        spare.resize(timers.len(), timers[0]);
        for &timer in timers.iter() {
            let start = &mut starts[digit(timer.key, shift)];
            spare[*start as usize] = timer;
            *start += 1;
        }
        std::mem::swap(timers, spare);
    }
}

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

/// A timer on a list: its key, its index (whose generation and bit in the
/// bitmap of live indexes say whether it is still live) and its value. The
/// list carries all that firing and cascading read, so neither touches
/// memory indexed by the timer: with a million timers that memory is a cache
/// miss per timer each time it is fired or re-filed.
#[derive(Clone, Copy, Debug)]
struct Slot<T> {
    key: u64,
    index: u32,
    /// Meaningful while the index is live (a fired or cancelled timer's
    /// value is left behind: `T: Copy`, so nothing needs dropping).
    value: T,
}

/// Timers per block (four cache lines with `u32` values).
const BLOCK: usize = 16;
/// The null block.
const NIL: u32 = u32::MAX;

/// A run of a list's timers (the link to the next block of the list
/// is kept apart, in `TimerWheel::next_blocks`). A list is a chain of
/// blocks, all full but the last, drawn from one arena shared by all lists:
/// the wheel allocates only when it needs more blocks than ever before,
/// however the timers move between slots.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Block<T>([Slot<T>; BLOCK]);

/// A wheel slot (or the past list): its timers in insertion order, some of
/// them tombstones.
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
    len: u32,
}

const EMPTY: List = List { head: NIL, tail: NIL, len: 0 };

/// A list detached from its slot, consumed block by block.
struct Chain {
    block: u32,
    left: usize,
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

    /// Detaches list `list_index` from its slot, marking the slot empty;
    /// [`next_block`](Self::next_block) consumes it.
    fn take_list(&mut self, list_index: usize) -> Chain {
        if list_index != PAST {
            self.occupied[list_index / SLOTS] &= !(1 << (list_index % SLOTS));
        }
        let list = std::mem::replace(&mut self.lists[list_index], EMPTY);
        Chain { block: list.head, left: list.len as usize }
    }

    /// The next block of a detached chain, copied out (with how many of its
    /// timers are used) and already freed, so that filing timers while
    /// walking the chain may reuse it.
    #[inline]
    fn next_block(&mut self, chain: &mut Chain) -> Option<([Slot<T>; BLOCK], usize)> {
        if chain.left == 0 {
            return None;
        }
        let Block(slots) = self.blocks[chain.block as usize];
        let next = self.next_blocks[chain.block as usize];
        self.free_blocks.push(chain.block);
        let used = chain.left.min(BLOCK);
        chain.left -= used;
        chain.block = next;
        Some((slots, used))
    }

    /// Appends timer `slot` to list `list_index`. (Always inlined: with a
    /// million timers arming waits on stores, and a call's register saves
    /// are more stores.)
    #[inline(always)]
    fn push(&mut self, list_index: usize, slot: Slot<T>) {
        let list = &mut self.lists[list_index];
        let at = list.len as usize % BLOCK;
        if at == 0 {
            self.new_tail_block(list_index, slot);
        }
        let list = &mut self.lists[list_index];
        list.len += 1;
        self.blocks[list.tail as usize].0[at] = slot;
    }

    /// Gives list `list_index`, whose blocks are full, a new empty tail
    /// block (a new one filled with copies of `slot`, which is about to go
    /// first in it).
    #[inline(never)]
    fn new_tail_block(&mut self, list_index: usize, slot: Slot<T>) {
        let block = match self.free_blocks.pop() {
            Some(block) => block,
            None => {
                self.blocks.push(Block([slot; BLOCK]));
                self.next_blocks.push(NIL);
                u32::try_from(self.blocks.len() - 1).expect("TimerWheel: too many blocks")
            }
        };
        self.next_blocks[block as usize] = NIL;
        let list = &mut self.lists[list_index];
        if list.len == 0 {
            list.head = block;
            if list_index != PAST {
                self.occupied[list_index / SLOTS] |= 1 << (list_index % SLOTS);
            }
        } else {
            self.next_blocks[list.tail as usize] = block;
        }
        list.tail = block;
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

    /// Empties list `list_index`: frees its tombstones and hands each live
    /// timer to `each`, in list order. `each` may file timers on other lists
    /// (or on this one, which is detached first).
    #[inline]
    fn drain_list(&mut self, list_index: usize, mut each: impl FnMut(&mut Self, Slot<T>)) {
        let mut chain = self.take_list(list_index);
        while let Some((slots, used)) = self.next_block(&mut chain) {
            for &slot in &slots[..used] {
                if self.is_alive(slot.index) {
                    each(self, slot);
                } else {
                    self.tombstones -= 1;
                    self.free.insert(slot.index);
                }
            }
        }
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

    /// A wheel that never armed a timer holds no lists (an engine has a
    /// wheel per query), and works as an empty wheel.
    #[test]
    fn lists_come_with_the_first_timer() {
        let mut wheel = TimerWheel::<u32>::new();
        let mut out = Vec::new();
        let stale = TimerWheel::<u32>::new().insert(5, 0);
        assert!(!wheel.cancel(stale));
        assert!(!wheel.contains(stale));
        wheel.advance_to(100, &mut out);
        assert_eq!(wheel.next_bound(), None);
        wheel.drain(&mut out);
        assert!(out.is_empty() && wheel.lists.is_empty());
        assert_eq!(wheel.watermark(), i64::MAX);
        // The first timer (here behind the watermark: the past list).
        let mut wheel = TimerWheel::<u32>::new();
        wheel.advance_to(100, &mut out);
        wheel.insert(50, 1);
        wheel.insert(200, 2);
        assert_eq!(wheel.lists.len(), PAST + 1);
        wheel.advance_to(201, &mut out);
        assert_eq!(out, [(50, 1), (200, 2)]);
    }

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
        assert!(w.cancel(a));
        // Enough cancels to compact, which frees a's index.
        for _ in 1..MIN_COMPACT {
            let filler = w.insert(5, 'f');
            assert!(w.cancel(filler));
        }
        assert_eq!(w.len(), 0);
        let b = w.insert(6, 'b'); // reuses a's entry (the smallest free)
        assert_eq!(a.index, b.index);
        assert!(!w.contains(a) && w.contains(b));
        assert!(!w.cancel(a));
        assert_eq!(w.len(), 1);
        let mut out = Vec::new();
        w.advance_to(7, &mut out);
        assert_eq!(out, [(6, 'b')]);
        assert!(!w.cancel(b));
    }

    /// Discarded handles are checked in batches, stale ones and repeats
    /// included: a stale handle whose index a new timer took leaves that
    /// timer alone, a handle discarded twice counts once, and the timers
    /// still noted when a batch fills or the wheel compacts go too.
    #[test]
    fn discarded_timers_go_in_batches() {
        let mut w = TimerWheel::new();
        let a = w.insert(5, 0);
        assert!(w.cancel(a));
        for _ in 1..MIN_COMPACT {
            let filler = w.insert(5, 0);
            assert!(w.cancel(filler));
        }
        let b = w.insert(6, 1); // a's index again
        assert_eq!(a.index, b.index);
        w.discard(a);
        w.discard(a);
        assert!(w.contains(b) && w.len() == 1);
        w.discard(b);
        w.discard(b);
        assert!(!w.contains(b) && w.is_empty());
        assert!(!w.cancel(b), "already discarded");
        // More than a batch: the first batch is settled when it fills.
        let ids: Vec<TimerId> = (0..3 * DISCARD_BATCH as u32).map(|i| w.insert(100 + i as i64, i)).collect();
        for &id in &ids[..2 * DISCARD_BATCH] {
            w.discard(id);
        }
        assert!(w.discarded.len() <= DISCARD_BATCH);
        assert_eq!(w.len(), DISCARD_BATCH);
        // An arm that compacts settles the rest first and reclaims them.
        while w.free.len() != 0 {
            w.insert(i64::MAX, u32::MAX);
        }
        let c = w.insert(1000, 7);
        assert!(w.discarded.is_empty() && w.tombstones == 0, "compacted");
        assert!((c.index as usize) < 3 * DISCARD_BATCH + MIN_COMPACT, "a reclaimed index");
        let mut out = Vec::new();
        w.advance_to(1001, &mut out);
        let fired: Vec<u32> = out.iter().map(|&(_, v)| v).collect();
        let mut want: Vec<u32> = (2 * DISCARD_BATCH as u32..3 * DISCARD_BATCH as u32).collect();
        want.push(7);
        assert_eq!(fired, want);
    }

    /// Cancelled timers that never come due do not pile up: compaction
    /// reclaims their indexes and blocks, so indexes and blocks stay within
    /// twice the live timers (plus a block per list), however many are
    /// cancelled. (The model tests cannot see this: tombstones are skipped
    /// either way.)
    #[test]
    fn cancelled_far_timers_are_reclaimed() {
        let mut w = TimerWheel::new();
        let live = 1000usize;
        let mut armed: Vec<(TimerId, usize)> =
            (0..live).map(|i| (w.insert(1 << 30 | (i as i64 * 7919 % 1000), i), i)).collect();
        assert_eq!(armed[3].0.deadline(), 1 << 30 | (3 * 7919 % 1000));
        for round in live..100_000 + live {
            let at = round * 31 % live;
            let (id, _) = armed[at];
            assert!(w.cancel(id));
            armed[at] = (w.insert(1 << 30 | (round as i64 % 1000), round), round);
        }
        assert_eq!(w.len(), live);
        assert!(w.generations.len() <= 2 * live + 2, "{} indexes for {live} live timers", w.generations.len());
        assert!(w.blocks.len() <= (2 * live).div_ceil(BLOCK) + 2, "{} blocks", w.blocks.len());
        let mut out = Vec::new();
        w.drain(&mut out);
        assert_eq!(out.len(), live);
    }

    /// Cancel only marks: its tombstones stay on their lists, however many,
    /// until an arm that finds no free index reclaims them all at once
    /// instead of growing the wheel.
    #[test]
    fn an_arm_reclaims_what_cancels_leave() {
        let mut w = TimerWheel::new();
        let ids: Vec<TimerId> = (0..1000).map(|i| w.insert(1 << 30 | i, i)).collect();
        for &id in &ids {
            assert!(w.cancel(id));
        }
        assert_eq!((w.len(), w.tombstones, w.generations.len()), (0, 1000, 1000));
        let id = w.insert(5, -1);
        assert_eq!((w.len(), w.tombstones), (1, 0));
        assert_eq!(w.generations.len(), 1000, "a reclaimed index, not a new one");
        assert!(w.contains(id) && ids.iter().all(|&old| !w.contains(old) && !w.cancel(old)));
        let mut out = Vec::new();
        w.drain(&mut out);
        assert_eq!(out, [(5, -1)]);
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
        /// The first live timer from the `n`-th of `armed` on, cyclically
        /// (one is live).
        fn first_live(&self, n: usize, armed: usize) -> usize {
            (0..armed).map(|k| (n + k) % armed).find(|&k| self.live.contains_key(&(k as u64))).expect("a live timer")
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
        /// Cancel the first live timer from the n-th handle on (cyclically).
        CancelLive(usize),
        /// Discard the n-th handle ever returned (modulo), live or stale.
        Discard(usize),
        /// Discard the first live timer from the n-th handle on.
        DiscardLive(usize),
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
            1 => any::<usize>().prop_map(Op::Discard),
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
                    let live = model.cancel(n as u64).is_some();
                    assert_eq!(wheel.contains(ids[n]), live, "contains {n}");
                    assert_eq!(wheel.cancel(ids[n]), live, "cancel {n}");
                    assert!(!wheel.contains(ids[n]));
                }
                Op::CancelLive(n) if !model.live.is_empty() => {
                    let n = model.first_live(n, ids.len());
                    model.cancel(n as u64);
                    assert!(wheel.cancel(ids[n]), "cancel live {n}");
                }
                Op::Discard(n) if !ids.is_empty() => {
                    let n = n % ids.len();
                    model.cancel(n as u64);
                    wheel.discard(ids[n]);
                    assert!(!wheel.contains(ids[n]));
                }
                Op::DiscardLive(n) if !model.live.is_empty() => {
                    let n = model.first_live(n, ids.len());
                    model.cancel(n as u64);
                    wheel.discard(ids[n]);
                }
                Op::Cancel(_) | Op::CancelLive(_) | Op::Discard(_) | Op::DiscardLive(_) => {}
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
            assert!(!wheel.cancel(id));
        }
    }

    /// Long lists: few distinct deadlines, many cancels (compaction of
    /// lists spanning many blocks, tombstones met by cascades and firing).
    fn dense_ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            6 => prop_oneof![0i64..4, 60i64..64, 5000i64..5002].prop_map(Op::Insert),
            4 => any::<usize>().prop_map(Op::Cancel),
            2 => any::<usize>().prop_map(Op::Discard),
            1 => (0i64..6000).prop_map(Op::Advance),
        ];
        proptest::collection::vec(op, 0..1500)
    }

    /// Cancels of live timers outnumber arms and advances are rare, so the
    /// tombstones reach the live count and every list is compacted, often
    /// several times a run (lists of one block and of many, tombstones and
    /// live timers interleaved at random).
    fn cancel_heavy_ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            3 => prop_oneof![timestamp(), 0i64..200].prop_map(Op::Insert),
            3 => any::<usize>().prop_map(Op::CancelLive),
            2 => any::<usize>().prop_map(Op::DiscardLive),
            1 => any::<usize>().prop_map(Op::Cancel),
            1 => any::<usize>().prop_map(Op::Discard),
            1 => prop_oneof![
                20 => Just(Op::Insert(5)),
                1 => (0i64..3000).prop_map(Op::Advance),
            ],
        ];
        // Build up live timers first, so the compactions have some to keep.
        (0usize..400, proptest::collection::vec(op, 0..1500)).prop_map(|(warm, mut ops)| {
            let mut all: Vec<Op> = (0..warm).map(|i| Op::Insert((i as i64 * 7919) % 100_000 - 500)).collect();
            all.append(&mut ops);
            all
        })
    }

    proptest! {
        #[test]
        fn wheel_matches_heap(ops in ops()) {
            check_wheel(&ops);
        }

        #[test]
        fn wheel_matches_heap_cancel_heavy(ops in cancel_heavy_ops()) {
            check_wheel(&ops);
        }

        #[test]
        fn wheel_matches_heap_dense(ops in dense_ops()) {
            check_wheel(&ops);
        }

        /// The sort of a slot fired whole is std's stable sort by key, for
        /// few timers (insertion sort) and many (radix), with many ties.
        #[test]
        fn slot_sort_is_stable_sort(
            digits in 1usize..4,
            keys in proptest::collection::vec(prop_oneof![0u64..8, 0u64..1 << 18], 0..300),
            high in any::<u64>(),
        ) {
            let shared = high & !((1u64 << (BITS as usize * digits)) - 1);
            let mut timers: Vec<Slot<u32>> = keys
                .iter()
                .enumerate()
                .map(|(i, &k)| Slot { key: shared | (k & ((1 << (BITS as usize * digits)) - 1)), index: 0, value: i as u32 })
                .collect();
            let mut want = timers.clone();
            want.sort_by_key(|t| t.key);
            sort_by_low_digits(&mut timers, &mut Vec::new(), digits);
            let pairs = |ts: &[Slot<u32>]| ts.iter().map(|t| (t.key, t.value)).collect::<Vec<_>>();
            prop_assert_eq!(pairs(&timers), pairs(&want));
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
        let mut next = cep_testkit::XorShift64::default().into_fn();
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
        let mut rnd = cep_testkit::XorShift64::default().into_fn();
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
                    assert!(wheel.cancel(id));
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

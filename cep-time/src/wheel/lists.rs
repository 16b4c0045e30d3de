//! The block arena the wheel's lists are made of: timers ([`Slot`]) in
//! blocks of 16 chained from one arena shared by every slot's [`List`], and
//! appending to and draining a list.
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

use super::key::SLOTS;
use super::{PAST, TimerWheel};

/// A timer on a list: its key, its index (whose generation and bit in the
/// bitmap of live indexes say whether it is still live) and its value. The
/// list carries all that firing and cascading read, so neither touches
/// memory indexed by the timer: with a million timers that memory is a cache
/// miss per timer each time it is fired or re-filed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot<T> {
    pub(super) key: u64,
    pub(super) index: u32,
    /// Meaningful while the index is live (a fired or cancelled timer's
    /// value is left behind: `T: Copy`, so nothing needs dropping).
    pub(super) value: T,
}

/// Timers per block (four cache lines with `u32` values).
pub(super) const BLOCK: usize = 16;
/// The null block.
pub(super) const NIL: u32 = u32::MAX;

/// A run of a list's timers (the link to the next block of the list
/// is kept apart, in `TimerWheel::next_blocks`). A list is a chain of
/// blocks, all full but the last, drawn from one arena shared by all lists:
/// the wheel allocates only when it needs more blocks than ever before,
/// however the timers move between slots.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(super) struct Block<T>(pub(super) [Slot<T>; BLOCK]);

/// A wheel slot (or the past list): its timers in insertion order, some of
/// them tombstones.
#[derive(Clone, Copy, Debug)]
pub(super) struct List {
    pub(super) head: u32,
    pub(super) tail: u32,
    pub(super) len: u32,
}

pub(super) const EMPTY: List = List { head: NIL, tail: NIL, len: 0 };

/// A list detached from its slot, consumed block by block.
pub(super) struct Chain {
    pub(super) block: u32,
    pub(super) left: usize,
}

impl<T: Copy> TimerWheel<T> {
    /// Detaches list `list_index` from its slot, marking the slot empty;
    /// [`next_block`](Self::next_block) consumes it.
    pub(super) fn take_list(&mut self, list_index: usize) -> Chain {
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
    pub(super) fn next_block(&mut self, chain: &mut Chain) -> Option<([Slot<T>; BLOCK], usize)> {
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
    pub(super) fn push(&mut self, list_index: usize, slot: Slot<T>) {
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
    pub(super) fn new_tail_block(&mut self, list_index: usize, slot: Slot<T>) {
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

    /// Empties list `list_index`: frees its tombstones and hands each live
    /// timer to `each`, in list order. `each` may file timers on other lists
    /// (or on this one, which is detached first).
    #[inline]
    pub(super) fn drain_list(&mut self, list_index: usize, mut each: impl FnMut(&mut Self, Slot<T>)) {
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
}

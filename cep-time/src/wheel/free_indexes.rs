//! The wheel's free entry indexes, handed out smallest first.
//!
//! Timers are cancelled and fire in an order unrelated to where their entries
//! are, so a stack of freed indexes hands out entries all over the arena, and
//! with a million timers every arm writes to a line that is not in the cache
//! (and, as a core commits its stores in order, holds up the stores behind
//! it). Handing out the smallest free index instead makes consecutive arms
//! write to neighbouring entries and keeps the live entries packed at the low
//! end of the arena.
//!
//! The set is a hierarchy of bitmaps: level 0 has a bit per index (set when
//! free), each level above a bit per word of the level below (set when that
//! word is not zero), up to a level of one word. The smallest member is found
//! by `trailing_zeros` from the top down, and insert and remove touch one word
//! per level at most (usually one word in all), so both are O(levels): five
//! levels cover 2³⁰ indexes.

/// A set of `u32` indexes below a capacity that only grows (see the
/// [module](self) docs).
#[derive(Debug)]
pub(super) struct FreeIndexes {
    /// `levels[0]` has a bit per index; `levels[k + 1]` a bit per word of
    /// `levels[k]`; the last level is one word.
    levels: Vec<Vec<u64>>,
    len: usize,
}

impl FreeIndexes {
    /// An empty set with capacity 0.
    pub(super) fn new() -> FreeIndexes {
        FreeIndexes { levels: vec![vec![0]], len: 0 }
    }

    /// The number of members.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Makes room for index `index` (and all below it), as a non-member.
    pub(super) fn reserve(&mut self, index: u32) {
        let words = index as usize / 64 + 1;
        if self.levels[0].len() < words {
            self.levels[0].resize(words, 0);
        }
        // Each level above needs a bit per word of the one below; a level of
        // more than one word gets a new level above it, whose bits say which
        // of its words are not zero.
        let mut level = 0;
        while self.levels[level].len() > 1 {
            let needed = self.levels[level].len().div_ceil(64);
            if level + 1 == self.levels.len() {
                let mut top = vec![0u64; needed];
                for (at, &word) in self.levels[level].iter().enumerate() {
                    top[at / 64] |= u64::from(word != 0) << (at % 64);
                }
                self.levels.push(top);
            } else {
                self.levels[level + 1].resize(needed, 0);
            }
            level += 1;
        }
    }

    /// Adds `index` (below the capacity, not a member). It sets its bit on
    /// every level, whether or not the word below was empty before: a test
    /// would be a branch that firing and cascading, freeing tombstones
    /// scattered at random, mispredict half the time.
    #[inline]
    pub(super) fn insert(&mut self, index: u32) {
        self.len += 1;
        let mut at = index as usize;
        for level in &mut self.levels {
            level[at / 64] |= 1 << (at % 64);
            at /= 64;
        }
    }

    /// Makes the set exactly the indexes below `capacity` whose bit in
    /// `taken` (bit `i % 64` of word `i / 64`) is clear, as compaction
    /// leaves them: with no tombstone on a list, an index is free when it is
    /// not live. One pass over the bitmap, then the levels above rebuilt by
    /// scanning.
    pub(super) fn assign_clear_bits(&mut self, taken: &[u64], capacity: usize) {
        let bottom = &mut self.levels[0];
        debug_assert!(bottom.len() * 64 >= capacity, "the capacity is reserved");
        let mut len = 0;
        for (at, word) in bottom.iter_mut().enumerate() {
            let valid = capacity.saturating_sub(at * 64).min(64);
            let mask = if valid == 64 { u64::MAX } else { (1u64 << valid) - 1 };
            *word = !taken.get(at).copied().unwrap_or(0) & mask;
            len += word.count_ones() as usize;
        }
        self.len = len;
        self.rebuild_above();
    }

    /// Sets every level above the lowest from the one below it (a bit per
    /// word that is not zero), scanning a word per 64 words below.
    fn rebuild_above(&mut self) {
        for level in 1..self.levels.len() {
            let (below, above) = self.levels.split_at_mut(level);
            for (word, words_below) in above[0].iter_mut().zip(below[level - 1].chunks(64)) {
                *word = words_below.iter().enumerate().fold(0, |bits, (at, &w)| bits | u64::from(w != 0) << at);
            }
        }
    }

    /// Removes and returns the smallest member.
    #[inline]
    pub(super) fn pop_first(&mut self) -> Option<u32> {
        let top = self.levels.len() - 1;
        if self.levels[top][0] == 0 {
            return None;
        }
        let mut at = 0usize;
        for level in self.levels.iter().rev() {
            at = at * 64 + level[at].trailing_zeros() as usize;
        }
        self.len -= 1;
        let index = at as u32;
        for level in &mut self.levels {
            let word = &mut level[at / 64];
            *word &= !(1 << (at % 64));
            if *word != 0 {
                break;
            }
            at /= 64;
        }
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Against a `BTreeSet`, across capacities that add levels (64,
        /// 4096 and 262144 indexes): growing, inserting free indexes and
        /// popping the smallest.
        #[test]
        fn matches_an_ordered_set(ops in proptest::collection::vec((0u8..4, any::<u32>()), 1..400)) {
            let mut set = FreeIndexes::new();
            let mut model = BTreeSet::new();
            let mut capacity = 0u32;
            for (op, n) in ops {
                match op {
                    0 => {
                        // Grow by up to a few thousand, sometimes by a lot.
                        let step = if n % 7 == 0 { n % 300_000 } else { n % 3000 };
                        capacity = capacity.saturating_add(step).min(1 << 20);
                        if capacity > 0 {
                            set.reserve(capacity - 1);
                        }
                    }
                    1 if capacity > 0 => {
                        // Insert a non-member below the capacity.
                        let index = n % capacity;
                        if model.insert(index) {
                            set.insert(index);
                        }
                    }
                    2 if capacity > 0 && capacity <= 70_000 => {
                        // The whole set from a bitmap of taken indexes:
                        // dense, sparse, or all taken or free. (Up to three
                        // levels: rebuilding the model is slow in a debug
                        // build; the unit test below takes four.)
                        let words = (capacity as usize).div_ceil(64);
                        let mut rng = cep_testkit::XorShift64::new(u64::from(n) | 1);
                        let taken: Vec<u64> = (0..words)
                            .map(|_| {
                                let state = rng.next_u64();
                                match n % 4 {
                                    0 => state,
                                    1 => state & state >> 1 & state >> 2,
                                    2 => u64::MAX,
                                    _ => 0,
                                }
                            })
                            .collect();
                        set.assign_clear_bits(&taken, capacity as usize);
                        model = (0..capacity).filter(|&i| taken[i as usize / 64] >> (i % 64) & 1 == 0).collect();
                    }
                    _ => prop_assert_eq!(set.pop_first(), model.pop_first()),
                }
                prop_assert_eq!(set.len(), model.len());
            }
            while let Some(index) = model.pop_first() {
                prop_assert_eq!(set.pop_first(), Some(index));
            }
            prop_assert_eq!(set.pop_first(), None);
        }
    }

    /// The set rebuilt from a bitmap (the levels above by scanning), with
    /// a capacity that ends inside a word: the bits past it are not
    /// members, whatever the bitmap says.
    #[test]
    fn the_clear_bits_of_a_bitmap_come_back_in_order() {
        let mut set = FreeIndexes::new();
        let n = (1u32 << 20) - 3;
        set.reserve(n - 1);
        set.insert(6); // replaced, not added to
        let taken = vec![0x5555_5555_5555_5555u64; (n as usize).div_ceil(64)]; // the even indexes
        set.assign_clear_bits(&taken, n as usize);
        assert_eq!(set.len(), n as usize / 2);
        for index in (1..n).step_by(2) {
            assert_eq!(set.pop_first(), Some(index));
        }
        assert_eq!(set.pop_first(), None);
        set.assign_clear_bits(&[], n as usize); // nothing taken: every index
        assert_eq!((set.len(), set.pop_first()), (n as usize, Some(0)));
    }

    #[test]
    fn a_million_indexes_come_back_in_order() {
        let mut set = FreeIndexes::new();
        let n = 1u32 << 20;
        set.reserve(n - 1);
        assert_eq!(set.levels.len(), 4); // 16384, 256, 4 and 1 words
        // Insert in a scattered order (7 is coprime with 2^20).
        for i in 0..n {
            set.insert(i.wrapping_mul(7) % n);
        }
        assert_eq!(set.len(), n as usize);
        for i in 0..n {
            assert_eq!(set.pop_first(), Some(i));
        }
        assert_eq!(set.pop_first(), None);
    }
}

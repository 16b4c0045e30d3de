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
    /// would be a branch that compaction, freeing tombstones scattered at
    /// random, mispredicts half the time.
    #[inline]
    pub(super) fn insert(&mut self, index: u32) {
        self.len += 1;
        let mut at = index as usize;
        for level in &mut self.levels {
            level[at / 64] |= 1 << (at % 64);
            at /= 64;
        }
    }

    /// Adds `indexes` (distinct, below the capacity, not members), as
    /// compaction frees many at once. When they are many for the capacity
    /// (at least one per 16 indexes), it sets their bits on the lowest level
    /// only and rebuilds the levels above by scanning, a word per 64 words
    /// below: setting the bits above one index at a time would update the few
    /// words of the upper levels again and again, each update waiting for the
    /// one before.
    pub(super) fn insert_many(&mut self, indexes: &[u32]) {
        if indexes.len() * 16 < self.levels[0].len() * 64 {
            indexes.iter().for_each(|&index| self.insert(index));
            return;
        }
        self.len += indexes.len();
        let bottom = &mut self.levels[0];
        for &index in indexes {
            bottom[index as usize / 64] |= 1 << (index % 64);
        }
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
                    2 if capacity > 0 => {
                        // Insert many non-members at once: a few, or a
                        // stride's worth of the whole capacity.
                        let stride = if n % 3 == 0 { 1 + n % 5 } else { 1 + n % 997 };
                        let many: Vec<u32> = (n % capacity..capacity)
                            .step_by(stride as usize)
                            .take(if n % 5 == 0 { 3 } else { 2_000 })
                            .filter(|&index| model.insert(index))
                            .collect();
                        set.insert_many(&many);
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

    /// Many at once (the levels above rebuilt by scanning) beside members
    /// inserted one by one.
    #[test]
    fn many_at_once_come_back_in_order() {
        let mut set = FreeIndexes::new();
        let n = 1u32 << 20;
        set.reserve(n - 1);
        set.insert(6);
        set.insert(n - 2);
        let odd: Vec<u32> = (0..n / 2).map(|i| (2 * i + 1).wrapping_mul(7) % n).collect();
        set.insert_many(&odd);
        set.insert_many(&[4, 100_000]); // few: one by one
        assert_eq!(set.len(), n as usize / 2 + 4);
        let expected = [1, 3, 4, 5, 6, 7].into_iter().chain((9..n).step_by(2).flat_map(|i| {
            let even = [100_000, n - 2].contains(&(i - 1));
            even.then_some(i - 1).into_iter().chain([i])
        }));
        for index in expected {
            assert_eq!(set.pop_first(), Some(index));
        }
        assert_eq!(set.pop_first(), None);
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

//! [`Bits`]: a bitset with summary levels, so that finding the next set bit
//! costs O(log₆₄ n) however many clear bits lie between.

/// A fixed-length bitset. Level 0 holds the bits; bit `i` of level `k + 1`
/// says whether word `i` of level `k` is non-zero.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bits {
    levels: Vec<Vec<u64>>,
}

impl Bits {
    /// `n` clear bits.
    pub(crate) fn new(n: usize) -> Bits {
        let mut levels = Vec::new();
        let mut len = n.max(1);
        loop {
            let words = len.div_ceil(64);
            levels.push(vec![0u64; words]);
            if words == 1 {
                break;
            }
            len = words;
        }
        Bits { levels }
    }

    pub(crate) fn set(&mut self, mut i: usize) {
        for level in &mut self.levels {
            let w = &mut level[i / 64];
            let was_zero = *w == 0;
            *w |= 1 << (i % 64);
            if !was_zero {
                return;
            }
            i /= 64;
        }
    }

    pub(crate) fn clear(&mut self, mut i: usize) {
        for level in &mut self.levels {
            let w = &mut level[i / 64];
            *w &= !(1 << (i % 64));
            if *w != 0 {
                return;
            }
            i /= 64;
        }
    }

    #[cfg(test)]
    pub(crate) fn get(&self, i: usize) -> bool {
        self.levels[0][i / 64] >> (i % 64) & 1 == 1
    }

    /// The first set bit at or after `from`.
    #[inline]
    pub(crate) fn next_from(&self, from: usize) -> Option<usize> {
        let bottom = &self.levels[0];
        let (w, b) = (from / 64, from % 64);
        let word = *bottom.get(w)? & (!0u64 << b);
        if word != 0 {
            return Some(w * 64 + word.trailing_zeros() as usize);
        }
        // Climb until a later non-zero word shows up, then descend.
        let mut k = 1;
        let mut at = w + 1; // the next candidate word of level k - 1
        let found = loop {
            let level = self.levels.get(k)?;
            let (w, b) = (at / 64, at % 64);
            let word = *level.get(w)? & (!0u64 << b);
            if word != 0 {
                break w * 64 + word.trailing_zeros() as usize;
            }
            k += 1;
            at = w + 1;
        };
        let mut i = found; // a non-zero word of level k - 1
        for level in self.levels[..k].iter().rev() {
            i = i * 64 + level[i].trailing_zeros() as usize;
        }
        Some(i)
    }

    /// The last set bit before `end`.
    #[inline]
    pub(crate) fn prev_before(&self, end: usize) -> Option<usize> {
        let last = end.checked_sub(1)?;
        let (w, b) = (last / 64, last % 64);
        let word = self.levels[0][w] & (!0u64 >> (63 - b));
        if word != 0 {
            return Some(w * 64 + 63 - word.leading_zeros() as usize);
        }
        // Climb until an earlier non-zero word shows up, then descend.
        let mut k = 1;
        let mut before = w; // candidate words of level k - 1 lie before this
        let found = loop {
            let last = before.checked_sub(1)?;
            let level = self.levels.get(k)?;
            let (w, b) = (last / 64, last % 64);
            let word = level[w] & (!0u64 >> (63 - b));
            if word != 0 {
                break w * 64 + 63 - word.leading_zeros() as usize;
            }
            k += 1;
            before = w;
        };
        let mut i = found;
        for level in self.levels[..k].iter().rev() {
            i = i * 64 + 63 - level[i].leading_zeros() as usize;
        }
        Some(i)
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.levels.iter().map(|l| l.capacity() * 8).sum::<usize>() + self.levels.capacity() * 24
    }
}

#[cfg(test)]
mod tests {
    use super::Bits;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn next_and_prev_agree_with_a_scan(n in 1usize..20_000, ops in prop::collection::vec((any::<bool>(), any::<usize>()), 0..200), probes in prop::collection::vec(any::<usize>(), 1..50)) {
            let mut bits = Bits::new(n);
            let mut model = vec![false; n];
            for (set, i) in ops {
                let i = i % n;
                if set { bits.set(i) } else { bits.clear(i) }
                model[i] = set;
            }
            for (i, &m) in model.iter().enumerate().take(300) {
                prop_assert_eq!(bits.get(i), m);
            }
            for p in probes {
                let p = p % (n + 1);
                let next = (p..n).find(|&i| model[i]);
                prop_assert_eq!(bits.next_from(p), next);
                let prev = (0..p).rev().find(|&i| model[i]);
                prop_assert_eq!(bits.prev_before(p), prev);
            }
        }
    }
}

//! Bitsets with summary levels, stored in a caller's `u64` slice, so that
//! finding the next set bit costs O(log₆₄ n) however many clear bits lie
//! between.
//!
//! The words of `n` bits: level 0 (`⌈n/64⌉` words, at least 1) holds the
//! bits; bit `i` of level `k + 1` says whether word `i` of level `k` is
//! non-zero; levels follow each other until one has a single word.

/// Levels are at most this many (64⁸ bits is far beyond any `u32` count).
const MAX_LEVELS: usize = 8;

/// Words of each level for `n` bits, and how many levels.
#[inline]
fn layout(n: usize) -> ([usize; MAX_LEVELS], usize) {
    let mut sizes = [0; MAX_LEVELS];
    let (mut len, mut k) = (n.max(1), 0);
    loop {
        let words = len.div_ceil(64);
        sizes[k] = words;
        k += 1;
        if words == 1 {
            return (sizes, k);
        }
        len = words;
    }
}

/// Words needed for `n` bits.
pub(crate) fn words(n: usize) -> usize {
    let (sizes, k) = layout(n);
    sizes[..k].iter().sum()
}

/// Sets bit `i` of the `n`-bit set in `w`.
pub(crate) fn set(w: &mut [u64], n: usize, mut i: usize) {
    let (sizes, levels) = layout(n);
    let mut base = 0;
    for &size in &sizes[..levels] {
        let word = &mut w[base + i / 64];
        let was_zero = *word == 0;
        *word |= 1 << (i % 64);
        if !was_zero {
            return;
        }
        base += size;
        i /= 64;
    }
}

/// Clears bit `i` of the `n`-bit set in `w`.
pub(crate) fn clear(w: &mut [u64], n: usize, mut i: usize) {
    let (sizes, levels) = layout(n);
    let mut base = 0;
    for &size in &sizes[..levels] {
        let word = &mut w[base + i / 64];
        *word &= !(1 << (i % 64));
        if *word != 0 {
            return;
        }
        base += size;
        i /= 64;
    }
}

#[cfg(test)]
pub(crate) fn get(w: &[u64], i: usize) -> bool {
    w[i / 64] >> (i % 64) & 1 == 1
}

/// The first set bit at or after `from` (bits at or beyond `n` are clear).
#[inline]
pub(crate) fn next_from(w: &[u64], n: usize, from: usize) -> Option<usize> {
    if from >= n {
        return None;
    }
    let word = w[from / 64] & (!0u64 << (from % 64));
    if word != 0 {
        return Some(from / 64 * 64 + word.trailing_zeros() as usize);
    }
    // Climb until a later non-zero word shows up, then descend.
    let (sizes, levels) = layout(n);
    let mut bases = [0; MAX_LEVELS];
    let mut k = 1;
    let mut at = from / 64 + 1; // the next candidate word of level k - 1
    let found = loop {
        if k == levels {
            return None;
        }
        bases[k] = bases[k - 1] + sizes[k - 1];
        let (i, b) = (at / 64, at % 64);
        if i >= sizes[k] {
            return None;
        }
        let word = w[bases[k] + i] & (!0u64 << b);
        if word != 0 {
            break i * 64 + word.trailing_zeros() as usize;
        }
        k += 1;
        at = i + 1;
    };
    let mut i = found; // a non-zero word of level k - 1
    for level in (0..k).rev() {
        i = i * 64 + w[bases[level] + i].trailing_zeros() as usize;
    }
    Some(i)
}

/// The last set bit before `end`.
#[inline]
pub(crate) fn prev_before(w: &[u64], n: usize, end: usize) -> Option<usize> {
    let last = end.min(n).checked_sub(1)?;
    let word = w[last / 64] & (!0u64 >> (63 - last % 64));
    if word != 0 {
        return Some(last / 64 * 64 + 63 - word.leading_zeros() as usize);
    }
    let (sizes, levels) = layout(n);
    let mut bases = [0; MAX_LEVELS];
    let mut k = 1;
    let mut before = last / 64; // candidate words of level k - 1 lie before this
    let found = loop {
        let last = before.checked_sub(1)?;
        if k == levels {
            return None;
        }
        bases[k] = bases[k - 1] + sizes[k - 1];
        let (i, b) = (last / 64, last % 64);
        let word = w[bases[k] + i] & (!0u64 >> (63 - b));
        if word != 0 {
            break i * 64 + 63 - word.leading_zeros() as usize;
        }
        k += 1;
        before = i;
    };
    let mut i = found;
    for level in (0..k).rev() {
        i = i * 64 + 63 - w[bases[level] + i].leading_zeros() as usize;
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn next_and_prev_agree_with_a_scan(n in 1usize..20_000, ops in prop::collection::vec((any::<bool>(), any::<usize>()), 0..200), probes in prop::collection::vec(any::<usize>(), 1..50)) {
            let mut w = vec![0u64; super::words(n)];
            let mut model = vec![false; n];
            for (on, i) in ops {
                let i = i % n;
                if on { super::set(&mut w, n, i) } else { super::clear(&mut w, n, i) }
                model[i] = on;
            }
            for (i, &m) in model.iter().enumerate().take(300) {
                prop_assert_eq!(super::get(&w, i), m);
            }
            for p in probes {
                let p = p % (n + 1);
                let next = (p..n).find(|&i| model[i]);
                prop_assert_eq!(super::next_from(&w, n, p), next);
                let prev = (0..p).rev().find(|&i| model[i]);
                prop_assert_eq!(super::prev_before(&w, n, p), prev);
            }
        }
    }
}

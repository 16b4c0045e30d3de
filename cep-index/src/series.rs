//! [`Series`]: the alerts of one key and field as sorted edge points, with
//! live bits marking the edges that can change an alert's state now, and the
//! last value with the nearest live edges around it.

use crate::bits;
use crate::order::order_key;

/// Roles of an edge (the low two bits of a reference): fire edges are live
/// while their alert is armed, re-arm edges while it is disarmed.
pub(crate) const FIRE_ROLES: [u32; 2] = [0, 1];
pub(crate) const REARM_ROLES: [u32; 2] = [2, 3];

/// One key's field: its alerts' edges and the state every value touches,
/// in one cache line plus one block of words.
///
/// A value reads the line first: the last value and the nearest live edges
/// around it. One that crosses no live edge (most of them, when values move
/// little) touches nothing else. The block holds the edge keys (ascending,
/// ties by reference), then the references (`slot << 2 | role`, two per
/// word), then the live bits.
#[derive(Debug)]
#[repr(align(64))]
pub(crate) struct Series {
    /// The last value (NaN before the first).
    pub(crate) last: f64,
    /// Key of the largest live edge `<= last` (0 if none: no order key is 0).
    lo_live: u64,
    /// Key of the smallest live edge `>= last` (`u64::MAX` if none).
    hi_live: u64,
    /// A hint: the number of edges below the last value when last computed.
    cursor: u32,
    /// Number of edges.
    len: u32,
    data: Box<[u64]>,
}

impl Default for Series {
    fn default() -> Series {
        Series { last: f64::NAN, lo_live: 0, hi_live: u64::MAX, cursor: 0, len: 0, data: Box::new([]) }
    }
}

impl Series {
    /// Records value `v` (order key `kv`). Returns `None` when no live edge
    /// lies between the last value and `v` (nothing can change), else the
    /// previous value (NaN for the first).
    #[inline(always)]
    pub(crate) fn step_to(&mut self, v: f64, kv: u64) -> Option<f64> {
        let prev = std::mem::replace(&mut self.last, v);
        if prev.is_nan() {
            return Some(prev);
        }
        let kp = order_key(prev);
        let quiet = if kv >= kp { self.hi_live > kv } else { self.lo_live < kv };
        if quiet { None } else { Some(prev) }
    }

    /// Number of edges.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// The edge keys.
    #[inline]
    pub(crate) fn keys(&self) -> &[u64] {
        &self.data[..self.len()]
    }

    /// The reference of edge `i`.
    #[inline]
    pub(crate) fn reference(&self, i: usize) -> u32 {
        (self.data[self.len() + i / 2] >> (32 * (i % 2))) as u32
    }

    fn bits_at(&self) -> usize {
        self.len() + self.len().div_ceil(2)
    }

    /// The first live edge in `from..end`.
    #[inline]
    pub(crate) fn next_live(&self, from: usize, end: usize) -> Option<usize> {
        bits::next_from(&self.data[self.bits_at()..], self.len(), from).filter(|&i| i < end)
    }

    /// Marks edge `i` live or not.
    #[inline]
    pub(crate) fn set_live(&mut self, i: usize, live: bool) {
        let (at, n) = (self.bits_at(), self.len());
        let w = &mut self.data[at..];
        if live { bits::set(w, n, i) } else { bits::clear(w, n, i) }
    }

    /// Appends the edges, `(key, reference)`, to `out`.
    pub(crate) fn edges_into(&self, out: &mut Vec<(u64, u32)>) {
        out.extend(self.keys().iter().enumerate().map(|(i, &k)| (k, self.reference(i))));
    }

    /// Replaces the edges with `edges` (sorted here), taking each edge's
    /// liveness from `is_live(reference)`, and settles.
    pub(crate) fn rebuild(&mut self, edges: &mut [(u64, u32)], is_live: impl Fn(u32) -> bool) {
        edges.sort_unstable();
        let n = edges.len();
        self.len = u32::try_from(n).expect("fewer than 2^32 edges in a series");
        let mut data = Vec::with_capacity(n + n.div_ceil(2) + bits::words(n));
        data.extend(edges.iter().map(|e| e.0));
        data.extend(edges.chunks(2).map(|p| u64::from(p[0].1) | p.get(1).map_or(0, |q| u64::from(q.1) << 32)));
        data.resize(data.capacity(), 0);
        self.data = data.into_boxed_slice();
        for (i, e) in edges.iter().enumerate() {
            if is_live(e.1) {
                self.set_live(i, true);
            }
        }
        self.settle();
    }

    /// The edges in the closed interval between `prev` and `v` (none when
    /// `prev` is NaN), as an index range, and whether the value fell.
    #[inline]
    pub(crate) fn range(&self, prev: f64, kv: u64) -> (usize, usize, bool) {
        if prev.is_nan() {
            return (0, 0, false);
        }
        let kp = order_key(prev);
        let (c, keys) = (self.cursor as usize, self.keys());
        if kv >= kp {
            (partition_near(keys, c, |x| x < kp), partition_near(keys, c, |x| x <= kv), false)
        } else {
            (partition_near(keys, c, |x| x < kv), partition_near(keys, c, |x| x <= kp), true)
        }
    }

    /// Points the cursor and the nearest live edges at the last value again
    /// (after the live bits changed).
    pub(crate) fn settle(&mut self) {
        if self.last.is_nan() {
            (self.lo_live, self.hi_live, self.cursor) = (0, u64::MAX, 0);
            return;
        }
        let k = order_key(self.last);
        let keys = self.keys();
        let below = partition_near(keys, self.cursor as usize, |x| x < k);
        let upto = partition_near(keys, below, |x| x <= k);
        let w = &self.data[self.bits_at()..];
        let n = self.len();
        let hi = bits::next_from(w, n, below).map_or(u64::MAX, |i| keys[i]);
        let lo = bits::prev_before(w, n, upto).map_or(0, |i| keys[i]);
        (self.lo_live, self.hi_live, self.cursor) = (lo, hi, below as u32);
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.data.len() * 8
    }
}

/// The number of leading `keys` satisfying `pred` (true, then false), found
/// by galloping from `hint`: O(log d) for an answer d places away, so a
/// value that moves little costs a comparison or two.
#[inline]
pub(crate) fn partition_near(keys: &[u64], hint: usize, pred: impl Fn(u64) -> bool) -> usize {
    let n = keys.len();
    let hint = hint.min(n);
    let (lo, hi) = if hint < n && pred(keys[hint]) {
        let (mut lo, mut step) = (hint + 1, 1);
        let hi = loop {
            let probe = lo + step - 1;
            if probe >= n {
                break n;
            }
            if !pred(keys[probe]) {
                break probe;
            }
            lo = probe + 1;
            step *= 2;
        };
        (lo, hi)
    } else {
        let (mut hi, mut step) = (hint, 1);
        let lo = loop {
            if hi < step {
                break 0;
            }
            let probe = hi - step;
            if pred(keys[probe]) {
                break probe + 1;
            }
            hi = probe;
            step *= 2;
        };
        (lo, hi)
    };
    lo + keys[lo..hi].partition_point(|&x| pred(x))
}

#[cfg(test)]
mod tests {
    use super::partition_near;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn gallop_equals_binary_search(mut keys in prop::collection::vec(0u64..50, 0..80), hint in 0usize..100, x in 0u64..55) {
            keys.sort_unstable();
            prop_assert_eq!(partition_near(&keys, hint, |k| k < x), keys.partition_point(|&k| k < x));
            prop_assert_eq!(partition_near(&keys, hint, |k| k <= x), keys.partition_point(|&k| k <= x));
        }
    }
}

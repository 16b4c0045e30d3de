//! A series: the alerts of one key and field as sorted edge points ([`Edges`])
//! with live bits marking the edges that can change an alert's state now, and
//! a small [`Head`] with the last value and the nearest live edges around it.

use crate::bits::Bits;
use crate::order::order_key;

/// Roles of an edge (the low two bits of a reference): fire edges are live
/// while their alert is armed, re-arm edges while it is disarmed.
pub(crate) const FIRE_ROLES: [u32; 2] = [0, 1];
pub(crate) const REARM_ROLES: [u32; 2] = [2, 3];

/// The part of a series every value touches: the last value and the
/// nearest live edges around it. A value that crosses no live edge (most of
/// them, when values move little) reads and writes this and nothing else.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
pub(crate) struct Head {
    /// The last value (NaN before the first).
    pub(crate) last: f64,
    /// Key of the largest live edge `<= last` (0 if none: no order key is 0).
    lo_live: u64,
    /// Key of the smallest live edge `>= last` (`u64::MAX` if none).
    hi_live: u64,
    /// A hint: the number of edges below the last value when last computed.
    cursor: u32,
}

impl Default for Head {
    fn default() -> Head {
        Head { last: f64::NAN, lo_live: 0, hi_live: u64::MAX, cursor: 0 }
    }
}

impl Head {
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
}

/// The edges of one key's field.
#[derive(Debug)]
pub(crate) struct Edges {
    /// Edge points (order keys), ascending; ties by reference.
    pub(crate) keys: Vec<u64>,
    /// `slot << 2 | role` per edge.
    pub(crate) refs: Vec<u32>,
    /// Which edges are live.
    pub(crate) live: Bits,
}

impl Default for Edges {
    fn default() -> Edges {
        Edges { keys: Vec::new(), refs: Vec::new(), live: Bits::new(0) }
    }
}

impl Edges {
    /// Re-sorts the edges after edges were pushed or removed, taking each
    /// edge's liveness from `is_live(reference)`, and refreshes `head`.
    pub(crate) fn rebuild(&mut self, head: &mut Head, is_live: impl Fn(u32) -> bool) {
        let mut pairs: Vec<(u64, u32)> = self.keys.iter().copied().zip(self.refs.iter().copied()).collect();
        pairs.sort_unstable();
        self.keys.clear();
        self.refs.clear();
        self.keys.extend(pairs.iter().map(|p| p.0));
        self.refs.extend(pairs.iter().map(|p| p.1));
        self.keys.shrink_to_fit();
        self.refs.shrink_to_fit();
        self.live = Bits::new(self.keys.len());
        for (i, &r) in self.refs.iter().enumerate() {
            if is_live(r) {
                self.live.set(i);
            }
        }
        self.settle(head);
    }

    /// The edges in the closed interval between `prev` and `v` (none when
    /// `prev` is NaN), as an index range, and whether the value fell.
    #[inline]
    pub(crate) fn range(&self, head: &Head, prev: f64, kv: u64) -> (usize, usize, bool) {
        if prev.is_nan() {
            return (0, 0, false);
        }
        let kp = order_key(prev);
        let (c, keys) = (head.cursor as usize, &self.keys[..]);
        if kv >= kp {
            (partition_near(keys, c, |x| x < kp), partition_near(keys, c, |x| x <= kv), false)
        } else {
            (partition_near(keys, c, |x| x < kv), partition_near(keys, c, |x| x <= kp), true)
        }
    }

    /// Points `head` at its last value again: the cursor, and the nearest
    /// live edges (after the live bits changed).
    pub(crate) fn settle(&self, head: &mut Head) {
        if head.last.is_nan() {
            *head = Head::default();
            return;
        }
        let k = order_key(head.last);
        let keys = &self.keys[..];
        let below = partition_near(keys, head.cursor as usize, |x| x < k);
        let upto = partition_near(keys, below, |x| x <= k);
        head.cursor = below as u32;
        head.hi_live = self.live.next_from(below).map_or(u64::MAX, |i| keys[i]);
        head.lo_live = self.live.prev_before(upto).map_or(0, |i| keys[i]);
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.keys.capacity() * 8 + self.refs.capacity() * 4 + self.live.heap_bytes()
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

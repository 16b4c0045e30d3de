//! Partition keys: [`KeyIndex`], keys to small integers, the one lookup
//! every event of a keyed engine pays.
//!
//! Keys are mostly small non-negative integers or strings (interned, so a
//! [`Sym`](crate::Sym) is itself a small integer): those are looked up in dense
//! vectors, without hashing. Other keys (negative or large ints,
//! floats, bools) go through a hash map.

use ahash::AHashMap;

use crate::Value;

/// Integer keys in `0..DENSE_INTS` may be looked up in a dense vector.
const DENSE_INTS: i64 = 1 << 20;

/// Marks an empty place in a dense vector.
const VACANT: u32 = u32::MAX;

/// A dense vector may always grow to this many places (16 KiB)…
/// (16 in unit tests, so that their few keys spill to the map and move
/// back.)
const MIN_DENSE: usize = if cfg!(test) { 16 } else { 1 << 12 };
/// …and beyond it to at most this many places per key of its kind, so that
/// its memory follows the number of keys, not their magnitude.
const PLACES_PER_KEY: usize = 4;

/// A map from key [`Value`]s to `u32` handles (arena indices), with dense
/// fast paths for small ints, strings and NULL.
///
/// Small non-negative ints and strings (by their [`Sym`](crate::Sym)'s
/// number) are looked up in dense vectors, as long as those stay dense: a
/// vector grows to cover a key only while it then has at most four places
/// per key of its kind (or 4,096 places in all); a key beyond that goes to
/// the hash map, and moves into the vector when enough keys have come for
/// the vector to reach it. So memory is O(keys) whatever the keys' values:
/// an engine per query, each with a few keys near 1,000,000 (or strings
/// interned after a million others), holds a few entries each, not 4 MB.
///
/// # Examples
/// ```
/// use cep_core::{keys::KeyIndex, Sym, Value};
/// let mut idx = KeyIndex::default();
/// idx.insert(Value::Int(7), 0);
/// idx.insert(Value::Str(Sym::new("AAPL")), 1);
/// idx.insert(Value::Int(-3), 2);
/// idx.insert(Value::Int(999_999), 3); // far beyond the 2 small ints: hashed
/// assert_eq!(idx.get(&Value::Int(7)), Some(0));
/// assert_eq!(idx.get(&Value::Str(Sym::new("AAPL"))), Some(1));
/// assert_eq!(idx.get(&Value::Int(-3)), Some(2));
/// assert_eq!(idx.get(&Value::Int(999_999)), Some(3));
/// assert_eq!(idx.get(&Value::Int(8)), None);
/// assert!(idx.heap_bytes() < 20_000);
/// ```
#[derive(Clone, Debug, Default)]
pub struct KeyIndex {
    ints: Dense,
    strs: Dense,
    null: Option<u32>,
    map: AHashMap<Value, u32>,
}

/// The dense vector of one kind of key (small ints, or strings by symbol
/// number). A key below `places.len()` is never in the map.
#[derive(Clone, Debug, Default)]
struct Dense {
    places: Vec<u32>,
    /// Keys of this kind, in `places` or in the map.
    keys: usize,
    /// Keys of this kind in the map (beyond `places`).
    spilled: usize,
}

impl Dense {
    #[inline(always)]
    fn get(&self, i: usize) -> Option<Option<u32>> {
        self.places.get(i).map(|&p| (p != VACANT).then_some(p))
    }

    /// Whether the vector may grow to cover place `i`, with one more key.
    fn may_cover(&self, i: usize) -> bool {
        let want = (i + 1).next_power_of_two();
        want <= MIN_DENSE.max(PLACES_PER_KEY * (self.keys + 1))
    }

    /// Grows the vector of keys of kind `kind` to cover place `i`, moving
    /// into it the keys of its kind that the map held below the new end.
    fn cover(&mut self, kind: DenseKind, i: usize, map: &mut AHashMap<Value, u32>) {
        let len = (i + 1).next_power_of_two().max(self.places.len());
        self.places.resize(len, VACANT);
        if self.spilled > 0 {
            let (places, spilled) = (&mut self.places, &mut self.spilled);
            map.retain(|key, &mut handle| match dense_place(key) {
                Some((k, j)) if k == kind && j < len => {
                    places[j] = handle;
                    *spilled -= 1;
                    false
                }
                _ => true,
            });
        }
    }
}

/// Which dense vector a key may live in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DenseKind {
    Ints,
    Strs,
}

/// The dense vector and place of a small non-negative int or a string key
/// (`None` for NULL and the keys that are always hashed).
fn dense_place(key: &Value) -> Option<(DenseKind, usize)> {
    match *key {
        Value::Int(i) if (0..DENSE_INTS).contains(&i) => Some((DenseKind::Ints, i as usize)),
        Value::Str(s) => Some((DenseKind::Strs, s.index() as usize)),
        _ => None,
    }
}

impl KeyIndex {
    /// The handle of `key`, if it has one.
    #[inline(always)]
    pub fn get(&self, key: &Value) -> Option<u32> {
        let dense = match *key {
            Value::Int(i) if (0..DENSE_INTS).contains(&i) => self.ints.get(i as usize),
            Value::Str(s) => self.strs.get(s.index() as usize),
            Value::Null => return self.null,
            _ => None,
        };
        match dense {
            Some(handle) => handle,
            None => self.map.get(key).copied(),
        }
    }

    /// Gives `key` the handle `handle` (`u32::MAX` is reserved); a key
    /// given a handle before gets the new one.
    pub fn insert(&mut self, key: Value, handle: u32) {
        debug_assert_ne!(handle, VACANT, "u32::MAX is not a handle");
        if matches!(key, Value::Null) {
            self.null = Some(handle);
            return;
        }
        let Some((kind, i)) = dense_place(&key) else {
            self.map.insert(key, handle);
            return;
        };
        let (dense, map) = self.dense_and_map(kind);
        if i >= dense.places.len() {
            if map.contains_key(&key) {
                map.insert(key, handle);
                return;
            }
            if !dense.may_cover(i) {
                dense.keys += 1;
                dense.spilled += 1;
                map.insert(key, handle);
                return;
            }
            dense.cover(kind, i, map);
        }
        let slot = &mut dense.places[i];
        if *slot == VACANT {
            dense.keys += 1;
        }
        *slot = handle;
    }

    /// Takes `key`'s handle away; returns it, if it had one. A dense
    /// vector keeps its length (its places are reused by keys that come
    /// later), but counts one key fewer, so it grows more slowly after.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{keys::KeyIndex, Value};
    /// let mut idx = KeyIndex::default();
    /// idx.insert(Value::Int(7), 0);
    /// assert_eq!(idx.remove(&Value::Int(7)), Some(0));
    /// assert_eq!(idx.remove(&Value::Int(7)), None);
    /// assert_eq!(idx.get(&Value::Int(7)), None);
    /// ```
    pub fn remove(&mut self, key: &Value) -> Option<u32> {
        if matches!(key, Value::Null) {
            return self.null.take();
        }
        let Some((kind, i)) = dense_place(key) else {
            return self.map.remove(key);
        };
        let (dense, map) = self.dense_and_map(kind);
        let handle = match dense.places.get_mut(i) {
            Some(place) => Some(std::mem::replace(place, VACANT)).filter(|&h| h != VACANT),
            None => {
                let handle = map.remove(key);
                dense.spilled -= usize::from(handle.is_some());
                handle
            }
        };
        dense.keys -= usize::from(handle.is_some());
        handle
    }

    /// The dense vector of `kind`, and the map (for its keys beyond it).
    fn dense_and_map(&mut self, kind: DenseKind) -> (&mut Dense, &mut AHashMap<Value, u32>) {
        let dense = match kind {
            DenseKind::Ints => &mut self.ints,
            DenseKind::Strs => &mut self.strs,
        };
        (dense, &mut self.map)
    }

    /// Heap bytes held (dense vectors and the map's table, approximately).
    pub fn heap_bytes(&self) -> usize {
        (self.ints.places.capacity() + self.strs.places.capacity()) * 4
            + self.map.capacity() * (std::mem::size_of::<(Value, u32)>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::Sym;

    fn key() -> impl Strategy<Value = Value> {
        prop_oneof![
            6 => (0i64..64).prop_map(Value::Int),
            2 => (0i64..1024).prop_map(Value::Int),
            1 => (0i64..1 << 14).prop_map(Value::Int),
            2 => (0i64..DENSE_INTS + 10).prop_map(Value::Int),
            1 => any::<i64>().prop_map(Value::Int),
            3 => (0u32..300).prop_map(|i| Value::Str(Sym::new(&format!("k{i}")))),
            1 => Just(Value::Null),
            1 => (-50i64..50).prop_map(|i| Value::Float(i as f64 / 4.0)),
            1 => any::<bool>().prop_map(Value::Bool),
        ]
    }

    proptest! {
        /// Against a `HashMap`: every key inserted (some twice, with a new
        /// handle) is found with its last handle until it is removed, every
        /// other is not, and the dense vectors stay within their bound (of
        /// the most keys they held: they do not shrink).
        #[test]
        fn index_matches_a_hash_map(
            ops in proptest::collection::vec((key(), 0u32..1000, any::<bool>()), 0..600),
            probes in proptest::collection::vec(key(), 0..100),
        ) {
            let mut idx = KeyIndex::default();
            let mut model = HashMap::new();
            let mut peak = [0usize; 2];
            for (k, h, remove) in ops {
                if remove {
                    prop_assert_eq!(idx.remove(&k), model.remove(&k), "{:?}", k);
                    prop_assert_eq!(idx.get(&k), None);
                } else {
                    idx.insert(k, h);
                    model.insert(k, h);
                    prop_assert_eq!(idx.get(&k), Some(h));
                }
                peak = [peak[0].max(idx.ints.keys), peak[1].max(idx.strs.keys)];
            }
            for (k, &h) in &model {
                prop_assert_eq!(idx.get(k), Some(h), "{:?}", k);
            }
            for k in probes {
                prop_assert_eq!(idx.get(&k), model.get(&k).copied(), "{:?}", k);
            }
            for (dense, peak) in [&idx.ints, &idx.strs].into_iter().zip(peak) {
                prop_assert!(dense.places.len() <= MIN_DENSE.max(2 * PLACES_PER_KEY * peak));
                let in_places = dense.places.iter().filter(|&&p| p != VACANT).count();
                prop_assert_eq!(in_places + dense.spilled, dense.keys);
            }
        }
    }

    /// A few large small-int keys take a few map entries, not a vector up
    /// to the largest (4 MB); enough keys make the vector dense again, and
    /// the keys the map held move into it.
    #[test]
    fn memory_follows_the_number_of_keys() {
        let mut idx = KeyIndex::default();
        for (h, k) in (1_000_000 - 10..1_000_000).enumerate() {
            idx.insert(Value::Int(k), h as u32);
        }
        assert!(idx.heap_bytes() < 2_000, "{} bytes", idx.heap_bytes());
        assert!(idx.ints.places.is_empty());
        assert_eq!(idx.ints.spilled, 10);
        for k in 0..300_000 {
            idx.insert(Value::Int(k), 7);
        }
        assert_eq!(idx.ints.places.len(), 1 << 19);
        idx.insert(Value::Int(600_000), 7); // grows the vector to 2^20
        assert_eq!(idx.ints.places.len(), 1 << 20);
        assert_eq!((idx.ints.spilled, idx.map.len()), (0, 0));
        assert_eq!(idx.get(&Value::Int(999_995)), Some(5));
    }
}

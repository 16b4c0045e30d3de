//! [`KeyIndex`]: partition keys to small integers, the one lookup every
//! event of a keyed engine pays.
//!
//! Keys are mostly small non-negative integers or strings (interned, so a
//! [`Sym`](crate::Sym) is itself a small integer): those are looked up in
//! dense vectors, without hashing. Other keys (negative or large ints,
//! floats, bools) go through a hash map.

use ahash::AHashMap;

use crate::Value;

/// Integer keys in `0..DENSE_INTS` are looked up in a dense vector.
const DENSE_INTS: i64 = 1 << 20;

/// Marks an empty place in a dense vector.
const VACANT: u32 = u32::MAX;

/// A map from key [`Value`]s to `u32` handles (arena indices), with dense
/// fast paths for small ints, strings and NULL.
///
/// Memory of the dense paths follows the largest key seen (4 bytes per
/// integer below it, at most 4 MiB), so a few huge keys cost nothing extra.
///
/// # Examples
/// ```
/// use cep_core::{keys::KeyIndex, Sym, Value};
/// let mut idx = KeyIndex::default();
/// idx.insert(Value::Int(7), 0);
/// idx.insert(Value::Str(Sym::new("AAPL")), 1);
/// idx.insert(Value::Int(-3), 2);
/// assert_eq!(idx.get(&Value::Int(7)), Some(0));
/// assert_eq!(idx.get(&Value::Str(Sym::new("AAPL"))), Some(1));
/// assert_eq!(idx.get(&Value::Int(-3)), Some(2));
/// assert_eq!(idx.get(&Value::Int(8)), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct KeyIndex {
    ints: Vec<u32>,
    strs: Vec<u32>,
    null: Option<u32>,
    map: AHashMap<Value, u32>,
}

impl KeyIndex {
    /// The handle of `key`, if it has one.
    #[inline(always)]
    pub fn get(&self, key: &Value) -> Option<u32> {
        let dense = |v: &Vec<u32>, i: usize| v.get(i).copied().filter(|&p| p != VACANT);
        match *key {
            Value::Int(i) if (0..DENSE_INTS).contains(&i) => dense(&self.ints, i as usize),
            Value::Str(s) => dense(&self.strs, s.index() as usize),
            Value::Null => self.null,
            _ => self.map.get(key).copied(),
        }
    }

    /// Gives `key` the handle `handle` (`u32::MAX` is reserved).
    pub fn insert(&mut self, key: Value, handle: u32) {
        debug_assert_ne!(handle, VACANT, "u32::MAX is not a handle");
        let put = |v: &mut Vec<u32>, i: usize| {
            if v.len() <= i {
                v.resize(i + 1, VACANT);
            }
            v[i] = handle;
        };
        match key {
            Value::Int(i) if (0..DENSE_INTS).contains(&i) => put(&mut self.ints, i as usize),
            Value::Str(s) => put(&mut self.strs, s.index() as usize),
            Value::Null => self.null = Some(handle),
            _ => {
                self.map.insert(key, handle);
            }
        }
    }

    /// Heap bytes held (dense vectors and the map's table, approximately).
    pub fn heap_bytes(&self) -> usize {
        (self.ints.capacity() + self.strs.capacity()) * 4
            + self.map.capacity() * (std::mem::size_of::<(Value, u32)>() + 1)
    }
}

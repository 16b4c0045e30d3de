//! The answer cache and the key that both the cache and coalescing use.
//!
//! A remote predicate is a read (the `Resolver` contract), so an answer
//! depends only on the function and its arguments and may be reused. The
//! cache is bounded and evicts the least recently used answer: the calls of
//! a stream cluster in time (the same vessel asked about again a moment
//! later), so recency is the useful signal.

use std::collections::{HashMap, VecDeque};

use cep_core::{Sym, Value};

/// One argument as a hashable key: floats by their bits, so that `-0.0`
/// and `0.0` (or two NaNs with different payloads) are distinct keys, which
/// can only cost a cache miss, never a wrong answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum KeyArg {
    Null,
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(Sym),
}

/// A call's identity for the cache and for coalescing: function and
/// arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    func: u16,
    args: Box<[KeyArg]>,
}

impl Key {
    /// The key of `func(args)`.
    pub(crate) fn new(func: u16, args: &[Value]) -> Key {
        let args = args
            .iter()
            .map(|v| match *v {
                Value::Null => KeyArg::Null,
                Value::Int(i) => KeyArg::Int(i),
                Value::Float(f) => KeyArg::Float(f.to_bits()),
                Value::Bool(b) => KeyArg::Bool(b),
                Value::Str(s) => KeyArg::Str(s),
            })
            .collect();
        Key { func, args }
    }
}

#[derive(Debug)]
struct Entry {
    value: bool,
    /// When it was last used; the recency queue's entries with another
    /// stamp for this key are stale.
    stamp: u64,
}

/// A bounded least-recently-used map from [`Key`] to answer.
///
/// Recency is a queue of `(stamp, key)` with lazy deletion: a hit pushes a
/// new stamp and leaves the old one to be skipped at eviction, and the
/// queue is rebuilt when stale entries outnumber live ones, so each
/// operation is O(1) amortised.
#[derive(Debug)]
pub(crate) struct Cache {
    capacity: usize,
    map: HashMap<Key, Entry>,
    order: VecDeque<(u64, Key)>,
    clock: u64,
}

impl Cache {
    /// A cache of at most `capacity` answers (0: keeps nothing).
    pub(crate) fn new(capacity: usize) -> Cache {
        Cache { capacity, map: HashMap::new(), order: VecDeque::new(), clock: 0 }
    }

    /// The answer for `key`, marking it used.
    pub(crate) fn get(&mut self, key: &Key) -> Option<bool> {
        let entry = self.map.get_mut(key)?;
        self.clock += 1;
        entry.stamp = self.clock;
        let value = entry.value;
        self.order.push_back((self.clock, key.clone()));
        self.compact();
        Some(value)
    }

    /// Remembers `value` for `key`, evicting the least recently used
    /// answer when full.
    pub(crate) fn insert(&mut self, key: Key, value: bool) {
        if self.capacity == 0 {
            return;
        }
        self.clock += 1;
        if let Some(entry) = self.map.get_mut(&key) {
            entry.value = value;
            entry.stamp = self.clock;
        } else {
            while self.map.len() >= self.capacity {
                let Some((stamp, old)) = self.order.pop_front() else { break };
                if self.map.get(&old).is_some_and(|e| e.stamp == stamp) {
                    self.map.remove(&old);
                }
            }
            self.map.insert(key.clone(), Entry { value, stamp: self.clock });
        }
        self.order.push_back((self.clock, key));
        self.compact();
    }

    /// Answers held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Drops the stale recency entries once they outnumber the live ones.
    fn compact(&mut self) {
        if self.order.len() <= 2 * self.map.len() + 16 {
            return;
        }
        let map = &self.map;
        self.order.retain(|(stamp, key)| map.get(key).is_some_and(|e| e.stamp == *stamp));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: i64) -> Key {
        Key::new(0, &[Value::Int(i)])
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut c = Cache::new(2);
        c.insert(key(1), true);
        c.insert(key(2), false);
        assert_eq!(c.get(&key(1)), Some(true));
        c.insert(key(3), true);
        assert_eq!((c.get(&key(1)), c.get(&key(2)), c.get(&key(3))), (Some(true), None, Some(true)));
        assert_eq!(c.len(), 2);
        for _ in 0..1000 {
            c.get(&key(1));
        }
        assert!(c.order.len() <= 2 * c.map.len() + 17);
    }

    #[test]
    fn keys_floats_by_bits_and_functions_apart() {
        assert_ne!(Key::new(0, &[Value::Float(0.0)]), Key::new(0, &[Value::Float(-0.0)]));
        assert_ne!(Key::new(0, &[Value::Int(1)]), Key::new(1, &[Value::Int(1)]));
        assert_eq!(Key::new(0, &[Value::Float(1.5)]), Key::new(0, &[Value::Float(1.5)]));
        let mut c = Cache::new(0);
        c.insert(key(1), true);
        assert_eq!(c.get(&key(1)), None);
    }
}

//! Where an event goes: the runtime's key hash ([`shard_of`]), its version
//! ([`HASH_VERSION`]), and the routing rules built on it — [`KeyRoute`], the
//! rule the parser threads split blocks by, and `Routes`, the per-query
//! masks the batcher sends by. One file, so that the hash, the version
//! checkpoints record and every place that routes by it change together.

use cep_core::{Event, FieldId, Sym, Value};
use cep_io::parallel::Route;

use super::LEVELS_BIT;

/// The version of the key-to-shard hash (3: integer keys hashed by
/// [`shard_of`]'s own multiply instead of ahash): a checkpoint of a sharded
/// run records it and resumes only under the same, since another hash puts
/// keys on other shards. Change it with [`shard_of`].
pub const HASH_VERSION: u32 = 3;

/// The rule by which a sharded runtime routes events keyed by one field,
/// for the parser threads of a
/// [`ParallelReader`](cep_io::parallel::ParallelReader) to split blocks by
/// ([`ShardedRunner::partition`](super::ShardedRunner::partition)): an
/// event goes to shard [`shard_cached`] of its value among `shards` (of
/// NULL when it has no such field), where the runtime would send it.
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use cep_io::parallel::Route;
/// use cep_runtime::shard::{KeyRoute, shard_of};
/// let route = KeyRoute::new(2, 0);
/// assert_eq!(route.part_of(&Value::Int(7)), shard_of(&Value::Int(7), 2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRoute {
    shards: usize,
    field: FieldId,
}

impl KeyRoute {
    /// By field `field` among `shards` shards (at least one).
    pub fn new(shards: usize, field: FieldId) -> KeyRoute {
        KeyRoute { shards: shards.max(1), field }
    }
}

impl Route for KeyRoute {
    fn parts(&self) -> usize {
        self.shards
    }

    fn field(&self) -> FieldId {
        self.field
    }

    /// Inlined into the parse loop (the parser is generic over its route):
    /// through a closure this was a call the compiler could not inline, 28
    /// instructions an event on W5.
    #[inline(always)]
    fn part_of(&self, key: &Value) -> usize {
        shard_cached(key, self.shards)
    }
}

/// The shard of a key among `shards`: a hash with fixed seeds, so every
/// run (and every process) puts a key on the same shard. The runtime
/// routes by it, and so do the parser threads through [`KeyRoute`], which
/// splits parsed blocks the way the runtime routes them. (Checkpoints of a
/// sharded run depend on it: see [`HASH_VERSION`].)
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use cep_runtime::shard::shard_of;
/// let s = shard_of(&Value::Int(7), 4);
/// assert!(s < 4);
/// assert_eq!(shard_of(&Value::Int(7), 4), s);
/// ```
#[inline(always)]
pub fn shard_of(key: &Value, shards: usize) -> usize {
    let h = match *key {
        Value::Int(i) => int_hash(i),
        _ => other_hash(key),
    };
    reduce(h, shards)
}

/// The hash of an integer key, of which [`shard_of`] takes the remainder:
/// one 128-bit multiply by an odd constant, its halves folded (so the low
/// bits, which pick the shard, depend on every bit of the key). Hashing
/// the `Value` with ahash took a fifth of the reader's time on W5.
///
/// # Examples
/// ```
/// use cep_runtime::shard::{int_hash, shard_of};
/// use cep_core::Value;
/// assert_eq!(int_hash(7) as usize % 4, shard_of(&Value::Int(7), 4));
/// ```
#[inline]
pub fn int_hash(i: i64) -> u64 {
    let m = u128::from(i as u64 ^ 0x243f_6a88_85a3_08d3) * 0x9e37_79b9_7f4a_7c15;
    (m as u64) ^ (m >> 64) as u64
}

/// The stable hash of a key other than an integer (out of line).
#[inline(never)]
fn other_hash(key: &Value) -> u64 {
    match *key {
        // By the text: a symbol's number depends on the order strings were
        // interned, which differs between a run and its resumption.
        Value::Str(s) => str_hash(s),
        _ => STABLE.hash_one(key),
    }
}

/// A key's hash to a shard among `shards`.
#[inline]
fn reduce(h: u64, shards: usize) -> usize {
    let n = shards.max(1) as u64;
    // The same remainder, without a division for 2, 4, 8… shards.
    (if n.is_power_of_two() { h & (n - 1) } else { h % n }) as usize
}

/// The stable hash of a string key (out of line: it takes the interner's
/// read lock).
#[inline(never)]
fn str_hash(s: Sym) -> u64 {
    STABLE.hash_one(s.as_str())
}

thread_local! {
    /// [`shard_cached`]'s cache, per thread (a runtime's reader's, or each
    /// parser thread's for a [`KeyRoute`]): the
    /// stable hash of each string key by symbol number (0: not yet
    /// computed), so that routing a string key takes the interner's lock
    /// once per distinct string, not once per event.
    static STR_HASHES: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Fixed seeds: the same key hashes alike in every run and process.
static STABLE: std::sync::LazyLock<ahash::RandomState> =
    std::sync::LazyLock::new(|| ahash::RandomState::with_seeds(0x5eed, 0xcafe, 0xf00d, 0xbeef));

/// [`shard_of`], with string hashes kept in this thread's cache by symbol
/// number: routing a string key then takes the interner's lock once per
/// distinct string per thread.
///
/// # Examples
/// ```
/// use cep_runtime::shard::{shard_cached, shard_of};
/// use cep_core::Value;
/// let key = Value::str("AAPL");
/// assert_eq!(shard_cached(&key, 3), shard_of(&key, 3));
/// ```
#[inline(always)]
pub fn shard_cached(key: &Value, shards: usize) -> usize {
    let Value::Str(s) = key else { return shard_of(key, shards) };
    let i = s.index() as usize;
    let hash = STR_HASHES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() <= i {
            cache.resize(i + 1, 0);
        }
        if cache[i] == 0 {
            cache[i] = str_hash(*s);
        }
        cache[i]
    });
    reduce(hash, shards)
}

/// Which shards an event goes to, and for which queries.
#[derive(Debug)]
pub(super) struct Routes {
    /// The queries (and [`LEVELS_BIT`]) of every event, on shard 0: those
    /// without a partition.
    always: u64,
    /// Per key field: the queries (and maybe [`LEVELS_BIT`]) keyed by it.
    by_field: Vec<(FieldId, u64)>,
    /// [`single`](Self::single), worked out once.
    single: Option<(FieldId, u64)>,
}

impl Routes {
    /// Groups the queries by the field of their partition key (`keys`, per
    /// query) and the level alerts by `level_key`, so that each field is
    /// hashed once per event.
    pub(super) fn new(keys: &[Option<FieldId>], level_key: Option<FieldId>) -> Routes {
        let mut routes = Routes { always: 0, by_field: Vec::new(), single: None };
        let bits = keys.iter().enumerate().map(|(q, k)| (*k, 1u64 << q));
        for (key, bit) in bits.chain(level_key.map(|f| (Some(f), LEVELS_BIT))) {
            match key {
                None => routes.always |= bit,
                Some(f) => match routes.by_field.iter_mut().find(|(g, _)| *g == f) {
                    Some((_, b)) => *b |= bit,
                    None => routes.by_field.push((f, bit)),
                },
            }
        }
        routes.single = match routes.by_field[..] {
            [(f, bits)] if routes.always == 0 => Some((f, bits)),
            _ => None,
        };
        routes
    }

    /// When every query (and the level alerts) is keyed by one field — the
    /// common case — that field and the mask of every event.
    #[inline]
    pub(super) fn single(&self) -> Option<(FieldId, u64)> {
        self.single
    }

    /// Fills `masks` (one per shard) with the queries `e` is for there.
    #[inline]
    pub(super) fn masks(&self, e: &Event, masks: &mut [u64]) {
        masks.fill(0);
        masks[0] = self.always;
        for &(f, bits) in &self.by_field {
            masks[field_shard(e, f, masks.len())] |= bits;
        }
    }
}

/// The shard of `e` among `shards` by its field `f` (NULL when it has no
/// such field): routing, masks and the reader's partition all go through
/// here, so they agree.
#[inline(always)]
pub(super) fn field_shard(e: &Event, f: FieldId, shards: usize) -> usize {
    shard_cached(e.fields.get(f as usize).unwrap_or(&Value::Null), shards)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_keys_spread_evenly() {
        // Consecutive keys, and keys that differ only in high bits (the
        // hash folds the product's halves, so those spread too).
        for keys in [(0..10_000).collect::<Vec<i64>>(), (0..10_000).map(|k| k << 40).collect()] {
            for shards in [2, 3, 4, 7, 16] {
                let mut per = vec![0usize; shards];
                for &k in &keys {
                    per[shard_of(&Value::Int(k), shards)] += 1;
                }
                let even = keys.len() / shards;
                for &n in &per {
                    assert!(n.abs_diff(even) * 10 < even, "{shards} shards: {per:?}");
                }
            }
        }
    }

    #[test]
    fn cached_string_routes_agree_with_shard_of() {
        for i in 0..200 {
            let key = if i % 3 == 0 { Value::Int(i) } else { Value::Str(Sym::new(&format!("key{i}"))) };
            for shards in [1, 2, 3, 4, 7] {
                // Twice: computed, then from the cache.
                assert_eq!(shard_cached(&key, shards), shard_of(&key, shards), "{key:?}");
                assert_eq!(shard_cached(&key, shards), shard_of(&key, shards), "{key:?}");
            }
        }
        assert!(STR_HASHES.with(|cache| cache.borrow().iter().filter(|&&h| h != 0).count()) >= 133);
    }

    /// The parser threads' route puts each key where `shard_of` does,
    /// whatever the number of shards and the kind of the value.
    #[test]
    fn key_routes_follow_shard_of() {
        let values = (0..300).map(|i| match i % 5 {
            0 => Value::Int(i * 7919 - 1000),
            1 => Value::str(&format!("key{i}")),
            2 => Value::Float(i as f64 / 3.0),
            3 => Value::Bool(i % 2 == 0),
            _ => Value::Null,
        });
        let mut seen = [[false; 3]; 4];
        for v in values {
            for shards in 1..=4 {
                let route = KeyRoute::new(shards, 1);
                let part = route.part_of(&v);
                assert_eq!(part, shard_of(&v, shards), "{v:?} among {shards}");
                seen[shards - 1][part.min(2)] = true;
                // Twice: the string's hash is then cached.
                assert_eq!(route.part_of(&v), part);
            }
        }
        // Keys spread over the shards.
        assert_eq!(seen, [[true, false, false], [true, true, false], [true, true, true], [true, true, true]]);
        assert_eq!((KeyRoute::new(0, 3).parts(), KeyRoute::new(0, 3).field()), (1, 3));
    }
}

//! [`StrCache`], the reader-local interning cache: repeated cell and key
//! strings to symbols without the process interner's lock. Apart from the
//! formats because both use it and the parallel reader moves caches between
//! block readers.

use super::*;

/// Strings longer than this are interned without going through the
/// reader-local cache.
pub(crate) const CACHE_MAX_KEY: usize = 128;
/// Each map of the reader-local string cache for strings of up to 15 bytes
/// is cleared when it reaches this many entries (at most 4 MiB for those
/// up to 7 bytes, 8 MiB for the others). A key column with more distinct
/// values than fit looks most of them up in the process's interner, under
/// its lock, which is slow (see docs/perf-log.md, 2026-12-03, string keys).
/// Every distinct string stays interned for the life of the process anyway.
pub(crate) const CACHE_MAX_ENTRIES: usize = 1 << 17;
/// The bound of the map for strings of 16 to [`CACHE_MAX_KEY`] bytes, whose
/// entries hold a copy of their bytes.
pub(crate) const CACHE_MAX_LONG: usize = 1 << 14;
/// Maps repeated strings to their symbols without the global interner lock.
///
/// A string of at most 15 bytes (a type name, a ticker, most keys) is
/// packed with its length into a `u128` ([`pack`]), which is both its key
/// in a map and its tag in a tiny direct-mapped table of recent strings in
/// front of it: a look-up hashes and compares one integer, and reads no
/// heap key, where a map keyed by the bytes costs two calls to `memcmp` per
/// cell (see docs/perf-log.md, 2026-12-01, string keys). Longer strings go
/// through a map keyed by their bytes.
///
/// Symbols are the process's, so a cache may move from one reader to
/// another ([`Reader::swap_strings`]): the parallel reader keeps its
/// parsers' caches from one block to the next.
pub(crate) struct StrCache {
    /// Strings of at most 7 bytes (most keys and type names), by their
    /// packed form [folded](fold) into one word: 16 bytes an entry, half of
    /// what `short` takes. With 5,000 distinct keys the map's entries do
    /// not stay in the nearest caches between two uses, and the load of an
    /// entry is most of interning's time (see docs/perf-log.md, 2026-12-03,
    /// string keys).
    pub(crate) tiny: AHashMap<u64, Sym>,
    /// Strings of 8 to 15 bytes.
    pub(crate) short: AHashMap<u128, Sym>,
    pub(crate) long: AHashMap<Box<[u8]>, Sym>,
    /// Recent short strings by a few bits of their packed form (0: empty
    /// slot; the empty string packs to 0 and is never kept here).
    pub(crate) recent: [(u128, Sym); RECENT],
    /// The empty string's symbol, to tell it without the interner's lock.
    pub(crate) empty: Sym,
}

/// Slots of [`StrCache::recent`].
pub(crate) const RECENT: usize = 8;
/// The longest string [`pack`] takes.
pub(crate) const SHORT: usize = 15;

/// `bytes` (at most [`SHORT`]) and their length in one integer, distinct
/// for distinct strings: the bytes in the low 15 bytes, the length in the
/// top one. Read a few bytes at a time by overlapping loads, not byte by
/// byte.
#[inline]
pub(crate) fn pack(bytes: &[u8]) -> u128 {
    let len = bytes.len();
    debug_assert!(len <= SHORT);
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")));
    let (lo, hi) = match len {
        0 => (0, 0),
        1..=3 => {
            let b = |i: usize| u64::from(bytes[i]);
            (b(0) | b(len / 2) << 8 | b(len - 1) << 16, 0)
        }
        // The second load overlaps the first; the overlap is shifted out.
        4..=7 => (half(0) | (half(len - 4) >> (8 * (8 - len))) << 32, 0),
        8 => (word(0), 0),
        _ => (word(0), word(len - 8) >> (8 * (16 - len))),
    };
    u128::from(lo) | u128::from(hi | (len as u64) << 56) << 64
}

/// The [`pack`]ed form of a string of at most 7 bytes in one word, still
/// distinct for distinct strings: the bytes take at most the low 7 bytes of
/// the low word, and the high word is the length in its top byte.
#[inline]
pub(crate) fn fold(packed: u128) -> u64 {
    packed as u64 | (packed >> 64) as u64
}

impl Default for StrCache {
    fn default() -> StrCache {
        // Key 0 is what the empty string packs to, so a slot never written
        // holds a true pair.
        let empty = Sym::new("");
        StrCache {
            tiny: AHashMap::new(),
            short: AHashMap::new(),
            long: AHashMap::new(),
            recent: [(0, empty); RECENT],
            empty,
        }
    }
}

impl StrCache {
    /// The symbol of `bytes`, or `None` if they are not UTF-8.
    #[inline]
    pub(crate) fn intern(&mut self, bytes: &[u8]) -> Option<Sym> {
        if bytes.len() > SHORT {
            return self.intern_long(bytes);
        }
        let key = pack(bytes);
        let slot = ((key >> 64) as u64 ^ key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as usize >> 61;
        let (tag, sym) = self.recent[slot % RECENT];
        if tag == key {
            return Some(sym);
        }
        let sym = if bytes.len() < 8 {
            looked_up(&mut self.tiny, fold(key), bytes)?
        } else {
            looked_up(&mut self.short, key, bytes)?
        };
        self.recent[slot % RECENT] = (key, sym);
        Some(sym)
    }

    /// The strings it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.tiny.len() + self.short.len() + self.long.len()
    }

    /// [`intern`](Self::intern) for a string of more than [`SHORT`] bytes.
    #[inline(never)]
    pub(crate) fn intern_long(&mut self, bytes: &[u8]) -> Option<Sym> {
        if let Some(&sym) = self.long.get(bytes) {
            return Some(sym);
        }
        let s = std::str::from_utf8(bytes).ok()?;
        let sym = Sym::new(s);
        if bytes.len() <= CACHE_MAX_KEY {
            insert_bounded(&mut self.long, bytes.into(), sym, CACHE_MAX_LONG);
        }
        Some(sym)
    }
}

/// The symbol of `bytes` from `map` under `key`, interned and inserted when
/// the map has none; `None` if they are not UTF-8.
#[inline]
pub(crate) fn looked_up<K: std::hash::Hash + Eq>(map: &mut AHashMap<K, Sym>, key: K, bytes: &[u8]) -> Option<Sym> {
    if let Some(&sym) = map.get(&key) {
        return Some(sym);
    }
    let sym = Sym::new(std::str::from_utf8(bytes).ok()?);
    insert_bounded(map, key, sym, CACHE_MAX_ENTRIES);
    Some(sym)
}

/// Inserts into one of [`StrCache`]'s maps, emptying it first when it is
/// full, so a stream of ever new strings cannot grow it without bound.
pub(crate) fn insert_bounded<K: std::hash::Hash + Eq>(map: &mut AHashMap<K, Sym>, key: K, sym: Sym, max: usize) {
    if map.len() >= max {
        map.clear();
    }
    map.insert(key, sym);
}

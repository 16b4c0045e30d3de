//! Typed field values and interned strings.
//!
//! A [`Value`] is 16 bytes and `Copy`: strings are interned once into a
//! process-wide table and carried as a [`Sym`] (a `u32`), so the engines move
//! values around without allocating.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use hashbrown::HashTable;
use parking_lot::RwLock;

/// An interned string: an index into the process-wide string table.
///
/// Interned strings live for the rest of the process (see the crate's
/// `# Limits`): a stream with an unbounded number of distinct strings grows
/// the table without bound.
///
/// # Examples
/// ```
/// use cep_core::Sym;
/// let a = Sym::new("IBM");
/// assert_eq!(a, Sym::new("IBM"));
/// assert_eq!(a.as_str(), "IBM");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(u32);

/// The process-wide string table.
///
/// Texts are copied into leaked chunks of [`CHUNK`] bytes (a long text gets
/// its own allocation), and the ids are found by hashing the text into a
/// table of bare `u32`s: an interned string costs its bytes, 16 for its
/// `&str`, and about 6 in the table (an id and a control byte, the table
/// at most 7/8 full). A `Box<str>` per string and a map keyed by `&str`
/// took about 120 bytes for a 10-byte string.
struct Interner {
    /// Ids, found by the hash of their text.
    ids: HashTable<u32>,
    /// Texts by id.
    strs: Vec<&'static str>,
    hasher: ahash::RandomState,
    /// What is left of the current chunk.
    free: &'static mut [u8],
}

/// Bytes per chunk of interned text.
const CHUNK: usize = 64 * 1024;

fn interner() -> &'static RwLock<Interner> {
    static TABLE: OnceLock<RwLock<Interner>> = OnceLock::new();
    TABLE.get_or_init(|| {
        RwLock::new(Interner {
            ids: HashTable::new(),
            strs: Vec::new(),
            hasher: ahash::RandomState::new(),
            free: &mut [],
        })
    })
}

impl Interner {
    fn hash(&self, s: &str) -> u64 {
        self.hasher.hash_one(s)
    }

    /// The id of `s`, whose hash is `hash`, if it is interned.
    fn find(&self, s: &str, hash: u64) -> Option<u32> {
        self.ids.find(hash, |&id| self.strs[id as usize] == s).copied()
    }

    /// Interns `s` (not interned yet, its hash `hash`).
    fn insert(&mut self, s: &str, hash: u64) -> u32 {
        let id = u32::try_from(self.strs.len()).expect("more than 4 billion distinct strings");
        let text = self.store(s);
        self.strs.push(text);
        let (strs, hasher) = (&self.strs, &self.hasher);
        self.ids.insert_unique(hash, id, |&id| hasher.hash_one(strs[id as usize]));
        id
    }

    /// A copy of `s` for the rest of the process.
    fn store(&mut self, s: &str) -> &'static str {
        if s.len() > CHUNK / 8 {
            return Box::leak(s.into());
        }
        if self.free.len() < s.len() {
            self.free = Box::leak(vec![0; CHUNK].into_boxed_slice());
        }
        let (text, rest) = std::mem::take(&mut self.free).split_at_mut(s.len());
        self.free = rest;
        text.copy_from_slice(s.as_bytes());
        std::str::from_utf8(text).expect("a copy of a str")
    }
}

impl Sym {
    /// Interns `s` and returns its symbol.
    pub fn new(s: &str) -> Sym {
        let table = interner().read();
        let hash = table.hash(s);
        if let Some(id) = table.find(s, hash) {
            return Sym(id);
        }
        drop(table);
        let mut table = interner().write();
        match table.find(s, hash) {
            Some(id) => Sym(id),
            None => Sym(table.insert(s, hash)),
        }
    }

    /// The interned text.
    pub fn as_str(self) -> &'static str {
        interner().read().strs[self.0 as usize]
    }

    /// The raw index (stable only within one process).
    pub fn index(self) -> u32 {
        self.0
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// A symbol is saved as its text: indices differ between processes.
impl serde::Serialize for Sym {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Reads a symbol's text and interns it in this process.
impl<'de> serde::Deserialize<'de> for Sym {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Sym, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Sym::new(&text))
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of a [`Value`], used by schemas and the type checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// 64-bit signed integer.
    Int,
    /// 64-bit float (always finite).
    Float,
    /// Boolean.
    Bool,
    /// Interned string.
    Str,
}

impl Kind {
    /// Lower-case name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Bool => "bool",
            Kind::Str => "string",
        }
    }

    /// Whether the kind is a number (int or float).
    pub fn is_numeric(self) -> bool {
        matches!(self, Kind::Int | Kind::Float)
    }
}

/// A field value: int, float, bool, interned string, or NULL (missing).
///
/// Floats are always finite: readers reject NaN and infinities, and
/// arithmetic that would produce one yields [`Value::Null`].
///
/// Equality and hashing are total (floats by bit pattern, with `-0.0`
/// equal to `0.0`), so a `Value` can key a hash map (partition keys).
/// For the comparison semantics of the query language (int vs float,
/// NULL is never equal) use [`Value::compare`].
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use std::cmp::Ordering;
/// assert_eq!(Value::Int(2).compare(&Value::Float(2.0)), Some(Ordering::Equal));
/// assert_eq!(Value::Null.compare(&Value::Null), None);
/// assert_eq!(Value::str("a").compare(&Value::Int(1)), None);
/// ```
// `repr(C, u8)`: every payload starts at offset 8, so a copy is the tag and
// one word. With the default layout a `bool` payload sits at offset 1 and
// LLVM copies bytes 1..16 as two overlapping words through the stack, which
// stalls store forwarding wherever an engine moves values.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
#[repr(u64)]
pub enum Value {
    /// Missing / unknown.
    #[default]
    Null,
    /// A 64-bit integer.
    Int(i64),
    /// A finite 64-bit float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// An interned string.
    Str(Sym),
}

impl Value {
    /// The value as two words, its kind and its bits, read field by field
    /// ([`from_words`](Self::from_words) makes the value again). Copying
    /// a value this way, rather than as one 16-byte move, lets the CPU
    /// forward the two 8-byte stores that just wrote it; a 16-byte load of
    /// such a value waits until both stores reach the cache. The parallel
    /// reader's partitioned blocks ([`FlatEvents`](crate::FlatEvents)) copy
    /// every event's fields in like this.
    ///
    /// # Examples
    /// ```
    /// use cep_core::Value;
    /// for v in [Value::Null, Value::Int(-7), Value::Float(2.5), Value::Bool(true), Value::str("x")] {
    ///     assert_eq!(Value::from_words(v.to_words()), v);
    /// }
    /// ```
    #[inline(always)]
    pub fn to_words(&self) -> [u64; 2] {
        match *self {
            Value::Null => [0, 0],
            Value::Int(i) => [1, i as u64],
            Value::Float(f) => [2, f.to_bits()],
            Value::Bool(b) => [3, u64::from(b)],
            Value::Str(s) => [4, u64::from(s.0)],
        }
    }

    /// The value of words from [`to_words`](Self::to_words) (other words
    /// make some value, perhaps a string that is not interned: reading
    /// such a string panics).
    #[inline(always)]
    pub fn from_words(w: [u64; 2]) -> Value {
        match w[0] {
            1 => Value::Int(w[1] as i64),
            2 => Value::Float(f64::from_bits(w[1])),
            3 => Value::Bool(w[1] != 0),
            4 => Value::Str(Sym(w[1] as u32)),
            _ => Value::Null,
        }
    }

    /// An interned string value.
    pub fn str(s: &str) -> Value {
        Value::Str(Sym::new(s))
    }

    /// A float value, or NULL when `f` is not finite.
    pub fn float(f: f64) -> Value {
        if f.is_finite() { Value::Float(f) } else { Value::Null }
    }

    /// The kind, or `None` for NULL.
    pub fn kind(&self) -> Option<Kind> {
        match self {
            Value::Null => None,
            Value::Int(_) => Some(Kind::Int),
            Value::Float(_) => Some(Kind::Float),
            Value::Bool(_) => Some(Kind::Bool),
            Value::Str(_) => Some(Kind::Str),
        }
    }

    /// Whether this is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as a float, for ints and floats.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }

    /// The value as an int, for ints only.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    /// Compares two values under the query language's rules: numbers compare
    /// numerically (an int with a float exactly), strings lexicographically,
    /// bools `false < true`; NULL or a mix of kinds gives `None` (the
    /// comparison is false).
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        match (*self, *other) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(&b)),
            (Value::Float(a), Value::Float(b)) => a.partial_cmp(&b),
            (Value::Int(a), Value::Float(b)) => Some(cmp_int_float(a, b)),
            (Value::Float(a), Value::Int(b)) => Some(cmp_int_float(b, a).reverse()),
            (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(&b)),
            (Value::Str(a), Value::Str(b)) => {
                if a == b {
                    Some(Ordering::Equal)
                } else {
                    Some(a.as_str().cmp(b.as_str()))
                }
            }
            _ => None,
        }
    }
}

/// Exact comparison of an i64 with a finite f64.
fn cmp_int_float(i: i64, f: f64) -> Ordering {
    // 2^63 as f64 is exact; every f64 outside [-2^63, 2^63) is beyond any i64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f >= LIMIT {
        return Ordering::Less;
    }
    if f < -LIMIT {
        return Ordering::Greater;
    }
    let t = f.trunc();
    let ti = t as i64; // exact: |t| < 2^63
    match i.cmp(&ti) {
        Ordering::Equal => {
            let frac = f - t;
            if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        o => o,
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (*self, *other) {
            (Value::Null, Value::Null) => true,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => canonical_bits(a) == canonical_bits(b),
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

fn canonical_bits(f: f64) -> u64 {
    if f == 0.0 { 0 } else { f.to_bits() }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match *self {
            Value::Null => state.write_u8(0),
            Value::Int(i) => {
                state.write_u8(1);
                state.write_i64(i);
            }
            Value::Float(f) => {
                state.write_u8(2);
                state.write_u64(canonical_bits(f));
            }
            Value::Bool(b) => {
                state.write_u8(3);
                state.write_u8(b as u8);
            }
            Value::Str(s) => {
                state.write_u8(4);
                state.write_u32(s.0);
            }
        }
    }
}

impl fmt::Display for Value {
    /// Formats the value as it appears in JSON output (strings quoted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = Vec::new();
        crate::json::write_value(&mut s, self);
        f.write_str(&String::from_utf8_lossy(&s))
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::float(f)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::str(s)
    }
}

impl From<i32> for Value {
    fn from(i: i32) -> Value {
        Value::Int(i64::from(i))
    }
}

impl From<u32> for Value {
    fn from(i: u32) -> Value {
        Value::Int(i64::from(i))
    }
}

impl From<f32> for Value {
    fn from(f: f32) -> Value {
        Value::float(f64::from(f))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::str(&s)
    }
}

impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::str(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 16);
        // The tag's unused values are a niche: an optional value costs nothing.
        assert_eq!(std::mem::size_of::<Option<Value>>(), 16);
    }

    #[test]
    fn int_float_comparison_is_exact() {
        let big = (1i64 << 53) + 1;
        assert_eq!(Value::Int(big).compare(&Value::Float((1i64 << 53) as f64)), Some(Ordering::Greater));
        assert_eq!(Value::Int(3).compare(&Value::Float(2.5)), Some(Ordering::Greater));
        assert_eq!(Value::Int(-3).compare(&Value::Float(-2.5)), Some(Ordering::Less));
        assert_eq!(Value::Int(i64::MAX).compare(&Value::Float(1e300)), Some(Ordering::Less));
        assert_eq!(Value::Float(-1e300).compare(&Value::Int(i64::MIN)), Some(Ordering::Less));
    }

    #[test]
    fn mixed_kinds_do_not_compare() {
        assert_eq!(Value::Bool(true).compare(&Value::Int(1)), None);
        assert_eq!(Value::Null.compare(&Value::Int(1)), None);
    }

    #[test]
    fn negative_zero_keys_equal_zero() {
        use std::collections::HashSet;
        let mut s = HashSet::new();
        s.insert(Value::Float(0.0));
        assert!(s.contains(&Value::Float(-0.0)));
    }

    /// The interner against a model: texts of every length (empty, up to
    /// a chunk's end and past it, longer than a chunk's share, multi-byte),
    /// interned from four threads at once, each text twice; a symbol gives
    /// its text back, the same text the same symbol, and different texts
    /// different symbols.
    #[test]
    fn interned_texts_round_trip_across_threads() {
        let text = |i: usize| match i % 5 {
            0 => format!("intern-test-{i}"),
            1 => format!("ä{}€{i}", "x".repeat(i % 300)),
            2 => format!("{i}-{}", "long".repeat(CHUNK / 16 + i % 7)),
            3 => "y".repeat(i % 2_000) + &i.to_string(),
            _ => String::new() + if i % 10 == 4 { "" } else { "z" },
        };
        let per_thread: Vec<Vec<(String, Sym)>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4)
                .map(|t| {
                    scope.spawn(move || {
                        (0..3_000).map(|i| (i * 7 + t) % 3_000).map(|i| (text(i), Sym::new(&text(i)))).collect()
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut model: std::collections::HashMap<String, Sym> = Default::default();
        for (text, sym) in per_thread.into_iter().flatten() {
            assert_eq!(sym.as_str(), text);
            assert_eq!(Sym::new(&text), sym);
            assert_eq!(*model.entry(text).or_insert(sym), sym);
        }
        let distinct: std::collections::HashSet<Sym> = model.values().copied().collect();
        assert_eq!(distinct.len(), model.len());
    }

    #[test]
    fn strings_compare_lexicographically() {
        assert_eq!(Value::str("abc").compare(&Value::str("abd")), Some(Ordering::Less));
    }
}

//! Matches, their stable ids and their JSON lines.
//!
//! # The id
//! A match id is the 128-bit XXH3 hash (seed 0, the published, fixed
//! algorithm) of a canonical byte string, printed as 32 lower-case hex digits.
//! The bytes are, in order (integers little-endian):
//!
//! 1. the query name: `u32` byte length, UTF-8 bytes;
//! 2. the key: a tag byte, then `0` null (nothing more), `1` int (`i64`),
//!    `2` float (`u64` bits, `-0.0` as `0.0`), `3` bool (one byte), `4`
//!    string (`u32` length, UTF-8 bytes);
//! 3. per positive variable in `SEQ` order: the `u32` row count, then each row
//!    as `u64`.
//!
//! It depends on nothing else (no random seed, no thread count, no clock), so
//! the same query, key and rows give the same id on every run and machine.

use std::fmt;

use crate::{EmitValue, Timestamp, Value, json};

/// One match: the rows bound to each positive variable.
///
/// It serializes with serde as a struct of its fields ([`Value`]s in
/// serde's enum form, strings by their text, not their process-local
/// index), so it round-trips through JSON, postcard and the like.
///
/// # Examples
/// ```
/// use cep_core::{EmitValue, Match, Value};
/// let m = Match {
///     query: 0,
///     key: Value::str("ACME"),
///     start: 1000,
///     end: 2000,
///     rows: vec![0, 3],
///     ends: vec![1, 2],
///     emit: vec![EmitValue::Value(Value::Int(250))],
///     unverified: false,
/// };
/// let json = serde_json::to_string(&m).unwrap();
/// assert_eq!(serde_json::from_str::<Match>(&json).unwrap(), m);
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Match {
    /// Index of the query in the engine that produced it.
    pub query: usize,
    /// The partition key (NULL without a partition).
    pub key: Value,
    /// ts of the first bound event.
    pub start: Timestamp,
    /// ts of the last bound event, plus the quiet period of a trailing `NOT`.
    pub end: Timestamp,
    /// Bound rows, variable after variable.
    pub rows: Vec<u64>,
    /// `rows[ends[i-1]..ends[i]]` are variable `i`'s rows.
    pub ends: Vec<u32>,
    /// The values of the query's `EMIT` items, in item order; empty when
    /// the query has none (an empty vector allocates nothing, and engines
    /// reuse a recycled match's vector). Not part of the [`id`](Self::id).
    pub emit: Vec<EmitValue>,
    /// A remote call on its way had no answer, and `--remote-failure true`
    /// or `false` gave it one (LANGUAGE.md §8): the output says
    /// `"unverified":true`. Not part of the [`id`](Self::id).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unverified: bool,
}

impl Match {
    /// Number of positive variables.
    pub fn var_count(&self) -> usize {
        self.ends.len()
    }

    /// The rows bound to variable `i` (in `SEQ` order of positive variables).
    pub fn var_rows(&self, i: usize) -> &[u64] {
        let lo = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.rows[lo..self.ends[i] as usize]
    }

    /// Iterates the variables' rows.
    pub fn vars(&self) -> impl Iterator<Item = &[u64]> + '_ {
        (0..self.var_count()).map(|i| self.var_rows(i))
    }

    /// The stable id of this match under query name `query`.
    pub fn id(&self, query: &str) -> MatchId {
        match_id(query, &self.key, self.vars())
    }

    /// Appends the match as one JSON line (without the newline) as
    /// LANGUAGE.md §5 specifies, for a query without `EMIT` items (a match
    /// that carries values has them written under the names `e1`, `e2`, …;
    /// use [`write_json_emit`](Self::write_json_emit) to name them).
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Match, Value};
    /// let m = Match { query: 0, key: Value::Int(7), start: 1000, end: 31000,
    ///                 rows: vec![1, 2], ends: vec![1, 2], emit: vec![], unverified: false };
    /// let mut line = Vec::new();
    /// m.write_json(&mut line, "rise_spike", &["r", "s"]);
    /// assert!(line.starts_with(
    ///     br#"{"query":"rise_spike","key":7,"start":1000,"end":31000,"vars":{"r":[1],"s":[2]},"id":""#));
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>, query: &str, var_names: &[impl AsRef<str>]) {
        self.write_json_emit(out, query, var_names, &[] as &[&str]);
    }

    /// Appends the match as one JSON line (without the newline), with the
    /// values of its query's `EMIT` items named by `emit_names` (item
    /// order): `"emit":{…}` comes after `vars` and before `id`, and only
    /// when the match carries values (a query without `EMIT` writes the
    /// line of [`write_json`](Self::write_json), byte for byte). The `id`
    /// does not depend on the values.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{EmitValue, Match, Value};
    /// let m = Match { query: 0, key: Value::Null, start: 5, end: 9, rows: vec![0, 1], ends: vec![1, 2],
    ///                 emit: vec![EmitValue::Value(Value::Int(3)), EmitValue::Null], unverified: false };
    /// let mut line = Vec::new();
    /// m.write_json_emit(&mut line, "q1", &["a", "b"], &["count(b)", "c"]);
    /// let text = String::from_utf8(line).unwrap();
    /// assert!(text.contains(r#""vars":{"a":[0],"b":[1]},"emit":{"count(b)":3,"c":null},"id":"#), "{text}");
    /// ```
    pub fn write_json_emit(
        &self,
        out: &mut Vec<u8>,
        query: &str,
        var_names: &[impl AsRef<str>],
        emit_names: &[impl AsRef<str>],
    ) {
        out.extend_from_slice(b"{\"query\":");
        json::write_str(out, query);
        out.extend_from_slice(b",\"key\":");
        json::write_value(out, &self.key);
        out.extend_from_slice(b",\"start\":");
        json::write_i64(out, self.start);
        out.extend_from_slice(b",\"end\":");
        json::write_i64(out, self.end);
        out.extend_from_slice(b",\"vars\":{");
        for (i, name) in var_names.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json::write_str(out, name.as_ref());
            out.extend_from_slice(b":[");
            for (j, &r) in self.var_rows(i).iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                json::write_u64(out, r);
            }
            out.push(b']');
        }
        out.push(b'}');
        if !self.emit.is_empty() {
            self.write_emit(out, emit_names);
        }
        if self.unverified {
            out.extend_from_slice(b",\"unverified\":true");
        }
        out.extend_from_slice(b",\"id\":\"");
        json::write_hex128(out, self.id(query).0);
        out.extend_from_slice(b"\"}");
    }
}

impl Match {
    /// `,"emit":{…}`: out of line, as no match of a query without `EMIT`
    /// gets here.
    #[inline(never)]
    fn write_emit(&self, out: &mut Vec<u8>, names: &[impl AsRef<str>]) {
        out.extend_from_slice(b",\"emit\":{");
        for (i, v) in self.emit.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match names.get(i) {
                Some(n) => json::write_str(out, n.as_ref()),
                None => json::write_str(out, &format!("e{}", i + 1)),
            }
            out.push(b':');
            v.write_json(out);
        }
        out.push(b'}');
    }
}

/// Compares the rows of two matches variable by variable, each variable's
/// rows as a sequence (`rows[ends[i-1]..ends[i]]` is variable `i`'s): the
/// tie-break of LANGUAGE.md §3 between matches final at the same moment
/// with the same start. Not the flat lists compared: a shorter variable
/// comes first even when a later one differs.
///
/// # Examples
/// ```
/// use std::cmp::Ordering;
/// use cep_core::cmp_rows_by_var;
/// // a = [1], b = [5] against a = [1, 2], b = [3]: the first variable decides.
/// assert_eq!(cmp_rows_by_var(&[1, 5], &[1, 2], &[1, 2, 3], &[2, 3]), Ordering::Less);
/// assert_eq!(cmp_rows_by_var(&[1, 5], &[1, 2], &[1, 5], &[1, 2]), Ordering::Equal);
/// ```
pub fn cmp_rows_by_var(a_rows: &[u64], a_ends: &[u32], b_rows: &[u64], b_ends: &[u32]) -> std::cmp::Ordering {
    let (mut la, mut lb) = (0usize, 0usize);
    for (&ea, &eb) in a_ends.iter().zip(b_ends) {
        let (ea, eb) = (ea as usize, eb as usize);
        match a_rows[la..ea].cmp(&b_rows[lb..eb]) {
            std::cmp::Ordering::Equal => {}
            o => return o,
        }
        (la, lb) = (ea, eb);
    }
    std::cmp::Ordering::Equal
}

/// A stable 128-bit match id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MatchId(pub u128);

impl fmt::Display for MatchId {
    /// As the output writes it: 32 lower-case hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hex = Vec::with_capacity(32);
        json::write_hex128(&mut hex, self.0);
        f.write_str(std::str::from_utf8(&hex).expect("hex digits are ASCII"))
    }
}

/// Computes the id of a match from its query name, key and variables' rows.
///
/// # Examples
/// ```
/// use cep_core::{match_id, Value};
/// let a = match_id("q", &Value::Int(7), [&[1u64][..], &[2, 3][..]].into_iter());
/// let b = match_id("q", &Value::Int(7), [&[1u64, 2][..], &[3][..]].into_iter());
/// assert_ne!(a, b);
/// assert_eq!(a, match_id("q", &Value::Int(7), [&[1u64][..], &[2, 3][..]].into_iter()));
/// ```
pub fn match_id<'a>(query: &str, key: &Value, vars: impl Iterator<Item = &'a [u64]>) -> MatchId {
    thread_local! {
        /// The canonical bytes, built in one buffer per thread: a vector of
        /// its own per match was an allocation and a free per output line.
        static BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BYTES.with(|bytes| {
        let mut buf = bytes.borrow_mut();
        buf.clear();
        canonical_bytes(&mut buf, query, key, vars);
        MatchId(xxhash_rust::xxh3::xxh3_128(&buf))
    })
}

/// Appends the bytes a match id hashes (see the module docs).
fn canonical_bytes<'a>(buf: &mut Vec<u8>, query: &str, key: &Value, vars: impl Iterator<Item = &'a [u64]>) {
    push_str(buf, query);
    match *key {
        Value::Null => buf.push(0),
        Value::Int(i) => {
            buf.push(1);
            buf.extend_from_slice(&i.to_le_bytes());
        }
        Value::Float(f) => {
            buf.push(2);
            let bits = if f == 0.0 { 0u64 } else { f.to_bits() };
            buf.extend_from_slice(&bits.to_le_bytes());
        }
        Value::Bool(b) => {
            buf.push(3);
            buf.push(b as u8);
        }
        Value::Str(s) => {
            buf.push(4);
            push_str(buf, s.as_str());
        }
    }
    for rows in vars {
        buf.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        for r in rows {
            buf.extend_from_slice(&r.to_le_bytes());
        }
    }
}

fn push_str(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_round_trips_through_serde() {
        use crate::{Event, EventObject, Sym};
        let names = [Sym::new("sym"), Sym::new("price")];
        let tick = Event::new(Sym::new("Tick"), 20, 4, vec![Value::str("ACME"), Value::float(10.5)]);
        let m = Match {
            query: 2,
            key: Value::str("ACME"),
            start: 10,
            end: 20,
            rows: vec![1, 2, 4],
            ends: vec![2, 3],
            emit: vec![
                EmitValue::Value(Value::Bool(true)),
                EmitValue::Value(Value::Null),
                EmitValue::Event(EventObject::of(&tick, &names)),
                EmitValue::Events(vec![EventObject::of(&tick, &names); 2]),
                EmitValue::Null,
            ],
            unverified: true,
        };
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains(r#""unverified":true"#), "{json}");
        assert!(json.contains(r#""key":{"Str":"ACME"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Match>(&json).unwrap(), m);
        let empty = Match { emit: Vec::new(), key: Value::Null, ..m };
        assert_eq!(serde_json::from_str::<Match>(&serde_json::to_string(&empty).unwrap()).unwrap(), empty);
    }

    #[test]
    fn id_is_pinned() {
        // The id is part of the output contract: it must never change.
        let id = match_id("rise_spike", &Value::Int(1), [&[1u64][..], &[2][..]].into_iter());
        assert_eq!(id.to_string().len(), 32);
        assert_eq!(id, match_id("rise_spike", &Value::Int(1), [&[1u64][..], &[2][..]].into_iter()));
        assert_ne!(id, match_id("rise_spike", &Value::Int(2), [&[1u64][..], &[2][..]].into_iter()));
        assert_ne!(id, match_id("rise_spike", &Value::str("1"), [&[1u64][..], &[2][..]].into_iter()));
    }

    /// Whole lines, ids included, as the first implementation (through
    /// `core::fmt`) wrote them: the output is part of the contract, and the
    /// id must never change.
    #[test]
    fn lines_are_pinned() {
        let m = Match {
            query: 0,
            key: Value::Int(0),
            start: 0,
            end: 1,
            rows: vec![0, 1],
            ends: vec![1, 2],
            emit: vec![],
            unverified: false,
        };
        let mut line = Vec::new();
        m.write_json(&mut line, "q1", &["a", "b"]);
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            r#"{"query":"q1","key":0,"start":0,"end":1,"vars":{"a":[0],"b":[1]},"id":"57ec1276a7c8950fd11cf84c71f3c475"}"#
        );
        let m = Match {
            query: 0,
            key: Value::str("x\\yé\""),
            start: -5,
            end: 3,
            rows: vec![0, 1, 2],
            ends: vec![1, 3],
            emit: vec![],
            unverified: false,
        };
        line.clear();
        m.write_json(&mut line, "qz", &[String::from("a"), String::from("b")]);
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            r#"{"query":"qz","key":"x\\yé\"","start":-5,"end":3,"vars":{"a":[0],"b":[1,2]},"id":"990843c857d45ef7051702f4eb7fe893"}"#
        );
    }

    use proptest::prelude::*;

    proptest! {
        /// Any match's line is JSON that reads back as the match: keys of
        /// every kind (strings with quotes, backslashes, control and
        /// non-ASCII characters; the extreme integers), rows up to
        /// `u64::MAX`, any start and end; and its id is the one
        /// [`match_id`] gives.
        #[test]
        fn lines_read_back(key in prop_oneof![
                any::<i64>().prop_map(Value::Int),
                any::<bool>().prop_map(Value::Bool),
                Just(Value::Null),
                "[a-z\"\\\\\u{0}-\u{1f}\u{e9}\u{1f600}]{0,8}".prop_map(|s| Value::str(&s)),
            ],
            start in any::<i64>(), end in any::<i64>(),
            vars in proptest::collection::vec(proptest::collection::vec(any::<u64>(), 0..4), 1..4)) {
            let mut m = Match { query: 0, key, start, end, rows: Vec::new(), ends: Vec::new(), emit: Vec::new(), unverified: false };
            for v in &vars {
                m.rows.extend_from_slice(v);
                m.ends.push(m.rows.len() as u32);
            }
            let names: Vec<String> = (0..vars.len()).map(|i| format!("v{i}")).collect();
            let mut line = Vec::new();
            m.write_json(&mut line, "q\"1", &names);
            let back: serde_json::Value = serde_json::from_slice(&line).unwrap();
            prop_assert_eq!(&back["query"], "q\"1");
            let want_key = match m.key {
                Value::Int(i) => serde_json::json!(i),
                Value::Bool(b) => serde_json::json!(b),
                Value::Str(s) => serde_json::json!(s.as_str()),
                _ => serde_json::Value::Null,
            };
            prop_assert_eq!(&back["key"], &want_key);
            prop_assert_eq!(&back["start"], &serde_json::json!(start));
            prop_assert_eq!(&back["end"], &serde_json::json!(end));
            for (i, v) in vars.iter().enumerate() {
                prop_assert_eq!(&back["vars"][&names[i]], &serde_json::json!(v));
            }
            prop_assert_eq!(&back["id"], &serde_json::json!(m.id("q\"1").to_string()));
        }
    }

    #[test]
    fn json_line_parses() {
        let m = Match {
            query: 0,
            key: Value::str("a\"b"),
            start: 1,
            end: 2,
            rows: vec![],
            ends: vec![0, 0],
            emit: vec![],
            unverified: false,
        };
        let mut s = Vec::new();
        m.write_json(&mut s, "q", &["x", "y"]);
        let v: serde_json::Value = serde_json::from_slice(&s).unwrap();
        assert_eq!(v["key"], "a\"b");
        assert_eq!(v["vars"]["x"], serde_json::json!([]));
    }
}

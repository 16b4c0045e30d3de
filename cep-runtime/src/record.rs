//! Output lines as values: a [`Record`] is one line of a job's output (a
//! match, with its `EMIT` values, or a level alert that fired), read back
//! from the JSON the job writes.
//!
//! The lines are the one output every thread count produces alike (the
//! shards format their matches where they run them; with ordered output
//! the calling thread merges them in one thread's order), so a record read
//! from a line is the same whatever the threads; it costs a JSON parse per line (about a
//! microsecond), which a caller that wants text avoids with
//! [`Output::Lines`](crate::runtime::Output::Lines). [`RecordStream`] hands
//! records to async code as a [`futures_core::Stream`].
//!
//! Maps keep the order of the line (`vars` in `SEQ` order, `emit` in item
//! order); values inside an `EMIT` item (an event object) are
//! [`serde_json::Value`]s, whose objects list their keys sorted.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use futures_util::task::AtomicWaker;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One output line as a value.
///
/// # Examples
/// ```
/// use cep_runtime::record::Record;
///
/// let line = r#"{"query":"q1","key":7,"start":1,"end":2,"vars":{"a":[0],"b":[1]},"emit":{"n":2},"id":"00ff"}"#;
/// let Record::Match(m) = Record::parse(line).unwrap() else { panic!("a match") };
/// assert_eq!((m.query.as_str(), m.start, m.end), ("q1", 1, 2));
/// assert_eq!(m.rows("b"), Some(&[1u64][..]));
/// assert_eq!(m.emitted("n"), Some(&serde_json::json!(2)));
/// assert_eq!(serde_json::to_string(&Record::Match(m)).unwrap(), line);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Record {
    /// A match (LANGUAGE.md §5).
    Match(MatchRecord),
    /// A level alert that fired (LANGUAGE.md §4).
    Alert(AlertRecord),
}

/// A match as its line says it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchRecord {
    /// The statement's name.
    pub query: String,
    /// The partition value (`null` without a partition).
    pub key: serde_json::Value,
    /// ts of its first bound event.
    pub start: i64,
    /// ts of its last bound event (plus a trailing `NOT`'s quiet period).
    pub end: i64,
    /// Each positive variable with its rows, in `SEQ` order.
    pub vars: Ordered<Vec<u64>>,
    /// The `EMIT` items, in order (empty without `EMIT`).
    #[serde(default, skip_serializing_if = "Ordered::is_empty")]
    pub emit: Ordered<serde_json::Value>,
    /// A remote call on its way had no answer and took the failure
    /// policy's value (`--remote-failure true|false`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unverified: bool,
    /// The stable id (the same for the same query, key and rows).
    pub id: String,
}

impl MatchRecord {
    /// The rows bound to variable `var`, if the query has it.
    pub fn rows(&self, var: &str) -> Option<&[u64]> {
        self.vars.get(var).map(Vec::as_slice)
    }

    /// The value of `EMIT` item `name`, if there is one.
    pub fn emitted(&self, name: &str) -> Option<&serde_json::Value> {
        self.emit.get(name)
    }
}

/// A level alert that fired, as its line says it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertRecord {
    /// The alert's id.
    pub level: String,
    /// The key of the event that fired it.
    pub key: serde_json::Value,
    /// The event's ts.
    pub ts: i64,
    /// The event's row.
    pub row: u64,
    /// The value that crossed the level.
    pub value: serde_json::Value,
    /// `above`, `below`, `enter` or `exit`.
    pub direction: String,
}

/// A JSON object's entries in the order of the line (serde_json's own map
/// would sort them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<T> Ordered<T> {
    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&T> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v))
    }
}

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Entries<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered<T>, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Ordered(entries))
            }
        }
        d.deserialize_map(Entries(std::marker::PhantomData))
    }
}

/// A line that is not an output line of `cep` (it cannot come from a job;
/// the text says what is wrong).
#[derive(Debug)]
pub struct RecordError(serde_json::Error);

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not an output line of cep: {}", self.0)
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl Record {
    /// Reads one output line (without its newline).
    pub fn parse(line: &str) -> Result<Record, RecordError> {
        // Untagged enums buffer the line; the first key tells which it is.
        let r = if line.starts_with("{\"level\"") {
            serde_json::from_str(line).map(Record::Alert)
        } else {
            serde_json::from_str(line).map(Record::Match)
        };
        r.map_err(RecordError)
    }
}

/// The end a runtime writes records to, inside an
/// [`Output::Stream`](crate::runtime::Output::Stream) (see
/// [`RecordStream`]); dropping it ends the stream.
#[derive(Debug)]
pub struct StreamSender {
    tx: Option<Sender<Record>>,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    waker: AtomicWaker,
    closed: AtomicBool,
}

impl StreamSender {
    /// Sends `r`, waiting while the stream holds its capacity; false when
    /// the stream was dropped.
    pub(crate) fn send(&self, r: Record) -> bool {
        let tx = self.tx.as_ref().expect("taken only on drop");
        let sent = tx.send(r).is_ok();
        self.shared.waker.wake();
        sent
    }
}

impl Drop for StreamSender {
    fn drop(&mut self) {
        // The stream ends once it has taken what was sent.
        drop(self.tx.take());
        self.shared.closed.store(true, Ordering::Release);
        self.shared.waker.wake();
    }
}

/// The records of a [`Runtime`](crate::runtime::Runtime) as an async
/// [`Stream`](futures_core::Stream): it yields each output line as a
/// [`Record`] and ends when the runtime is finished (or dropped). Made by
/// [`Output::stream`](crate::runtime::Output::stream).
///
/// A full stream holds the runtime back (its `push` waits): push from
/// another thread than the one that polls the stream, or give the stream
/// room for all the output.
#[derive(Debug)]
pub struct RecordStream {
    rx: Receiver<Record>,
    shared: Arc<Shared>,
}

impl RecordStream {
    /// A stream holding at most `capacity` records before the runtime
    /// waits (`0`: no bound), and the end the runtime writes to.
    pub(crate) fn new(capacity: usize) -> (StreamSender, RecordStream) {
        let (tx, rx) =
            if capacity == 0 { crossbeam_channel::unbounded() } else { crossbeam_channel::bounded(capacity) };
        let shared = Arc::new(Shared::default());
        (StreamSender { tx: Some(tx), shared: shared.clone() }, RecordStream { rx, shared })
    }
}

impl futures_core::Stream for RecordStream {
    type Item = Record;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Record>> {
        let this = self.get_mut();
        for attempt in 0..2 {
            match this.rx.try_recv() {
                Ok(r) => return Poll::Ready(Some(r)),
                Err(TryRecvError::Disconnected) => return Poll::Ready(None),
                Err(TryRecvError::Empty) if attempt == 0 => {
                    // Registered before the second look: a record sent in
                    // between wakes this task.
                    this.shared.waker.register(cx.waker());
                }
                Err(TryRecvError::Empty) => {}
            }
        }
        if this.shared.closed.load(Ordering::Acquire) && this.rx.is_empty() {
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_and_write_out_as_they_were() {
        let lines = [
            r#"{"query":"q1","key":null,"start":0,"end":5,"vars":{"b":[2,3],"a":[0]},"id":"ab"}"#,
            r#"{"query":"q2","key":"X","start":0,"end":5,"vars":{"z":[]},"emit":{"top":9.5,"s":{"ts":1,"type":"T"}},"id":"cd"}"#,
            r#"{"level":"a1","key":1,"ts":2,"row":1,"value":3,"direction":"above"}"#,
        ];
        for line in lines {
            let r = Record::parse(line).unwrap();
            assert_eq!(serde_json::to_string(&r).unwrap(), line);
        }
        let Record::Match(m) = Record::parse(lines[0]).unwrap() else { panic!() };
        let names: Vec<&str> = m.vars.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["b", "a"], "the line's order, not sorted");
        assert!(m.emit.is_empty());
        let Record::Alert(a) = Record::parse(lines[2]).unwrap() else { panic!() };
        assert_eq!((a.level.as_str(), a.row), ("a1", 1));
    }

    #[test]
    fn other_lines_are_errors() {
        for line in ["", "{}", "[1]", r#"{"query":"q1"}"#, r#"{"level":"a","key":1}"#] {
            let e = Record::parse(line).unwrap_err();
            assert!(e.to_string().starts_with("not an output line of cep: "), "{e}");
        }
    }
}

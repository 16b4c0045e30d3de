//! The dynamic event read from text input.

use crate::{FieldId, Sym, Timestamp, Value};

/// An event: type, timestamp, input row number and field values.
///
/// `fields` is indexed by [`FieldId`] of the [`Schema`](crate::Schema) the
/// reader filled; a field the event lacks is [`Value::Null`]. Readers reuse
/// one `Event` per row, so reading allocates nothing per event.
///
/// # Examples
/// ```
/// use cep_core::{Event, Sym, Value};
/// let e = Event::new(Sym::new("Tick"), 1000, 0, vec![Value::Int(7), Value::Int(10250)]);
/// assert_eq!(e.get(1), Value::Int(10250));
/// assert_eq!(e.get(9), Value::Null);
/// ```
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// The event type (`Event` when the input has no `type`).
    pub ty: Sym,
    /// Event time.
    pub ts: Timestamp,
    /// Data row number in the input, from 0.
    pub row: u64,
    /// Field values by field id.
    pub fields: Vec<Value>,
}

impl Clone for Event {
    fn clone(&self) -> Event {
        Event { ty: self.ty, ts: self.ts, row: self.row, fields: self.fields.clone() }
    }

    /// Copies `source` into this event, reusing its field vector (no
    /// allocation when it is large enough). With as many fields as
    /// `source` (events of one schema, the usual case) the values are
    /// overwritten one at a time: `Vec::clone_from` calls `memcpy`, whose
    /// wide loads of fields the caller has just written wait until those
    /// stores reach the cache (a sixth of the calling thread's time on the
    /// sharded runtime's W5, which copies every event into its batch).
    #[inline]
    fn clone_from(&mut self, source: &Event) {
        self.ty = source.ty;
        self.ts = source.ts;
        self.row = source.row;
        if self.fields.len() == source.fields.len() {
            for (to, from) in self.fields.iter_mut().zip(&source.fields) {
                *to = *from;
            }
        } else {
            self.fields.clone_from(&source.fields);
        }
    }
}

impl Event {
    /// Builds an event.
    pub fn new(ty: Sym, ts: Timestamp, row: u64, fields: Vec<Value>) -> Event {
        Event { ty, ts, row, fields }
    }

    /// The value of a field, NULL when absent.
    #[inline]
    pub fn get(&self, field: FieldId) -> Value {
        // Not `get().copied().unwrap_or()`: that builds an `Option<Value>`
        // on the stack and copies it out piecewise, which stalls store
        // forwarding on every read of an engine's hot path.
        let i = field as usize;
        if i < self.fields.len() { self.fields[i] } else { Value::Null }
    }
}

impl Default for Event {
    /// An empty event of type `Event` at `ts` 0, row 0, for a reader to fill.
    fn default() -> Event {
        Event::new(Sym::new(DEFAULT_TYPE), 0, 0, Vec::new())
    }
}

/// The name of the type given to events without a `type` column or key.
pub const DEFAULT_TYPE: &str = "Event";

/// Events laid out flat, to hand from one thread to another: a fixed-size
/// head per event in one vector and every field value in another, so that
/// appending writes two sequential streams (whole cache lines, which a core
/// writes without first reading them from the core that last read them)
/// and reading them back reads two, instead of each event's own field
/// vector. Both vectors keep their memory when cleared.
///
/// # Examples
/// ```
/// use cep_core::{Event, FlatEvents, Sym, Value};
/// let mut flat = FlatEvents::default();
/// flat.push(&Event::new(Sym::new("A"), 10, 0, vec![Value::Int(1)]));
/// flat.push(&Event::new(Sym::new("B"), 20, 1, vec![Value::Int(2), Value::str("x")]));
/// let mut events = Vec::new();
/// let back = flat.unpack_into(&mut events, 100);
/// assert_eq!(back[1], Event::new(Sym::new("B"), 20, 101, vec![Value::Int(2), Value::str("x")]));
/// ```
#[derive(Clone, Debug, Default)]
pub struct FlatEvents {
    heads: Vec<FlatHead>,
    /// Field values. Each is copied in word by word ([`Value::to_words`],
    /// then [`Value::from_words`]): events are usually copied right after
    /// they were written, and a 16-byte load of a value written by two
    /// 8-byte stores stalls on store forwarding (a loop that writes three
    /// int fields and copies them in, as the parser does: 8.2 ns an event
    /// with a plain copy, 4–5 ns word by word). They are read back long after,
    /// so as whole values, in one slice copy: against decoding stored words,
    /// rebuilding on W5 (`cep run --threads 2`, 3 M rows) took 53
    /// instructions an event instead of 67, the whole run 3,941 M instead of
    /// 3,992 M (callgrind; the wall time moved less than the host's noise).
    values: Vec<Value>,
}

/// A position in a [`FlatEvents`]: an event's index and that of its first
/// field value, for [`FlatEvents::unpack_chunk`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlatCursor {
    event: usize,
    value: usize,
}

impl FlatCursor {
    /// The index of the event it is at.
    pub fn index(&self) -> usize {
        self.event
    }
}

/// An event without its fields. `ts` and `row` are kept apart (`repr(C)`,
/// in this order) so that copying them is two 8-byte loads, not one 16-byte
/// load that store forwarding cannot serve.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct FlatHead {
    ts: Timestamp,
    ty: Sym,
    /// How many fields it has (they follow the previous event's).
    fields: u32,
    row: u64,
}

impl FlatEvents {
    /// Appends a copy of `e`.
    #[inline]
    pub fn push(&mut self, e: &Event) {
        let fields = e.fields.len() as u32;
        self.heads.push(FlatHead { ts: e.ts, ty: e.ty, fields, row: e.row });
        self.values.extend(e.fields.iter().map(|v| Value::from_words(v.to_words())));
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// Room for `events` more events with `values` more field values in all.
    pub fn reserve(&mut self, events: usize, values: usize) {
        self.heads.reserve(events);
        self.values.reserve(values);
    }

    /// Whether there is no event.
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// Event `i`'s `ts`.
    pub fn ts(&self, i: usize) -> Timestamp {
        self.heads[i].ts
    }

    /// Removes every event, keeping the memory.
    pub fn clear(&mut self) {
        self.heads.clear();
        self.values.clear();
    }

    /// The events rebuilt into the first [`len`](Self::len) of `events`
    /// (grown as needed; each keeps its field vector, so nothing is
    /// allocated once they are big enough), with `row_base` added to each
    /// row.
    pub fn unpack_into<'a>(&self, events: &'a mut Vec<Event>, row_base: u64) -> &'a [Event] {
        self.unpack_chunk(FlatCursor::default(), self.len(), events, row_base).0
    }

    /// Up to `n` events from `from` on (a [`FlatCursor::default`] for the
    /// first, then the cursor the call before returned, on these same
    /// events) rebuilt as [`unpack_into`](Self::unpack_into) does, and where
    /// the next ones start. Rebuilding a few at a time, each few used before
    /// the next, keeps them in the nearest cache, where a whole block's
    /// would not fit.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, FlatCursor, FlatEvents, Sym, Value};
    /// let mut flat = FlatEvents::default();
    /// for i in 0..5 {
    ///     flat.push(&Event::new(Sym::new("A"), i, i as u64, vec![Value::Int(i)]));
    /// }
    /// let (mut events, mut from, mut rows) = (Vec::new(), FlatCursor::default(), Vec::new());
    /// while from.index() < flat.len() {
    ///     let (chunk, next) = flat.unpack_chunk(from, 2, &mut events, 0);
    ///     rows.push(chunk.iter().map(|e| e.row).collect::<Vec<_>>());
    ///     from = next;
    /// }
    /// assert_eq!(rows, [vec![0, 1], vec![2, 3], vec![4]]);
    /// ```
    pub fn unpack_chunk<'a>(
        &self,
        from: FlatCursor,
        n: usize,
        events: &'a mut Vec<Event>,
        row_base: u64,
    ) -> (&'a [Event], FlatCursor) {
        let heads = &self.heads[from.event.min(self.heads.len())..];
        let heads = &heads[..n.min(heads.len())];
        if events.len() < heads.len() {
            events.resize_with(heads.len(), Event::default);
        }
        let mut values = &self.values[from.value..];
        for (h, e) in heads.iter().zip(events.iter_mut()) {
            let (fields, rest) = values.split_at(h.fields as usize);
            values = rest;
            h.unpack(fields, e);
            e.row += row_base;
        }
        let next = FlatCursor { event: from.event + heads.len(), value: self.values.len() - values.len() };
        (&events[..heads.len()], next)
    }

    /// Rebuilds event `i`, whose fields start at value `at`, into `e`
    /// (reading the events in order: `at` is 0 for the first, and each call
    /// returns the next event's).
    pub fn read(&self, i: usize, at: usize, e: &mut Event) -> usize {
        let h = &self.heads[i];
        let end = at + h.fields as usize;
        h.unpack(&self.values[at..end], e);
        end
    }
}

impl FlatHead {
    /// Rebuilds its event, with field values `fields`, into `e`.
    #[inline]
    fn unpack(&self, fields: &[Value], e: &mut Event) {
        (e.ty, e.ts, e.row) = (self.ty, self.ts, self.row);
        e.fields.clear();
        e.fields.extend_from_slice(fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `clone_from` copies exactly whether the widths agree (values
    /// overwritten in place) or not (the vector cloned).
    #[test]
    fn clone_from_copies_every_width() {
        let event = |ty: &str, ts: i64, fields: Vec<Value>| Event::new(Sym::new(ty), ts, ts as u64 + 7, fields);
        let sources = [
            event("A", 1, vec![Value::Int(1), Value::str("x")]),
            event("B", 2, vec![Value::Float(2.5), Value::Null]),
            event("A", 3, vec![]),
            event("C", 4, vec![Value::Bool(true), Value::Int(-4), Value::str("y")]),
            event("D", 5, vec![Value::Int(5), Value::Int(6), Value::Int(7)]),
        ];
        let mut e = Event::default();
        for source in &sources {
            e.clone_from(source);
            assert_eq!(&e, source);
        }
    }

    /// Rebuilding a few events at a time, whatever the few, gives the events
    /// rebuilding all at once gives, of every width (and so every run of
    /// field values).
    #[test]
    fn chunks_rebuild_what_the_whole_does() {
        let mut flat = FlatEvents::default();
        for i in 0..23i64 {
            let fields = (0..i % 4).map(|j| if j == 2 { Value::str("s") } else { Value::Int(i * 10 + j) }).collect();
            flat.push(&Event::new(Sym::new(if i % 3 == 0 { "A" } else { "B" }), i, i as u64, fields));
        }
        let whole = flat.unpack_into(&mut Vec::new(), 1000).to_vec();
        for n in [1, 2, 5, 22, 23, 64] {
            let (mut events, mut from, mut got) = (Vec::new(), FlatCursor::default(), Vec::new());
            while from.index() < flat.len() {
                let (chunk, next) = flat.unpack_chunk(from, n, &mut events, 1000);
                assert!(!chunk.is_empty() && chunk.len() <= n);
                got.extend_from_slice(chunk);
                from = next;
            }
            assert_eq!(got, whole, "chunks of {n}");
        }
        let mut events = Vec::new();
        let (rest, end) = flat.unpack_chunk(FlatCursor { event: 23, value: flat.values.len() }, 8, &mut events, 0);
        assert!(rest.is_empty());
        assert_eq!(end.index(), 23);
    }
}

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
    /// allocation when it is large enough).
    fn clone_from(&mut self, source: &Event) {
        self.ty = source.ty;
        self.ts = source.ts;
        self.row = source.row;
        self.fields.clone_from(&source.fields);
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

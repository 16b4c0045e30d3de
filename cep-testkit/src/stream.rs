//! Hand-written streams for tests: a schema of named fields and events
//! appended one by one, each numbered by its position (its row).

use cep_core::{Event, Schema, Sym, Value};

/// A stream over the given fields.
///
/// # Examples
/// ```
/// use cep_core::Value;
/// use cep_testkit::Stream;
///
/// let s = Stream::new(&["k", "x"]).ev("A", 5, &[Value::Int(1)]).ev("B", 6, &[Value::Int(1), Value::Int(3)]);
/// assert_eq!(s.events.len(), 2);
/// assert_eq!(s.events[0].fields, [Value::Int(1), Value::Null]); // a missing tail is NULL
/// assert_eq!(s.events[1].row, 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Stream {
    /// The fields, and the types the events showed.
    pub schema: Schema,
    /// The events, in order.
    pub events: Vec<Event>,
}

impl Stream {
    /// An empty stream over `fields` (ids in that order).
    pub fn new(fields: &[&str]) -> Stream {
        let mut schema = Schema::new();
        for f in fields {
            schema.field(f);
        }
        Stream { schema, events: Vec::new() }
    }

    /// Appends an event of type `ty` at `ts`; `vals` in field order (a
    /// missing tail is NULL); its row is its index.
    pub fn ev(mut self, ty: &str, ts: i64, vals: &[Value]) -> Stream {
        let mut fields = vals.to_vec();
        fields.resize(self.schema.field_count(), Value::Null);
        let row = self.events.len() as u64;
        self.schema.observe(Sym::new(ty), &fields);
        self.events.push(Event::new(Sym::new(ty), ts, row, fields));
        self
    }
}

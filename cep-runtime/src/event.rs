//! Events built by field name against a schema ([`EventBuilder`], from
//! [`Runtime::event`](crate::runtime::Runtime::event)), and the error of an
//! event that does not fit it ([`EventError`]).

use std::fmt;

use cep_core::{Event, Schema, Sym, Timestamp, Value};

/// Why an event does not fit the runtime's schema.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventError {
    /// A field name the schema does not know.
    UnknownField {
        /// The name given.
        field: String,
        /// The schema's fields, in id order.
        known: Vec<String>,
    },
    /// An event with more field values than the schema has fields.
    TooManyFields {
        /// The event's field values.
        given: usize,
        /// The schema's fields.
        known: usize,
    },
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::UnknownField { field, known } if known.is_empty() => {
                write!(f, "unknown field `{field}`: the schema has no fields")
            }
            EventError::UnknownField { field, known } => {
                write!(f, "unknown field `{field}`; the schema's fields are: {}", known.join(", "))
            }
            EventError::TooManyFields { given, known } => {
                write!(f, "the event has {given} field values, the schema only {known} fields")
            }
        }
    }
}

impl std::error::Error for EventError {}

/// The error of an event with more values than `schema` has fields.
pub(crate) fn check_width(e: &Event, schema: &Schema) -> Result<(), EventError> {
    let known = schema.field_count();
    if e.fields.len() > known { Err(EventError::TooManyFields { given: e.fields.len(), known }) } else { Ok(()) }
}

fn unknown(field: &str, schema: &Schema) -> EventError {
    EventError::UnknownField { field: field.to_owned(), known: schema.field_names().map(str::to_owned).collect() }
}

/// An event under construction, its fields set by name (see
/// [`Runtime::event`](crate::runtime::Runtime::event)). Fields not set
/// are NULL.
#[derive(Debug)]
pub struct EventBuilder<'a> {
    schema: &'a Schema,
    event: Event,
}

impl<'a> EventBuilder<'a> {
    /// An event of type `ty` at `ts`, row `row`, all fields NULL.
    pub fn new(schema: &'a Schema, ty: &str, ts: Timestamp, row: u64) -> EventBuilder<'a> {
        let event = Event::new(Sym::new(ty), ts, row, vec![Value::Null; schema.field_count()]);
        EventBuilder { schema, event }
    }

    /// Sets field `field`; an error names a field the schema does not know
    /// and lists those it does.
    pub fn set(mut self, field: &str, value: impl Into<Value>) -> Result<Self, EventError> {
        let id = self.schema.lookup(field).ok_or_else(|| unknown(field, self.schema))?;
        // `fields` has one slot per field of the schema: `id` is in it.
        if let Some(slot) = self.event.fields.get_mut(id as usize) {
            *slot = value.into();
        }
        Ok(self)
    }

    /// Sets the row number (default: the number of events pushed so far).
    pub fn row(mut self, row: u64) -> Self {
        self.event.row = row;
        self
    }

    /// The event.
    pub fn build(self) -> Event {
        self.event
    }
}

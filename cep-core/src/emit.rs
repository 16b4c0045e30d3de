//! What a match carries besides its rows: the values of a query's `EMIT`
//! items (LANGUAGE.md §5, "What a match carries").
//!
//! An item is an expression evaluated on the final match (a [`Value`]), or
//! `x.*`: the event bound to `x` as an object ([`EventObject`]), an array of
//! them for a Kleene variable, or null for an absent `?`. They live here,
//! beside [`Match`](crate::Match), so that every crate that writes or
//! compares matches sees one type; the names of the items belong to the
//! query, not to each match, and are passed to
//! [`Match::write_json_emit`](crate::Match::write_json_emit).

use crate::{Event, Sym, Timestamp, Value, json};

/// A bound event as `x.*` shows it: its type, its ts and its non-NULL
/// fields, in schema order (field id order). The row is not repeated: it is
/// already in the match's `vars`.
///
/// # Examples
/// ```
/// use cep_core::{Event, EventObject, Sym, Value};
/// let names = [Sym::new("key"), Sym::new("price"), Sym::new("vol")];
/// let e = Event::new(Sym::new("Tick"), 21000, 3, vec![Value::Int(1), Value::Null, Value::Int(5000)]);
/// let o = EventObject::of(&e, &names);
/// let mut out = Vec::new();
/// o.write_json(&mut out);
/// assert_eq!(out, br#"{"type":"Tick","ts":21000,"key":1,"vol":5000}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventObject {
    /// The event type.
    pub ty: Sym,
    /// Event time.
    pub ts: Timestamp,
    /// The non-NULL fields with their names, in schema order.
    pub fields: Vec<(Sym, Value)>,
}

impl EventObject {
    /// The object of `e`, whose field `i` is named `names[i]` (fields
    /// beyond `names` are left out: a name the caller does not know cannot
    /// be printed).
    pub fn of(e: &Event, names: &[Sym]) -> EventObject {
        let fields = e.fields.iter().zip(names).filter(|(v, _)| !v.is_null()).map(|(v, name)| (*name, *v)).collect();
        EventObject { ty: e.ty, ts: e.ts, fields }
    }

    /// Appends the object as JSON: `{"type":…,"ts":…,` then the fields.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":");
        json::write_str(out, self.ty.as_str());
        out.extend_from_slice(b",\"ts\":");
        json::write_i64(out, self.ts);
        for (name, v) in &self.fields {
            out.push(b',');
            json::write_str(out, name.as_str());
            out.push(b':');
            json::write_value(out, v);
        }
        out.push(b'}');
    }
}

/// The value of one `EMIT` item on one match.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EmitValue {
    /// An expression's value (NULL prints as `null`).
    Value(Value),
    /// `x.*` of a single-event variable.
    Event(EventObject),
    /// `x.*` of a Kleene variable: its events in binding order (`[]` when
    /// it bound none).
    Events(Vec<EventObject>),
    /// `x.*` of an absent `?`.
    Null,
}

impl EmitValue {
    /// Appends the value as JSON.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{EmitValue, Value};
    /// let mut out = Vec::new();
    /// EmitValue::Value(Value::Float(2.5)).write_json(&mut out);
    /// out.push(b' ');
    /// EmitValue::Events(Vec::new()).write_json(&mut out);
    /// out.push(b' ');
    /// EmitValue::Null.write_json(&mut out);
    /// assert_eq!(out, b"2.5 [] null");
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            EmitValue::Value(v) => json::write_value(out, v),
            EmitValue::Event(o) => o.write_json(out),
            EmitValue::Events(os) => {
                out.push(b'[');
                for (i, o) in os.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    o.write_json(out);
                }
                out.push(b']');
            }
            EmitValue::Null => out.extend_from_slice(b"null"),
        }
    }
}

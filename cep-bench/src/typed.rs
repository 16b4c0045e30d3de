//! What the W2 and W3 streams share: events that carry only a type and a
//! timestamp (`ts = row`), a complete schema of their types, and CSV with
//! the columns `type,ts`.

use std::io::{self, Write};

use cep_core::{Event, Schema, Sym};

/// A complete schema with these types and no fields.
pub fn schema(types: &[&str]) -> Schema {
    let mut s = Schema::new();
    s.close_fields();
    for t in types {
        s.observe(Sym::new(t), &[]);
    }
    s.set_complete(true);
    s
}

/// Fills `e` with a field-less event, reusing its buffer.
#[inline]
pub fn fill(e: &mut Event, ty: Sym, ts: i64, row: u64) {
    e.ty = ty;
    e.ts = ts;
    e.row = row;
    e.fields.clear();
}

/// Writes `(type name, ts)` pairs as CSV with a `type,ts` header.
pub fn write_csv(out: &mut impl Write, events: impl Iterator<Item = (&'static str, i64)>) -> io::Result<()> {
    writeln!(out, "type,ts")?;
    for (ty, ts) in events {
        writeln!(out, "{ty},{ts}")?;
    }
    Ok(())
}

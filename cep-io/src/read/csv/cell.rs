//! Typing CSV cells into an event's fields (LANGUAGE.md §1): the general
//! path for any record the fast path does not take.

use super::*;

/// Types one trimmed, non-empty field cell, already classified, straight
/// into `out` (an event's field: returning a `Value` through a `Result` made
/// the caller reload the two words just stored as one 16-byte load, which
/// stalled store forwarding on every cell). Out of line: the event reader
/// stores an integer, the common case, itself, and calls this for the rest.
/// The only error is invalid UTF-8 in a string: no value makes a bad row.
#[inline(never)]
pub(crate) fn lexeme_into(
    lexeme: Lexeme,
    cell: &[u8],
    column: &str,
    strings: &mut StrCache,
    out: &mut Value,
) -> Result<(), String> {
    match lexeme {
        Lexeme::Int(Some(i)) => *out = Value::Int(i),
        // An integer literal that does not fit an `i64` is a float literal.
        Lexeme::Int(None) | Lexeme::Float => {
            match float_of(cell) {
                Some(f) => *out = Value::Float(f),
                // Beyond the `f64` range (`1e400`): no float can hold it
                // (values are finite), and LANGUAGE.md §1 makes no bad row
                // of a cell's value, so it falls through to the last kind,
                // a string of its text.
                _ => *out = Value::Str(strings.intern(cell).ok_or_else(|| invalid_utf8(column))?),
            }
        }
        Lexeme::Other => match cell {
            b"true" => *out = Value::Bool(true),
            b"false" => *out = Value::Bool(false),
            _ => *out = Value::Str(strings.intern(cell).ok_or_else(|| invalid_utf8(column))?),
        },
    }
    Ok(())
}

/// The message for a cell of `column` that is not UTF-8.
#[cold]
pub(crate) fn invalid_utf8(column: &str) -> String {
    format!("invalid UTF-8 in column `{column}`")
}

/// Types the cells of a CSV record (ranges of `bytes`) into `event`; a bad
/// row's message.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn fill_event(
    cols: &[Col],
    names: &[Box<str>],
    bytes: &[u8],
    cells: &[(usize, usize)],
    event: &mut Event,
    schema: &Schema,
    strings: &mut StrCache,
    default_ty: Sym,
) -> Result<(), String> {
    if cells.len() != cols.len() {
        return Err(format!("expected {} cells, found {}", cols.len(), cells.len()));
    }
    event.fields.clear();
    event.fields.resize(schema.field_count(), Value::Null);
    let mut ts = None;
    let mut ty = default_ty;
    for (i, &(a, b)) in cells.iter().enumerate() {
        let cell = bytes[a..b].trim_ascii();
        match cols[i] {
            Col::Ts => {
                if cell.is_empty() {
                    continue;
                }
                match classify(cell) {
                    Lexeme::Int(Some(t)) => ts = Some(t),
                    Lexeme::Int(None) => return Err(format!("`ts` `{}` does not fit in 64 bits", show(cell))),
                    _ => return Err(format!("`ts` is not an integer: `{}`", show(cell))),
                }
            }
            Col::Type => {
                if !cell.is_empty() {
                    match strings.intern(cell) {
                        Some(sym) => ty = sym,
                        None => return Err("invalid UTF-8 in column `type`".to_owned()),
                    }
                }
            }
            Col::Skip => {
                // Invalid UTF-8 is a bad row whatever the column; any other
                // cell is a value of some kind.
                if std::str::from_utf8(cell).is_err() {
                    return Err(invalid_utf8(&names[i]));
                }
            }
            Col::Field(id) => {
                if !cell.is_empty() {
                    let out = &mut event.fields[id as usize];
                    match classify(cell) {
                        Lexeme::Int(Some(v)) => *out = Value::Int(v),
                        other => lexeme_into(other, cell, &names[i], strings, out)?,
                    }
                }
            }
        }
    }
    let Some(ts) = ts else {
        return Err("missing `ts`".to_owned());
    };
    event.ty = ty;
    event.ts = ts;
    Ok(())
}

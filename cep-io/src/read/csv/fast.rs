//! The one-pass path for a *simple line* (no quote, the header's number of
//! cells, whole in the buffer): split and typed in one pass over its bytes,
//! which is nearly every record of an event file.

use super::*;

/// Reads the record at the start of `buf` into `event` in one pass over its
/// bytes, if it is a *simple line*: ended by a newline within `buf` and
/// within `max` bytes, not blank, with the header's number of cells, an
/// integer `ts`, and only ASCII above the space other than the quote (so no
/// cell has quotes, blanks to trim or bytes to check as UTF-8). Returns where its
/// newline is; `None`, leaving `event` to be filled again, for any other
/// record, which [`fill_event`] then reads after the cells are split.
///
/// Such lines are nearly every line of an event file. Integer cells of up
/// to 18 digits are read as the scan passes their digits; any other cell is
/// typed as [`fill_event`] types it. Splitting the cells first and then
/// typing each (trimming it, telling its kind, reading its digits) goes over
/// each byte three times (see docs/perf-log.md, 2026-12-03, CSV simple
/// lines).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn simple_record(
    buf: &[u8],
    max: usize,
    cols: &[Col],
    names: &[Box<str>],
    event: &mut Event,
    schema: &Schema,
    strings: &mut StrCache,
    default_ty: Sym,
) -> Option<usize> {
    let bytes = &buf[..buf.len().min(max.saturating_add(1))];
    if matches!(bytes.first(), None | Some(b'\n' | b'\r')) {
        // The end of the input, or a line the records' reader may skip as
        // blank (`\n`, or `\r` then the end of the line): if nothing else
        // follows, the end of the input, which must leave `event` as it was
        // (a line declined later has its event filled again, or is a bad
        // row or a fatal error).
        return None;
    }
    event.fields.clear();
    event.fields.resize(schema.field_count(), Value::Null);
    let (mut ts, mut ty) = (None, default_ty);
    let mut at = 0;
    for (i, &col) in cols.iter().enumerate() {
        let start = at;
        let neg = bytes.get(at) == Some(&b'-');
        at += usize::from(neg);
        let (digits, v) = leading_digits(&bytes[at..]);
        at += digits;
        // The rest of the cell, up to its delimiter.
        let mut plain = true;
        let end = loop {
            match *bytes.get(at)? {
                b @ (b',' | b'\n') => break b,
                b if b <= b' ' || b == b'"' || b >= 0x80 => return None,
                _ => {
                    plain = false;
                    at += 1;
                }
            }
        };
        // Exactly what `classify` makes an `Int` without checks.
        let int = (plain && (1..=18).contains(&digits)).then_some(if neg { v.wrapping_neg() } else { v });
        let cell = &bytes[start..at];
        match col {
            Col::Ts => ts = Some(int?),
            Col::Type => {
                if !cell.is_empty() {
                    ty = strings.intern(cell)?;
                }
            }
            Col::Skip => {}
            Col::Field(id) => {
                let out = &mut event.fields[id as usize];
                match int {
                    Some(v) => *out = Value::Int(v),
                    None if cell.is_empty() => {}
                    None => lexeme_into(classify(cell), cell, &names[i], strings, out).ok()?,
                }
            }
        }
        if end == b'\n' {
            if i + 1 != cols.len() {
                return None;
            }
            (event.ty, event.ts) = (ty, ts?);
            return Some(at);
        }
        at += 1;
    }
    // More cells than columns.
    None
}

/// How many decimal digits `bytes` starts with, and their value (wrapped
/// past 18 digits: the simple paths of both formats take no more), read in
/// one pass.
#[inline(always)]
pub(crate) fn leading_digits(bytes: &[u8]) -> (usize, i64) {
    let mut v: i64 = 0;
    for (n, &b) in bytes.iter().enumerate() {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return (n, v);
        }
        v = v.wrapping_mul(10).wrapping_add(i64::from(d));
    }
    (bytes.len(), v)
}

//! Minimal JSON writing for the output format (LANGUAGE.md §5).
//!
//! Output lines are written by hand into a reused `String`: it is the hot
//! path of a run that emits many matches, and the format is fixed. Not
//! through `core::fmt`: its machinery (a `Formatter`, padding, a call per
//! piece) took two thirds of the time of `cep run` on a query that matched
//! every event two or three times, about 2,900 instructions a line.
//! Integers go through `itoa`, a match id's hex digits through a table,
//! and a string that needs no escape is copied whole.

use crate::Value;
use std::fmt::Write;

/// Appends `s` as a JSON string literal (quoted, escaped).
#[inline]
pub fn write_str(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        write_escaped(out, s);
    }
}

/// [`write_str`] for a string with something to escape.
#[inline(never)]
fn write_escaped(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends an integer in decimal.
#[inline]
pub fn write_int(out: &mut String, i: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(i));
}

/// Appends `x` as 32 lower-case hex digits (a match id).
///
/// # Examples
/// ```
/// let mut s = String::new();
/// cep_core::json::write_hex128(&mut s, 0xab);
/// assert_eq!(s, "000000000000000000000000000000ab");
/// ```
#[inline]
pub fn write_hex128(out: &mut String, x: u128) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(32);
    for shift in (0..32).rev().map(|i| 4 * i) {
        out.push(DIGITS[(x >> shift) as usize & 0xf] as char);
    }
}

/// Appends a value as JSON: NULL as `null`, strings quoted, floats with
/// enough digits to read back exactly.
pub fn write_value(out: &mut String, v: &Value) {
    match *v {
        Value::Null => out.push_str("null"),
        Value::Int(i) => write_int(out, i),
        Value::Float(f) => write_f64(out, f),
        Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Value::Str(s) => write_str(out, s.as_str()),
    }
}

fn write_f64(out: &mut String, f: f64) {
    if f.is_finite() {
        // `{:?}` is the shortest representation that round-trips and always
        // has a `.` or an exponent, so the reader sees a float again.
        let _ = write!(out, "{f:?}");
    } else {
        out.push_str("null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_and_quote() {
        let mut s = String::new();
        write_str(&mut s, "a\"b\\c\nd\u{1}");
        assert_eq!(s, r#""a\"b\\c\nd\u0001""#);
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\"b\\c\nd\u{1}");
    }

    #[test]
    fn floats_round_trip() {
        for f in [0.1, 1.0, -2.5e-300, 1e300, 123456.789] {
            let mut s = String::new();
            write_value(&mut s, &Value::Float(f));
            let back: f64 = serde_json::from_str(&s).unwrap();
            assert_eq!(back, f);
        }
    }
}

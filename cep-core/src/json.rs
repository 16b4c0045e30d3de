//! Minimal JSON writing for the output format (LANGUAGE.md §5).
//!
//! Output lines are written by hand into a reused `String`: it is the hot
//! path of a run that emits many matches, and the format is fixed.

use crate::Value;
use std::fmt::Write;

/// Appends `s` as a JSON string literal (quoted, escaped).
pub fn write_str(out: &mut String, s: &str) {
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

/// Appends a value as JSON: NULL as `null`, strings quoted, floats with
/// enough digits to read back exactly.
pub fn write_value(out: &mut String, v: &Value) {
    match *v {
        Value::Null => out.push_str("null"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
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

//! Minimal JSON writing for the output format (LANGUAGE.md §5).
//!
//! Output lines are written by hand into a reused byte vector: it is the
//! hot path of a run that emits many matches, and the format is fixed. Not
//! through `core::fmt`: its machinery (a `Formatter`, padding, a call per
//! piece) took two thirds of the time of `cep run` on a query that matched
//! every event two or three times, about 2,900 instructions a line.
//!
//! Bytes, not a `String`: a `String` takes bytes only through a UTF-8 check
//! or one `char` at a time (a match id's 32 hex digits pushed as chars cost
//! six times a copy of them). Pieces of a known size are copied as arrays,
//! which the compiler turns into a few moves instead of a call to `memcpy`:
//! a number's digits are written into a small array and copied as a window
//! of 8 or 20 bytes of it, the vector then cut back to the digits.
//!
//! # Examples
//! ```
//! use cep_core::json;
//! let mut line = Vec::new();
//! json::write_str(&mut line, "tick \"A\"");
//! line.push(b' ');
//! json::write_i64(&mut line, -42);
//! line.push(b' ');
//! json::write_hex128(&mut line, 0xab);
//! assert_eq!(line, br#""tick \"A\"" -42 000000000000000000000000000000ab"#);
//! ```

use crate::Value;
use std::io::Write as _;

/// Appends `s` as a JSON string literal (quoted, escaped).
#[inline]
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        write_escaped(out, s);
    }
}

/// [`write_str`] for a string with something to escape.
#[inline(never)]
fn write_escaped(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out.push(b'"');
}

/// The two digits of each number below 100, in turn.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `v` in decimal.
///
/// The digits are written two at a time from the right into an array, and
/// copied out as a window of fixed size (8 bytes, or 20 for a longer
/// number) that the vector is then cut back from.
#[inline]
pub fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    // The digits end at `END`; the window past them stays in the array.
    const END: usize = 20;
    let mut buf = [0u8; END + 20];
    let mut at = END;
    while v >= 100 {
        let pair = 2 * (v % 100) as usize;
        v /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = 2 * v as usize;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + v as u8;
    }
    let (len, digits) = (out.len(), END - at);
    if digits <= 8 {
        out.extend_from_slice(&buf[at..at + 8]);
    } else {
        out.extend_from_slice(&buf[at..at + 20]);
    }
    out.truncate(len + digits);
}

/// Appends `v` in decimal.
#[inline]
pub fn write_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    write_u64(out, v.unsigned_abs());
}

/// Appends `x` as 32 lower-case hex digits (a match id).
///
/// # Examples
/// ```
/// let mut s = Vec::new();
/// cep_core::json::write_hex128(&mut s, 0x1234_5678_9abc_def0 << 64 | 0xab);
/// assert_eq!(s, b"123456789abcdef000000000000000ab");
/// ```
#[inline]
pub fn write_hex128(out: &mut Vec<u8>, x: u128) {
    let mut digits = [0u8; 32];
    for (i, chunk) in digits.chunks_exact_mut(8).enumerate() {
        chunk.copy_from_slice(&hex8((x >> (96 - 32 * i)) as u32));
    }
    out.extend_from_slice(&digits);
}

/// The 8 hex digits of `n`, most significant first: each nibble spread
/// into a byte of its own, then all eight made digits at once.
#[inline(always)]
fn hex8(n: u32) -> [u8; 8] {
    let n = u64::from(n);
    let v = (n & 0xffff_0000) << 16 | (n & 0xffff);
    let v = (v & 0x0000_ff00_0000_ff00) << 8 | (v & 0x0000_00ff_0000_00ff);
    let v = (v & 0x00f0_00f0_00f0_00f0) << 4 | (v & 0x000f_000f_000f_000f);
    // A nibble of 10 or more carries into bit 4 when 6 is added; those
    // get the distance from after '9' to 'a' on top of '0'.
    let letters = ((v + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    (v + 0x3030_3030_3030_3030 + letters * (b'a' - b'9' - 1) as u64).to_be_bytes()
}

/// Appends a value as JSON: NULL as `null`, strings quoted, floats with
/// enough digits to read back exactly.
pub fn write_value(out: &mut Vec<u8>, v: &Value) {
    match *v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Int(i) => write_i64(out, i),
        Value::Float(f) => write_f64(out, f),
        Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::Str(s) => write_str(out, s.as_str()),
    }
}

fn write_f64(out: &mut Vec<u8>, f: f64) {
    if f.is_finite() {
        // `{:?}` is the shortest representation that round-trips and always
        // has a `.` or an exponent, so the reader sees a float again.
        let _ = write!(out, "{f:?}");
    } else {
        out.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = b"x".to_vec();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_control_and_quote() {
        let s = text(|o| write_str(o, "a\"b\\c\nd\u{1}é"));
        assert_eq!(s, r#"x"a\"b\\c\nd\u0001é""#);
        let back: String = serde_json::from_str(&s[1..]).unwrap();
        assert_eq!(back, "a\"b\\c\nd\u{1}é");
    }

    #[test]
    fn floats_round_trip() {
        for f in [0.1, 1.0, -2.5e-300, 1e300, 123456.789] {
            let s = text(|o| write_value(o, &Value::Float(f)));
            let back: f64 = serde_json::from_str(&s[1..]).unwrap();
            assert_eq!(back, f);
        }
    }

    #[test]
    fn integers_at_every_length() {
        let mut v = 1u64;
        for digits in 1..=20 {
            for n in [v - 1, v, v.saturating_mul(9) / 9 * 9, v.saturating_mul(10).saturating_sub(1)] {
                assert_eq!(text(|o| write_u64(o, n)), format!("x{n}"), "{digits} digits");
            }
            v = v.saturating_mul(10);
        }
        for n in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX] {
            assert_eq!(text(|o| write_i64(o, n)), format!("x{n}"));
        }
    }

    proptest! {
        #[test]
        fn integers_as_display(u in any::<u64>(), i in any::<i64>(), shift in 0u32..64) {
            prop_assert_eq!(text(|o| write_u64(o, u >> shift)), format!("x{}", u >> shift));
            prop_assert_eq!(text(|o| write_i64(o, i >> shift)), format!("x{}", i >> shift));
        }

        #[test]
        fn hex_as_format(x in any::<u128>(), shift in 0u32..128) {
            prop_assert_eq!(text(|o| write_hex128(o, x >> shift)), format!("x{:032x}", x >> shift));
        }
    }
}

//! Minimal JSON writing for the output format (LANGUAGE.md §5).
//!
//! Output lines are written by hand into a reused byte vector: it is the
//! hot path of a run that emits many matches, and the format is fixed. Not
//! through `core::fmt`: its machinery (a `Formatter`, padding, a call per
//! piece) took two thirds of the time of `cep run` on a query that matched
//! every event two or three times, about 2,900 instructions a line.
//!
//! Bytes, not a `String`: a `String` takes bytes only through a UTF-8 check
//! or one `char` at a time (a match id's 32 hex digits pushed as chars took
//! 634 instructions, checked and copied as a `&str` 100). Pieces of a known size are copied as arrays,
//! which the compiler turns into a few moves instead of a call to `memcpy`:
//! a number's digits are made eight at a time in a word, which is copied
//! whole, the vector then cut back to the digits.
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

/// `'0'` in every byte.
const ZEROS: u64 = 0x3030_3030_3030_3030;

/// Appends `v` in decimal.
///
/// The digits are made in a word, eight at a time, and the
/// word is copied out whole and the vector cut back to the digits: no byte
/// goes through memory twice (digits stored one or two at a time and read
/// back as one word stall until the stores reach the cache: a table-driven
/// version spent 10 ns a number that way) and no copy has a length known
/// only at run time.
#[inline]
pub fn write_u64(out: &mut Vec<u8>, v: u64) {
    if v < 100_000_000 {
        let digits = digits8(v as u32);
        // The leading zeros are the low bytes that are 0 (one kept for 0).
        let lead = (digits.trailing_zeros() / 8).min(7);
        push_word(out, (digits + ZEROS) >> (8 * lead), 8 - lead as usize);
    } else {
        write_long(out, v);
    }
}

/// [`write_u64`] of a number of nine digits or more.
#[inline(never)]
fn write_long(out: &mut Vec<u8>, v: u64) {
    const E8: u64 = 100_000_000;
    let (high, low) = (v / E8, v % E8);
    if high < E8 {
        write_u64(out, high);
    } else {
        // `u64::MAX / 10^16` is below 10^4.
        write_u64(out, high / E8);
        push_word(out, digits8((high % E8) as u32) + ZEROS, 8);
    }
    push_word(out, digits8(low as u32) + ZEROS, 8);
}

/// The eight decimal digits of `v` (below 10^8), each as a number in a
/// byte of its own, the most significant in the lowest byte (the first in
/// memory). Halves, then quarters, then single digits, each step dividing
/// every lane of the word at once by a multiplication and a shift (exact
/// in the lanes' ranges: below 10^4 for `/ 100`, below 100 for `/ 10`, and
/// no lane's product reaches the next lane).
#[inline(always)]
fn digits8(v: u32) -> u64 {
    let v = u64::from(v);
    // 32-bit lanes: the high four digits, then the low four.
    let x = (v / 10_000) | (v % 10_000) << 32;
    let hundreds = ((x * 10_486) >> 20) & 0x0000_007f_0000_007f;
    // 16-bit lanes: pairs of digits.
    let y = hundreds | (x - hundreds * 100) << 16;
    let tens = ((y * 103) >> 10) & 0x000f_000f_000f_000f;
    // Bytes: single digits.
    tens | (y - tens * 10) << 8
}

/// Appends the first `n` bytes of `word` (in memory order), by copying all
/// eight and cutting the vector back.
#[inline(always)]
fn push_word(out: &mut Vec<u8>, word: u64, n: usize) {
    let len = out.len();
    out.extend_from_slice(&word.to_le_bytes());
    out.truncate(len + n);
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

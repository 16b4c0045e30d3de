//! *Simple objects* (flat, printable strings without escapes, plain
//! numbers) read straight into an event without `serde_json`.

use super::*;
use crate::read::csv::fast::leading_digits;
use crate::read::csv::records::{HIGHS, ONES};

/// Reads a JSON line that is a *simple object* into `ctx`: a flat object
/// of printable-ASCII keys without escapes, each with a string of the same
/// kind, an integer of up to 18 digits, `true`, `false` or `null`, and
/// spaces as the only blanks. `None` for any other line (floats, escapes,
/// non-ASCII text, nesting, invalid JSON, a value its target does not
/// take), which `serde_json` then reads; the keys met before are the ones
/// it meets first, so registering them here changes nothing.
///
/// Nearly every line of an event file is one, and `serde_json` pays for the
/// UTF-8 check of every key and string and a visitor call per value (see
/// docs/perf-log.md, 2026-12-03, CSV simple lines; JSON lines).
pub(crate) fn simple_object(text: &[u8], ctx: &mut RowCtx<'_>) -> Option<()> {
    let mut at = 0;
    let spaces = |at: &mut usize| {
        while text.get(*at) == Some(&b' ') {
            *at += 1;
        }
    };
    if text.first() != Some(&b'{') {
        return None;
    }
    at += 1;
    spaces(&mut at);
    if text.get(at) == Some(&b'}') {
        return (at + 1 == text.len()).then_some(());
    }
    let mut place = 0;
    loop {
        let key = simple_string(text, &mut at)?;
        spaces(&mut at);
        if text.get(at) != Some(&b':') {
            return None;
        }
        at += 1;
        spaces(&mut at);
        let target = ctx.target_at(place, key);
        let value = match *text.get(at)? {
            b'"' => {
                let s = simple_string(text, &mut at)?;
                match target {
                    Target::Ts => return None,
                    Target::Drop => None,
                    _ => Some(Value::Str(ctx.strings.intern(s)?)),
                }
            }
            b't' => Some(simple_word(text, &mut at, b"true", Value::Bool(true))?),
            b'f' => Some(simple_word(text, &mut at, b"false", Value::Bool(false))?),
            b'n' => Some(simple_word(text, &mut at, b"null", Value::Null)?),
            _ => Some(Value::Int(simple_int(text, &mut at)?)),
        };
        if let Some(v) = value {
            ctx.store(target, v).ok()?;
        }
        spaces(&mut at);
        match *text.get(at)? {
            b',' => {
                at += 1;
                place += 1;
                spaces(&mut at);
            }
            b'}' => return (at + 1 == text.len()).then_some(()),
            _ => return None,
        }
    }
}

/// The bytes of the string at `at` (its quote), if they are printable
/// ASCII without escapes; `at` moves past its closing quote.
#[inline]
pub(crate) fn simple_string<'t>(text: &'t [u8], at: &mut usize) -> Option<&'t [u8]> {
    if text.get(*at) != Some(&b'"') {
        return None;
    }
    let start = *at + 1;
    let mut end = start;
    // Eight bytes at a time while eight are left, then one at a time.
    while let Some(word) = text.get(end..end + 8) {
        let stops = string_stops(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        if stops != 0 {
            end += stops.trailing_zeros() as usize / 8;
            break;
        }
        end += 8;
    }
    loop {
        match *text.get(end)? {
            b'"' => break,
            b'\\' | 0..0x20 | 0x7f.. => return None,
            _ => end += 1,
        }
    }
    *at = end + 1;
    Some(&text[start..end])
}

/// The bytes of `word` (eight bytes of text, the first in the low byte)
/// that end a simple string — a quote, a backslash, a control byte or one
/// above `~` — each as its high bit; exact up to the first such byte (the
/// first set bit), which is all [`simple_string`] reads; exact everywhere,
/// it cost more (see docs/perf-log.md, 2026-12-03, JSON lines).
#[inline]
pub(crate) fn string_stops(word: u64) -> u64 {
    // A byte is zero: a borrow out of it (bytes above the first zero may
    // be set too, which the first set bit does not see).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let quote = zero(word ^ (ONES * u64::from(b'"')));
    let backslash = zero(word ^ (ONES * u64::from(b'\\')));
    // Below 0x20 (for a byte below 0x80: the others are caught below).
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    // 0x7f and above: 0x7f + 1 sets the high bit, which the others have.
    let high = (word.wrapping_add(ONES) | word) & HIGHS;
    quote | backslash | control | high
}

/// `value` if the word at `at` is `word`; `at` moves past it. (What follows
/// is checked by the caller: only a blank, `,` or `}` may.)
#[inline]
pub(crate) fn simple_word(text: &[u8], at: &mut usize, word: &[u8], value: Value) -> Option<Value> {
    (text.get(*at..*at + word.len()) == Some(word)).then(|| {
        *at += word.len();
        value
    })
}

/// The integer at `at` if it is JSON's (no leading zero, no `+`) and has
/// at most 18 digits; `at` moves past it. (A fraction or an exponent after
/// it is no `,` or `}`: the caller declines the line.) `-0` is the int 0,
/// as the `serde_json` path reads it.
#[inline]
pub(crate) fn simple_int(text: &[u8], at: &mut usize) -> Option<i64> {
    let neg = text.get(*at) == Some(&b'-');
    let from = *at + usize::from(neg);
    let (digits, v) = leading_digits(text.get(from..)?);
    if digits == 0 || digits > 18 || (digits > 1 && text[from] == b'0') {
        return None;
    }
    *at = from + digits;
    Some(if neg { -v } else { v })
}

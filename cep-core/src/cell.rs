//! How a text cell is typed (LANGUAGE.md §1): an integer literal is an
//! int, else a float literal a float, else `true`/`false` a bool, else a
//! string; an empty cell is NULL. The CSV reader (`cep-io`) and the level
//! alerts' file (`cep-index`) both type their cells with these functions,
//! so that a key reads the same from either.
//!
//! The classifier is `#[inline(always)]`: it runs once per CSV cell on the
//! reader's hot path, in another crate.

use crate::{Sym, Value};

/// What a trimmed cell looks like.
#[derive(Debug, PartialEq)]
pub enum Lexeme {
    /// An integer literal, with its value (`None`: it does not fit an
    /// `i64`).
    Int(Option<i64>),
    /// A float literal (digits with a dot or an exponent).
    Float,
    /// Anything else: a bool or a string.
    Other,
}

/// Types a trimmed cell; integers (the common case) inline, the rest out of
/// line.
#[inline(always)]
pub fn classify(b: &[u8]) -> Lexeme {
    let (neg, body) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if body.is_empty() {
        return Lexeme::Other;
    }
    match int_value(neg, body) {
        Some(v) => Lexeme::Int(v),
        None => classify_not_int(body),
    }
}

/// [`classify`] for a cell (without its sign) that is not an integer: a
/// float literal has digits (at least one), with a dot, an exponent or both.
/// Words such as `nan`, `inf` or `infinity` are not float literals (Rust's
/// float syntax takes them, which is why it is never asked first).
#[inline(never)]
fn classify_not_int(body: &[u8]) -> Lexeme {
    // [digits][.digits] with at least one digit, then an optional exponent.
    let int_digits = body.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i = int_digits;
    let mut frac_digits = 0;
    if body.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = body[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return Lexeme::Other;
    }
    if matches!(body.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(body.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_digits = body[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if exp_digits == 0 {
            return Lexeme::Other;
        }
        i += exp_digits;
    }
    if i == body.len() { Lexeme::Float } else { Lexeme::Other }
}

/// The value of the digits `digits` (negated with `neg`), read in one
/// pass: `None` when they are not all digits, `Some(None)` when the value
/// does not fit an `i64`. Up to 18 digits cannot overflow and are added
/// without checks (most cells of a numeric stream are such integers, and
/// typing then parsing them had read each twice); a longer literal is read
/// again with checks.
#[inline(always)]
pub fn int_value(neg: bool, digits: &[u8]) -> Option<Option<i64>> {
    let mut v: i64 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.wrapping_mul(10).wrapping_add(i64::from(d));
    }
    if digits.len() <= 18 {
        return Some(Some(if neg { -v } else { v }));
    }
    // Built negative when negative, so that `i64::MIN` fits.
    let checked = digits.iter().try_fold(0i64, |v, &d| {
        let d = i64::from(d - b'0');
        v.checked_mul(10).and_then(|v| if neg { v.checked_sub(d) } else { v.checked_add(d) })
    });
    Some(checked)
}

/// Types one CSV cell exactly as the event reader does (LANGUAGE.md §1):
/// an integer literal is an int, else a float literal a float, else
/// `true`/`false` a bool, else a string; surrounding blanks are ignored and
/// an empty cell is NULL. An integer literal beyond `i64` is the nearest
/// float; a literal beyond the `f64` range, and words such as `nan` or
/// `inf`, are strings (`docs/semantics.md`, "Input").
///
/// # Examples
/// ```
/// use cep_core::{cell::parse_cell, Sym, Value};
/// assert_eq!(parse_cell(" 7 "), Value::Int(7));
/// assert_eq!(parse_cell("1.5"), Value::Float(1.5));
/// assert_eq!(parse_cell("AAPL"), Value::Str(Sym::new("AAPL")));
/// assert_eq!(parse_cell(""), Value::Null);
/// assert_eq!(parse_cell("nan"), Value::Str(Sym::new("nan")));
/// assert_eq!(parse_cell("1e400"), Value::Str(Sym::new("1e400")));
/// assert_eq!(parse_cell("9223372036854775808"), Value::Float(9223372036854775808.0));
/// ```
pub fn parse_cell(text: &str) -> Value {
    let cell = text.trim();
    if cell.is_empty() {
        return Value::Null;
    }
    match classify(cell.as_bytes()) {
        Lexeme::Int(Some(i)) => Value::Int(i),
        Lexeme::Int(None) | Lexeme::Float => match float_of(cell.as_bytes()) {
            Some(f) => Value::Float(f),
            None => Value::Str(Sym::new(cell)),
        },
        Lexeme::Other => match cell {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::Str(Sym::new(cell)),
        },
    }
}

/// The value of a cell classified [`Lexeme::Int(None)`](Lexeme::Int) or
/// [`Lexeme::Float`]: the nearest `f64`, or `None` beyond the `f64` range
/// (`1e400`), where the cell falls through to a string (no value makes a
/// bad row).
pub fn float_of(cell: &[u8]) -> Option<f64> {
    // The lexeme is ASCII, and Rust's float syntax is a superset of it, so
    // the parse cannot fail; the text of an integer beyond `i64` rounds to
    // the nearest `f64`.
    let f = std::str::from_utf8(cell).ok()?.parse::<f64>().ok()?;
    f.is_finite().then_some(f)
}

//! Timestamps, time units and durations.
//!
//! A timestamp is an `i64` in the stream's unit (`--time-unit`, milliseconds
//! by default). Durations in queries carry their own unit (`60 s`) and are
//! converted once, at compile time, into timestamp units; a duration that is
//! not a whole number of timestamp units is an error rather than rounded.

use std::fmt;

/// A point in event time, in the stream's [`TimeUnit`].
pub type Timestamp = i64;

/// The unit of the `ts` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TimeUnit {
    /// Nanoseconds.
    Nanos,
    /// Microseconds.
    Micros,
    /// Milliseconds (the default).
    #[default]
    Millis,
    /// Seconds.
    Seconds,
}

impl TimeUnit {
    /// Parses `ms`, `us`, `ns` or `s`.
    pub fn parse(s: &str) -> Option<TimeUnit> {
        match s {
            "ns" => Some(TimeUnit::Nanos),
            "us" => Some(TimeUnit::Micros),
            "ms" => Some(TimeUnit::Millis),
            "s" => Some(TimeUnit::Seconds),
            _ => None,
        }
    }

    /// Nanoseconds in one unit.
    pub fn nanos(self) -> i128 {
        match self {
            TimeUnit::Nanos => 1,
            TimeUnit::Micros => 1_000,
            TimeUnit::Millis => 1_000_000,
            TimeUnit::Seconds => 1_000_000_000,
        }
    }

    /// The short name (`ms`, …).
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Nanos => "ns",
            TimeUnit::Micros => "us",
            TimeUnit::Millis => "ms",
            TimeUnit::Seconds => "s",
        }
    }
}

/// A unit written after a duration in a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationUnit {
    /// A bare number: timestamp units.
    Ticks,
    /// An absolute unit, in nanoseconds.
    Nanos(i128),
}

impl DurationUnit {
    /// Parses a unit word: `ns`, `us` (or `µs`), `ms`, `s`, `sec`, `second(s)`, `min`,
    /// `minute(s)`, `h`, `hour(s)`, `d`, `day(s)` (case-insensitive).
    pub fn parse(word: &str) -> Option<DurationUnit> {
        let w = word.to_ascii_lowercase();
        let nanos: i128 = match w.as_str() {
            "ns" | "nanosecond" | "nanoseconds" => 1,
            "us" | "µs" | "microsecond" | "microseconds" => 1_000,
            "ms" | "millisecond" | "milliseconds" => 1_000_000,
            "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
            "min" | "mins" | "minute" | "minutes" => 60_000_000_000,
            "h" | "hour" | "hours" => 3_600_000_000_000,
            "d" | "day" | "days" => 86_400_000_000_000,
            _ => return None,
        };
        Some(DurationUnit::Nanos(nanos))
    }
}

/// Why a duration could not be converted to timestamp units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// The number is malformed.
    BadNumber,
    /// Not a whole number of timestamp units (e.g. `500 ms` with `--time-unit s`).
    NotWhole,
    /// Larger than an i64 of timestamp units.
    TooLarge,
    /// A word after the number that is no unit.
    UnknownUnit,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::BadNumber => f.write_str("malformed number"),
            DurationError::NotWhole => f.write_str("not a whole number of timestamp units"),
            DurationError::TooLarge => f.write_str("too large"),
            DurationError::UnknownUnit => f.write_str("unknown unit (ns, us, ms, s, min, h, d)"),
        }
    }
}

/// Splits a duration as written on a command line (`200ms`, `1.5 s`,
/// `60`) into its number and its unit ([`DurationUnit::Ticks`] for a bare
/// number), for [`to_ticks`].
///
/// # Examples
/// ```
/// use cep_core::time::{split_duration, to_ticks, DurationError, DurationUnit, TimeUnit};
/// let (n, unit) = split_duration("1.5 ms").unwrap();
/// assert_eq!(to_ticks(n, unit, TimeUnit::Nanos), Ok(1_500_000));
/// assert_eq!(split_duration("60").unwrap(), ("60", DurationUnit::Ticks));
/// assert_eq!(split_duration("2 fortnights"), Err(DurationError::UnknownUnit));
/// ```
pub fn split_duration(text: &str) -> Result<(&str, DurationUnit), DurationError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, word) = (&t[..split], t[split..].trim());
    let unit = if word.is_empty() {
        DurationUnit::Ticks
    } else {
        DurationUnit::parse(word).ok_or(DurationError::UnknownUnit)?
    };
    Ok((number, unit))
}

/// Converts a decimal number (`"1.5"`, `"60"`) with a unit into timestamp
/// units of `unit`, exactly.
///
/// # Examples
/// ```
/// use cep_core::time::{to_ticks, DurationUnit, TimeUnit};
/// let s = DurationUnit::parse("s").unwrap();
/// assert_eq!(to_ticks("60", s, TimeUnit::Millis), Ok(60_000));
/// assert_eq!(to_ticks("1.5", s, TimeUnit::Millis), Ok(1_500));
/// assert!(to_ticks("0.5", DurationUnit::parse("ms").unwrap(), TimeUnit::Millis).is_err());
/// assert_eq!(to_ticks("500", DurationUnit::Ticks, TimeUnit::Seconds), Ok(500));
/// ```
pub fn to_ticks(number: &str, unit: DurationUnit, ts_unit: TimeUnit) -> Result<i64, DurationError> {
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int_part.is_empty() && frac_part.is_empty()
        || !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(DurationError::BadNumber);
    }
    // Trailing zeros say nothing. A nonzero digit past the 18th place is
    // never a whole number of nanoseconds, whatever the unit: that needs
    // 2^k or 5^k to divide the unit in nanoseconds (a day is 2^16 · 3^3 ·
    // 5^11 ns).
    let frac_part = frac_part.trim_end_matches('0');
    if frac_part.len() > 18 {
        return Err(DurationError::NotWhole);
    }
    let mut mantissa: i128 = 0;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(b - b'0')))
            .ok_or(DurationError::TooLarge)?;
    }
    let scale = 10i128.pow(frac_part.len() as u32);
    let (num, den) = match unit {
        DurationUnit::Ticks => (mantissa, scale),
        DurationUnit::Nanos(n) => (mantissa.checked_mul(n).ok_or(DurationError::TooLarge)?, scale * ts_unit.nanos()),
    };
    if num % den != 0 {
        return Err(DurationError::NotWhole);
    }
    i64::try_from(num / den).map_err(|_| DurationError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_decimal_places() {
        let s = DurationUnit::parse("s").unwrap();
        // Trailing zeros are fine, however many.
        assert_eq!(to_ticks(&format!("1.5{}", "0".repeat(40)), s, TimeUnit::Millis), Ok(1_500));
        // A digit past the 18th place is never whole (it was "malformed").
        assert_eq!(to_ticks("0.0000000000000000001", s, TimeUnit::Nanos), Err(DurationError::NotWhole));
        assert_eq!(to_ticks("0.000000001000000000000", s, TimeUnit::Nanos), Ok(1));
        assert_eq!(to_ticks("1.", s, TimeUnit::Millis), Ok(1_000));
        assert_eq!(to_ticks(".", s, TimeUnit::Millis), Err(DurationError::BadNumber));
    }

    #[test]
    fn units_convert() {
        let min = DurationUnit::parse("MINUTES").unwrap();
        assert_eq!(to_ticks("2", min, TimeUnit::Seconds), Ok(120));
        assert_eq!(to_ticks("1", DurationUnit::parse("d").unwrap(), TimeUnit::Nanos), Ok(86_400_000_000_000));
        assert_eq!(to_ticks("1", DurationUnit::parse("ms").unwrap(), TimeUnit::Seconds), Err(DurationError::NotWhole));
        assert_eq!(
            to_ticks("99999999999999999999", DurationUnit::Ticks, TimeUnit::Millis),
            Err(DurationError::TooLarge)
        );
        assert_eq!(to_ticks("1.", DurationUnit::Ticks, TimeUnit::Millis), Ok(1));
        assert_eq!(to_ticks(".", DurationUnit::Ticks, TimeUnit::Millis), Err(DurationError::BadNumber));
        assert!(DurationUnit::parse("fortnight").is_none());
    }
}

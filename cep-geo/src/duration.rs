//! Durations on the command line: `0`, `200us`, `1ms`, `1.5ms`, `2s`.

use std::fmt;
use std::time::Duration;

/// A duration that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationError(pub String);

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a duration (a number and a unit: ns, us, ms, s, min; e.g. 200us, 1ms)", self.0)
    }
}

impl std::error::Error for DurationError {}

/// Reads a non-negative decimal number and a unit (`ns`, `us` or `µs`,
/// `ms`, `s`, `min`); a bare number is in milliseconds, as are the
/// timestamps (LANGUAGE.md §1).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let bad = || DurationError(text.to_owned());
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| bad())?;
    let nanos_per = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "" | "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        _ => return Err(bad()),
    };
    let nanos = value * nanos_per;
    // A day at most: a longer evaluation delay is a typo.
    if !nanos.is_finite() || nanos > 86_400e9 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(nanos.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("200us"), Ok(Duration::from_micros(200)));
        assert_eq!(parse_duration("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_millis(7)));
        for bad in ["", "ms", "-1ms", "1 parsec", "1e999s", "1..2ms"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}

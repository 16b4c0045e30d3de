//! Durations on the command line: `0`, `200us`, `1ms`, `1.5ms`, `2s`.

use std::fmt;
use std::time::Duration;

use cep_core::TimeUnit;
use cep_core::time::{DurationUnit, split_duration, to_ticks};

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
    let (number, unit) = split_duration(text).map_err(|_| bad())?;
    let unit = match unit {
        DurationUnit::Ticks => DurationUnit::parse("ms").ok_or_else(bad)?,
        unit => unit,
    };
    let nanos = to_ticks(number, unit, TimeUnit::Nanos).map_err(|_| bad())?;
    // A day at most: a longer evaluation delay is a typo.
    if !(0..=86_400_000_000_000).contains(&nanos) {
        return Err(bad());
    }
    Ok(Duration::from_nanos(nanos as u64))
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

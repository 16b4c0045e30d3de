//! Whether this build has a Kafka client, and the error that says it has not.
//!
//! The client (rdkafka, with librdkafka compiled from C) sits behind the
//! crate's `kafka` feature, so that the default build compiles no C. A build
//! without it still parses Kafka URLs, and a caller that meets one answers
//! with [`KafkaDisabled`] instead of failing later or in a stranger way.

use std::fmt;

/// Whether this build was compiled with the `kafka` feature.
pub const ENABLED: bool = cfg!(feature = "kafka");

/// A Kafka URL was given to a build without the Kafka client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaDisabled;

impl fmt::Display for KafkaDisabled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "this build has no Kafka support: rebuild with `--features kafka`")
    }
}

impl std::error::Error for KafkaDisabled {}

/// `Ok` when this build has the Kafka client, else [`KafkaDisabled`]: the
/// one check a caller makes before it opens a Kafka source or sink.
pub fn require() -> Result<(), KafkaDisabled> {
    if ENABLED { Ok(()) } else { Err(KafkaDisabled) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_follows_the_feature() {
        assert_eq!(require().is_ok(), cfg!(feature = "kafka"));
        assert!(KafkaDisabled.to_string().contains("--features kafka"));
    }
}

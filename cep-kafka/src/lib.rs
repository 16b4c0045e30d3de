#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod support;
pub mod url;
pub mod wait;

#[cfg(feature = "kafka")]
pub mod admin;
#[cfg(feature = "kafka")]
mod error;
#[cfg(feature = "kafka")]
pub mod sink;
#[cfg(feature = "kafka")]
pub mod source;
#[cfg(feature = "kafka")]
pub mod testing;

#[cfg(feature = "kafka")]
pub use error::Error;
/// The Kafka client this crate is built on, for callers that need more of it
/// than this crate wraps (tests, first of all).
#[cfg(feature = "kafka")]
pub use rdkafka;
#[cfg(feature = "kafka")]
pub use sink::KafkaSink;
#[cfg(feature = "kafka")]
pub use source::{KafkaSource, SourceConfig};
pub use support::{ENABLED, KafkaDisabled};
pub use url::{KafkaUrl, TopicProblem, UrlError};

//! The errors of the client side (`kafka` feature).

use std::fmt;
use std::time::Duration;

use rdkafka::error::{KafkaError, RDKafkaErrorCode};

/// What went wrong talking to a broker.
#[derive(Debug)]
pub enum Error {
    /// The client failed (could not be created, a request failed, ...).
    Client(KafkaError),
    /// The broker refused to create `topic`.
    CreateTopic { topic: String, code: RDKafkaErrorCode },
    /// The broker does not know `topic`.
    NoSuchTopic { topic: String },
    /// `what` did not finish within `after`.
    TimedOut { what: &'static str, after: Duration },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Client(e) => write!(f, "kafka: {e}"),
            Error::CreateTopic { topic, code } => {
                write!(f, "kafka: topic {topic:?} could not be created: {code}")
            }
            Error::NoSuchTopic { topic } => write!(f, "kafka: no topic {topic:?} on the broker"),
            Error::TimedOut { what, after } => {
                write!(f, "kafka: {what} did not finish within {after:?}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Client(e) => Some(e),
            _ => None,
        }
    }
}

impl From<KafkaError> for Error {
    fn from(e: KafkaError) -> Error {
        Error::Client(e)
    }
}

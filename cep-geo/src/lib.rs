#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod brute;
pub mod duration;
pub mod geo;
mod grid;
pub mod index;
pub mod positions;
pub mod protocol;
pub mod ratio;
pub mod server;
pub mod service;

pub use brute::near_brute;
pub use duration::{DurationError, parse_duration};
pub use geo::{EARTH_RADIUS_M, haversine_m};
pub use index::{BuildError, Config, ConfigError, ProximityIndex, QueryError};
pub use positions::{LoadError, LoadErrorKind, Position, load_csv, load_csv_file};
pub use protocol::{NearArgs, NearCall, ProtocolError, parse_request, write_response};
pub use ratio::ratio_answer;
pub use server::serve;
pub use service::{Answers, Service};

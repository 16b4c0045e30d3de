#![doc = include_str!("../README.md")]

pub mod parallel;
pub mod read;

pub use parallel::ParallelReader;
pub use read::{EventSource, Format, InputPosition, ReadError, ReadErrorKind, Reader};

#![doc = include_str!("../README.md")]

pub mod input;
pub mod memory;
pub mod output;
pub mod parallel;
pub mod read;
pub mod stream;

pub use input::{FileInput, InputDigest, ReadAhead};
pub use output::{FileOutput, LineSink};
pub use parallel::ParallelReader;
pub use read::{EventSource, Format, InputPosition, Offsets, ReadError, ReadErrorKind, Reader};

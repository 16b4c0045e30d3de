//! The contenders, by what they run: engines, level indexes, the runtime,
//! the `cep` binary, paced latency and timers. Each file's functions make a
//! [`Contender`](super::Contender) for the catalogue.

pub(crate) mod cli;
pub(crate) mod engine;
pub(crate) mod latency;
pub(crate) mod levels;
pub(crate) mod runtime;
pub(crate) mod timers;

#![doc = include_str!("../README.md")]

pub mod buffer;
pub mod builder;
pub mod compile;
pub mod diag;
pub mod engines;
pub mod idle;
pub mod program;
pub mod reference;
pub mod share;
pub mod spare;
pub mod syntax;

// The engines' paths from before they moved under `engines`, kept so that
// other crates compile unchanged.
pub use engines::run as engine;
pub use engines::select;
pub use engines::stack;
pub use engines::{EngineError, RestoreError};

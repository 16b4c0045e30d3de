#![doc = include_str!("../README.md")]

pub mod buffer;
pub mod builder;
pub mod compile;
pub mod corpus;
pub mod diag;
pub mod engine;
pub mod engines;
pub mod idle;
pub mod program;
pub mod reference;
pub mod select;
pub mod spare;
pub mod stack;
pub mod syntax;

pub use engines::{EngineError, RestoreError};

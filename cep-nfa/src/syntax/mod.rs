//! The front end: text → tokens ([`lexer`]) → AST ([`ast`], [`parser`]).
//!
//! Semantic checks and name resolution happen later, in
//! [`compile`](crate::compile).

pub mod ast;
pub mod lexer;
pub mod parser;

pub use parser::{MAX_DEPTH, MAX_TREE_DEPTH, parse};

/// The largest `n` accepted in `PREV(x, n)`.
pub const MAX_PREV: u32 = 1024;

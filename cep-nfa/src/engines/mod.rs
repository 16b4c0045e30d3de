//! The matching engines and what they share.
//!
//! A compiled [`Program`](crate::program::Program) runs on one of two
//! engines: the run engine ([`crate::engine`], one NFA run per partial
//! match, which runs every query) or the stack engine ([`crate::stack`],
//! per-element stacks, for sequences of single events under
//! skip-till-any-match). [`crate::select`] picks one per query.
//!
//! [`api`] holds what every engine takes and gives, so that a new engine
//! uses the same event, late-event and output types instead of copying
//! them.

pub mod api;

pub use api::{LateEvent, MatchQueue, StreamEvent};

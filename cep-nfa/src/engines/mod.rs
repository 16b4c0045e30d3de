//! The matching engines and what they share.
//!
//! A compiled [`Program`](crate::program::Program) runs on one of two
//! engines: the run engine ([`crate::engine`], one NFA run per partial
//! match, which runs every query) or the stack engine ([`crate::stack`],
//! per-element stacks, for sequences of single events under
//! skip-till-any-match). [`crate::select`] picks one per query and
//! dispatches to it through [`MatchEngine`].
//!
//! [`api`] holds what every engine takes and gives, so that a new engine
//! implements one trait and uses the same event, late-event, statistics and
//! output types instead of copying them; [`error`] holds the errors of
//! building an engine and of restoring its state.

pub mod api;
pub mod error;

pub use api::{LateEvent, MatchEngine, MatchQueue, Stats, StreamEvent};
pub use error::{EngineError, RestoreError};

//! The matching engines and what they share.
//!
//! A compiled [`Program`](crate::program::Program) runs on one of two
//! engines: the run engine ([`run`], one NFA run per partial match, which
//! runs every query) or the stack engine ([`stack`], per-element stacks,
//! for sequences of single events under skip-till-any-match). [`select`]
//! picks one per query and dispatches to it through [`MatchEngine`].
//! (They are also at their older paths `cep_nfa::engine`, `cep_nfa::stack`
//! and `cep_nfa::select`.)
//!
//! Each engine is a folder whose files hold one mechanism each; how the
//! run engine matches a Kleene element, for one, is in `run/step.rs`.
//!
//! [`api`] holds what every engine takes and gives, so that a new engine
//! implements one trait and uses the same event, late-event, statistics and
//! output types instead of copying them; [`error`] holds the errors of
//! building an engine and of restoring its state.

pub mod api;
pub mod error;
pub mod run;
pub mod select;
pub mod stack;

pub use api::{LateEvent, MatchEngine, MatchQueue, Stats, StreamEvent};
pub use error::{EngineError, RestoreError};

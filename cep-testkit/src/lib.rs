//! What the workspace's tests share, in one dev-only crate (it is never a
//! normal dependency, and holds no tests of the engines itself):
//!
//! - [`corpus`]: the `testdata/*.case` format, the comparison of expected
//!   and actual match lines, and [`corpus::run_corpus`], which runs every
//!   case on one engine and reports what ran and what was skipped, and why.
//! - [`arb`]: random queries and streams for property tests
//!   ([`arb::arb_case`], [`arb::arb_query`]) and their configuration
//!   ([`arb::config`], `CEP_PROPTEST_CASES`).
//! - [`drive`]: an engine run to the end of its input ([`run_to_end`]) or
//!   driven as `cep run` drives one engine per statement, and matches in the
//!   reference matcher's terms.
//! - [`XorShift64`]: the one xorshift generator (DESIGN.md §3's).
//! - [`Scratch`]: a temporary directory removed when the test ends.
//!
//! Use it from `[dev-dependencies]` as `cep-testkit.workspace = true`.
//!
//! # Examples
//! The corpus on the run engine, one engine per statement (the README's
//! example):
//! ```
//! use cep_core::Event;
//! use cep_nfa::engine::Engine;
//! use cep_testkit::corpus::{Case, Labels, Run, run_corpus};
//! use cep_testkit::drive::run_like_cep;
//!
//! fn run_case(case: &Case) -> Result<Run, String> {
//!     let (events, mut schema) = case.read_events()?;
//!     let programs = case.compile(&mut schema)?;
//!     let labels = Labels::of(&programs);
//!     let mut engines: Vec<Engine<Event>> = programs.into_iter().map(Engine::new).collect();
//!     Ok(Run::Ordered(labels.lines(&run_like_cep(&mut engines, &events)?)))
//! }
//!
//! let tally = run_corpus("run", &[], run_case);
//! assert!(tally.skipped.is_empty());
//! ```

pub mod arb;
pub mod corpus;
pub mod drive;
mod rng;
mod scratch;
mod stream;

pub use drive::{run_to_end, try_run_to_end};
pub use rng::XorShift64;
pub use scratch::Scratch;
pub use stream::Stream;

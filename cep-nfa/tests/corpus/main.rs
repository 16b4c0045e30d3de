//! The text corpus `testdata/*.case` (format: `testdata/README.md`) on every
//! engine of this crate, each runner in its own module:
//!
//! - [`run`]: the run [`Engine`](cep_nfa::engine::Engine), one per
//!   statement, driven as `cep run` drives them; the lines in order.
//! - [`stack`]: the [`StackEngine`](cep_nfa::stack::StackEngine) where
//!   `stack::qualifies` accepts every statement of the case: per-event and
//!   direct construction in the run engine's order, batch construction as
//!   a multiset.
//! - [`reference`]: the reference matcher `cep_nfa::reference`, its matches
//!   put in the order `cep run` emits them; the lines in order.
//!
//! Each runner returns `Run::Skip(reason)` for a case its engine cannot run,
//! lists the cases it is known to get wrong (with the reason) in its own
//! `KNOWN_BAD`, and prints how many cases ran and were skipped
//! (`cargo test -p cep-nfa --test corpus -- --nocapture`). The sharded
//! runtime runs the same corpus in `cep-runtime/tests/corpus.rs`, the
//! binary in `cep-cli/tests/corpus.rs`.

mod reference;
mod run;
mod stack;

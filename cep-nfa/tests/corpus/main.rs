//! The text corpus `testdata/*.case` (format: `testdata/README.md`) on the
//! engines of this crate, each runner in its own module:
//!
//! - [`run`]: the run [`Engine`](cep_nfa::engine::Engine), one per
//!   statement, driven as `cep run` drives them; the lines in order.
//!
//! Each runner returns `Run::Skip(reason)` for a case its engine cannot run,
//! lists the cases it is known to get wrong (with the reason) in its own
//! `KNOWN_BAD`, and prints how many cases ran and were skipped
//! (`cargo test -p cep-nfa --test corpus -- --nocapture`). The binary runs
//! the same corpus in `cep-cli/tests/corpus.rs`.

mod run;

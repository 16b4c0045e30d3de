//! The text corpus `testdata/*.case` (format: `testdata/README.md`) on the
//! sharded runtime: a [`ShardedRunner`] on 2 and on 3 shard threads, each
//! shard a [`Runner`] with every statement, with ordered output
//! ([`ShardedRunner::set_ordered_output`]: the lines one runner writes, in
//! its order). Its lines, ids removed, are compared with the case's in
//! order, and the summary's match count with their number.
//!
//! The other engines run the same corpus in `cep-nfa/tests/corpus/`, the
//! binary in `cep-cli/tests/corpus.rs`.

use cep_runtime::Runner;
use cep_runtime::shard::ShardedRunner;
use cep_testkit::corpus::{Case, Run, run_corpus, strip_id};

/// Cases the sharded runtime is known to get wrong: `(case, reason)`.
const KNOWN_BAD: &[(&str, &str)] = &[];

fn run_case(case: &Case, shards: usize) -> Result<Run, String> {
    let (events, schema) = case.read_events()?;
    let runners = (0..shards).map(|_| case.compile(&mut schema.clone()).map(Runner::new)).collect::<Result<_, _>>()?;
    let mut sharded = ShardedRunner::new(Runner::new(Vec::new()), runners);
    sharded.set_ordered_output().map_err(|e| format!("ordered output: {e}"))?;
    let mut out = Vec::new();
    for e in &events {
        sharded.push(e, &mut out).map_err(|e| format!("push: {e}"))?;
    }
    let summary = sharded.finish(&mut out).map_err(|e| format!("finish: {e}"))?;
    let text = String::from_utf8(out).map_err(|e| format!("output: {e}"))?;
    let lines: Vec<String> = text.lines().map(strip_id).collect();
    let counted: u64 = summary.matches.iter().sum();
    if counted != lines.len() as u64 {
        return Err(format!("the summary counts {counted} matches, the output has {} lines", lines.len()));
    }
    Ok(Run::Ordered(lines))
}

fn check(shards: usize) {
    let tally = run_corpus(&format!("sharded on {shards} shards"), KNOWN_BAD, |case| run_case(case, shards));
    // Every statement runs on the shards: only known-bad cases are skipped.
    assert_eq!(tally.skipped.len(), KNOWN_BAD.len(), "skipped {:?}", tally.skipped);
}

#[test]
fn corpus_on_two_shards() {
    check(2);
}

#[test]
fn corpus_on_three_shards() {
    check(3);
}

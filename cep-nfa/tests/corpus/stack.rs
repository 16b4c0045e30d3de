//! The corpus on the stack engine, for the statements that [`qualifies`]
//! accepts: a case none of whose statements qualifies is skipped with the
//! refusals; a case of which some qualify runs those, against their
//! expected lines only (the others' refusals are printed). One
//! [`StackEngine`] per statement, driven as `cep run` drives the run
//! engines ([`run_like_cep`]). Per-event and direct construction emit each
//! match when its last event arrives, as the run engine does: the lines are
//! compared in order. Batch construction emits at window boundaries: the
//! lines are compared as a multiset.

use cep_nfa::stack::{Construction, StackEngine, qualifies};
use cep_testkit::corpus::{Case, Labels, Run, Tally, run_corpus};
use cep_testkit::drive::run_like_cep;

/// Cases the stack engine is known to get wrong: `(case, reason)`.
const KNOWN_BAD: &[(&str, &str)] = &[];

/// At least this many cases qualify (so that a `qualifies` refusing
/// everything does not pass unnoticed).
const AT_LEAST: usize = 10;

fn run_case(case: &Case, how: Construction) -> Result<Run, String> {
    let (events, mut schema) = case.read_events()?;
    let (mut programs, mut refused) = (Vec::new(), Vec::new());
    for p in case.compile(&mut schema)? {
        match qualifies(&p) {
            Ok(()) => programs.push(p),
            Err(why) => refused.push(format!("stack: `{}`: {why}", p.name)),
        }
    }
    if programs.is_empty() {
        return Ok(Run::Skip(refused.join("; ")));
    }
    let labels = Labels::of(&programs);
    let statements = programs.iter().map(|p| p.name.clone()).collect();
    let mut engines = programs
        .into_iter()
        .map(|p| StackEngine::new(p, how).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, String>>()?;
    let lines = labels.lines(&run_like_cep(&mut engines, &events)?);
    let lines = if how == Construction::Batch { Run::Multiset(lines) } else { Run::Ordered(lines) };
    Ok(if refused.is_empty() {
        lines
    } else {
        Run::Part { statements, others: refused.join("; "), lines: Box::new(lines) }
    })
}

fn check(name: &str, how: Construction) -> Tally {
    let tally = run_corpus(name, KNOWN_BAD, |case| run_case(case, how));
    assert!(tally.ran >= AT_LEAST, "{name}: only {} cases ran", tally.ran);
    tally
}

#[test]
fn corpus_on_the_stack_engine_per_event() {
    check("stack per-event", Construction::PerEvent);
}

#[test]
fn corpus_on_the_stack_engine_direct() {
    check("stack direct", Construction::Direct);
}

#[test]
fn corpus_on_the_stack_engine_batch() {
    check("stack batch", Construction::Batch);
}

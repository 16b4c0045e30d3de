//! The corpus on the run engine: one [`Engine`] per statement, driven as
//! `cep run` drives them ([`run_like_cep`]); every match formatted with
//! `Match::write_json`, its `"id"` removed, and compared with the case's
//! lines in order. Every engine's buffer must be empty after `finish()`.

use cep_core::Event;
use cep_nfa::engine::Engine;
use cep_testkit::corpus::{Case, Labels, Run, run_corpus};
use cep_testkit::drive::run_like_cep;

/// Cases the engine is known to get wrong: `(case, reason)`.
const KNOWN_BAD: &[(&str, &str)] = &[];

fn run_case(case: &Case) -> Result<Run, String> {
    let (events, mut schema) = case.read_events()?;
    let programs = case.compile(&mut schema)?;
    let labels = Labels::of(&programs);
    let mut engines: Vec<Engine<Event>> = programs.into_iter().map(Engine::new).collect();
    let out = run_like_cep(&mut engines, &events)?;
    for engine in &engines {
        let nodes = engine.stats().nodes;
        if nodes != 0 {
            return Err(format!("engine of `{}` holds {nodes} buffer nodes after finish()", engine.program().name));
        }
    }
    Ok(Run::Ordered(labels.lines(&out)))
}

#[test]
fn corpus_on_the_run_engine() {
    let tally = run_corpus("run", KNOWN_BAD, run_case);
    // The run engine runs every statement: it skips only its known-bad cases.
    assert_eq!(tally.skipped.len(), KNOWN_BAD.len(), "the run engine skipped {:?}", tally.skipped);
}

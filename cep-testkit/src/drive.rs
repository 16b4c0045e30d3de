//! Running an engine to the end of its input and collecting its matches:
//! the "push, drain, finish, drain" loop, written once for the run engine
//! and the stack engine, through their common trait
//! ([`MatchEngine`]).
//!
//! - [`run_to_end`]: one engine, every event pushed and drained, then the
//!   end of the input.
//! - [`run_like_cep`]: one engine per statement, driven as `cep run` drives
//!   them (deadlines before each event, statement order), as the corpus
//!   expects.
//! - [`to_ref`] and [`sorted`]: matches in the reference matcher's terms,
//!   and in one order, to compare engines as multisets.
//!
//! # Examples
//! ```
//! use cep_core::{Event, Schema, Sym};
//! use cep_nfa::compile::{compile, Options};
//! use cep_nfa::engine::Engine;
//! use cep_testkit::run_to_end;
//! let prog = compile("PATTERN SEQ(A a, B b)", &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
//! let events: Vec<Event> =
//!     ["A", "B", "B"].iter().enumerate().map(|(i, t)| Event::new(Sym::new(t), i as i64, i as u64, vec![])).collect();
//! let matches = run_to_end(&mut Engine::new(prog), &events);
//! assert_eq!(matches.len(), 1);
//! assert_eq!(matches[0].rows, [0, 1]);
//! ```

use cep_core::{Event, Match};
use cep_nfa::engine::{Engine, LateEvent};
use cep_nfa::engines::MatchEngine;
use cep_nfa::program::Program;
use cep_nfa::reference::RefMatch;

/// Moves `engine`'s matches found so far to `out`, in emission order.
fn take_matches(engine: &mut impl MatchEngine<Event>, out: &mut Vec<Match>) {
    out.extend(engine.matches_mut().drain());
}

/// Pushes every event (draining after each), then the end of the input:
/// every match in emission order, or the first event the engine refused
/// as late.
pub fn try_run_to_end(engine: &mut impl MatchEngine<Event>, events: &[Event]) -> Result<Vec<Match>, LateEvent> {
    let mut got = Vec::new();
    for e in events {
        engine.push(e)?;
        take_matches(engine, &mut got);
    }
    engine.finish();
    take_matches(engine, &mut got);
    Ok(got)
}

/// [`try_run_to_end`] on events in order.
///
/// # Panics
/// If the engine refuses an event as late.
pub fn run_to_end(engine: &mut impl MatchEngine<Event>, events: &[Event]) -> Vec<Match> {
    try_run_to_end(engine, events).unwrap_or_else(|l| panic!("an event in order refused: {l}"))
}

/// One engine per statement, as `cep run` drives them: before each event
/// every engine fires its deadlines before the event's `ts` and is drained,
/// in statement order; each engine runs the event; then every engine is
/// drained in statement order; at the end each is finished and drained in
/// statement order. Every match with its statement's index, in that order.
pub fn run_like_cep<D: MatchEngine<Event>>(engines: &mut [D], events: &[Event]) -> Result<Vec<(usize, Match)>, String> {
    let mut out = Vec::new();
    let mut got = Vec::new();
    let mut take = |i: usize, engine: &mut D, out: &mut Vec<(usize, Match)>| {
        take_matches(engine, &mut got);
        out.extend(got.drain(..).map(|m| (i, m)));
    };
    for ev in events {
        for (i, engine) in engines.iter_mut().enumerate() {
            engine.advance(ev.ts);
            take(i, engine, &mut out);
        }
        for engine in engines.iter_mut() {
            engine.push(ev).map_err(|l| format!("row {}: {l}", ev.row))?;
        }
        for (i, engine) in engines.iter_mut().enumerate() {
            take(i, engine, &mut out);
        }
    }
    for (i, engine) in engines.iter_mut().enumerate() {
        engine.finish();
        take(i, engine, &mut out);
    }
    Ok(out)
}

/// A match in the reference matcher's terms, to compare engines with it.
pub fn to_ref(m: Match) -> RefMatch {
    let vars = m.vars().map(|v| v.to_vec()).collect();
    RefMatch { key: m.key, start: m.start, end: m.end, vars, emit: m.emit }
}

/// A reference match as an engine's [`Match`] of query 0 (to print it as
/// the engines' matches are printed).
pub fn from_ref(m: &RefMatch) -> Match {
    let mut ends = Vec::with_capacity(m.vars.len());
    let mut rows = Vec::new();
    for v in &m.vars {
        rows.extend_from_slice(v);
        ends.push(u32::try_from(rows.len()).expect("a match of fewer than 2^32 rows"));
    }
    Match { query: 0, key: m.key, start: m.start, end: m.end, rows, ends, emit: m.emit.clone(), unverified: false }
}

/// Runs `prog` on the run engine over `events`, then the end of the input:
/// every match in emission order, in the reference matcher's terms (an
/// event the engine refuses, as late, is the error).
pub fn run_engine(prog: Program<Event>, events: &[Event]) -> Result<Vec<RefMatch>, String> {
    run_engine_with(Engine::new(prog), events)
}

/// [`run_engine`] on an engine set up by the caller.
pub fn run_engine_with(mut engine: Engine<Event>, events: &[Event]) -> Result<Vec<RefMatch>, String> {
    try_run_to_end(&mut engine, events).map(|v| v.into_iter().map(to_ref).collect()).map_err(|l| l.to_string())
}

/// Matches in one order (by end, start, rows and key), whatever order an
/// engine emitted them in: to compare engines as multisets.
pub fn sorted(mut v: Vec<RefMatch>) -> Vec<RefMatch> {
    v.sort_by(|a, b| (a.end, a.start, &a.vars, a.key.to_string()).cmp(&(b.end, b.start, &b.vars, b.key.to_string())));
    v
}

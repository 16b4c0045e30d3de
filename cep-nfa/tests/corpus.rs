//! The text corpus `testdata/*.case` (format: `testdata/README.md`), run on
//! the library: `cep_io::Reader` → `compile` → one [`Engine`] per
//! statement, as `cep run` does it.
//!
//! Every statement's engine sees every event in input order; before each
//! event every engine fires its deadlines before the event's `ts` and is
//! drained, in statement order; after each event the engines are drained in
//! statement order, and at the end each engine is
//! finished and drained in statement order. Each match is formatted with
//! `Match::write_json`, its `"id"` removed, and compared (as JSON) with the
//! case's expected lines, in order. All cases run in one test that reports
//! every failing case.

use std::fmt::Write as _;
use std::path::Path;

use cep_core::Event;
use cep_io::{Format, Reader};
use cep_nfa::compile::{Options, compile};
use cep_nfa::corpus::{Case, strip_id};
use cep_nfa::engine::Engine;

mod corpus_check;
use corpus_check::{CORPUS, case_files, diff, same};

/// Cases the engine is known to get wrong (skipped with a note). Each entry
/// names a case file without its extension.
const KNOWN_BAD: &[&str] = &[];

/// Runs a case; returns the match lines (without ids).
fn run_case(case: &Case) -> Result<Vec<String>, String> {
    let unit = case.time_unit()?;
    let file = format!("{}.csv", case.name);
    let mut reader =
        Reader::new(case.events.as_bytes(), &file, Format::Csv).map_err(|e| format!("reading events: {e}"))?;
    let mut events = Vec::new();
    let mut e = Event::default();
    while reader.next_event(&mut e).map_err(|e| format!("reading events: {e}"))? {
        events.push(e.clone());
    }
    reader.schema_mut().set_complete(true);
    let mut schema = reader.schema().clone();
    let compiled = compile(&case.query, &mut schema, &Options { time_unit: unit })
        .map_err(|d| format!("compiling the query:\n{}", d.render(&case.query, "query")))?;
    let names: Vec<String> = compiled.programs.iter().map(|p| p.name.clone()).collect();
    let vars: Vec<Vec<String>> =
        compiled.programs.iter().map(|p| p.var_names().iter().map(|s| s.to_string()).collect()).collect();
    let mut engines: Vec<Engine<Event>> = compiled.programs.into_iter().map(Engine::new).collect();
    let mut out = Vec::new();
    let emit = |i: usize, engine: &mut Engine<Event>, out: &mut Vec<String>| {
        let var_refs: Vec<&str> = vars[i].iter().map(String::as_str).collect();
        for m in engine.drain() {
            let mut line = Vec::new();
            m.write_json(&mut line, &names[i], &var_refs);
            out.push(strip_id(std::str::from_utf8(&line).expect("a line is UTF-8")));
        }
    };
    for ev in &events {
        // Deadlines before the event fire in every statement before any
        // statement runs the event.
        for (i, engine) in engines.iter_mut().enumerate() {
            engine.advance(ev.ts);
            emit(i, engine, &mut out);
        }
        for engine in engines.iter_mut() {
            engine.push(ev).map_err(|l| format!("row {}: {l}", ev.row))?;
        }
        for (i, engine) in engines.iter_mut().enumerate() {
            emit(i, engine, &mut out);
        }
    }
    for (i, engine) in engines.iter_mut().enumerate() {
        engine.finish();
        emit(i, engine, &mut out);
    }
    for (i, engine) in engines.iter().enumerate() {
        let nodes = engine.stats().nodes;
        if nodes != 0 {
            return Err(format!("engine of `{}` holds {nodes} buffer nodes after finish()", names[i]));
        }
    }
    Ok(out)
}

fn case_name(path: &Path) -> String {
    path.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_owned()
}

#[test]
fn corpus() {
    let files = case_files();
    assert!(files.len() >= 20, "expected the corpus in {CORPUS}, found {} cases", files.len());
    let mut failures = String::new();
    let mut passed = 0;
    for path in &files {
        let name = case_name(path);
        if KNOWN_BAD.contains(&name.as_str()) {
            println!("note: skipping known-bad case {name}");
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let result = Case::parse(&name, &text).and_then(|case| {
            let actual = run_case(&case)?;
            if same(&case.matches, &actual)? { Ok(()) } else { Err(diff(&case.matches, &actual)) }
        });
        match result {
            Ok(()) => passed += 1,
            Err(msg) => {
                let _ = writeln!(failures, "=== {name} ({})\n{msg}", path.display());
            }
        }
    }
    println!("{passed} of {} cases passed", files.len());
    assert!(failures.is_empty(), "corpus failures:\n{failures}");
}

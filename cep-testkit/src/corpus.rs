//! The `testdata/` corpus: the `.case` format, the comparison of expected
//! and actual match lines, and a runner that runs every case on one engine.
//!
//! A case is one file: a query, the events as CSV, and the expected matches
//! as JSON lines without their `"id"`, in emission order (format:
//! `testdata/README.md`). The same corpus runs against every engine and
//! through the `cep` binary; this module is the one parser they share.
//!
//! An engine's runner is a function from a [`Case`] to a [`Run`]: the lines
//! it printed, compared in order ([`Run::Ordered`]) or as a multiset
//! ([`Run::Multiset`]), or [`Run::Skip`] with the reason the engine cannot
//! run the case. [`run_corpus`] calls it on every case, prints how many ran
//! and were skipped (and why), and fails with every case that did not match.
//!
//! # Examples
//! ```
//! use cep_testkit::corpus::Case;
//! let text = "# a comment\n-- query\nPATTERN SEQ(A a, B b)\n-- events\ntype,ts\nA,1\nB,2\n-- matches\n\
//!             {\"query\":\"q1\",\"key\":null,\"start\":1,\"end\":2,\"vars\":{\"a\":[0],\"b\":[1]}}\n";
//! let case = Case::parse("pair", text).unwrap();
//! assert_eq!(case.matches.len(), 1);
//! assert_eq!(case.time_unit().unwrap(), cep_core::TimeUnit::Millis);
//! let (events, mut schema) = case.read_events().unwrap();
//! assert_eq!(events.len(), 2);
//! let programs = case.compile(&mut schema).unwrap();
//! assert_eq!(programs[0].name, "q1");
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cep_core::{Event, Match, Schema, TimeUnit};
use cep_io::{Format, Reader};
use cep_nfa::compile::{Options, compile};
use cep_nfa::program::Program;

/// The `testdata/` directory of the workspace.
pub const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata");

/// The rise / spike / quiet query of LANGUAGE.md §7, word for word
/// (`testdata/rise_spike.cep`).
pub const RISE_SPIKE: &str = include_str!("../../testdata/rise_spike.cep");

/// One parsed case.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Case {
    /// The file name without `.case`.
    pub name: String,
    /// Query text.
    pub query: String,
    /// Events, CSV with a header.
    pub events: String,
    /// Expected match lines, without ids, in emission order.
    pub matches: Vec<String>,
    /// Command-line options (only `--time-unit U` is supported).
    pub options: Vec<String>,
}

impl Case {
    /// Parses a case file's text.
    pub fn parse(name: &str, text: &str) -> Result<Case, String> {
        let mut case = Case { name: name.to_owned(), ..Case::default() };
        let mut section: Option<&str> = None;
        let mut seen: Vec<&str> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.starts_with('#') {
                continue;
            }
            let header = match line.trim_end() {
                "-- query" => Some("query"),
                "-- events" => Some("events"),
                "-- matches" => Some("matches"),
                "-- options" => Some("options"),
                _ => None,
            };
            if let Some(h) = header {
                if seen.contains(&h) {
                    return Err(format!("line {}: section `{h}` given twice", i + 1));
                }
                seen.push(h);
                section = Some(h);
                continue;
            }
            match section {
                None if line.trim().is_empty() => {}
                None => return Err(format!("line {}: text before the first section", i + 1)),
                Some("query") => {
                    case.query.push_str(line);
                    case.query.push('\n');
                }
                Some("events") => {
                    case.events.push_str(line);
                    case.events.push('\n');
                }
                Some("matches") => {
                    if !line.trim().is_empty() {
                        case.matches.push(line.trim().to_owned());
                    }
                }
                Some(_) => case.options.extend(line.split_whitespace().map(str::to_owned)),
            }
        }
        for s in ["query", "events", "matches"] {
            if !seen.contains(&s) {
                return Err(format!("no `-- {s}` section"));
            }
        }
        case.time_unit()?;
        Ok(case)
    }

    /// The case's `--time-unit` (milliseconds by default).
    pub fn time_unit(&self) -> Result<TimeUnit, String> {
        let mut unit = TimeUnit::Millis;
        let mut it = self.options.iter();
        while let Some(o) = it.next() {
            match o.as_str() {
                "--time-unit" => {
                    let v = it.next().ok_or("--time-unit needs a value")?;
                    unit = TimeUnit::parse(v).ok_or_else(|| format!("bad --time-unit `{v}`"))?;
                }
                other => return Err(format!("unsupported option `{other}`")),
            }
        }
        Ok(unit)
    }

    /// Reads and parses the case file at `path` (named after its stem).
    pub fn load(path: &Path) -> Result<Case, String> {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Case::parse(name, &text)
    }

    /// The events, read by [`cep_io::Reader`] as `cep run` reads them,
    /// and the schema they built, marked complete after the whole input.
    pub fn read_events(&self) -> Result<(Vec<Event>, Schema), String> {
        let file = format!("{}.csv", self.name);
        let mut reader =
            Reader::new(self.events.as_bytes(), &file, Format::Csv).map_err(|e| format!("reading events: {e}"))?;
        let mut events = Vec::new();
        let mut e = Event::default();
        while reader.next_event(&mut e).map_err(|e| format!("reading events: {e}"))? {
            events.push(e.clone());
        }
        reader.schema_mut().set_complete(true);
        Ok((events, reader.schema().clone()))
    }

    /// The query compiled against `schema` in the case's time unit: one
    /// program per statement, in statement order (an error is rendered).
    pub fn compile(&self, schema: &mut Schema) -> Result<Vec<Program<Event>>, String> {
        let unit = self.time_unit()?;
        compile(&self.query, schema, &Options { time_unit: unit })
            .map(|c| c.programs)
            .map_err(|d| format!("compiling the query:\n{}", d.render(&self.query, "query")))
    }
}

/// The `.case` files of a directory, sorted by name.
pub fn case_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if p.extension().is_some_and(|x| x == "case") {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// A match line without its `"id"` (the last key of the line).
pub fn strip_id(line: &str) -> String {
    match line.rfind(",\"id\":\"") {
        Some(at) => format!("{}}}", &line[..at]),
        None => line.to_owned(),
    }
}

/// The corpus's `.case` files ([`CORPUS`]), sorted.
///
/// # Panics
/// If the directory cannot be listed.
pub fn corpus_files() -> Vec<PathBuf> {
    case_files(Path::new(CORPUS)).unwrap_or_else(|e| panic!("cannot list {CORPUS}: {e}"))
}

/// A match as `cep run` prints it ([`Match::write_json_emit`], with the
/// names of its query's `EMIT` items), without its `"id"`.
pub fn match_line(m: &Match, query: &str, vars: &[impl AsRef<str>], emit: &[impl AsRef<str>]) -> String {
    let mut line = Vec::new();
    m.write_json_emit(&mut line, query, vars, emit);
    strip_id(std::str::from_utf8(&line).expect("a match line is UTF-8"))
}

fn json(line: &str, what: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(line).map_err(|err| format!("bad {what} line `{line}`: {err}"))
}

/// Compares expected and actual lines as JSON values, in order. An
/// expected line with an `"id"` is an error.
pub fn same(expected: &[String], actual: &[String]) -> Result<bool, String> {
    if expected.len() != actual.len() {
        return Ok(false);
    }
    for (e, a) in expected.iter().zip(actual) {
        let ev = json(e, "expected")?;
        if ev.get("id").is_some() {
            return Err(format!("expected line has an \"id\": `{e}`"));
        }
        if ev != json(a, "output")? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Compares expected and actual lines as multisets of JSON values (the
/// order of the lines does not matter, how often each occurs does).
pub fn same_multiset(expected: &[String], actual: &[String]) -> Result<bool, String> {
    let canonical = |lines: &[String], what: &str| -> Result<Vec<String>, String> {
        let mut v = lines.iter().map(|l| json(l, what).map(|j| j.to_string())).collect::<Result<Vec<_>, _>>()?;
        v.sort();
        Ok(v)
    };
    let (e, a) = (canonical(expected, "expected")?, canonical(actual, "output")?);
    Ok(same(&e, &a)? && e == a)
}

/// Expected and actual lines, for a failure message.
pub fn diff(expected: &[String], actual: &[String]) -> String {
    let mut s = String::from("expected:\n");
    for l in expected {
        let _ = writeln!(s, "  {l}");
    }
    s.push_str("actual:\n");
    for l in actual {
        let _ = writeln!(s, "  {l}");
    }
    s
}

/// Each statement's name, the names of its positive variables and of its
/// `EMIT` items: what a match line needs beside the match.
#[derive(Clone, Debug, Default)]
pub struct Labels(Vec<(String, Vec<String>, Vec<String>)>);

impl Labels {
    /// The labels of compiled statements, in statement order.
    pub fn of(programs: &[Program<Event>]) -> Labels {
        Labels(
            programs
                .iter()
                .map(|p| {
                    let vars = p.var_names().iter().map(|s| s.to_string()).collect();
                    (p.name.clone(), vars, p.emit.iter().map(|i| i.name.clone()).collect())
                })
                .collect(),
        )
    }

    /// The line of a match of statement `stmt` (without its id).
    pub fn line(&self, stmt: usize, m: &Match) -> String {
        let (name, vars, emit) = &self.0[stmt];
        match_line(m, name, vars, emit)
    }

    /// The lines of matches, each with its statement's index, in order.
    pub fn lines(&self, matches: &[(usize, Match)]) -> Vec<String> {
        matches.iter().map(|(i, m)| self.line(*i, m)).collect()
    }
}

/// What an engine's runner made of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Run {
    /// The match lines (without ids), to compare with the expected ones in
    /// order.
    Ordered(Vec<String>),
    /// The match lines (without ids), to compare as a multiset: the engine
    /// promises the same matches, not the same order.
    Multiset(Vec<String>),
    /// The engine cannot run this case, and why (it is counted and printed,
    /// not failed).
    Skip(String),
    /// The engine ran only some of the case's statements, those named in
    /// `statements`: `lines` (an [`Ordered`](Run::Ordered) or
    /// [`Multiset`](Run::Multiset)) is compared with the expected lines of
    /// those statements only (in their order, which is the corpus's order
    /// with the other statements' lines left out). `others` says why the
    /// others did not run (it is counted and printed).
    Part {
        /// The statements run.
        statements: Vec<String>,
        /// Why the others were not.
        others: String,
        /// Their lines.
        lines: Box<Run>,
    },
}

/// How many cases [`run_corpus`] ran, and the ones it skipped with the
/// reason.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Cases run and matched.
    pub ran: usize,
    /// `(case, reason)` of each case skipped, by the runner or as known bad.
    pub skipped: Vec<(String, String)>,
    /// `(case, reason)` of each case run in part ([`Run::Part`]; also
    /// counted in `ran`).
    pub partly: Vec<(String, String)>,
}

/// Runs every corpus case on one engine, through `run`, and compares its
/// lines with the case's. `known_bad` lists `(case, reason)` for cases the
/// engine is known to get wrong: they are run, and skipped with the reason
/// when they still disagree, but a known-bad case that now matches fails
/// (take it off the list). Prints the number of cases run and skipped, and
/// each skip with its reason.
///
/// # Panics
/// With every case that failed (error, or lines that differ), a known-bad
/// case that matches or does not exist, or a corpus of fewer than 20 cases.
pub fn run_corpus(
    engine: &str,
    known_bad: &[(&str, &str)],
    mut run: impl FnMut(&Case) -> Result<Run, String>,
) -> Tally {
    let files = corpus_files();
    assert!(files.len() >= 20, "expected the corpus in {CORPUS}, found {} cases", files.len());
    let mut failures = String::new();
    let mut tally = Tally::default();
    for path in &files {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_owned();
        let bad = known_bad.iter().find(|(case, _)| *case == name).map(|(_, why)| *why);
        let mut part = None;
        let result = Case::load(path).and_then(|case| {
            let mut expected = case.matches.clone();
            let mut outcome = run(&case)?;
            if let Run::Part { statements, others, lines } = outcome {
                let mut kept = Vec::new();
                for line in expected {
                    let query = json(&line, "expected")?.get("query").and_then(|q| q.as_str().map(str::to_owned));
                    if query.is_some_and(|q| statements.contains(&q)) {
                        kept.push(line);
                    }
                }
                expected = kept;
                part = Some(others);
                outcome = *lines;
            }
            let outcome = match outcome {
                Run::Ordered(lines) => same(&expected, &lines)?.then_some(()).ok_or_else(|| diff(&expected, &lines)),
                Run::Multiset(lines) => same_multiset(&expected, &lines)?
                    .then_some(())
                    .ok_or_else(|| format!("(as a multiset)\n{}", diff(&expected, &lines))),
                Run::Skip(why) => return Ok(Some(why)),
                Run::Part { .. } => return Err("a part of a part".to_owned()),
            };
            match (outcome, bad) {
                (Ok(()), None) => Ok(None),
                (Ok(()), Some(why)) => Err(format!("listed as known bad ({why}) but matches: take it off the list")),
                (Err(msg), None) => Err(msg),
                (Err(msg), Some(why)) => {
                    println!("{engine}: known-bad case {name} still disagrees:\n{msg}");
                    Ok(Some(format!("known bad: {why}")))
                }
            }
        });
        match result {
            Ok(None) => {
                tally.ran += 1;
                if let Some(why) = part {
                    tally.partly.push((name, why));
                }
            }
            Ok(Some(why)) => tally.skipped.push((name, why)),
            Err(msg) => {
                let _ = writeln!(failures, "=== {name} ({})\n{msg}", path.display());
            }
        }
    }
    for (case, _) in known_bad {
        if !files.iter().any(|p| p.file_stem().is_some_and(|s| s == *case)) {
            let _ = writeln!(failures, "=== {case}: listed as known bad, but there is no such case");
        }
    }
    println!(
        "{engine}: {} of {} cases run ({} of them in part), {} skipped",
        tally.ran,
        files.len(),
        tally.partly.len(),
        tally.skipped.len()
    );
    for (case, why) in &tally.partly {
        println!("  in part {case}: {why}");
    }
    for (case, why) in &tally.skipped {
        println!("  skipped {case}: {why}");
    }
    assert!(failures.is_empty(), "{engine}: corpus failures:\n{failures}");
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_format() {
        let text = "# a comment\n-- query\nPATTERN A a -- trailing comment\n-- options\n--time-unit s\n-- events\n\
                    ts,type\n# not a row\n0,A\n-- matches\n\n{\"query\":\"q1\"}\n";
        let case = Case::parse("t", text).unwrap();
        assert_eq!(case.query, "PATTERN A a -- trailing comment\n");
        assert_eq!(case.events, "ts,type\n0,A\n");
        assert_eq!(case.matches, ["{\"query\":\"q1\"}"]);
        assert_eq!(case.time_unit().unwrap(), TimeUnit::Seconds);
        assert!(Case::parse("t", "-- query\nPATTERN A a\n-- events\nts\n").is_err());
        assert!(Case::parse("t", "-- query\nq\n-- events\nts\n-- matches\n-- options\n--threads 2\n").is_err());
        assert_eq!(strip_id(r#"{"query":"q","vars":{},"id":"00ff"}"#), r#"{"query":"q","vars":{}}"#);
    }

    #[test]
    fn comparisons() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (a, b) = (r#"{"query":"q","start":1}"#, r#"{"start":2,"query":"q"}"#);
        assert!(same(&l(&[a, b]), &l(&[r#"{"start":1,"query":"q"}"#, b])).unwrap());
        assert!(!same(&l(&[a, b]), &l(&[b, a])).unwrap());
        assert!(!same(&l(&[a]), &l(&[a, a])).unwrap());
        assert!(same_multiset(&l(&[a, b]), &l(&[b, a])).unwrap());
        assert!(!same_multiset(&l(&[a, a, b]), &l(&[a, b, b])).unwrap());
        assert!(same(&l(&[r#"{"id":"00"}"#]), &l(&[r#"{"id":"00"}"#])).is_err());
        assert!(same(&l(&["{"]), &l(&["{}"])).is_err());
    }

    #[test]
    fn the_corpus_parses_and_reads() {
        let files = corpus_files();
        assert!(files.len() >= 20);
        for path in files {
            let case = Case::load(&path).unwrap();
            let (events, mut schema) = case.read_events().unwrap();
            assert!(!events.is_empty(), "{}", case.name);
            assert!(!case.compile(&mut schema).unwrap().is_empty(), "{}", case.name);
        }
    }
}

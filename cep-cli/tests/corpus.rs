//! The text corpus `testdata/*.case` (format: `testdata/README.md`), run
//! through the `cep` binary: `cep run --query Q --events E.csv [options]`.
//!
//! For every case: exit code 0; stdout holds the expected match lines (compared
//! as JSON after removing `"id"`), in order; every id is 32 lower-case hex
//! digits, distinct within the run, and a second run prints exactly the same
//! bytes; the stderr summary counts the rows and the matches. All cases run in
//! one test that reports every failing case.

use std::fmt::Write as _;
use std::process::Command;

use cep_testkit::corpus::{CORPUS, Case, corpus_files as case_files, diff, same};

/// Cases the binary is known to get wrong (skipped with a note). Each entry
/// names a case file without its extension.
const KNOWN_BAD: &[&str] = &[];

mod common;
use common::{CEP, Scratch};

/// The output of one `cep run`.
struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn cep_run(query: &str, events: &str, options: &[String]) -> Output {
    let out = Command::new(CEP)
        .arg("run")
        .arg("--query")
        .arg(query)
        .arg("--events")
        .arg(events)
        .args(options)
        .output()
        .expect("cannot start cep");
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Splits a match line into the line without `"id"` and the id.
fn split_id(line: &str) -> Result<(String, String), String> {
    let mut v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("bad output line `{line}`: {e}"))?;
    let id = v
        .as_object_mut()
        .and_then(|o| o.remove("id"))
        .and_then(|id| id.as_str().map(str::to_owned))
        .ok_or_else(|| format!("output line without a string \"id\": `{line}`"))?;
    let stripped = match line.rfind(",\"id\":\"") {
        Some(at) => format!("{}}}", &line[..at]),
        None => v.to_string(),
    };
    Ok((stripped, id))
}

fn is_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Data rows of a CSV text (non-blank lines after the header; the corpus has
/// no quoted line breaks).
fn data_rows(csv: &str) -> usize {
    csv.lines().filter(|l| !l.trim().is_empty()).count().saturating_sub(1)
}

fn check_case(name: &str, case: &Case) -> Result<(), String> {
    let dir = Scratch::new("corpus", name);
    let query = dir.write("query.cep", &case.query);
    let events = dir.write("events.csv", &case.events);
    let first = cep_run(&query, &events, &case.options);
    if first.code != Some(0) {
        return Err(format!("exit code {:?}, stderr:\n{}", first.code, first.stderr));
    }
    if first.stderr.contains("panicked") {
        return Err(format!("stderr mentions a panic:\n{}", first.stderr));
    }
    let mut actual = Vec::new();
    let mut ids = Vec::new();
    for line in first.stdout.lines() {
        let (stripped, id) = split_id(line)?;
        if !is_id(&id) {
            return Err(format!("id `{id}` is not 32 lower-case hex digits: `{line}`"));
        }
        actual.push(stripped);
        ids.push(id);
    }
    if !same(&case.matches, &actual)? {
        return Err(diff(&case.matches, &actual));
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    if unique.len() != ids.len() {
        return Err(format!("duplicate ids in one run:\n{}", first.stdout));
    }
    // The summary: rows read and the match count.
    let summary = first
        .stderr
        .lines()
        .find(|l| l.starts_with("summary:"))
        .ok_or_else(|| format!("no summary line on stderr:\n{}", first.stderr))?;
    let n = case.matches.len();
    let want_matches = format!(" {n} {}", if n == 1 { "match" } else { "matches" });
    let want_rows = format!("summary: {} rows read, 0 skipped, 0 late,", data_rows(&case.events));
    if !summary.contains(&want_matches) || !summary.starts_with(&want_rows) {
        return Err(format!("summary `{summary}` does not say `{want_rows}` and `{want_matches}`"));
    }
    // Ids (and everything else) are the same on a second run.
    let second = cep_run(&query, &events, &case.options);
    if second.code != Some(0) || second.stdout != first.stdout {
        return Err(format!(
            "a second run differs: exit {:?}\nfirst:\n{}second:\n{}",
            second.code, first.stdout, second.stdout
        ));
    }
    Ok(())
}

#[test]
fn corpus_through_the_binary() {
    let files = case_files();
    assert!(files.len() >= 20, "expected the corpus in {CORPUS}, found {} cases", files.len());
    let mut failures = String::new();
    let mut passed = 0;
    for path in &files {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_owned();
        if KNOWN_BAD.contains(&name.as_str()) {
            println!("note: skipping known-bad case {name}");
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match Case::parse(&name, &text).and_then(|case| check_case(&name, &case)) {
            Ok(()) => passed += 1,
            Err(msg) => {
                let _ = writeln!(failures, "=== {name} ({})\n{msg}", path.display());
            }
        }
    }
    println!("{passed} of {} cases passed", files.len());
    assert!(failures.is_empty(), "corpus failures:\n{failures}");
}

#[test]
fn ids_are_stable_hex() {
    assert!(is_id("0123456789abcdef0123456789abcdef"));
    assert!(!is_id("0123456789ABCDEF0123456789abcdef"));
    assert!(!is_id("0123"));
    let (line, id) = split_id(r#"{"query":"q","key":null,"vars":{"a":[0]},"id":"00ff"}"#).unwrap();
    assert_eq!(line, r#"{"query":"q","key":null,"vars":{"a":[0]}}"#);
    assert_eq!(id, "00ff");
}

//! What both corpus runners (the engine's and the binary's) share: the case
//! files and the comparison of expected and actual match lines.
//! Used with `mod corpus_check;` (or `#[path]` from another crate's tests).

#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::PathBuf;

/// The `testdata/` directory of the workspace.
pub const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata");

/// The corpus's `.case` files, sorted.
pub fn case_files() -> Vec<PathBuf> {
    cep_nfa::corpus::case_files(std::path::Path::new(CORPUS)).unwrap_or_else(|e| panic!("cannot list {CORPUS}: {e}"))
}

/// Compares expected and actual lines as JSON values, in order.
pub fn same(expected: &[String], actual: &[String]) -> Result<bool, String> {
    if expected.len() != actual.len() {
        return Ok(false);
    }
    for (e, a) in expected.iter().zip(actual) {
        let ev: serde_json::Value = serde_json::from_str(e).map_err(|err| format!("bad expected line `{e}`: {err}"))?;
        let av: serde_json::Value = serde_json::from_str(a).map_err(|err| format!("bad output line `{a}`: {err}"))?;
        if ev.get("id").is_some() {
            return Err(format!("expected line has an \"id\": `{e}`"));
        }
        if ev != av {
            return Ok(false);
        }
    }
    Ok(true)
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

//! The text-case format of the workspace's `testdata/` corpus.
//!
//! A case is one file: a query, the events as CSV, and the expected matches
//! as JSON lines without their `"id"`, in emission order (format:
//! `testdata/README.md`). The same corpus runs against every engine and
//! through the `cep` binary; this module is the one parser they share.
//!
//! # Examples
//! ```
//! use cep_nfa::corpus::Case;
//! let text = "# a comment\n-- query\nPATTERN SEQ(A a, B b)\n-- events\ntype,ts\nA,1\nB,2\n-- matches\n\
//!             {\"query\":\"q1\",\"key\":null,\"start\":1,\"end\":2,\"vars\":{\"a\":[0],\"b\":[1]}}\n";
//! let case = Case::parse("pair", text).unwrap();
//! assert_eq!(case.matches.len(), 1);
//! assert_eq!(case.time_unit().unwrap(), cep_core::TimeUnit::Millis);
//! ```

use std::path::{Path, PathBuf};

use cep_core::TimeUnit;

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
}

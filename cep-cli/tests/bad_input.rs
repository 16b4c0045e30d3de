//! Bad input through the `cep` binary (LANGUAGE.md §1, §6): every problem is
//! a clear message saying what is wrong and where (`FILE:LINE:` for events,
//! `FILE:LINE:COL` for queries), with the documented exit code, never a
//! panic; matches emitted before an error stay on stdout.
//!
//! Also the subcommands' basic contract: option checks, `--stats`,
//! `cep check` prints a plan, `cep demo` runs.

use std::process::Command;

mod common;

use common::{CEP, Output};

/// A scratch directory for one test of this suite.
fn scratch(test: &str) -> common::Scratch {
    common::Scratch::new("bad-input", test)
}

fn cep(args: &[&str]) -> Output {
    Output::of(Command::new(CEP).args(args).output().expect("cannot start cep"), args)
}

fn run(query: &str, events: &str, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--query", query, "--events", events];
    args.extend_from_slice(extra);
    cep(&args)
}

/// Asserts exit code 2 and an `error: FILE:LINE: …` message containing every
/// one of `words`.
fn assert_input_error(o: &Output, file: &str, line: u64, words: &[&str]) {
    assert_eq!(o.code, Some(2), "{o:#?}");
    let prefix = format!("error: {file}:{line}: ");
    let msg = o.stderr.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no `{prefix}` in {o:#?}"));
    for w in words {
        assert!(msg.contains(w), "`{msg}` does not mention `{w}`");
    }
}

/// Asserts exit code 2 and an `error: FILE:LINE:COL: …` message containing
/// every one of `words`.
fn assert_query_error(o: &Output, file: &str, line: u64, col: u64, words: &[&str]) {
    assert_eq!(o.code, Some(2), "{o:#?}");
    let prefix = format!("error: {file}:{line}:{col}: ");
    let msg = o.stderr.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no `{prefix}` in {o:#?}"));
    for w in words {
        assert!(msg.contains(w), "`{msg}` does not mention `{w}`");
    }
}

fn summary(o: &Output) -> &str {
    o.stderr.lines().find(|l| l.starts_with("summary:")).unwrap_or_else(|| panic!("no summary in {o:#?}"))
}

const AB: &str = "PATTERN SEQ(A a, B b)\n";

#[test]
fn empty_events_file() {
    let d = scratch("empty");
    let q = d.write("q.cep", AB);
    let e = d.write("e.csv", "");
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 1, &["empty"]);
    assert!(o.stdout.is_empty());
}

#[test]
fn header_only() {
    // Without a `type` column every event is an `Event`, so the query's type
    // is known even though no row comes.
    let d = scratch("header-only");
    let q = d.write("q.cep", "PATTERN SEQ(Event a, Event b) WHERE b.x > a.x\n");
    let e = d.write("e.csv", "ts,x\n");
    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stdout.is_empty(), "{o:#?}");
    assert!(summary(&o).starts_with("summary: 0 rows read, 0 skipped, 0 late, 0 matches"), "{o:#?}");
}

#[test]
fn no_ts_column() {
    let d = scratch("no-ts");
    let q = d.write("q.cep", AB);
    let e = d.write("e.csv", "time,type\n0,A\n1,B\n");
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 1, &["ts"]);
}

#[test]
fn non_integer_ts() {
    let d = scratch("bad-ts");
    let q = d.write("q.cep", AB);
    let e = d.write("e.csv", "ts,type\n0,A\n1.5,B\n2,B\n");
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 3, &["ts", "1.5"]);
    let e = d.write("e2.csv", "ts,type\n0,A\nabc,B\n");
    assert_input_error(&run(&q, &e, &[]), &e, 3, &["ts", "abc"]);
    // A missing ts is bad too.
    let e = d.write("e3.csv", "ts,type\n0,A\n,B\n");
    assert_input_error(&run(&q, &e, &[]), &e, 3, &["ts"]);
}

#[test]
fn overflowing_ts() {
    let d = scratch("overflow-ts");
    let q = d.write("q.cep", AB);
    let e = d.write("e.csv", "ts,type\n0,A\n99999999999999999999,B\n");
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 3, &["ts", "99999999999999999999"]);
}

#[test]
fn ragged_row() {
    let d = scratch("ragged");
    let q = d.write("q.cep", AB);
    // Row 1 (line 3) has three cells under a two-column header.
    let e = d.write("e.csv", "ts,type\n0,A\n1,B,7\n2,A\n3,B\n");
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 3, &["cells"]);
    assert!(o.stdout.is_empty(), "{o:#?}");

    // Skipped: the run goes on; the bad row keeps its row number (1).
    let o = run(&q, &e, &["--on-bad-row", "skip"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stderr.contains(&format!("{e}:3:")), "the skip warning names the line: {o:#?}");
    assert!(summary(&o).starts_with("summary: 4 rows read, 1 skipped, 0 late, 2 matches"), "{o:#?}");
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{o:#?}");
    assert!(lines[0].contains(r#""vars":{"a":[0],"b":[3]}"#), "{o:#?}");
    assert!(lines[1].contains(r#""vars":{"a":[2],"b":[3]}"#), "{o:#?}");
}

#[test]
fn invalid_json_line() {
    let d = scratch("bad-json");
    let q = d.write("q.cep", AB);
    let e = d.write("e.jsonl", "{\"ts\":0,\"type\":\"A\"}\n{\"ts\":1,\"type\":\"B\"\n{\"ts\":2,\"type\":\"B\"}\n");
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 2, &["JSON"]);
    // Skipped, the B at line 3 (row 2) completes the match.
    let o = run(&q, &e, &["--on-bad-row", "skip"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stdout.contains(r#""vars":{"a":[0],"b":[2]}"#), "{o:#?}");
    assert!(summary(&o).contains("1 skipped"), "{o:#?}");
}

#[test]
fn ten_mb_line() {
    let d = scratch("10mb");
    let big = "x".repeat(10 << 20);
    let q = d.write("q.cep", "PATTERN SEQ(A a, B b) WHERE skip-till-any-match AND b.s != a.s\n");
    // a0 pairs with b1 (different s) but not with b2 (the same 10 MB string).
    let e = d.write("e.csv", format!("ts,type,s\n0,A,{big}\n1,B,short\n2,B,{big}\n"));
    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", o.stdout);
    assert!(lines[0].contains(r#""vars":{"a":[0],"b":[1]}"#), "{}", o.stdout);
    assert!(summary(&o).starts_with("summary: 3 rows read, 0 skipped, 0 late, 1 match"), "{}", o.stderr);
}

/// `NaN`, `inf` and the like are not float literals and `1e999` is beyond
/// `f64`: they are strings (LANGUAGE.md §1 makes no bad row of a cell's
/// value), which never compare with a number, so the B at row 1 binds
/// nothing and the B at row 2 completes the match.
#[test]
fn nan_and_inf_in_a_float_column() {
    let d = scratch("nan-inf");
    let q = d.write("q.cep", "PATTERN SEQ(A a, B b) WHERE b.x > a.x\n");
    for (i, word) in ["NaN", "nan", "inf", "-inf", "+Infinity", "1e999"].iter().enumerate() {
        let e = d.write(&format!("e{i}.csv"), format!("ts,type,x\n0,A,1.5\n1,B,{word}\n2,B,2.5\n"));
        let o = run(&q, &e, &[]);
        assert_eq!(o.code, Some(0), "{word}: {o:#?}");
        let lines: Vec<&str> = o.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{word}: {o:#?}");
        assert!(lines[0].contains(r#""vars":{"a":[0],"b":[2]}"#), "{word}: {o:#?}");
    }
    // Finite floats are fine.
    let e = d.write("ok.csv", "ts,type,x\n0,A,1.5\n1,B,-2e3\n2,B,2.5\n");
    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stdout.contains(r#""vars":{"a":[0],"b":[2]}"#), "{o:#?}");
}

#[test]
fn syntax_error_at_the_end_of_the_query() {
    let d = scratch("syntax-end");
    let e = d.write("e.csv", "ts,type,x\n0,A,1\n1,B,2\n");
    // No final newline: the error is just past the last character.
    let src = "PATTERN SEQ(A a, B b) WHERE";
    let q = d.write("q.cep", src);
    let o = run(&q, &e, &[]);
    let col = src.len() as u64 + 1;
    assert_query_error(&o, &q, 1, col, &["end of the query"]);
    // The source line, then the caret under the position after its end.
    let lines: Vec<&str> = o.stderr.lines().collect();
    let at = lines.iter().position(|l| l.ends_with(src)).unwrap_or_else(|| panic!("no source line: {o:#?}"));
    let caret = lines.get(at + 1).copied().unwrap_or_default();
    assert_eq!(caret.find('^'), Some(lines[at].len()), "caret not at the end:\n{}", o.stderr);
    assert!(o.stdout.is_empty());

    // Several lines, the last one cut short: the error is at the end.
    let q = d.write("q2.cep", "QUERY q\nPATTERN SEQ(A a, B b)\nWHERE a.x >\n");
    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(2), "{o:#?}");
    assert!(o.stderr.contains("end of the query"), "{o:#?}");
    assert!(o.stderr.contains(&format!("{q}:3:12:")) || o.stderr.contains(&format!("{q}:4:1:")), "{o:#?}");
    // `cep check` reports the same.
    let c = cep(&["check", "--query", &q]);
    assert_eq!(c.code, Some(2), "{c:#?}");
    assert!(c.stderr.contains("end of the query"), "{c:#?}");
}

/// A type the input does not show is a warning, not an error, even when
/// the read-ahead saw the whole file: the query runs (and finds nothing).
#[test]
fn unknown_type() {
    let d = scratch("unknown-type");
    let q = d.write("q.cep", "PATTERN SEQ(A a, Z b)\n");
    let e = d.write("e.csv", "ts,type\n0,A\n1,B\n");
    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    let prefix = format!("warning: {q}:1:18: type `Z` does not appear in the input");
    assert!(o.stderr.lines().any(|l| l == prefix), "no `{prefix}` in {o:#?}");
    assert!(o.stderr.contains("= types in the input: A, B"), "{o:#?}");
    assert!(!o.stderr.contains("error"), "{o:#?}");
    assert!(o.stdout.is_empty());
    assert!(summary(&o).starts_with("summary: 2 rows read"), "{}", summary(&o));
}

#[test]
fn integer_literal_beyond_i64() {
    let d = scratch("big-literal");
    let q = d.write("q.cep", "PATTERN A a WHERE a.x > 99999999999999999999\n");
    let e = d.write("e.csv", "ts,type,x\n0,A,1\n");
    let o = run(&q, &e, &[]);
    assert_query_error(&o, &q, 1, 25, &["99999999999999999999"]);
    // The largest i64 is fine.
    let q = d.write("q2.cep", "PATTERN A a WHERE a.x < 9223372036854775807\n");
    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert_eq!(o.stdout.lines().count(), 1, "{o:#?}");
}

#[test]
fn division_by_zero_and_overflow_in_a_predicate() {
    // NULL semantics: a comparison with NULL is false, its NOT true.
    // row 0: x 10, y 0: 10 / 0 and 10 % 0 are NULL; 10 + 0 = 10.
    // row 1: x i64::MAX, y 1: MAX / 1 = MAX; MAX + 1 overflows: NULL; MAX % 1 = 0.
    // row 2: x 4, y 2: everything defined.
    let d = scratch("div-zero");
    let q = d.write(
        "q.cep",
        "QUERY div PATTERN A a WHERE a.x / a.y >= 0;\n\
         QUERY notdiv PATTERN A a WHERE NOT a.x / a.y >= 0;\n\
         QUERY ovf PATTERN A a WHERE a.x + a.y > 0;\n\
         QUERY mod PATTERN A a WHERE a.x % a.y = 0;\n",
    );
    let e = d.write("e.csv", "ts,type,x,y\n0,A,10,0\n1,A,9223372036854775807,1\n2,A,4,2\n");
    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    let got: Vec<String> = o
        .stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            format!("{} {}", v["query"].as_str().unwrap(), v["vars"]["a"])
        })
        .collect();
    assert_eq!(got, ["notdiv [0]", "ovf [0]", "div [1]", "mod [1]", "div [2]", "ovf [2]", "mod [2]"], "{o:#?}");
}

#[test]
fn matches_before_an_error_are_kept() {
    let d = scratch("keep-matches");
    let q = d.write("q.cep", AB);
    // The match a0 b1 is complete at row 1; row 2 (line 4) is bad.
    let e = d.write("e.csv", "ts,type\n0,A\n1,B\nx,A\n3,B\n");
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 4, &["ts"]);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{o:#?}");
    assert!(lines[0].contains(r#""vars":{"a":[0],"b":[1]}"#), "{o:#?}");

    // The same far into the input (beyond the read-ahead used to learn the
    // schema): 3000 pairs A B, then a ragged row.
    let mut csv = String::from("ts,type\n");
    for i in 0..3000 {
        csv.push_str(&format!("{},A\n{},B\n", 2 * i, 2 * i + 1));
    }
    csv.push_str("6000,A,oops\n6001,B\n");
    let e = d.write("long.csv", csv);
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 6002, &["cells"]);
    assert_eq!(o.stdout.lines().count(), 3000, "{}", o.stderr);
    assert!(o.stdout.lines().last().unwrap().contains(r#""vars":{"a":[5998],"b":[5999]}"#));
}

#[test]
fn threads_zero_is_refused_and_two_match_one() {
    let d = scratch("threads");
    let q = d.write("q.cep", AB);
    let e = d.write("e.csv", "ts,type\n0,A\n1,B\n");
    let o = run(&q, &e, &["--threads", "0"]);
    assert_eq!(o.code, Some(2), "{o:#?}");
    assert!(o.stderr.contains("--threads must be at least 1"), "{o:#?}");
    let (one, two) = (run(&q, &e, &["--threads", "1"]), run(&q, &e, &["--threads", "2"]));
    assert_eq!((one.code, two.code), (Some(0), Some(0)), "{two:#?}");
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(one.stdout.lines().count(), 1);
}

#[test]
fn check_prints_the_plan() {
    let d = scratch("check");
    let q = d.write("q.cep", AB);
    let o = cep(&["check", "--query", &q]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stdout.contains("engine: run"), "{o:#?}");
}

#[test]
fn demo_runs() {
    let o = cep(&["demo", "--ticks", "20000"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stdout.contains("rise_spike"), "{o:#?}");
}

#[test]
fn checkpoint_and_cap_options_are_checked() {
    let d = scratch("ckpt-options");
    let q = d.write("q.cep", AB);
    let e = d.write("e.csv", "ts,type\n0,A\n1,B\n");
    let refused = |extra: &[&str], words: &str| {
        let o = run(&q, &e, extra);
        assert_eq!(o.code, Some(2), "{extra:?}: {o:#?}");
        assert!(o.stderr.contains(words), "{extra:?}: {o:#?}");
        assert!(o.stdout.is_empty());
    };
    refused(&["--resume"], "--resume needs --checkpoint DIR");
    refused(&["--checkpoint-every", "10"], "--checkpoint-every needs --checkpoint DIR");
    let dir = d.0.join("ck");
    refused(&["--checkpoint", dir.to_str().unwrap(), "--checkpoint-every", "0"], "at least 1");
    refused(&["--max-partials-per-key", "0"], "--max-partials-per-key must be at least 1");
}

#[test]
fn stats_and_the_partial_match_cap() {
    let d = scratch("stats");
    let q = d.write("q.cep", "PATTERN SEQ(A a, B b) WHERE skip-till-any-match AND [k]\n");
    let e = d.write("e.csv", "ts,type,k\n0,A,1\n1,A,1\n2,A,1\n3,A,2\n4,B,1\n5,B,2\n");
    let o = run(&q, &e, &["--stats", "--engine", "run", "--threads", "1"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert_eq!(o.stdout.lines().count(), 4);
    let line = |o: &Output, prefix: &str| {
        o.stderr.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}`: {o:#?}")).to_owned()
    };
    assert_eq!(line(&o, "stats: reader:"), "stats: reader: 6 rows, 0 skipped, 0 late, 0 held for reordering at most");
    let runner = line(&o, "stats: runner:");
    assert!(runner.starts_with("stats: runner: 6 events, 4 matches, 0 level alerts fired, 2 keys"), "{runner}");
    assert!(runner.contains("(4 at most, 0 dropped)"), "{runner}");

    // At most one partial match per key: key 1 keeps only its last A.
    for engine in ["run", "stack"] {
        let o = run(&q, &e, &["--stats", "--max-partials-per-key", "1", "--engine", engine, "--threads", "1"]);
        assert_eq!(o.code, Some(0), "{o:#?}");
        let rows: Vec<&str> = o.stdout.lines().map(|l| &l[l.find("\"vars\"").unwrap()..]).collect();
        assert_eq!(rows.len(), 2, "{engine}: {o:#?}");
        assert!(rows[0].starts_with("\"vars\":{\"a\":[2],\"b\":[4]}"), "{engine}: {rows:?}");
        assert!(line(&o, "stats: runner:").contains("2 dropped"), "{engine}: {o:#?}");
    }

    // Two threads: one line per shard; their events and matches add up.
    let o = run(&q, &e, &["--stats", "--threads", "2"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    let shards: Vec<&str> = o.stderr.lines().filter(|l| l.starts_with("stats: shard ")).collect();
    assert_eq!(shards.len(), 2, "{o:#?}");
    let count = |l: &str, what: &str| -> u64 {
        let at = l.find(what).unwrap();
        l[..at].trim_end().rsplit(' ').next().unwrap().trim_start_matches(':').parse().unwrap()
    };
    assert_eq!(shards.iter().map(|l| count(l, " events")).sum::<u64>(), 6);
    assert_eq!(shards.iter().map(|l| count(l, " matches")).sum::<u64>(), 4);
}

/// Past the read-ahead prefix the file is parsed on its own thread: a bad
/// row there still fails with its place, after the matches before it, and
/// skipping counts it; a late event under `--late fail` reports its row.
#[test]
fn bad_and_late_rows_past_the_read_ahead() {
    let d = scratch("past-prefix");
    let q = d.write("q.cep", AB);
    let mut csv = String::from("ts,type\n");
    for i in 0..10_000 {
        csv.push_str(&format!("{i},{}\n", if i % 2 == 0 { "A" } else { "B" }));
    }
    let good = csv.clone();
    csv.push_str("10000,A,extra\n");
    csv.push_str("10001,B\n");
    let e = d.write("e.csv", &csv);
    let o = run(&q, &e, &[]);
    assert_input_error(&o, &e, 10_002, &["expected 2 cells, found 3"]);
    assert_eq!(o.stdout.lines().count(), 5_000, "the matches before the bad row are kept");
    assert!(summary(&o).starts_with("summary: 10001 rows read"), "{}", summary(&o));

    let o = run(&q, &e, &["--on-bad-row", "skip"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert_eq!(o.stdout.lines().count(), 5_000);
    assert!(summary(&o).starts_with("summary: 10002 rows read, 1 skipped"), "{}", summary(&o));

    let late = format!("{good}5,A\n9999,B\n");
    let e = d.write("late.csv", late);
    let o = run(&q, &e, &["--late", "fail"]);
    assert_eq!(o.code, Some(2), "{o:#?}");
    assert!(o.stderr.contains(&format!("error: {e}:10002: row 10000: late event")), "{o:#?}");
    assert!(summary(&o).starts_with("summary: 10001 rows read"), "{}", summary(&o));
}

/// Runs `cep run --query QUERY` with `input` on stdin (and `extra`).
fn run_stdin(query: &str, input: &str, extra: &[&str]) -> Output {
    common::with_stdin(Command::new(CEP).args(["run", "--query", query]).args(extra), input.as_bytes(), "stdin")
}

/// The match lines of `o` as JSON, without their ids.
fn match_lines(o: &Output) -> Vec<serde_json::Value> {
    o.stdout
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("`{l}`: {e}"));
            v.as_object_mut().expect("a JSON object").remove("id");
            v
        })
        .collect()
}

/// A trailing `NOT` of a type the input never holds blocks nothing: each `A`
/// is a match once its quiet period passes. The result must not depend on
/// whether the read-ahead reached the end of the input (a short file) or not
/// (stdin).
#[test]
fn trailing_negation_of_a_type_not_in_the_input() {
    let d = scratch("trailing-not-absent-type");
    let q = d.write("n5.cep", "PATTERN SEQ(A a, NOT B b WITHIN 10)");
    let csv = "ts,type\n0,A\n";
    let e = d.write("n5.csv", csv);
    let want = vec![serde_json::json!({"query": "q1", "key": null, "start": 0, "end": 10, "vars": {"a": [0]}})];

    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert_eq!(match_lines(&o), want, "{o:#?}");
    let prefix = format!("warning: {q}:1:22: type `B` does not appear in the input");
    assert!(o.stderr.lines().any(|l| l == prefix), "no `{prefix}` in {o:#?}");

    let o = run_stdin(&q, csv, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert_eq!(match_lines(&o), want, "{o:#?}");
}

/// Kinds seen in the read-ahead are no rule of the input: `b.v > a.v` with
/// `v` a string in every `B` row of the first 5,000 is a warning, not an
/// error, and the `B` row with an int past them matches, from a file, from
/// stdin and under `cep check` alike.
#[test]
fn kinds_seen_in_the_read_ahead_are_not_errors() {
    let d = scratch("kinds-seen");
    let q = d.write("k.cep", "PATTERN SEQ(A a, B b) WHERE b.v > a.v");
    let mut csv = String::from("ts,type,v\n0,A,1\n");
    for i in 1..=5_000 {
        csv.push_str(&format!("{i},B,x\n"));
    }
    csv.push_str("5001,B,9\n");
    let e = d.write("k.csv", &csv);
    let want =
        vec![serde_json::json!({"query": "q1", "key": null, "start": 0, "end": 5001, "vars": {"a": [0], "b": [5001]}})];
    let o = run(&q, &e, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert_eq!(match_lines(&o), want, "{o:#?}");
    let prefix = format!("warning: {q}:1:29: comparing a string with an int is always false");
    assert!(o.stderr.lines().any(|l| l == prefix), "no `{prefix}` in {o:#?}");
    let o = run_stdin(&q, &csv, &[]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert_eq!(match_lines(&o), want, "{o:#?}");
    let o = Output::of(Command::new(CEP).args(["check", "--query", &q, "--events", &e]).output().unwrap(), "check");
    assert_eq!(o.code, Some(0), "{o:#?}");
}

/// A field that is empty in every row is NULL, not an error: `NOT a.v > 1`
/// holds for each event (LANGUAGE.md: `NOT` of a comparison with NULL is
/// true), with a warning that the field never appears.
#[test]
fn field_that_never_appears_is_null() {
    let d = scratch("field-never-appears");
    let q = d.write("nv.cep", "PATTERN A a WHERE NOT a.v > 1");
    let csv = "ts,type,v\n0,A,\n1,A,\n";
    let e = d.write("nv.csv", csv);
    for o in [run(&q, &e, &[]), run_stdin(&q, csv, &[])] {
        assert_eq!(o.code, Some(0), "{o:#?}");
        let starts: Vec<_> = match_lines(&o).iter().map(|m| m["start"].clone()).collect();
        assert_eq!(starts, [0, 1], "{o:#?}");
    }
    let o = run(&q, &e, &[]);
    let prefix = format!("warning: {q}:1:25: field `v` never appears in events of type A");
    assert!(o.stderr.lines().any(|l| l == prefix), "no `{prefix}` in {o:#?}");
}

/// A CSV file without a `type` column holds only `Event`, as its header
/// says: another type can never occur and stays an error (exit 2,
/// `FILE:LINE:COL`), through a file and through stdin alike; so does an
/// unknown field (the header fixes the columns), whose note then lists `ts`
/// alone.
#[test]
fn unknown_type_in_a_typeless_csv() {
    let d = scratch("typeless-unknown-type");
    let q = d.write("q.cep", "PATTERN SEQ(Event e,\n  A a)\n");
    let csv = "ts,x\n0,1\n1,2\n";
    let e = d.write("e.csv", csv);
    for o in [run(&q, &e, &[]), run_stdin(&q, csv, &[])] {
        assert_query_error(&o, &q, 2, 3, &["unknown type `A`"]);
        assert!(o.stderr.contains("= the input can only hold events of type Event"), "{o:#?}");
        assert!(o.stdout.is_empty());
    }
    let q = d.write("f.cep", "PATTERN Event e WHERE e.y > 1\n");
    let e = d.write("ts.csv", "ts\n0\n");
    let o = run(&q, &e, &[]);
    assert_query_error(&o, &q, 1, 25, &["unknown field `y`"]);
    assert!(o.stderr.lines().any(|l| l.trim() == "= the input's fields are: ts"), "{o:#?}");
}

/// A query file that is not UTF-8 is a bad query: exit 2, at the line and
/// column of the first byte that is not, for `run` and `check`.
#[test]
fn a_query_file_that_is_not_utf8() {
    let d = scratch("query-not-utf8");
    let e = d.write("e.csv", "ts,type\n0,A\n");
    let q = d.write("q.cep", b"PATTERN A \xff\n");
    assert_query_error(&run(&q, &e, &[]), &q, 1, 11, &["not valid UTF-8", "0xff"]);
    let q2 = d.write("q2.cep", b"-- caf\xc3\xa9 \xe9\nPATTERN A a\n");
    assert_query_error(&cep(&["check", "--query", &q2]), &q2, 1, 9, &["not valid UTF-8", "0xe9"]);
}

/// An argument that is not UTF-8 (a legal Linux file name) is a usage
/// error or a path, never a panic.
#[test]
fn an_argument_that_is_not_utf8() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let d = scratch("arg-not-utf8");
    let e = d.write("e.csv", "ts,type\n0,A\n");
    let bad = OsStr::from_bytes(b"q\xff.cep");
    for args in [vec![bad], vec![OsStr::new("run"), OsStr::new("--query"), bad, OsStr::new("--events"), OsStr::new(&e)]]
    {
        let out = Command::new(CEP).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(matches!(out.status.code(), Some(1 | 2)), "{stderr}");
    }
}

/// `--out` that is also an input, or also the late-event file, is refused
/// before anything is written: the input stays as it was.
#[test]
fn outputs_that_are_inputs_are_refused() {
    let d = scratch("output-clash");
    let text = "ts,type\n0,A\n5,A\n1,A\n";
    let e = d.write("e.csv", text);
    let q = d.write("q.cep", "PATTERN A a\n");
    let o = run(&q, &e, &["--out", &e]);
    assert_eq!(o.code, Some(2), "{o:#?}");
    assert!(o.stderr.contains("is also the events file"), "{o:#?}");
    assert_eq!(std::fs::read_to_string(&e).unwrap(), text);
    let o = run(&q, &e, &["--out", &q]);
    assert!(o.code == Some(2) && o.stderr.contains("is also the query file"), "{o:#?}");
    assert_eq!(std::fs::read_to_string(&q).unwrap(), "PATTERN A a\n");
    // The same file named two ways, one not there yet.
    let out = d.0.join("out.jsonl");
    let late = format!("side:{}/./out.jsonl", d.0.display());
    let o = run(&q, &e, &["--out", out.to_str().unwrap(), "--late", &late]);
    assert!(o.code == Some(2) && o.stderr.contains("is also the late-event file"), "{o:#?}");
    // Not regular files: both outputs may go to /dev/null.
    let o = run(&q, &e, &["--out", "/dev/null", "--late", "side:/dev/null"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stderr.contains("1 late"), "{o:#?}");
}

/// A query "file" without end (`/dev/zero`) is refused once it passes the
/// limit, not read until memory runs out.
#[test]
fn a_query_file_without_end() {
    let o = cep(&["check", "--query", "/dev/zero"]);
    assert_eq!(o.code, Some(2), "{o:#?}");
    assert!(o.stderr.contains("the query file is larger than 16 MiB"), "{o:#?}");
}

/// JSON lines that start with a UTF-8 byte order mark read as without it,
/// from a file and from stdin (whose format is sniffed past the mark).
#[test]
fn json_lines_with_a_byte_order_mark() {
    let d = scratch("jsonl-bom");
    let text = "\u{feff}{\"ts\":0,\"type\":\"A\"}\n{\"ts\":1,\"type\":\"B\"}\n";
    let e = d.write("e.jsonl", text);
    let q = d.write("q.cep", "PATTERN SEQ(A a, B b)\n");
    for o in [run(&q, &e, &[]), run_stdin(&q, text, &[])] {
        assert_eq!(o.code, Some(0), "{o:#?}");
        assert!(o.stdout.contains(r#""vars":{"a":[0],"b":[1]}"#), "{o:#?}");
    }
}

/// A run that a row stops counts the rows up to it, not the rows the
/// read-ahead took past it (here the whole file), on one thread and two.
#[test]
fn a_stopped_run_counts_the_rows_up_to_the_stop() {
    let d = scratch("rows-at-stop");
    let q = d.write("q.cep", "PATTERN A a\n");
    let bad = d.write("bad.csv", "ts,type\n0,A\n1,A\nx,A\n3,A\n4,A\n");
    let late = d.write("late.csv", "ts,type\n0,A\n5,A\n1,A\n6,A\n7,A\n");
    for threads in ["1", "2"] {
        let o = run(&q, &bad, &["--threads", threads]);
        assert_input_error(&o, &bad, 4, &["not an integer"]);
        assert!(summary(&o).starts_with("summary: 3 rows read, 0 skipped, 0 late, 2 matches"), "{o:#?}");
        let o = run(&q, &late, &["--threads", threads, "--late", "fail"]);
        assert_eq!(o.code, Some(2), "{o:#?}");
        assert!(summary(&o).starts_with("summary: 3 rows read, 0 skipped, 1 late, 2 matches"), "{o:#?}");
    }
}

/// A line longer than 64 MiB is a bad row in CSV as in JSON lines: `skip`
/// skips and counts it and reads the rows after it (with their own line
/// numbers), `fail` stops on it with `FILE:LINE`; on one thread and on the
/// parallel reader (two threads), where a line longer than any block is cut
/// and the rest of it skipped. (It used to stop a CSV run, and a JSON-lines
/// run on two threads lost every row after it.)
#[test]
fn a_line_over_64_mib_is_a_bad_row_in_csv_and_json_lines() {
    let d = scratch("over-64-mib");
    let q = d.write("q.cep", "QUERY q PATTERN SEQ(A a);\n");
    let big = "x".repeat((64 << 20) + 1000);
    let (mut csv, mut json) = (String::from("type,ts,s\n"), String::new());
    for i in 0..10_000 {
        let s = if i == 5_000 { big.as_str() } else { "s" };
        csv.push_str(&format!("A,{i},{s}\n"));
        if i == 8_000 {
            csv.push_str("A,x,bad\n"); // a bad row after it: its line shows the count
            json.push_str("{bad\n");
        }
        json.push_str(&format!("{{\"type\":\"A\",\"ts\":{i},\"s\":\"{s}\"}}\n"));
    }
    // CSV: the long row is on line 5,002 and the bad one on 8,003; JSON
    // lines: 5,001 and 8,001.
    let cases = [(d.write("e.csv", csv), 5_002, 8_003), (d.write("e.jsonl", json), 5_001, 8_001)];
    drop(big);
    for (e, long_line, bad_line) in &cases {
        for threads in ["1", "2"] {
            let o = run(&q, e, &["--threads", threads, "--on-bad-row", "skip"]);
            assert_eq!(o.code, Some(0), "{threads} threads: {}", o.stderr);
            assert_eq!(o.stdout.lines().count(), 9_999, "{threads} threads: {}", o.stderr);
            let long = format!("warning: skipped: {e}:{long_line}: line longer than 64 MiB");
            let bad = format!("warning: skipped: {e}:{bad_line}: ");
            assert!(o.stderr.lines().any(|l| l == long), "{threads} threads: no `{long}` in {}", o.stderr);
            assert!(o.stderr.lines().any(|l| l.starts_with(&bad)), "{threads} threads: no `{bad}` in {}", o.stderr);
            assert!(
                summary(&o).starts_with("summary: 10001 rows read, 2 skipped, 0 late, 9999 matches"),
                "{}",
                o.stderr
            );
            let o = run(&q, e, &["--threads", threads]);
            assert_input_error(&o, e, *long_line, &["line longer than 64 MiB"]);
            assert_eq!(o.stdout.lines().count(), 5_000, "{threads} threads");
        }
    }
}

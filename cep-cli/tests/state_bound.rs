//! `--max-state` and `--on-state-limit` through the binary (LANGUAGE.md
//! §6): the any-match Kleene query with no window over one key's events,
//! which grew to gigabytes and aborted, ends with exit 2 and a message
//! naming the query and the key, on one and two threads, inside a hard
//! address-space limit (an abort, exit 134, would fail the test); with
//! `drop-oldest` it finishes within the bound, warns once and counts the
//! drops in the summary line; `--max-partials-per-key` drops are counted
//! there too; `cep check` warns about unbounded queries.

use std::process::Command;

mod common;
use common::{CEP, Output, Scratch};

const QUERY: &str = "PATTERN SEQ(A+ a[], B b) WHERE skip-till-any-match AND [k]";

/// `n` events of type A, all of key 1.
fn all_a(n: usize) -> String {
    let mut s = String::from("ts,type,k\n");
    for i in 0..n {
        s.push_str(&format!("{i},A,1\n"));
    }
    s
}

/// Runs `cep` with `args` under a hard limit on its address space (KiB),
/// so that an unbounded run fails by aborting, not by taking the machine.
fn run_limited(limit_kib: u64, args: &[&str]) -> Output {
    let script = format!("ulimit -v {limit_kib}; exec \"$0\" \"$@\"");
    let out = Command::new("sh").arg("-c").arg(&script).arg(CEP).args(args).output().expect("sh");
    Output::of(out, args)
}

#[test]
fn an_exploding_query_stops_at_the_bound_with_its_query_and_key() {
    let dir = Scratch::new("state_bound", "fail");
    let events = dir.write("a.csv", all_a(100_000));
    let query = dir.write("q.cep", QUERY);
    for threads in ["1", "2"] {
        let args = ["run", "--query", &query, "--events", &events, "--threads", threads, "--max-state", "64MiB"];
        let o = run_limited(1_500_000, &args);
        assert_eq!(o.code, Some(2), "threads {threads}: {o:#?}");
        assert!(
            o.stderr.contains("error: the state would pass --max-state 64 MiB: q1 holds")
                && o.stderr.contains("the most for key 1 ("),
            "threads {threads}: {}",
            o.stderr
        );
        assert!(o.stderr.contains("summary: "), "the summary is printed: {}", o.stderr);
    }
}

#[test]
fn drop_oldest_finishes_within_the_bound_and_counts_the_drops() {
    let dir = Scratch::new("state_bound", "drop");
    let events = dir.write("a.csv", all_a(600));
    let query = dir.write("q.cep", QUERY);
    let args = [
        "run",
        "--query",
        &query,
        "--events",
        &events,
        "--threads",
        "1",
        "--max-state",
        "4MiB",
        "--on-state-limit",
        "drop-oldest",
    ];
    let o = run_limited(1_000_000, &args);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert_eq!(o.stderr.matches("warning: the state reached --max-state 4 MiB").count(), 1, "{}", o.stderr);
    let summary = o.stderr.lines().find(|l| l.starts_with("summary: ")).expect("a summary");
    let dropped: u64 = summary
        .rsplit_once(", ")
        .and_then(|(_, tail)| tail.strip_suffix(" partial matches dropped"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the summary counts the drops: {summary}"));
    assert!(dropped > 1000, "{summary}");
}

#[test]
fn the_per_key_cap_counts_its_drops_in_the_summary() {
    let dir = Scratch::new("state_bound", "cap");
    let events = dir.write("ab.csv", "ts,type,k\n0,A,1\n1,A,1\n2,A,1\n3,B,1\n");
    let query = dir.write("q.cep", "PATTERN SEQ(A a, B b) WHERE [k]");
    let o = Output::of(
        Command::new(CEP)
            .args(["run", "--query", &query, "--events", &events, "--max-partials-per-key", "2"])
            .output()
            .unwrap(),
        "cap",
    );
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stderr.contains("2 matches (q1 2), 1 partial match dropped"), "{}", o.stderr);
    assert_eq!(o.stderr.matches("warning: --max-partials-per-key 2 dropped").count(), 1, "{}", o.stderr);
}

#[test]
fn bad_bounds_are_refused() {
    let dir = Scratch::new("state_bound", "bad");
    let events = dir.write("ab.csv", "ts,type\n0,A\n");
    let query = dir.write("q.cep", "PATTERN SEQ(A a, B b)");
    for (flag, value, says) in [
        ("--max-state", "lots", "invalid --max-state `lots`"),
        ("--max-state", "0", "--max-state must be more than 0 bytes"),
        ("--on-state-limit", "panic", "unknown --on-state-limit `panic`"),
    ] {
        let o = Output::of(
            Command::new(CEP).args(["run", "--query", &query, "--events", &events, flag, value]).output().unwrap(),
            value,
        );
        assert_eq!(o.code, Some(2), "{o:#?}");
        assert!(o.stderr.contains(says), "{}", o.stderr);
    }
}

#[test]
fn check_warns_about_a_query_no_window_bounds() {
    let dir = Scratch::new("state_bound", "check");
    let unbounded = dir.write("q.cep", QUERY);
    let bounded = dir.write("w.cep", "PATTERN SEQ(A+ a[], B b) WHERE skip-till-any-match WITHIN 10");
    let o = Output::of(Command::new(CEP).args(["check", "--query", &unbounded]).output().unwrap(), "check");
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(
        o.stderr.contains("warning: query q1: no WITHIN bounds its state (Kleene element a under skip-till-any-match)"),
        "{}",
        o.stderr
    );
    let o = Output::of(Command::new(CEP).args(["check", "--query", &bounded]).output().unwrap(), "check");
    assert!(!o.stderr.contains("warning"), "{}", o.stderr);
}

#[test]
fn dropped_late_events_are_counted_and_warned_once() {
    let dir = Scratch::new("state_bound", "late");
    let events = dir.write("late.csv", "ts,type\n10,A\n5,A\n6,B\n20,B\n");
    let query = dir.write("q.cep", "PATTERN SEQ(A a, B b)");
    for threads in ["1", "2"] {
        let o = Output::of(
            Command::new(CEP)
                .args(["run", "--query", &query, "--events", &events, "--threads", threads])
                .output()
                .unwrap(),
            threads,
        );
        assert_eq!(o.code, Some(0), "{o:#?}");
        assert!(o.stderr.contains("summary: 4 rows read, 0 skipped, 2 late, 1 match"), "{}", o.stderr);
        assert_eq!(o.stderr.matches("warning: 2 late events dropped").count(), 1, "{}", o.stderr);
    }
}

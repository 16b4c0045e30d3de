//! Queries that differ only in thresholds share one engine through the
//! binary (docs/semantics.md, "Many patterns"): `cep check` says which,
//! and `cep run` writes exactly the lines of an engine per query (forced
//! by `--max-partials-per-key`, which turns sharing off), on one thread
//! byte for byte and on two as the same lines.

use std::process::Command;

mod common;
use common::{CEP, Output, Scratch};

/// Three speed thresholds (sharing), a query of another shape, two more.
const QUERIES: &str = "\
QUERY s5 PATTERN SEQ(P a, P b) WHERE strict-contiguity AND [v] AND a.speed > 5 AND b.speed > 5 EMIT b.speed - a.speed AS up;
QUERY s7 PATTERN SEQ(P a, P b) WHERE strict-contiguity AND [v] AND a.speed > 7 AND b.speed > 7 EMIT b.speed - a.speed AS up;
QUERY s9 PATTERN SEQ(P a, P b) WHERE strict-contiguity AND [v] AND a.speed > 9.5 AND b.speed > 9.5 EMIT b.speed - a.speed AS up;
QUERY any PATTERN SEQ(P a, P b) WHERE [v] AND b.speed > a.speed WITHIN 3;
QUERY slow2 PATTERN SEQ(P a, P b) WHERE strict-contiguity AND [v] AND a.speed <= 4 AND b.speed <= 4;
QUERY slow3 PATTERN SEQ(P a, P b) WHERE strict-contiguity AND [v] AND a.speed <= 6 AND b.speed <= 6;
";

/// Positions of four vessels with speeds that cross every threshold.
fn events() -> String {
    let mut s = String::from("ts,type,v,speed\n");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..400 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(&format!("{i},P,{},{}.{}\n", x % 4, x % 13, (x >> 8) % 10));
    }
    s
}

fn run(dir: &Scratch, threads: &str, one_engine_each: bool) -> Output {
    let (query, events) = (dir.0.join("q.cep"), dir.0.join("e.csv"));
    let mut cmd = Command::new(CEP);
    cmd.args(["run", "--query", query.to_str().unwrap(), "--events", events.to_str().unwrap(), "--threads", threads]);
    if one_engine_each {
        cmd.args(["--max-partials-per-key", "1000000"]);
    }
    let o = Output::of(cmd.output().unwrap(), (threads, one_engine_each));
    assert_eq!(o.code, Some(0), "{o:#?}");
    o
}

#[test]
fn shared_engines_write_the_lines_of_an_engine_per_query() {
    let dir = Scratch::new("many_patterns", "run");
    dir.write("q.cep", QUERIES);
    dir.write("e.csv", events());
    let want = run(&dir, "1", true);
    for q in ["s5", "s7", "s9", "slow2", "slow3"] {
        assert!(want.stdout.contains(&format!("\"query\":\"{q}\"")), "{q} matches: {}", want.stderr);
    }
    assert_eq!(run(&dir, "1", false).stdout, want.stdout);
    let sorted = |s: &str| {
        let mut v: Vec<&str> = s.lines().collect();
        v.sort_unstable();
        v.join("\n")
    };
    let two = run(&dir, "2", false);
    assert_eq!(sorted(&two.stdout), sorted(&want.stdout));
    assert_eq!(two.stderr.lines().last(), want.stderr.lines().last(), "the same summary line");
}

#[test]
fn check_says_which_queries_share_an_engine() {
    let dir = Scratch::new("many_patterns", "check");
    let query = dir.write("q.cep", QUERIES);
    let o = Output::of(Command::new(CEP).args(["check", "--query", &query]).output().unwrap(), "check");
    assert_eq!(o.code, Some(0), "{o:#?}");
    let shares: Vec<&str> = o.stdout.lines().filter(|l| l.contains("share one run engine")).collect();
    assert_eq!(shares.len(), 2, "{}", o.stdout);
    assert!(shares[0].starts_with("queries s5 … s9 (3 of them) share one run engine"), "{}", shares[0]);
    assert!(shares[1].starts_with("queries slow2 … slow3 (2 of them)"), "{}", shares[1]);
    let o = Output::of(
        Command::new(CEP).args(["check", "--query", &query, "--engine", "run"]).output().unwrap(),
        "check --engine run",
    );
    assert_eq!(o.stdout.lines().filter(|l| l.contains("share one run engine")).count(), 2);
}

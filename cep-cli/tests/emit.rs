//! `EMIT` through the binary (LANGUAGE.md §5, "What a match carries"): the
//! exact lines of `cep run` on one and two threads, ids equal to those of
//! the same queries without `EMIT`, `--engine stack` refused, and what
//! `cep check` shows. (Checkpoints with `EMIT`, on one runner and on
//! shards: `cep-runtime/tests/checkpoint.rs`.)

use std::process::Command;

mod common;
use common::{CEP, Output, Scratch};

/// Two keys with the same prices, key 2 one ms after key 1: the rise /
/// spike / quiet example of LANGUAGE.md §7, then a drop.
const EVENTS: &str = "type,ts,key,price,vol
Tick,0,1,10000,10
Tick,1,2,10000,10
Tick,1000,1,10250,10
Tick,1001,2,10250,10
Tick,21000,1,10260,5000
Tick,21001,2,10260,5000
Tick,40000,1,10270,10
Tick,40001,2,10270,10
Tick,50000,1,10000,10
Tick,50001,2,10000,10
";

const RISE_SPIKE: &str = "QUERY rise_spike
PATTERN SEQ(Tick r, Tick s WITHIN 60 s, NOT Tick v WITHIN 10 s)
WHERE skip-till-next-match AND [key]
  AND r.price * 100 >= PREV(r.price) * 102
  AND s.vol >= 1000
  AND v.price * 100 <= s.price * 99
SELECT EARLIEST";

const RUNS: &str = "QUERY runs
PATTERN SEQ(Tick+ b[], Tick c)
WHERE strict-contiguity AND [key] AND b[i].price > b[i-1].price AND c.price < b[b.LEN].price
SELECT EARLIEST";

const RISE_SPIKE_EMIT: &str = " EMIT r.price AS entry, s.price - r.price AS gain, s.*";
const RUNS_EMIT: &str = " EMIT count(b) AS n, max(b.price), b.*";

/// Computed by hand: rise_spike's matches are final when the watermark
/// passes 31000 and 31001 (before the ticks at 40000), in deadline order;
/// the runs' at their drops, rows 8 and 9, each the earliest of the runs
/// ending there (b = every tick of its key before the drop).
const WANT: [&str; 4] = [
    r#"{"query":"rise_spike","key":1,"start":1000,"end":31000,"vars":{"r":[2],"s":[4]},"emit":{"entry":10250,"gain":10,"s":{"type":"Tick","ts":21000,"key":1,"price":10260,"vol":5000}}"#,
    r#"{"query":"rise_spike","key":2,"start":1001,"end":31001,"vars":{"r":[3],"s":[5]},"emit":{"entry":10250,"gain":10,"s":{"type":"Tick","ts":21001,"key":2,"price":10260,"vol":5000}}"#,
    r#"{"query":"runs","key":1,"start":0,"end":50000,"vars":{"b":[0,2,4,6],"c":[8]},"emit":{"n":4,"max(b.price)":10270,"b":[{"type":"Tick","ts":0,"key":1,"price":10000,"vol":10},{"type":"Tick","ts":1000,"key":1,"price":10250,"vol":10},{"type":"Tick","ts":21000,"key":1,"price":10260,"vol":5000},{"type":"Tick","ts":40000,"key":1,"price":10270,"vol":10}]}"#,
    r#"{"query":"runs","key":2,"start":1,"end":50001,"vars":{"b":[1,3,5,7],"c":[9]},"emit":{"n":4,"max(b.price)":10270,"b":[{"type":"Tick","ts":1,"key":2,"price":10000,"vol":10},{"type":"Tick","ts":1001,"key":2,"price":10250,"vol":10},{"type":"Tick","ts":21001,"key":2,"price":10260,"vol":5000},{"type":"Tick","ts":40001,"key":2,"price":10270,"vol":10}]}"#,
];

fn run(args: &[&str]) -> Output {
    let o = Output::of(Command::new(CEP).args(args).output().unwrap(), args);
    assert_eq!(o.code, Some(0), "{o:#?}");
    o
}

/// Each line split into its text before `,"id":` and the id.
fn split_ids(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .map(|l| {
            let at = l.find(",\"id\":\"").unwrap_or_else(|| panic!("no id in {l}"));
            (l[..at].to_owned(), l[at..].to_owned())
        })
        .collect()
}

fn setup(dir: &Scratch) -> (String, String, String) {
    let (events, with, without) = (dir.join("ticks.csv"), dir.join("emit.cep"), dir.join("plain.cep"));
    std::fs::write(&events, EVENTS).unwrap();
    std::fs::write(&with, format!("{RISE_SPIKE}{RISE_SPIKE_EMIT};\n{RUNS}{RUNS_EMIT};\n")).unwrap();
    std::fs::write(&without, format!("{RISE_SPIKE};\n{RUNS};\n")).unwrap();
    let s = |p: std::path::PathBuf| p.to_str().unwrap().to_owned();
    (s(events), s(with), s(without))
}

#[test]
fn emit_lines_on_one_and_two_threads() {
    let dir = Scratch::new("emit", "threads");
    let (events, with, without) = setup(&dir);
    let plain = split_ids(&run(&["run", "--query", &without, "--events", &events]).stdout);
    assert_eq!(plain.len(), 4);
    for threads in ["1", "2"] {
        let o = run(&["run", "--query", &with, "--events", &events, "--threads", threads]);
        let got = split_ids(&o.stdout);
        let lines: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(lines, WANT, "--threads {threads}");
        // EMIT changes no id.
        let ids: Vec<&String> = got.iter().map(|(_, id)| id).collect();
        let plain_ids: Vec<&String> = plain.iter().map(|(_, id)| id).collect();
        assert_eq!(ids, plain_ids, "--threads {threads}");
    }
}

#[test]
fn emit_refuses_the_stack_engine_and_shows_in_check() {
    let dir = Scratch::new("emit", "check");
    let (events, _, _) = setup(&dir);
    let q = dir.join("any.cep");
    std::fs::write(&q, "PATTERN SEQ(Tick a, Tick b) WHERE skip-till-any-match WITHIN 5 EMIT a.price, b.*").unwrap();
    let q = q.to_str().unwrap();
    let o = Output::of(
        Command::new(CEP).args(["run", "--query", q, "--events", &events, "--engine", "stack"]).output().unwrap(),
        "stack",
    );
    assert_eq!(o.code, Some(2), "{o:#?}");
    assert!(o.stderr.contains("EMIT needs the run engine"), "{}", o.stderr);
    let o = run(&["check", "--query", q]);
    assert!(o.stdout.contains("engine: run"), "{}", o.stdout);
    assert!(o.stdout.contains("emit (values each match carries"), "{}", o.stdout);
    assert!(o.stdout.contains("a.price: last a.price"), "{}", o.stdout);
    assert!(o.stdout.contains("b: the events bound to `b`"), "{}", o.stdout);
}

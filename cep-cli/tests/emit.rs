//! `EMIT` through the binary (LANGUAGE.md §5, "What a match carries"): the
//! exact lines of `cep run` on one and two threads, ids equal to those of
//! the same queries without `EMIT`, `--engine stack` giving the lines of
//! `--engine run`, and what `cep check` shows. (Checkpoints with `EMIT`, on one runner and on
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

/// Three keys of A, B and C ticks for queries the stack engine runs: key 1
/// has two As before its B (and one after), key 2 a B with a NULL price,
/// key 3 a C with no A before it.
const ABC: &str = "type,ts,key,price,vol
A,0,1,100,1
A,1,2,50,
A,2,1,120,7
B,3,1,130,2
B,4,2,,3
A,5,1,90,1
C,6,1,125,9
C,7,2,60,4
C,8,3,10,1
B,9,1,95,5
C,10,1,200,6
";

/// Stack-engine queries with `EMIT`: expressions over several variables
/// and `x.*`, without a condition between variables (direct construction)
/// and with one (per event), in time and in events.
const ABC_QUERIES: &str = "QUERY pairs
PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 8 PARTITION BY key
EMIT b.price - a.price AS rise, a.*, b.vol * 2 AS v;
QUERY triples
PATTERN SEQ(A a, B b, C c) WHERE skip-till-any-match AND c.price > a.price WITHIN 20 EVENTS
EMIT c.price - a.price AS gain, b.*, c.*, a.ts;
QUERY one
PATTERN SEQ(C c) WHERE skip-till-any-match EMIT c.*, c.price + 1 AS p;
";

/// `--engine stack` with `EMIT` prints the lines of `--engine run`, on one
/// and two threads, in every construction; `auto` picks the stack engine.
#[test]
fn emit_on_the_stack_engine_as_on_the_run_engine() {
    let dir = Scratch::new("emit", "stack");
    let (events, q) = (dir.join("abc.csv"), dir.join("abc.cep"));
    std::fs::write(&events, ABC).unwrap();
    std::fs::write(&q, ABC_QUERIES).unwrap();
    let (events, q) = (events.to_str().unwrap(), q.to_str().unwrap());
    let o = run(&["check", "--query", q]);
    assert_eq!(o.stdout.matches("engine: stack").count(), 3, "{}", o.stdout);
    let want = run(&["run", "--query", q, "--events", events, "--engine", "run"]).stdout;
    // pairs: key 1 a0, a2 to b3 and a2, a5 to b9 (a0 is 9 ms before it),
    // key 2 a1 to b4: 5; triples: every A before a B before a C of a higher
    // price: a0, a1, a2 with b3, b4 at c6 (6), a1 at c7 (2), and those with
    // b9 too and a5 b9 at c10 (10): 18; one: each C: 4.
    assert_eq!(want.lines().count(), 27, "{want}");
    assert!(want.contains(r#""emit":{"rise":null,"a":{"type":"A","ts":1,"key":2,"price":50},"v":6}"#), "{want}");
    let lines = |s: &str| s.lines().map(|l| l[..l.find(",\"id\":").expect("an id")].to_owned()).collect::<Vec<_>>();
    for threads in ["1", "2"] {
        for construction in ["per-event", "direct", "batch"] {
            let args = ["run", "--query", q, "--events", events, "--threads", threads];
            let mut got = run(&[&args[..], &["--engine", "stack", "--construction", construction]].concat()).stdout;
            let mut want = run(&[&args[..], &["--engine", "run"]].concat()).stdout;
            if construction == "batch" {
                // Batches emit at window boundaries: the same lines, later.
                let sort = |s: &str| {
                    let mut v: Vec<&str> = s.lines().collect();
                    v.sort_unstable();
                    v.join("\n")
                };
                (got, want) = (sort(&got), sort(&want));
            }
            assert_eq!(lines(&got), lines(&want), "--threads {threads} --construction {construction}");
            assert_eq!(got, want, "ids, --threads {threads} --construction {construction}");
        }
        let auto = run(&["run", "--query", q, "--events", events, "--threads", threads]).stdout;
        assert_eq!(
            auto,
            run(&["run", "--query", q, "--events", events, "--threads", threads, "--engine", "stack"]).stdout
        );
    }
}

/// `cep check` shows the items, and the stack engine for a query that
/// qualifies (`EMIT` does not change the choice).
#[test]
fn emit_shows_in_check() {
    let dir = Scratch::new("emit", "check");
    let q = dir.join("any.cep");
    std::fs::write(&q, "PATTERN SEQ(Tick a, Tick b) WHERE skip-till-any-match WITHIN 5 EMIT a.price, b.*").unwrap();
    let q = q.to_str().unwrap();
    let o = run(&["check", "--query", q]);
    assert!(o.stdout.contains("engine: stack"), "{}", o.stdout);
    assert!(o.stdout.contains("emit (values each match carries"), "{}", o.stdout);
    assert!(o.stdout.contains("a.price: last a.price"), "{}", o.stdout);
    assert!(o.stdout.contains("b: the events bound to `b`"), "{}", o.stdout);
}

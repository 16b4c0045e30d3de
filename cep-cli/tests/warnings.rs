//! Warnings through the binary: each distinct warning once per run, on
//! every thread count and split; a field the rows read ahead do not show
//! is not reported as missing from the whole input.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

mod common;
use common::{CEP, Output, Scratch};

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The warning lines of `stderr`, each with how often it appears.
fn warnings(stderr: &str) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for line in stderr.lines().filter(|l| l.starts_with("warning:")) {
        *seen.entry(line.to_owned()).or_insert(0) += 1;
    }
    seen
}

/// A query warning (a type no event has), a level-alert warning (no
/// `key` column) and bad rows skipped, before and after the rows read
/// ahead: on 1, 2 and 3 threads, with shards and with the pipeline, each
/// warning is printed once, and the same ones as on one thread.
#[test]
fn each_warning_once_per_run_on_every_thread_count() {
    let dir = Scratch::new("warnings", "once");
    let (events, query, alerts) = (dir.join("a.csv"), dir.join("q.cep"), dir.join("levels.csv"));
    let mut text = String::from("type,ts,k,price\n");
    for i in 0..100_000 {
        if i == 10 || i == 50_000 {
            text.push_str("A,x,1,2\n");
        } else {
            text.push_str(&format!("A,{i},{},{}\n", i % 5, i % 13));
        }
    }
    std::fs::write(&events, text).unwrap();
    std::fs::write(&query, "QUERY q PATTERN SEQ(A a, B b) WHERE [k] AND a.price < b.price WITHIN 6;\n").unwrap();
    std::fs::write(&alerts, "id,key,field,direction,level,band\nx,1,price,above,5,0\n").unwrap();
    let run = |extra: &[&str]| {
        let args = ["run", "--query", p(&query), "--levels", p(&alerts), "--events", p(&events)];
        let o = Command::new(CEP).args(args).args(["--on-bad-row", "skip"]).args(extra).output().unwrap();
        let o = Output::of(o, extra);
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        warnings(&o.stderr)
    };
    let one = run(&["--threads", "1"]);
    assert_eq!(one.len(), 4, "{one:#?}");
    assert!(one.keys().any(|w| w.contains("type `B`")), "{one:#?}");
    assert!(one.keys().any(|w| w.contains("no field `key`")), "{one:#?}");
    assert_eq!(one.keys().filter(|w| w.contains("skipped")).count(), 2, "{one:#?}");
    for threads in ["2", "3"] {
        for split in ["shards", "pipeline"] {
            let got = run(&["--threads", threads, "--parallel", split]);
            assert!(got.values().all(|&n| n == 1), "{threads} threads, {split}: {got:#?}");
            assert_eq!(got, one, "{threads} threads, {split}");
        }
    }
}

/// A field first seen at row 9,000 of a JSON-lines file (past the 4,096
/// rows read ahead to learn the schema) is not reported as one that never
/// appears, and the query uses it: on one thread and on two.
#[test]
fn a_field_first_seen_after_the_read_ahead_is_not_reported_missing() {
    let dir = Scratch::new("warnings", "late_field");
    let (events, query) = (dir.join("a.jsonl"), dir.join("q.cep"));
    let mut text = String::new();
    for i in 0..20_000 {
        if i >= 9_000 && i % 100 == 0 {
            text.push_str(&format!("{{\"type\":\"A\",\"ts\":{i},\"late\":{i}}}\n"));
        } else {
            text.push_str(&format!("{{\"type\":\"A\",\"ts\":{i},\"x\":1}}\n"));
        }
    }
    std::fs::write(&events, text).unwrap();
    std::fs::write(&query, "QUERY q PATTERN SEQ(A a) WHERE a.late > 0;\n").unwrap();
    for threads in ["1", "2"] {
        let args = ["run", "--query", p(&query), "--events", p(&events), "--threads", threads];
        let o = Output::of(Command::new(CEP).args(args).output().unwrap(), threads);
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        assert!(!o.stderr.contains("never appears"), "{}", o.stderr);
        assert!(o.stderr.contains("`late` has not appeared in the first 4096 events of type A"), "{}", o.stderr);
        assert_eq!(o.stdout.lines().count(), 110, "{threads} threads");
    }
    // Where the whole input was read ahead, it never appears.
    std::fs::write(&events, "{\"type\":\"A\",\"ts\":1,\"x\":1}\n").unwrap();
    let args = ["run", "--query", p(&query), "--events", p(&events)];
    let o = Output::of(Command::new(CEP).args(args).output().unwrap(), "short");
    assert!(o.stderr.contains("field `late` never appears in events of type A"), "{}", o.stderr);
}

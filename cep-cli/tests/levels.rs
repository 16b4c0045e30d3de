//! `cep run --levels`: level alerts through the binary (issue 5) — the
//! worked example line for line, bad alert files with their lines, alerts
//! beside a query, out-of-order input, and W1 ticks against the library.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::Scratch;

use cep_bench::levels;
use cep_bench::w1::{RISE_SPIKE, Ticks};
use cep_core::Value;
use cep_index::LevelIndex;

const CEP: &str = env!("CARGO_BIN_EXE_cep");

fn scratch(name: &str) -> Scratch {
    Scratch::new("levels", name)
}

fn cep(args: &[&str]) -> Output {
    Command::new(CEP).args(args).output().unwrap()
}

fn stdout(o: &Output) -> Vec<String> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap().lines().map(str::to_owned).collect()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

const HEADER: &str = "id,key,field,direction,level,band\n";

#[test]
fn the_worked_example_line_for_line() {
    let dir = scratch("worked");
    let (alerts, events) = (dir.join("alerts.csv"), dir.join("ticks.csv"));
    std::fs::write(&alerts, format!("{HEADER}a17,7,price,above,10100,5\n")).unwrap();
    let mut csv = String::from("type,ts,key,price\n");
    for (i, p) in [10000, 10120, 10130, 10098, 10110, 10090, 10105].iter().enumerate() {
        csv.push_str(&format!("Tick,{},7,{p}\n", i * 200));
        csv.push_str(&format!("Tick,{},8,{p}\n", i * 200 + 100)); // another key: never fires
    }
    std::fs::write(&events, csv).unwrap();
    let o = cep(&["run", "--levels", path(&alerts), "--events", path(&events)]);
    assert_eq!(
        stdout(&o),
        [
            r#"{"level":"a17","key":7,"ts":200,"row":2,"value":10120,"direction":"above"}"#,
            r#"{"level":"a17","key":7,"ts":1200,"row":12,"value":10105,"direction":"above"}"#,
        ]
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("summary: 14 rows read, 0 skipped, 0 late, 0 matches, 2 level alerts fired"), "{stderr}");
}

#[test]
fn bad_alert_files_name_the_line() {
    let dir = scratch("bad");
    let events = dir.join("ticks.csv");
    std::fs::write(&events, "ts,key,price\n0,1,5\n").unwrap();
    for (name, text, want) in [
        ("dir", format!("{HEADER}a,1,price,above,5,0\nb,1,price,up,5,0\n"), "dir.csv:3: unknown direction `up`"),
        (
            "band",
            format!("{HEADER}a,1,price,above,5,-1\n"),
            "band.csv:2: alert `a`: the band must be a finite number >= 0",
        ),
        (
            "dup",
            format!("{HEADER}a,1,price,above,5,0\na,2,price,below,5,0\n"),
            "dup.csv:3: duplicate alert id `a` (first on line 2)",
        ),
        (
            "missing",
            "id,key,field,direction,level\na,1,price,above,5\n".to_owned(),
            "missing.csv:1: missing column `band`",
        ),
        ("cells", format!("{HEADER}a,1,price,above,5\n"), "cells.csv:2: 5 cells, expected 6"),
        ("level", format!("{HEADER}a,1,price,above,high,0\n"), "level.csv:2: level `high` is not a number"),
        (
            "range",
            format!("{HEADER}a,1,price,enter,5,0\n"),
            "range.csv:2: level `5` of a `enter` alert must be a range LO..HI",
        ),
        ("empty", String::new(), "empty.csv:1: empty file"),
    ] {
        let file = dir.join(format!("{name}.csv"));
        std::fs::write(&file, text).unwrap();
        let o = cep(&["run", "--levels", path(&file), "--events", path(&events)]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(want), "{name}: {stderr}");
        assert!(o.stdout.is_empty(), "{name}");
    }
    let o = cep(&["run", "--levels", path(&dir.join("nope.csv")), "--events", path(&events)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
}

#[test]
fn run_needs_a_query_or_levels() {
    let o = cep(&["run", "--events", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("run needs --query, --levels or both"));
}

/// Fires of the library's index over ticks, as output lines.
fn library_lines(ticks: &[cep_bench::w1::Tick], keys: usize, per_key: usize) -> Vec<String> {
    let mut idx = LevelIndex::new();
    idx.add_all(levels::alerts(keys, per_key)).unwrap();
    let price = idx.field("price").unwrap();
    let mut lines = Vec::new();
    for t in ticks {
        idx.update(price, Value::Int(t.key), Value::Int(t.price), t.ts, t.row, |f| {
            let mut l = Vec::new();
            f.write_json(&mut l);
            lines.push(String::from_utf8(l).unwrap());
        });
    }
    lines
}

fn write_w1(path: &Path, ticks: &[cep_bench::w1::Tick]) {
    let mut s = String::from("type,ts,key,price,vol\n");
    for t in ticks {
        s.push_str(&format!("Tick,{},{},{},{}\n", t.ts, t.key, t.price, t.vol));
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn w1_ticks_fire_as_the_library_does_alone_and_beside_a_query() {
    let dir = scratch("w1");
    let (alerts, events, query) = (dir.join("levels.csv"), dir.join("w1.csv"), dir.join("q.cep"));
    let ticks: Vec<_> = Ticks::new(200_000).collect();
    write_w1(&events, &ticks);
    let mut f = Vec::new();
    levels::write_csv(&mut f, levels::KEYS, 10).unwrap();
    std::fs::write(&alerts, f).unwrap();
    std::fs::write(&query, RISE_SPIKE).unwrap();
    let want = library_lines(&ticks, levels::KEYS, 10);
    assert!(want.len() > 1000, "{}", want.len());

    let alone = stdout(&cep(&["run", "--levels", path(&alerts), "--events", path(&events)]));
    assert_eq!(alone, want);

    // Beside the query: the same fires, in the same order, among its matches.
    let both = stdout(&cep(&["run", "--levels", path(&alerts), "--query", path(&query), "--events", path(&events)]));
    let fires: Vec<String> = both.iter().filter(|l| l.starts_with("{\"level\"")).cloned().collect();
    assert_eq!(fires, want);
    let matches = stdout(&cep(&["run", "--query", path(&query), "--events", path(&events)]));
    assert!(!matches.is_empty());
    assert_eq!(both.len(), fires.len() + matches.len());

    // Out of order within --max-delay: released in ts order, so the same fires.
    let mut shuffled = ticks.clone();
    for pair in shuffled.chunks_mut(2) {
        pair.reverse(); // each swap moves an event by 2 ms
    }
    let late_file = dir.join("shuffled.csv");
    write_w1(&late_file, &shuffled);
    let out = stdout(&cep(&["run", "--levels", path(&alerts), "--events", path(&late_file), "--max-delay", "2"]));
    // Rows differ (the file's order); compare without them.
    let strip = |l: &String| {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        v.as_object_mut().unwrap().remove("row");
        v.to_string()
    };
    assert_eq!(out.iter().map(strip).collect::<Vec<_>>(), want.iter().map(strip).collect::<Vec<_>>());
}

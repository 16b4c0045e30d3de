//! `--max-delay`: out-of-order input within the delay gives exactly the
//! matches of the sorted input (issue 4), and events beyond it are late.

use std::path::Path;
use std::process::Command;

mod common;
use common::Scratch;

use cep_bench::w1::{RISE_SPIKE, Ticks};
use cep_testkit::XorShift64;

const CEP: &str = env!("CARGO_BIN_EXE_cep");

fn scratch(name: &str) -> Scratch {
    Scratch::new("max-delay", name)
}

fn write_csv(path: &Path, ticks: &[cep_bench::w1::Tick]) {
    let mut s = String::from("type,ts,key,price,vol\n");
    for t in ticks {
        s.push_str(&format!("Tick,{},{},{},{}\n", t.ts, t.key, t.price, t.vol));
    }
    std::fs::write(path, s).unwrap();
}

/// Runs `cep run` and returns (matches as JSON values, stderr).
fn run(dir: &Path, events: &Path, extra: &[&str]) -> (Vec<serde_json::Value>, String) {
    let q = dir.join("q.cep");
    std::fs::write(&q, RISE_SPIKE).unwrap();
    let out = Command::new(CEP)
        .args(["run", "--query", q.to_str().unwrap(), "--events", events.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let lines = String::from_utf8(out.stdout).unwrap();
    (lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect(), stderr)
}

/// A match with its rows replaced by the bound events' timestamps (rows
/// differ between a file and its shuffled copy; ts = 2 · original row).
fn by_ts(m: &serde_json::Value, ts_of_row: &[i64]) -> String {
    let mut m = m.clone();
    for rows in m["vars"].as_object_mut().unwrap().values_mut() {
        for r in rows.as_array_mut().unwrap() {
            *r = ts_of_row[r.as_u64().unwrap() as usize].into();
        }
    }
    m.as_object_mut().unwrap().remove("id");
    m.to_string()
}

#[test]
fn displaced_events_within_the_delay_give_the_sorted_matches() {
    let dir = scratch("shuffle");
    let sorted: Vec<_> = Ticks::new(300_000).collect();
    // Hold 5 % of the events back by up to 499 ms: sort by ts + delay, so no
    // event comes after one more than 499 ms younger than it.
    let mut rng = XorShift64::default();
    let mut keyed: Vec<(i64, cep_bench::w1::Tick)> = sorted
        .iter()
        .map(|t| {
            let hold = if rng.next_u64() % 20 == 0 { (rng.next_u64() % 500) as i64 } else { 0 };
            (t.ts + hold, *t)
        })
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    let shuffled: Vec<_> = keyed.into_iter().map(|(_, t)| t).collect();
    assert_ne!(sorted, shuffled);
    let (a, b) = (dir.join("sorted.csv"), dir.join("shuffled.csv"));
    write_csv(&a, &sorted);
    write_csv(&b, &shuffled);
    let (want, _) = run(&dir, &a, &["--max-delay", "500"]);
    let (got, stderr) = run(&dir, &b, &["--max-delay", "500"]);
    assert!(stderr.contains(" 0 late"), "{stderr}");
    let ts_sorted: Vec<i64> = sorted.iter().map(|t| t.ts).collect();
    let ts_shuffled: Vec<i64> = shuffled.iter().map(|t| t.ts).collect();
    let want: Vec<String> = want.iter().map(|m| by_ts(m, &ts_sorted)).collect();
    let got: Vec<String> = got.iter().map(|m| by_ts(m, &ts_shuffled)).collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    // Without the delay the same shuffled file loses events as late.
    let (_, stderr) = run(&dir, &b, &[]);
    assert!(!stderr.contains(" 0 late"), "{stderr}");
}

#[test]
fn events_beyond_the_delay_are_late() {
    let dir = scratch("late");
    let csv = dir.join("e.csv");
    std::fs::write(&csv, "type,ts,key,price,vol\nTick,1000,1,1,1\nTick,2000,1,1,1\nTick,1400,1,1,1\nTick,1600,1,1,1\n")
        .unwrap();
    // Watermark after ts 2000 with a 500 ms delay: 1500. 1400 is late, 1600 is not.
    let (_, stderr) = run(&dir, &csv, &["--max-delay", "500 ms"]);
    assert!(stderr.contains("4 rows read, 0 skipped, 1 late"), "{stderr}");
}

/// A delay the command line cannot read is refused (exit 2) with what is
/// wrong; one in absolute units is converted to timestamp units.
#[test]
fn delays_are_read_with_their_units() {
    let s = scratch("units");
    let events = s.path().join("e.csv");
    write_csv(&events, &Ticks::new(2000).collect::<Vec<_>>());
    let q = s.path().join("q.cep");
    std::fs::write(&q, RISE_SPIKE).unwrap();
    for (delay, says) in [
        ("5 fortnights", "unknown duration unit `fortnights` in --max-delay"),
        ("1.5x", "unknown duration unit `x` in --max-delay"),
        ("0.5ms", "invalid --max-delay `0.5ms`: not a whole number of timestamp units"),
    ] {
        let out = Command::new(CEP)
            .args(["run", "--query", q.to_str().unwrap(), "--events", events.to_str().unwrap(), "--max-delay", delay])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{delay}: {stderr}");
        assert!(stderr.contains(says), "{delay}: {stderr}");
    }
    let (plain, _) = run(s.path(), &events, &[]);
    let (delayed, _) = run(s.path(), &events, &["--max-delay", "2 s"]);
    assert_eq!(plain, delayed);
}

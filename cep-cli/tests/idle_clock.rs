//! The idle clock: on a quiet stdin the watermark follows the wall clock, so
//! a trailing `NOT … WITHIN` completes without more events or the end of the
//! input (issue 4).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::{CEP, Scratch};

/// Starts `cep run` on stdin (CSV) with `query` and an idle timeout; returns
/// the child and its scratch directory.
fn start(name: &str, query: &str, idle: &str) -> (Child, Scratch) {
    let dir = Scratch::new("idle", name);
    let q = dir.join("q.cep");
    std::fs::write(&q, query).unwrap();
    let child = Command::new(CEP)
        .args(["run", "--query", q.to_str().unwrap(), "--format", "csv", "--idle-timeout", idle])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, dir)
}

#[test]
fn trailing_negation_completes_on_an_idle_stdin() {
    // An A, then 300 ms (event time) without a B.
    let (mut child, _dir) = start("quiet", "QUERY quiet PATTERN SEQ(A a, NOT B n WITHIN 300 ms)", "100ms");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    writeln!(stdin, "type,ts\nA,1000").unwrap();
    stdin.flush().unwrap();
    // The pipe stays open: the match can only come from the idle clock.
    let started = Instant::now();
    let line = rx.recv_timeout(Duration::from_secs(10)).expect("the match arrives while stdin is open");
    assert!(started.elapsed() >= Duration::from_millis(250), "not before the quiet period could pass");
    let m: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(m["query"], "quiet");
    assert_eq!(m["end"], 1300);
    assert_eq!(m["vars"]["a"], serde_json::json!([0]));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 row"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_negation_seen_before_the_quiet_period_ends_still_counts() {
    let (mut child, _dir) = start("neg", "PATTERN SEQ(A a, NOT B n WITHIN 5 s)", "50ms");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "type,ts\nA,1000").unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // 300 ms of idle wall time moved the watermark to about 1300: a B at
    // 2000 is still inside the quiet period and kills the match.
    writeln!(stdin, "B,2000").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

//! Quiet streams. A match goes out as soon as the input pauses, on one
//! thread or several, from stdin or a named pipe, without waiting for the
//! next event or the end. With `--idle-timeout`, the watermark follows the
//! wall clock, so a trailing `NOT … WITHIN` completes without more events or
//! the end of the input (issue 4).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::{CEP, Scratch};

/// Starts `cep run` on stdin (CSV) with `query` and an idle timeout; returns
/// the child and its scratch directory.
fn start(name: &str, query: &str, idle: &str) -> (Child, Scratch) {
    start_with(name, query, &["--idle-timeout", idle])
}

/// Starts `cep run --query Q --format csv` with `args` on stdin.
fn start_with(name: &str, query: &str, args: &[&str]) -> (Child, Scratch) {
    let dir = Scratch::new("idle", name);
    let q = dir.join("q.cep");
    std::fs::write(&q, query).unwrap();
    let child = Command::new(CEP)
        .args(["run", "--query", q.to_str().unwrap(), "--format", "csv"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, dir)
}

/// The lines of `out`, as they come, on a channel.
fn lines_of(out: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    rx
}

/// A pair completed by the second event goes out while stdin stays open
/// and quiet: on one thread, and on shards (which hold events for a batch
/// until the reader is about to wait). Before, on shards, it waited for the
/// next event.
#[test]
fn a_match_goes_out_while_stdin_stays_open() {
    for threads in ["1", "2", "3"] {
        let (mut child, _dir) =
            start_with(&format!("open-{threads}"), "QUERY ab PATTERN SEQ(A a, B b) WHERE [k]", &["--threads", threads]);
        let mut stdin = child.stdin.take().unwrap();
        let rx = lines_of(child.stdout.take().unwrap());
        writeln!(stdin, "type,ts,k\nA,1,7\nB,2,7").unwrap();
        stdin.flush().unwrap();
        let line = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| panic!("no match on {threads} threads"));
        assert!(line.starts_with(r#"{"query":"ab","key":7,"start":1,"end":2,"#), "{line}");
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(rx.recv_timeout(Duration::from_secs(10)).is_err(), "one match only");
    }
}

/// A named pipe is a stream too: not read ahead (which waited for 4,096
/// events or the end), its matches out as it pauses.
#[cfg(unix)]
#[test]
fn a_named_pipe_is_read_as_a_stream() {
    let dir = Scratch::new("idle", "fifo");
    let (fifo, q) = (dir.join("events"), dir.join("q.cep"));
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    std::fs::write(&q, "QUERY ab PATTERN SEQ(A a, B b) WHERE [k]").unwrap();
    let mut child = Command::new(CEP)
        .args(["run", "--query", q.to_str().unwrap(), "--format", "csv", "--events", fifo.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines_of(child.stdout.take().unwrap());
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    writeln!(w, "type,ts,k\nA,1,7\nB,2,7").unwrap();
    w.flush().unwrap();
    let line = rx.recv_timeout(Duration::from_secs(10)).expect("the match arrives while the pipe is open");
    assert!(line.starts_with(r#"{"query":"ab","key":7,"start":1,"end":2,"#), "{line}");
    drop(w);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 rows read"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn trailing_negation_completes_on_an_idle_stdin() {
    // An A, then 300 ms (event time) without a B.
    let (mut child, _dir) = start("quiet", "QUERY quiet PATTERN SEQ(A a, NOT B n WITHIN 300 ms)", "100ms");
    let mut stdin = child.stdin.take().unwrap();
    let rx = lines_of(child.stdout.take().unwrap());
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

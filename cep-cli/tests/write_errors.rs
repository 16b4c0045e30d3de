//! Writing the output fails (LANGUAGE.md §6): a closed pipe ends the run
//! quietly, as filters do; a full disk stops it with an error naming the
//! output. Either way the summary counts exactly the matches written, on
//! one thread and on several.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

mod common;
use common::{CEP, Output, Scratch};

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Ticks of 50 keys and a query with one match per tick (`rows` lines of
/// about 80 bytes: far more than a pipe holds). Returns the arguments.
fn inputs(dir: &Path, rows: usize) -> Vec<String> {
    let (events, query) = (dir.join("ticks.csv"), dir.join("every.cep"));
    let mut csv = String::from("type,ts,key,price,vol\n");
    for i in 0..rows {
        csv.push_str(&format!("Tick,{i},{},{},{}\n", i % 50, 100 + i % 7, i % 3000));
    }
    std::fs::write(&events, csv).unwrap();
    std::fs::write(&query, "QUERY every PATTERN SEQ(Tick t) WHERE [key];\n").unwrap();
    ["run", "--query", p(&query), "--events", p(&events)].map(str::to_owned).to_vec()
}

/// The match count of a summary line (`…, M matches (…)`).
fn matches_in(stderr: &str) -> u64 {
    let line = stderr.lines().find(|l| l.starts_with("summary:")).unwrap_or_else(|| panic!("no summary: {stderr}"));
    let before = line.split(" match").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{line}"))
}

/// Read to the end, the summary counts every line on 1, 2 and 3 threads.
#[test]
fn the_summary_counts_the_lines_written_on_every_thread_count() {
    let dir = Scratch::new("write_errors", "all");
    let args = inputs(&dir, 100_000);
    for threads in ["1", "2", "3"] {
        let o = Output::of(Command::new(CEP).args(&args).args(["--threads", threads]).output().unwrap(), threads);
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        assert_eq!(o.stdout.lines().count(), 100_000);
        assert_eq!(matches_in(&o.stderr), 100_000, "{threads} threads: {}", o.stderr);
    }
}

/// `cep run … | head -1`: the reader takes one line and closes the pipe.
/// The run ends quietly (exit 0, no error), and its summary counts the
/// lines it wrote: at least those read, at most those plus what the pipe
/// held, fewer than a run read to the end.
#[test]
fn a_closed_pipe_ends_the_run_quietly_with_exact_counts() {
    let dir = Scratch::new("write_errors", "pipe");
    let args = inputs(&dir, 200_000);
    for threads in ["1", "2", "3"] {
        let mut child = Command::new(CEP)
            .args(&args)
            .args(["--threads", threads])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.contains(&b'\n') {
            let n = stdout.read(&mut buf).unwrap();
            assert!(n > 0, "no line");
            got.extend_from_slice(&buf[..n]);
        }
        drop(stdout); // the reader goes away
        let o = Output::of(child.wait_with_output().unwrap(), threads);
        assert_eq!(o.code, Some(0), "{threads} threads: {}", o.stderr);
        assert!(!o.stderr.contains("Broken pipe") && !o.stderr.contains("error"), "{}", o.stderr);
        let read = got.iter().filter(|&&b| b == b'\n').count() as u64;
        let count = matches_in(&o.stderr);
        // A pipe holds 64 KiB at most here; a line has more than 60 bytes.
        assert!(read <= count && count <= read + (64 << 10) / 60 + 1, "{threads} threads: {read} read, {}", o.stderr);
        assert!(o.stderr.contains("output closed"), "{}", o.stderr);
    }
}

/// `--out /dev/full`: every write fails. The run stops with exit 1 and an
/// error naming the file, and its summary counts no match (none was
/// written), on one thread and on two.
#[test]
fn a_full_disk_stops_the_run_with_the_count_written() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        return; // not Linux
    }
    let dir = Scratch::new("write_errors", "full");
    let args = inputs(&dir, 100_000);
    for threads in ["1", "2", "3"] {
        let o = Command::new(CEP).args(&args).args(["--threads", threads, "--out", "/dev/full"]).output().unwrap();
        let o = Output::of(o, threads);
        assert_eq!(o.code, Some(1), "{}", o.stderr);
        assert!(o.stderr.contains("/dev/full") && o.stderr.contains("No space left"), "{}", o.stderr);
        assert_eq!(matches_in(&o.stderr), 0, "{threads} threads: {}", o.stderr);
    }
}

//! `cep run --threads N` and without `--threads` (as many shards as
//! cores): the output of `--threads 1`, byte for byte, on W1 ticks (in
//! order and displaced within the delay), matches and level alerts.

use std::path::Path;
use std::process::Command;

mod common;
use common::Scratch;

use cep_bench::levels;
use cep_bench::w1::{RISE_SPIKE, Ticks};

const CEP: &str = env!("CARGO_BIN_EXE_cep");

fn scratch(name: &str) -> Scratch {
    Scratch::new("threads", name)
}

fn sorted_output(args: &[&str]) -> (Vec<String>, String) {
    let o = Command::new(CEP).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    let mut lines: Vec<String> = String::from_utf8(o.stdout).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    (lines, stderr)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn threads_give_the_matches_of_one_thread() {
    threads_give_the_matches_of_one_thread_on("w1-displaced", true);
}

/// In order and without a delay, whole blocks of the file go to the shards
/// (`ShardedRunner::push_block`), for the queries and the level alerts.
#[test]
fn threads_give_the_matches_of_one_thread_in_whole_blocks() {
    threads_give_the_matches_of_one_thread_on("w1-in-order", false);
}

/// W1 ticks, `displaced` in pairs by 2 ms and read with `--max-delay 2`, or
/// in order and without a delay.
fn threads_give_the_matches_of_one_thread_on(name: &str, displaced: bool) {
    let dir = scratch(name);
    let (events, query, alerts) = (dir.join("w1.csv"), dir.join("q.cep"), dir.join("levels.csv"));
    let mut csv = String::from("type,ts,key,price,vol\n");
    let ticks: Vec<_> = Ticks::new(300_000).collect();
    let mut shuffled = ticks.clone();
    if displaced {
        for pair in shuffled.chunks_mut(2) {
            pair.reverse();
        }
    }
    for t in &shuffled {
        csv.push_str(&format!("Tick,{},{},{},{}\n", t.ts, t.key, t.price, t.vol));
    }
    std::fs::write(&events, csv).unwrap();
    std::fs::write(&query, format!("{RISE_SPIKE}\nQUERY any PATTERN SEQ(Tick a, Tick b) WHERE [key] AND b.vol >= 2000 AND a.vol >= 2000 WITHIN 1 s;\n")).unwrap();
    let mut f = Vec::new();
    levels::write_csv(&mut f, levels::KEYS, 5).unwrap();
    std::fs::write(&alerts, f).unwrap();
    let delay = if displaced { "2" } else { "0" };
    let base = ["run", "--query", p(&query), "--levels", p(&alerts), "--events", p(&events), "--max-delay", delay];
    // Without --threads the queries run on a shard per core (on one core
    // the default is --threads 1 itself; CI has two): the output of
    // --threads 1, in the same order, as with --threads 2 and 3.
    let run = |extra: &[&str]| Command::new(CEP).args([&base[..], extra].concat()).output().unwrap();
    let one_thread = run(&["--threads", "1"]);
    assert!(one_thread.status.success());
    let (one, stderr_one) = sorted_output(&[&base[..], &["--threads", "1"]].concat());
    assert!(one.len() > 1000, "{}", one.len());
    assert!(one.iter().any(|l| l.starts_with("{\"query\":\"rise_spike\"")));
    // Each way of sharing the threads too (`--parallel`).
    let variants: [&[&str]; 5] = [
        &[],
        &["--threads", "2"],
        &["--threads", "3"],
        &["--threads", "2", "--parallel", "shards"],
        &["--threads", "2", "--parallel", "pipeline"],
    ];
    for n in variants {
        let many = run(n);
        let stderr = String::from_utf8_lossy(&many.stderr);
        assert!(many.status.success(), "{stderr}");
        assert!(many.stdout == one_thread.stdout, "{n:?} and --threads 1 differ");
        // The same summary line, counts included.
        let summary = |s: &str| s.lines().find(|l| l.starts_with("summary:")).unwrap().to_owned();
        assert_eq!(summary(&stderr), summary(&stderr_one));
    }
    // The same rows as a stream on stdin (read on a thread of its own,
    // the shards synced whenever the reader would wait): the same bytes.
    let streamed: Vec<&str> =
        base.iter().map(|a| if *a == p(&events) { "-" } else { a }).chain(["--format", "csv"]).collect();
    for n in ["1", "2"] {
        let mut cmd = Command::new(CEP);
        cmd.args(&streamed).args(["--threads", n]);
        let o = common::with_stdin(&mut cmd, &std::fs::read(&events).unwrap(), ("stdin", n));
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        assert!(o.stdout.as_bytes() == one_thread.stdout, "stdin on --threads {n} and a file on --threads 1 differ");
    }
}

/// A file read on several threads reports its bad rows as one thread does:
/// the same lines in the same order, skipped or stopping the run.
#[test]
fn bad_rows_read_on_threads_read_as_on_one() {
    let dir = scratch("bad");
    let (events, query) = (dir.join("bad.csv"), dir.join("q.cep"));
    // Quoted cells with newlines and CRLF line ends, so that rows and lines
    // differ and blocks are cut between records only.
    let mut csv = String::from("ts,key,price,note\r\n");
    for i in 0..60_000u64 {
        match i % 9_973 {
            17 => csv.push_str(&format!("oops,{},1,x\r\n", i % 50)),
            41 => csv.push_str(&format!("{i},{},1\r\n", i % 50)),
            _ if i % 101 == 0 => csv.push_str(&format!("{i},{},{},\"a\r\nb, \"\"c\"\"\"\r\n", i % 50, i % 13)),
            _ => csv.push_str(&format!("{i},{},{},\r\n", i % 50, i % 13)),
        }
    }
    std::fs::write(&events, csv).unwrap();
    std::fs::write(&query, "QUERY up PATTERN SEQ(Event a, Event b) WHERE [key] AND b.price > a.price WITHIN 200;\n")
        .unwrap();
    let base = ["run", "--query", p(&query), "--events", p(&events)];
    let run = |extra: &[&str]| Command::new(CEP).args([&base[..], extra].concat()).output().unwrap();
    let skipped = |o: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter(|l| l.starts_with("warning: skipped"))
            .map(str::to_owned)
            .collect()
    };
    let one = run(&["--on-bad-row", "skip", "--threads", "1"]);
    let two = run(&["--on-bad-row", "skip", "--threads", "2"]);
    // The default parses on every core, and prints what one thread prints.
    let default = run(&["--on-bad-row", "skip"]);
    assert_eq!((&default.stdout, &default.stderr), (&one.stdout, &one.stderr));
    assert!(one.status.success() && two.status.success());
    assert_eq!(skipped(&one).len(), 14, "{}", String::from_utf8_lossy(&one.stderr));
    assert_eq!(skipped(&one), skipped(&two));
    let sorted = |o: &std::process::Output| {
        let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(str::to_owned).collect();
        v.sort();
        v
    };
    assert!(!sorted(&one).is_empty());
    assert_eq!(sorted(&one), sorted(&two));
    // Failing on the first bad row past the read-ahead: the same message.
    let (one, two) = (run(&["--threads", "1"]), run(&["--threads", "2"]));
    let default = run(&[]);
    assert_eq!((&default.stdout, &default.stderr, default.status.code()), (&one.stdout, &one.stderr, Some(2)));
    assert_eq!(one.status.code(), Some(2));
    assert_eq!(two.status.code(), Some(2));
    let error = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stderr).lines().find(|l| l.starts_with("error")).map(str::to_owned)
    };
    assert!(error(&one).is_some_and(|e| e.contains("bad.csv:")), "{:?}", error(&one));
    assert_eq!(error(&one), error(&two));
}

/// A run stopped by a bad row or, under `--late fail`, by a late event, past
/// the read-ahead: on threads as on one, the matches of the events before it
/// are written, in the same order (only those: deadlines not yet passed stay
/// pending), and the summary counts them.
#[test]
fn a_run_stopped_by_its_input_writes_on_threads_what_one_thread_writes() {
    let dir = scratch("stopped");
    let query = dir.join("q.cep");
    std::fs::write(
        &query,
        "QUERY up PATTERN SEQ(Event a, Event b) WHERE [key] AND b.price > a.price WITHIN 200;\n\
         QUERY quiet PATTERN SEQ(Event a, NOT Event n WITHIN 40) WHERE [key] AND a.price = 12 AND n.price < 3;\n",
    )
    .unwrap();
    // 30,000 rows over 50 keys; row 25,000 is the bad one, or a late one.
    let write = |name: &str, stop: &str| {
        let mut csv = String::from("ts,key,price\n");
        for i in 0..30_000u64 {
            match i {
                25_000 => csv.push_str(stop),
                _ => csv.push_str(&format!("{i},{},{}\n", i % 50, (i * 7) % 13)),
            }
        }
        let path = dir.join(name);
        std::fs::write(&path, csv).unwrap();
        path
    };
    let bad = write("bad.csv", "oops,3,1\n");
    let late = write("late.csv", "100,3,1\n");
    for (events, extra) in [(&bad, &[][..]), (&late, &["--late", "fail"][..])] {
        let run = |threads: &str| {
            let args =
                [&["run", "--query", p(&query), "--events", p(events), "--threads", threads][..], extra].concat();
            Command::new(CEP).args(args).output().unwrap()
        };
        let sorted = |o: &std::process::Output| {
            let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(str::to_owned).collect();
            v.sort();
            v
        };
        let summary = |o: &std::process::Output| {
            String::from_utf8_lossy(&o.stderr).lines().find(|l| l.starts_with("summary:")).map(str::to_owned)
        };
        let one = run("1");
        assert_eq!(one.status.code(), Some(2), "{}", String::from_utf8_lossy(&one.stderr));
        let matches = sorted(&one);
        // Matches of both queries, none of rows past the stop.
        assert!(matches.iter().filter(|l| l.contains("\"query\":\"up\"")).count() > 1_000, "{}", matches.len());
        assert!(matches.iter().any(|l| l.contains("\"query\":\"quiet\"")));
        let rows = |l: &str| -> Vec<u64> {
            let vars = &l[l.find("\"vars\"").unwrap()..l.find("\"id\"").unwrap()];
            vars.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect()
        };
        let last = matches.iter().flat_map(|l| rows(l)).max().unwrap();
        assert!((24_900..25_000).contains(&last), "the last row in a match: {last}");
        // The late event that stopped the run is counted.
        let late = if extra.is_empty() { "0 late" } else { "1 late" };
        let expected = format!("{late}, {} matches", matches.len());
        assert!(summary(&one).is_some_and(|s| s.contains(&expected)), "{:?} vs {expected}", summary(&one));
        for threads in ["2", "3"] {
            let many = run(threads);
            assert_eq!(many.status.code(), Some(2), "--threads {threads}");
            assert!(
                many.stdout == one.stdout,
                "--threads {threads}: {} matches, not {}, or not in the same order",
                sorted(&many).len(),
                matches.len()
            );
            assert_eq!(summary(&many), summary(&one), "--threads {threads}");
        }
    }
}

/// More queries than the sharded runtime routes (63): `--threads 2` runs
/// them on one thread, with a warning, and gives their matches.
#[test]
fn more_queries_than_shards_route_run_on_one_thread() {
    let dir = scratch("many-queries");
    let (events, query) = (dir.join("e.csv"), dir.join("q.cep"));
    std::fs::write(&events, "ts,type,x\n0,A,1\n1,B,2\n").unwrap();
    std::fs::write(&query, "PATTERN SEQ(A a, B b);\n".repeat(64)).unwrap();
    let (one, _) = sorted_output(&["run", "--query", p(&query), "--events", p(&events), "--threads", "1"]);
    let (two, stderr) = sorted_output(&["run", "--query", p(&query), "--events", p(&events), "--threads", "2"]);
    assert_eq!(one.len(), 64);
    assert_eq!(two, one);
    assert!(stderr.contains("warning: --threads above 1 runs at most 63 queries"), "{stderr}");
}

/// `--parallel` says how a file's threads share the work, and `--stats`
/// says what was chosen and why; a word it does not know is bad input.
#[test]
fn parallel_chooses_shards_or_a_pipeline_and_stats_say_which() {
    let dir = scratch("parallel");
    let (events, query) = (dir.join("w1.csv"), dir.join("q.cep"));
    let mut csv = String::from("type,ts,key,price,vol\n");
    for t in Ticks::new(20_000) {
        csv.push_str(&format!("Tick,{},{},{},{}\n", t.ts, t.key, t.price, t.vol));
    }
    std::fs::write(&events, csv).unwrap();
    std::fs::write(&query, RISE_SPIKE).unwrap();
    let base = ["run", "--query", p(&query), "--events", p(&events), "--stats"];
    let run = |extra: &[&str]| {
        let o = Command::new(CEP).args([&base[..], extra].concat()).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        (o.status.code(), o.stdout, stderr)
    };
    let (code, one, stderr) = run(&["--threads", "1"]);
    assert_eq!(code, Some(0), "{stderr}");
    // One thread has nothing to share.
    assert!(!stderr.contains("stats: threads:"), "{stderr}");
    for (word, says) in [
        ("shards", "stats: threads: shards (--parallel shards)"),
        ("pipeline", "stats: threads: a pipeline (--parallel pipeline)"),
        ("auto", "(timed on the rows read ahead: parsing "),
    ] {
        let (code, out, stderr) = run(&["--threads", "2", "--parallel", word]);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(out == one, "--parallel {word} and --threads 1 differ");
        let line = stderr.lines().find(|l| l.starts_with("stats: threads:")).unwrap_or_else(|| panic!("{stderr}"));
        assert!(line.contains(says), "{line}");
        // A pipeline runs the queries on one runner, shards on two.
        let shards = stderr.lines().filter(|l| l.starts_with("stats: shard ")).count();
        assert_eq!(shards, if line.contains("a pipeline") { 0 } else { 2 }, "{stderr}");
    }
    // Checkpointed, `auto` takes shards without timing: a resumed run
    // must split as the first did.
    let cp = dir.join("cp");
    let (code, out, stderr) = run(&["--threads", "2", "--checkpoint", p(&cp)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(out == one);
    assert!(stderr.contains("stats: threads: shards (--checkpoint)"), "{stderr}");
    let (code, _, stderr) = run(&["--threads", "2", "--parallel", "both"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unknown --parallel `both`: expected auto, shards or pipeline"), "{stderr}");
}

/// An absurd thread count is refused up front, not a panic when the system
/// runs out of threads.
#[test]
fn too_many_threads_is_an_error() {
    let dir = scratch("too-many-threads");
    let (events, query) = (dir.join("e.csv"), dir.join("q.cep"));
    std::fs::write(&events, "ts,type\n0,A\n").unwrap();
    std::fs::write(&query, "PATTERN A a").unwrap();
    let o = Command::new(CEP)
        .args(["run", "--query", p(&query), "--events", p(&events), "--threads", "40000"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--threads must be at most 1024"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

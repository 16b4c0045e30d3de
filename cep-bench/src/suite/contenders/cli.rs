//! Contenders that run the `cep` binary or its reading path: W5-cli's
//! processes, the parser on its own, and the split `cep run` chooses.
//! Apart because they write files and start processes.

use std::io::{self, Write};

use cep_core::Event;

use crate::suite::catalog::W1A_OOO_SIZE;
use crate::suite::digest::{Tally, measure};
use crate::suite::{Baseline, Contender, Target, Workload};
use crate::w1;

/// The `cep` binary: `CEP_BIN`, or `cep` beside the running executable (or
/// one directory up, for a test binary in `target/*/deps`).
pub fn cep_binary() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("CEP_BIN") {
        return Some(p.into());
    }
    let me = std::env::current_exe().ok()?;
    let name = format!("cep{}", std::env::consts::EXE_SUFFIX);
    me.ancestors().skip(1).take(2).map(|d| d.join(&name)).find(|p| p.is_file())
}

/// A scratch directory, removed with everything in it when dropped.
pub(crate) struct Scratch(pub(crate) std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// W5 through the binary: `cep run --threads N` on a CSV of the first
/// `n` W1 ticks (written by the contender's preparation), its matches read
/// back from `--out`; the pass times the whole process.
/// `cep run` with `--threads N`, or without the flag (`None`: a thread per
/// core), and with the `extra` arguments (`--parallel`).
pub(crate) fn cli_contender(name: &'static str, threads: Option<usize>, extra: &'static [&'static str]) -> Contender {
    Contender::new(name, move |n| {
        let tag = name.replace(|c: char| !c.is_ascii_alphanumeric(), "-");
        let (scratch, csv) = w1_csv(&format!("w5-cli-{tag}"), n);
        let (query, out) = (scratch.0.join("q.cep"), scratch.0.join("out.jsonl"));
        std::fs::write(&query, w1::RISE_SPIKE).expect("the query");
        let cep = cep_binary().expect("the cep binary beside this one (cargo build --release -p cep-cli)");
        if threads != Some(1) {
            // Which split ran, and why (`--parallel auto` decides by timing
            // the rows read ahead, so a busy host can change its choice): a
            // line on stderr beside the table.
            let mut probe = cep_run(&cep, threads, &query, &csv, &out);
            let probe = probe.args(extra).arg("--stats").stderr(std::process::Stdio::piped()).output();
            if let Ok(o) = probe {
                let text = String::from_utf8_lossy(&o.stderr);
                if let Some(split) = text.lines().find_map(|l| l.strip_prefix("stats: threads: ")) {
                    eprintln!("note: W5-cli {name} ran {split}");
                }
            }
        }
        Box::new(move |check| {
            let _ = &scratch; // removed with the pass function
            measure(n, check, |tally| {
                let status = cep_run(&cep, threads, &query, &csv, &out).args(extra).status().expect("cep runs");
                assert!(status.success(), "cep run failed: {status}");
                for line in std::fs::read_to_string(&out).expect("the output").lines() {
                    add_cli_line(tally, line, None);
                }
                None
            })
        })
    })
}

/// A scratch directory named after `tag` holding the CSV of the first `n`
/// W1 ticks (`w1.csv`), and that file's path.
pub(crate) fn w1_csv(tag: &str, n: usize) -> (Scratch, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("cep-bench-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let csv = dir.join("w1.csv");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).expect("the CSV"));
    w1::write_csv(&mut f, n).and_then(|()| f.flush()).expect("write the CSV");
    (Scratch(dir), csv)
}

/// W5's parsing alone: the CSV of the first `n` W1 ticks read to its end
/// into events, no query (every event tallied as a match). One thread: a
/// [`Reader`](cep_io::Reader) on the file, as `cep run --threads 1`
/// reads it. More: a [`ParallelReader`](cep_io::parallel::ParallelReader)
/// with `threads - 1` parser threads, the calling thread taking every event
/// in order and parsing whenever it waits for a block (`cep run` on shards
/// parses the same blocks, split by shard, on the shards).
pub(crate) fn parse_contender(name: &'static str, threads: usize) -> Contender {
    Contender::new(name, move |n| {
        let (scratch, csv) = w1_csv(&format!("w5-parse-{threads}"), n);
        Box::new(move |check| {
            let _ = &scratch; // removed with the pass function
            measure(n, check, |tally| {
                read_events(&csv, threads, |e| tally.add_event(e));
                None
            })
        })
    })
}

/// Every event of the CSV file at `path`, read on `threads` threads (see
/// [`parse_contender`]), handed to `each` in input order.
pub(crate) fn read_events(path: &std::path::Path, threads: usize, mut each: impl FnMut(&Event)) {
    use cep_io::read::EventSource;
    let file = std::fs::File::open(path).expect("the CSV");
    let mut head = cep_io::Reader::new(io::BufReader::new(file), "w1.csv", cep_io::Format::Csv).expect("a header");
    let mut rest = (threads > 1).then(|| {
        cep_io::parallel::ParallelReader::open(path, &head, head.position(), threads - 1, None).expect("reopened")
    });
    let source: &mut dyn EventSource = match &mut rest {
        Some(rest) => rest,
        None => &mut head,
    };
    let mut e = Event::default();
    while source.next_event(&mut e).expect("a good row") {
        each(&e);
    }
}

/// `cep run` of `query` on `csv` into `out` (with `--threads` if given),
/// its stderr dropped.
pub(crate) fn cep_run(
    cep: &std::path::Path,
    threads: Option<usize>,
    query: &std::path::Path,
    csv: &std::path::Path,
    out: &std::path::Path,
) -> std::process::Command {
    let mut command = std::process::Command::new(cep);
    command.arg("run");
    if let Some(t) = threads {
        command.args(["--threads", &t.to_string()]);
    }
    command.arg("--query").arg(query).arg("--events").arg(csv).arg("--out").arg(out);
    command.stderr(std::process::Stdio::null());
    command
}

/// What two threads could give here at best: the W1 CSV split by key into
/// two files, each run by its own `cep run --threads 1` at the same time —
/// sharding with no routing, nothing shared but the machine. (Its matches
/// tally as the whole file's: rows mapped back, see [`add_cli_line`].)
pub(crate) fn split_contender(name: &'static str) -> Contender {
    Contender::new(name, move |n| {
        let dir = std::env::temp_dir().join(format!("cep-bench-w5-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let mut whole = Vec::new();
        w1::write_csv(&mut whole, n).expect("the CSV in memory");
        let text = String::from_utf8(whole).expect("ASCII");
        let mut lines = text.lines();
        let header = lines.next().expect("a header");
        let key_at = header.split(',').position(|c| c == "key").expect("a key column");
        // Per half: its CSV, and the row in the whole file of each of its rows.
        let mut halves: [(String, Vec<u64>); 2] = Default::default();
        for (row, line) in lines.enumerate() {
            let key: i64 = line.split(',').nth(key_at).and_then(|k| k.parse().ok()).expect("an integer key");
            let half = &mut halves[key.rem_euclid(2) as usize];
            if half.0.is_empty() {
                half.0 = format!("{header}\n");
            }
            half.0.push_str(line);
            half.0.push('\n');
            half.1.push(row as u64);
        }
        let query = dir.join("q.cep");
        std::fs::write(&query, w1::RISE_SPIKE).expect("the query");
        let files: Vec<_> = halves
            .into_iter()
            .enumerate()
            .map(|(i, (csv, rows))| {
                let (path, out) = (dir.join(format!("half{i}.csv")), dir.join(format!("out{i}.jsonl")));
                std::fs::write(&path, if csv.is_empty() { "type,ts,key,price,vol\n" } else { &csv }).expect("a half");
                (path, out, rows)
            })
            .collect();
        let cep = cep_binary().expect("the cep binary beside this one (cargo build --release -p cep-cli)");
        let scratch = Scratch(dir);
        Box::new(move |check| {
            let _ = &scratch; // removed with the pass function
            measure(n, check, |tally| {
                let children: Vec<_> = files
                    .iter()
                    .map(|(csv, out, _)| cep_run(&cep, Some(1), &query, csv, out).spawn().expect("cep runs"))
                    .collect();
                for mut child in children {
                    let status = child.wait().expect("cep runs");
                    assert!(status.success(), "cep run failed: {status}");
                }
                for (_, out, rows) in &files {
                    for line in std::fs::read_to_string(out).expect("the output").lines() {
                        add_cli_line(tally, line, Some(rows));
                    }
                }
                None
            })
        })
    })
}

/// Tallies a `cep run` output line, its rows mapped through `rows` (a
/// file's row → the whole file's) and without its id (a function of the
/// rows), so that the key-split contender's two files tally as the whole
/// file does.
pub(crate) fn add_cli_line(tally: &mut Tally, line: &str, rows: Option<&[u64]>) {
    if !tally.check {
        return tally.add_line(line);
    }
    let mut m: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
    let map = m.as_object_mut().expect("an object");
    map.remove("id");
    if let (Some(rows), Some(vars)) = (rows, map.get_mut("vars").and_then(|v| v.as_object_mut())) {
        for bound in vars.values_mut().filter_map(|v| v.as_array_mut()) {
            for row in bound {
                *row = rows[row.as_u64().expect("a row") as usize].into();
            }
        }
    }
    tally.add_line(&m.to_string());
}

/// The name of W5's and W5-cli's ceiling contender: the keys split in two,
/// each half run on its own thread or process, nothing shared but the
/// machine. What two threads give on this host at that moment.
pub const CEILING: &str = "2 × 1 thread, keys split";

/// A W5 workload over `n` W1 ticks: one thread (the baseline) against
/// two. DESIGN.md §3 sets the 1.7× target on `cep run` (W5-cli); the
/// runtime fed without parsing (W5) is reported beside it.
pub(crate) fn w5(name: &str, description: String, n: usize, target: Target, contenders: Vec<Contender>) -> Workload {
    Workload {
        name: name.into(),
        description,
        size: W1A_OOO_SIZE,
        events: n,
        baseline: Baseline::Contender("1 thread"),
        target,
        expect: (n == w1::TICKS).then_some(450),
        series: None,
        contenders,
    }
}

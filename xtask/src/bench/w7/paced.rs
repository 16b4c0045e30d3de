//! W7 http's paced pass: event-to-match latency of the `cep` binary fed
//! through a pipe at a fixed rate, as a live stream reaches it.
//!
//! A writer thread writes the CSV header, then the rows in bursts every
//! [`BURST`] (as many as the rate has made due by then), each burst one
//! `write` to the child's stdin, and stamps every row with the instant its
//! burst was handed to the pipe (so a full pipe, a `cep` that is behind,
//! counts in the latency). A reader thread stamps each line of the child's
//! stdout as it arrives. The encounter query is `SEQ(x, y, z)` strictly
//! contiguous per vessel, so a match is completed by its `z`: the match
//! line's `key` (the MMSI) and `end` (z's `ts`) name that row, and its
//! latency is the line's arrival minus the row's write.
//!
//! The writer sleeps between bursts rather than spinning: the machine's
//! cores are shared with `cep` and `cep-geo serve`, whose latency is what
//! is measured.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

/// How often the writer hands a burst of rows to the pipe.
pub const BURST: Duration = Duration::from_millis(1);

/// Time a paced run may take beyond its schedule before `cep` is killed:
/// the end of the input waits for every remote answer, and the runs of the
/// unpaced pass take a few seconds at most, so this is only reached by a
/// hung child.
const GRACE: Duration = Duration::from_secs(60);

/// The rows a paced run writes: the CSV header and rows as text (each with
/// its newline), and the (mmsi, ts) of each row, which names it in a match.
#[derive(Debug)]
pub struct Feed {
    header: Vec<u8>,
    rows: Vec<Vec<u8>>,
    /// Row index by (mmsi, ts).
    index: HashMap<(i64, i64), usize>,
}

impl Feed {
    /// Splits `csv` (a header line, then one line per row) into the feed;
    /// `keys` gives each row's (mmsi, ts), in the same order. An error if
    /// the counts differ or two rows share a key (a match would not name
    /// one row).
    pub fn new(csv: &[u8], keys: impl IntoIterator<Item = (i64, i64)>) -> Result<Feed, String> {
        let mut lines = csv.split_inclusive(|&b| b == b'\n');
        let header = lines.next().ok_or("the paced CSV is empty")?.to_vec();
        let rows: Vec<Vec<u8>> = lines.map(<[u8]>::to_vec).collect();
        let mut index = HashMap::with_capacity(rows.len());
        for (i, key) in keys.into_iter().enumerate() {
            if index.insert(key, i).is_some() {
                return Err(format!("the paced CSV has two rows of mmsi {} at ts {}", key.0, key.1));
            }
        }
        if index.len() != rows.len() {
            return Err(format!("the paced CSV has {} rows but {} keys", rows.len(), index.len()));
        }
        Ok(Feed { header, rows, index })
    }

    /// Rows in the feed.
    pub fn count(&self) -> usize {
        self.rows.len()
    }
}

/// What one paced run measured.
#[derive(Debug)]
pub struct PacedRun {
    /// The output lines, sorted (to compare with the unpaced run's).
    pub lines: Vec<String>,
    /// Each match's latency in microseconds, sorted.
    pub latency_us: Vec<f64>,
    /// Rows written per second of the writer's wall time.
    pub rate: f64,
    /// Remote calls (the summary line's).
    pub calls: u64,
}

/// A child process that is killed and reaped when dropped, whatever path
/// the caller leaves by.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        // Killing a process that has exited fails harmlessly; `wait` after
        // SIGKILL returns promptly.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `cmd` (a `cep run --events -` writing its matches to stdout) fed
/// with `feed` at `rate` rows per second, and measures each match's
/// latency. `cep` is killed if it outlives its schedule by [`GRACE`].
pub fn run(mut cmd: Command, feed: &Feed, rate: f64) -> Result<PacedRun, String> {
    let mut child = Reaped(
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start cep: {e}"))?,
    );
    let stdin = child.0.stdin.take().ok_or("cep has no stdin")?;
    let stdout = child.0.stdout.take().ok_or("cep has no stdout")?;
    let mut stderr = child.0.stderr.take().ok_or("cep has no stderr")?;
    let start = Instant::now();
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let out_thread = std::thread::spawn(move || read_stamped(stdout, start));
    let (header, rows) = (feed.header.clone(), feed.rows.clone());
    let in_thread = std::thread::spawn(move || write_paced(stdin, &header, &rows, rate, start));
    let deadline = start + Duration::from_secs_f64(feed.count() as f64 / rate) + GRACE;
    let status = wait_until(&mut child.0, deadline);
    // On every path the child is dead (or killed here), so its pipes are
    // closed and the three threads end.
    drop(child);
    let written = join(in_thread, "writer")?;
    let lines = join(out_thread, "reader")?;
    let stderr = err_thread.join().unwrap_or_default();
    let status = status?;
    if !status.success() {
        return Err(format!("paced cep run failed ({status}): {stderr}"));
    }
    let written = written.map_err(|e| format!("writing to cep: {e}"))?;
    let lines = lines.map_err(|e| format!("reading cep's output: {e}"))?;
    let mut latency_us = latencies(&lines, &written, &feed.index)?;
    latency_us.sort_by(f64::total_cmp);
    let mut text: Vec<String> = lines.into_iter().map(|(l, _)| l).collect();
    text.sort_unstable();
    let seconds = written.last().map_or(0.0, Duration::as_secs_f64);
    Ok(PacedRun { lines: text, latency_us, rate: written.len() as f64 / seconds, calls: super::http::calls(&stderr) })
}

/// Waits for `child` to exit, polling, until `deadline`; past it the child
/// is killed and the wait is an error.
fn wait_until(child: &mut Child, deadline: Instant) -> Result<std::process::ExitStatus, String> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                return Err(format!("paced cep run still running {} s after its last row: killed", GRACE.as_secs()));
            }
            Err(e) => return Err(format!("waiting for cep: {e}")),
        }
    }
}

/// A helper thread's result; a panic in it is an error, not a panic here.
fn join<T>(handle: JoinHandle<T>, what: &str) -> Result<T, String> {
    handle.join().map_err(|_| format!("the paced run's {what} thread panicked"))
}

/// Writes `header`, then `rows` at `rate` rows per second: every [`BURST`]
/// the rows due by then, in one write. Returns each row's write instant
/// (since `start`): the moment its burst was handed to the pipe. Closes
/// the pipe at the end (the end of `cep`'s input).
fn write_paced(
    mut pipe: impl Write,
    header: &[u8],
    rows: &[Vec<u8>],
    rate: f64,
    start: Instant,
) -> io::Result<Vec<Duration>> {
    pipe.write_all(header)?;
    pipe.flush()?;
    let mut written = Vec::with_capacity(rows.len());
    let mut burst = Vec::new();
    let mut tick = 1u32;
    while written.len() < rows.len() {
        let due = start + BURST * tick;
        tick += 1;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        // Rows due by now, from the wall clock: a late wake-up writes more,
        // so the rate holds on average.
        let upto = ((start.elapsed().as_secs_f64() * rate) as usize).min(rows.len());
        if upto <= written.len() {
            continue;
        }
        burst.clear();
        rows[written.len()..upto].iter().for_each(|r| burst.extend_from_slice(r));
        let at = start.elapsed();
        pipe.write_all(&burst)?;
        pipe.flush()?;
        written.resize(upto, at);
    }
    Ok(written)
}

/// Reads `pipe` line by line, each line (without its newline) with the
/// instant (since `start`) it was read.
fn read_stamped(pipe: impl Read, start: Instant) -> io::Result<Vec<(String, Duration)>> {
    let mut reader = BufReader::new(pipe);
    let mut lines = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(lines);
        }
        lines.push((line.trim_end().to_owned(), start.elapsed()));
    }
}

/// The latency (µs) of each match line: its arrival minus the write of the
/// row that completed it, named by the line's `key` (mmsi) and `end` (ts).
/// A line that names no written row is an error: the latency would be
/// made up.
fn latencies(
    lines: &[(String, Duration)],
    written: &[Duration],
    index: &HashMap<(i64, i64), usize>,
) -> Result<Vec<f64>, String> {
    lines
        .iter()
        .map(|(line, arrived)| {
            let key = completing(line)?;
            let at = index.get(&key).and_then(|&i| written.get(i)).ok_or_else(|| {
                format!("a match ends at mmsi {} ts {}, a row not written in the paced run: {line}", key.0, key.1)
            })?;
            Ok(arrived.saturating_sub(*at).as_secs_f64() * 1e6)
        })
        .collect()
}

/// The (mmsi, ts) of the row that completed a match line.
fn completing(line: &str) -> Result<(i64, i64), String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("cep wrote `{line}`: {e}"))?;
    let int = |field: &str| v.get(field).and_then(serde_json::Value::as_i64);
    match (int("key"), int("end")) {
        (Some(mmsi), Some(ts)) => Ok((mmsi, ts)),
        _ => Err(format!("a match line without an integer key and end: {line}")),
    }
}

/// Percentiles of the sorted `xs` by rank (the ⌈p·n⌉-th value, as W5's
/// latency rows take them); NaN when empty.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    let rank = ((p * xs.len() as f64).ceil() as usize).max(1);
    xs.get(rank - 1).copied().unwrap_or(f64::NAN)
}

/// One mode's latency, as the table and `w7.json` give it.
#[derive(Clone, Debug, Serialize)]
pub struct ModeLatency {
    pub mode: String,
    /// Rows per second the writer achieved (the target is the pass's rate).
    pub rate: f64,
    pub matches: u64,
    pub calls: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl ModeLatency {
    pub fn new(mode: &str, run: &PacedRun) -> ModeLatency {
        let l = &run.latency_us;
        ModeLatency {
            mode: mode.to_owned(),
            rate: run.rate,
            matches: l.len() as u64,
            calls: run.calls,
            p50_us: percentile(l, 0.5),
            p99_us: percentile(l, 0.99),
            max_us: percentile(l, 1.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &[u8] = b"type,ts,mmsi\nAIS,10,1\nAIS,10,2\nAIS,20,1\n";

    #[test]
    fn feed_splits_header_and_rows() {
        let f = Feed::new(CSV, [(1, 10), (2, 10), (1, 20)]).unwrap();
        assert_eq!(f.header, b"type,ts,mmsi\n");
        assert_eq!(f.count(), 3);
        assert_eq!(f.rows[2], b"AIS,20,1\n");
        assert_eq!(f.index[&(2, 10)], 1);
    }

    #[test]
    fn feed_refuses_ambiguous_or_miscounted_keys() {
        assert!(Feed::new(CSV, [(1, 10), (1, 10), (1, 20)]).unwrap_err().contains("two rows"));
        assert!(Feed::new(CSV, [(1, 10)]).unwrap_err().contains("3 rows but 1 keys"));
        assert!(Feed::new(b"", []).is_err());
    }

    #[test]
    fn a_match_is_timed_from_its_last_row() {
        let f = Feed::new(CSV, [(1, 10), (2, 10), (1, 20)]).unwrap();
        let written = [Duration::from_micros(5), Duration::from_micros(5), Duration::from_micros(100)];
        let lines = [(r#"{"query":"q","key":1,"start":10,"end":20,"vars":{}}"#.to_owned(), Duration::from_micros(350))];
        assert_eq!(latencies(&lines, &written, &f.index).unwrap(), [250.0]);
        let stray = [(r#"{"key":3,"end":20}"#.to_owned(), Duration::ZERO)];
        assert!(latencies(&stray, &written, &f.index).unwrap_err().contains("not written"));
        assert!(completing("not json").is_err());
        assert!(completing(r#"{"key":null,"end":20}"#).is_err());
    }

    #[test]
    fn percentiles_by_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.5), 50.0);
        assert_eq!(percentile(&xs, 0.99), 99.0);
        assert_eq!(percentile(&xs, 1.0), 100.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn the_writer_writes_every_row_in_order_and_stamps_it() {
        let rows: Vec<Vec<u8>> = (0..20).map(|i| format!("r{i}\n").into_bytes()).collect();
        let mut out = Vec::new();
        let stamps = write_paced(&mut out, b"h\n", &rows, 10_000.0, Instant::now()).unwrap();
        let want: Vec<u8> = b"h\n".iter().chain(rows.iter().flatten()).copied().collect();
        assert_eq!(out, want);
        assert_eq!(stamps.len(), rows.len());
        assert!(stamps.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn the_reader_stamps_lines() {
        let lines = read_stamped(&b"a\nb\n"[..], Instant::now()).unwrap();
        assert_eq!(lines.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }
}

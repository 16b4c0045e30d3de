//! `W7 http`: the encounter query end to end, as a user runs it: the
//! release `cep` binary (`cep run --threads 1 --remote near=URL
//! --remote-mode M`) on an AIS CSV, against the release `cep-geo serve`
//! answering `near` by distance from the same positions, on 127.0.0.1 at a
//! port the service picks. The bench starts the service, reads its
//! `listening on ADDR` line, runs `cep` once per mode and pass (the wall
//! time of the process, parsing included), and stops the service (kill,
//! and `--exit-on-stdin-eof` in case the bench dies first).
//!
//! Latency: a paced pass ([`paced`]) feeds the first rows of
//! the file (10 s of them at [`PACED_RATE`], 2 s for `--quick`) to `cep run
//! --events - --format csv` through a pipe at that rate, a burst every
//! millisecond, in each mode (blocking, lazy, auto), and times each match
//! line on `cep`'s stdout from the write of the row that completed it (the
//! match's `z`): p50, p99 and max. The rate is below blocking's capacity,
//! so what is measured is the delay of a match, not a queue. A fourth run,
//! the query without its `near` condition ([`FLOOR_QUERY`]), gives the
//! floor: the pipes, `cep`'s reading thread, the parsing and the engine.
//! Each paced run's matches must be those of an unpaced run of the same
//! rows and query. The blocking run's wall time per call of the unpaced
//! pass is reported too: an upper bound of the time a run waits for one
//! answer (HTTP on loopback, the service's lookup, the engine's share).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde::Serialize;

use super::paced::{self, Feed, ModeLatency};
use super::rate;
use crate::ais;
use crate::bench::runner::median;

/// What the HTTP run measured.
#[derive(Clone, Debug, Serialize)]
pub struct HttpResult {
    pub rows: u64,
    pub matches: u64,
    /// Median events/s, blocking then lazy.
    pub events_per_sec: [f64; 2],
    /// Calls made (the summary line's), blocking then lazy.
    pub calls: [u64; 2],
    /// The blocking run's wall time per call, microseconds.
    pub blocking_us_per_call: f64,
    /// The paced pass: rows fed, at this target rate (rows/s).
    pub paced_rows: u64,
    pub paced_rate: f64,
    /// The paced pass's latency per run: blocking, lazy, auto, and the
    /// query without its remote condition (the floor).
    pub latency: Vec<ModeLatency>,
}

/// The rate of the paced pass, rows per second: a fifth of what a blocking
/// run reads unpaced (about 10,000 events/s), so that a match's latency is
/// its own delay, not that of a queue.
pub const PACED_RATE: f64 = 2_000.0;

/// The runs of the paced pass, in the order it runs them: the row's name,
/// the query file and the remote mode (none: the floor).
const PACED_RUNS: [(&str, &str, Option<&str>); 4] = [
    ("blocking", "encounter.cep", Some("blocking")),
    ("lazy", "encounter.cep", Some("lazy")),
    ("auto", "encounter.cep", Some("auto")),
    ("no remote call", "floor.cep", None),
];

/// The encounter query without its remote condition (and declaration): the
/// paced pass's floor, what the pipe, the parsing and the engine cost a
/// match without any call (it has more matches: `near` does not filter).
const FLOOR_QUERY: &str = "QUERY encounter PATTERN SEQ(AIS x, AIS y, AIS z) WHERE strict-contiguity AND [mmsi] AND \
                           x.speed > 5 AND y.speed > 5 AND z.speed > 5\n";

/// A binary of this workspace beside the running `xtask`.
fn binary(name: &str) -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = me.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if path.is_file() { Ok(path) } else { Err(format!("{} is not built", path.display())) }
}

/// The proximity service as a child process, killed when dropped.
struct Service {
    child: Child,
    addr: String,
}

impl Service {
    fn start(positions: &Path) -> Result<Service, String> {
        let mut child = Command::new(binary("cep-geo")?)
            .args(["serve", "--listen", "127.0.0.1:0", "--exit-on-stdin-eof", "--positions"])
            .arg(positions)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start cep-geo: {e}"))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let addr = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(a) = line.strip_prefix("listening on ") {
                        break a.trim().to_owned();
                    }
                }
                _ => {
                    let _ = child.kill();
                    return Err("cep-geo serve ended before listening".into());
                }
            }
        };
        // Keep reading its stderr so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Ok(Service { child, addr })
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cep run --threads 1 --query dir/query`, with `--remote near=URL
/// --remote-mode MODE` when `remote` gives (URL, MODE).
fn cep_command(dir: &Path, query: &str, remote: Option<(&str, &str)>) -> Result<Command, String> {
    let mut cmd = Command::new(binary("cep")?);
    cmd.args(["run", "--threads", "1", "--query"]).arg(dir.join(query));
    if let Some((url, mode)) = remote {
        cmd.args(["--remote-mode", mode, "--remote", &format!("near={url}")]);
    }
    Ok(cmd)
}

/// One `cep run` of `dir/query` on `dir/events` (see [`cep_command`]):
/// wall seconds, sorted output lines, calls.
fn cep_run(
    dir: &Path,
    query: &str,
    events: &str,
    remote: Option<(&str, &str)>,
) -> Result<(f64, Vec<String>, u64), String> {
    let mode = remote.map_or("none", |r| r.1);
    let out = dir.join(format!("out-{mode}.jsonl"));
    let t = Instant::now();
    let o = cep_command(dir, query, remote)?
        .arg("--events")
        .arg(dir.join(events))
        .arg("--out")
        .arg(&out)
        .output()
        .map_err(|e| format!("cannot run cep: {e}"))?;
    let seconds = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        return Err(format!("cep run --query {query} --remote-mode {mode} failed ({}): {stderr}", o.status));
    }
    let calls = calls(&stderr);
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort_unstable();
    Ok((seconds, lines, calls))
}

/// The calls `cep run`'s summary line on `stderr` reports (`remote: N
/// calls`), 0 if it has none.
pub(super) fn calls(stderr: &str) -> u64 {
    stderr.split("remote: ").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// Runs the part: 200 vessels × 20 minutes for `--quick` (4,000 rows, all
/// of them paced: 2 s), 1,000 × 60 (60,000 rows, a blocking run of some
/// seconds; the first 20,000 paced: 10 s) for the full run.
pub fn run(quick: bool, failures: &mut Vec<String>) -> Result<HttpResult, String> {
    let (vessels, minutes, passes, paced_secs) = if quick { (200, 20, 1, 2.0) } else { (1000, 60, 3, 10.0) };
    let dir = std::env::temp_dir().join(format!("cep-bench-w7-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = (|| {
        let fleet = ais::generate(ais::Params { vessels, minutes, seed: ais::SEED });
        let csv = dir.join("ais.csv");
        let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).map_err(|e| e.to_string())?);
        ais::write_csv(&mut f, &fleet.rows).and_then(|()| f.flush()).map_err(|e| e.to_string())?;
        drop(f);
        std::fs::write(dir.join("encounter.cep"), ais::ENCOUNTER_QUERY).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("floor.cep"), FLOOR_QUERY).map_err(|e| e.to_string())?;
        let service = Service::start(&csv)?;
        let url = format!("http://{}/near", service.addr);
        let mut rates = [Vec::new(), Vec::new()];
        let mut calls = [0; 2];
        let mut per_call = Vec::new();
        let mut reference: Option<Vec<String>> = None;
        for _ in 0..passes {
            for (i, mode) in ["blocking", "lazy"].into_iter().enumerate() {
                let (seconds, lines, n) = cep_run(&dir, "encounter.cep", "ais.csv", Some((&url, mode)))?;
                rates[i].push(fleet.rows.len() as f64 / seconds);
                calls[i] = n;
                if i == 0 && n > 0 {
                    per_call.push(seconds * 1e6 / n as f64);
                }
                let want = reference.get_or_insert_with(|| lines.clone());
                if &lines != want {
                    let msg = format!(
                        "W7 http: --remote-mode {mode} gives {} matches, blocking {} (or other rows)",
                        lines.len(),
                        want.len()
                    );
                    eprintln!("error: {msg}");
                    failures.push(msg);
                }
            }
        }
        let paced_rows = ((PACED_RATE * paced_secs) as usize).min(fleet.rows.len());
        let latency = paced_pass(&dir, &url, &fleet.rows[..paced_rows], failures)?;
        Ok(HttpResult {
            rows: fleet.rows.len() as u64,
            matches: reference.map_or(0, |r| r.len() as u64),
            events_per_sec: [median(&rates[0]), median(&rates[1])],
            calls,
            blocking_us_per_call: median(&per_call),
            paced_rows: paced_rows as u64,
            paced_rate: PACED_RATE,
            latency,
        })
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The paced pass over `rows` (see the module docs): per query, an
/// unpaced run of them for the reference matches; then one paced run per
/// entry of [`PACED_RUNS`]; a run whose matches differ from its query's
/// reference is a failure.
fn paced_pass(
    dir: &Path,
    url: &str,
    rows: &[ais::Row],
    failures: &mut Vec<String>,
) -> Result<Vec<ModeLatency>, String> {
    let mut csv = Vec::new();
    ais::write_csv(&mut csv, rows).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("paced.csv"), &csv).map_err(|e| format!("{}: {e}", dir.join("paced.csv").display()))?;
    let feed = Feed::new(&csv, rows.iter().map(|r| (r.mmsi, r.ts)))?;
    let (_, with_remote, _) = cep_run(dir, "encounter.cep", "paced.csv", Some((url, "blocking")))?;
    let (_, floor, _) = cep_run(dir, "floor.cep", "paced.csv", None)?;
    let mut out = Vec::new();
    for (name, query, mode) in PACED_RUNS {
        let mut cmd = cep_command(dir, query, mode.map(|m| (url, m)))?;
        cmd.args(["--events", "-", "--format", "csv"]);
        let run = paced::run(cmd, &feed, PACED_RATE).map_err(|e| format!("W7 http paced, {name}: {e}"))?;
        let want = if mode.is_some() { &with_remote } else { &floor };
        if &run.lines != want {
            let msg = format!(
                "W7 http: the paced run `{name}` gives {} matches, the unpaced run of its rows {} (or other rows)",
                run.lines.len(),
                want.len()
            );
            eprintln!("error: {msg}");
            failures.push(msg);
        }
        out.push(ModeLatency::new(name, &run));
    }
    Ok(out)
}

/// The part as Markdown: the throughput table, then the paced pass's
/// latency table.
pub fn markdown(r: &HttpResult) -> String {
    let mut s = format!(
        "### W7 http: `cep run --threads 1` against `cep-geo serve` on loopback ({} rows, {} matches)\n\n\
         | mode | events/s (median) | calls |\n|---|---|---|\n\
         | blocking | {} | {} |\n| lazy | {} | {} |\n\n\
         Lazy / blocking: {:.2}×. Blocking waits {:.0} µs of wall time per call (an upper bound of one answer's \
         round trip).\n\n",
        r.rows,
        r.matches,
        rate(r.events_per_sec[0]),
        r.calls[0],
        rate(r.events_per_sec[1]),
        r.calls[1],
        r.events_per_sec[1] / r.events_per_sec[0],
        r.blocking_us_per_call
    );
    s.push_str(&format!(
        "Event-to-match latency: the first {} rows piped to `cep run --events -` at {} rows/s (a burst every \
         millisecond); each match timed from the write of the row that completed it to its line on `cep`'s \
         stdout. The last row runs the query without its `near` condition (no call, more matches): the floor \
         of the pipes, the parsing and the engine.\n\n| mode | rows/s achieved | matches | calls | p50 µs | p99 µs | max µs |\n|---|---|---|---|---|---|---|\n",
        r.paced_rows,
        rate(r.paced_rate)
    ));
    for m in &r.latency {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.0} | {:.0} | {:.0} |\n",
            m.mode,
            rate(m.rate),
            m.matches,
            m.calls,
            m.p50_us,
            m.p99_us,
            m.max_us
        ));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_the_encounter_query_without_near() {
        let without = ais::ENCOUNTER_QUERY.replace(" AND near(y.mmsi, y.lat, y.lon, y.ts)", "");
        let (declaration, query) = without.split_once('\n').unwrap();
        assert!(declaration.starts_with("REMOTE near("));
        assert_eq!(query, FLOOR_QUERY);
    }

    #[test]
    fn calls_come_from_the_summary_line() {
        assert_eq!(calls("summary: 4 rows read, remote: 3 calls, 1 batches"), 3);
        assert_eq!(calls("summary: 4 rows read, 0 skipped"), 0);
    }
}

//! `W7 http`: the encounter query end to end, as a user runs it: the
//! release `cep` binary (`cep run --threads 1 --remote near=URL
//! --remote-mode M`) on an AIS CSV, against the release `cep-geo serve`
//! answering `near` by distance from the same positions, on 127.0.0.1 at a
//! port the service picks. The bench starts the service, reads its
//! `listening on ADDR` line, runs `cep` once per mode and pass (the wall
//! time of the process, parsing included), and stops the service (kill,
//! and `--exit-on-stdin-eof` in case the bench dies first).
//!
//! Latency: the input is a file read as fast as possible, so an event has
//! no arrival time to measure a match's delay from; what is reported is
//! the blocking run's wall time per call, an upper bound of the time a run
//! waits for one answer (HTTP on loopback, the service's lookup, the
//! engine's share). A paced source (as W5-latency paces the runtime) would
//! be needed for event-to-match latency.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde::Serialize;

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
}

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

/// One `cep run`: wall seconds, sorted output lines, calls.
fn cep_run(dir: &Path, url: &str, mode: &str) -> Result<(f64, Vec<String>, u64), String> {
    let out = dir.join(format!("out-{mode}.jsonl"));
    let t = Instant::now();
    let o = Command::new(binary("cep")?)
        .args(["run", "--threads", "1", "--remote-mode", mode, "--remote"])
        .arg(format!("near={url}"))
        .arg("--query")
        .arg(dir.join("encounter.cep"))
        .arg("--events")
        .arg(dir.join("ais.csv"))
        .arg("--out")
        .arg(&out)
        .output()
        .map_err(|e| format!("cannot run cep: {e}"))?;
    let seconds = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        return Err(format!("cep run --remote-mode {mode} failed ({}): {stderr}", o.status));
    }
    let calls =
        stderr.split("remote: ").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort_unstable();
    Ok((seconds, lines, calls))
}

/// Runs the part: 200 vessels × 10 minutes for `--quick` (2,000 rows),
/// 1,000 × 60 (60,000 rows, a blocking run of some seconds) for the full run.
pub fn run(quick: bool, failures: &mut Vec<String>) -> Result<HttpResult, String> {
    let (vessels, minutes, passes) = if quick { (200, 10, 1) } else { (1000, 60, 3) };
    let dir = std::env::temp_dir().join(format!("cep-bench-w7-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = (|| {
        let fleet = ais::generate(ais::Params { vessels, minutes, seed: ais::SEED });
        let csv = dir.join("ais.csv");
        let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).map_err(|e| e.to_string())?);
        ais::write_csv(&mut f, &fleet.rows).and_then(|()| f.flush()).map_err(|e| e.to_string())?;
        drop(f);
        std::fs::write(dir.join("encounter.cep"), ais::ENCOUNTER_QUERY).map_err(|e| e.to_string())?;
        let service = Service::start(&csv)?;
        let url = format!("http://{}/near", service.addr);
        let mut rates = [Vec::new(), Vec::new()];
        let mut calls = [0; 2];
        let mut per_call = Vec::new();
        let mut reference: Option<Vec<String>> = None;
        for _ in 0..passes {
            for (i, mode) in ["blocking", "lazy"].into_iter().enumerate() {
                let (seconds, lines, n) = cep_run(&dir, &url, mode)?;
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
        Ok(HttpResult {
            rows: fleet.rows.len() as u64,
            matches: reference.map_or(0, |r| r.len() as u64),
            events_per_sec: [median(&rates[0]), median(&rates[1])],
            calls,
            blocking_us_per_call: median(&per_call),
        })
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The part as Markdown.
pub fn markdown(r: &HttpResult) -> String {
    format!(
        "### W7 http: `cep run --threads 1` against `cep-geo serve` on loopback ({} rows, {} matches)\n\n\
         | mode | events/s (median) | calls |\n|---|---|---|\n\
         | blocking | {} | {} |\n| lazy | {} | {} |\n\n\
         Lazy / blocking: {:.2}×. Blocking waits {:.0} µs of wall time per call (an upper bound of one answer's \
         round trip); event-to-match latency is not measured (file input has no arrival times).\n\n",
        r.rows,
        r.matches,
        rate(r.events_per_sec[0]),
        r.calls[0],
        rate(r.events_per_sec[1]),
        r.calls[1],
        r.events_per_sec[1] / r.events_per_sec[0],
        r.blocking_us_per_call
    )
}

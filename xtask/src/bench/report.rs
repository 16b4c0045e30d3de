//! `target/bench/results.json`: the table's rows, the workloads, and the
//! machine.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use cep_bench::suite::{Baseline, Workload};
use serde::Serialize;

use super::runner::Outcome;
use super::table::Row;

/// Where the numbers come from.
#[derive(Debug, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu: Option<String>,
    pub os: &'static str,
    pub arch: &'static str,
    /// UTC, from `date` (or seconds since the epoch where it is missing).
    pub date: String,
    pub unix_time: u64,
    pub git_commit: Option<String>,
    /// Uncommitted changes in the work tree.
    pub git_dirty: Option<bool>,
    pub rustc: Option<String>,
}

/// The output of a command, trimmed, if it ran and succeeded.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

impl Machine {
    pub fn here() -> Machine {
        let unix_time = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
            s.lines().find(|l| l.starts_with("model name"))?.split(':').nth(1).map(|m| m.trim().to_owned())
        });
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu,
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            date: output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| format!("unix time {unix_time}")),
            unix_time,
            git_commit: output("git", &["rev-parse", "HEAD"]),
            git_dirty: output("git", &["status", "--porcelain"]).map(|s| !s.is_empty()),
            rustc: output("rustc", &["-V"]),
        }
    }

    /// One line for under the table.
    pub fn summary(&self) -> String {
        let commit = match (&self.git_commit, self.git_dirty) {
            (Some(c), Some(true)) => format!(", commit {} + changes", &c[..c.len().min(10)]),
            (Some(c), _) => format!(", commit {}", &c[..c.len().min(10)]),
            (None, _) => String::new(),
        };
        format!(
            "{}, {} cores{}, {}{commit}",
            self.date,
            self.cores,
            self.cpu.as_deref().map(|c| format!(" ({c})")).unwrap_or_default(),
            self.rustc.as_deref().unwrap_or("rustc ?"),
        )
    }
}

/// A workload as results.json describes it.
#[derive(Debug, Serialize)]
pub struct WorkloadInfo {
    pub name: String,
    pub description: String,
    pub events: usize,
    pub full_events: usize,
    pub quick_events: usize,
    pub baseline: String,
    pub target: String,
    pub expected_matches: Option<u64>,
    pub w2_series: Option<String>,
    pub w2_window: Option<i64>,
    pub failures: Vec<String>,
}

/// Everything.
#[derive(Debug, Serialize)]
pub struct Report {
    pub machine: Machine,
    pub quick: bool,
    pub runs: usize,
    pub seconds: f64,
    pub workloads: Vec<WorkloadInfo>,
    pub rows: Vec<Row>,
}

impl Report {
    pub fn new(
        quick: bool,
        runs: usize,
        seconds: f64,
        workloads: &[Workload],
        results: &[Outcome],
        rows: Vec<Row>,
    ) -> Report {
        let workloads = workloads
            .iter()
            .zip(results)
            .map(|(w, r)| WorkloadInfo {
                name: w.name.clone(),
                description: w.description.clone(),
                events: w.events,
                full_events: w.size.full,
                quick_events: w.size.quick,
                baseline: match &w.baseline {
                    Baseline::Contender(c) => (*c).to_owned(),
                    Baseline::Rate { label, .. } => (*label).to_owned(),
                    Baseline::None => "none".into(),
                },
                target: w.target.text.clone(),
                expected_matches: w.expect,
                w2_series: w.series.as_ref().map(|s| s.name.clone()),
                w2_window: w.series.as_ref().map(|s| s.window),
                failures: r.failures.clone(),
            })
            .collect();
        Report { machine: Machine::here(), quick, runs, seconds, workloads, rows }
    }

    pub fn write(&self, path: &Path) -> Result<(), String> {
        let json = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))
    }
}

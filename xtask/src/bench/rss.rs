//! Peak RSS per contender: the xtask binary re-runs itself as
//! `xtask bench-one WORKLOAD CONTENDER [--quick]`, which generates the
//! contender's stream, runs one pass and prints its `VmHWM` (Linux's peak
//! resident set, from `/proc/self/status`) with the pass's matches. The
//! figure includes the in-memory stream and the binary itself.

use std::process::Command;

use cep_bench::suite::{self, Workload};
use serde::{Deserialize, Serialize};

use super::progress::Progress;
use super::runner::Outcome;

/// What the child prints (one JSON line on stdout).
#[derive(Debug, Serialize, Deserialize)]
struct ChildReport {
    vmhwm_kb: Option<u64>,
    matches: u64,
    digest: Option<u64>,
}

/// The peak resident set of this process in kB, where `/proc` tells.
fn vmhwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `xtask bench-one`: one pass of one contender, then the report line.
pub fn child(workload: &str, contender: &str, quick: bool) -> Result<(), String> {
    let all = suite::workloads(super::scale(quick));
    let w = all.iter().find(|w| w.name == workload).ok_or_else(|| format!("no workload `{workload}`"))?;
    let c = w.contender(contender).ok_or_else(|| format!("{workload} has no contender `{contender}`"))?;
    let pass = c.prepare(w.events)(true);
    let report = ChildReport { vmhwm_kb: vmhwm_kb(), matches: pass.matches, digest: pass.digest };
    println!("{}", serde_json::to_string(&report).map_err(|e| e.to_string())?);
    Ok(())
}

fn run_child(workload: &str, contender: &str, quick: bool) -> Result<ChildReport, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the xtask binary: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench-one", workload, contender]);
    if quick {
        cmd.arg("--quick");
    }
    let out = cmd.output().map_err(|e| format!("cannot run bench-one: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "bench-one {workload} {contender} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or("");
    serde_json::from_str(line).map_err(|e| format!("bench-one {workload} {contender} printed `{line}`: {e}"))
}

/// Runs every contender of `w` alone in a child; records the peak RSS in
/// `out` and checks the child's matches against the warm-up's.
pub fn measure_all(w: &Workload, quick: bool, out: &mut Outcome, progress: &Progress) {
    for m in &mut out.contenders {
        progress.set(&format!("{} {}: peak RSS (child process)", w.name, m.name));
        match run_child(&w.name, m.name, quick) {
            Ok(r) => {
                m.rss_kb = r.vmhwm_kb;
                if (r.matches, r.digest) != (m.warm.matches, m.warm.digest) {
                    out.failures.push(format!(
                        "{} in a child process gives {} matches, {} in this one (digests {:?} and {:?})",
                        m.name, r.matches, m.warm.matches, r.digest, m.warm.digest
                    ));
                }
            }
            Err(e) => progress.log(&format!("warning: no peak RSS for {} {}: {e}", w.name, m.name)),
        }
        progress.step();
    }
}

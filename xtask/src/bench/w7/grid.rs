//! `W7 grid`: throughput of the encounter query per communication delay ×
//! evaluation delay × true ratio, blocking, lazy and auto, beside the
//! paper's max curve.
//!
//! A cell's stream is the whole tracks of the first vessels
//! ([`cep_bench::w7::first_tracks`]), as many rows as a blocking pass
//! spends about `budget` seconds on (a blocking pass waits about comm +
//! eval per call, and about 70 % of the events make a call), within
//! bounds: a zero-delay cell runs the whole stream, a slow one at least
//! `min` rows. Lazy's time includes its last wait (the answers still in
//! flight at the end: up to 64 × eval for the last batch), so where the
//! evaluation delay is large its figure is a low bound. A zero-delay cell
//! gets one untimed run per mode first and nine timed passes (its figures
//! are short and noisy), timed by the thread's CPU time where Linux tells
//! it: nothing waits there, so CPU time is the work, and the host's other
//! load (which moved wall-clock passes by ±40 %) stays out. Per pass the three modes run one after the
//! other, each pass starting with the next mode; each run hashes its
//! matches, and a mode whose hash differs from blocking's in any pass is a
//! failure.
//!
//! The max curve: the paper's bound for one call at a time, 1 / (comm +
//! eval) calls per second, turned into events per second by the cell's
//! events per call (events / calls of the blocking run): max events/s =
//! events / (calls × (comm + eval)). Infinite (shown `—`) when both delays
//! are zero.

use std::time::Duration;

use cep_bench::w7::{self, AisRow, Cell, RemoteMode};
use serde::Serialize;

use super::rate;
use crate::bench::runner::median;

/// The modes, in the order each pass runs them.
pub const MODES: [(RemoteMode, &str); 3] =
    [(RemoteMode::Blocking, "blocking"), (RemoteMode::Lazy, "lazy"), (RemoteMode::Auto, "auto")];

/// Passes of a cell without delays (where one pass takes well under a
/// second).
const ZERO_DELAY_PASSES: usize = 9;

/// One cell's measurements.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    pub comm_us: u64,
    pub eval_us: u64,
    pub ratio: f64,
    pub events: u64,
    pub calls: u64,
    pub matches: u64,
    /// Median events/s per mode, in [`MODES`]' order.
    pub events_per_sec: [f64; 3],
    /// Every pass's events/s per mode.
    pub passes: [Vec<f64>; 3],
    /// The paper's max curve in events/s (infinite at zero delay).
    #[serde(serialize_with = "finite_or_null")]
    pub max_curve: f64,
}

fn finite_or_null<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() { s.serialize_f64(*v) } else { s.serialize_none() }
}

impl CellResult {
    /// Lazy over blocking.
    pub fn lazy_gain(&self) -> f64 {
        self.events_per_sec[1] / self.events_per_sec[0]
    }

    /// Auto over the better of blocking and lazy.
    pub fn auto_share(&self) -> f64 {
        self.events_per_sec[2] / self.events_per_sec[0].max(self.events_per_sec[1])
    }
}

/// The axes and sizes of a run: the full grid, or a corner of it for
/// `--quick` (no 100 µs, two true ratios, shorter streams, one pass).
struct Plan {
    delays: Vec<Duration>,
    ratios: Vec<f64>,
    budget: f64,
    min: usize,
    passes: usize,
}

fn plan(quick: bool, runs: usize) -> Plan {
    let us = Duration::from_micros;
    if quick {
        Plan { delays: vec![us(0), us(1000)], ratios: vec![0.1, 0.9], budget: 0.15, min: 400, passes: 1 }
    } else {
        Plan {
            delays: vec![us(0), us(100), us(1000)],
            ratios: vec![0.1, 0.5, 0.9],
            budget: 1.0,
            min: 1500,
            passes: runs.min(3),
        }
    }
}

/// Rows for a cell: see the module doc. The 60 µs stand for what a sleep
/// overshoots on a loaded host.
fn cell_rows(all: &[AisRow], cell: Cell, budget: f64, min: usize) -> Vec<AisRow> {
    let wait = (cell.comm + cell.eval).as_secs_f64();
    if wait == 0.0 {
        return all.to_vec();
    }
    let n = (budget / (0.7 * (wait + 60e-6))) as usize;
    w7::first_tracks(all, n.max(min))
}

/// Runs the grid over `all`; disagreements go to `failures`.
pub fn run(all: &[AisRow], quick: bool, runs: usize, failures: &mut Vec<String>) -> Vec<CellResult> {
    let plan = plan(quick, runs);
    let mut out = Vec::new();
    for &ratio in &plan.ratios {
        for &comm in &plan.delays {
            for &eval in &plan.delays {
                let cell = Cell { comm, eval, ratio };
                let events = w7::events(&cell_rows(all, cell, plan.budget, plan.min));
                if comm + eval == Duration::ZERO {
                    // Without delays a pass is short and the first of a
                    // cell pays for cold caches: one untimed run per mode.
                    for (mode, _) in MODES {
                        w7::run_cell(&events, cell, mode);
                    }
                }
                let mut passes: [Vec<f64>; 3] = Default::default();
                let mut first: Option<w7::CellRun> = None;
                // A zero-delay pass is short and its figure noisy (±20 % on
                // a shared host): more passes there, so that the median
                // compares modes rather than moments.
                let zero = comm + eval == Duration::ZERO;
                let n = if zero { ZERO_DELAY_PASSES.max(plan.passes) } else { plan.passes };
                for pass in 0..n {
                    // Each pass starts with the next mode, so that no mode
                    // always runs first (on cold caches) or last.
                    for k in 0..MODES.len() {
                        let i = (pass + k) % MODES.len();
                        let (mode, name) = MODES[i];
                        let r = w7::run_cell(&events, cell, mode);
                        // Without delays nothing waits: the run's CPU time
                        // is its work, and the host's other load stays out.
                        let secs = match (zero, r.cpu_seconds) {
                            (true, Some(cpu)) if cpu > 0.0 => cpu,
                            _ => r.seconds,
                        };
                        passes[i].push(r.events as f64 / secs);
                        let want = *first.get_or_insert(r);
                        if (r.matches, r.digest) != (want.matches, want.digest) {
                            let msg = format!(
                                "W7 grid comm {comm:?} eval {eval:?} ratio {ratio}: {name} gives {} matches \
                                 (digest {:016x}), blocking {} (digest {:016x})",
                                r.matches, r.digest, want.matches, want.digest
                            );
                            eprintln!("error: {msg}");
                            failures.push(msg);
                        }
                    }
                }
                let base = first.expect("at least one pass");
                let wait = (comm + eval).as_secs_f64();
                let max_curve = if wait == 0.0 || base.calls == 0 {
                    f64::INFINITY
                } else {
                    base.events as f64 / (base.calls as f64 * wait)
                };
                let r = CellResult {
                    comm_us: comm.as_micros() as u64,
                    eval_us: eval.as_micros() as u64,
                    ratio,
                    events: base.events,
                    calls: base.calls,
                    matches: base.matches,
                    events_per_sec: [median(&passes[0]), median(&passes[1]), median(&passes[2])],
                    passes,
                    max_curve,
                };
                eprintln!(
                    "W7 grid ratio {ratio} comm {comm:?} eval {eval:?}: {} events, blocking {}, lazy {}, auto {} events/s",
                    r.events,
                    rate(r.events_per_sec[0]),
                    rate(r.events_per_sec[1]),
                    rate(r.events_per_sec[2])
                );
                out.push(r);
            }
        }
    }
    out
}

fn us(v: u64) -> String {
    match v {
        0 => "0".into(),
        v if v % 1000 == 0 => format!("{} ms", v / 1000),
        v => format!("{v} µs"),
    }
}

/// The grid as a Markdown table, with a summary under it.
pub fn markdown(cells: &[CellResult]) -> String {
    let mut s = String::from(
        "### W7 grid: the encounter query, `near` answered by the simulated service (events/s, median)\n\n\
         | true ratio | comm | eval | events | calls/event | matches | blocking | lazy | auto | max curve | lazy / blocking | auto / better |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in cells {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {:.2}× | {:.0} % |\n",
            c.ratio,
            us(c.comm_us),
            us(c.eval_us),
            c.events,
            c.calls as f64 / c.events.max(1) as f64,
            c.matches,
            rate(c.events_per_sec[0]),
            rate(c.events_per_sec[1]),
            rate(c.events_per_sec[2]),
            rate(c.max_curve),
            c.lazy_gain(),
            100.0 * c.auto_share()
        ));
    }
    let wins: Vec<&CellResult> = cells.iter().filter(|c| c.lazy_gain() > 1.0).collect();
    let best = cells.iter().max_by(|a, b| a.lazy_gain().total_cmp(&b.lazy_gain()));
    let auto_ok = cells.iter().filter(|c| c.auto_share() >= 0.95).count();
    let over_max = cells.iter().filter(|c| c.max_curve.is_finite() && c.events_per_sec[1] > c.max_curve).count();
    s.push_str(&format!(
        "\nLazy beats blocking in {} of {} cells{}. Auto is within 5 % of the better mode in {auto_ok} of {} \
         (auto: lazy while answers take more than 5 µs). Lazy is above the max curve in {over_max} of {} cells with a delay.\n\
         Max curve = events / (calls × (comm + eval)): the paper's 1 / (comm + eval) calls/s times the cell's events per call. \
         Cells without a delay are timed by the thread's CPU time (nothing waits there), the others by the wall clock.\n\n",
        wins.len(),
        cells.len(),
        best.map_or_else(String::new, |b| format!(
            " (most: {:.2}× at comm {}, eval {}, ratio {})",
            b.lazy_gain(),
            us(b.comm_us),
            us(b.eval_us),
            b.ratio
        )),
        cells.len(),
        cells.iter().filter(|c| c.max_curve.is_finite()).count(),
    ));
    s
}

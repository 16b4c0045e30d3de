//! `W7 scale`: Wayeb's scalability run. 1, 10 and 100 copies of a
//! speed-violation pattern (two strictly contiguous reports of a vessel
//! above a threshold, a different threshold per copy) over the AIS stream,
//! no remote function, one thread; the figure is execution time over
//! stream time (the span of the stream's timestamps), which says how
//! much of one core following the traffic live would take. Target:
//! below 0.1 % at 100 patterns (the paper: below 1 %). The patterns share
//! engines as `cep run` has them do (`cep_nfa::share`); one pass with an
//! engine per pattern is beside it, for what sharing saves.

use serde::Serialize;

use cep_bench::w7::{self, AisRow};

use crate::bench::runner::median;

/// One pattern count's measurements.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleResult {
    pub patterns: usize,
    pub events: u64,
    pub matches: u64,
    /// Median wall seconds of the pass, patterns sharing engines.
    pub seconds: f64,
    /// Wall seconds of one pass with an engine per pattern.
    pub unshared_seconds: f64,
    /// The stream's span, seconds.
    pub stream_seconds: f64,
}

impl ScaleResult {
    /// Execution time over stream time.
    pub fn share(&self) -> f64 {
        self.seconds / self.stream_seconds
    }
}

/// Runs 1, 10 and 100 patterns over `all`, `runs` passes each (1 when
/// `quick`).
pub fn run(all: &[AisRow], quick: bool, runs: usize) -> Vec<ScaleResult> {
    let events = w7::events(all);
    let span = all.iter().map(|r| r.ts).max().unwrap_or(0) - all.iter().map(|r| r.ts).min().unwrap_or(0);
    let passes = if quick { 1 } else { runs.min(3) };
    [1, 10, 100]
        .into_iter()
        .map(|n| {
            let runs: Vec<w7::CellRun> = (0..passes).map(|_| w7::run_patterns(&events, n, true)).collect();
            let seconds = median(&runs.iter().map(|r| r.seconds).collect::<Vec<_>>());
            let unshared = w7::run_patterns(&events, n, false);
            assert_eq!(unshared.matches, runs[0].matches, "sharing engines changes no match");
            let r = ScaleResult {
                patterns: n,
                events: runs[0].events,
                matches: runs[0].matches,
                seconds,
                unshared_seconds: unshared.seconds,
                stream_seconds: span as f64 / 1000.0,
            };
            eprintln!(
                "W7 scale: {n} pattern(s): {:.3} s, {:.4} % of stream time (an engine each: {:.3} s)",
                r.seconds,
                100.0 * r.share(),
                r.unshared_seconds
            );
            r
        })
        .collect()
}

/// The part as Markdown.
pub fn markdown(rs: &[ScaleResult]) -> String {
    let mut s = String::from(
        "### W7 scale: speed-violation patterns, execution time / stream time (target < 0.1 % at 100)\n\n\
         | patterns | events | matches | execution (s) | stream (s) | execution / stream | an engine each (s) | an engine each / stream |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in rs {
        s.push_str(&format!(
            "| {} | {} | {} | {:.3} | {:.0} | {:.4} % | {:.3} | {:.4} % |\n",
            r.patterns,
            r.events,
            r.matches,
            r.seconds,
            r.stream_seconds,
            100.0 * r.share(),
            r.unshared_seconds,
            100.0 * r.unshared_seconds / r.stream_seconds
        ));
    }
    s.push('\n');
    s
}

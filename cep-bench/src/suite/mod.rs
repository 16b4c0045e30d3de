//! The macro workloads of DESIGN.md §3 as data, for `cargo xtask bench`.
//!
//! A [`Workload`] has a name, a one-line description, a [`Target`], a
//! stream [`Size`] (full and `--quick`), what its rates are compared with
//! (a [`Baseline`]) and its [`Contender`]s. A contender prepares a
//! [`PassFn`] for a stream of `n` events — generating the stream (once per
//! process, shared by the contenders that read it) and anything else that
//! is setup — and each call of the pass function then runs one measured
//! pass from fresh state over the in-memory stream: generation, CSV parsing,
//! compiling the query and building an index are outside the timed loop;
//! pushing every event, taking every match, and the end of the input
//! (`finish`) are inside. A [`Pass`] reports events, matches, seconds and
//! the allocations made during the timed loop (counted when the binary
//! installs [`crate::alloc::Counting`]).
//!
//! With `check` set, a pass also folds every match into a [`Pass::digest`]:
//! a hash of the multiset of `(key, start, end, rows, ends)` (for level
//! alerts, of `(row, alert id)`), computed without the process-local
//! symbol numbering, so that two contenders — or two processes — with the
//! same matches have the same digest. The harness compares them; timed
//! passes run without `check` and only count.
//!
//! ```
//! use cep_bench::suite::{self, Scale};
//! let all = suite::workloads(Scale::Quick);
//! let w1a = all.iter().find(|w| w.name == "W1a").unwrap();
//! assert_eq!(w1a.contenders.iter().map(|c| c.name).collect::<Vec<_>>(), ["cep", "cep (builder)", "hand-written"]);
//! let mut cep = w1a.contenders[0].prepare(20_000);
//! let mut hw = w1a.contenders[2].prepare(20_000);
//! let (a, b) = (cep(true), hw(true));
//! assert_eq!((a.events, a.matches, a.digest), (b.events, b.matches, b.digest));
//! ```

mod catalog;
mod contenders;
mod digest;
mod streams;

use std::fmt;

pub use catalog::{thousands, workloads};
pub use contenders::cli::{CEILING, cep_binary};
pub use contenders::latency::{PacedRun, W5_LATENCY_RATE, paced_run};
pub use contenders::runtime::{rise_spike_runner, runtime_output, sharded_output, sharded_pass};
pub use digest::match_digest;

/// Full sizes or the small `--quick` ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The sizes of the table in the README.
    Full,
    /// Small sizes: the whole suite in well under two minutes.
    Quick,
}

/// A stream size (events) per [`Scale`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Events of a full run.
    pub full: usize,
    /// Events of a `--quick` run.
    pub quick: usize,
}

impl Size {
    /// The size at `scale`.
    pub fn at(self, scale: Scale) -> usize {
        match scale {
            Scale::Full => self.full,
            Scale::Quick => self.quick,
        }
    }
}

/// What a workload's rates are divided by in the "ratio" column.
#[derive(Clone, Debug, PartialEq)]
pub enum Baseline {
    /// The median events/s of this contender of the workload.
    Contender(&'static str),
    /// A fixed rate in events/s, measured elsewhere (W4: SASE 1.0).
    Rate {
        /// Events per second.
        events_per_sec: f64,
        /// Where the number comes from.
        label: &'static str,
    },
    /// No baseline yet.
    None,
}

/// A target of DESIGN.md §3: its text and its check.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// As the table shows it, e.g. `≥ 0.5× hand-written (aim 0.8×)`.
    pub text: String,
    /// How a row is checked against it.
    pub check: Check,
}

/// The check of a [`Target`], applied to every contender of the workload
/// but the baseline contender.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    /// Nothing to check (reported only).
    None,
    /// The ratio to the baseline is at least this.
    RatioAtLeast(f64),
    /// The median rate is at least this many events/s.
    EventsPerSecAtLeast(f64),
    /// The named contender's ratio to the baseline is at least this (the
    /// other contenders are reported only).
    ContenderRatioAtLeast(&'static str, f64),
}

impl Check {
    /// Whether a row with this median rate and ratio meets the target;
    /// `None` when there is nothing to check.
    pub fn holds(self, contender: &str, events_per_sec: f64, ratio: Option<f64>) -> Option<bool> {
        match self {
            Check::None => None,
            Check::ContenderRatioAtLeast(name, min) => (name == contender).then(|| ratio.is_some_and(|r| r >= min)),
            Check::RatioAtLeast(min) => ratio.map(|r| r >= min),
            Check::EventsPerSecAtLeast(min) => Some(events_per_sec >= min),
        }
    }
}

/// A point of a series on the W2 chart: the query and stream, and the window.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// E.g. `SEQ(A,B,D) uniform`.
    pub name: String,
    /// The window (time units = rows).
    pub window: i64,
    /// The aggregated-link paper's batch / per-event ratio here, if it
    /// reports one.
    pub paper: Option<f64>,
}

/// Live partial matches of an engine at the end of the stream (before
/// `finish`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Partials {
    /// Runs and pending matches.
    pub live: usize,
    /// Bytes of matching state per live partial match.
    pub bytes_each: usize,
}

/// What it cost to register a workload's standing queries (level alerts)
/// before the stream: reported beside the events/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    /// Queries registered.
    pub items: u64,
    /// Wall-clock seconds to register them.
    pub seconds: f64,
    /// Heap bytes the structure holds afterwards (live bytes of the counting
    /// allocator; 0 when it is not installed).
    pub bytes: u64,
}

/// One measured pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pass {
    /// Events pushed.
    pub events: u64,
    /// Matches (for level alerts: fires).
    pub matches: u64,
    /// The multiset digest of the matches, when the pass was asked to check.
    pub digest: Option<u64>,
    /// Wall-clock seconds of the timed loop.
    pub seconds: f64,
    /// Allocations (`alloc` + `realloc`) during the timed loop.
    pub allocations: u64,
    /// The engine's partial matches at the end of the stream, if it tells.
    pub partials: Option<Partials>,
    /// Registering standing queries, for workloads that have them.
    pub setup: Option<Setup>,
    /// Event-to-match latency, for paced workloads.
    pub latency: Option<Latency>,
}

/// Event-to-match latency of a pass fed at a fixed rate: per match, the
/// wall time from the push of the event that completes it to its output
/// line reaching the caller's writer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Events per second the stream was paced at.
    pub rate: f64,
    /// Matches measured (those completed by an event of the stream; not
    /// those only `finish` completes).
    pub matches: u64,
    /// Median latency, seconds.
    pub p50: f64,
    /// 99th percentile (nearest rank), seconds.
    pub p99: f64,
    /// The largest, seconds.
    pub max: f64,
}

/// One measured pass per call: `check` asks for the digest.
pub type PassFn = Box<dyn FnMut(bool) -> Pass>;

pub(crate) type Prepare = Box<dyn Fn(usize) -> PassFn>;

/// An engine (or baseline) of a workload.
pub struct Contender {
    /// As the table shows it.
    pub name: &'static str,
    prepare: Prepare,
}

impl Contender {
    /// A contender whose `prepare(n)` returns the pass function for a
    /// stream of `n` events.
    pub fn new(name: &'static str, prepare: impl Fn(usize) -> PassFn + 'static) -> Contender {
        Contender { name, prepare: Box::new(prepare) }
    }

    /// Generates (or reuses) the first `n` events of the stream and returns
    /// the pass function.
    pub fn prepare(&self, n: usize) -> PassFn {
        (self.prepare)(n)
    }
}

impl fmt::Debug for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Contender").field("name", &self.name).finish_non_exhaustive()
    }
}

/// A macro workload.
#[derive(Debug)]
pub struct Workload {
    /// E.g. `W1a`, `W2 abd w500`.
    pub name: String,
    /// One line: what runs, on what, and any reduction from DESIGN.md.
    pub description: String,
    /// Stream sizes.
    pub size: Size,
    /// The size at the scale the suite was made for.
    pub events: usize,
    /// The ratio column's reference.
    pub baseline: Baseline,
    /// DESIGN.md §3's target.
    pub target: Target,
    /// The number of matches the stream is known to have, if known.
    pub expect: Option<u64>,
    /// Where the workload sits on the W2 chart.
    pub series: Option<Series>,
    /// The engines measured, each over the same stream.
    pub contenders: Vec<Contender>,
}

impl Workload {
    /// The contender called `name`.
    pub fn contender(&self, name: &str) -> Option<&Contender> {
        self.contenders.iter().find(|c| c.name == name)
    }
}

#[cfg(test)]
mod tests;

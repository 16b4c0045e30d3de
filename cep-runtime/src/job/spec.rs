//! [`JobSpec`]: what a job runs, as plain data — the queries, the alerts,
//! the threads and the split, event time, the engines and checkpoints.
//! The binary builds one from its flags, a library caller by hand; a
//! checkpoint's [fingerprint](JobSpec::fingerprint) is computed from it and
//! from the input's columns, so a job resumes only the state it made.

use std::path::PathBuf;
use std::time::Duration;

use cep_core::budget::OnLimit;
use cep_core::{TimeUnit, Value};
use cep_index::{Alert, Trigger};
use cep_nfa::select::EngineChoice;
use cep_nfa::stack::Construction;
use cep_time::LatePolicy;

/// One text of query statements (LANGUAGE.md §2), and the name its
/// diagnostics are reported under (a file name, say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryText {
    /// How messages name the text (`rise.cep`).
    pub name: String,
    /// The statements.
    pub text: String,
}

impl QueryText {
    /// A text named `name`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> QueryText {
        QueryText { name: name.into(), text: text.into() }
    }
}

/// How a file's work is shared among more than one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Split {
    /// Time both on the rows read ahead and take the faster (always
    /// [`Split::Shards`] with checkpoints, so that a resumed run splits as
    /// the first did).
    #[default]
    Auto,
    /// The queries on one shard thread per thread, by key, each shard also
    /// parsing.
    Shards,
    /// The queries on one thread while the others parse.
    Pipeline,
}

/// Where and how often a job saves its state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointSpec {
    /// The directory of the checkpoint files.
    pub dir: PathBuf,
    /// Input rows between checkpoints (at least 1).
    pub every: u64,
    /// Resume from the newest valid checkpoint in `dir` with this job's
    /// fingerprint (none there: start from the beginning). Without it, the
    /// directory's earlier checkpoints are cleared.
    pub resume: bool,
    /// The output commits each checkpoint's input offsets with its lines
    /// (a Kafka topic written in transactions,
    /// [`LineSink::transactional`](cep_io::LineSink::transactional)): on
    /// resume, the offsets the input says are committed choose the
    /// checkpoint, not its age.
    pub by_committed_offsets: bool,
}

/// Default input rows between checkpoints.
pub const DEFAULT_CHECKPOINT_EVERY: u64 = 100_000;

/// The most threads a job takes: each runs a copy of every query, and a
/// thread costs its stack, so more is a mistake, not a plan.
pub const MAX_THREADS: usize = 1024;

/// What a [`Job`](super::Job) runs. Every field has a default
/// ([`JobSpec::default`]): no queries, one thread per core, no delay, late
/// events dropped, the engines chosen per query, no checkpoints.
///
/// # Examples
/// ```
/// use cep_runtime::job::{JobSpec, QueryText};
/// let spec = JobSpec {
///     queries: vec![QueryText::new("pair.cep", "QUERY pair PATTERN SEQ(A a, B b) WHERE [k]")],
///     threads: Some(1),
///     ..JobSpec::default()
/// };
/// assert_eq!(spec.shards(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Query statements, compiled in order.
    pub queries: Vec<QueryText>,
    /// Standing level alerts (LANGUAGE.md §4).
    pub alerts: Vec<Alert>,
    /// How messages about the alerts name them (their file).
    pub alerts_name: String,
    /// Threads (`None`: one per core). One runs everything on the calling
    /// thread; more run the queries on shards by key or on one thread while
    /// the others parse ([`Split`]), with the output of one thread, byte for
    /// byte, when [`ordered`](Self::ordered).
    pub threads: Option<usize>,
    /// How a file's work is split among the threads.
    pub split: Split,
    /// Lines in the order one thread writes them (default). Off, a job
    /// pushed events by its caller shares the keys between the calling
    /// thread and the workers, and each shard's lines come as they are
    /// made: the same lines, in another order.
    pub ordered: bool,
    /// Allowed out-of-orderness of event time, in timestamp units.
    pub max_delay: i64,
    /// What happens to late events.
    pub late: LatePolicy,
    /// Which engine runs each query.
    pub engine: EngineChoice,
    /// How the stack engine builds matches.
    pub construction: Construction,
    /// At most this many partial matches per key and query.
    pub max_partials_per_key: Option<usize>,
    /// At most this many bytes of state (partial matches, buffer nodes,
    /// per-key history, events held for reordering) in all (`None`: no
    /// bound; `cep run` bounds it by default to half the machine's memory).
    pub max_state: Option<usize>,
    /// What happens when the state would pass [`max_state`](Self::max_state).
    pub on_state_limit: OnLimit,
    /// The unit of `ts`, for the durations in queries.
    pub time_unit: TimeUnit,
    /// Skip bad input rows (with a warning and a count) instead of failing.
    pub skip_bad_rows: bool,
    /// On a stream: when no event arrives for this long, the watermark
    /// follows the wall clock.
    pub idle_timeout: Option<Duration>,
    /// Checkpoints, if any.
    pub checkpoint: Option<CheckpointSpec>,
    /// Where the queries' remote functions are answered (LANGUAGE.md §8).
    pub remote: Option<super::RemoteSpec>,
}

impl Default for JobSpec {
    fn default() -> JobSpec {
        JobSpec {
            queries: Vec::new(),
            alerts: Vec::new(),
            alerts_name: "levels".into(),
            threads: None,
            split: Split::Auto,
            ordered: true,
            max_delay: 0,
            late: LatePolicy::Drop,
            engine: EngineChoice::Auto,
            construction: Construction::Direct,
            max_partials_per_key: None,
            max_state: None,
            on_state_limit: OnLimit::Fail,
            time_unit: TimeUnit::Millis,
            skip_bad_rows: false,
            idle_timeout: None,
            checkpoint: None,
            remote: None,
        }
    }
}

impl JobSpec {
    /// The threads asked for, or one per core.
    pub fn threads_or_cores(&self) -> usize {
        self.threads.unwrap_or_else(cores)
    }

    /// The shards the queries would run on before the job looks at them:
    /// the threads, but one under batch construction without an explicit
    /// thread count (only one thread gives its order).
    pub fn shards(&self) -> usize {
        if self.threads.is_none() && self.construction == Construction::Batch {
            return 1;
        }
        self.threads_or_cores()
    }

    /// Identifies what a checkpoint's state depends on: the query texts,
    /// the alerts, the number of `shards`, the options that shape the
    /// engines and the event time, and the input's `fields` (its columns,
    /// in order). Parser threads and the split leave no state behind, so
    /// they are not part of it.
    pub fn fingerprint(&self, shards: usize, fields: &[String]) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        let mut put = |bytes: &[u8]| {
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        put(b"cep job 1");
        for q in &self.queries {
            put(q.text.as_bytes());
        }
        put(&(self.alerts.len() as u64).to_le_bytes());
        for a in &self.alerts {
            put(a.id.as_bytes());
            put_value(&mut put, &a.key);
            put(a.field.as_bytes());
            let (kind, lo, hi) = match a.trigger {
                Trigger::Above(l) => (0u8, l, l),
                Trigger::Below(l) => (1, l, l),
                Trigger::Enter { lo, hi } => (2, lo, hi),
                Trigger::Exit { lo, hi } => (3, lo, hi),
            };
            put(&[kind]);
            put(&lo.to_bits().to_le_bytes());
            put(&hi.to_bits().to_le_bytes());
            put(&a.band.to_bits().to_le_bytes());
        }
        put(&(shards as u64).to_le_bytes());
        put(&self.max_delay.to_le_bytes());
        put(&self.time_unit.nanos().to_le_bytes());
        put(&[engine_code(self.engine), construction_code(self.construction)]);
        put(&(self.max_partials_per_key.unwrap_or(0) as u64).to_le_bytes());
        for f in fields {
            put(f.as_bytes());
        }
        h.digest()
    }
}

fn put_value(put: &mut impl FnMut(&[u8]), v: &Value) {
    match v {
        Value::Null => put(&[0]),
        Value::Int(i) => {
            put(&[1]);
            put(&i.to_le_bytes());
        }
        Value::Float(f) => {
            put(&[2]);
            put(&f.to_bits().to_le_bytes());
        }
        Value::Bool(b) => put(&[3, u8::from(*b)]),
        Value::Str(s) => {
            put(&[4]);
            put(s.as_str().as_bytes());
        }
    }
}

fn engine_code(e: EngineChoice) -> u8 {
    match e {
        EngineChoice::Auto => 0,
        EngineChoice::Run => 1,
        EngineChoice::Stack => 2,
    }
}

fn construction_code(c: Construction) -> u8 {
    match c {
        Construction::PerEvent => 0,
        Construction::Batch => 1,
        Construction::Direct => 2,
    }
}

/// The cores this process may use.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_what_shapes_the_state() {
        let spec = JobSpec { queries: vec![QueryText::new("q", "PATTERN SEQ(A a, B b)")], ..JobSpec::default() };
        let fields = ["x".to_owned()];
        let base = spec.fingerprint(2, &fields);
        assert_eq!(base, spec.clone().fingerprint(2, &fields), "stable");
        assert_ne!(base, spec.fingerprint(3, &fields), "shards");
        assert_ne!(base, spec.fingerprint(2, &["y".to_owned()]), "columns");
        let other = JobSpec { max_delay: 5, ..spec.clone() };
        assert_ne!(base, other.fingerprint(2, &fields), "delay");
        let other = JobSpec { engine: EngineChoice::Run, ..spec.clone() };
        assert_ne!(base, other.fingerprint(2, &fields), "engine");
        let other = JobSpec { alerts: vec![Alert::above("a", Value::Int(1), "x", 10.0, 1.0)], ..spec.clone() };
        assert_ne!(base, other.fingerprint(2, &fields), "alerts");
        // Parser threads and the split leave no state: the same.
        let other = JobSpec { split: Split::Pipeline, threads: Some(7), ..spec.clone() };
        assert_eq!(base, other.fingerprint(2, &fields));
    }
}

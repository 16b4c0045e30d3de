//! The runner's errors: [`PushError`] for an event or a write that failed,
//! [`RunnerError`] for a query a runner cannot take, [`RestoreError`] for a
//! saved state it refuses. Typed, so that a caller can tell them apart
//! without reading the text; the text is what `cep` prints.

use std::io;

use cep_core::Timestamp;

/// Why a push failed.
#[derive(Debug)]
pub enum PushError {
    /// The event is late and the policy is `fail`.
    Late {
        /// The event's ts.
        ts: Timestamp,
        /// The watermark it fell behind.
        watermark: Timestamp,
    },
    /// Writing a match or a late event failed.
    Io(io::Error),
    /// The job's state would pass its bound (`RuntimeBuilder::max_state`)
    /// under the `fail` policy, or what passed it cannot be dropped: what
    /// held the most, and the bound in bytes. The runtime takes no more
    /// events.
    StateLimit {
        /// The part that held the most, and its largest key.
        hit: cep_core::budget::LimitHit,
        /// The bound in bytes.
        limit: usize,
    },
    /// The event does not fit the runtime's schema (more field values
    /// than it has fields); nothing was processed.
    Event(crate::EventError),
}

/// The message of a job stopped at its state bound, as `cep` prints it.
pub(crate) fn write_state_limit(
    f: &mut std::fmt::Formatter<'_>,
    hit: &cep_core::budget::LimitHit,
    limit: usize,
) -> std::fmt::Result {
    use cep_core::budget::show_size;
    write!(
        f,
        "error: the state would pass --max-state {}: {} holds {}",
        show_size(limit),
        hit.holder,
        show_size(hit.bytes)
    )?;
    if let Some(key) = &hit.key {
        write!(f, ", the most for key {key} ({} partial matches, {})", hit.key_partials, show_size(hit.key_bytes))?;
    } else if hit.key_partials > 0 {
        write!(f, " ({} entries)", hit.key_partials)?;
    }
    if hit.key.is_none() && hit.holder.contains("--max-delay") {
        write!(f, "; raise --max-state or lower --max-delay")
    } else {
        write!(f, "; raise --max-state, bound the query with WITHIN, or use --on-state-limit drop-oldest")
    }
}

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushError::Late { ts, watermark } => {
                write!(f, "late event: ts {ts} is behind the watermark {watermark}")
            }
            PushError::Io(e) => write!(f, "{e}"),
            PushError::StateLimit { hit, limit } => write_state_limit(f, hit, *limit),
            PushError::Event(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PushError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PushError::Io(e) => Some(e),
            PushError::Event(e) => Some(e),
            _ => None,
        }
    }
}

impl From<crate::EventError> for PushError {
    fn from(e: crate::EventError) -> Self {
        PushError::Event(e)
    }
}

impl From<io::Error> for PushError {
    fn from(e: io::Error) -> Self {
        PushError::Io(e)
    }
}

/// Why a runner refused a change: [`Runner::add_query`](crate::Runner::add_query)
/// a query its engine choice cannot run, or a change sent to a shard
/// ([`shard::Control`](crate::shard::Control)) that failed (the text says why).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerError {
    kind: RunnerErrorKind,
}

/// What a [`RunnerError`] is about; private, so that cases can be added
/// without breaking callers.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RunnerErrorKind {
    /// The forced engine cannot run the query.
    Engine(String),
    /// A change to the runner failed, or a sharded runtime refused it.
    Refused(String),
}

impl RunnerError {
    pub(crate) fn engine(why: String) -> RunnerError {
        RunnerError { kind: RunnerErrorKind::Engine(why) }
    }

    /// A change refused for `why` (for the changes a caller sends to a
    /// shard's runner, [`shard::Control`](crate::shard::Control)).
    pub fn refused(why: impl Into<String>) -> RunnerError {
        RunnerError { kind: RunnerErrorKind::Refused(why.into()) }
    }

    /// Whether the engine the runner forces cannot run the query.
    pub fn is_engine(&self) -> bool {
        matches!(self.kind, RunnerErrorKind::Engine(_))
    }
}

impl std::fmt::Display for RunnerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            RunnerErrorKind::Engine(why) | RunnerErrorKind::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for RunnerError {}

/// Why [`Runner::restore`](crate::Runner::restore) refused a saved state:
/// it was taken from a runner built otherwise ([`is_mismatch`](Self::is_mismatch)),
/// it holds what no runner writes ([`is_inconsistent`](Self::is_inconsistent)),
/// or a query's engine refused its part ([`is_engine`](Self::is_engine)).
/// Its text is the one `cep run` prints on a failed resume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreError {
    kind: RestoreErrorKind,
}

/// What a [`RestoreError`] is about; private, read through the accessors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RestoreErrorKind {
    /// Saved and present query counts differ.
    Queries { saved: usize, here: usize },
    /// Saved with another delay or other level alerts.
    Setup,
    /// A saved count beyond 2^62.
    Count,
    /// A held event filed under another time than its own.
    Held { ts: Timestamp, held_as: Timestamp },
    /// A query engine refused its saved state.
    Engine { query: String, why: String },
    /// The level index refused its saved state.
    Levels(cep_index::RestoreError),
    /// A query's engine is ahead of the input.
    Ahead { query: String, engine: Timestamp, next: Timestamp },
}

impl RestoreError {
    pub(crate) fn new(kind: RestoreErrorKind) -> RestoreError {
        RestoreError { kind }
    }

    /// Whether the state was taken from a runner built otherwise: other
    /// queries, delay or alerts.
    pub fn is_mismatch(&self) -> bool {
        matches!(self.kind, RestoreErrorKind::Queries { .. } | RestoreErrorKind::Setup | RestoreErrorKind::Levels(_))
    }

    /// Whether the state holds what no runner writes (a count out of range,
    /// a held event filed under another time, an engine ahead of the input).
    pub fn is_inconsistent(&self) -> bool {
        matches!(self.kind, RestoreErrorKind::Count | RestoreErrorKind::Held { .. } | RestoreErrorKind::Ahead { .. })
    }

    /// Whether a query's engine refused its part of the state (the text
    /// says why, and [`query`](Self::query) names the query).
    pub fn is_engine(&self) -> bool {
        matches!(self.kind, RestoreErrorKind::Engine { .. })
    }

    /// The query the error is about, when it is about one.
    pub fn query(&self) -> Option<&str> {
        match &self.kind {
            RestoreErrorKind::Ahead { query, .. } | RestoreErrorKind::Engine { query, .. } => Some(query),
            _ => None,
        }
    }
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            RestoreErrorKind::Queries { saved, here } => {
                write!(f, "the saved state has {saved} queries, this run {here}")
            }
            RestoreErrorKind::Setup => {
                f.write_str("the saved state was taken with another delay or other level alerts")
            }
            RestoreErrorKind::Count => f.write_str("the saved state is inconsistent: a count beyond 2^62"),
            RestoreErrorKind::Held { ts, held_as } => {
                write!(f, "the saved state is inconsistent: an event at {ts} is held as at {held_as}")
            }
            RestoreErrorKind::Engine { why, .. } => f.write_str(why),
            RestoreErrorKind::Levels(e) => write!(f, "{e}"),
            RestoreErrorKind::Ahead { query, engine, next } => {
                write!(
                    f,
                    "the saved state is inconsistent: query `{query}` is at watermark {engine}, the input at {next}"
                )
            }
        }
    }
}

impl std::error::Error for RestoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            RestoreErrorKind::Levels(e) => Some(e),
            _ => None,
        }
    }
}

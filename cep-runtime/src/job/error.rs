//! [`JobError`]: why a job could not be built, resumed or run. Each kind
//! keeps what a caller needs to act on it (the query diagnostics with their
//! spans, the row that stopped the run, the I/O error), and says whether it
//! is the input's fault ([`JobError::is_bad_input`]), which the binary
//! turns into exit code 2.

use std::fmt;
use std::io;
use std::path::PathBuf;

use cep_io::ReadError;
use cep_nfa::diag::Diagnostics;

/// Why a job failed (see [`JobError::kind`]).
#[derive(Debug)]
pub struct JobError {
    kind: JobErrorKind,
}

/// The kinds of [`JobError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum JobErrorKind {
    /// The spec asks for something no job can do (zero threads, say).
    Spec(String),
    /// A query text does not compile: its diagnostics, with spans into
    /// `text`.
    Compile {
        /// The text's name.
        name: String,
        /// The text.
        text: String,
        /// What is wrong, where.
        diagnostics: Diagnostics,
    },
    /// A query cannot run as asked (`--engine stack` on one that does not
    /// qualify, say).
    Engine(String),
    /// Remote predicates: a call with nowhere to go, a `--remote` no query
    /// declares, a resolver that could not be made, or a call that failed
    /// under `--remote-failure fail` (LANGUAGE.md §8).
    Remote(String),
    /// The level alerts are invalid (a duplicate id, a bad band).
    Alerts {
        /// How the alerts are named (their file).
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The input has a bad row, or cannot be read.
    Read(ReadError),
    /// A late event under the `fail` policy.
    Late {
        /// The input's name.
        file: String,
        /// Its line.
        line: u64,
        /// Its row.
        row: u64,
        /// What the runner said.
        message: String,
    },
    /// Writing the output failed.
    Write(io::Error),
    /// The state would pass the bound (`JobSpec::max_state`) and the
    /// policy is to fail, or what passed it cannot be dropped: what held
    /// the most, and the bound.
    StateLimit {
        /// The part that held the most, and its largest key.
        hit: cep_core::budget::LimitHit,
        /// The bound in bytes.
        limit: usize,
    },
    /// A program built with [`PatternBuilder`](cep_nfa::builder::PatternBuilder)
    /// for [`Runtime::add_program`](crate::runtime::Runtime::add_program)
    /// is invalid.
    Pattern(cep_nfa::builder::BuildError),
    /// The late-event file cannot be opened.
    LateFile(io::Error),
    /// The shard threads cannot be started.
    Threads {
        /// How many were asked for.
        count: usize,
        /// Why not.
        error: io::Error,
    },
    /// The input cannot be read again on threads, or a partitioned one
    /// moved to where a checkpoint stood.
    Reopen {
        /// The input's name.
        file: String,
        /// Why not.
        error: io::Error,
    },
    /// A checkpoint cannot be saved, or the directory read or cleared.
    Checkpoint {
        /// The directory.
        dir: PathBuf,
        /// What was being done (`save a checkpoint in`, `clear the checkpoints in`).
        doing: &'static str,
        /// Why not.
        error: io::Error,
    },
    /// The newest checkpoint was taken by another job: other queries,
    /// alerts, options or columns, or (`taken_with`) the same job on another
    /// number of shards.
    Mismatch {
        /// The directory.
        dir: PathBuf,
        /// The shards that give the checkpoint's fingerprint, if any does.
        taken_with: Option<usize>,
        /// This job's shards.
        shards: usize,
    },
    /// The run whose checkpoints these are ended, its output committed to
    /// the end of its input: nothing to resume.
    Ended {
        /// The directory.
        dir: PathBuf,
    },
    /// The output was committed with input offsets (a Kafka transaction)
    /// that no checkpoint in the directory has: the directory is another
    /// run's, or its checkpoints were removed.
    Uncommitted {
        /// The directory.
        dir: PathBuf,
        /// The committed offsets, `partition:offset, …`.
        offsets: String,
    },
    /// The newest checkpoint was taken on another input: a file whose
    /// first bytes, up to where the checkpoint stood, are not those it read.
    OtherInput {
        /// The checkpoint directory.
        dir: PathBuf,
        /// This job's input.
        file: String,
        /// What differs.
        why: String,
    },
    /// The checkpoint's state cannot be restored into this job.
    Restore {
        /// The directory.
        dir: PathBuf,
        /// Why not.
        message: String,
    },
    /// The input cannot be reopened where the checkpoint left it (it is
    /// shorter than the checkpoint says it read, say).
    Input(cep_io::input::OpenError),
}

impl JobError {
    pub(crate) fn new(kind: JobErrorKind) -> JobError {
        JobError { kind }
    }

    /// What went wrong.
    pub fn kind(&self) -> &JobErrorKind {
        &self.kind
    }

    /// Whether the input or the spec is at fault (bad query, bad row, late
    /// event under `fail`, a checkpoint of another job), rather than the
    /// system (I/O, threads).
    pub fn is_bad_input(&self) -> bool {
        use JobErrorKind::*;
        match &self.kind {
            Spec(_)
            | Compile { .. }
            | Pattern(_)
            | Engine(_)
            | Remote(_)
            | Alerts { .. }
            | Late { .. }
            | Mismatch { .. }
            | Uncommitted { .. }
            | Ended { .. }
            | OtherInput { .. }
            | Restore { .. }
            | StateLimit { .. } => true,
            // The binary has always said a reader's errors are the input's.
            Read(_) => true,
            Input(e) => e.is_bad_input(),
            Write(_) | LateFile(_) | Threads { .. } | Reopen { .. } | Checkpoint { .. } => false,
        }
    }

    /// The input row that stopped the run, if one did (a bad row, a late
    /// event): a summary counts the rows up to it.
    pub fn row(&self) -> Option<u64> {
        match &self.kind {
            JobErrorKind::Read(e) => e.row,
            JobErrorKind::Late { row, .. } => Some(*row),
            _ => None,
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use JobErrorKind::*;
        match &self.kind {
            Spec(m) | Engine(m) | Remote(m) => f.write_str(m),
            Compile { name, text, diagnostics } => f.write_str(diagnostics.render(text, name).trim_end()),
            Alerts { name, message } => write!(f, "{name}: {message}"),
            Read(e) => write!(f, "{e}"),
            Late { file, line, row, message } => write!(f, "{file}:{line}: row {row}: {message}"),
            Write(e) => write!(f, "writing output: {e}"),
            StateLimit { hit, limit } => crate::error::write_state_limit(f, hit, *limit),
            Pattern(e) => write!(f, "invalid pattern: {e}"),
            LateFile(e) => write!(f, "cannot open the late-event file: {e}"),
            Threads { count, error } => write!(f, "cannot start {count} threads: {error}"),
            Reopen { file, error } => write!(f, "cannot read {file}: {error}"),
            Checkpoint { dir, doing, error } => write!(f, "cannot {doing} {}: {error}", dir.display()),
            Ended { dir } => write!(
                f,
                "the run whose checkpoints are in {} ended, its output committed to the end of its input: nothing \
                 to resume (without --resume a run starts again)",
                dir.display()
            ),
            Uncommitted { dir, offsets } => write!(
                f,
                "the output was committed with the input at offsets {offsets} (partition:offset), which no \
                 checkpoint in {} has: the directory is another run's, or its checkpoints were removed",
                dir.display()
            ),
            Mismatch { dir, taken_with: Some(n), shards } => write!(
                f,
                "the checkpoint in {} was taken with the queries on {n} thread{} (this run: {shards})",
                dir.display(),
                if *n == 1 { "" } else { "s" }
            ),
            Mismatch { dir, taken_with: None, .. } => write!(
                f,
                "the checkpoint in {} was taken with other queries, alerts, options or input columns",
                dir.display()
            ),
            OtherInput { dir, file, why } => write!(
                f,
                "the checkpoint in {} was taken on another input: {file}: {why}; run without --resume to start afresh",
                dir.display()
            ),
            Restore { dir, message } => write!(f, "cannot resume from {}: {message}", dir.display()),
            Input(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for JobError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use JobErrorKind::*;
        match &self.kind {
            Read(e) => Some(e),
            Write(e) | LateFile(e) | Threads { error: e, .. } | Reopen { error: e, .. } => Some(e),
            Checkpoint { error, .. } => Some(error),
            Input(e) => Some(e),
            Pattern(e) => Some(e),
            _ => None,
        }
    }
}

impl From<JobErrorKind> for JobError {
    fn from(kind: JobErrorKind) -> JobError {
        JobError::new(kind)
    }
}

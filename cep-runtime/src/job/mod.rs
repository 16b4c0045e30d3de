//! [`Job`]: the one place a pipeline is assembled and run, for the binary
//! and the library alike.
//!
//! ```text
//! source (file, stream, memory)          cep-io: JobInput
//!   -> reorder (event time, watermark)    the front runner, cep-time
//!   -> route by key                       shard (the stable key hash)
//!   -> one runner | shards | the parse/run pipeline
//!   -> ordered merge                      order
//!   -> sink (JSON lines)                  cep-io: LineSink
//! ```
//!
//! A [`JobSpec`] says what runs; [`Job::build`] compiles its queries
//! against the input's schema (learnt from the rows read ahead), chooses
//! how the threads share the work ([`Split`]), resumes the newest
//! checkpoint with the spec's [fingerprint](JobSpec::fingerprint) when
//! asked, and puts the parts together; [`Job::run`] reads the input to its
//! end (or until [`Job::stop_handle`] is set), saving checkpoints as they
//! fall due, and writes the lines to a [`LineSink`]. On a stream, every
//! match goes out before the input waits, and with an idle timeout the
//! watermark follows the wall clock while it does.
//!
//! Words used throughout: a **shard** is a thread that owns the keys the
//! stable hash gives it; a **batch** is the events handed to the shards at
//! once; a **block** is a piece of a file parsed by one thread; the
//! **front** is the runner on the calling thread that orders events and
//! routes them.
//!
//! # Examples
//! Run a query over events in memory, stop after 300 of them with a
//! checkpoint, and resume: the two runs write what one would.
//! ```
//! use std::sync::atomic::Ordering;
//! use cep_core::{Event, Schema, Sym, Value};
//! use cep_io::memory::IterSource;
//! use cep_runtime::job::{CheckpointSpec, Job, JobInput, JobSpec, QueryText};
//!
//! let dir = std::env::temp_dir().join(format!("cep-job-doc-{}", std::process::id()));
//! let mut schema = Schema::new();
//! let k = schema.field("k") as usize;
//! let events = move || (0..1000i64).map(move |i| {
//!     let mut fields = vec![Value::Null; k + 1];
//!     fields[k] = Value::Int(i % 7);
//!     Event::new(Sym::new(if i % 3 == 0 { "A" } else { "B" }), i, 0, fields)
//! });
//! let spec = |resume| JobSpec {
//!     queries: vec![QueryText::new("q", "QUERY ab PATTERN SEQ(A a, B b) WHERE [k] WITHIN 10")],
//!     threads: Some(1),
//!     checkpoint: Some(CheckpointSpec { dir: dir.clone(), every: 100, resume, by_committed_offsets: false }),
//!     ..JobSpec::default()
//! };
//! let run = |resume: bool, stop_at: Option<usize>| {
//!     let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
//!     let flag = stop.clone();
//!     let source = events().enumerate().map(move |(i, e)| {
//!         if Some(i) == stop_at { flag.store(true, Ordering::Relaxed) }
//!         e
//!     });
//!     let mut input = JobInput::events(IterSource::new("mem", source), schema.clone());
//!     let mut job = Job::build(spec(resume), &mut input, &mut |_| {}).unwrap();
//!     job.set_stop_handle(stop);
//!     let mut out = Vec::new();
//!     job.run(input, &mut out, None).unwrap();
//!     (out, job.resumed().map(|r| r.output_bytes))
//! };
//! let (whole, _) = run(false, None);
//! let (mut first, _) = run(false, Some(300));
//! let (rest, kept) = run(true, None);
//! first.truncate(kept.unwrap() as usize); // what the checkpoint covered
//! first.extend(rest);
//! assert_eq!(first, whole);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod assemble;
mod checkpoints;
mod cost;
mod drive;
mod driver;
mod error;
mod remote;
mod spec;
mod tally;

use std::io::BufWriter;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use cep_core::budget::{OnLimit, StateBudget};
use cep_core::{Event, Schema, Timestamp};
use cep_io::{EventSource, FileInput, InputPosition, LineSink, ReadAhead};
use cep_time::LatePolicy;

pub use drive::Progress;
pub use error::{JobError, JobErrorKind};
pub use remote::{MakeResolver, RemoteSpec};
pub use spec::{CheckpointSpec, DEFAULT_CHECKPOINT_EVERY, JobSpec, MAX_THREADS, QueryText, Split};
pub use tally::OutputFailed;

pub(crate) use assemble::Sharing;
pub(crate) use driver::Driver;

use self::checkpoints::{Checkpoints, Identify};
use self::cost::Costs;
use self::drive::{Ended, IdleClock, Loop, Options, write_failed};
use self::tally::Tally;
use crate::checkpoint;
use crate::{JsonLines, MASK_QUERIES, QueryInfo, Runner, RunnerStats, Summary};

/// What a job reads: a file or a stream opened by name, with the rows
/// read ahead of it, or any other [`EventSource`] with the schema its
/// events are built with.
#[derive(Debug)]
pub struct JobInput<'a> {
    source: Source<'a>,
    read_ahead: ReadAhead,
}

enum Source<'a> {
    File(Box<FileInput>),
    Events(Box<dyn EventSource + 'a>, Schema),
    /// Only a schema: the caller pushes the events ([`crate::runtime::Runtime`]).
    Pushed(Schema),
}

impl std::fmt::Debug for Source<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(i) => f.debug_tuple("File").field(&i.path()).finish(),
            Source::Events(s, _) => f.debug_tuple("Events").field(&s.file()).finish(),
            Source::Pushed(_) => f.write_str("Pushed"),
        }
    }
}

impl<'a> JobInput<'a> {
    /// A file or stream, with the rows `read_ahead` of it (see
    /// [`FileInput::read_ahead`]): a file may be timed, parsed on threads
    /// and reopened where a checkpoint left it.
    pub fn file(input: FileInput, read_ahead: ReadAhead) -> JobInput<'a> {
        JobInput { source: Source::File(Box::new(input)), read_ahead }
    }

    /// Any source, whose events are built with `schema` (their fields'
    /// ids): memory, a channel, another process.
    pub fn events(source: impl EventSource + 'a, schema: Schema) -> JobInput<'a> {
        JobInput { source: Source::Events(Box::new(source), schema), read_ahead: ReadAhead::default() }
    }

    /// No source: the caller pushes events built with `schema`.
    pub(crate) fn pushed(schema: Schema) -> JobInput<'static> {
        JobInput { source: Source::Pushed(schema), read_ahead: ReadAhead::default() }
    }

    /// The schema of the events (filled with the fields the queries name
    /// once the job is built).
    pub fn schema(&self) -> &Schema {
        match &self.source {
            Source::File(i) => i.schema(),
            Source::Events(_, s) | Source::Pushed(s) => s,
        }
    }

    pub(crate) fn schema_mut(&mut self) -> &mut Schema {
        match &mut self.source {
            Source::File(i) => i.schema_mut(),
            Source::Events(_, s) | Source::Pushed(s) => s,
        }
    }

    pub(crate) fn into_schema(self) -> Schema {
        match self.source {
            Source::File(i) => i.schema().clone(),
            Source::Events(_, s) | Source::Pushed(s) => s,
        }
    }

    fn is_stream(&self) -> bool {
        match &self.source {
            Source::File(i) => i.is_stream(),
            Source::Events(s, _) => s.may_wait(),
            Source::Pushed(_) => false,
        }
    }
}

/// Where a resumed job picked up: the checkpoint's counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resumed {
    /// Input rows the checkpoint's state had consumed (they are skipped).
    pub position: u64,
    /// Output bytes written when it was taken: a file output resumes there
    /// ([`cep_io::FileOutput::resume`]).
    pub output_bytes: u64,
    /// Where the input stood, when the reader knew it.
    pub input: Option<InputPosition>,
    /// Bad rows skipped before it.
    pub skipped: u64,
    /// Lines among the first `output_bytes` its state had not produced
    /// yet: a file output resumed there drops them when they come
    /// ([`cep_io::FileOutput::resume`]).
    pub output_pending: Vec<Vec<u8>>,
}

/// How [`Job::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The input ended; every match is out.
    Finished,
    /// A stop was asked for ([`Job::stop_handle`]): the matches so far are
    /// out, a checkpoint was saved if checkpoints are on, and the state is
    /// not finished (a resumed job carries on from it).
    Stopped,
}

/// The most state the runner that timed the queries may hold to be kept to
/// the end of the run (see `Costs::measure`); above it, it is dropped and
/// the job takes shards.
const TIMING_KEEPS: usize = 16 << 20;

/// A pipeline, built from a [`JobSpec`] (see the [module](self) docs).
#[derive(Debug)]
pub struct Job {
    pub(crate) driver: Driver,
    opts: Options,
    checkpoints: Checkpoints,
    resumed: Option<Resumed>,
    parsers: usize,
    /// Why the threads share the work as they do.
    split_note: Option<String>,
    /// The runner that timed the queries, kept to the end (see
    /// `Costs::measure`).
    _timing: Option<Runner>,
    stop: Arc<AtomicBool>,
    /// The state bound shared by every part (`JobSpec::max_state`).
    pub(crate) budget: Option<Arc<StateBudget>>,
    /// The remote functions, when the queries call any.
    remote: Option<RemoteSpec>,
    skipped: u64,
    rows: u64,
    /// What the last run wrote, when writing its output failed.
    output_failed: Option<OutputFailed>,
}

impl Job {
    /// Compiles the spec's queries against the input's schema, chooses how
    /// the threads share the work, resumes a checkpoint when asked, and
    /// assembles the pipeline. Warnings and notes (a query's warnings, a
    /// checkpoint resumed) go to `report`, each a line or more ending in a
    /// newline.
    pub fn build(spec: JobSpec, input: &mut JobInput<'_>, report: &mut dyn FnMut(&str)) -> Result<Job, JobError> {
        Job::assemble(spec, input, report)
    }

    /// [`build`](Self::build) for a caller that pushes events itself: no
    /// input to time or reopen, and with [`JobSpec::ordered`] off the keys
    /// shared with the calling thread.
    pub(crate) fn for_pushing(spec: JobSpec, schema: Schema) -> Result<(Job, Schema), JobError> {
        let mut input = JobInput::pushed(schema);
        let job = Job::assemble(spec, &mut input, &mut |_| {})?;
        Ok((job, input.into_schema()))
    }

    fn assemble(spec: JobSpec, input: &mut JobInput<'_>, report: &mut dyn FnMut(&str)) -> Result<Job, JobError> {
        let spec_error = |m: &str| JobError::new(JobErrorKind::Spec(m.to_owned()));
        match spec.threads {
            Some(0) => return Err(spec_error("a job needs at least one thread")),
            Some(n) if n > MAX_THREADS => {
                return Err(spec_error(&format!("a job takes at most {MAX_THREADS} threads")));
            }
            _ => {}
        }
        if spec.checkpoint.as_ref().is_some_and(|c| c.every == 0) {
            return Err(spec_error("checkpoints need at least one row between them"));
        }
        if spec.max_partials_per_key == Some(0) {
            return Err(spec_error("the bound on partial matches per key must be at least 1"));
        }
        let parsers = spec.threads_or_cores();
        let mut shard_count = spec.shards();
        let streaming = input.is_stream();
        let pushed = matches!(input.source, Source::Pushed(_));

        let (programs, mut read_fields) = assemble::programs(&spec, input.schema_mut(), Some(report))?;
        let budget = spec.max_state.map(|bytes| Arc::new(StateBudget::new(bytes, spec.on_state_limit)));
        let first = assemble::runner(&spec, programs, budget.as_ref())?;
        if shard_count > 1 && first.queries().len() > MASK_QUERIES {
            // The sharded runtime routes each event with a mask of its queries.
            if spec.threads.is_some() && !pushed {
                report(&format!(
                    "warning: --threads above 1 runs at most {MASK_QUERIES} queries; running these {} on one thread\n",
                    first.queries().len()
                ));
            }
            if pushed {
                return Err(spec_error(&format!("a runtime on several threads runs at most {MASK_QUERIES} queries")));
            }
            shard_count = 1;
        }

        // A file on more than one thread: shards or a pipeline.
        let (mut timing, mut split_note) = (None, None);
        // No query keyed and no level alerts: every event would go to one
        // shard, whose output for a block waits whole for the merge (a
        // match-heavy query held gigabytes of lines there), while the
        // other shards idle. One runner (with parsers beside it) does the
        // same work.
        let keyed = first.partition_fields().iter().any(Option::is_some) || !spec.alerts.is_empty();
        if shard_count > 1 && !keyed && !first.queries().is_empty() {
            shard_count = 1;
            split_note = Some("a pipeline (no query has a partition key: shards would give every event to one)".into());
        }
        let ahead = &input.read_ahead;
        if let Source::File(file) = &input.source
            && shard_count > 1
            && parsers > 1
            && !streaming
            && !ahead.ended
            && ahead.error.is_none()
        {
            let (pipeline, why) = match spec.split {
                Split::Shards => (false, "--parallel shards".to_owned()),
                Split::Pipeline => (true, "--parallel pipeline".to_owned()),
                Split::Auto if spec.checkpoint.is_some() => (false, "--checkpoint".to_owned()),
                // Timing would call the remote functions for a dry run; the
                // calls' wait, not the parsing, bounds such a job, and
                // shards wait in parallel.
                Split::Auto if spec.remote.is_some() => (false, "remote functions".to_owned()),
                Split::Auto => {
                    let progs = assemble::programs(&spec, &mut file.schema().clone(), None)?.0;
                    // Bounded on its own (a quarter of the job's bound): it
                    // runs the read-ahead twice and is kept to the end.
                    let own = spec.max_state.map(|b| Arc::new(StateBudget::new(b / 4, OnLimit::Fail)));
                    let scratch = timing.insert(assemble::runner(&spec, progs, own.as_ref())?);
                    let costs = Costs::measure(file, ahead, scratch);
                    let held: usize = scratch.engine_stats().iter().map(|s| s.state_bytes).sum();
                    if own.is_some_and(|b| b.tripped()) || held > TIMING_KEEPS {
                        // Its state is not worth keeping to the end.
                        timing = None;
                    }
                    match costs {
                        _ if timing.is_none() => (false, "the queries' state is too large to time them".to_owned()),
                        Some(c) => (c.pipeline_is_faster(shard_count), c.to_string()),
                        None => (false, "too few rows read ahead to time".to_owned()),
                    }
                }
            };
            if pipeline {
                shard_count = 1;
            }
            split_note = Some(format!("{} ({why})", if pipeline { "a pipeline" } else { "shards" }));
        }

        if !spec.alerts.is_empty() {
            warn_unwatched(input.schema(), &spec, report);
            read_fields.extend(assemble::alert_fields(&spec, input.schema_mut()));
        }
        if let Source::Events(source, schema) = &mut input.source {
            let keep = (!matches!(spec.late, LatePolicy::Side(_))).then_some(&read_fields[..]);
            source.use_schema(schema, keep);
        }
        if let Source::File(file) = &mut input.source {
            let reader = file.reader_mut();
            reader.set_observe(false);
            // Other fields are only checked, never typed or kept (an unread
            // column of ever new strings would otherwise grow the interner
            // without end); but the late-event file writes whole events.
            if !matches!(spec.late, LatePolicy::Side(_)) {
                reader.keep_fields(&read_fields);
            }
        }
        let field_names: Vec<String> = input.schema().field_names().map(str::to_owned).collect();

        // A resumed job starts from the newest checkpoint taken with the
        // same spec and columns.
        let fingerprint = spec.fingerprint(shard_count, &field_names);
        let mut resumed = None;
        let mut checked = None;
        if let Some(c) = &spec.checkpoint {
            if c.resume {
                let taken_with = |f: u64| (1..=MAX_THREADS).find(|&n| spec.fingerprint(n, &field_names) == f);
                let committed = match (&input.source, c.by_committed_offsets) {
                    (Source::Events(source, _), true) => source.committed_offsets().map_err(|error| {
                        JobError::new(JobErrorKind::Reopen { file: source.file().to_owned(), error })
                    })?,
                    _ => None,
                };
                if c.by_committed_offsets && committed.is_none() {
                    return Err(spec_error(
                        "an output that commits input offsets needs an input that keeps them (a Kafka topic)",
                    ));
                }
                resumed = checkpoints::resume_from(
                    &c.dir,
                    (fingerprint, shard_count),
                    taken_with,
                    committed.as_ref(),
                    report,
                )?;
                if let Some(r) = &resumed {
                    let file = match &input.source {
                        Source::File(f) if !streaming => Some(&**f),
                        _ => None,
                    };
                    checked = checkpoints::check_input(&r.identity, file, &c.dir, report)?;
                }
            } else {
                // A fresh run: an earlier run's checkpoints must not be resumed.
                checkpoint::clear(&c.dir).map_err(|error| {
                    JobError::new(JobErrorKind::Checkpoint {
                        dir: c.dir.clone(),
                        doing: "clear the checkpoints in",
                        error,
                    })
                })?;
            }
        }
        let position = resumed.as_ref().map_or(0, |c: &checkpoint::Checkpoint| c.position);
        let mut skipped = input.read_ahead.skipped;
        // A file resumed past the rows read ahead is reopened where the
        // checkpoint left it: the rows before are neither read nor parsed
        // again.
        if let Some(c) = &resumed
            && let Some(at) = c.input
            && let Source::File(file) = &mut input.source
            && !streaming
            && input.read_ahead.error.is_none()
            && !input.read_ahead.ended
            && at.row > file.rows()
        {
            file.reopen_at(at).map_err(|e| JobError::new(JobErrorKind::Input(e)))?;
            input.read_ahead.events.clear();
            skipped = c.skipped;
        }
        // A partitioned stream (a Kafka topic) reads on from the offsets of
        // its checkpoint, numbering its events on from the checkpoint's row.
        if let Some(c) = &resumed
            && let Some(offsets) = &c.offsets
            && let Source::Events(source, _) = &mut input.source
        {
            let moved = source
                .resume_at(offsets, c.position)
                .map_err(|error| JobError::new(JobErrorKind::Reopen { file: source.file().to_owned(), error }))?;
            if moved {
                skipped = c.skipped;
                let at: Vec<String> = offsets.iter().map(|(p, o)| format!("{p}:{o}")).collect();
                report(&format!("note: {} read on from offsets {} (partition:offset)\n", source.file(), at.join(", ")));
            }
        }
        let summary_resumed = resumed.as_ref().map(|c| Resumed {
            position: c.position,
            output_bytes: c.output_bytes,
            input: c.input,
            skipped: c.skipped,
            output_pending: c.output_pending.clone(),
        });

        let sharing = match (shard_count, pushed && !spec.ordered) {
            (1, _) => Sharing::One,
            (n, false) => Sharing::Ordered(n),
            (n, true) => Sharing::Balanced(n),
        };
        let dir = spec.checkpoint.as_ref().map(|c| c.dir.clone());
        let restore = match (resumed, &dir) {
            (Some(c), Some(dir)) => Some(assemble::Restore { state: c.state, dir }),
            _ => None,
        };
        let driver =
            assemble::driver(&spec, input.schema_mut(), first, sharing, field_names, restore, budget.as_ref())?;

        // Past the rows read ahead (and where a resumed file was reopened).
        let identify = match &input.source {
            Source::File(f) if !streaming => match checked.or_else(|| f.hasher()) {
                Some(hasher) => Identify::File { hasher: Box::new(hasher), floor: f.reader().position().byte },
                None => Identify::Unidentified,
            },
            _ => Identify::Unidentified,
        };
        let checkpoints = match &spec.checkpoint {
            Some(c) => Checkpoints {
                dir: Some(c.dir.clone()),
                every: c.every,
                next_at: position + c.every,
                fingerprint,
                skip_below: position,
                identify,
            },
            None => Checkpoints::off(),
        };
        let late_fails = matches!(spec.late, LatePolicy::Fail);
        let batch = !streaming && !late_fails && (spec.max_delay == 0 || matches!(driver, Driver::Sharded(_)));
        let idle = spec.idle_timeout.filter(|_| streaming).map(|idle| IdleClock { idle, unit: spec.time_unit });
        let opts = Options { skip_bad: spec.skip_bad_rows, streaming, batch, blocks: false, event_blocks: false, idle };
        Ok(Job {
            driver,
            opts,
            checkpoints,
            resumed: summary_resumed,
            parsers,
            split_note,
            _timing: timing,
            stop: Arc::new(AtomicBool::new(false)),
            budget,
            remote: spec.remote.clone(),
            skipped,
            rows: 0,
            output_failed: None,
        })
    }

    /// Reads `input` (the one the job was built with) to its end, or until a
    /// stop, and writes the output lines to `out`; `progress` hears of the
    /// rows read. On an error, the matches of the events before it are
    /// written (what one thread has written when it stops there) and the
    /// output flushed; [`summary`](Self::summary) and
    /// [`rows_read`](Self::rows_read) still count what was done.
    pub fn run<W: LineSink>(
        &mut self,
        input: JobInput<'_>,
        out: W,
        progress: Option<&mut dyn Progress>,
    ) -> Result<RunEnd, JobError> {
        // The lines that reach `out` are counted: after a write error they
        // are what the summary reports (see `output_failed`).
        let tally = Tally::new(out, self.driver.queries());
        let mut sink = JsonLines::new(BufWriter::with_capacity(1 << 16, tally));
        let JobInput { source, read_ahead } = input;
        let mut opts = self.opts;
        let mut file_input;
        let mut parallel = None;
        let mut events;
        let source: &mut dyn EventSource = match source {
            Source::File(file) => {
                file_input = *file;
                // A file is parsed on threads of its own, from where the
                // read-ahead stopped.
                if !opts.streaming && self.parsers > 1 && !read_ahead.ended && read_ahead.error.is_none() {
                    // Sharded, the parser threads split each block by
                    // shard, so that a block goes to the shards without a
                    // copy of its events.
                    let partition = match &self.driver {
                        Driver::Sharded(r) if opts.batch => r.partition(),
                        _ => None,
                    };
                    opts.blocks = partition.is_some();
                    opts.event_blocks = opts.batch && matches!(self.driver, Driver::One(_));
                    // The shards parse blocks whenever they have no events
                    // to run, with parser threads only on the cores they
                    // leave free; one runner parses whenever it waits for a
                    // block, so it is one of the parsers.
                    let threads = match (&partition, &self.driver) {
                        (Some(_), Driver::Sharded(r)) => spec::cores().saturating_sub(r.shards()),
                        _ => self.parsers - 1,
                    };
                    let mut rest = file_input.parallel(threads, partition).map_err(|error| {
                        JobError::new(JobErrorKind::Reopen { file: file_input.path().to_owned(), error })
                    })?;
                    if let Driver::Sharded(r) = &mut self.driver
                        && opts.blocks
                    {
                        r.help_parse(&rest.parse_jobs());
                        rest.set_patience(CALLER_PATIENCE);
                    }
                    parallel.insert(rest) as &mut dyn EventSource
                } else {
                    &mut file_input
                }
            }
            Source::Events(s, _) => {
                events = s;
                &mut *events
            }
            Source::Pushed(_) => return Err(JobError::new(JobErrorKind::Spec("no input to run".into()))),
        };
        let mut looped = Loop {
            driver: &mut self.driver,
            sink: &mut sink,
            opts,
            skipped: &mut self.skipped,
            checkpoints: &mut self.checkpoints,
            progress,
            stop: &self.stop,
            budget: self.budget.as_ref(),
            remote: self.remote.as_ref(),
            consumed: self.resumed.as_ref().map_or(0, |r| r.position),
        };
        let result = looped.run(source, read_ahead);
        // Rows read: up to the one that stopped the run, not those read ahead.
        let rows = source.rows();
        self.rows = match result.as_ref().err().and_then(JobError::row) {
            Some(row) => rows.min(row + 1),
            None => rows,
        };
        if result.is_err() {
            // The first failure is the one to report.
            let _ = self.driver.stop(&mut sink);
        }
        let flushed = sink.flush().map_err(write_failed);
        // Without a last flush: after a write error, lines still buffered
        // are not written (and not counted) by a retry when dropped.
        let (tally, _) = sink.into_unflushed().into_parts();
        self.output_failed = tally.failed();
        let ended = result?;
        flushed?;
        Ok(match ended {
            Ended::Input => RunEnd::Finished,
            Ended::Stopped => RunEnd::Stopped,
        })
    }

    /// A flag that stops [`run`](Self::run) between two events when set
    /// (from another thread, a signal handler's, or the source itself).
    pub fn stop_handle(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Makes `stop` the flag that stops [`run`](Self::run) (for a caller
    /// whose source, built before the job, sets it).
    pub fn set_stop_handle(&mut self, stop: Arc<AtomicBool>) {
        self.stop = stop;
    }

    /// The remote calls' counts, summed over the shards (`None` when the
    /// job has no remote functions).
    pub fn remote_stats(&self) -> Option<cep_core::remote::LinkStats> {
        self.remote.as_ref().map(RemoteSpec::stats)
    }

    /// Where the job resumed, if it did.
    pub fn resumed(&self) -> Option<&Resumed> {
        self.resumed.as_ref()
    }

    /// How the threads share the work, and why (a file on several threads).
    pub fn split_note(&self) -> Option<&str> {
        self.split_note.as_deref()
    }

    /// The counts so far.
    pub fn summary(&self) -> Summary {
        self.driver.summary()
    }

    /// The queries, in order.
    pub fn queries(&self) -> &[QueryInfo] {
        self.driver.queries()
    }

    /// Statistics: the runner's, or the front's then each shard's.
    pub fn stats(&self) -> Vec<(String, RunnerStats)> {
        self.driver.stats()
    }

    /// Partial matches dropped, by every query on every thread: to keep a
    /// key within `max_partials_per_key`, or the state within `max_state`
    /// under [`OnLimit::DropOldest`].
    pub fn dropped(&self) -> u64 {
        let stats = self.driver.stats();
        // With shards, the first line is the front's (it runs no query).
        stats.iter().skip(usize::from(stats.len() > 1)).map(|(_, s)| s.dropped).sum()
    }

    /// Input rows read (good and bad) by the last [`run`](Self::run), up
    /// to the one that stopped it.
    pub fn rows_read(&self) -> u64 {
        self.rows
    }

    /// When writing the output failed in the last [`run`](Self::run): the
    /// error, and the matches and level alerts whose lines were written
    /// whole before it ([`summary`](Self::summary) counts what the engines
    /// found, some of which never reached the output).
    pub fn output_failed(&self) -> Option<&OutputFailed> {
        self.output_failed.as_ref()
    }

    /// Bad rows skipped (with a resumed job's before it).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Threads running the queries.
    pub fn threads(&self) -> usize {
        self.driver.threads()
    }

    /// The watermark: no event at or before it is still to come.
    pub fn watermark(&self) -> Timestamp {
        self.driver.watermark()
    }
}

/// The spec's queries compiled against `schema`, warnings dropped (for a
/// query added while events flow).
pub(crate) fn compiled(spec: &JobSpec, schema: &mut Schema) -> Result<Vec<cep_nfa::program::Program<Event>>, JobError> {
    Ok(assemble::programs(spec, schema, None)?.0)
}

/// How long the calling thread of a sharded run, waiting for the next
/// parsed block, leaves the parsing to the shards (which parse whenever
/// they have no events to run) before it parses a block itself
/// ([`ParallelReader::set_patience`](cep_io::ParallelReader::set_patience)).
const CALLER_PATIENCE: std::time::Duration = std::time::Duration::from_micros(200);

/// Warns when the events' columns are known and lack the `key` field or a
/// field that alerts watch: those alerts can never fire.
fn warn_unwatched(schema: &Schema, spec: &JobSpec, report: &mut dyn FnMut(&str)) {
    if !schema.fields_closed() {
        return;
    }
    let mut names: Vec<&str> = spec.alerts.iter().map(|a| a.field.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in std::iter::once(crate::LEVEL_KEY_FIELD).chain(names) {
        if schema.lookup(name).is_none() {
            report(&format!("warning: the events have no field `{name}`: level alerts that need it never fire\n"));
        }
    }
}

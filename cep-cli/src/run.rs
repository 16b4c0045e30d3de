//! `cep run`: queries over an event stream, matches as JSON lines.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cep_io::parallel::{ParallelReader, PartedBlock};
use cep_io::read::EventSource;
use cep_core::time::{DurationUnit, to_ticks};
use cep_core::Event;
use cep_io::InputPosition;
use cep_index::LevelIndex;
use cep_index::file::read_alerts;
use cep_nfa::select::EngineChoice;
use cep_nfa::stack::Construction;
use cep_runtime::checkpoint::{self, Checkpoint, PipelineSnapshot};
use cep_runtime::shard::{ShardedRunner, shard_of};
use cep_runtime::{JsonLines, LEVEL_KEY_FIELD, MASK_QUERIES, PushError, Runner, RunnerStats, Summary};
use cep_time::LatePolicy;
use clap::Args;

use crate::Failure;
use crate::input::{
    Input, Prefix, SCHEMA_PREFIX, compile_query, is_stream, open_events_counted, read_failure, read_prefix,
    reopen_events, time_unit,
};
use crate::output::Output;
use crate::progress::Progress;
use crate::split::{Costs, Split};
use crate::stream::StreamInput;

/// Options of `cep run` (LANGUAGE.md §6).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Query file.
    #[arg(long, value_name = "FILE")]
    query: Option<PathBuf>,
    /// Level alerts file (`id,key,field,direction,level,band`).
    #[arg(long, value_name = "FILE")]
    levels: Option<PathBuf>,
    /// Events: a CSV or JSON-lines file, or `-` for stdin.
    #[arg(long, value_name = "FILE|-", default_value = "-")]
    events: String,
    /// Write matches here instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Input format (default: from the extension; stdin is sniffed).
    #[arg(long, value_name = "csv|jsonl")]
    format: Option<String>,
    /// Threads (default: the number of cores). `--threads 1` runs
    /// everything on one thread; above 1, a file is parsed on N threads and
    /// the queries run on N shards by key or on one thread of them (see
    /// `--parallel`), and the output is that of
    /// `--threads 1`, byte for byte: each batch's lines are merged in one
    /// thread's order. Under `--construction batch` the same matches come
    /// in an order of their own, so without this flag it runs the queries
    /// on one thread. At most 1024; more than 63 queries run on one thread
    /// (with a warning when asked for more).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// How a file's work is shared among more than one thread: `shards`
    /// runs the queries on N shards by key, each shard also parsing;
    /// `pipeline` runs them on one thread while the others parse; `auto`
    /// times the queries against the parsing on the rows read ahead and
    /// takes the faster (always `shards` with `--checkpoint`, so that a
    /// resumed run splits as the first one did). A stream is read on one
    /// thread and its queries run on shards. The output is the same.
    #[arg(long, value_name = "auto|shards|pipeline", default_value = "auto")]
    parallel: String,
    /// Allowed out-of-orderness of event time.
    #[arg(long, value_name = "DUR", default_value = "0")]
    max_delay: String,
    /// Reading a stream: when no event arrives for this long (wall clock),
    /// advance the watermark with the wall clock (`200ms`, `2s`).
    #[arg(long, value_name = "DUR")]
    idle_timeout: Option<String>,
    /// What to do with late events: drop, fail, or side:FILE.
    #[arg(long, value_name = "POLICY", default_value = "drop")]
    late: String,
    /// What to do with a bad input row: fail or skip.
    #[arg(long, value_name = "fail|skip", default_value = "fail")]
    on_bad_row: String,
    /// Unit of the `ts` column.
    #[arg(long, value_name = "ms|us|ns|s", default_value = "ms")]
    time_unit: String,
    /// Save checkpoints in this directory.
    #[arg(long, value_name = "DIR")]
    checkpoint: Option<PathBuf>,
    /// Events between checkpoints.
    #[arg(long, value_name = "N")]
    checkpoint_every: Option<u64>,
    /// Resume from the newest checkpoint.
    #[arg(long)]
    resume: bool,
    /// Print per-shard statistics on stderr at the end: events, partial
    /// matches, buffer nodes, late and skipped events, matches.
    #[arg(long)]
    stats: bool,
    /// Keep at most N partial matches per key and query; the oldest are
    /// dropped (and counted) beyond it.
    #[arg(long, value_name = "N")]
    max_partials_per_key: Option<usize>,
    /// Engine for the queries: auto (the stack engine where a query
    /// qualifies), run, or stack (an error if a query does not qualify).
    #[arg(long, value_name = "auto|run|stack", default_value = "auto")]
    engine: String,
    /// How the stack engine builds matches: per-event (as each last event
    /// arrives), batch (aggregated links, up to one window later) or direct
    /// (as each last event arrives, enumerated forwards in row order).
    #[arg(long, value_name = "per-event|batch|direct", default_value = "direct")]
    construction: String,
}

/// Parses `--engine` and `--construction`.
pub(crate) fn engine_options(engine: &str, construction: &str) -> Result<(EngineChoice, Construction), Failure> {
    let choice = EngineChoice::parse(engine)
        .ok_or_else(|| Failure::bad_input(format!("unknown --engine `{engine}`: expected auto, run or stack")))?;
    let construction = match construction {
        "per-event" => Construction::PerEvent,
        "batch" => Construction::Batch,
        "direct" => Construction::Direct,
        other => {
            return Err(Failure::bad_input(format!(
                "unknown --construction `{other}`: expected per-event, batch or direct"
            )));
        }
    };
    Ok((choice, construction))
}

/// Runs `cep run`.
pub fn run(args: RunArgs) -> Result<(), Failure> {
    let unit = time_unit(&args.time_unit)?;
    match args.threads {
        Some(0) => return Err(Failure::bad_input("--threads must be at least 1")),
        Some(n) if n > MAX_THREADS => {
            return Err(Failure::bad_input(format!("--threads must be at most {MAX_THREADS}")));
        }
        _ => {}
    }
    // The queries run on `shard_count` threads, a file is parsed on `parsers`.
    let mut shard_count = args.threads.unwrap_or_else(cores);
    let parsers = args.threads.unwrap_or_else(cores);
    let every = match (&args.checkpoint, args.checkpoint_every) {
        (None, Some(_)) => return Err(Failure::bad_input("--checkpoint-every needs --checkpoint DIR")),
        (_, Some(0)) => return Err(Failure::bad_input("--checkpoint-every must be at least 1")),
        (_, n) => n.unwrap_or(DEFAULT_CHECKPOINT_EVERY),
    };
    if args.max_partials_per_key == Some(0) {
        return Err(Failure::bad_input("--max-partials-per-key must be at least 1"));
    }
    if args.resume && args.checkpoint.is_none() {
        return Err(Failure::bad_input("--resume needs --checkpoint DIR (where the checkpoints are)"));
    }
    let delay = parse_delay(&args.max_delay, unit)?;
    let late = LatePolicy::parse(&args.late).ok_or_else(|| {
        Failure::bad_input(format!("unknown --late policy `{}`: expected drop, fail or side:FILE", args.late))
    })?;
    let late_fails = matches!(late, LatePolicy::Fail);
    check_outputs(&args, &late)?;
    let skip_bad = match args.on_bad_row.as_str() {
        "fail" => false,
        "skip" => true,
        other => return Err(Failure::bad_input(format!("unknown --on-bad-row `{other}`: expected fail or skip"))),
    };
    if args.query.is_none() && args.levels.is_none() {
        return Err(Failure::bad_input("run needs --query, --levels or both"));
    }
    let alerts = args.levels.as_deref().map(read_levels).transpose()?;
    let (choice, construction) = engine_options(&args.engine, &args.construction)?;
    let split = Split::parse(&args.parallel)?;
    if args.threads.is_none() && construction == Construction::Batch {
        // Batch construction emits a batch's matches together; only one
        // thread gives its order (see `--threads`).
        shard_count = 1;
    }

    let idle = args.idle_timeout.as_deref().map(parse_wall).transpose()?;
    // A progress line on stderr when reading a file with stderr on a terminal.
    let mut progress = Progress::for_input(&args.events);
    let counter = progress.as_ref().map(|p| p.read.clone());
    let mut input = open_events_counted(&args.events, args.format.as_deref(), counter.clone())?;
    let mut skipped = 0u64;
    // A file is read ahead to learn its schema; a stream is not, so that its
    // first matches are not held back (its fields come from the CSV header).
    let streaming = is_stream(&args.events);
    let limit = if streaming { 0 } else { SCHEMA_PREFIX };
    let start = input.position();
    let mut prefix = read_prefix(&mut input, limit, skip_bad, &mut skipped);
    // A runner, and the fields its queries read (for `keep_fields`).
    let compile = |schema: &mut cep_core::Schema| -> Result<(Runner, Vec<cep_core::FieldId>), Failure> {
        let (programs, fields) = match &args.query {
            Some(query) => {
                let compiled = compile_query(query, schema, unit)?.1;
                (compiled.programs, compiled.fields)
            }
            None => (Vec::new(), Vec::new()),
        };
        let mut runner = Runner::with_engines(programs, choice, construction)
            .map_err(|e| Failure::bad_input(format!("error: {e}")))?;
        if let Some(cap) = args.max_partials_per_key {
            runner.set_max_partials_per_key(cap);
        }
        Ok((runner, fields))
    };
    let (mut first, mut read_fields) = compile(input.schema_mut())?;
    if shard_count > 1 && first.queries().len() > MASK_QUERIES {
        // The sharded runtime routes each event with a mask of its queries.
        if args.threads.is_some() {
            eprintln!(
                "warning: --threads above 1 runs at most {MASK_QUERIES} queries; running these {} on one thread",
                first.queries().len()
            );
        }
        shard_count = 1;
    }
    // A file on more than one thread: shards or a pipeline (`--parallel`).
    // The runner that timed the queries is kept to the end (see
    // `Costs::measure`).
    let (mut timing_runner, mut split_note) = (None, None);
    if shard_count > 1 && parsers > 1 && !streaming && !prefix.ended && prefix.error.is_none() {
        let (pipeline, why) = match split {
            Split::Shards => (false, "--parallel shards".to_owned()),
            Split::Pipeline => (true, "--parallel pipeline".to_owned()),
            Split::Auto if args.checkpoint.is_some() => (false, "--checkpoint".to_owned()),
            Split::Auto => {
                let scratch = timing_runner.insert(compile(&mut input.schema().clone())?.0);
                match Costs::measure(&args.events, &input, start, &prefix, scratch) {
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
    if let Some(alerts) = &alerts {
        warn_unwatched(input.schema(), alerts);
        // Every alert's field and the key field, so that all shards agree.
        let schema = input.schema_mut();
        read_fields.push(schema.field(LEVEL_KEY_FIELD));
        for a in alerts {
            read_fields.push(schema.field(&a.field));
        }
        if shard_count == 1 {
            first.set_levels(level_index(alerts.iter().cloned(), alerts, args.levels.as_deref())?, input.schema_mut());
        }
    }
    input.set_observe(false);
    // Other fields are only checked, never typed or kept (an unread column
    // of ever new strings would otherwise grow the interner without end);
    // but the late-event file writes whole events.
    if !matches!(late, LatePolicy::Side(_)) {
        input.keep_fields(&read_fields);
    }
    let field_names: Vec<String> = input.schema().field_names().map(str::to_owned).collect();

    // A resumed run starts from the newest checkpoint taken with the same
    // queries, alerts and options.
    let texts = read_for_fingerprint(&args)?;
    let fingerprint_with = |shards: usize| fingerprint(&texts, &args, shards, delay, unit, &field_names);
    let fingerprint = fingerprint_with(shard_count);
    let resumed = match (&args.checkpoint, args.resume) {
        (Some(dir), true) => {
            // A checkpoint of the same run on another number of threads:
            // which one, to say so.
            let taken_with = |f: u64| (1..=MAX_THREADS).find(|&n| fingerprint_with(n) == f);
            resume_from(dir, (fingerprint, shard_count), taken_with)?
        }
        (Some(dir), false) => {
            // A fresh run: an earlier run's checkpoints must not be resumed.
            checkpoint::clear(dir)
                .map_err(|e| Failure::other(format!("cannot clear the checkpoints in {}: {e}", dir.display())))?;
            None
        }
        _ => None,
    };
    let (position, output_bytes) = resumed.as_ref().map_or((0, 0), |c| (c.position, c.output_bytes));
    // A file resumed past the rows read ahead is reopened where the
    // checkpoint left it: the rows before are neither read nor parsed again.
    if let Some((at, skipped_before)) = resumed.as_ref().and_then(|c| Some((c.input?, c.skipped)))
        && !streaming
        && prefix.error.is_none()
        && !prefix.ended
        && at.row > input.rows()
    {
        input = reopen_events(&input, &args.events, at, counter.clone())?;
        prefix.events.clear();
        skipped = skipped_before;
    }
    let mut state = resumed.map(|c| c.state);
    let restore_failed = |e: String| {
        Failure::bad_input(format!(
            "error: cannot resume from {}: {e}",
            args.checkpoint.as_deref().unwrap_or(std::path::Path::new("")).display()
        ))
    };
    let late_file = |e: io::Error| Failure::other(format!("cannot open the late-event file: {e}"));

    let mut pipeline = if shard_count == 1 {
        first.set_max_delay(delay);
        first.set_field_names(field_names);
        match state.take() {
            Some(PipelineSnapshot::One(snap)) => {
                first.set_late_policy_at(late, snap.late_bytes()).map_err(late_file)?;
                first.restore(snap).map_err(restore_failed)?;
            }
            Some(PipelineSnapshot::Sharded(_)) => return Err(restore_failed("it was taken with more threads".into())),
            None => first.set_late_policy(late).map_err(late_file)?,
        }
        Pipeline::One(Box::new(first))
    } else {
        // `shard_count` shard threads, the calling thread reading (and, for
        // a stream, parsing) and routing. Not `ShardedRunner::balanced`,
        // whose calling thread also runs some keys: that pays when the
        // caller's own work is light (the library's `Runtime`, W5), but a
        // stream's parsing already keeps it busy: `cat` of the W1 CSV into
        // `--threads 2`, four rounds, 0.47–0.53 s on shards against
        // 0.40–0.73 s balanced.
        let mut shards = vec![first];
        for _ in 1..shard_count {
            shards.push(compile(&mut input.schema().clone())?.0);
        }
        if let Some(alerts) = &alerts {
            let n = shard_count;
            for (i, shard) in shards.iter_mut().enumerate() {
                let mine = alerts.iter().filter(|a| shard_of(&a.key, n) == i).cloned();
                shard.set_levels(level_index(mine, alerts, args.levels.as_deref())?, &mut input.schema().clone());
            }
        }
        let mut front = Runner::new(Vec::new());
        front.set_max_delay(delay);
        front.set_field_names(field_names);
        let mut released = None;
        match state.take() {
            Some(PipelineSnapshot::Sharded(snap)) => {
                if snap.shards.len() != shards.len() {
                    return Err(restore_failed(format!("it was taken with {} threads", snap.shards.len())));
                }
                front.set_late_policy_at(late, snap.front.late_bytes()).map_err(late_file)?;
                front.restore(snap.front).map_err(restore_failed)?;
                for (shard, s) in shards.iter_mut().zip(snap.shards) {
                    shard.restore(s).map_err(restore_failed)?;
                }
                released = Some(snap.released);
            }
            Some(PipelineSnapshot::One(_)) => return Err(restore_failed("it was taken with one thread".into())),
            None => front.set_late_policy(late).map_err(late_file)?,
        }
        let mut sharded = ShardedRunner::try_new(front, shards)
            .and_then(|mut r| r.set_ordered_output().map(|()| r))
            .map_err(|e| Failure::other(format!("cannot start {shard_count} threads: {e}")))?;
        if let Some(ts) = released {
            sharded.resume_released(ts);
        }
        Pipeline::Sharded(Box::new(sharded))
    };
    let out = match &args.out {
        Some(p) if args.resume => Output::resume(p, output_bytes),
        Some(p) => Output::create(p),
        None => Ok(Output::stdout()),
    };
    let out = out.map_err(|e| {
        Failure::other(format!(
            "cannot write {}: {e}",
            args.out.as_deref().unwrap_or(std::path::Path::new("-")).display()
        ))
    })?;
    let mut sink = JsonLines::new(BufWriter::with_capacity(1 << 16, out));
    let mut checkpoints = match &args.checkpoint {
        Some(dir) => {
            Checkpoints { dir: Some(dir.clone()), every, next_at: position + every, fingerprint, skip_below: position }
        }
        None => Checkpoints::off(),
    };

    let batch = !streaming && !late_fails && (delay == 0 || matches!(pipeline, Pipeline::Sharded(_)));
    let idle = idle.filter(|_| streaming).map(|idle| IdleClock { idle, unit });
    let mut opts = Options { skip_bad, streaming, batch, blocks: false, event_blocks: false, idle };
    // A file is parsed on threads of its own, from where the read-ahead
    // stopped. (W1 CSV on two cores: one thread 0.45-0.53 s; one shard and
    // two parsers 0.31-0.40 s; two shards and one parser 0.30-0.34 s, two
    // 0.28-0.36 s.)
    let mut parallel = None;
    if !streaming && parsers > 1 && !prefix.ended && prefix.error.is_none() {
        let at = input.position();
        if let Some(c) = &counter {
            c.store(at.byte, std::sync::atomic::Ordering::Relaxed);
        }
        // Sharded, the parser threads split each block by shard, so
        // that a block goes to the shards without a copy of its
        // events (`drive_rest`).
        let partition = match &pipeline {
            Pipeline::Sharded(r) if opts.batch => r.partition(),
            _ => None,
        };
        let path = Path::new(&args.events);
        opts.blocks = partition.is_some();
        opts.event_blocks = opts.batch && matches!(pipeline, Pipeline::One(_));
        // The shards parse blocks whenever they have no events to
        // run, with parser threads only on the cores they leave
        // free: W1 CSV with --threads 2 on two cores, 1,800 context
        // switches with two parser threads, 850 without.
        let rest = match partition {
            Some(p) => {
                let own = cores().saturating_sub(shard_count);
                ParallelReader::open_partitioned(path, &input, at, own, counter.clone(), p)
            }
            // The calling thread runs the queries and parses
            // whenever it waits for a block, so it is one of the
            // `parsers`: W1 CSV without `--threads` on two cores, ten
            // rounds alternating, medians: two parser threads 0.345 s
            // (370 context switches), one 0.31 s (170); one thread
            // 0.53 s.
            None => ParallelReader::open(path, &input, at, parsers - 1, counter.clone()),
        };
        let mut rest = rest.map_err(|e| Failure::other(format!("cannot read {}: {e}", args.events)))?;
        if let Pipeline::Sharded(r) = &mut pipeline
            && opts.blocks
        {
            r.help_parse(&rest.parse_jobs());
            rest.set_patience(CALLER_PATIENCE);
        }
        parallel = Some(rest);
    }
    let source: &mut dyn MayWait = match &mut parallel {
        Some(rest) => rest,
        None => &mut input,
    };
    let result = drive(&mut pipeline, &mut sink, source, prefix, opts, &mut skipped, &mut checkpoints, &mut progress);
    let rows = source.rows();
    // Rows read: up to the one that stopped the run, not those read ahead.
    let rows = match &result {
        Err(Failure { row: Some(row), .. }) => rows.min(row + 1),
        _ => rows,
    };
    // Matches emitted before a failure stay valid: on shards, those of the
    // events before it are run and written (what one thread stopped there
    // has written), then everything is flushed.
    if result.is_err()
        && let Pipeline::Sharded(r) = &mut pipeline
    {
        // The first failure is the one to report.
        let _ = r.stop(sink.get_mut());
    }
    let flushed = sink.flush();
    print_summary(rows, skipped, &pipeline.summary(), pipeline.queries(), args.levels.is_some());
    if args.stats {
        print_stats(rows, skipped, &pipeline.stats());
        if let Some(note) = split_note {
            eprintln!("stats: threads: {note}");
        }
    }
    result?;
    flushed.map_err(writing_failed)
}

/// How long the calling thread of a sharded run, waiting for the next
/// parsed block, leaves the parsing to the shards (which parse whenever
/// they have no events to run) before it parses a block itself
/// ([`ParallelReader::set_patience`]).
const CALLER_PATIENCE: std::time::Duration = std::time::Duration::from_micros(200);

/// The most threads `--threads` asks for: each runs a copy of every query,
/// and a thread costs its stack, so more than this is a mistake, not a plan.
const MAX_THREADS: usize = 1024;

/// Refuses outputs that are also inputs or each other: `--out` truncates
/// its file before the input is read, so `--out` on the events file would
/// destroy them, and `--out` and `--late side:` on one file would lose one
/// of the two (LANGUAGE.md: never silent loss).
fn check_outputs(args: &RunArgs, late: &LatePolicy) -> Result<(), Failure> {
    let side = match late {
        LatePolicy::Side(f) => Some(Path::new(f.as_str())),
        _ => None,
    };
    let events = (args.events != "-").then(|| Path::new(args.events.as_str()));
    let inputs = [
        ("the events file", events),
        ("the query file", args.query.as_deref()),
        ("the levels file", args.levels.as_deref()),
    ];
    // Each output: how the message names it, as the culprit and as the other.
    let outputs = [("--out ", "the --out file", args.out.as_deref()), ("--late side:", "the late-event file", side)];
    for (i, &(flag, _, out)) in outputs.iter().enumerate() {
        let Some(out) = out.and_then(file_identity) else { continue };
        let later = outputs[i + 1..].iter().map(|&(_, what, path)| (what, path));
        let mut others = inputs.into_iter().chain(later);
        if let Some((what, _)) = others.find(|(_, other)| other.and_then(file_identity).as_ref() == Some(&out)) {
            return Err(Failure::bad_input(format!(
                "{flag}{} is also {what}: one of them would be overwritten",
                out.display()
            )));
        }
    }
    Ok(())
}

/// A path that names the same file as any other path naming it: the
/// canonical path of a regular file, or of its directory joined with its
/// name if it does not exist yet; `None` when not even the directory
/// exists, and for what is not a regular file (`/dev/null` may take both
/// outputs).
fn file_identity(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = path.canonicalize() {
        return p.metadata().ok()?.is_file().then_some(p);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(dir.canonicalize().ok()?.join(path.file_name()?))
}

/// The cores this process may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How `drive` treats the input.
#[derive(Clone, Copy, Debug)]
struct Options {
    /// Skip bad rows instead of failing.
    skip_bad: bool,
    /// The input is a stream: flush matches as soon as they are found.
    streaming: bool,
    /// Events may go to the pipeline a few at a time ([`BATCH`]): a file,
    /// no failing on a late event (whose line the message names), and on one
    /// runner no delay (its batches skip the reorder buffer).
    batch: bool,
    /// The reader splits its blocks by shard: a whole block may go to the
    /// sharded runtime at once (`ShardedRunner::push_block`).
    blocks: bool,
    /// The reader parses blocks on threads, not split, for one runner: a
    /// whole block's events may go to it at once, where they were parsed
    /// (`ParallelReader::take_events`).
    event_blocks: bool,
    /// On a stream, the watermark follows the wall clock while no input
    /// comes (`--idle-timeout`).
    idle: Option<IdleClock>,
}

/// Events handed to the runner at once when [`Options::batch`]: with one
/// query and no level alerts its engine takes them as one batch, which
/// overlaps their cache misses (`Runner::push_batch_for`), and the output is
/// the same as event by event.
const BATCH: usize = 8;

/// Feeds the read-ahead events, then the rest of the input, then finishes.
/// The output of `cep run`.
type Sink = JsonLines<BufWriter<Output>>;

/// [`push_one`], for the read-ahead and a stream: an event a resumed run's
/// checkpoint already covers is skipped; after every `--checkpoint-every`
/// rows a checkpoint is saved, with the input's position after `e` when the
/// caller knows it and the bad rows skipped so far.
#[allow(clippy::too_many_arguments)]
fn push_event(
    runner: &mut Pipeline,
    sink: &mut Sink,
    e: &Event,
    file: &str,
    line: u64,
    at: Option<InputPosition>,
    skipped: u64,
    opts: Options,
    checkpoints: &mut Checkpoints,
) -> Result<(), Failure> {
    if e.row < checkpoints.skip_below {
        return Ok(());
    }
    push_one(runner, sink, e, file, line, opts)?;
    if e.row + 1 >= checkpoints.next_at {
        checkpoints.save(runner, sink, e.row + 1, at, skipped)?;
    }
    Ok(())
}

/// Pushes one event (read from `file` at `line`): a late event under
/// `--late fail` is an error naming its place; matches are flushed at once
/// when the input is a stream.
fn push_one(
    runner: &mut Pipeline,
    sink: &mut Sink,
    e: &Event,
    file: &str,
    line: u64,
    opts: Options,
) -> Result<(), Failure> {
    let before = runner.emitted();
    runner.push(e, sink).map_err(|err| match err {
        PushError::Late { .. } => {
            Failure::bad_input(format!("error: {file}:{line}: row {}: {err}", e.row)).at_row(Some(e.row))
        }
        PushError::Io(io) => writing_failed(io),
    })?;
    if opts.streaming && runner.emitted() != before {
        sink.flush().map_err(writing_failed)?;
    }
    Ok(())
}

/// Default rows between checkpoints.
const DEFAULT_CHECKPOINT_EVERY: u64 = 100_000;

/// When and where checkpoints are saved, and where a resumed run starts.
#[derive(Debug)]
struct Checkpoints {
    dir: Option<PathBuf>,
    every: u64,
    /// The next checkpoint is due after this many input rows.
    next_at: u64,
    fingerprint: u64,
    /// Rows before this were processed before the resumed checkpoint.
    skip_below: u64,
}

impl Checkpoints {
    /// Whether a block of whole events can go to the pipeline at once: no
    /// checkpoint falls due inside it, and no row of it was processed
    /// before the checkpoint resumed.
    fn admits(&self, b: &cep_io::parallel::BlockInfo) -> bool {
        b.first_row >= self.skip_below && b.first_row + b.rows < self.next_at
    }

    fn off() -> Checkpoints {
        Checkpoints { dir: None, every: u64::MAX, next_at: u64::MAX, fingerprint: 0, skip_below: 0 }
    }

    /// Saves the pipeline's state after `position` input rows, once every
    /// match so far is written and synced.
    fn save(
        &mut self,
        runner: &mut Pipeline,
        sink: &mut Sink,
        position: u64,
        input: Option<InputPosition>,
        skipped: u64,
    ) -> Result<(), Failure> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let failed = |e: io::Error| Failure::other(format!("cannot save a checkpoint in {}: {e}", dir.display()));
        let state = runner.snapshot(sink).map_err(failed)?;
        sink.flush().map_err(failed)?;
        let out = sink.get_mut().get_mut();
        out.sync().map_err(failed)?;
        let input = input.filter(|at| at.row == position);
        let output_bytes = out.written();
        let c = Checkpoint { fingerprint: self.fingerprint, position, output_bytes, input, skipped, state };
        checkpoint::save(dir, &c).map_err(failed)?;
        self.next_at = position.saturating_add(self.every);
        Ok(())
    }
}

/// The newest valid checkpoint in `dir` (`None`: start from the beginning;
/// unreadable newer ones are reported), if its fingerprint is
/// `fingerprint`, that of this run on `shards` threads; otherwise an error,
/// which names the number of threads the checkpoint needs when
/// `taken_with` finds one that gives its fingerprint.
fn resume_from(
    dir: &std::path::Path,
    (fingerprint, shards): (u64, usize),
    taken_with: impl Fn(u64) -> Option<usize>,
) -> Result<Option<Checkpoint>, Failure> {
    let (found, warnings) = checkpoint::load_newest(dir)
        .map_err(|e| Failure::other(format!("cannot read the checkpoints in {}: {e}", dir.display())))?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    match found {
        None => {
            eprintln!("note: no checkpoint in {}: starting from the beginning", dir.display());
            Ok(None)
        }
        Some(c) if c.fingerprint != fingerprint => Err(Failure::bad_input(match taken_with(c.fingerprint) {
            Some(n) => format!(
                "error: the checkpoint in {} was taken with the queries on {n} thread{} (this run: {shards}; \
                 without --threads, as many as there are cores); resume with --threads {n}",
                dir.display(),
                if n == 1 { "" } else { "s" },
            ),
            None => format!(
                "error: the checkpoint in {} was taken with other queries, alerts, options or input columns; \
                 run with the same ones, or without --resume",
                dir.display()
            ),
        })),
        Some(c) => {
            eprintln!("note: resuming after row {} from {}", c.position, dir.display());
            Ok(Some(c))
        }
    }
}

/// The query and alert files, for [`fingerprint`].
fn read_for_fingerprint(args: &RunArgs) -> Result<Vec<Vec<u8>>, Failure> {
    [&args.query, &args.levels]
        .into_iter()
        .flatten()
        .map(|path| {
            std::fs::read(path).map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", path.display())))
        })
        .collect()
}

/// Identifies what a checkpoint's state depends on: the query and alert
/// files (`texts`), the number of shards, the options that shape the
/// engines, and the input's columns.
fn fingerprint(
    texts: &[Vec<u8>],
    args: &RunArgs,
    shards: usize,
    delay: i64,
    unit: cep_core::TimeUnit,
    fields: &[String],
) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut put = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    for text in texts {
        put(text);
    }
    // The shards, not the parser threads: parsing leaves no state behind.
    put(&(shards as u64).to_le_bytes());
    put(&delay.to_le_bytes());
    put(&unit.nanos().to_le_bytes());
    put(args.engine.as_bytes());
    put(args.construction.as_bytes());
    put(&(args.max_partials_per_key.unwrap_or(0) as u64).to_le_bytes());
    for f in fields {
        put(f.as_bytes());
    }
    h.digest()
}

/// Wall-clock idleness after which the watermark follows the wall clock.
#[derive(Clone, Copy, Debug)]
struct IdleClock {
    idle: std::time::Duration,
    unit: cep_core::TimeUnit,
}

/// What `drive` reads events from: a file, which never waits, or a stream,
/// which can say when its next event would wait for input.
trait MayWait: EventSource {
    /// Whether the next event would wait for input.
    fn would_wait(&self) -> bool {
        false
    }

    /// Waits up to `timeout` for input; whether some came (or the end).
    fn wait(&mut self, _timeout: std::time::Duration) -> bool {
        true
    }
}

impl MayWait for ParallelReader {}

impl MayWait for Input {
    fn would_wait(&self) -> bool {
        self.get_ref().stream().is_some_and(StreamInput::would_wait)
    }

    fn wait(&mut self, timeout: std::time::Duration) -> bool {
        self.get_mut().stream_mut().is_none_or(|s| s.wait(timeout))
    }
}

/// Before a stream's next event waits for input: every match found so far
/// goes out (the sharded runtime runs the events it holds for a batch and
/// writes their lines) and the output is flushed. With an idle clock, each
/// `idle` without input then moves the watermark by the wall time since the
/// input paused (in timestamp units), so that deadlines fire on a quiet
/// stream, and their matches go out too.
fn wait_for_input(
    runner: &mut Pipeline,
    sink: &mut Sink,
    input: &mut (impl MayWait + ?Sized),
    idle: Option<IdleClock>,
) -> Result<(), Failure> {
    runner.sync(sink).map_err(writing_failed)?;
    sink.flush().map_err(writing_failed)?;
    let Some(clock) = idle else { return Ok(()) };
    let (since, base) = (std::time::Instant::now(), runner.watermark());
    while !input.wait(clock.idle) {
        if base == i64::MIN {
            continue; // no event yet: no event time to advance from
        }
        let ticks = since.elapsed().as_nanos() / clock.unit.nanos() as u128;
        let wm = base.saturating_add(i64::try_from(ticks).unwrap_or(i64::MAX));
        runner.advance_watermark(wm, sink).map_err(writing_failed)?;
        runner.sync(sink).map_err(writing_failed)?;
        sink.flush().map_err(writing_failed)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn drive(
    runner: &mut Pipeline,
    sink: &mut Sink,
    input: &mut (impl MayWait + ?Sized),
    prefix: Prefix,
    opts: Options,
    skipped: &mut u64,
    checkpoints: &mut Checkpoints,
    progress: &mut Option<Progress>,
) -> Result<(), Failure> {
    let file = input.file().to_owned();
    let mut push =
        |runner: &mut Pipeline, sink: &mut Sink, e: &Event, line: u64, at: Option<InputPosition>, skipped: u64| {
            push_event(runner, sink, e, &file, line, at, skipped, opts, checkpoints)
        };
    let (events, error, ended) = (prefix.events, prefix.error, prefix.ended);
    for (i, (e, line)) in events.iter().enumerate() {
        if let Some((at, err)) = &error
            && *at == i
        {
            return Err(read_failure(err.clone()));
        }
        push(runner, sink, e, *line, None, *skipped)?;
    }
    if let Some((_, err)) = error {
        return Err(read_failure(err));
    }
    if !ended {
        drive_rest(runner, sink, input, &file, opts, skipped, checkpoints, progress)?;
    }
    if let Some(p) = progress {
        p.done();
    }
    runner.finish(sink).map_err(writing_failed)
}

/// [`drive`]'s loop over the rest of the input. Events are held and handed
/// to the pipeline [`BATCH`] at a time when [`Options::batch`] (on one
/// runner as one batch; the sharded runtime takes them one by one, but
/// without [`push_one`]'s checks), else one at a time through [`push_one`];
/// the held events are handed over before a checkpoint, an error or the
/// end, so that each sees every event before it processed.
#[allow(clippy::too_many_arguments)]
fn drive_rest(
    runner: &mut Pipeline,
    sink: &mut Sink,
    input: &mut (impl MayWait + ?Sized),
    file: &str,
    opts: Options,
    skipped: &mut u64,
    checkpoints: &mut Checkpoints,
    progress: &mut Option<Progress>,
) -> Result<(), Failure> {
    let capacity = if opts.batch { BATCH } else { 1 };
    let mut batch: Vec<Event> = (0..capacity).map(|_| Event::default()).collect();
    let mut held = 0;
    // Unbatched, the one event held is handed over as soon as it is read, so
    // the input's last line is its line.
    let hand_over = |runner: &mut Pipeline, sink: &mut Sink, events: &[Event], line: u64| match runner {
        _ if !opts.batch => events.iter().try_for_each(|e| push_one(runner, sink, e, file, line, opts)),
        Pipeline::One(r) => r.push_batch_for(events, u64::MAX, sink).map_err(writing_failed),
        Pipeline::Sharded(r) => events.iter().try_for_each(|e| r.push(e, sink.get_mut())).map_err(writing_failed),
    };
    loop {
        // A whole block split by shard, when the reader has one ready that
        // the checkpoints admit: the events held go first.
        if opts.blocks
            && let Some(block) = input.take_block(&mut |b| checkpoints.admits(b))
        {
            hand_over(runner, sink, &batch[..held], input.last_line())?;
            held = 0;
            let (first, rows) = (block.row_base(), block.len() as u64);
            runner.push_block(block, sink).map_err(writing_failed)?;
            if let Some(p) = progress {
                p.rows_read(first, first + rows);
            }
            continue;
        }
        // The same for a whole block of events read on threads without a
        // partition, for one runner: run where the parser thread put them.
        if opts.event_blocks
            && let Some(block) = input.take_events(&mut |b| checkpoints.admits(b))
        {
            hand_over(runner, sink, &batch[..held], input.last_line())?;
            held = 0;
            let events = block.events();
            hand_over(runner, sink, events, input.last_line())?;
            if let Some(p) = progress {
                p.rows_read(events[0].row, events[0].row + events.len() as u64);
            }
            continue;
        }
        if opts.streaming && input.would_wait() {
            wait_for_input(runner, sink, input, opts.idle)?;
        }
        match input.next_event(&mut batch[held]) {
            Ok(true) => {
                let row = batch[held].row;
                if row < checkpoints.skip_below {
                    continue;
                }
                held += 1;
                let due = row + 1 >= checkpoints.next_at;
                if held == capacity || due {
                    hand_over(runner, sink, &batch[..held], input.last_line())?;
                    held = 0;
                }
                if due {
                    checkpoints.save(runner, sink, row + 1, Some(input.position()), *skipped)?;
                }
                if let Some(p) = progress {
                    p.rows_read(row, row + 1);
                }
            }
            Ok(false) => break,
            Err(err) if opts.skip_bad && err.is_bad_row() => {
                eprintln!("warning: skipped: {err}");
                *skipped += 1;
            }
            Err(err) => {
                hand_over(runner, sink, &batch[..held], input.last_line())?;
                return Err(read_failure(err));
            }
        }
    }
    hand_over(runner, sink, &batch[..held], input.last_line())
}

/// The failure of writing the output.
fn writing_failed(e: impl std::fmt::Display) -> Failure {
    Failure::other(format!("writing output: {e}"))
}

/// Parses a wall-clock duration such as `200ms` or `2s`.
fn parse_wall(s: &str) -> Result<std::time::Duration, Failure> {
    let nanos = parse_delay(s, cep_core::TimeUnit::Nanos).map_err(|_| {
        Failure::bad_input(format!("invalid --idle-timeout `{s}`: expected a duration like 200ms or 2s"))
    })?;
    if nanos <= 0 {
        return Err(Failure::bad_input("--idle-timeout must be positive"));
    }
    Ok(std::time::Duration::from_nanos(nanos as u64))
}

fn parse_delay(s: &str, unit: cep_core::TimeUnit) -> Result<i64, Failure> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, word) = (&s[..split], s[split..].trim());
    let du = if word.is_empty() {
        DurationUnit::Ticks
    } else {
        DurationUnit::parse(word)
            .ok_or_else(|| Failure::bad_input(format!("unknown duration unit `{word}` in --max-delay")))?
    };
    to_ticks(num, du, unit).map_err(|e| Failure::bad_input(format!("invalid --max-delay `{s}`: {e}")))
}

fn print_summary(rows: u64, skipped: u64, s: &Summary, queries: &[cep_runtime::QueryInfo], levels: bool) {
    let total: u64 = s.matches.iter().sum();
    let per: Vec<String> = queries.iter().zip(&s.matches).map(|(q, n)| format!("{} {n}", q.name)).collect();
    let per = if per.is_empty() { String::new() } else { format!(" ({})", per.join(", ")) };
    let fires = match (levels, s.fires) {
        (false, _) => String::new(),
        (true, 1) => ", 1 level alert fired".to_owned(),
        (true, n) => format!(", {n} level alerts fired"),
    };
    eprintln!(
        "summary: {rows} rows read, {skipped} skipped, {} late, {total} {}{per}{fires}",
        s.late,
        if total == 1 { "match" } else { "matches" },
    );
}

/// Prints `--stats`: the reader's line, then one line per shard (one
/// line for the runner on one thread).
fn print_stats(rows: u64, skipped: u64, stats: &[(String, RunnerStats)]) {
    let front = &stats[0].1;
    eprintln!(
        "stats: reader: {rows} rows, {skipped} skipped, {} late, {} held for reordering at most",
        front.late, front.peak_held
    );
    for (name, s) in stats.iter().skip(usize::from(stats.len() > 1)) {
        eprintln!(
            "stats: {name}: {} events, {} matches, {} level alerts fired, {} keys, partial matches {} at end of input \
             ({} at most, {} dropped), buffer nodes {} at most",
            s.events, s.matches, s.fires, s.partitions, s.partials_at_end, s.peak_partials, s.dropped, s.peak_nodes
        );
    }
}

/// Reads the alerts of `--levels FILE`; a bad file is bad input (exit 2)
/// with its line.
fn read_levels(path: &std::path::Path) -> Result<Vec<cep_index::Alert>, Failure> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| Failure::bad_input(format!("error: cannot read {name}: {e}")))?;
    read_alerts(io::BufReader::new(file), &name).map_err(|e| Failure::bad_input(format!("error: {e}")))
}

/// An index of `alerts` (read from `file`), watching every field in
/// `fields` (so that all shards feed the same fields).
fn level_index(
    alerts: impl IntoIterator<Item = cep_index::Alert>,
    fields: &[cep_index::Alert],
    file: Option<&std::path::Path>,
) -> Result<LevelIndex, Failure> {
    let mut index = LevelIndex::new();
    for a in fields {
        index.watch(&a.field);
    }
    index.add_all(alerts).map_err(|e| {
        Failure::bad_input(format!("error: {}: {e}", file.map_or("levels".into(), |f| f.display().to_string())))
    })?;
    Ok(index)
}

/// What `drive` feeds: one runner, or the runtime on several threads.
#[derive(Debug)]
enum Pipeline {
    One(Box<Runner>),
    Sharded(Box<ShardedRunner>),
}

impl Pipeline {
    fn push(&mut self, e: &Event, sink: &mut Sink) -> Result<(), PushError> {
        match self {
            Pipeline::One(r) => r.push(e, sink),
            Pipeline::Sharded(r) => r.push(e, sink.get_mut()),
        }
    }

    /// A block of events split by shard: to the shards whole, or (on one
    /// runner) its events one by one.
    fn push_block(&mut self, block: Arc<PartedBlock>, sink: &mut Sink) -> Result<(), PushError> {
        match self {
            Pipeline::One(r) => block.try_for_each_in_order(|e| r.push(e, sink)),
            Pipeline::Sharded(r) => r.push_block(block, sink.get_mut()),
        }
    }

    /// Every match of the events pushed so far to the sink (on shards, see
    /// `ShardedRunner::sync`; one runner holds none).
    fn sync(&mut self, sink: &mut Sink) -> Result<(), PushError> {
        match self {
            Pipeline::One(_) => Ok(()),
            Pipeline::Sharded(r) => r.sync(sink.get_mut()),
        }
    }

    fn advance_watermark(&mut self, wm: cep_core::Timestamp, sink: &mut Sink) -> Result<(), PushError> {
        match self {
            Pipeline::One(r) => r.advance_watermark(wm, sink),
            Pipeline::Sharded(r) => r.advance_watermark(wm, sink.get_mut()),
        }
    }

    fn finish(&mut self, sink: &mut Sink) -> io::Result<()> {
        match self {
            Pipeline::One(r) => r.finish(sink),
            Pipeline::Sharded(r) => r.finish(sink.get_mut()).map(|_| ()),
        }
    }

    /// The whole state, every match so far handed to the sink.
    fn snapshot(&mut self, sink: &mut Sink) -> io::Result<PipelineSnapshot> {
        match self {
            Pipeline::One(r) => Ok(PipelineSnapshot::One(r.snapshot()?)),
            Pipeline::Sharded(r) => Ok(PipelineSnapshot::Sharded(r.checkpoint(sink.get_mut())?)),
        }
    }

    fn watermark(&self) -> cep_core::Timestamp {
        match self {
            Pipeline::One(r) => r.watermark(),
            Pipeline::Sharded(r) => r.watermark(),
        }
    }

    /// Output so far (matches and fires, or bytes from the shards): when it
    /// changes on a stream, the output is flushed.
    fn emitted(&self) -> u64 {
        match self {
            Pipeline::One(r) => r.summary().matches.iter().sum::<u64>() + r.summary().fires,
            Pipeline::Sharded(r) => r.output_bytes(),
        }
    }

    fn summary(&self) -> Summary {
        match self {
            Pipeline::One(r) => r.summary().clone(),
            Pipeline::Sharded(r) => r.summary(),
        }
    }

    /// Statistics: the runner's, or the front's then each shard's.
    fn stats(&self) -> Vec<(String, RunnerStats)> {
        match self {
            Pipeline::One(r) => vec![("runner".into(), r.stats())],
            Pipeline::Sharded(r) => std::iter::once(("front".to_owned(), r.front_stats()))
                .chain(r.shard_stats().into_iter().enumerate().map(|(i, s)| (format!("shard {i}"), s)))
                .collect(),
        }
    }

    fn queries(&self) -> &[cep_runtime::QueryInfo] {
        match self {
            Pipeline::One(r) => r.queries(),
            Pipeline::Sharded(r) => r.queries(),
        }
    }
}

/// Warns when the events' columns are known and lack the `key` field or a
/// field that alerts watch: those alerts can never fire.
fn warn_unwatched(schema: &cep_core::Schema, alerts: &[cep_index::Alert]) {
    if !schema.fields_closed() {
        return;
    }
    let mut names: Vec<&str> = alerts.iter().map(|a| a.field.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in std::iter::once(LEVEL_KEY_FIELD).chain(names) {
        if schema.lookup(name).is_none() {
            eprintln!("warning: the events have no field `{name}`: level alerts that need it never fire");
        }
    }
}

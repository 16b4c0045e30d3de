//! `cep run`: queries over an event stream, matches as JSON lines. The
//! flags become a [`JobSpec`]; the events file is opened and read ahead (to
//! learn its columns); [`Job`] does the rest; the summary is printed here.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use cep_core::budget::{OnLimit, half_of_memory, parse_size};
use cep_core::time::{split_duration, to_ticks};
use cep_index::file::read_alerts;
use cep_io::FileOutput;
use cep_nfa::select::EngineChoice;
use cep_nfa::stack::Construction;
use cep_runtime::job::{
    CheckpointSpec, DEFAULT_CHECKPOINT_EVERY, Job, JobError, JobErrorKind, JobInput, JobSpec, MAX_THREADS, Split,
};
use cep_runtime::{RunnerStats, Summary};
use cep_time::LatePolicy;

use clap::Args;

use crate::Failure;
use crate::input::{SCHEMA_PREFIX, open_events_counted, read_failure, read_query, time_unit};
use crate::kafka;
use crate::progress::Progress;

/// Options of `cep run` (LANGUAGE.md §6).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Query file.
    #[arg(long, value_name = "FILE")]
    query: Option<PathBuf>,
    /// Level alerts file (`id,key,field,direction,level,band`).
    #[arg(long, value_name = "FILE")]
    levels: Option<PathBuf>,
    /// Events: a CSV or JSON-lines file, `-` for stdin, or a Kafka topic
    /// (`kafka://HOST:PORT/TOPIC`: every partition from the start, one
    /// JSON-lines event per message; needs a build with `--features kafka`).
    #[arg(long, value_name = "FILE|-|kafka://HOST:PORT/TOPIC", default_value = "-")]
    events: String,
    /// Write matches here instead of stdout: a file, or a Kafka topic
    /// (`kafka://HOST:PORT/TOPIC`, one message per line keyed by its
    /// partition key).
    #[arg(long, value_name = "FILE|kafka://HOST:PORT/TOPIC")]
    out: Option<PathBuf>,
    /// Reading a Kafka topic: stop at its end as it was when the run
    /// started (replays, tests). Without it the run goes on until SIGINT or
    /// SIGTERM, then writes what it found and exits 0.
    #[arg(long)]
    until_end: bool,
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
    /// Bound on the memory of partial matches, buffered events and per-key
    /// history of all queries (bytes, or with a unit: `512MiB`, `4GiB`).
    /// Default: half of the machine's memory.
    #[arg(long, value_name = "SIZE")]
    max_state: Option<String>,
    /// At the state bound: `fail` stops the run (exit 2) naming the query
    /// and key that hold the most; `drop-oldest` drops the oldest partial
    /// matches of the largest keys, warns once and counts them.
    #[arg(long, value_name = "fail|drop-oldest", default_value = "fail")]
    on_state_limit: String,
    /// Engine for the queries: auto (the stack engine where a query
    /// qualifies), run, or stack (an error if a query does not qualify).
    #[arg(long, value_name = "auto|run|stack", default_value = "auto")]
    engine: String,
    /// How the stack engine builds matches: per-event (as each last event
    /// arrives), batch (aggregated links, up to one window later) or direct
    /// (as each last event arrives, enumerated forwards in row order).
    #[arg(long, value_name = "per-event|batch|direct", default_value = "direct")]
    construction: String,
    /// Where remote function NAME is answered (LANGUAGE.md §8):
    /// `near=http://127.0.0.1:7070/near`. Once per function.
    #[arg(long, value_name = "NAME=URL")]
    remote: Vec<String>,
    /// How runs wait for remote answers: blocking (a run waits for its
    /// answer), lazy (it goes on owing it; the match is settled when final)
    /// or auto (the default: lazy while the service's round trip is above
    /// a few microseconds, per query where lazy gives the same matches).
    #[arg(long, value_name = "blocking|lazy|auto", default_value = "auto")]
    remote_mode: String,
    /// A remote call with no answer after this long is retried (3 times).
    #[arg(long, value_name = "DUR", default_value = "5s")]
    remote_timeout: String,
    /// A remote call that failed after its retries: `fail` stops the run
    /// (exit 2), `drop` drops the runs that needed it, `true` / `false`
    /// take that value and mark the match `"unverified":true`.
    #[arg(long, value_name = "fail|drop|true|false", default_value = "fail")]
    remote_failure: String,
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
    let every = match (&args.checkpoint, args.checkpoint_every) {
        (None, Some(_)) => return Err(Failure::bad_input("--checkpoint-every needs --checkpoint DIR")),
        (_, Some(0)) => return Err(Failure::bad_input("--checkpoint-every must be at least 1")),
        (_, n) => n.unwrap_or(DEFAULT_CHECKPOINT_EVERY),
    };
    if args.max_partials_per_key == Some(0) {
        return Err(Failure::bad_input("--max-partials-per-key must be at least 1"));
    }
    let (max_state, on_state_limit) = state_bound(&args)?;
    if args.resume && args.checkpoint.is_none() {
        return Err(Failure::bad_input("--resume needs --checkpoint DIR (where the checkpoints are)"));
    }
    let delay = parse_delay(&args.max_delay, unit)?;
    let late = LatePolicy::parse(&args.late).ok_or_else(|| {
        Failure::bad_input(format!("unknown --late policy `{}`: expected drop, fail or side:FILE", args.late))
    })?;
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
    let (engine, construction) = engine_options(&args.engine, &args.construction)?;
    let split = parse_split(&args.parallel)?;
    let idle_timeout = args.idle_timeout.as_deref().map(|s| parse_wall(s, "--idle-timeout")).transpose()?;
    let kafka_in = kafka::is_kafka(&args.events);
    let kafka_out = match args.out.as_deref().filter(|p| kafka::is_kafka_out(Some(p))) {
        Some(p) => Some(kafka::url(p.to_str().unwrap_or_default(), "--out")?),
        None => None,
    };
    check_kafka_flags(&args, kafka_in, kafka_out.is_some())?;

    // A progress line on stderr when reading a file with stderr on a terminal.
    let mut progress = if kafka_in { None } else { Progress::for_input(&args.events) };
    let mut stop = None;
    // Exactly once to a topic (LANGUAGE.md §9): the output in transactions
    // committing the input's offsets under a group of this job's own.
    let transactions = match (&kafka_out, &args.checkpoint) {
        (Some(out), Some(dir)) => Some(kafka::Transactions::new(dir, &kafka::url(&args.events, "--events")?, out)),
        _ => None,
    };
    let by_committed_offsets = transactions.is_some();
    let mut input = if kafka_in {
        let url = kafka::url(&args.events, "--events")?;
        stop = Some(kafka::stop_on_signals()?);
        kafka::source(&url, args.until_end, idle_timeout, transactions.as_ref())?
    } else {
        let counter = progress.as_ref().map(|p| p.read.clone());
        let mut input = open_events_counted(&args.events, args.format.as_deref(), counter)?;
        // A file is read ahead to learn its schema; a stream is not, so that
        // its first matches are not held back (its fields come from the CSV
        // header).
        let limit = if input.is_stream() { 0 } else { SCHEMA_PREFIX };
        let ahead = input.read_ahead(limit, skip_bad);
        JobInput::file(input, ahead)
    };
    let queries = args.query.as_deref().map(read_query).transpose()?.into_iter().collect();
    let spec_late = late.clone();
    let remote = remote_spec(&args)?;
    let spec = JobSpec {
        remote,
        queries,
        alerts: alerts.unwrap_or_default(),
        alerts_name: args.levels.as_deref().map_or_else(|| "levels".into(), |p| p.display().to_string()),
        threads: args.threads,
        split,
        ordered: true,
        max_delay: delay,
        late,
        engine,
        construction,
        max_partials_per_key: args.max_partials_per_key,
        max_state: Some(max_state),
        on_state_limit,
        time_unit: unit,
        skip_bad_rows: skip_bad,
        idle_timeout,
        checkpoint: args.checkpoint.clone().map(|dir| CheckpointSpec {
            dir,
            every,
            resume: args.resume,
            by_committed_offsets,
        }),
    };
    let mut job = Job::build(spec, &mut input, &mut |note| eprint!("{note}")).map_err(job_failure)?;
    if let Some(stop) = stop {
        job.set_stop_handle(stop);
    }

    let (output_bytes, pending) = job.resumed().map_or((0, Vec::new()), |r| (r.output_bytes, r.output_pending.clone()));
    let watch = progress.as_mut().map(|p| p as &mut dyn cep_runtime::job::Progress);
    // A Kafka sink's messages are all acknowledged at the end (`synced`):
    // one refused is an error, as a write error is.
    let mut synced = Ok(());
    let result = if let Some(url) = &kafka_out {
        let mut sink = kafka::sink(url, transactions.as_ref())?;
        let result = job.run(input, &mut sink, watch);
        synced = cep_io::LineSink::sync(&mut sink);
        result
    } else {
        let out = match &args.out {
            Some(p) if args.resume => FileOutput::resume(p, output_bytes, &pending),
            Some(p) => FileOutput::create(p),
            None => Ok(FileOutput::stdout()),
        };
        let out = out.map_err(|e| {
            Failure::other(format!("cannot write {}: {e}", args.out.as_deref().unwrap_or(Path::new("-")).display()))
        })?;
        job.run(input, out, watch)
    };
    if let Some(cap) = args.max_partials_per_key
        && job.dropped() > 0
        && on_state_limit == OnLimit::Fail
    {
        eprintln!(
            "warning: --max-partials-per-key {cap} dropped the oldest partial matches of keys that had more; \
             matches that needed them are lost (counted in the summary)"
        );
    }
    // After a write error the summary counts the lines written, and says so.
    let mut summary = job.summary();
    let mut ending = "";
    let failed = job.output_failed();
    if let Some(f) = failed {
        summary.matches.clone_from(&f.matches);
        summary.fires = f.fires;
        ending = if f.error == io::ErrorKind::BrokenPipe { ", output closed" } else { ", output failed" };
    }
    if summary.late > 0 && matches!(spec_late, LatePolicy::Drop) {
        eprintln!(
            "warning: {} late event{} dropped: behind the watermark (the largest ts seen{}); \
             --max-delay allows more disorder, --late side:FILE keeps them",
            summary.late,
            if summary.late == 1 { "" } else { "s" },
            if delay > 0 { " minus --max-delay" } else { "" },
        );
    }
    let counts = Counts { rows: job.rows_read(), skipped: job.skipped(), dropped: job.dropped() };
    let remote = job.remote_stats().map(|s| remote_summary(&s)).unwrap_or_default();
    print_summary(counts, &summary, job.queries(), args.levels.is_some(), &format!("{remote}{ending}"));
    if args.stats {
        print_stats(job.rows_read(), job.skipped(), &job.stats());
        if let Some(note) = job.split_note() {
            eprintln!("stats: threads: {note}");
        }
    }
    if let (Err(e), Ok(_)) = (&synced, &result) {
        return Err(Failure::other(format!(
            "error: cannot write {}: {e}",
            args.out.as_deref().unwrap_or(Path::new("-")).display()
        )));
    }
    match result {
        Ok(_) => Ok(()),
        // A closed pipe ends the run quietly, as filters do (LANGUAGE.md
        // §6): the reader has what it wanted.
        Err(e) if !e.is_bad_input() && failed.is_some_and(|f| f.error == io::ErrorKind::BrokenPipe) => Ok(()),
        Err(e) => {
            let out_name = args.out.as_deref().map_or_else(|| "stdout".to_owned(), |p| p.display().to_string());
            Err(match e.kind() {
                JobErrorKind::Write(w) => Failure::other(format!("cannot write {out_name}: {w}")),
                _ => job_failure(e),
            })
        }
    }
}

/// The flags that do not go with a Kafka topic, or only with one.
fn check_kafka_flags(args: &RunArgs, kafka_in: bool, kafka_out: bool) -> Result<(), Failure> {
    if args.until_end && !kafka_in {
        return Err(Failure::bad_input("--until-end applies to a Kafka topic (--events kafka://HOST:PORT/TOPIC)"));
    }
    if kafka_in && args.format.as_deref().is_some_and(|f| f != "jsonl") {
        return Err(Failure::bad_input("a Kafka topic's messages are JSON lines: --format jsonl, or no --format"));
    }
    if kafka_out && !kafka_in && args.checkpoint.is_some() {
        return Err(Failure::bad_input(
            "--checkpoint with --out kafka:// needs a topic as input (--events kafka://…): the input offsets \
             committed with each checkpoint's output say which checkpoint a resumed run takes",
        ));
    }
    Ok(())
}

/// The default `--max-state` where the machine's memory cannot be read.
const FALLBACK_MAX_STATE: usize = 4 << 30;

/// Parses `--max-state` (default: half the machine's memory) and
/// `--on-state-limit`.
fn state_bound(args: &RunArgs) -> Result<(usize, OnLimit), Failure> {
    let bytes = match &args.max_state {
        None => half_of_memory().unwrap_or(FALLBACK_MAX_STATE),
        Some(s) => match parse_size(s) {
            Some(0) => return Err(Failure::bad_input("--max-state must be more than 0 bytes")),
            Some(n) => n,
            None => {
                return Err(Failure::bad_input(format!(
                    "invalid --max-state `{s}`: expected a size like 512MiB or 4GiB"
                )));
            }
        },
    };
    let policy = OnLimit::parse(&args.on_state_limit).ok_or_else(|| {
        Failure::bad_input(format!("unknown --on-state-limit `{}`: expected fail or drop-oldest", args.on_state_limit))
    })?;
    Ok((bytes, policy))
}

/// Parses `--parallel`.
pub(crate) fn parse_split(s: &str) -> Result<Split, Failure> {
    match s {
        "auto" => Ok(Split::Auto),
        "shards" => Ok(Split::Shards),
        "pipeline" => Ok(Split::Pipeline),
        other => Err(Failure::bad_input(format!("unknown --parallel `{other}`: expected auto, shards or pipeline"))),
    }
}

/// A job's failure as the binary reports it: its message, and exit code 2
/// for bad queries and input, 1 for the rest (LANGUAGE.md §6).
fn job_failure(e: JobError) -> Failure {
    let row = e.row();
    let message = match e.kind() {
        JobErrorKind::Read(r) => return read_failure(r.clone()),
        JobErrorKind::Mismatch { dir, taken_with: Some(n), shards } => format!(
            "error: the checkpoint in {} was taken with the queries on {n} thread{} (this run: {shards}; \
             without --threads, as many as there are cores); resume with --threads {n}",
            dir.display(),
            if *n == 1 { "" } else { "s" },
        ),
        JobErrorKind::Mismatch { dir, taken_with: None, .. } => format!(
            "error: the checkpoint in {} was taken with other queries, alerts, options or input columns; \
             run with the same ones, or without --resume",
            dir.display()
        ),
        // `main_with` says `error:` before a message that does not.
        _ => e.to_string(),
    };
    let failure = if e.is_bad_input() { Failure::bad_input(message) } else { Failure::other(message) };
    failure.at_row(row)
}

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

/// Parses a wall-clock duration such as `200ms` or `2s`, given to `flag`.
fn parse_wall(s: &str, flag: &str) -> Result<std::time::Duration, Failure> {
    let nanos = parse_delay(s, cep_core::TimeUnit::Nanos)
        .map_err(|_| Failure::bad_input(format!("invalid {flag} `{s}`: expected a duration like 200ms or 2s")))?;
    if nanos <= 0 {
        return Err(Failure::bad_input(format!("{flag} must be positive")));
    }
    Ok(std::time::Duration::from_nanos(nanos as u64))
}

fn parse_delay(s: &str, unit: cep_core::TimeUnit) -> Result<i64, Failure> {
    let s = s.trim();
    let (num, du) = split_duration(s).map_err(|_| {
        let word = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.').trim();
        Failure::bad_input(format!("unknown duration unit `{word}` in --max-delay"))
    })?;
    to_ticks(num, du, unit).map_err(|e| Failure::bad_input(format!("invalid --max-delay `{s}`: {e}")))
}

/// `--remote`, `--remote-mode`, `--remote-timeout`, `--remote-failure`:
/// one HTTP resolver per shard (`cep_remote::HttpResolver`), or `None`
/// without `--remote`.
fn remote_spec(args: &RunArgs) -> Result<Option<cep_runtime::job::RemoteSpec>, Failure> {
    use cep_core::remote::{OnFailure, Resolver};
    let on_failure = OnFailure::parse(&args.remote_failure).ok_or_else(|| {
        Failure::bad_input(format!(
            "unknown --remote-failure `{}`: expected fail, drop, true or false",
            args.remote_failure
        ))
    })?;
    let mode = cep_core::remote::RemoteMode::parse(&args.remote_mode).ok_or_else(|| {
        Failure::bad_input(format!("unknown --remote-mode `{}`: expected blocking, lazy or auto", args.remote_mode))
    })?;
    let timeout = parse_wall(&args.remote_timeout, "--remote-timeout")?;
    if args.remote.is_empty() {
        return Ok(None);
    }
    let mut endpoints = Vec::new();
    for r in &args.remote {
        let Some((name, url)) = r.split_once('=').filter(|(n, u)| !n.is_empty() && !u.is_empty()) else {
            return Err(Failure::bad_input(format!("invalid --remote `{r}`: expected NAME=URL")));
        };
        if endpoints.iter().any(|e: &cep_remote::Endpoint| e.name.eq_ignore_ascii_case(name)) {
            return Err(Failure::bad_input(format!("--remote {name} is given twice")));
        }
        endpoints.push(cep_remote::Endpoint::new(name, url));
    }
    let functions = endpoints.iter().map(|e| (e.name.clone(), e.url.clone())).collect();
    // Calls made while runs go on fill batches for up to a millisecond; a
    // shard that waits for an answer (blocking) sends what it has at once.
    let config = cep_remote::RemoteConfig::new(endpoints).with_timeout(timeout);
    // Checked once here, so that a bad URL is a clear error before any
    // shard starts.
    cep_remote::HttpResolver::new(&config).map_err(|e| Failure::bad_input(format!("--remote: {e}")))?;
    let make: cep_runtime::job::MakeResolver = std::sync::Arc::new(move || {
        cep_remote::HttpResolver::new(&config).map(|r| Box::new(r) as Box<dyn Resolver>).map_err(|e| e.to_string())
    });
    Ok(Some(cep_runtime::job::RemoteSpec::new(functions, make, on_failure).with_mode(mode)))
}

/// `, remote: N calls, …` for the summary line.
fn remote_summary(s: &cep_core::remote::LinkStats) -> String {
    let r = &s.resolver;
    let mut out = format!(
        ", remote: {} calls, {} batches, {} cache hits, {} failures",
        r.calls, r.batches, r.cache_hits, r.failures
    );
    if s.dropped > 0 {
        out.push_str(&format!(", {} runs dropped", s.dropped));
    }
    if s.unverified > 0 {
        out.push_str(&format!(", {} unverified", s.unverified));
    }
    if s.settled_true + s.settled_false > 0 {
        out.push_str(&format!(", debts settled {} true, {} false", s.settled_true, s.settled_false));
        if s.dropped_early > 0 {
            out.push_str(&format!(" ({} partial matches dropped early)", s.dropped_early));
        }
    }
    out
}

/// What the summary line counts besides the runner's [`Summary`].
struct Counts {
    rows: u64,
    skipped: u64,
    dropped: u64,
}

/// Prints the summary line; `ending` is appended (`, output closed`).
fn print_summary(c: Counts, s: &Summary, queries: &[cep_runtime::QueryInfo], levels: bool, ending: &str) {
    let Counts { rows, skipped, dropped } = c;
    let total: u64 = s.matches.iter().sum();
    let per: Vec<String> = queries.iter().zip(&s.matches).map(|(q, n)| format!("{} {n}", q.name)).collect();
    let per = if per.is_empty() { String::new() } else { format!(" ({})", per.join(", ")) };
    let fires = match (levels, s.fires) {
        (false, _) => String::new(),
        (true, 1) => ", 1 level alert fired".to_owned(),
        (true, n) => format!(", {n} level alerts fired"),
    };
    let dropped = match dropped {
        0 => String::new(),
        1 => ", 1 partial match dropped".to_owned(),
        n => format!(", {n} partial matches dropped"),
    };
    eprintln!(
        "summary: {rows} rows read, {skipped} skipped, {} late, {total} {}{per}{fires}{dropped}{ending}",
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

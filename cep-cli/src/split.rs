//! How `cep run` shares a file's work among more than one thread
//! (`--parallel`): the queries on N shards by key, each shard also parsing
//! (`shards`), or the queries on one thread while the others parse
//! (`pipeline`). `auto` times both kinds of work on the rows read ahead and
//! takes the one that should finish first.
//!
//! Sharding splits the queries' work too, but costs about a fifth more
//! CPU in all than one thread: each event is copied flat for its shard and
//! rebuilt there, and each shard runs its own runner. The pipeline hands
//! each block of parsed events to the one query thread where they were
//! parsed (`ParallelReader::take_events`, no copy), but that thread then
//! runs every query on every event, so it pays only while the queries cost
//! well under the parsing. On two cores the pipeline is the faster for
//! one copy of W1's `rise_spike` and shards for two or four (see
//! docs/perf-log.md, 2026-12-04, the cost model).

use std::io::{Read, Seek, SeekFrom};
use std::time::{Duration, Instant};

use cep_core::read::InputPosition;
use cep_core::{Event, Match};
use cep_runtime::{QueryInfo, Runner};

use crate::Failure;
use crate::input::{Input, Prefix};

/// `--parallel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    Auto,
    Shards,
    Pipeline,
}

impl Split {
    /// Parses `--parallel`.
    pub fn parse(s: &str) -> Result<Split, Failure> {
        match s {
            "auto" => Ok(Split::Auto),
            "shards" => Ok(Split::Shards),
            "pipeline" => Ok(Split::Pipeline),
            other => {
                Err(Failure::bad_input(format!("unknown --parallel `{other}`: expected auto, shards or pipeline")))
            }
        }
    }
}

/// Fewer rows read ahead than this say too little to time: shards.
const MIN_ROWS: usize = 1000;

/// What each thread's work costs beside the queries' `q` and the
/// parsing's `p` per event (both timed on the rows read ahead). The
/// constants were fitted on 2026-12-04 to `cep run --threads 2` on the W1
/// CSV with 1, 2 and 4 copies of `rise_spike`, so that the two break even
/// where the measured times cross, at queries costing about 0.8 times the
/// parsing (see docs/perf-log.md, 2026-12-04, the cost model):
///
/// - sharded, each of `n` threads costs `(p + q + SHARD_COST * p) / n`: the
///   flat copy of each event for its shard and its rebuild there;
/// - the pipeline's query thread costs `QUERY_THREAD * (q + HANDOFF * p)`:
///   taking each event over and cutting the file into blocks, and queries
///   that read what another core parsed.
///
/// They were fitted before the unsplit blocks shrank to 32 KiB
/// (`cep_core::parallel`), and still pick the faster split for each.
const SHARD_COST: f64 = 0.4;
const HANDOFF: f64 = 0.12;
const QUERY_THREAD: f64 = 1.2;

/// The per-row costs of the rows read ahead, timed a second time each so
/// that neither is a cold start's: parsing them again from `start` (where
/// `input` stood before them) and running them through `scratch` again
/// after a first pass, shifted in event time to follow themselves.
#[derive(Clone, Copy, Debug)]
pub struct Costs {
    pub parse: Duration,
    pub queries: Duration,
}

impl Costs {
    /// Times the rows of `prefix`, read by `input` from `start` in the file
    /// at `path`; `None` when there are too few, or the file cannot be read
    /// again.
    ///
    /// The caller keeps `scratch` until the run ends: dropped before the
    /// shards' runners were built, its memory went to them and made them
    /// slower (see docs/perf-log.md, 2026-12-04, the cost model).
    ///
    /// `scratch` runs the queries only: level alerts (`--levels`) are not
    /// timed, since building a second index of them can take longer than
    /// the timing is worth (1,000,000 alerts: about half a second). They
    /// cost a tick about one cache line when it crosses no edge, so a run
    /// with many alerts may count as lighter than it is.
    pub fn measure(
        path: &str,
        input: &Input,
        start: InputPosition,
        prefix: &Prefix,
        scratch: &mut Runner,
    ) -> Option<Costs> {
        let rows = prefix.events.len();
        if rows < MIN_ROWS {
            return None;
        }
        let parse = parse_again(path, input, start)? / rows as u32;
        let queries = run_twice(&prefix.events, scratch) / rows as u32;
        Some(Costs { parse, queries })
    }

    /// Whether the pipeline's query thread would take less time per event
    /// than `threads` shards (see `SHARD_COST`). On two threads: queries
    /// that cost under about 0.8 times the parsing; on four, 0.2 times.
    pub fn pipeline_is_faster(&self, threads: usize) -> bool {
        let (p, q) = (self.parse.as_secs_f64(), self.queries.as_secs_f64());
        QUERY_THREAD * (q + HANDOFF * p) <= (p + q + SHARD_COST * p) / threads as f64
    }
}

impl std::fmt::Display for Costs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (parse, queries) = (self.parse.as_nanos(), self.queries.as_nanos());
        write!(f, "timed on the rows read ahead: parsing {parse} ns a row, the queries {queries} ns an event")
    }
}

/// How long parsing the bytes of `input` from `start` to where it stands
/// now takes a reader reopened there, by a second read of the file.
fn parse_again(path: &str, input: &Input, start: InputPosition) -> Option<Duration> {
    let end = input.position().byte;
    let mut bytes = vec![0; usize::try_from(end.checked_sub(start.byte)?).ok()?];
    let mut f = std::fs::File::open(path).ok()?;
    f.seek(SeekFrom::Start(start.byte)).ok()?;
    f.read_exact(&mut bytes).ok()?;
    let mut again = input.reopen(&bytes[..], start);
    let mut e = Event::default();
    let t = Instant::now();
    loop {
        match again.next_event(&mut e) {
            Ok(true) => {}
            Ok(false) => break,
            Err(err) if err.is_bad_row() => {}
            Err(_) => return None,
        }
    }
    Some(t.elapsed())
}

/// How long `scratch` takes to run `events` a second time, after a first
/// pass (new keys and partial matches are a run's start, not its rule),
/// shifted in event time to follow the first.
fn run_twice(events: &[(Event, u64)], scratch: &mut Runner) -> Duration {
    let (lo, hi) = events.iter().fold((i64::MAX, i64::MIN), |(lo, hi), (e, _)| (lo.min(e.ts), hi.max(e.ts)));
    let shift = hi.saturating_sub(lo).saturating_add(1);
    let mut sink = |_: &QueryInfo, _: &Match| {};
    for (e, _) in events {
        // Errors (a late event, say) cost what they cost; the run reports them.
        let _ = scratch.push(e, &mut sink);
    }
    let mut shifted = Event::default();
    let t = Instant::now();
    for (e, _) in events {
        shifted.clone_from(e);
        shifted.ts = e.ts.saturating_add(shift);
        let _ = scratch.push(&shifted, &mut sink);
    }
    t.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(parse_ns: u64, queries_ns: u64) -> Costs {
        Costs { parse: Duration::from_nanos(parse_ns), queries: Duration::from_nanos(queries_ns) }
    }

    #[test]
    fn light_queries_take_the_pipeline_heavy_ones_the_shards() {
        // W1 as timed here: parsing 44 ns a row, the queries 24 ns (the
        // pipeline ran 11 % faster than two shards).
        assert!(costs(44, 24).pipeline_is_faster(2));
        // Two copies of its query: 50 and 47 ns (the pipeline 13 % slower).
        assert!(!costs(50, 47).pipeline_is_faster(2));
        assert!(!costs(52, 90).pipeline_is_faster(2));
        // More threads need lighter queries still.
        assert!(!costs(44, 24).pipeline_is_faster(4));
        assert!(costs(100, 5).pipeline_is_faster(4));
    }

    #[test]
    fn parallel_parses_its_three_words() {
        assert_eq!(Split::parse("auto").unwrap(), Split::Auto);
        assert_eq!(Split::parse("shards").unwrap(), Split::Shards);
        assert_eq!(Split::parse("pipeline").unwrap(), Split::Pipeline);
        assert!(Split::parse("both").is_err());
    }
}

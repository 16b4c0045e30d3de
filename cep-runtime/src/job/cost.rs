//! How a job shares a file's work among more than one thread
//! ([`Split`](super::Split)): the queries on N shards by key, each shard
//! also parsing, or the queries on one thread while the others parse (the
//! pipeline). `Auto` times both kinds of work on the rows read ahead and
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

use std::time::{Duration, Instant};

use cep_core::{Event, Match};
use cep_io::{FileInput, ReadAhead};

use crate::{QueryInfo, Runner};

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
/// (`cep_io::parallel`), and still pick the faster split for each.
const SHARD_COST: f64 = 0.4;
const HANDOFF: f64 = 0.12;
const QUERY_THREAD: f64 = 1.2;

/// The per-row costs of the rows read ahead, timed a second time each so
/// that neither is a cold start's: parsing them again from `start` (where
/// `input` stood before them) and running them through `scratch` again
/// after a first pass, shifted in event time to follow themselves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Costs {
    pub parse: Duration,
    pub queries: Duration,
}

impl Costs {
    /// Times the rows `ahead` that `input` read; `None` when there are too
    /// few, or the file cannot be read again.
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
    pub(crate) fn measure(input: &FileInput, ahead: &ReadAhead, scratch: &mut Runner) -> Option<Costs> {
        let rows = ahead.events.len();
        if rows < MIN_ROWS {
            return None;
        }
        let parse = input.parse_time(ahead.start)? / rows as u32;
        let queries = run_twice(&ahead.events, scratch) / rows as u32;
        Some(Costs { parse, queries })
    }

    /// Whether the pipeline's query thread would take less time per event
    /// than `threads` shards (see `SHARD_COST`). On two threads: queries
    /// that cost under about 0.8 times the parsing; on four, 0.2 times.
    pub(crate) fn pipeline_is_faster(&self, threads: usize) -> bool {
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
}

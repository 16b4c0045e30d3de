//! W7, the maritime workload (DESIGN.md §3, §2.4): the encounter query over
//! AIS positions with `near` answered by a simulated remote service, and
//! Wayeb's scalability run.
//!
//! The positions come from `cargo xtask ais`'s generator, which lives in
//! the `xtask` binary; this module takes its rows as [`AisRow`]s so that
//! the measuring code sits beside the other workloads' and is tested with
//! them.
//!
//! A grid [`Cell`] fixes the communication delay of a batch, the
//! evaluation delay of a call and the true ratio of `near`; [`run_cell`]
//! runs the query once through the `Runtime` (one thread, as the paper's
//! engine) with a [`DelayResolver`] configured as `cep run` configures its
//! HTTP client: batches of up to 64 calls, at most 1,024 calls in flight,
//! no linger when blocking (a run waits for the one call it made, so a
//! lingering batch would only add to every wait) and 1 ms when lazy. The
//! simulated service evaluates a batch's calls one after another (as
//! `cep-geo serve --eval-delay` does) and serves batches concurrently.
//! `near`'s answer is [`cep_geo::ratio_answer`]: true for a stable
//! pseudo-random fraction of the argument tuples, so the true ratio is
//! the cell's whatever the positions.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use cep_core::remote::RemoteMode;
use cep_core::remote::{OnFailure, Resolver};
use cep_core::{Event, Schema, Sym, Value};
use cep_remote::{DelayConfig, DelayResolver};
use cep_runtime::job::RemoteSpec;
use cep_runtime::{Output, Runtime};

/// The encounter query of `cargo xtask ais` (LANGUAGE.md §8): per vessel,
/// three strictly contiguous reports above 5 knots, the middle one near
/// another vessel.
pub const ENCOUNTER: &str = "REMOTE near(mmsi int, lat float, lon float, ts int);\n\
QUERY encounter PATTERN SEQ(AIS x, AIS y, AIS z) WHERE strict-contiguity AND [mmsi] AND x.speed > 5 \
AND y.speed > 5 AND z.speed > 5 AND near(y.mmsi, y.lat, y.lon, y.ts)\n";

/// One AIS message, as `cargo xtask ais` generates it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AisRow {
    /// Milliseconds from the start.
    pub ts: i64,
    pub mmsi: i64,
    pub lat: f64,
    pub lon: f64,
    /// Knots.
    pub speed: f64,
}

/// The fields of an `AIS` event, in this order.
pub fn schema() -> Schema {
    let mut s = Schema::new();
    for name in ["mmsi", "lat", "lon", "speed"] {
        s.field(name);
    }
    s
}

/// `rows` as `AIS` events of [`schema`], numbered from 0.
pub fn events(rows: &[AisRow]) -> Vec<Event> {
    let ty = Sym::new("AIS");
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let fields = vec![Value::Int(r.mmsi), Value::Float(r.lat), Value::Float(r.lon), Value::Float(r.speed)];
            Event::new(ty, r.ts, i as u64, fields)
        })
        .collect()
}

/// The rows of the first vessels (by MMSI) that hold at least `n` rows
/// together, in the stream's order. Why not the first `n` rows: they are
/// the first minute's reports of `n` vessels, with no sequence in them;
/// whole tracks keep the query's per-vessel shape at every size.
pub fn first_tracks(rows: &[AisRow], n: usize) -> Vec<AisRow> {
    let mut per: std::collections::BTreeMap<i64, usize> = std::collections::BTreeMap::new();
    for r in rows {
        *per.entry(r.mmsi).or_default() += 1;
    }
    let mut total = 0;
    let mut last = i64::MIN;
    for (&mmsi, &count) in &per {
        if total >= n {
            break;
        }
        total += count;
        last = mmsi;
    }
    rows.iter().filter(|r| r.mmsi <= last).copied().collect()
}

/// A point of the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// Communication delay of one batch (request and reply).
    pub comm: Duration,
    /// Evaluation delay of one call.
    pub eval: Duration,
    /// The fraction of calls answered true.
    pub ratio: f64,
}

/// One run of the query in one mode over one cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellRun {
    /// Events pushed.
    pub events: u64,
    /// Matches emitted.
    pub matches: u64,
    /// A hash of the sorted output lines: equal across modes, or a mode
    /// is wrong.
    pub digest: u64,
    /// Wall-clock seconds from the first push to the end of `finish`
    /// (lazy: every parked match settled).
    pub seconds: f64,
    /// The calling thread's CPU seconds over the same span, where the
    /// system tells it (Linux: `/proc/thread-self/schedstat`). The run
    /// is on that thread alone (one thread, the resolver answering there),
    /// so where it never waits (no delay) this is its work, whatever else
    /// the host runs.
    pub cpu_seconds: Option<f64>,
    /// Calls the service evaluated.
    pub calls: u64,
    /// Of those, the calls it answered true (their share is the cell's
    /// true ratio, up to the sample).
    pub trues: u64,
}

/// What the simulated service counts: calls evaluated, and answered true.
type Counts = Arc<[AtomicU64; 2]>;

/// The resolver of a cell in `mode` (see the module doc).
fn resolver(cell: Cell, mode: RemoteMode, counts: Counts) -> Box<dyn Resolver> {
    // Blocking sends each call as it is made (the shard waits); lazy and
    // auto (which may be lazy) let calls fill batches for a millisecond.
    let linger = if mode == RemoteMode::Blocking { Duration::ZERO } else { Duration::from_millis(1) };
    let config = DelayConfig::default()
        .with_comm(cell.comm, Duration::ZERO)
        .with_eval(cell.eval, Duration::ZERO)
        .with_batching(64, linger)
        .with_max_in_flight(1024);
    let p = cell.ratio;
    Box::new(DelayResolver::new(config, move |_func: u16, a: &[Value]| {
        let answer = match (a[0], a[1], a[2], a[3]) {
            (Value::Int(m), Value::Float(lat), Value::Float(lon), Value::Int(ts)) => {
                cep_geo::ratio_answer(p, m, lat, lon, ts)
            }
            _ => false,
        };
        counts[0].fetch_add(1, Ordering::Relaxed);
        counts[1].fetch_add(u64::from(answer), Ordering::Relaxed);
        answer
    }))
}

/// Runs the encounter query over `events` on one thread, `near` answered
/// as in [`resolver`]; the output lines are kept and hashed (the digest).
fn run(events: &[Event], cell: Cell, mode: RemoteMode) -> CellRun {
    let counts: Counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = lines.clone();
    let counted = counts.clone();
    let make = Arc::new(move || Ok(resolver(cell, mode, counted.clone())));
    let functions = vec![("near".to_owned(), "in-process".to_owned())];
    let output = Output::Lines(Box::new(move |l: &str| seen.lock().expect("not poisoned").push(l.to_owned())));
    let mut rt = Runtime::builder()
        .query(ENCOUNTER)
        .schema(schema())
        .threads(1)
        .remote(RemoteSpec::new(functions, make, OnFailure::Fail).with_mode(mode))
        .build(output)
        .expect("the W7 query builds");
    let cpu = thread_cpu_ns();
    let t = Instant::now();
    for e in events {
        rt.push(e).expect("an event in order");
    }
    rt.finish().expect("the run ends");
    let seconds = t.elapsed().as_secs_f64();
    let cpu_seconds = cpu.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a) as f64 / 1e9);
    let mut lines = std::mem::take(&mut *lines.lock().expect("not poisoned"));
    lines.sort_unstable();
    let mut h = DefaultHasher::new();
    lines.hash(&mut h);
    CellRun {
        events: events.len() as u64,
        matches: lines.len() as u64,
        digest: h.finish(),
        seconds,
        cpu_seconds,
        calls: counts[0].load(Ordering::Relaxed),
        trues: counts[1].load(Ordering::Relaxed),
    }
}

/// Nanoseconds the calling thread has run on a CPU (the first field of
/// `/proc/thread-self/schedstat`), where the system tells it.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The encounter query over `events` with `near` answered as `cell` says,
/// runs waiting for answers as `mode` says.
pub fn run_cell(events: &[Event], cell: Cell, mode: RemoteMode) -> CellRun {
    run(events, cell, mode)
}

/// Wayeb's speed-violation pattern, `n` copies with thresholds 5.0, 5.1,
/// … knots (different, so that no two queries are the same one).
pub fn speed_violations(n: usize) -> String {
    (0..n)
        .map(|i| {
            let t = 5.0 + 0.1 * i as f64;
            format!(
                "QUERY sv{i} PATTERN SEQ(AIS a, AIS b) WHERE strict-contiguity AND [mmsi] \
                 AND a.speed > {t:.1} AND b.speed > {t:.1};\n"
            )
        })
        .collect()
}

/// The `n` speed-violation patterns over `events` (no remote function) on
/// one [`Runner`](cep_runtime::Runner), their matches counted by a typed
/// sink, not kept (digest 0); with `shared`, the patterns share engines as
/// `cep run` has them do ([`Runner::with_shared_engines`](cep_runtime::Runner::with_shared_engines)),
/// otherwise each runs its own. Why a runner, not the `Runtime` the grid
/// uses: Wayeb's figure is recognition time, and 100 patterns make 17 M
/// matches, whose records (a few allocations each) or JSON lines would be
/// most of the time measured; a sink sees each match by reference.
pub fn run_patterns(events: &[Event], n: usize, shared: bool) -> CellRun {
    let mut schema = schema();
    let programs = cep_nfa::compile::compile(&speed_violations(n), &mut schema, &Default::default())
        .expect("the speed-violation queries compile")
        .programs;
    let (choice, direct) = (cep_nfa::select::EngineChoice::Auto, cep_nfa::stack::Construction::Direct);
    let mut runner = match shared {
        true => cep_runtime::Runner::with_shared_engines(programs, choice, direct),
        false => cep_runtime::Runner::with_engines(programs, choice, direct),
    }
    .expect("the engines run them");
    let mut matches = 0u64;
    let mut count = |_: &cep_runtime::QueryInfo, _: &cep_core::Match| matches += 1;
    let cpu = thread_cpu_ns();
    let t = Instant::now();
    for e in events {
        runner.push(e, &mut count).expect("an event in order");
    }
    runner.finish(&mut count).expect("the run ends");
    let seconds = t.elapsed().as_secs_f64();
    let cpu_seconds = cpu.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a) as f64 / 1e9);
    CellRun { events: events.len() as u64, matches, digest: 0, seconds, cpu_seconds, calls: 0, trues: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(vessels: i64, minutes: i64) -> Vec<AisRow> {
        let mut out = Vec::new();
        for m in 0..minutes {
            for v in 0..vessels {
                let speed = if (v + m) % 5 == 0 { 3.0 } else { 8.0 + v as f64 * 0.3 };
                out.push(AisRow { ts: m * 60_000 + v, mmsi: 1000 + v, lat: 48.0, lon: -4.5 + v as f64 * 0.01, speed });
            }
        }
        out
    }

    #[test]
    fn blocking_and_lazy_agree_and_the_ratio_is_the_cells() {
        let ev = events(&rows(8, 30));
        let cell = Cell { comm: Duration::from_micros(50), eval: Duration::from_micros(10), ratio: 0.5 };
        let b = run_cell(&ev, cell, RemoteMode::Blocking);
        let l = run_cell(&ev, cell, RemoteMode::Lazy);
        assert_eq!((b.matches, b.digest), (l.matches, l.digest));
        assert!(b.matches > 0 && b.calls > b.matches, "{b:?}");
        let share = b.trues as f64 / b.calls as f64;
        assert!((0.4..0.6).contains(&share), "the service answers true for about half the calls: {b:?}");
        assert_eq!((l.calls, l.trues), (b.calls, b.trues), "the same calls, the same answers");
        let none = run_cell(&ev, Cell { ratio: 0.0, ..cell }, RemoteMode::Lazy);
        assert_eq!((none.matches, none.trues), (0, 0));
        assert!(none.calls > 0);
    }

    #[test]
    fn first_tracks_keep_whole_vessels() {
        let all = rows(8, 30);
        let some = first_tracks(&all, 45);
        assert_eq!(some.len(), 60, "two whole tracks of 30");
        assert!(some.iter().all(|r| r.mmsi < 1002));
    }

    #[test]
    fn patterns_are_distinct_and_grow() {
        assert_eq!(speed_violations(3).lines().count(), 3);
        let ev = events(&rows(8, 30));
        let (one, ten) = (run_patterns(&ev, 1, true), run_patterns(&ev, 10, true));
        assert!(one.matches > 0 && ten.matches > one.matches, "{one:?} {ten:?}");
        assert_eq!(run_patterns(&ev, 10, false).matches, ten.matches, "shared or not, the same matches");
    }
}

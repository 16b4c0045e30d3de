//! The catalogue: every workload of DESIGN.md §3 with its sizes, baseline,
//! target and contenders ([`workloads`]). Apart from the contenders so
//! that what is measured reads as one list.

use cep_nfa::stack::Construction;

use super::contenders::cli::{CEILING, cli_contender, parse_contender, split_contender, w5};
use super::contenders::engine::{cep_builder, cep_text, stack_count, stack_visit, tick_baseline};
use super::contenders::latency::{W5_LATENCY_RATE, latency_contender};
use super::contenders::levels::{Indexed, level_contender};
use super::contenders::runtime::{cep_runner, runtime_contender, runtime_split_contender};
use super::contenders::timers::timer_contender;
use super::streams::{Stream, Streams};
use crate::baseline::levels::TwoBTreeMaps;
use crate::baseline::naive::Naive;
use crate::baseline::rise_spike::HandWritten;
use crate::baseline::timers::{LazyHeap, Tree, Wheel};
use crate::suite::{Baseline, Check, Scale, Series, Size, Target, Workload};
use crate::w1::{self};
use crate::w2::{self, Kind};
use crate::{levels, w3, w4};

pub(crate) const W1A_SIZE: Size = Size { full: w1::TICKS, quick: 300_000 };
pub(crate) const NAIVE_SIZE: Size = Size { full: 300_000, quick: 300_000 };
pub(crate) const W1B_SIZE: Size = Size { full: w1::TICKS, quick: 300_000 };
/// Alerts per key of W1b: DESIGN.md's 100, or 10 in `--quick`.
pub(crate) const W1B_PER_KEY: Size = Size { full: levels::PER_KEY, quick: 10 };
pub(crate) const W2_ABD_SIZE: Size = Size { full: 2_000, quick: 400 };
/// Counting mode runs on the paper's full stream.
pub(crate) const W2_COUNT_SIZE: Size = Size { full: w2::EVENTS, quick: 2_000 };
pub(crate) const W2_ABDC_SIZE: Size = Size { full: 300, quick: 150 };
pub(crate) const W3_SIZE: Size = Size { full: w3::EVENTS, quick: 100_000 };
pub(crate) const W4_SIZE: Size = Size { full: w4::EVENTS, quick: 100_000 };
pub(crate) const W1A_OOO_SIZE: Size = Size { full: w1::TICKS, quick: 300_000 };
/// W5's paced latency rows: 1 s at 1 M events/s (0.2 s in `--quick`).
pub(crate) const W5_LATENCY_SIZE: Size = Size { full: 1_000_000, quick: 200_000 };
/// Live timers of the W6 rows.
pub(crate) const W6_TIMERS: [Size; 3] =
    [Size { full: 4_096, quick: 4_096 }, Size { full: 65_536, quick: 65_536 }, Size { full: 1 << 20, quick: 1 << 18 }];
/// SASE 1.0 on W4 (DESIGN.md §3).
pub(crate) const SASE_EVENTS_PER_SEC: f64 = 150_000.0;

/// `3,000,000`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// All workloads, in table order, at `scale`.
pub fn workloads(scale: Scale) -> Vec<Workload> {
    let s = Streams::new();
    let mut out = Vec::new();

    // W1a: the compiled query against the hand-written engine.
    let n = W1A_SIZE.at(scale);
    out.push(Workload {
        name: "W1a".into(),
        description: format!(
            "rise_spike (LANGUAGE.md §7) over the first {} W1 ticks: the query compiled from text (Event rows), \
             the same pattern built with closures, and the hand-written engine (Tick structs)",
            thousands(n)
        ),
        size: W1A_SIZE,
        events: n,
        baseline: Baseline::Contender("hand-written"),
        target: Target { text: "≥ 0.5× hand-written (aim 0.8×)".into(), check: Check::RatioAtLeast(0.5) },
        expect: (n == w1::TICKS).then_some(450),
        series: None,
        contenders: vec![
            cep_text("cep", w1::RISE_SPIKE.into(), w1::schema, s.w1.clone()),
            cep_builder(s.ticks.clone()),
            tick_baseline("hand-written", || HandWritten::with_keys(w1::KEYS), s.ticks.clone()),
        ],
    });

    // The naive tier, on a prefix.
    let n = NAIVE_SIZE.at(scale);
    out.push(Workload {
        name: "W1a-naive".into(),
        description: format!(
            "rise_spike over the first {} W1 ticks: the naive tier (re-runs the pattern over each key's stored \
             window on every tick) against the compiled query, to show the gap (a key's 70 s window holds about \
             3.5 W1 ticks, so brute force stays cheap here)",
            thousands(n)
        ),
        size: NAIVE_SIZE,
        events: n,
        baseline: Baseline::Contender("naive"),
        target: Target { text: "— (shows the gap)".into(), check: Check::None },
        expect: None,
        series: None,
        contenders: vec![
            cep_text("cep", w1::RISE_SPIKE.into(), w1::schema, s.w1.clone()),
            tick_baseline("naive", Naive::new, s.ticks.clone()),
        ],
    });

    // W1a out of order: the runner with --max-delay 500, in order and displaced.
    let n = W1A_OOO_SIZE.at(scale);
    out.push(Workload {
        name: "W1a-ooo".into(),
        description: format!(
            "rise_spike through the runner with --max-delay 500 (reorder buffer) over the first {} W1 ticks, \
             as generated and with 5 % of them held back up to 499 ms; no parsing",
            thousands(n)
        ),
        size: W1A_OOO_SIZE,
        events: n,
        baseline: Baseline::Contender("in order"),
        target: Target { text: "— (report the ratio)".into(), check: Check::None },
        expect: (n == w1::TICKS).then_some(450),
        series: None,
        contenders: vec![
            cep_runner("in order", false, s.ticks.clone()),
            cep_runner("5 % displaced", true, s.ticks.clone()),
        ],
    });

    // W5: the runtime on one and two threads, then the binary.
    let n = W1A_OOO_SIZE.at(scale);
    out.push(w5(
        "W5",
        format!(
            "rise_spike through the runtime over the first {} W1 ticks (no parsing): the runner on one thread \
             against the runtime on 2 threads (`ShardedRunner::balanced`: the calling thread runs a share of the keys, a worker the rest); matches = output lines. \
             `{CEILING}` is what two cores give here at best: the ticks split by key in two, each \
             half run by its own runner on its own thread at the same time",
            thousands(n)
        ),
        n,
        Target { text: "— (the 1.7× target is `cep run`'s: W5-cli)".into(), check: Check::None },
        vec![
            runtime_contender("1 thread", 1, s.ticks.clone()),
            runtime_contender("2 threads", 2, s.ticks.clone()),
            runtime_split_contender(CEILING, s.ticks.clone()),
        ],
    ));
    out.push(w5(
        "W5-cli",
        format!(
            "rise_spike through `cep run --threads 1|2` and `cep run` (the default: a thread per core, so \
             `--threads 2` here; both with `--parallel auto`, which picks the pipeline for this query, and \
             with each split forced) on a CSV file of the first {} W1 ticks, parsing included (the `cep` binary \
             beside this one; `cargo xtask bench` builds it); wall time of the process; peak RSS is the bench's \
             own, not cep's. `{CEILING}` is what two cores give here at best: the file split by \
             key in two, each half run by its own `cep run --threads 1` at the same time",
            thousands(n)
        ),
        n,
        Target { text: "≥ 1.7× with 2 threads".into(), check: Check::ContenderRatioAtLeast("2 threads", 1.7) },
        vec![
            cli_contender("1 thread", Some(1), &[]),
            cli_contender("2 threads", Some(2), &[]),
            cli_contender("default", None, &[]),
            cli_contender("2 threads, shards", Some(2), &["--parallel", "shards"]),
            cli_contender("2 threads, pipeline", Some(2), &["--parallel", "pipeline"]),
            split_contender(CEILING),
        ],
    ));

    out.push(Workload {
        name: "W5-parse".into(),
        description: format!(
            "W5's parsing alone: the CSV file of the first {} W1 ticks read into events to its end, no query \
             (matches = events read). One thread: a `Reader`, as `cep run --threads 1` reads; 2 threads: a \
             `ParallelReader` with one parser thread and the calling thread (which parses whenever it waits for \
             a block); `cep run` on shards parses the same blocks, split by shard, on the shards",
            thousands(n)
        ),
        size: W1A_OOO_SIZE,
        events: n,
        baseline: Baseline::Contender("1 thread"),
        target: Target { text: "— (parsing reported separately)".into(), check: Check::None },
        expect: Some(n as u64),
        series: None,
        contenders: vec![parse_contender("1 thread", 1), parse_contender("2 threads", 2)],
    });

    // W5 latency: the same, paced below saturation.
    let n = W5_LATENCY_SIZE.at(scale);
    out.push(Workload {
        name: "W5-latency".into(),
        description: format!(
            "event-to-match latency: W5's runtimes fed the first {} W1 ticks at {} events/s (a busy-wait on the \
             wall clock); per match, from the push of the tick that completes it (the first after its quiet \
             period) to its line reaching the writer; events/s = the rate kept",
            thousands(n),
            thousands(W5_LATENCY_RATE as usize)
        ),
        size: W5_LATENCY_SIZE,
        events: n,
        baseline: Baseline::None,
        target: Target { text: "— (report p50 / p99)".into(), check: Check::None },
        expect: (n == w1::TICKS).then_some(450),
        series: None,
        contenders: vec![
            latency_contender("1 thread", 1, s.ticks.clone()),
            latency_contender("2 threads", 2, s.ticks.clone()),
        ],
    });

    // W1b: level alerts.
    let n = W1B_SIZE.at(scale);
    let per_key = W1B_PER_KEY.at(scale);
    let count = levels::KEYS * per_key;
    let alerts = Stream::new(move |_| levels::alerts(levels::KEYS, per_key));
    out.push(Workload {
        name: "W1b".into(),
        description: format!(
            "level alerts: {} keys × {per_key} `above` alerts (band {}) over the first {} W1 ticks; \
             cep-index (sorted edges per key, live bits, cached nearest live edges) against the two-BTreeMap index of DESIGN.md §2.6; \
             matches = fires",
            thousands(levels::KEYS),
            levels::BAND,
            thousands(n)
        ),
        size: W1B_SIZE,
        events: n,
        baseline: Baseline::Contender("two-btreemaps"),
        target: Target { text: "≥ 2× two-btreemaps (aim 5×)".into(), check: Check::RatioAtLeast(2.0) },
        expect: (n == w1::TICKS && per_key == levels::PER_KEY).then_some(levels::FIRES as u64),
        series: None,
        contenders: vec![
            level_contender::<Indexed>("cep-index", alerts.clone(), count, s.ticks.clone()),
            level_contender::<TwoBTreeMaps>("two-btreemaps", alerts, count, s.ticks.clone()),
        ],
    });

    // W2: any-match sequences on the stack engine, aggregated-link batches
    // against per-event construction (the paper's experiment), with the run
    // engine beside them.
    let mut w2 = |query: &str, q: fn(i64) -> String, kind: Kind, window: i64, size: Size| {
        let n = size.at(scale);
        let suffix = if kind == Kind::Uniform { String::new() } else { format!(" {}", kind.name()) };
        let short = query.replace(['(', ')', ','], "").replace("SEQ", "").to_lowercase();
        let binds = if (n as i64) <= window { "; fewer events than the window, so it does not bind" } else { "" };
        let paper = w2::paper_ratio(query, kind, window);
        out.push(Workload {
            name: format!("W2 {short} w{window}{suffix}"),
            description: format!(
                "{query} skip-till-any-match WITHIN {window}, every match enumerated, over the first {} events of \
                 the {} W2 stream (the paper: 10,000; enumeration grows like window^(k-1)·n for k elements{binds}); \
                 ratio = events/s against per-event construction on the same stack engine; `stack direct` is the \
                 forward enumeration beyond the paper",
                thousands(n),
                kind.name()
            ),
            size,
            events: n,
            baseline: Baseline::Contender("stack per-event"),
            target: match paper {
                Some((text, min)) => Target {
                    text: format!("batch ≥ {text} (paper)"),
                    check: Check::ContenderRatioAtLeast("stack batch", min),
                },
                None => Target { text: "—".into(), check: Check::None },
            },
            expect: None,
            series: Some(Series {
                name: format!("{query} {}", kind.name()),
                window,
                paper: w2::paper_point(query, kind, window),
            }),
            contenders: vec![
                stack_visit("stack batch", q(window), w2::schema, s.w2(kind), Construction::Batch),
                stack_visit("stack per-event", q(window), w2::schema, s.w2(kind), Construction::PerEvent),
                stack_visit("stack direct", q(window), w2::schema, s.w2(kind), Construction::Direct),
                cep_text("run", q(window), w2::schema, s.w2(kind)),
            ],
        });
    };
    for window in w2::WINDOWS {
        w2("SEQ(A,B,D)", w2::seq_abd, Kind::Uniform, window, W2_ABD_SIZE);
    }
    for window in w2::WINDOWS {
        w2("SEQ(A,B,D,C)", w2::seq_abdc, Kind::Uniform, window, W2_ABDC_SIZE);
    }
    for kind in [Kind::ClusterFriendly, Kind::ClusterFree] {
        w2("SEQ(A,B,D)", w2::seq_abd, kind, *w2::WINDOWS.last().expect("windows"), W2_ABD_SIZE);
    }
    // Counting mode on the paper's full stream.
    let n = W2_COUNT_SIZE.at(scale);
    for (query, q) in [("SEQ(A,B,D)", w2::seq_abd as fn(i64) -> String), ("SEQ(A,B,D,C)", w2::seq_abdc)] {
        for window in [w2::WINDOWS[0], *w2::WINDOWS.last().expect("windows")] {
            let short = query.replace(['(', ')', ','], "").replace("SEQ", "").to_lowercase();
            out.push(Workload {
                name: format!("W2 {short} w{window} count"),
                description: format!(
                    "{query} skip-till-any-match WITHIN {window} over the first {} events of the uniform W2 stream, \
                     counting mode: per event the number of matches ending at it, none enumerated (matches = \
                     their sum; matches/s = matches counted per second)",
                    thousands(n)
                ),
                size: W2_COUNT_SIZE,
                events: n,
                baseline: Baseline::None,
                target: Target { text: "—".into(), check: Check::None },
                expect: None,
                series: None,
                contenders: vec![stack_count("stack count", q(window), w2::schema, s.w2(Kind::Uniform))],
            });
        }
    }

    // W3: the CORE-style sequence.
    let n = W3_SIZE.at(scale);
    out.push(Workload {
        name: "W3".into(),
        description: format!(
            "SEQ(AA a, AB b, AC c) skip-till-any-match WITHIN 100 EVENTS over {} events of 9 uniform types, \
             every match enumerated, stack engine (per-event) against the run engine (the CORE peer is not \
             measured here)",
            thousands(n)
        ),
        size: W3_SIZE,
        events: n,
        baseline: Baseline::Contender("run"),
        target: Target { text: "stack ≥ run".into(), check: Check::ContenderRatioAtLeast("stack", 1.0) },
        expect: None,
        series: None,
        contenders: vec![
            stack_visit("stack", w3::QUERY.into(), w3::schema, s.w3.clone(), Construction::PerEvent),
            stack_visit("stack direct", w3::QUERY.into(), w3::schema, s.w3.clone(), Construction::Direct),
            cep_text("run", w3::QUERY.into(), w3::schema, s.w3.clone()),
        ],
    });

    // W4: SASE+ Kleene.
    let n = W4_SIZE.at(scale);
    out.push(Workload {
        name: "W4".into(),
        description: format!(
            "SEQ(Stock+ a[], Stock b) skip-till-next-match [symbol] WITHIN 500 over {} trades of 2 symbols; \
             ratio to SASE 1.0's 150,000 events/s",
            thousands(n)
        ),
        size: W4_SIZE,
        events: n,
        baseline: Baseline::Rate { events_per_sec: SASE_EVENTS_PER_SEC, label: "SASE 1.0 (150 k events/s)" },
        target: Target { text: "≥ 15 M events/s (100× SASE 1.0)".into(), check: Check::EventsPerSecAtLeast(15e6) },
        expect: None,
        series: None,
        contenders: vec![cep_text("cep", w4::QUERY.into(), w4::schema, s.w4.clone())],
    });

    // W6: timers.
    for size in W6_TIMERS {
        let n = size.at(scale);
        out.push(Workload {
            name: format!("W6 {}", thousands(n)),
            description: format!(
                "timers: arm {} (deadlines uniform over 2^20), cancel every other one, expire the rest in 64 \
                 watermark steps; events = timers handled, matches = timers fired; ns per arm / cancel / expire: \
                 `cargo bench -p cep-time --bench timers`",
                thousands(n)
            ),
            size,
            events: n,
            baseline: Baseline::Contender("binary heap"),
            target: Target { text: "flat; ≤ 40 ns arm, ≤ 25 ns cancel (criterion)".into(), check: Check::None },
            expect: Some(n as u64 / 2),
            series: None,
            contenders: vec![
                timer_contender::<Wheel>("timing wheel"),
                timer_contender::<LazyHeap>("binary heap"),
                timer_contender::<Tree>("btreemap"),
            ],
        });
    }

    out
}

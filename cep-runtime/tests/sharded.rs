//! The sharded runtime gives the same matches (as a multiset of output
//! lines) as one runner: for random queries of every strategy on random
//! keyed streams, with 2 and 3 shards, with and without an allowed delay,
//! sending batches at the end only and after every event; and for several
//! queries keyed by different fields (and none) beside level alerts, over
//! many full batches. Matches go out before the end on a slow stream (a
//! quiet shard's deadlines too), and a shard's error reaches the caller.

use std::time::{Duration, Instant};

use cep_core::{Event, Schema, Sym, Value};
use cep_index::{Alert, LevelIndex};
use cep_io::parallel::ParallelReader;
use cep_io::read::EventSource;
use cep_io::{Format, Reader};
use cep_nfa::compile::{Options, compile};
use cep_runtime::shard::{ShardedRunner, shard_of};
use cep_runtime::{JsonLines, Runner};
use cep_testkit::XorShift64;
use cep_testkit::arb::{Case, arb_case};
use cep_time::LatePolicy;
use proptest::prelude::*;

fn runner(case: &Case, schema: &mut Schema, delay: i64) -> Runner {
    let progs = compile(&case.query, schema, &Options::default()).expect("generated queries compile").programs;
    let mut r = Runner::new(progs);
    r.set_max_delay(delay);
    r
}

/// Output lines, in their order.
fn lines_in_order(bytes: Vec<u8>) -> Vec<String> {
    String::from_utf8(bytes).unwrap().lines().map(str::to_owned).collect()
}

/// Output lines, sorted (the multiset).
fn lines(bytes: Vec<u8>) -> Vec<String> {
    let mut v = lines_in_order(bytes);
    v.sort();
    v
}

/// The output of one runner over `events`, in order.
fn one_thread(mut one: Runner, events: &[Event]) -> Vec<String> {
    let mut sink = JsonLines::new(Vec::new());
    for e in events {
        one.push(e, &mut sink).unwrap();
    }
    one.finish(&mut sink).unwrap();
    lines_in_order(sink.into_inner().unwrap())
}

/// The output of the sharded runtime over `events`, in order, and its
/// match and fire counts.
fn sharded(r: &mut ShardedRunner, events: &[Event]) -> (Vec<String>, u64) {
    let mut out = Vec::new();
    for e in events {
        r.push(e, &mut out).unwrap();
    }
    let summary = r.finish(&mut out).unwrap();
    assert_eq!(summary.events, events.len() as u64 - summary.late);
    (lines_in_order(out), summary.matches.iter().sum::<u64>() + summary.fires)
}

/// Sorted, unless `ordered` (the lines compared as they came).
fn as_compared(mut lines: Vec<String>, ordered: bool) -> Vec<String> {
    if !ordered {
        lines.sort();
    }
    lines
}

/// The sharded runtime `build` makes (from a front with `delay` and
/// `slices` runners) against one runner: the same lines, in the same order
/// when `ordered` ([`ShardedRunner::set_ordered_output`]). `flush_now`:
/// every partial batch goes out at the next push (so each event travels in
/// its own batch, with its own watermark). Returns the runtime, for what
/// else to check.
fn check_with(
    case: &Case,
    slices: usize,
    (delay, flush_now, ordered): (i64, bool, bool),
    build: impl FnOnce(Runner, Vec<Runner>) -> ShardedRunner,
) -> Result<ShardedRunner, TestCaseError> {
    let want = one_thread(runner(case, &mut case.schema.clone(), delay), &case.events);
    let mut front = Runner::new(Vec::new());
    front.set_max_delay(delay);
    let runners = (0..slices).map(|_| runner(case, &mut case.schema.clone(), 0)).collect();
    let mut r = build(front, runners);
    if flush_now {
        r.set_flush_after(Duration::ZERO);
    }
    if ordered {
        r.set_ordered_output().unwrap();
    }
    let (got, count) = sharded(&mut r, &case.events);
    prop_assert_eq!(count, want.len() as u64);
    prop_assert_eq!(as_compared(got, ordered), as_compared(want, ordered), "query: {}", case.query);
    Ok(r)
}

/// [`check_with`] on `shards` shard threads.
fn check(case: &Case, shards: usize, delay: i64, flush_now: bool, ordered: bool) -> Result<(), TestCaseError> {
    check_with(case, shards, (delay, flush_now, ordered), ShardedRunner::new).map(drop)
}

/// [`check_with`] for the balanced runtime: `slices` slices, `workers`
/// workers, the first `here` slices on the calling thread, and a slice
/// moved at random at every send (with `flush_now`, after every event).
fn check_balanced(
    case: &Case,
    (slices, workers, here): (usize, usize, usize),
    delay: i64,
    flush_now: bool,
    seed: u64,
) -> Result<(), TestCaseError> {
    let r = check_with(case, slices, (delay, flush_now, false), |front, runners| {
        let mut r = ShardedRunner::split(front, runners, workers, here, false);
        r.shuffle_slices(seed);
        r
    })?;
    prop_assert!(r.moves() > 0, "no slice moved");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Slices run on the calling thread and on workers, moving between
    /// them at random while events flow (each move in band: a slice given
    /// away at once, one taken back after its worker has run what came
    /// before): the matches of one runner.
    #[test]
    fn slices_moving_between_threads_equal_one(case in prop_oneof![
        arb_case("skip-till-any-match"), arb_case("skip-till-next-match"), arb_case("strict-contiguity")],
        layout in prop_oneof![Just((4usize, 1usize, 1usize)), Just((8, 1, 0)), Just((6, 2, 3)), Just((3, 2, 3))],
        delay in prop_oneof![Just(0i64), 1i64..4], flush_now in prop_oneof![3 => Just(true), 1 => Just(false)],
        seed: u64) {
        check_balanced(&case, layout, delay, flush_now, seed)?;
    }

    /// The same matches, and with ordered output the same lines in the
    /// same order.
    #[test]
    fn two_and_three_shards_equal_one(case in prop_oneof![
        arb_case("skip-till-any-match"), arb_case("skip-till-next-match"), arb_case("strict-contiguity")],
        delay in prop_oneof![Just(0i64), 1i64..4], flush_now: bool) {
        check(&case, 2, delay, flush_now, false)?;
        check(&case, 2, delay, flush_now, true)?;
        check(&case, 3, delay, flush_now, true)?;
    }

    /// Read from a file split by shard (`ShardedRunner::partition`), whole
    /// blocks through `push_block` (taken when `take` says so) and the
    /// rest event by event: the matches of one runner.
    #[test]
    fn blocks_from_a_partitioned_reader_equal_one(case in prop_oneof![
        arb_case("skip-till-any-match"), arb_case("skip-till-next-match"), arb_case("strict-contiguity")],
        shards in 2usize..4, delay in prop_oneof![3 => Just(0i64), 1 => 1i64..4], take: bool,
        parsers in 0usize..3, help: bool, ordered: bool) {
        let want = one_thread(runner(&case, &mut case.schema.clone(), delay), &case.events);
        let mut front = Runner::new(Vec::new());
        front.set_max_delay(delay);
        let runners = (0..shards).map(|_| runner(&case, &mut case.schema.clone(), 0)).collect();
        let mut r = ShardedRunner::new(front, runners);
        if ordered {
            r.set_ordered_output().unwrap();
        }
        let path = std::env::temp_dir().join(format!("cep-blocks-{}-{:?}.csv", std::process::id(), std::thread::current().id()));
        std::fs::write(&path, case_csv(&case.events)).unwrap();
        let head = Reader::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()), "t", Format::Csv).unwrap();
        let mut out = Vec::new();
        let mut blocks = 0;
        match r.partition() {
            Some(partition) => {
                let mut rest =
                    ParallelReader::open_partitioned(&path, &head, head.position(), parsers, None, partition).unwrap();
                if help {
                    r.help_parse(&rest.parse_jobs());
                }
                let mut e = Event::default();
                loop {
                    if let Some(block) = rest.take_block(|_| take) {
                        blocks += 1;
                        r.push_block(block, &mut out).unwrap();
                    } else if rest.next_event(&mut e).unwrap() {
                        r.push(&e, &mut out).unwrap();
                    } else {
                        break;
                    }
                }
            }
            // Queries without a partition: no blocks to take.
            None => case.events.iter().for_each(|e| r.push(e, &mut out).unwrap()),
        }
        std::fs::remove_file(&path).unwrap();
        prop_assert_eq!(blocks > 0, take && r.partition().is_some() && !case.events.is_empty());
        r.finish(&mut out).unwrap();
        prop_assert_eq!(as_compared(lines_in_order(out), ordered), as_compared(want, ordered), "query: {}", case.query);
    }
}

/// After each [`ShardedRunner::sync`] (every `every` events; batches are
/// otherwise held an hour), the output holds every line one runner has
/// written for the same events (in the same order when `ordered`), and
/// `finish` the rest. `balanced`: the calling thread runs half the slices
/// (unordered).
fn check_sync(case: &Case, (shards, every): (usize, usize), delay: i64, balanced: bool) -> Result<(), TestCaseError> {
    let ordered = !balanced;
    let mut one = runner(case, &mut case.schema.clone(), delay);
    let mut want = JsonLines::new(Vec::new());
    let mut front = Runner::new(Vec::new());
    front.set_max_delay(delay);
    let runners = (0..shards).map(|_| runner(case, &mut case.schema.clone(), 0)).collect();
    let mut r = if balanced {
        ShardedRunner::split(front, runners, shards / 2, shards / 2, false)
    } else {
        let mut r = ShardedRunner::new(front, runners);
        r.set_ordered_output().unwrap();
        r
    };
    r.set_flush_after(Duration::from_secs(3600));
    let mut out = Vec::new();
    for (i, e) in case.events.iter().enumerate() {
        one.push(e, &mut want).unwrap();
        r.push(e, &mut out).unwrap();
        if (i + 1) % every == 0 {
            r.sync(&mut out).unwrap();
            let so_far = lines_in_order(want.get_ref().clone());
            prop_assert_eq!(
                as_compared(lines_in_order(out.clone()), ordered),
                as_compared(so_far, ordered),
                "after {} events; query: {}",
                i + 1,
                case.query
            );
        }
    }
    one.finish(&mut want).unwrap();
    r.finish(&mut out).unwrap();
    let all = lines_in_order(want.into_inner().unwrap());
    prop_assert_eq!(as_compared(lines_in_order(out), ordered), as_compared(all, ordered), "query: {}", case.query);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// `sync` delivers every match of the events pushed so far: what one
    /// runner has written by then, on shards (ordered) and on the balanced
    /// runtime.
    #[test]
    fn sync_delivers_what_one_runner_has_written(case in prop_oneof![
        arb_case("skip-till-any-match"), arb_case("skip-till-next-match"), arb_case("strict-contiguity")],
        shards in 2usize..4, every in 1usize..8, delay in prop_oneof![3 => Just(0i64), 1 => 1i64..4], balanced: bool) {
        check_sync(&case, (shards, every), delay, balanced)?;
    }
}

/// `events` (fields `k`, `x`, `y`: integers or NULL) as CSV.
fn case_csv(events: &[Event]) -> String {
    let mut text = String::from("type,ts,k,x,y\n");
    for e in events {
        let cell = |v: &Value| match v {
            Value::Int(i) => i.to_string(),
            _ => String::new(),
        };
        let cells: Vec<String> = e.fields.iter().map(cell).collect();
        text.push_str(&format!("{},{},{}\n", e.ty.as_str(), e.ts, cells.join(",")));
    }
    text
}

/// A deterministic stream of `n` events: types A and B, fields `k` (0..50),
/// `g` (0..7), `x` (0..100) and `key` (0..20); 0–2 ms apart.
fn stream(n: usize) -> (Vec<Event>, Schema) {
    let mut schema = Schema::new();
    for f in ["k", "g", "x", "key"] {
        schema.field(f);
    }
    let mut rng = XorShift64::default();
    let mut draw = |m: u64| (rng.next_u64() % m) as i64;
    let (a, b) = (Sym::new("A"), Sym::new("B"));
    let mut ts = 0;
    let mut events = Vec::with_capacity(n);
    for row in 0..n {
        ts += draw(3);
        let ty = if draw(2) == 0 { a } else { b };
        let fields = vec![Value::Int(draw(50)), Value::Int(draw(7)), Value::Int(draw(100)), Value::Int(draw(20))];
        schema.observe(ty, &fields);
        events.push(Event::new(ty, ts, row as u64, fields));
    }
    (events, schema)
}

/// Queries keyed by `k`, by `g` and by nothing, and `above` alerts on `x`
/// keyed by `key` (those whose key is on `shard` of `shards`, or all).
fn runner_with_levels(schema: &Schema, shard: Option<(usize, usize)>) -> Runner {
    let queries = "QUERY by_k PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x WITHIN 40;
        QUERY by_g PATTERN SEQ(A a, A b, NOT B n WITHIN 3) WHERE skip-till-next-match AND [g] AND b.x >= 90;
        QUERY all PATTERN SEQ(A a, B b) WHERE strict-contiguity AND a.x >= 90 AND b.x >= 90;";
    let mut schema = schema.clone();
    let progs = compile(queries, &mut schema, &Options::default()).expect("the queries compile").programs;
    let mut r = Runner::new(progs);
    let mut index = LevelIndex::new();
    for key in 0..20 {
        if shard.is_none_or(|(i, n)| shard_of(&Value::Int(key), n) == i) {
            index.add(Alert::above(format!("x{key}"), Value::Int(key), "x", 95.0, 10.0)).unwrap();
        }
    }
    r.set_levels(index, &mut schema);
    r
}

#[test]
fn queries_on_different_keys_and_levels_over_full_batches_equal_one() {
    let (events, schema) = stream(30_000);
    let in_order = one_thread(runner_with_levels(&schema, None), &events);
    let want = as_compared(in_order.clone(), false);
    let count = |prefix: &str| want.iter().filter(|l| l.starts_with(prefix)).count();
    for prefix in ["{\"query\":\"by_k\"", "{\"query\":\"by_g\"", "{\"query\":\"all\"", "{\"level\""] {
        assert!(count(prefix) > 20, "{prefix}: {} lines", count(prefix));
    }
    for (n, ordered) in [(2, false), (3, false), (2, true), (3, true)] {
        let shards = (0..n).map(|i| runner_with_levels(&schema, Some((i, n)))).collect();
        let mut r = ShardedRunner::new(Runner::new(Vec::new()), shards);
        if ordered {
            r.set_ordered_output().unwrap();
        }
        let (got, total) = sharded(&mut r, &events);
        assert_eq!(total, want.len() as u64, "{n} shards");
        let (got, want) = if ordered { (got, &in_order) } else { (as_compared(got, false), &want) };
        assert!(&got == want, "{n} shards, ordered {ordered}: outputs differ");
    }
    // Balanced: 8 slices shared by this thread and 1 or 2 workers, moving
    // at random at every send, or following the load.
    for (workers, shuffle) in [(1, true), (2, true), (1, false)] {
        let slices = (0..8).map(|i| runner_with_levels(&schema, Some((i, 8)))).collect();
        let mut r = ShardedRunner::balanced(Runner::new(Vec::new()), slices, workers);
        if shuffle {
            r.shuffle_slices(7);
        }
        let (got, total) = sharded(&mut r, &events);
        assert_eq!(total, want.len() as u64, "balanced, {workers} workers");
        assert!(as_compared(got, false) == want, "balanced, {workers} workers, shuffled {shuffle}: outputs differ");
    }
}

/// One query on `k`, two shards.
fn pair_runtime() -> ShardedRunner {
    let mut schema = Schema::new();
    schema.field("k");
    let q = "PATTERN SEQ(A a, B b) WHERE [k]";
    let runner = |schema: &mut Schema| Runner::new(compile(q, schema, &Options::default()).unwrap().programs);
    let shards = (0..2).map(|_| runner(&mut schema.clone())).collect();
    ShardedRunner::new(Runner::new(Vec::new()), shards)
}

#[test]
fn a_match_goes_out_before_the_batch_fills_on_a_slow_stream() {
    let mut r = pair_runtime();
    let mut out = Vec::new();
    let ev = |ty: &str, ts: i64| Event::new(Sym::new(ty), ts, ts as u64, vec![Value::Int(1)]);
    r.push(&ev("A", 0), &mut out).unwrap();
    r.push(&ev("B", 1), &mut out).unwrap();
    // Events that match nothing, 2 ms apart: far fewer than a batch.
    let start = Instant::now();
    let mut ts = 2;
    while out.is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(2));
        r.push(&ev("C", ts), &mut out).unwrap();
        ts += 1;
    }
    let line = String::from_utf8(out.clone()).unwrap();
    assert!(line.starts_with("{\"query\":\"q1\",\"key\":1,\"start\":0,\"end\":1,"), "{line:?} after {ts} events");
    assert!(ts < 1000, "{ts} events before the match went out");
    r.finish(&mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 1);
}

#[test]
fn a_quiet_shard_fires_its_deadlines_from_the_watermark_in_band() {
    let mut schema = Schema::new();
    schema.field("k");
    let q = "PATTERN SEQ(A a, NOT B n WITHIN 5) WHERE [k]";
    let runner = |schema: &mut Schema| Runner::new(compile(q, schema, &Options::default()).unwrap().programs);
    let mut r = ShardedRunner::new(Runner::new(Vec::new()), (0..2).map(|_| runner(&mut schema.clone())).collect());
    // Key 0's shard gets its A, then nothing: only events of the other shard follow.
    let quiet = shard_of(&Value::Int(0), 2);
    let other = (1..).find(|&k| shard_of(&Value::Int(k), 2) != quiet).unwrap();
    let mut out = Vec::new();
    r.push(&Event::new(Sym::new("A"), 0, 0, vec![Value::Int(0)]), &mut out).unwrap();
    let start = Instant::now();
    let mut ts = 1;
    while out.is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(2));
        r.push(&Event::new(Sym::new("C"), ts, ts as u64, vec![Value::Int(other)]), &mut out).unwrap();
        ts += 1;
    }
    let line = String::from_utf8(out.clone()).unwrap();
    assert!(line.starts_with("{\"query\":\"q1\",\"key\":0,\"start\":0,\"end\":5,"), "{line:?} after {ts} events");
    r.finish(&mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 1);
}

#[test]
fn a_failing_shard_reports_its_error_without_hanging() {
    let mut schema = Schema::new();
    schema.field("k");
    let q = "PATTERN SEQ(A a, B b) WHERE [k]";
    // Shards that have seen ts 1,000,000 and fail on late events: the
    // stream below is late for them (not for the front).
    let failing = || {
        let mut r = Runner::new(compile(q, &mut schema.clone(), &Options::default()).unwrap().programs);
        r.set_late_policy(LatePolicy::Fail).unwrap();
        let mut sink = JsonLines::new(Vec::new());
        r.push(&Event::new(Sym::new("C"), 1_000_000, 0, vec![Value::Int(0)]), &mut sink).unwrap();
        r
    };
    let mut r = ShardedRunner::new(Runner::new(Vec::new()), vec![failing(), failing()]);
    let mut out = Vec::new();
    let mut error = None;
    for ts in 0..100_000 {
        let e = Event::new(Sym::new("A"), ts, ts as u64, vec![Value::Int(ts % 10)]);
        if let Err(e) = r.push(&e, &mut out) {
            error = Some(e.to_string());
            break;
        }
    }
    let error = error.expect("a push reports the shard's error once it has stopped");
    assert!(error.starts_with("shard ") && error.contains("is behind the watermark 1000000"), "{error}");
    let end = r.finish(&mut out).unwrap_err().to_string();
    assert!(end.contains("late event"), "{end}");
}

#[test]
fn a_shard_that_panics_is_an_error_not_a_silent_loss() {
    let mut r = pair_runtime();
    let mut out = Vec::new();
    r.push(&Event::new(Sym::new("A"), 0, 0, vec![Value::Int(1)]), &mut out).unwrap();
    // A change that panics on shard 1 (as a bug in an engine would).
    r.control(1, Box::new(|_: &mut Runner| panic!("injected panic"))).unwrap();
    for ts in 1..100 {
        if r.push(&Event::new(Sym::new("B"), ts, ts as u64, vec![Value::Int(ts)]), &mut out).is_err() {
            break; // the reader may notice at the next send
        }
    }
    let end = r.finish(&mut out).expect_err("finish reports the panicked shard");
    assert!(end.to_string().contains("panicked") || end.to_string().contains("stopped"), "{end}");
}

/// A wait on the shards that a panicked shard will never answer (a `sync`,
/// a checkpoint barrier) is an error, not a hang.
#[test]
fn a_shard_that_panics_fails_a_wait_instead_of_hanging() {
    for checkpoint in [false, true] {
        let mut r = pair_runtime();
        let mut out = Vec::new();
        r.push(&Event::new(Sym::new("A"), 0, 0, vec![Value::Int(1)]), &mut out).unwrap();
        r.control(1, Box::new(|_: &mut Runner| panic!("injected panic"))).unwrap();
        let err = if checkpoint {
            r.checkpoint(&mut out).map(drop).map_err(|e| e.to_string())
        } else {
            r.sync(&mut out).map_err(|e| e.to_string())
        };
        let err = err.expect_err("the panicked shard never answers");
        assert!(err.to_string().contains("stopped"), "checkpoint {checkpoint}: {err}");
        assert!(r.finish(&mut out).is_err());
    }
}

/// Queries added and removed while slices move at random at every send
/// (every event goes out at once): the routes change from one key field
/// to two and back while a slice may be on its way back to the calling
/// thread with events waiting for it. The matches of one runner given the
/// same changes at the same points.
#[test]
fn queries_come_and_go_while_slices_move() {
    let (events, schema) = stream(3_000);
    let by_k = "QUERY by_k PATTERN SEQ(A a, B b) WHERE [k] AND b.x > a.x WITHIN 40";
    let by_g = "QUERY by_g PATTERN SEQ(A a, A b) WHERE [g] AND b.x >= 60 WITHIN 20";
    let program = |q: &str| compile(q, &mut schema.clone(), &Options::default()).expect("compiles").programs.remove(0);
    let (add_at, remove_at) = (1_000, 2_000);

    let mut one = Runner::new(vec![program(by_k)]);
    let mut sink = JsonLines::new(Vec::new());
    for (i, e) in events.iter().enumerate() {
        if i == add_at {
            one.add_query(program(by_g)).unwrap();
        }
        if i == remove_at {
            assert!(one.remove_query("by_k"));
        }
        one.push(e, &mut sink).unwrap();
    }
    one.finish(&mut sink).unwrap();
    let want = lines(sink.into_inner().unwrap());
    for name in ["\"by_k\"", "\"by_g\""] {
        assert!(want.iter().filter(|l| l.contains(name)).count() > 20, "{name} matches");
    }

    for (slices, workers, here) in [(4, 1, 1), (6, 2, 3)] {
        let runners = (0..slices).map(|_| Runner::new(vec![program(by_k)])).collect();
        let mut r = ShardedRunner::split(Runner::new(Vec::new()), runners, workers, here, false);
        r.shuffle_slices(11);
        r.set_flush_after(Duration::ZERO);
        let mut out = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if i == add_at {
                r.add_query((0..slices).map(|_| program(by_g)).collect()).unwrap();
            }
            if i == remove_at {
                assert!(r.remove_query("by_k").unwrap());
            }
            r.push(e, &mut out).unwrap();
        }
        r.finish(&mut out).unwrap();
        assert!(r.moves() > 5, "{} moves", r.moves());
        assert!(lines(out) == want, "{slices} slices on {workers} workers: outputs differ");
    }
}

/// A slice run on the calling thread gathers its events and runs them in
/// batches, but its matches do not wait for a batch of 64 or a send: every
/// look at the clock (every few pushes) runs what the slices gathered and
/// writes their output, while the bundles still fill.
#[test]
fn a_match_on_the_calling_thread_is_written_at_the_next_look() {
    let mut schema = Schema::new();
    schema.field("k");
    let q = "PATTERN SEQ(A a, B b) WHERE [k]";
    let slices = 4;
    let runners = (0..slices)
        .map(|_| Runner::new(compile(q, &mut schema.clone(), &Options::default()).unwrap().programs))
        .collect();
    // Every slice on this thread; no send before the end (a long flush
    // wait, and far fewer events than a batch).
    let mut r = ShardedRunner::split(Runner::new(Vec::new()), runners, 1, slices, false);
    r.set_flush_after(Duration::from_secs(3600));
    let ev = |ty: &str, ts: i64, k: i64| Event::new(Sym::new(ty), ts, ts as u64, vec![Value::Int(k)]);
    let mut out = Vec::new();
    r.push(&ev("A", 0, 1), &mut out).unwrap();
    r.push(&ev("B", 1, 1), &mut out).unwrap();
    // Then only events of other slices, which complete nothing.
    let other = (2..).find(|&k| shard_of(&Value::Int(k), slices) != shard_of(&Value::Int(1), slices)).unwrap();
    for ts in 2..300 {
        r.push(&ev("C", ts, other), &mut out).unwrap();
    }
    assert_eq!(String::from_utf8_lossy(&out).lines().count(), 1, "the match is out before the end");
    assert_eq!(r.finish(&mut out).unwrap().matches, [1]);
}

/// Two statements with trailing `NOT`s of different quiet periods, keyed by
/// different fields: at an event that passes deadlines of both, one runner
/// fires them in deadline order (ties in statement order), and ordered
/// shards write exactly its lines.
#[test]
fn deadlines_of_several_statements_keep_one_runners_order() {
    let (events, schema) = stream(20_000);
    let queries = "QUERY late_a PATTERN SEQ(A a, NOT B n WITHIN 5) WHERE [k];
        QUERY late_b PATTERN SEQ(B b, NOT A n WITHIN 3) WHERE [g] AND b.x >= 50;
        QUERY now PATTERN SEQ(A a, B b) WHERE [k] WITHIN 4;";
    let runner = || {
        let progs = compile(queries, &mut schema.clone(), &Options::default()).expect("the queries compile").programs;
        Runner::new(progs)
    };
    let want = one_thread(runner(), &events);
    for q in ["late_a", "late_b", "now"] {
        let n = want.iter().filter(|l| l.starts_with(&format!("{{\"query\":\"{q}\""))).count();
        assert!(n > 100, "{q}: {n} matches");
    }
    // Deadlines of both statements pass at one event, the later one's
    // statement first in the file, and come out by deadline.
    let end = |l: &str| l.split("\"end\":").nth(1).and_then(|r| r.split(',').next()).unwrap().parse::<i64>().unwrap();
    let crossed =
        want.windows(2).any(|w| w[0].contains("late_b") && w[1].contains("late_a") && end(&w[0]) < end(&w[1]));
    assert!(crossed, "no deadline of the second statement before one of the first");
    for n in [2, 3] {
        let mut r = ShardedRunner::new(Runner::new(Vec::new()), (0..n).map(|_| runner()).collect());
        r.set_ordered_output().unwrap();
        let (got, total) = sharded(&mut r, &events);
        assert_eq!(total, want.len() as u64, "{n} shards");
        assert!(got == want, "{n} shards: the order differs");
    }
}

//! Both engines give up a partition once nothing in it could matter to a
//! later event of its key — the run engine when it has no partial or
//! pending match, no live negation log and no `PREV` history; the stack
//! engine when, its window applied at the watermark, no stack but the last
//! holds an entry and no accepting entry waits for its batch — so that a
//! stream of ever new keys keeps memory in proportion to the keys with
//! something in flight. A key that comes back starts afresh; the matches
//! must be the reference matcher's all the same, through `push`, through
//! `push_batch` (run engine), in every construction (stack engine), and
//! across a snapshot taken after partitions were given up and reused.

use cep_core::{Event, Schema, Sym, TimeUnit, Value};
use cep_nfa::compile::{Options, compile_file};
use cep_nfa::engine::Engine;
use cep_nfa::program::Program;
use cep_nfa::reference::{self, RefMatch};
use cep_nfa::stack::{Construction, StackEngine, qualifies};
use cep_nfa::syntax::{ast::File, parse};
use cep_testkit::XorShift64;
use cep_testkit::arb;
use cep_testkit::drive::{run_engine_with, sorted, to_ref};
use proptest::prelude::*;

/// Events over a few thousand keys (ints, strings and NULL), each key
/// busy for a while and then quiet, so that its partition goes idle while
/// others are created, and many keys come back later.
fn stream(schema: &mut Schema, n: u64) -> Vec<Event> {
    let (k, v) = (schema.field("k"), schema.field("v"));
    let mut next = XorShift64::new(0x2545_F491_4F6C_DD1Du64).into_fn();
    (0..n)
        .map(|row| {
            let r = next();
            // Keys drift: a window of 600 keys moving over 6,000.
            let base = row * 6_000 / n;
            let key = match r % 20 {
                0 => Value::Null,
                1..=4 => Value::Str(Sym::new(&format!("s{}", (base + (r >> 20) % 600) % 6_000))),
                _ => Value::Int(((base + (r >> 24) % 600) % 6_000) as i64),
            };
            let ty = ["A", "B", "C"][((r >> 8) % 3) as usize];
            let mut fields = vec![Value::Null; 2];
            fields[k as usize] = key;
            fields[v as usize] = Value::Int(((r >> 32) % 10) as i64);
            Event::new(Sym::new(ty), row as i64, row, fields)
        })
        .collect()
}

/// The last query has no window: an `A` waits for its key's next event for
/// ever, so its partitions are not idle (and not given up) while it waits.
const QUERIES: [&str; 5] = [
    "PATTERN SEQ(A x, B y) WHERE [k] AND y.v > x.v WITHIN 40",
    "PATTERN SEQ(A x, NOT C n, B y) WHERE [k] AND y.v > x.v AND n.v = x.v WITHIN 60",
    "PATTERN SEQ(A x, B y, NOT C z WITHIN 15) WHERE [k] AND y.v >= x.v WITHIN 60",
    "PATTERN SEQ(A x, B+ y, C z) WHERE [k] AND z.v > x.v WITHIN 50 SELECT ALL",
    "PATTERN SEQ(A x, B y) WHERE strict-contiguity AND [k] AND y.v < x.v",
];

/// Partitions in use from which the engines here look for idle ones (the
/// default, [`cep_nfa::idle::FIRST_LOOK`], is more than these streams have
/// keys): small, so that they look many times.
const FIRST_LOOK: usize = 64;

/// A run engine for `prog` that looks for idle partitions from
/// [`FIRST_LOOK`] on.
fn run_engine_for(prog: Program<Event>) -> Engine<Event> {
    let mut engine = Engine::new(prog);
    engine.set_first_idle_look(FIRST_LOOK);
    engine
}

/// A stack engine for `prog` that looks for idle partitions from
/// [`FIRST_LOOK`] on.
fn stack_engine_for(prog: Program<Event>, how: Construction) -> StackEngine<Event> {
    let mut engine = StackEngine::new(prog, how).expect("qualifies");
    engine.set_first_idle_look(FIRST_LOOK);
    engine
}

/// The run engine over `events` with `push`, then the end of the input.
fn run_engine(prog: Program<Event>, events: &[Event]) -> Vec<RefMatch> {
    run_engine_with(run_engine_for(prog), events).expect("in order")
}

/// The first statement of `file`, compiled against a copy of `schema`.
fn program(file: &File, schema: &Schema) -> Program<Event> {
    compile_file(file, &mut schema.clone(), &Options::default()).expect("compiles").programs.remove(0)
}

/// The run engine over `events` with `push_batch` in slices of `slice`,
/// taking a snapshot after `snapshot_at` events and going on in a fresh
/// engine restored from it.
fn run_batched(
    prog: impl Fn() -> Program<Event>,
    events: &[Event],
    slice: usize,
    snapshot_at: usize,
) -> (Vec<RefMatch>, usize) {
    let mut engine = run_engine_for(prog());
    let mut got = Vec::new();
    for (i, chunk) in events.chunks(slice).enumerate() {
        engine.push_batch(chunk).expect("in order");
        got.extend(engine.drain().map(to_ref));
        if (i + 1) * slice == snapshot_at {
            let saved = engine.snapshot();
            engine = run_engine_for(prog());
            engine.restore(saved).expect("fits");
        }
    }
    engine.finish();
    got.extend(engine.drain().map(to_ref));
    (got, engine.stats().partitions)
}

#[test]
fn idle_partitions_are_given_up_and_matches_stay_the_references() {
    let mut schema = Schema::new();
    let events = stream(&mut schema, 30_000);
    for query in QUERIES {
        let file = parse(query).expect("parses");
        let prog = || program(&file, &schema);
        let want = reference::run(&file.statements[0], &events, &schema, TimeUnit::Millis);
        assert!(want.len() >= 20, "{query}: only {} matches", want.len());
        assert_eq!(run_engine(prog(), &events), want, "{query}: push");
        let (got, partitions) = run_batched(prog, &events, 8, 16_000);
        assert_eq!(got, want, "{query}: push_batch and a snapshot");
        // 6,000 int keys, 6,000 string keys and NULL were seen; at the end
        // the partitions in use are those since the last look for idle
        // ones, at most twice the busy ones (600 + 600 + 1).
        if query.contains("WITHIN") {
            assert!(partitions <= 2 * 1_201 + 8, "{query}: {partitions} partitions in use");
        }
    }
}

#[test]
fn partitions_with_prev_history_are_kept() {
    let mut schema = Schema::new();
    let events = stream(&mut schema, 20_000);
    let query = "PATTERN SEQ(A x, B y) WHERE [k] AND x.v > PREV(x.v) AND y.v > x.v WITHIN 40";
    let file = parse(query).expect("parses");
    let prog = program(&file, &schema);
    let want = reference::run(&file.statements[0], &events, &schema, TimeUnit::Millis);
    let mut engine = Engine::new(prog);
    let mut got = Vec::new();
    for e in &events {
        engine.push(e).expect("in order");
        got.extend(engine.drain().map(to_ref));
    }
    engine.finish();
    got.extend(engine.drain().map(to_ref));
    assert_eq!(got, want);
    // Every key seen keeps its history.
    let k = schema.lookup("k").expect("k");
    let keys: std::collections::HashSet<Value> = events.iter().map(|e| e.get(k)).collect();
    assert_eq!(engine.stats().partitions, keys.len());
}

/// Queries the stack engine runs (skip-till-any-match sequences of single
/// events). The last two: a window in events, which entries outlive however
/// long their key is quiet, and no window at all.
const STACK_QUERIES: [&str; 5] = [
    "PATTERN SEQ(A x, B y) WHERE skip-till-any-match AND [k] AND y.v > x.v WITHIN 40",
    "PATTERN SEQ(A x, B y, C z) WHERE skip-till-any-match AND [k] AND z.v >= x.v WITHIN 60",
    "PATTERN SEQ(B x, C y) WHERE skip-till-any-match AND [k] AND x.v > 4 WITHIN 25",
    "PATTERN SEQ(A x, C y) WHERE skip-till-any-match AND [k] AND y.v = x.v WITHIN 3 EVENTS",
    "PATTERN SEQ(A x, B y) WHERE skip-till-any-match AND [k] AND y.v = x.v + 7",
];

/// The stack engine over `events`, building matches `how`, taking a
/// snapshot after `snapshot_at` events (in batch mode, at the first event
/// from there on with accepting entries waiting) and going on in a fresh
/// engine restored from it; the matches, the partitions in use at the
/// end, and whether a snapshot was taken.
fn run_stack(
    prog: impl Fn() -> Program<Event>,
    how: Construction,
    events: &[Event],
    snapshot_at: usize,
) -> (Vec<RefMatch>, usize, bool) {
    let mut engine = stack_engine_for(prog(), how);
    let mut got = Vec::new();
    let mut saved = false;
    for (i, e) in events.iter().enumerate() {
        if i >= snapshot_at && !saved && (how != Construction::Batch || engine.stats().pending > 0) {
            let snap = engine.snapshot();
            engine = stack_engine_for(prog(), how);
            engine.restore(snap).expect("fits");
            saved = true;
        }
        engine.push(e).expect("in order");
        got.extend(engine.drain().map(to_ref));
    }
    let partitions = engine.stats().partitions;
    engine.finish();
    got.extend(engine.drain().map(to_ref));
    (got, partitions, saved)
}

#[test]
fn stack_engine_gives_up_idle_partitions_and_matches_stay_the_references() {
    let mut schema = Schema::new();
    let events = stream(&mut schema, 30_000);
    for query in STACK_QUERIES {
        let file = parse(query).expect("parses");
        let prog = || program(&file, &schema);
        assert_eq!(qualifies(&prog()), Ok(()), "{query}");
        let want = sorted(reference::run(&file.statements[0], &events, &schema, TimeUnit::Millis));
        assert!(want.len() >= 20, "{query}: only {} matches", want.len());
        for how in [Construction::PerEvent, Construction::Direct, Construction::Batch] {
            let (got, partitions, saved) = run_stack(prog, how, &events, 16_003);
            assert_eq!(sorted(got), want, "{query}: {how:?}");
            assert!(saved, "{query}: {how:?}: no snapshot taken");
            // As for the run engine: at most twice the keys busy within a
            // window (600 + 600 + 1) are in use. Without a window in time,
            // a quiet key's entries wait, so its partition stays.
            if query.contains("WITHIN") && !query.contains("EVENTS") {
                assert!(partitions <= 2 * 1_201 + 8, "{query}: {how:?}: {partitions} partitions in use");
            } else {
                assert!(partitions > 2 * 1_201 + 8, "{query}: {how:?}: {partitions} partitions in use");
            }
        }
    }
}

/// A snapshot leaves given-up partitions out and renumbers the others: an
/// accepting entry waiting for its batch in the last partition of 1,024
/// must still be built after a restore.
#[test]
fn stack_snapshot_renumbers_partitions_with_waiting_entries() {
    let mut schema = Schema::new();
    let k = schema.field("k");
    let query = "PATTERN SEQ(A x, B y) WHERE skip-till-any-match AND [k] WITHIN 10";
    let file = parse(query).unwrap();
    let prog = || program(&file, &schema);
    let event = |ty: &str, ts: i64, key: i64| {
        let mut fields = vec![Value::Null; 1];
        fields[k as usize] = Value::Int(key);
        Event::new(Sym::new(ty), ts, ts as u64, fields)
    };
    let mut engine = StackEngine::new(prog(), Construction::Batch).unwrap();
    engine.set_first_idle_look(1_024);
    // 1,023 keys whose events nothing accepts, then key 5,000's A.
    for key in 0..1_023 {
        engine.push(&event("C", 0, key)).unwrap();
    }
    engine.push(&event("A", 1, 5_000)).unwrap();
    // 1,024 partitions in use: this event gives up the first 1,023 and
    // waits for its batch in the last.
    engine.push(&event("B", 2, 5_000)).unwrap();
    assert_eq!((engine.stats().partitions, engine.stats().pending), (1, 1));
    let mut resumed = StackEngine::new(prog(), Construction::Batch).unwrap();
    resumed.restore(engine.snapshot()).expect("fits");
    resumed.finish();
    let rows: Vec<Vec<u64>> = resumed.drain().map(|m| m.rows).collect();
    assert_eq!(rows, [vec![1, 2]]);
}

/// A stream in `cep_testkit::arb`'s terms (types A–D, fields `k`, `x`, `y`) over
/// 1,200 keys drawn at random, so each key comes back now and then, and
/// time moving slowly (one gap of 1–3 in fifty, the rest 0: a window of 8
/// spans some 200 events). More than [`FIRST_LOOK`] partitions
/// are made, so the engines look for idle ones among many keys with
/// something in flight, give up those with nothing, and reuse them for keys
/// that come back. (No NULL key: its partition would hold a tenth of the
/// stream, too much for the reference matcher under skip-till-any-match.)
fn returning_keys_stream(seed: u64, n: usize) -> (Vec<Event>, Schema) {
    let mut next = XorShift64::new(seed | 1).into_fn();
    let specs: Vec<_> = (0..n)
        .map(|_| {
            let r = next();
            let ty = ["A", "B", "C", "A", "B", "C", "A", "B", "C", "D"][(r % 10) as usize];
            let gap = if (r >> 8) % 50 == 0 { 1 + ((r >> 14) % 3) as i64 } else { 0 };
            let x = ((r >> 16) % 10 != 0).then_some(((r >> 40) % 6) as i64);
            (ty, gap, Some(((r >> 24) % 1_200) as i64), x, ((r >> 48) % 4) as i64)
        })
        .collect();
    arb::build_events(&specs)
}

/// Random partitioned queries of every strategy over streams of keys that
/// come back: the run engine (through `push`, and through `push_batch` across a
/// snapshot) and, where the query qualifies, the stack engine in every
/// construction give the reference matcher's matches.
fn check_many_keys(query: &str, seed: u64) -> Result<(), TestCaseError> {
    let (events, schema) = returning_keys_stream(seed, 4_000);
    let file = parse(query).map_err(|d| TestCaseError::fail(d.render(query, "q")))?;
    let prog = || program(&file, &schema);
    let want = reference::run(&file.statements[0], &events, &schema, TimeUnit::Millis);
    prop_assert_eq!(run_engine(prog(), &events), want.clone(), "push: {}", query);
    let (got, _) = run_batched(prog, &events, 8, 2_400);
    prop_assert_eq!(got, want.clone(), "push_batch and a snapshot: {}", query);
    if qualifies(&prog()).is_ok() {
        let want = sorted(want);
        for how in [Construction::PerEvent, Construction::Direct, Construction::Batch] {
            let (got, ..) = run_stack(prog, how, &events, 2_403);
            prop_assert_eq!(sorted(got), want.clone(), "stack engine, {:?}: {}", how, query);
        }
    }
    Ok(())
}

/// Partitioned queries of `strategy` (by `[k]`, `PARTITION BY k` or both).
fn partitioned(strategy: &'static str) -> impl Strategy<Value = String> {
    arb::arb_query(strategy).prop_filter("partitioned by k", |q| q.contains("[k]") || q.contains("BY k"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: (arb::config().cases / 8).max(16), ..arb::config() })]

    #[test]
    fn any_match_over_returning_keys(query in partitioned("skip-till-any-match"), seed in any::<u64>()) {
        check_many_keys(&query, seed)?;
    }

    #[test]
    fn next_match_over_returning_keys(query in partitioned("skip-till-next-match"), seed in any::<u64>()) {
        check_many_keys(&query, seed)?;
    }

    #[test]
    fn contiguity_over_returning_keys(query in partitioned("strict-contiguity"), seed in any::<u64>()) {
        check_many_keys(&query, seed)?;
    }
}

/// By default an engine looks for idle partitions only from
/// [`cep_nfa::idle::FIRST_LOOK`] partitions on: the 12,001 keys of this
/// stream all keep theirs, so none that comes back remakes it.
#[test]
fn fewer_keys_than_the_first_look_keep_their_partitions() {
    let mut schema = Schema::new();
    let events = stream(&mut schema, 30_000);
    let k = schema.lookup("k").expect("k");
    let keys = events.iter().map(|e| e.get(k)).collect::<std::collections::HashSet<Value>>().len();
    assert!(keys < cep_nfa::idle::FIRST_LOOK);
    let file = parse(STACK_QUERIES[0]).expect("parses");
    let prog = || program(&file, &schema);
    let mut run = Engine::new(prog());
    let mut stack = StackEngine::new(prog(), Construction::Direct).expect("qualifies");
    for e in &events {
        run.push(e).expect("in order");
        stack.push(e).expect("in order");
    }
    assert_eq!((run.stats().partitions, stack.stats().partitions), (keys, keys));
}

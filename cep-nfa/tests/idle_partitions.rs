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

mod support;

use cep_core::{Event, Schema, Sym, TimeUnit, Value};
use cep_nfa::compile::{Options, compile_file};
use cep_nfa::engine::Engine;
use cep_nfa::reference::{self, RefMatch};
use cep_nfa::stack::{Construction, StackEngine, qualifies};
use cep_nfa::syntax::parse;
use support::{run_engine, to_ref, xorshift};

/// Events over a few thousand keys (ints, strings and NULL), each key
/// busy for a while and then quiet, so that its partition goes idle while
/// others are created, and many keys come back later.
fn stream(schema: &mut Schema, n: u64) -> Vec<Event> {
    let (k, v) = (schema.field("k"), schema.field("v"));
    let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
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

/// The run engine over `events` with `push_batch` in slices of `slice`,
/// taking a snapshot after `snapshot_at` events and going on in a fresh
/// engine restored from it.
fn run_batched(
    prog: impl Fn() -> cep_nfa::program::Program<Event>,
    events: &[Event],
    slice: usize,
    snapshot_at: usize,
) -> (Vec<RefMatch>, usize) {
    let mut engine = Engine::new(prog());
    let mut got = Vec::new();
    for (i, chunk) in events.chunks(slice).enumerate() {
        engine.push_batch(chunk).expect("in order");
        got.extend(engine.drain().map(to_ref));
        if (i + 1) * slice == snapshot_at {
            let saved = engine.snapshot();
            engine = Engine::new(prog());
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
        let prog =
            || compile_file(&file, &mut schema.clone(), &Options::default()).expect("compiles").programs.remove(0);
        let want = reference::run(&file.statements[0], &events, &schema, TimeUnit::Millis);
        assert!(want.len() >= 20, "{query}: only {} matches", want.len());
        assert_eq!(run_engine(prog(), &events).expect("in order"), want, "{query}: push");
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
    let prog = compile_file(&file, &mut schema.clone(), &Options::default()).expect("compiles").programs.remove(0);
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

/// Matches in one order, whatever order an engine emitted them in.
fn sorted(mut v: Vec<RefMatch>) -> Vec<RefMatch> {
    v.sort_by(|a, b| (a.end, &a.vars, a.key.to_string()).cmp(&(b.end, &b.vars, b.key.to_string())));
    v
}

/// The stack engine over `events`, building matches `how`, taking a
/// snapshot after `snapshot_at` events (in batch mode, at the first event
/// from there on with accepting entries waiting) and going on in a fresh
/// engine restored from it; the matches and the partitions in use at the
/// end.
fn run_stack(
    prog: impl Fn() -> cep_nfa::program::Program<Event>,
    how: Construction,
    events: &[Event],
    snapshot_at: usize,
) -> (Vec<RefMatch>, usize) {
    let mut engine = StackEngine::new(prog(), how).expect("qualifies");
    let mut got = Vec::new();
    let mut saved = false;
    for (i, e) in events.iter().enumerate() {
        if i >= snapshot_at && !saved && (how != Construction::Batch || engine.stats().pending > 0) {
            let snap = engine.snapshot();
            engine = StackEngine::new(prog(), how).expect("qualifies");
            engine.restore(snap).expect("fits");
            saved = true;
        }
        engine.push(e).expect("in order");
        got.extend(engine.drain().map(to_ref));
    }
    assert!(saved, "no snapshot taken");
    let partitions = engine.stats().partitions;
    engine.finish();
    got.extend(engine.drain().map(to_ref));
    (got, partitions)
}

#[test]
fn stack_engine_gives_up_idle_partitions_and_matches_stay_the_references() {
    let mut schema = Schema::new();
    let events = stream(&mut schema, 30_000);
    for query in STACK_QUERIES {
        let file = parse(query).expect("parses");
        let prog =
            || compile_file(&file, &mut schema.clone(), &Options::default()).expect("compiles").programs.remove(0);
        assert_eq!(qualifies(&prog()), Ok(()), "{query}");
        let want = sorted(reference::run(&file.statements[0], &events, &schema, TimeUnit::Millis));
        assert!(want.len() >= 20, "{query}: only {} matches", want.len());
        for how in [Construction::PerEvent, Construction::Direct, Construction::Batch] {
            let (got, partitions) = run_stack(prog, how, &events, 16_003);
            assert_eq!(sorted(got), want, "{query}: {how:?}");
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
    let prog =
        || compile_file(&parse(query).unwrap(), &mut schema.clone(), &Options::default()).unwrap().programs.remove(0);
    let event = |ty: &str, ts: i64, key: i64| {
        let mut fields = vec![Value::Null; 1];
        fields[k as usize] = Value::Int(key);
        Event::new(Sym::new(ty), ts, ts as u64, fields)
    };
    let mut engine = StackEngine::new(prog(), Construction::Batch).unwrap();
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

//! Allocations per event of the compiled rise_spike engine in its steady
//! state on W1a (issue 3, part 5): after a warm-up, the engine may allocate
//! only when an event starts a partial match or a match completes; fed 8
//! events at a time through `push_batch`, a batch with neither allocates
//! nothing.
//!
//! One test in this binary, so that nothing else allocates while it counts.

use cep_bench::alloc::{self, Counting};
use cep_bench::baseline::rise_spike::HandWritten;
use cep_bench::w1::{self, RISE_SPIKE, Ticks};
use cep_core::{Event, Sym};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;

#[global_allocator]
static ALLOC: Counting = Counting;

const WARM_UP: usize = 500_000;
const MEASURED: usize = 500_000;
/// Then fed 8 at a time through `push_batch`, as the runtime's shards do.
const BATCHED: usize = 200_000;

#[test]
fn w1a_steady_state_allocates_only_to_start_or_complete() {
    assert!(alloc::installed());
    let tick = Sym::new("Tick");
    let mut schema = w1::schema();
    let prog = compile(RISE_SPIKE, &mut schema, &Options::default()).unwrap().programs.remove(0);
    let mut engine = Engine::new(prog);
    let mut hw = HandWritten::with_keys(w1::KEYS);
    let mut prev: Vec<Option<i64>> = vec![None; w1::KEYS];
    let mut e = Event::default();
    let mut ticks = Ticks::new(WARM_UP + MEASURED + BATCHED);

    for t in ticks.by_ref().take(WARM_UP) {
        w1::fill(&mut e, &t, tick);
        engine.push(&e).unwrap();
        engine.drain().for_each(drop);
        hw.push(&t);
        hw.drain().for_each(drop);
        prev[t.key as usize] = Some(t.price);
    }

    // The engine alone, then the hand-written engine alone, on the same ticks.
    let measured: Vec<w1::Tick> = ticks.by_ref().take(MEASURED).collect();
    let batched: Vec<w1::Tick> = ticks.collect();
    // Which events start a partial match (a rise over the key's previous tick).
    let is_start: Vec<bool> = measured
        .iter()
        .map(|t| prev[t.key as usize].replace(t.price).is_some_and(|p| t.price * 100 >= p * 102))
        .collect();
    let starts = is_start.iter().filter(|&&s| s).count() as u64;
    let mut completed = 0u64;
    // Allocations at events that start a partial match, that emit a match,
    // that are spikes (a spike completes waiting rises into pending matches),
    // and at all other events.
    let mut at = [0u64; 4];
    let before = alloc::counts();
    let mut last = before;
    for (t, &start) in measured.iter().zip(&is_start) {
        w1::fill(&mut e, t, tick);
        engine.push(&e).unwrap();
        let mut emitted = 0;
        for m in engine.drain() {
            emitted += 1;
            drop(m);
        }
        completed += emitted;
        let now = alloc::counts();
        at[if start {
            0
        } else if emitted > 0 {
            1
        } else if t.vol >= 1000 {
            2
        } else {
            3
        }] += now.since(last).allocations();
        last = now;
    }
    let used = alloc::counts().since(before);

    // The same through `push_batch`: a batch of 8 with no start, no spike and
    // no match emitted allocates nothing (the lookahead is on the stack).
    let mut events = vec![Event::default(); 8];
    let mut quiet_batches = 0u64;
    for batch in batched.chunks(8) {
        let mut busy = false;
        for (e, t) in events.iter_mut().zip(batch) {
            w1::fill(e, t, tick);
            busy |= prev[t.key as usize].replace(t.price).is_some_and(|p| t.price * 100 >= p * 102) || t.vol >= 1000;
        }
        let mark = alloc::counts();
        engine.push_batch(&events[..batch.len()]).unwrap();
        let mut emitted = 0;
        for m in engine.drain() {
            emitted += 1;
            drop(m);
        }
        if !busy && emitted == 0 {
            quiet_batches += 1;
            assert_eq!(alloc::counts().since(mark).allocations(), 0, "push_batch allocated on a quiet batch");
        }
    }
    assert!(quiet_batches > 1000, "only {quiet_batches} quiet batches");

    let before_hw = alloc::counts();
    let mut hw_matches = 0u64;
    for t in &measured {
        hw.push(t);
        hw_matches += hw.drain().count() as u64;
    }
    let hw_used = alloc::counts().since(before_hw);
    assert_eq!(hw_matches, completed);

    let n = MEASURED as f64;
    eprintln!(
        "engine: {} allocations ({} allocs, {} reallocs), {} bytes over {MEASURED} events: \
         {:.5} allocations/event, {:.2} bytes/event; {starts} starts, {completed} matches",
        used.allocations(),
        used.allocs,
        used.reallocs,
        used.bytes,
        used.allocations() as f64 / n,
        used.bytes as f64 / n,
    );
    eprintln!(
        "engine allocations at events that start a partial match: {}, that emit a match: {}, \
         at spikes (which complete pending matches): {}, at other events: {}",
        at[0], at[1], at[2], at[3]
    );
    eprintln!(
        "hand-written: {} allocations, {} bytes: {:.5} allocations/event",
        hw_used.allocations(),
        hw_used.bytes,
        hw_used.allocations() as f64 / n
    );
    // The requirement: nothing is allocated for an event that neither starts
    // nor completes a match.
    assert_eq!(at[3], 0, "the engine allocated at events that neither start nor complete a match");
    // A start may allocate the partition's run vectors the first time it has
    // runs; an emitted match owns its rows and variable bounds.
    assert!(at[0] <= 2 * starts, "{} allocations for {starts} starts", at[0]);
    assert!(at[1] <= 3 * completed, "{} allocations for {completed} emitted matches", at[1]);
}

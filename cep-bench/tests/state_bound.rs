//! The state bound (`--max-state`, LANGUAGE.md §6) on random queries and
//! streams: the heap of the process never passes the bound by more than
//! the margin docs/semantics.md documents ("Memory limits"), under either
//! policy; a bound that is never reached changes no match.
//!
//! This file is a test binary of its own, with one test, because it counts
//! the process's heap with a global allocator: tests running beside it
//! would count too.

use std::cell::Cell;
use std::sync::Arc;

use cep_bench::alloc::{self, Counting};
use cep_core::budget::{OnLimit, StateBudget};
use cep_core::{Event, Match, Schema, Sym, Value};
use cep_nfa::compile::{Options, compile};
use cep_runtime::{QueryInfo, Runner};
use cep_testkit::XorShift64;
use cep_testkit::arb::arb_query;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRng, TestRunner};

#[global_allocator]
static ALLOC: Counting = Counting;

/// The bound the random runs get: small, so that many of them reach it.
const BOUND: usize = 128 << 10;

/// What the heap may hold past the bound: the margin of docs/semantics.md
/// ("Memory limits"): vectors' spare capacity (up to the bound again) and a
/// few fixed buffers.
const MARGIN: usize = BOUND + (2 << 20);

/// A stream of `n` events of types A–D over keys 1–3, fields `k`, `x`, `y`.
fn stream(seed: u64, n: usize) -> (Vec<Event>, Schema) {
    let mut schema = Schema::new();
    for f in ["k", "x", "y"] {
        schema.field(f);
    }
    let mut rng = XorShift64::new(seed | 1);
    let mut ts = 0;
    let events = (0..n as u64)
        .map(|row| {
            ts += (rng.next_u64() % 3) as i64;
            let ty = ["A", "B", "C", "D"][(rng.next_u64() % 4) as usize];
            let k = Value::Int(1 + (rng.next_u64() % 3) as i64);
            let x = Value::Int((rng.next_u64() % 6) as i64);
            let y = Value::Int((rng.next_u64() % 4) as i64);
            Event::new(Sym::new(ty), ts, row, vec![k, x, y])
        })
        .collect();
    (events, schema)
}

/// Runs `query` over `events`; with a budget, stops when it trips. Returns
/// the matches (as query, rows), whether it tripped, and the heap's peak
/// above what was live before.
fn run(
    query: &str,
    events: &[Event],
    schema: &Schema,
    budget: Option<Arc<StateBudget>>,
) -> (Vec<Vec<u64>>, bool, usize) {
    let programs = compile(query, &mut schema.clone(), &Options::default()).expect("arb_query is valid").programs;
    let mut got = Vec::new();
    let base = alloc::counts().live;
    alloc::reset_peak();
    let mut tripped = false;
    {
        let mut runner = Runner::new(programs);
        if let Some(b) = &budget {
            runner.set_state_budget(b.clone());
        }
        let mut count = 0usize;
        let mut sink = |_: &QueryInfo, m: &Match| {
            // Only the first matches are kept: the output is not state.
            if count < 64 {
                got.push(m.rows.clone());
            }
            count += 1;
        };
        for e in events {
            runner.push(e, &mut sink).expect("in order");
            if runner.state_limit_hit().is_some() {
                tripped = true;
                break;
            }
        }
        if !tripped {
            runner.finish(&mut sink).expect("no output to fail");
        }
    }
    let peak = alloc::peak().saturating_sub(base) as usize;
    (got, tripped, peak)
}

#[test]
fn the_heap_stays_within_the_bound_and_an_unreached_bound_changes_nothing() {
    let cases = std::env::var("CEP_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(200u32);
    // A fixed seed: the share of runs that reach the bound is checked below.
    let config = Config { cases, ..Config::default() };
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (
        prop_oneof![Just("skip-till-any-match"), Just("skip-till-next-match"), Just("strict-contiguity")],
        any::<u64>(),
        any::<bool>(),
    )
        .prop_flat_map(|(s, seed, drop)| (arb_query(s), Just(seed), Just(drop)));
    let (reached, dropped, failed) = (Cell::new(0usize), Cell::new(0usize), Cell::new(0usize));
    runner
        .run(&strategy, |(query, seed, drop)| {
            let (events, schema) = stream(seed, 1500);
            let policy = if drop { OnLimit::DropOldest } else { OnLimit::Fail };
            let budget = Arc::new(StateBudget::new(BOUND, policy));
            let (bounded, tripped, peak) = run(&query, &events, &schema, Some(budget.clone()));
            prop_assert!(
                peak <= BOUND + MARGIN,
                "{query}: the heap grew by {peak} bytes under a bound of {BOUND} ({policy:?})"
            );
            prop_assert_eq!(tripped, budget.tripped());
            if tripped {
                prop_assert_eq!(policy, OnLimit::Fail, "drop-oldest trips only on what it cannot drop");
                let hit = budget.hit().expect("a trip says what held the most");
                prop_assert!(hit.holder.starts_with('q'));
                failed.set(failed.get() + 1);
            }
            if budget.dropped() > 0 {
                dropped.set(dropped.get() + 1);
            }
            if budget.dropped() == 0 && !tripped {
                // Never reached (or reached with nothing dropped): the same
                // matches as without a bound (whose run is then as small).
                let (free, _, _) = run(&query, &events, &schema, None);
                prop_assert_eq!(&bounded, &free, "{}", query);
            } else {
                reached.set(reached.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    // The property is only worth its name if the bound is reached often.
    let (reached, dropped, failed) = (reached.get(), dropped.get(), failed.get());
    assert!(reached * 20 >= cases as usize, "only {reached} of {cases} runs reached the bound");
    assert!(dropped > 0 && failed > 0, "both policies acted: {dropped} dropped, {failed} failed");
}

//! Event time through the runner: any input shuffled within the allowed
//! delay gives exactly the output of the sorted input (issue 4), for random
//! queries of every strategy (the generator of cep-nfa's property tests);
//! and runs of events given at once (`push_batch_for`, late ones among
//! them) give what they give one by one.

use cep_core::{Event, Match};
use cep_nfa::compile::{Options, compile};
use cep_runtime::{QueryInfo, Runner};
use cep_testkit::arb::{Case, arb_case};
use proptest::prelude::*;

/// All matches of `events` with `max_delay`, as (query, key, start, end, rows).
fn run(case: &Case, events: &[Event], max_delay: i64) -> (Vec<String>, u64) {
    let mut schema = case.schema.clone();
    let progs = compile(&case.query, &mut schema, &Options::default()).expect("generated queries compile").programs;
    let mut runner = Runner::new(progs);
    runner.set_max_delay(max_delay);
    let mut out = Vec::new();
    let mut sink = |q: &QueryInfo, m: &Match| {
        out.push(format!("{} {:?} {} {} {:?} {:?}", q.name, m.key, m.start, m.end, m.rows, m.ends))
    };
    for e in events {
        runner.push(e, &mut sink).unwrap();
    }
    runner.finish(&mut sink).unwrap();
    let late = runner.summary().late;
    (out, late)
}

/// All matches of `events` pushed with `push_for` in runs of `size` (1: one
/// by one), and the late count.
fn run_in_runs(case: &Case, events: &[Event], size: usize) -> (Vec<String>, u64) {
    let mut schema = case.schema.clone();
    let progs = compile(&case.query, &mut schema, &Options::default()).expect("generated queries compile").programs;
    let mut runner = Runner::new(progs);
    let mut out = Vec::new();
    let mut sink = |q: &QueryInfo, m: &Match| {
        out.push(format!("{} {:?} {} {} {:?} {:?}", q.name, m.key, m.start, m.end, m.rows, m.ends))
    };
    for run in events.chunks(size) {
        if size == 1 {
            runner.push_for(&run[0], u64::MAX, &mut sink).unwrap();
        } else {
            runner.push_batch_for(run, u64::MAX, &mut sink).unwrap();
        }
    }
    runner.finish(&mut sink).unwrap();
    let late = runner.summary().late;
    (out, late)
}

/// Moves events earlier past neighbours with a larger `ts` at most `delay`
/// ahead, keeping events of equal `ts` in input order (ties are processed in
/// input order, so swapping them would change the input, not just delay it).
fn shuffle(events: &[Event], delay: i64, swaps: &[usize]) -> Vec<Event> {
    let mut v = events.to_vec();
    for &s in swaps {
        if v.len() < 2 {
            break;
        }
        let i = s % (v.len() - 1);
        let (a, b) = (v[i].ts, v[i + 1].ts);
        if a < b && b - a <= delay {
            v.swap(i, i + 1);
        }
    }
    v
}

/// Whether no event of `v` is behind the watermark (max ts so far − delay).
fn none_late(v: &[Event], delay: i64) -> bool {
    let mut max = i64::MIN;
    v.iter().all(|e| {
        let ok = max == i64::MIN || e.ts >= max - delay;
        max = max.max(e.ts);
        ok
    })
}

fn strategy() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("skip-till-any-match"), Just("skip-till-next-match"), Just("strict-contiguity")]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn shuffled_within_the_delay_equals_sorted(
        (case, delay, swaps) in strategy().prop_flat_map(|s| (arb_case(s), 1i64..=4, prop::collection::vec(0usize..64, 0..40)))
    ) {
        let shuffled = shuffle(&case.events, delay, &swaps);
        prop_assume!(none_late(&shuffled, delay));
        let (want, late_sorted) = run(&case, &case.events, delay);
        let (got, late_shuffled) = run(&case, &shuffled, delay);
        prop_assert_eq!(late_sorted, 0);
        prop_assert_eq!(late_shuffled, 0);
        prop_assert_eq!(got, want, "query: {}", case.query);
    }

    #[test]
    fn runs_given_at_once_equal_one_by_one(
        (case, swaps, size) in strategy().prop_flat_map(|s| (arb_case(s), prop::collection::vec(0usize..64, 0..40), 2usize..9))
    ) {
        // Shuffled with no delay allowed: the events moved earlier are late.
        let events = shuffle(&case.events, 4, &swaps);
        let (want, late_one) = run_in_runs(&case, &events, 1);
        let (got, late_runs) = run_in_runs(&case, &events, size);
        prop_assert_eq!(late_runs, late_one);
        prop_assert_eq!(got, want, "query: {}", case.query);
    }
}

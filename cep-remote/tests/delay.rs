//! `DelayResolver`: the in-process service of the W7 experiment and of the
//! engines' property tests.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cep_core::Value;
use cep_core::remote::{Answer, Call, CallId, Resolver};
use cep_remote::{DelayConfig, DelayResolver};
use common::{Rng, args, expected};

fn f(_func: u16, args: &[Value]) -> bool {
    expected(args)
}

/// Property style: random delays, batching, bounds and reordering; random
/// submits, polls and waits; every call answered once with `f`.
#[test]
fn every_call_is_answered_once_with_the_function() {
    for seed in 0..12_u64 {
        let mut rng = Rng(seed);
        let config = DelayConfig::default()
            .with_comm(Duration::from_micros(rng.below(300)), Duration::from_micros(rng.below(300)))
            .with_eval(Duration::from_micros(rng.below(50)), Duration::from_micros(rng.below(50)))
            .with_batching(1 + rng.below(10) as usize, Duration::from_micros(rng.below(500)))
            .with_max_in_flight(1 + rng.below(30) as usize)
            .with_cache_entries(rng.below(20) as usize)
            .with_reorder(seed);
        let mut r = DelayResolver::new(config, f);
        let mut sent = Vec::new();
        let mut out = Vec::new();
        let n = 300;
        for i in 0..n {
            sent.push(args(rng.below(50), 1000));
            r.submit(Call { id: CallId(i), func: (i % 2) as u16, args: sent[i as usize].clone() });
            match rng.below(5) {
                0 => r.poll(&mut out),
                1 => r.wait(&mut out, Duration::from_micros(rng.below(300))),
                _ => {}
            }
        }
        let start = Instant::now();
        while r.in_flight() > 0 {
            assert!(start.elapsed() < Duration::from_secs(10));
            r.wait(&mut out, Duration::from_millis(100));
        }
        let mut seen = HashMap::new();
        for (id, a) in out {
            assert_eq!(a, Answer::Value(expected(&sent[id.0 as usize])), "seed {seed}: call {}", id.0);
            assert!(seen.insert(id, ()).is_none(), "seed {seed}: call {} answered twice", id.0);
        }
        assert_eq!(seen.len(), n as usize);
        assert_eq!(r.stats().calls, n);
    }
}

#[test]
fn answers_come_after_the_delays() {
    let config = DelayConfig::default()
        .with_comm(Duration::from_millis(100), Duration::ZERO)
        .with_eval(Duration::from_millis(20), Duration::ZERO)
        .with_batching(4, Duration::ZERO);
    let mut r = DelayResolver::new(config, f);
    let start = Instant::now();
    r.submit(Call { id: CallId(1), func: 0, args: args(1, 10) });
    let mut out = Vec::new();
    r.poll(&mut out);
    assert!(out.is_empty());
    r.wait(&mut out, Duration::from_millis(5));
    // (A loaded machine may oversleep; only then may the answer be there.)
    if start.elapsed() < Duration::from_millis(110) {
        assert!(out.is_empty(), "nothing before 120 ms");
    }
    r.wait(&mut out, Duration::from_secs(2));
    assert_eq!(out.len(), 1);
    assert!(start.elapsed() >= Duration::from_millis(120), "{:?}", start.elapsed());
}

#[test]
fn replies_are_reordered_within_a_batch() {
    let config = DelayConfig::default().with_batching(50, Duration::from_secs(60)).with_reorder(9);
    let mut r = DelayResolver::new(config, f);
    for i in 0..50 {
        r.submit(Call { id: CallId(i), func: 0, args: args(i, 1000) });
    }
    let mut out = Vec::new();
    while r.in_flight() > 0 {
        r.wait(&mut out, Duration::from_millis(100));
    }
    let ids: Vec<u64> = out.iter().map(|(id, _)| id.0).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..50).collect::<Vec<_>>());
    assert_ne!(ids, sorted, "a shuffle of 50 left them in order");
    assert_eq!(r.stats().batches, 1);
}

#[test]
fn a_shard_at_its_bound_does_not_wait_for_the_linger() {
    let config = DelayConfig::default().with_batching(16, Duration::from_secs(30)).with_max_in_flight(4);
    let mut r = DelayResolver::new(config, f);
    let start = Instant::now();
    for i in 0..20 {
        r.submit(Call { id: CallId(i), func: 0, args: args(i, 1000) });
    }
    assert!(start.elapsed() < Duration::from_secs(5), "submit waited for the linger");
    assert_eq!(r.stats().batches, 4);
}

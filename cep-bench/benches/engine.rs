//! The run engine per strategy, on in-memory events (no parsing, no
//! generation in the timed loop; compiling the query is setup):
//!
//! - skip-till-any-match: W2 `SEQ(A a, B b, D d)` over the uniform stream,
//!   and W3 `SEQ(AA a, AB b, AC c) WITHIN 100 EVENTS`;
//! - skip-till-next-match: W4 (Kleene, partitioned by symbol) and W1
//!   rise_spike (partitioned by key, trailing `NOT`), the latter beside the
//!   hand-written baseline;
//! - strict contiguity: three rising W1 ticks in a row per key.
//!
//! `Throughput::Elements` is events. `cargo bench -p cep-bench --bench engine`.

use std::hint::black_box;

use cep_bench::baseline::rise_spike::HandWritten;
use cep_bench::{w1, w2, w3, w4};
use cep_core::{Event, Schema, Sym};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

/// Three rising prices in a row for one key.
const STRICT: &str = "PATTERN SEQ(Tick a, Tick b, Tick c) WHERE strict-contiguity AND [key] \
AND b.price > a.price AND c.price > b.price";

fn engine(query: &str, mut schema: Schema) -> Engine<Event> {
    Engine::new(compile(query, &mut schema, &Options::default()).unwrap().programs.remove(0))
}

/// Runs `engine` over `events`; returns the number of matches.
fn run(mut engine: Engine<Event>, events: &[Event]) -> usize {
    let mut matches = 0;
    for e in events {
        engine.push(e).unwrap();
        matches += engine.drain().count();
    }
    engine.finish();
    matches + engine.drain().count()
}

fn w1_events(n: usize) -> Vec<Event> {
    let tick = Sym::new("Tick");
    w1::Ticks::new(n)
        .map(|t| {
            let mut e = Event::default();
            w1::fill(&mut e, &t, tick);
            e
        })
        .collect()
}

fn bench_any_match(c: &mut Criterion) {
    let mut g = c.benchmark_group("any_match");
    g.sample_size(10);
    // W2 at window 500 makes ~19 million matches on 10,000 events (seconds
    // per run); the first 1,000 events make ~1.3 million.
    let n = 1_000;
    let types = w2::type_syms();
    let events: Vec<Event> = w2::Events::uniform(n)
        .map(|w| {
            let mut e = Event::default();
            w2::fill(&mut e, &w, &types);
            e
        })
        .collect();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("w2_seq_abd_w500_1k", |b| {
        b.iter_batched(
            || engine(&w2::seq_abd(500), w2::schema()),
            |en| black_box(run(en, &events)),
            BatchSize::LargeInput,
        )
    });

    let n = 50_000;
    let types = w3::type_syms();
    let events: Vec<Event> = w3::Events::new(n)
        .map(|w| {
            let mut e = Event::default();
            w3::fill(&mut e, &w, &types);
            e
        })
        .collect();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("w3_seq_100_events_50k", |b| {
        b.iter_batched(|| engine(w3::QUERY, w3::schema()), |en| black_box(run(en, &events)), BatchSize::LargeInput)
    });
    g.finish();
}

fn bench_next_match(c: &mut Criterion) {
    let mut g = c.benchmark_group("next_match");
    g.sample_size(10);
    let n = 100_000;
    let syms = w4::Syms::new();
    let events: Vec<Event> = w4::Trades::new(n)
        .map(|t| {
            let mut e = Event::default();
            w4::fill(&mut e, &t, &syms);
            e
        })
        .collect();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("w4_kleene_100k", |b| {
        b.iter_batched(|| engine(w4::QUERY, w4::schema()), |en| black_box(run(en, &events)), BatchSize::LargeInput)
    });

    let n = 300_000;
    let events = w1_events(n);
    let ticks: Vec<w1::Tick> = w1::Ticks::new(n).collect();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("w1_rise_spike_300k", |b| {
        b.iter_batched(|| engine(w1::RISE_SPIKE, w1::schema()), |en| black_box(run(en, &events)), BatchSize::LargeInput)
    });
    g.bench_function("w1_rise_spike_300k_hand_written", |b| {
        b.iter_batched(
            || HandWritten::with_keys(w1::KEYS),
            |mut hw| {
                let mut matches = 0;
                for t in &ticks {
                    hw.push(t);
                    matches += hw.drain().count();
                }
                hw.finish();
                black_box(matches + hw.drain().count())
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn bench_strict(c: &mut Criterion) {
    let mut g = c.benchmark_group("strict");
    g.sample_size(10);
    let n = 300_000;
    let events = w1_events(n);
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("w1_three_rising_300k", |b| {
        b.iter_batched(|| engine(STRICT, w1::schema()), |en| black_box(run(en, &events)), BatchSize::LargeInput)
    });
    g.finish();
}

criterion_group!(benches, bench_any_match, bench_next_match, bench_strict);
criterion_main!(benches);

//! Compiled predicate evaluation: single-element patterns over the W1 ticks,
//! so the engine does little besides evaluating each event's filter (one
//! match per accepted event; about 2 % pass the volume filters).
//!
//! `cargo bench -p cep-bench --bench predicates`.

use std::hint::black_box;

use cep_bench::w1;
use cep_core::{Event, Sym};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

const FILTERS: [(&str, &str); 4] = [
    // Comparisons of a field with a constant.
    ("field_const", "PATTERN Tick t WHERE t.vol >= 1000 AND t.price > 10"),
    // Arithmetic on fields before the comparison.
    ("arith", "PATTERN Tick t WHERE t.price * 100 >= t.vol * 102 AND t.key % 7 = 3 AND t.vol >= 1000"),
    // A disjunction; `PREV` reads the key's previous tick.
    ("or_prev", "PATTERN Tick t WHERE [key] AND (t.vol >= 1000 OR t.price * 100 >= PREV(t.price) * 103)"),
    // Nothing passes: pure filter cost.
    ("reject_all", "PATTERN Tick t WHERE t.vol > 5000 AND t.price > 0"),
];

fn bench_predicates(c: &mut Criterion) {
    let n = 200_000;
    let tick = Sym::new("Tick");
    let events: Vec<Event> = w1::Ticks::new(n)
        .map(|t| {
            let mut e = Event::default();
            w1::fill(&mut e, &t, tick);
            e
        })
        .collect();
    let mut g = c.benchmark_group("predicates");
    g.sample_size(20);
    g.throughput(Throughput::Elements(n as u64));
    for (name, query) in FILTERS {
        let make = || {
            let mut schema = w1::schema();
            Engine::new(compile(query, &mut schema, &Options::default()).unwrap().programs.remove(0))
        };
        g.bench_function(name, |b| {
            b.iter_batched(
                make,
                |mut engine| {
                    let mut matches = 0;
                    for e in &events {
                        engine.push(e).unwrap();
                        matches += engine.drain().count();
                    }
                    black_box(matches)
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench_predicates);
criterion_main!(benches);

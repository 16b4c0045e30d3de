//! The front end: parsing, and parsing plus compiling (name resolution,
//! checks, the register plan, predicate closures), of the W1 rise_spike
//! query and the W4 Kleene query. Throughput is bytes of query text.
//!
//! `cargo bench -p cep-bench --bench frontend`.

use std::hint::black_box;

use cep_bench::{w1, w4};
use cep_nfa::compile::{Options, compile};
use cep_nfa::syntax::parse;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench_frontend(c: &mut Criterion) {
    let mut g = c.benchmark_group("frontend");
    for (name, query, schema) in
        [("rise_spike", w1::RISE_SPIKE, w1::schema as fn() -> _), ("w4_kleene", w4::QUERY, w4::schema)]
    {
        g.throughput(Throughput::Bytes(query.len() as u64));
        g.bench_function(format!("parse/{name}"), |b| b.iter(|| parse(black_box(query)).unwrap()));
        let base = schema();
        g.bench_function(format!("compile/{name}"), |b| {
            b.iter(|| {
                let mut s = base.clone();
                compile(black_box(query), &mut s, &Options::default()).unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_frontend);
criterion_main!(benches);

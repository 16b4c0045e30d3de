//! `FlatEvents` (`cep_core::FlatEvents`), the form in which a parser
//! thread hands a block's events to the shards of `cep run --threads N`:
//! copying events in right after they were written (as the parser does),
//! and rebuilding them a chunk at a time (as a shard does). Throughput is
//! events; each has three int fields, as a W1 tick has.
//!
//! `cargo bench -p cep-bench --bench flat`.

use std::hint::black_box;

use cep_core::{Event, FlatCursor, FlatEvents, Sym, Value};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Events in a block's part (about what a 256 KiB block of W1 holds).
const EVENTS: usize = 10_000;
/// Events a shard rebuilds at a time (the runtime's `UNPACK_CHUNK`).
const CHUNK: usize = 256;

fn tick(i: usize) -> [Value; 3] {
    [Value::Int(i as i64 & 4095), Value::Int(10_000 + (i as i64 & 7)), Value::Int(100)]
}

fn bench_flat(c: &mut Criterion) {
    let mut g = c.benchmark_group("flat");
    g.throughput(Throughput::Elements(EVENTS as u64));

    // One event reused, its fields written just before each copy.
    let mut flat = FlatEvents::default();
    let mut e = Event::new(Sym::new("Tick"), 0, 0, vec![Value::Null; 3]);
    g.bench_function("push_just_written", |b| {
        b.iter(|| {
            flat.clear();
            for i in 0..EVENTS {
                e.ts = i as i64;
                for (to, v) in e.fields.iter_mut().zip(tick(black_box(i))) {
                    *to = v;
                }
                flat.push(&e);
            }
        })
    });

    let mut events = Vec::new();
    g.bench_function("unpack_chunks", |b| {
        b.iter(|| {
            let mut from = FlatCursor::default();
            let mut last = 0;
            while from.index() < flat.len() {
                let (chunk, next) = flat.unpack_chunk(from, CHUNK, &mut events, 0);
                last = chunk[chunk.len() - 1].ts;
                from = next;
            }
            black_box(last)
        })
    });
    g.finish();
}

criterion_group!(benches, bench_flat);
criterion_main!(benches);

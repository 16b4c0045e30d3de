//! The shared match buffer (`cep_nfa::buffer`): pushing bindings, releasing
//! them (with the cascade to unreferenced ancestors), and extracting a
//! match's path. Throughput is buffer operations (nodes pushed or walked).
//!
//! `cargo bench -p cep-bench --bench buffer`.

use std::hint::black_box;

use cep_nfa::buffer::{Buffer, NIL, Node, NodeId};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench_buffer(c: &mut Criterion) {
    let mut g = c.benchmark_group("buffer");

    // Runs of length 3 (the W1 shape: rise, spike): push, push, release.
    let n = 100_000u64;
    g.throughput(Throughput::Elements(2 * n));
    let mut buf = Buffer::default();
    g.bench_function("push_release_pairs", |b| {
        b.iter(|| {
            for i in 0..n {
                let a = buf.push(NIL, 0, i, i);
                let s = buf.push(a, 1, i + 1, i + 1);
                buf.release(a);
                buf.release(black_box(s));
            }
        })
    });

    // A Kleene chain of 1,000 nodes, each run extending the last, then the
    // whole chain freed by one release (iteratively).
    let len = 1_000u64;
    g.throughput(Throughput::Elements(len));
    g.bench_function("kleene_chain_1000", |b| {
        b.iter(|| {
            let mut cur = NIL;
            for i in 0..len {
                let next = buf.push(cur, 0, i, i);
                if cur != NIL {
                    buf.release(cur);
                }
                cur = next;
            }
            buf.release(black_box(cur));
        })
    });

    // Any-match splits: 100 prefixes, each extended by 100 events, sharing
    // the prefix nodes; then everything released.
    g.throughput(Throughput::Elements(100 * 101));
    let mut leaves: Vec<NodeId> = Vec::with_capacity(100 * 100);
    g.bench_function("split_100x100", |b| {
        b.iter(|| {
            leaves.clear();
            for p in 0..100u64 {
                let a = buf.push(NIL, 0, p, p);
                for q in 0..100u64 {
                    leaves.push(buf.push(a, 1, 100 + q, 100 + q));
                }
                buf.release(a);
            }
            for &l in &leaves {
                buf.release(l);
            }
        })
    });

    // Extracting the path of a 12-node match (the W4 average length).
    let mut cur = NIL;
    for i in 0..12u64 {
        let next = buf.push(cur, if i < 11 { 0 } else { 1 }, i, i);
        if cur != NIL {
            buf.release(cur);
        }
        cur = next;
    }
    let mut path: Vec<Node> = Vec::with_capacity(16);
    g.throughput(Throughput::Elements(12));
    g.bench_function("path_12", |b| {
        b.iter(|| {
            buf.path(black_box(cur), &mut path);
            black_box(path.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench_buffer);
criterion_main!(benches);

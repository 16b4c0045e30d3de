//! A match's output line (LANGUAGE.md §5), id included: what a run that
//! emits many matches spends most of its time on. `write_json` against the
//! same line through `core::fmt` (`write!` of each number and `{:032x}` of
//! the id), as it was first written: the baseline.
//!
//! `cargo bench -p cep-core --bench json` (add `-- --quick` for a short run).

use std::fmt::Write as _;
use std::hint::black_box;

use cep_core::{Match, Value};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// A two-variable match of W2's size: an int key, rows in the millions.
fn sample() -> Match {
    Match {
        query: 0,
        key: Value::Int(4363),
        start: 23_742,
        end: 67_802,
        rows: vec![1_187_100, 2_890_100],
        ends: vec![1, 2],
        emit: Vec::new(),
        unverified: false,
    }
}

/// The line through `core::fmt`, as `write_json` first wrote it.
fn with_fmt(m: &Match, out: &mut String, query: &str, vars: &[&str]) {
    // (The names here need no escape.)
    let _ = write!(out, "{{\"query\":\"{query}\",\"key\":");
    if let Value::Int(k) = m.key {
        let _ = write!(out, "{k}");
    }
    let _ = write!(out, ",\"start\":{},\"end\":{},\"vars\":{{", m.start, m.end);
    for (i, name) in vars.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"{name}\":[");
        for (j, r) in m.var_rows(i).iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(out, "{r}");
        }
        out.push(']');
    }
    let _ = write!(out, "}},\"id\":\"{:032x}\"}}", m.id(query).0);
}

fn bench(c: &mut Criterion) {
    let m = sample();
    let (mut line, mut text) = (Vec::with_capacity(256), String::with_capacity(256));
    let (mut a, mut b) = (Vec::new(), String::new());
    m.write_json(&mut a, "rise_spike", &["r", "s"]);
    with_fmt(&m, &mut b, "rise_spike", &["r", "s"]);
    assert_eq!(a, b.as_bytes(), "the two write the same line");
    let mut g = c.benchmark_group("match_line");
    g.throughput(Throughput::Elements(1));
    g.bench_function("write_json", |bench| {
        bench.iter(|| {
            line.clear();
            black_box(&m).write_json(&mut line, "rise_spike", &["r", "s"]);
            black_box(line.len())
        })
    });
    g.bench_function("core_fmt", |bench| {
        bench.iter(|| {
            text.clear();
            with_fmt(black_box(&m), &mut text, "rise_spike", &["r", "s"]);
            black_box(text.len())
        })
    });
    g.bench_function("id_alone", |bench| bench.iter(|| black_box(&m).id("rise_spike")));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

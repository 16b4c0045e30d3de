//! The CSV readers on rows with and without quoted cells: the sequential
//! [`Reader`] from memory and the [`ParallelReader`] from a file (no parser
//! threads of its own: the reading thread parses every block). One
//! criterion iteration reads the whole input; throughput is in rows.
//!
//! A record with a quote goes through `csv_core` instead of the in-place
//! splitter; it once cost a scan of the rest of the buffer per record (a
//! quoted file read 20 times slower than the same rows unquoted), which this
//! bench shows at once.
//!
//! `cargo bench -p cep-core --bench read` (add `-- --quick` for a short run).

use std::hint::black_box;
use std::time::Duration;

use cep_core::Event;
use cep_io::parallel::ParallelReader;
use cep_io::read::EventSource;
use cep_io::{Format, Reader};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const ROWS: usize = 100_000;

/// `ts,sym,price` rows, the symbol quoted or not.
fn rows(quoted: bool) -> String {
    let mut text = String::from("ts,sym,price\n");
    for i in 0..ROWS {
        let sym = if quoted { "\"IBM\"" } else { "IBM" };
        text.push_str(&format!("{i},{sym},{}\n", 100 + i % 7));
    }
    text
}

/// Reads every event of `source`; returns how many.
fn drain(source: &mut impl EventSource) -> usize {
    let mut e = Event::default();
    let mut n = 0;
    while source.next_event(&mut e).expect("valid rows") {
        n += 1;
    }
    black_box(e);
    n
}

fn readers(c: &mut Criterion) {
    let mut group = c.benchmark_group("read/csv");
    group.throughput(Throughput::Elements(ROWS as u64));
    for quoted in [false, true] {
        let name = if quoted { "quoted" } else { "plain" };
        let text = rows(quoted);
        group.bench_with_input(BenchmarkId::new("sequential", name), &text, |b, text| {
            b.iter(|| {
                let mut r = Reader::new(text.as_bytes(), "t.csv", Format::Csv).unwrap();
                assert_eq!(drain(&mut r), ROWS);
            })
        });
        let path = std::env::temp_dir().join(format!("cep-read-bench-{}-{name}.csv", std::process::id()));
        std::fs::write(&path, &text).unwrap();
        group.bench_with_input(BenchmarkId::new("parallel", name), &path, |b, path| {
            b.iter(|| {
                let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
                let head = Reader::new(file, "t.csv", Format::Csv).unwrap();
                let mut rest = ParallelReader::open(path, &head, head.position(), 0, None).unwrap();
                assert_eq!(drain(&mut rest), ROWS);
            })
        });
        std::fs::remove_file(&path).ok();
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    targets = readers
}
criterion_main!(benches);

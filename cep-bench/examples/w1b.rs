//! W1b for profilers: the level index (or, with `btree`, the baseline) over
//! the W1 ticks. `cargo run --release -p cep-bench --example w1b [TICKS] [btree]`.

use std::time::Instant;

use cep_bench::baseline::levels::TwoBTreeMaps;
use cep_bench::levels::{self, KEYS, PER_KEY};
use cep_bench::w1::{self, Ticks};
use cep_core::Value;
use cep_index::LevelIndex;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(w1::TICKS);
    let btree = args.next().is_some_and(|s| s == "btree");
    let ticks: Vec<_> = Ticks::new(n).collect();
    let alerts = levels::alerts(KEYS, PER_KEY);
    let t0 = Instant::now();
    let mut fires = 0u64;
    if btree {
        let mut idx = TwoBTreeMaps::new();
        for a in alerts {
            idx.add(a).unwrap();
        }
        let t1 = Instant::now();
        for t in &ticks {
            idx.update(Value::Int(t.key), levels::FIELD, Value::Int(t.price), t.ts, t.row, |_| fires += 1);
        }
        report(t0, t1, n, fires);
    } else {
        let mut idx = LevelIndex::new();
        idx.add_all(alerts).unwrap();
        let price = idx.field(levels::FIELD).unwrap();
        let t1 = Instant::now();
        for t in &ticks {
            idx.update(price, Value::Int(t.key), Value::Int(t.price), t.ts, t.row, |_| fires += 1);
        }
        report(t0, t1, n, fires);
        eprintln!("heap: {} bytes per alert", idx.heap_bytes() / idx.len());
    }
}

fn report(t0: Instant, t1: Instant, n: usize, fires: u64) {
    let (add, run) = (t1 - t0, t1.elapsed());
    eprintln!(
        "add {:.2} s; {n} ticks in {:.3} s = {:.2} M ticks/s, {fires} fires",
        add.as_secs_f64(),
        run.as_secs_f64(),
        n as f64 / run.as_secs_f64() / 1e6
    );
}

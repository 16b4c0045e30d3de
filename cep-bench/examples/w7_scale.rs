//! W7 scale, engine only: `n` speed-violation patterns over the AIS rows of
//! a CSV written by `cargo xtask ais DIR`, held in memory; prints seconds,
//! matches and the share of stream time. For profiles of the many-pattern
//! path (DESIGN.md §2.10).
//!
//! `cargo run --release -p cep-bench --example w7_scale DIR/ais.csv [PATTERNS] [RUNS] [unshared]`

use cep_bench::w7::{self, AisRow};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: w7_scale AIS.csv [PATTERNS] [RUNS]");
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let shared = args.next().is_none_or(|s| s != "unshared");
    let text = std::fs::read_to_string(&path).expect("the CSV reads");
    let rows: Vec<AisRow> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            AisRow {
                ts: f[1].parse().expect("ts"),
                mmsi: f[2].parse().expect("mmsi"),
                lat: f[3].parse().expect("lat"),
                lon: f[4].parse().expect("lon"),
                speed: f[5].parse().expect("speed"),
            }
        })
        .collect();
    let span = rows.iter().map(|r| r.ts).max().unwrap_or(0) - rows.iter().map(|r| r.ts).min().unwrap_or(0);
    let events = w7::events(&rows);
    for _ in 0..runs {
        let r = w7::run_patterns(&events, n, shared);
        println!(
            "{n} patterns: {:.3} s, {} matches, {:.4} % of {:.0} s of stream",
            r.seconds,
            r.matches,
            100.0 * r.seconds / (span as f64 / 1000.0),
            span as f64 / 1000.0
        );
    }
}

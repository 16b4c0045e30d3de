//! W5 latency: rise_spike through the runtime on one thread and on the
//! sharded runtime (2 shard threads), the W1 ticks pushed at a fixed rate
//! below saturation (a busy-wait on the wall clock); per match, the time
//! from the push of the tick that completes it to its line reaching the
//! writer (see `cep_bench::suite::paced_run`). Rates: those given, or 1 M
//! events/s and half the one-thread throughput (W5's, measured first); the
//! sharded runtime with its default partial-batch wait (250 µs), a longer
//! and a shorter one.
//!
//! `cargo run --release -p cep-bench --example w5_latency [TICKS] [RUNS] [RATE...]`

use std::time::Duration;

use cep_bench::suite::{self, Latency, PacedRun, Scale, paced_run};
use cep_bench::w1::{self, Ticks};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(w1::TICKS);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3).max(1);
    let mut rates: Vec<f64> = args.filter_map(|s| s.parse().ok()).collect();
    let ticks: Vec<_> = Ticks::new(n).collect();

    // The one-thread throughput, as W5 measures it (`cargo xtask bench --only W5`).
    let workloads = suite::workloads(Scale::Full);
    let w5 = workloads.iter().find(|w| w.name == "W5").expect("W5 is a workload");
    let mut one = w5.contender("1 thread").expect("W5 runs one thread").prepare(n);
    let mut full: Vec<f64> = (0..runs).map(|_| one(false)).map(|p| p.events as f64 / p.seconds).collect();
    full.sort_by(f64::total_cmp);
    let full = full[runs / 2];
    println!("{n} W1 ticks; one thread unpaced: {:.2} M events/s (median of {runs})", full / 1e6);
    if rates.is_empty() {
        rates = vec![1e6, (full / 2.0).round()];
    }

    let variants: [(&str, usize, Option<Duration>); 4] = [
        ("1 thread", 1, None),
        ("2 threads, flush after 1 ms", 2, Some(Duration::from_millis(1))),
        ("2 threads, flush after 250 µs (default)", 2, None),
        ("2 threads, flush after 100 µs", 2, Some(Duration::from_micros(100))),
    ];
    for rate in rates {
        println!("\nat {:.2} M events/s:", rate / 1e6);
        for (name, threads, flush) in variants {
            let got: Vec<PacedRun> = (0..runs).map(|_| paced_run(threads, &ticks, rate, flush)).collect();
            for run in &got {
                println!("  {name:<40} {}", describe(n, run));
            }
            let med = |f: fn(&Latency) -> f64| {
                let mut v: Vec<f64> = got.iter().map(|r| f(&r.latency)).collect();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            println!(
                "  {name:<40} median: p50 {} p99 {} max {}",
                us(med(|l| l.p50)),
                us(med(|l| l.p99)),
                us(med(|l| l.max))
            );
        }
    }
}

/// One run: the rate kept, the latency percentiles and the matches.
fn describe(n: usize, run: &PacedRun) -> String {
    let l = &run.latency;
    format!(
        "kept {:.2} M/s  p50 {} p99 {} max {}  ({} matches)",
        n as f64 / run.seconds / 1e6,
        us(l.p50),
        us(l.p99),
        us(l.max),
        l.matches
    )
}

/// Seconds as microseconds, right-aligned.
fn us(s: f64) -> String {
    format!("{:>8.1} µs", s * 1e6)
}

//! W5 throughput only (no latency runs): rise_spike through the runtime on
//! one thread, on two (the balanced runtime: the calling thread and a
//! worker), and the ceiling (the ticks split by key, each half on its own
//! runner and thread).
//!
//! `cargo run --release -p cep-bench --example w5 [TICKS] [RUNS] [1|2|3]`
//! (3: only the ceiling)

use cep_bench::suite::{self, Scale};
use cep_bench::w1;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(w1::TICKS);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5).max(1);
    let only: Option<usize> = args.next().and_then(|s| s.parse().ok());
    let workloads = suite::workloads(Scale::Full);
    let w5 = workloads.iter().find(|w| w.name == "W5").expect("W5 is a workload");
    for (name, threads) in [("1 thread", 1), ("2 threads", 2), (suite::CEILING, 3)] {
        if only.is_some_and(|t| t != threads) {
            continue;
        }
        let mut run = w5.contender(name).expect("W5 contender").prepare(n);
        let mut rates: Vec<f64> = (0..runs).map(|_| run(false)).map(|p| p.events as f64 / p.seconds).collect();
        println!("{name}: {}", cep_bench::median_line(&mut rates));
    }
}

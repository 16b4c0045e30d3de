//! W5 with any number of shard threads: rise_spike through
//! `ShardedRunner` with each shard count given (1: the runner alone on this
//! thread), the W1 ticks filled into one reused event as W5 does. It shows
//! whether the runtime's shortfall on two cores is where the scheduler puts
//! the reader and the shards (more shards than cores would then help) or the
//! work the hand-over adds (it would not).
//!
//! Beside the rate, the calling thread's CPU time per event (from
//! `/proc/thread-self/stat`, on Linux): the reader's share of the work.
//!
//! `cargo run --release -p cep-bench --example w5_shards [SHARDS...]`
//! (default `1 2 3 4`; `PASSES=N` sets the rounds, 5: a round times one
//! pass of each count).

use std::time::Instant;

use cep_bench::suite::{runtime_output, sharded_output};
use cep_bench::w1;

/// One pass over `ticks` with `shards` shards; its output.
fn pass(ticks: &[w1::Tick], shards: usize) -> Vec<u8> {
    let mut out = Vec::new();
    match shards {
        1 => runtime_output(ticks, 1, &mut out),
        n => sharded_output(ticks, n, &mut out),
    }
    out
}

/// This thread's CPU time (user and system) in clock ticks, where Linux
/// reports it.
fn thread_cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // After the command name in parentheses: state, then 10 fields, then
    // utime and stime.
    let mut fields = stat.get(stat.rfind(')')? + 2..)?.split(' ').skip(11);
    Some(fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?)
}

fn main() {
    let mut counts: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    if counts.is_empty() {
        counts = vec![1, 2, 3, 4];
    }
    let passes: usize = std::env::var("PASSES").ok().and_then(|p| p.parse().ok()).unwrap_or(5).max(1);
    let ticks: Vec<w1::Tick> = w1::Ticks::new(w1::TICKS).collect();
    let expected = pass(&ticks, 1).iter().filter(|&&b| b == b'\n').count();
    counts.retain(|&s| s > 0);
    // Round after round, one pass per count, so that each count sees the
    // machine as the others do.
    let mut rates = vec![Vec::new(); counts.len()];
    let mut cpu = vec![Vec::new(); counts.len()];
    for _ in 0..passes {
        for ((&shards, rates), cpu) in counts.iter().zip(&mut rates).zip(&mut cpu) {
            let (start, cpu_before) = (Instant::now(), thread_cpu_ticks());
            let out = pass(&ticks, shards);
            rates.push(ticks.len() as f64 / start.elapsed().as_secs_f64());
            if let (Some(before), Some(after)) = (cpu_before, thread_cpu_ticks()) {
                cpu.push((after - before) as f64 * 1e7 / ticks.len() as f64); // 100 ticks a second
            }
            assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), expected, "{shards} shards: matches");
        }
    }
    for ((shards, rates), cpu) in counts.iter().zip(&mut rates).zip(&mut cpu) {
        cpu.sort_by(f64::total_cmp);
        let calling =
            cpu.get(cpu.len() / 2).map_or(String::new(), |ns| format!("; calling thread {ns:.1} ns CPU an event"));
        println!("{shards} shard(s): {}{calling}", cep_bench::median_line(rates));
    }
}

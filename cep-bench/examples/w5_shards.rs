//! W5 with any number of shard threads: rise_spike through
//! `ShardedRunner` with each shard count given (1: the runner alone on this
//! thread), the W1 ticks filled into one reused event as W5 does. It shows
//! whether the runtime's shortfall on two cores is where the scheduler puts
//! the reader and the shards (more shards than cores would then help) or the
//! work the hand-over adds (it would not).
//!
//! `cargo run --release -p cep-bench --example w5_shards [SHARDS...]`
//! (default `1 2 3 4`; `PASSES=N` sets the rounds, 5: a round times one
//! pass of each count).

use std::time::Instant;

use cep_bench::w1;
use cep_core::{Event, Sym};
use cep_nfa::compile::{Options, compile};
use cep_runtime::Runner;
use cep_runtime::shard::ShardedRunner;

fn runner() -> Runner {
    Runner::new(compile(w1::RISE_SPIKE, &mut w1::schema(), &Options::default()).expect("rise_spike").programs)
}

/// One pass over `ticks` with `shards` shards; its output.
fn pass(ticks: &[w1::Tick], shards: usize) -> Vec<u8> {
    let (mut e, tick, mut out) = (Event::default(), Sym::new("Tick"), Vec::new());
    if shards == 1 {
        let (mut r, mut sink) = (runner(), cep_runtime::JsonLines::new(&mut out));
        for t in ticks {
            w1::fill(&mut e, t, tick);
            r.push(&e, &mut sink).expect("in order");
        }
        r.finish(&mut sink).expect("no output to fail");
    } else {
        let mut r = ShardedRunner::new(Runner::new(Vec::new()), (0..shards).map(|_| runner()).collect());
        for t in ticks {
            w1::fill(&mut e, t, tick);
            r.push(&e, &mut out).expect("in order");
        }
        r.finish(&mut out).expect("no output to fail");
    }
    out
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
    for _ in 0..passes {
        for (&shards, rates) in counts.iter().zip(&mut rates) {
            let start = Instant::now();
            let out = pass(&ticks, shards);
            rates.push(ticks.len() as f64 / start.elapsed().as_secs_f64());
            assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), expected, "{shards} shards: matches");
        }
    }
    for (shards, rates) in counts.iter().zip(&mut rates) {
        println!("{shards} shard(s): {}", cep_bench::median_line(rates));
    }
}

//! W1a, engine only: the rise_spike query over the W1 ticks held in memory
//! (no parsing, no generation in the timed loop). Prints events per second,
//! matches and the state of partial matches at the end of the stream.
//!
//! `cargo run --release -p cep-bench --example w1a [TICKS] [RUNS] [BATCH]`
//!
//! `BATCH` events go to [`Engine::push_batch`] at a time (default 8); 1
//! pushes them one by one with [`Engine::push`].

use std::time::Instant;

use cep_bench::w1::{self, RISE_SPIKE, Ticks};
use cep_core::{Event, Sym};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(w1::TICKS);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);
    let batch: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(8).max(1);
    let tick = Sym::new("Tick");
    let events: Vec<Event> = Ticks::new(n)
        .map(|t| {
            let mut e = Event::default();
            w1::fill(&mut e, &t, tick);
            e
        })
        .collect();
    let mut rates = Vec::new();
    for _ in 0..runs {
        let mut schema = w1::schema();
        let prog = compile(RISE_SPIKE, &mut schema, &Options::default()).unwrap().programs.remove(0);
        let mut engine = Engine::new(prog);
        let mut matches = 0usize;
        let start = Instant::now();
        for chunk in events.chunks(batch) {
            if batch == 1 {
                engine.push(&chunk[0]).unwrap();
            } else {
                engine.push_batch(chunk).unwrap();
            }
            while engine.pop().is_some() {
                matches += 1;
            }
        }
        let live = engine.stats();
        engine.finish();
        matches += engine.drain().count();
        let secs = start.elapsed().as_secs_f64();
        rates.push(n as f64 / secs);
        println!(
            "{:.2} M events/s, {matches} matches, {} partials live at the end ({} bytes each), {} nodes",
            n as f64 / secs / 1e6,
            live.partials(),
            live.bytes_per_partial(),
            live.nodes
        );
    }
    println!("{}", cep_bench::median_line(&mut rates));
}

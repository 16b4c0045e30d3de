//! W4, engine only: the SASE+ Kleene query over the W4 stock stream held in
//! memory (no parsing in the timed loop), on the engine `cep run` picks.
//! Prints events per second and matches; for profiles (callgrind) and A/B
//! checks of the engine's per-event path.
//!
//! `cargo run --release -p cep-bench --example w4 [EVENTS] [RUNS]`

use std::time::Instant;

use cep_bench::w4::{self, QUERY, Syms, Trades};
use cep_core::Event;
use cep_nfa::compile::{Options, compile};
use cep_nfa::select::{EngineChoice, QueryEngine};
use cep_nfa::stack::Construction;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(w4::EVENTS);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5).max(1);
    let syms = Syms::new();
    let events: Vec<Event> = Trades::new(n)
        .map(|t| {
            let mut e = Event::default();
            w4::fill(&mut e, &t, &syms);
            e
        })
        .collect();
    let mut rates = Vec::new();
    for _ in 0..runs {
        let prog = compile(QUERY, &mut w4::schema(), &Options::default()).unwrap().programs.remove(0);
        let mut engine = QueryEngine::new(prog, EngineChoice::Auto, Construction::Direct).unwrap();
        let mut matches = 0usize;
        let start = Instant::now();
        for e in &events {
            engine.push(e).unwrap();
            while engine.pop().is_some() {
                matches += 1;
            }
        }
        engine.finish();
        while engine.pop().is_some() {
            matches += 1;
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push(n as f64 / secs);
        println!("{:.2} M events/s, {matches} matches ({:?} engine)", n as f64 / secs / 1e6, engine.kind());
    }
    println!("{}", cep_bench::median_line(&mut rates));
}

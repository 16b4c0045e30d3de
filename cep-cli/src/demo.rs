//! `cep demo`: the embedded default. Generates the W1 ticks (DESIGN.md §3)
//! in memory, runs the rise / spike / quiet query and three others over
//! them, and prints events, matches and events per second per query.

use std::time::Instant;

use cep_bench::w1;
use cep_core::{Event, Sym};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;
use clap::Args;

use crate::Failure;

/// The demo's queries besides rise_spike (LANGUAGE.md §7, [`w1::RISE_SPIKE`]).
pub const OTHER_QUERIES: &str = "
-- Three rising ticks in a row of one key, within 2 minutes.
QUERY rally
PATTERN SEQ(Tick a, Tick b, Tick c)
WHERE strict-contiguity AND [key] AND b.price > a.price AND c.price > b.price
WITHIN 2 min;

-- Two volume spikes of one key within a minute, the second higher priced.
QUERY double_spike
PATTERN SEQ(Tick s1, Tick s2)
WHERE [key] AND s1.vol >= 1000 AND s2.vol >= 1000 AND s2.price > s1.price
WITHIN 1 min;

-- A run of at least three rising ticks, then a fall below where it started.
QUERY run_then_fall
PATTERN SEQ(Tick+ up[], Tick f)
WHERE [key] AND up[i].price > up[i-1].price AND up.LEN >= 3
  AND f.price < up[1].price
WITHIN 30 s;
";

/// Options of `cep demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Number of ticks to generate.
    #[arg(long, default_value_t = w1::TICKS)]
    ticks: usize,
}

/// Runs `cep demo`.
pub fn demo(args: DemoArgs) -> Result<(), Failure> {
    let mut schema = w1::schema();
    let queries = format!("{}\n{OTHER_QUERIES}", w1::RISE_SPIKE);
    let compiled = compile(&queries, &mut schema, &Options::default())
        .map_err(|d| Failure::other(format!("built-in queries: {}", d.render(&queries, "demo"))))?;
    println!("cep demo: {} W1 ticks (10,000 keys, DESIGN.md §3), one thread\n", args.ticks);
    println!(
        "{:<14} {:>10} {:>9} {:>10} {:>10} {:>11}",
        "query", "events", "matches", "events/s", "partials", "bytes each"
    );
    let tick = Sym::new("Tick");
    for program in compiled.programs {
        let name = program.name.clone();
        let mut engine = Engine::new(program);
        let mut e = Event::default();
        let mut matches = 0u64;
        let start = Instant::now();
        for t in w1::Ticks::new(args.ticks) {
            w1::fill(&mut e, &t, tick);
            engine.push(&e).map_err(|l| Failure::other(l.to_string()))?;
            matches += engine.drain().count() as u64;
        }
        let live = engine.stats();
        engine.finish();
        matches += engine.drain().count() as u64;
        let secs = start.elapsed().as_secs_f64();
        let rate = args.ticks as f64 / secs.max(1e-9);
        println!(
            "{name:<14} {:>10} {matches:>9} {:>10} {:>10} {:>11}",
            args.ticks,
            format!("{:.1} M", rate / 1e6),
            live.partials(),
            live.bytes_per_partial()
        );
    }
    println!("\nevents/s include generating the ticks (`cep run` on a CSV adds parsing); partials are the");
    println!("partial matches live at the end of the stream, and bytes each their runs, registers and buffer nodes.");
    Ok(())
}

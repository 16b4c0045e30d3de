//! Project automation: `cargo xtask <command>` (see `xtask/README.md`).
//!
//! - `cargo xtask bench [--quick] [--runs N] [--only TEXT] [--no-rss]`: the
//!   macro workloads of DESIGN.md §3, each engine beside its baseline in
//!   this process, alternating; prints one table and writes
//!   `target/bench/results.json` and SVG charts.
//! - `cargo xtask bench --csv DIR`: writes every workload's stream (and
//!   the query files) to `DIR` instead.
//! - `cargo xtask csv DIR [--ticks N]`: writes the W1 ticks and the
//!   rise_spike query only.
//! - `cargo xtask ais DIR [--vessels N] [--minutes M] [--seed S]`: the
//!   W7 synthetic AIS positions near Brest, the encounter query and a
//!   README (see [`ais`]).
//!
//! The binary's global allocator counts allocations
//! ([`cep_bench::alloc::Counting`]), for the allocations-per-event column.

mod ais;
mod bench;
mod csv;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOC: cep_bench::alloc::Counting = cep_bench::alloc::Counting;

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Project automation for cep.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs the macro benchmarks: one table, results.json and charts under target/bench.
    Bench(bench::Args),
    /// Writes the W1 ticks to DIR/w1.csv and the rise_spike query to DIR/rise_spike.cep.
    Csv {
        /// The directory to write to (created if missing).
        dir: PathBuf,
        /// How many ticks (default: DESIGN.md's 3,000,000).
        #[arg(long, default_value_t = cep_bench::w1::TICKS)]
        ticks: usize,
        /// Also write them as JSON lines, DIR/w1.jsonl (what a Kafka topic carries).
        #[arg(long)]
        jsonl: bool,
    },
    /// Writes synthetic AIS positions near Brest to DIR/ais.csv, the W7 query to DIR/encounter.cep, and DIR/README.txt.
    Ais {
        /// The directory to write to (created if missing).
        dir: PathBuf,
        /// How many vessels.
        #[arg(long, default_value_t = ais::VESSELS)]
        vessels: usize,
        /// How many minutes of traffic (one message per vessel-minute).
        #[arg(long, default_value_t = ais::MINUTES)]
        minutes: u32,
        /// The generator's seed (splitmix64).
        #[arg(long, default_value_t = ais::SEED)]
        seed: u64,
    },
    /// Runs one contender once and prints its peak RSS (used by `bench`).
    #[command(hide = true)]
    BenchOne {
        workload: String,
        contender: String,
        #[arg(long)]
        quick: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::main(&args),
        Command::Csv { dir, ticks, jsonl } => csv::w1(&dir, ticks, jsonl).map(|()| ExitCode::SUCCESS),
        Command::Ais { dir, vessels, minutes, seed } => {
            ais::main(&dir, ais::Params { vessels, minutes, seed }).map(|()| ExitCode::SUCCESS)
        }
        Command::BenchOne { workload, contender, quick } => {
            bench::rss::child(&workload, &contender, quick).map(|()| ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        ExitCode::FAILURE
    })
}

//! `cargo xtask bench`: runs the workloads of [`cep_bench::suite`], prints
//! the table, writes `results.json` and the charts.
//!
//! Per workload ([`runner`]): one warm-up pass of every contender (with
//! match digests, compared across contenders), then `--runs` rounds of one
//! timed pass per contender, alternating; then every contender once more
//! alone in a child process for its peak RSS ([`rss`]). A mismatch of
//! matches between contenders (or with a workload's known count, or
//! between passes) is reported loudly and makes the exit code non-zero;
//! targets are reported, never enforced.

mod chart;
mod progress;
mod report;
pub mod rss;
mod runner;
mod table;
mod w7;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use cep_bench::suite::{self, Scale};

use progress::Progress;

/// Options of `cargo xtask bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Small stream sizes (the whole suite in under two minutes); used by CI.
    #[arg(long)]
    quick: bool,
    /// Timed passes per contender, after one warm-up pass.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Runs only the workloads whose name contains TEXT (e.g. `W1a`, `W2`).
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
    /// Skips the peak-RSS child processes.
    #[arg(long)]
    no_rss: bool,
    /// Writes every workload's stream as CSV (and the queries) into DIR instead of benchmarking.
    #[arg(long, value_name = "DIR")]
    csv: Option<PathBuf>,
    /// Where results.json and the charts go (default: target/bench of the workspace).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

fn scale(quick: bool) -> Scale {
    if quick { Scale::Quick } else { Scale::Full }
}

/// The workspace's `target/bench` (or `$CARGO_TARGET_DIR/bench`).
fn default_out() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).join("target"));
    target.join("bench")
}

/// `cargo xtask bench`.
pub fn main(args: &Args) -> Result<ExitCode, String> {
    if let Some(dir) = &args.csv {
        crate::csv::all(dir)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !cep_bench::alloc::installed() {
        return Err("the counting allocator is not installed".into());
    }
    let started = Instant::now();
    let scale = scale(args.quick);
    let workloads: Vec<_> = suite::workloads(scale)
        .into_iter()
        .filter(|w| args.only.as_deref().is_none_or(|o| w.name.contains(o)))
        .collect();
    let w7_parts = w7::selected(args.only.as_deref());
    if workloads.is_empty() && w7_parts.is_empty() {
        return Err(format!("no workload matches `{}`", args.only.as_deref().unwrap_or("")));
    }
    let mut bins = Vec::new();
    if workloads.iter().any(|w| w.name == "W5-cli") || w7_parts.contains(&"W7 http") {
        bins.push("cep");
    }
    if w7_parts.contains(&"W7 http") {
        bins.push("cep-geo");
    }
    if !bins.is_empty() {
        build_bins(&bins)?;
    }
    let out = args.out.clone().unwrap_or_else(default_out);
    if workloads.is_empty() {
        // Only W7: its own table and files.
        let o = w7::run(&w7_parts, args.quick, args.runs as usize, &out)?;
        return Ok(exit(o.failures.iter().map(|f| ("W7", f))));
    }
    let runs = args.runs as usize;
    let passes: usize = workloads.iter().map(|w| w.contenders.len() * (runs + 1 + usize::from(!args.no_rss))).sum();
    let progress = Progress::new(passes as u64);
    let mut results = Vec::new();
    for w in &workloads {
        let t = Instant::now();
        let mut r = runner::run(w, runs, &progress);
        if !args.no_rss {
            rss::measure_all(w, args.quick, &mut r, &progress);
        }
        progress.log(&format!(
            "{:<26} {} contender(s), {} pass(es) each: {:.1} s{}",
            w.name,
            w.contenders.len(),
            runs + 1,
            t.elapsed().as_secs_f64(),
            if r.failures.is_empty() { "" } else { "  MISMATCH" }
        ));
        results.push(r);
    }
    progress.finish();

    let rows = table::rows(&workloads, &results);
    println!("{}", table::render(&rows));
    println!();
    for w in &workloads {
        println!("- {}: {}", w.name, w.description);
    }
    for r in rows.iter().filter(|r| r.setup_items.is_some()) {
        println!("{}", table::setup_line(r));
    }
    for line in rows.iter().filter_map(table::latency_line) {
        println!("{line}");
    }
    for line in table::ceiling_lines(&rows) {
        println!("{line}");
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let elapsed = started.elapsed().as_secs_f64();
    let report = report::Report::new(args.quick, runs, elapsed, &workloads, &results, rows);
    let json = out.join("results.json");
    report.write(&json)?;
    println!();
    println!("{} ({} run(s) per contender after a warm-up, {elapsed:.0} s)", report.machine.summary(), runs);
    println!("wrote {}", json.display());
    for written in chart::all(&out, &workloads, &report.rows) {
        match written {
            Ok(path) => println!("wrote {}", path.display()),
            Err(note) => println!("note: {note}"),
        }
    }

    let w7_failures = if w7_parts.is_empty() {
        Vec::new()
    } else {
        println!();
        w7::run(&w7_parts, args.quick, runs, &out)?.failures
    };
    let failures = results
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| (r.name.as_str(), f)))
        .chain(w7_failures.iter().map(|f| ("W7", f)));
    Ok(exit(failures))
}

/// Success, or every disagreement on stderr and failure.
fn exit<'a>(failures: impl Iterator<Item = (&'a str, &'a String)>) -> ExitCode {
    let failures: Vec<_> = failures.collect();
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!();
    eprintln!("error: matches differ — an engine or a baseline is wrong:");
    for (w, f) in failures {
        eprintln!("  {w}: {f}");
    }
    ExitCode::FAILURE
}

/// Builds the release binaries `bins` beside this one (W5-cli runs `cep`,
/// W7 http `cep` and `cep-geo`), saying so first: with cargo's output
/// quiet, a build that takes minutes would otherwise look like a hang.
/// `--workspace --bin cep` resolves features as `cargo build --release
/// --bin cep` and this program's own build do (`-p cep-cli` would not), so
/// cargo reuses what they built.
fn build_bins(bins: &[&str]) -> Result<(), String> {
    let mut args = vec!["build", "--release", "--quiet", "--workspace"];
    for b in bins {
        args.extend(["--bin", b]);
    }
    eprintln!(
        "building the release binaries {} for W5-cli / W7 http (cargo {}; quick when up to date)",
        bins.join(", "),
        args.join(" ")
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(&args)
        .status()
        .map_err(|e| format!("cannot run cargo to build {}: {e}", bins.join(", ")))?;
    if !status.success() {
        return Err(format!("building {} failed: {status}", bins.join(", ")));
    }
    Ok(())
}

//! W7, the maritime experiment (DESIGN.md §3, issue 38 part 7): three
//! parts that do not fit the suite's one-stream, several-contenders shape,
//! so they have their own runner, table and charts.
//!
//! - `W7 grid` ([`grid`]): the encounter query in-process over the
//!   synthetic AIS positions, `near` answered by a simulated service, over
//!   communication delay × evaluation delay × true ratio, blocking, lazy
//!   and auto, beside the paper's max curve;
//! - `W7 http` ([`http`]): the same query through the `cep` binary
//!   against `cep-geo serve` on loopback, blocking and lazy: events/s
//!   reading a file, and event-to-match latency (p50, p99, max; blocking,
//!   lazy and auto) with the rows piped in at a fixed rate ([`paced`]);
//! - `W7 scale` ([`scale`]): Wayeb's scalability run, 1, 10 and 100
//!   speed-violation patterns, execution time over stream time.
//!
//! `--only` picks parts by name as it picks workloads (`--only W7` runs
//! all three). The results go to `w7.md` (the tables, as printed) and
//! `w7.json` beside `results.json`, and the grid's charts to
//! `w7_ratio_*.svg`.

mod chart;
mod grid;
mod http;
mod paced;
mod scale;

use std::path::Path;

use cep_bench::w7::AisRow;
use serde::Serialize;

use crate::ais;

/// The parts' names, as `--only` matches them.
pub const PARTS: [&str; 3] = ["W7 grid", "W7 http", "W7 scale"];

/// The parts `only` selects (all when it is `None`).
pub fn selected(only: Option<&str>) -> Vec<&'static str> {
    PARTS.into_iter().filter(|p| only.is_none_or(|o| p.contains(o))).collect()
}

/// The AIS fleet of a run: `cargo xtask ais`'s defaults (5,000 vessels,
/// one hour, seed 4: 300,000 rows) for the full run; 500 vessels for ten
/// minutes (5,000 rows) for `--quick`.
fn fleet(quick: bool) -> ais::Fleet {
    let (vessels, minutes) = if quick { (500, 10) } else { (ais::VESSELS, ais::MINUTES) };
    ais::generate(ais::Params { vessels, minutes, seed: ais::SEED })
}

fn rows(fleet: &ais::Fleet) -> Vec<AisRow> {
    fleet.rows.iter().map(|r| AisRow { ts: r.ts, mmsi: r.mmsi, lat: r.lat, lon: r.lon, speed: r.speed }).collect()
}

/// Everything W7 measured, as `w7.json` holds it.
#[derive(Debug, Default, Serialize)]
pub struct Outcome {
    pub grid: Vec<grid::CellResult>,
    pub http: Option<http::HttpResult>,
    pub scale: Vec<scale::ScaleResult>,
    /// Disagreements between modes (the command exits non-zero).
    pub failures: Vec<String>,
    #[serde(skip)]
    pub markdown: String,
}

/// Runs the `parts`, prints their tables and writes the files into `out`.
pub fn run(parts: &[&str], quick: bool, runs: usize, out: &Path) -> Result<Outcome, String> {
    let started = std::time::Instant::now();
    let fleet = fleet(quick);
    let all = rows(&fleet);
    let mut o = Outcome::default();
    let mut md = String::new();
    if parts.contains(&"W7 grid") {
        let t = std::time::Instant::now();
        o.grid = grid::run(&all, quick, runs, &mut o.failures);
        md.push_str(&grid::markdown(&o.grid));
        eprintln!("W7 grid: {} cells, {:.1} s", o.grid.len(), t.elapsed().as_secs_f64());
    }
    if parts.contains(&"W7 http") {
        let t = std::time::Instant::now();
        let r = http::run(quick, &mut o.failures)?;
        md.push_str(&http::markdown(&r));
        o.http = Some(r);
        eprintln!("W7 http: {:.1} s", t.elapsed().as_secs_f64());
    }
    if parts.contains(&"W7 scale") {
        let t = std::time::Instant::now();
        o.scale = scale::run(&all, quick, runs);
        md.push_str(&scale::markdown(&o.scale));
        eprintln!("W7 scale: {:.1} s", t.elapsed().as_secs_f64());
    }
    println!("{md}");
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let write = |name: &str, text: &str| {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
        Ok::<(), String>(())
    };
    write("w7.md", &md)?;
    write("w7.json", &serde_json::to_string_pretty(&o).map_err(|e| e.to_string())?)?;
    if !o.grid.is_empty() {
        for written in chart::all(out, &o.grid) {
            match written {
                Ok(path) => println!("wrote {}", path.display()),
                Err(note) => println!("note: {note}"),
            }
        }
    }
    println!("W7 ({}): {:.0} s", if quick { "quick" } else { "full" }, started.elapsed().as_secs_f64());
    o.markdown = md;
    Ok(o)
}

/// Events per second in the table's units (`k`, `M`).
fn rate(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_picks_parts() {
        assert_eq!(selected(None), PARTS);
        assert_eq!(selected(Some("W7")), PARTS);
        assert_eq!(selected(Some("W7 http")), ["W7 http"]);
        assert!(selected(Some("W1a")).is_empty());
    }

    #[test]
    fn rates_read() {
        assert_eq!(rate(1_234_567.0), "1.23 M");
        assert_eq!(rate(12_345.0), "12.3 k");
        assert_eq!(rate(f64::INFINITY), "—");
    }
}

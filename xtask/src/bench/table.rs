//! The table: one row per workload and contender, as a Markdown table (so
//! it pastes into the README as it is).

use cep_bench::suite::{Baseline, Workload};
use serde::Serialize;

use super::runner::{Outcome, median};

/// One row of the table (and of `results.json`).
#[derive(Debug, Serialize)]
pub struct Row {
    pub workload: String,
    pub engine: String,
    pub events: u64,
    /// Median events/s over the timed passes.
    pub median_events_per_sec: f64,
    pub min_events_per_sec: f64,
    pub max_events_per_sec: f64,
    /// Every timed pass, in run order.
    pub runs_events_per_sec: Vec<f64>,
    pub median_matches_per_sec: f64,
    /// Median events/s over the baseline's (a contender's median, or a fixed rate).
    pub ratio: Option<f64>,
    /// This row is the workload's baseline contender.
    pub reference: bool,
    pub target: String,
    /// Whether the target holds (`None`: nothing to check, or the reference row).
    pub target_holds: Option<bool>,
    pub matches: u64,
    /// Hash of the multiset of matches (from the warm-up pass).
    pub digest: Option<String>,
    /// The matches differ from another contender's (or from the known count).
    pub mismatch: bool,
    pub allocs_per_event: f64,
    /// Peak RSS of the contender alone in a child process (includes the stream).
    pub peak_rss_mb: Option<f64>,
    /// Live partial matches at the end of the stream (engines only).
    pub partials_at_end: Option<usize>,
    pub bytes_per_partial: Option<usize>,
    /// Standing queries (level alerts) registered before the stream.
    pub setup_items: Option<u64>,
    /// Seconds to register them (warm-up pass).
    pub setup_seconds: Option<f64>,
    /// Heap bytes per registered query afterwards.
    pub setup_bytes_per_item: Option<f64>,
    /// Paced workloads: event-to-match latency over the timed passes.
    pub latency: Option<LatencyRow>,
}

/// A paced row's latency: medians over the timed passes, with the p99's
/// min–max.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LatencyRow {
    pub rate: f64,
    pub matches: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p99_min_us: f64,
    pub p99_max_us: f64,
    pub max_us: f64,
}

impl LatencyRow {
    /// From the timed passes (`None` if they measured no latency).
    fn of(passes: &[cep_bench::suite::Pass]) -> Option<LatencyRow> {
        let l: Vec<_> = passes.iter().filter_map(|p| p.latency).collect();
        let first = l.first()?;
        let us = |f: fn(&cep_bench::suite::Latency) -> f64| -> Vec<f64> { l.iter().map(|x| f(x) * 1e6).collect() };
        let p99 = us(|x| x.p99);
        Some(LatencyRow {
            rate: first.rate,
            matches: first.matches,
            p50_us: median(&us(|x| x.p50)),
            p99_us: median(&p99),
            p99_min_us: p99.iter().copied().fold(f64::INFINITY, f64::min),
            p99_max_us: p99.iter().copied().fold(0.0, f64::max),
            max_us: median(&us(|x| x.max)),
        })
    }
}

/// `- W5-latency 2 threads at 1,000,000 events/s: p50 512 µs, p99 1,040 µs (980–1,100), max 1,200 µs; 150 matches`.
pub fn latency_line(r: &Row) -> Option<String> {
    let l = r.latency?;
    let us = |x: f64| if x >= 100.0 { thousands(x.round() as u64) } else { format!("{x:.1}") };
    Some(format!(
        "- {} {} at {} events/s: event-to-match latency p50 {} µs, p99 {} µs ({}–{}), max {} µs (medians of the runs); {} matches",
        r.workload,
        r.engine,
        thousands(l.rate as u64),
        us(l.p50_us),
        us(l.p99_us),
        us(l.p99_min_us),
        us(l.p99_max_us),
        us(l.max_us),
        thousands(l.matches)
    ))
}

/// For a workload with a ceiling contender ([`cep_bench::suite::CEILING`]:
/// what two threads give on this host at that moment), each other
/// contender's ratio as a share of the ceiling's: `- W5-cli 2 threads: 90 %
/// of the ceiling (1.42× against 1.57×)`. The ratios follow the host; the
/// share says how close the runtime comes to what the host gave.
pub fn ceiling_lines(rows: &[Row]) -> Vec<String> {
    let mut lines = Vec::new();
    for ceiling in rows.iter().filter(|r| r.engine == cep_bench::suite::CEILING) {
        let Some(top) = ceiling.ratio.filter(|&t| t > 0.0) else { continue };
        for r in rows.iter().filter(|r| r.workload == ceiling.workload && !r.reference && r.engine != ceiling.engine) {
            let Some(ratio) = r.ratio else { continue };
            lines.push(format!(
                "- {} {}: {:.0} % of the ceiling ({ratio:.2}× against {top:.2}×)",
                r.workload,
                r.engine,
                100.0 * ratio / top
            ));
        }
    }
    lines
}

/// The rows of all workloads.
pub fn rows(workloads: &[Workload], results: &[Outcome]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (w, r) in workloads.iter().zip(results) {
        let summaries: Vec<_> = r.contenders.iter().map(|m| m.summary()).collect();
        let reference = match w.baseline {
            Baseline::Contender(name) => r.contenders.iter().position(|m| m.name == name).map(|i| summaries[i].median),
            Baseline::Rate { events_per_sec, .. } => Some(events_per_sec),
            Baseline::None => None,
        };
        for (m, s) in r.contenders.iter().zip(&summaries) {
            let is_ref = w.baseline == Baseline::Contender(m.name);
            let ratio = reference.map(|b| s.median / b);
            rows.push(Row {
                workload: w.name.clone(),
                engine: m.name.to_owned(),
                events: m.warm.events,
                median_events_per_sec: s.median,
                min_events_per_sec: s.min,
                max_events_per_sec: s.max,
                runs_events_per_sec: m.passes.iter().map(|p| p.events as f64 / p.seconds).collect(),
                median_matches_per_sec: s.matches_per_sec,
                ratio,
                reference: is_ref,
                target: if is_ref { "reference".into() } else { w.target.text.clone() },
                target_holds: if is_ref { None } else { w.target.check.holds(m.name, s.median, ratio) },
                matches: m.warm.matches,
                digest: m.warm.digest.map(|d| format!("{d:016x}")),
                mismatch: !r.failures.is_empty(),
                allocs_per_event: s.allocs_per_event,
                peak_rss_mb: m.rss_kb.map(|kb| kb as f64 / 1024.0),
                partials_at_end: m.warm.partials.map(|p| p.live),
                bytes_per_partial: m.warm.partials.map(|p| p.bytes_each),
                setup_items: m.warm.setup.map(|s| s.items),
                setup_seconds: m.warm.setup.map(|s| s.seconds),
                setup_bytes_per_item: m.warm.setup.filter(|s| s.bytes > 0).map(|s| s.bytes as f64 / s.items as f64),
                latency: LatencyRow::of(&m.passes),
            });
        }
    }
    rows
}

/// `- W1b cep-index: 1,000,000 alerts registered in 0.42 s; 111 bytes each`.
pub fn setup_line(r: &Row) -> String {
    let items = r.setup_items.unwrap_or(0);
    let bytes = r.setup_bytes_per_item.map_or_else(|| "bytes not counted".to_owned(), |b| format!("{b:.0} bytes each"));
    format!(
        "- {} {}: {} standing queries registered in {:.2} s; {bytes}",
        r.workload,
        r.engine,
        thousands(items),
        r.setup_seconds.unwrap_or(0.0)
    )
}

/// `12.3 M`, `850 k`, `42`.
pub fn rate(x: f64) -> String {
    let (v, unit) = scaled(x);
    format!("{} {unit}", digits(v)).trim_end().to_owned()
}

fn scaled(x: f64) -> (f64, &'static str) {
    if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    }
}

/// Three significant digits, or the integer part when larger.
fn digits(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `51.2 M (49.8–52.0)`: the median with the min–max in the median's unit.
fn spread(median: f64, min: f64, max: f64) -> String {
    let (_, unit) = scaled(median);
    let div = match unit {
        "G" => 1e9,
        "M" => 1e6,
        "k" => 1e3,
        _ => 1.0,
    };
    format!("{} {unit} ({}–{})", digits(median / div), digits(min / div), digits(max / div)).replace("  ", " ")
}

fn thousands(n: u64) -> String {
    cep_bench::suite::thousands(n as usize)
}

fn allocs(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x < 0.01 {
        format!("{x:.1e}")
    } else {
        format!("{x:.2}")
    }
}

/// The cells of a row, in column order.
fn cells(r: &Row) -> [String; 10] {
    [
        r.workload.clone(),
        r.engine.clone(),
        spread(r.median_events_per_sec, r.min_events_per_sec, r.max_events_per_sec),
        rate(r.median_matches_per_sec),
        match (r.ratio, r.reference) {
            (_, true) => "1 (ref)".into(),
            (Some(x), false) => format!("{}×", digits(x)),
            (None, false) => "—".into(),
        },
        r.target.clone(),
        match r.target_holds {
            Some(true) => "yes".into(),
            Some(false) => "NO".into(),
            None => String::new(),
        },
        if r.mismatch { format!("{} MISMATCH", thousands(r.matches)) } else { thousands(r.matches) },
        allocs(r.allocs_per_event),
        r.peak_rss_mb.map_or_else(|| "—".into(), |mb| format!("{mb:.0} MB")),
    ]
}

const HEADER: [&str; 10] = [
    "workload",
    "engine",
    "events/s median (min–max)",
    "matches/s",
    "ratio",
    "target",
    "holds",
    "matches",
    "allocs/event",
    "peak RSS",
];

/// Right-aligned columns (numbers).
const RIGHT: [bool; 10] = [false, false, true, true, true, false, false, true, true, true];

/// The Markdown table, columns padded.
pub fn render(rows: &[Row]) -> String {
    let body: Vec<[String; 10]> = rows.iter().map(cells).collect();
    let mut width = HEADER.map(|h| h.chars().count());
    for cells in &body {
        for (w, c) in width.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(width)
            .zip(RIGHT)
            .map(|((c, w), right)| {
                let pad = " ".repeat(w - c.chars().count());
                if right { format!("{pad}{c}") } else { format!("{c}{pad}") }
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let mut out = vec![line(&HEADER.map(String::from))];
    out.push(format!(
        "|{}|",
        width
            .iter()
            .zip(RIGHT)
            .map(|(&w, right)| if right { format!("{}:", "-".repeat(w + 1)) } else { "-".repeat(w + 2) })
            .collect::<Vec<_>>()
            .join("|")
    ));
    out.extend(body.iter().map(|c| line(c)));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload with a ceiling gets a line per other contender, the
    /// reference and the ceiling itself excepted; others get none.
    #[test]
    fn shares_of_the_ceiling() {
        let row = |workload: &str, engine: &str, ratio: f64, reference: bool| Row {
            workload: workload.into(),
            engine: engine.into(),
            events: 1,
            median_events_per_sec: ratio,
            min_events_per_sec: ratio,
            max_events_per_sec: ratio,
            runs_events_per_sec: vec![ratio],
            median_matches_per_sec: 0.0,
            ratio: Some(ratio),
            reference,
            target: String::new(),
            target_holds: None,
            matches: 0,
            digest: None,
            mismatch: false,
            allocs_per_event: 0.0,
            peak_rss_mb: None,
            partials_at_end: None,
            bytes_per_partial: None,
            setup_items: None,
            setup_seconds: None,
            setup_bytes_per_item: None,
            latency: None,
        };
        let rows = [
            row("W5-cli", "1 thread", 1.0, true),
            row("W5-cli", "2 threads", 1.42, false),
            row("W5-cli", cep_bench::suite::CEILING, 1.6, false),
            row("W1a", "cep", 0.5, false),
        ];
        assert_eq!(ceiling_lines(&rows), ["- W5-cli 2 threads: 89 % of the ceiling (1.42× against 1.60×)"]);
    }

    #[test]
    fn numbers() {
        assert_eq!(rate(51_234_000.0), "51.2 M");
        assert_eq!(rate(850_000.0), "850 k");
        assert_eq!(rate(42.0), "42.0");
        assert_eq!(spread(51.2e6, 49.8e6, 52.0e6), "51.2 M (49.8–52.0)");
        assert_eq!(thousands(759_291), "759,291");
        assert_eq!(allocs(0.0), "0");
        assert_eq!(allocs(0.0004), "4.0e-4");
        assert_eq!(allocs(2.0), "2.00");
    }
}

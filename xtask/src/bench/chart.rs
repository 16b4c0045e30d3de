//! Charts with plotters' SVG backend: `events_per_sec.svg` (every row of
//! the table as a bar) and `w2_ratio.svg` (W2's rates against the window).
//! PNG copies come from `rsvg-convert` where it is installed (plotters'
//! bitmap backend would need system fonts); without it they are skipped
//! with a note.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

use cep_bench::suite::Workload;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::table::{Row, rate};

type Drawn = Result<(), Box<dyn Error>>;

const CEP: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const BASELINE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const BAD: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const PALETTE: [RGBColor; 4] = [CEP, BASELINE, RGBColor(0x2c, 0xa0, 0x2c), RGBColor(0x94, 0x67, 0xbd)];

/// Writes the charts into `dir`; per file, its path or why it was skipped.
pub fn all(dir: &Path, workloads: &[Workload], rows: &[Row]) -> Vec<Result<PathBuf, String>> {
    let mut out = Vec::new();
    let mut svg = |name: &str, draw: &dyn Fn(&Path) -> Drawn| {
        let path = dir.join(name);
        match draw(&path) {
            Ok(()) => {
                out.push(Ok(path.clone()));
                out.push(png(&path));
            }
            Err(e) => out.push(Err(format!("{}: {e}", path.display()))),
        }
    };
    svg("events_per_sec.svg", &|p| events_per_sec(p, rows));
    if workloads.iter().any(|w| w.series.is_some()) {
        svg("w2_ratio.svg", &|p| w2_rates(p, workloads, rows));
    }
    out
}

/// A PNG beside `svg`, through `rsvg-convert`.
fn png(svg: &Path) -> Result<PathBuf, String> {
    let png = svg.with_extension("png");
    match Command::new("rsvg-convert").arg("-o").arg(&png).arg(svg).output() {
        Ok(o) if o.status.success() => Ok(png),
        Ok(o) => Err(format!("PNG skipped: rsvg-convert failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(_) => Err(format!(
            "PNG of {} skipped: no rsvg-convert (Debian: librsvg2-bin); the SVG is complete",
            svg.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        )),
    }
}

/// Powers of ten around `lo..hi`, for a log axis.
fn decades(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let lo = 10f64.powf(lo.max(1.0).log10().floor());
    let hi = 10f64.powf(hi.max(10.0).log10().ceil());
    lo..hi
}

fn events_per_sec(path: &Path, rows: &[Row]) -> Drawn {
    let n = rows.len();
    let root = SVGBackend::new(path, (1100, 90 + 24 * n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let lo = rows.iter().map(|r| r.min_events_per_sec).fold(f64::INFINITY, f64::min);
    let hi = rows.iter().map(|r| r.max_events_per_sec).fold(0.0, f64::max);
    let x = decades(lo, hi);
    let x0 = x.start;
    // Row 0 at the top: segment n - 1 - i.
    let seg = |i: usize| n - 1 - i;
    let labels: Vec<String> = rows.iter().map(|r| format!("{} · {}", r.workload, r.engine)).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption("events/s per workload and engine (median; whisker: min–max; log scale)", ("sans-serif", 18))
        .margin(12)
        .margin_right(40)
        .x_label_area_size(40)
        .y_label_area_size(250)
        .build_cartesian_2d(x.log_scale(), (0..n).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) if *i < n => labels[n - 1 - *i].clone(),
            _ => String::new(),
        })
        .x_label_formatter(&|v| rate(*v))
        .x_desc("events/s")
        .draw()?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        let color = if r.mismatch {
            BAD
        } else if r.engine.starts_with("cep") {
            CEP
        } else {
            BASELINE
        };
        let mut bar = Rectangle::new(
            [(x0, SegmentValue::Exact(seg(i))), (r.median_events_per_sec, SegmentValue::Exact(seg(i) + 1))],
            color.filled(),
        );
        bar.set_margin(4, 4, 0, 0);
        bar
    }))?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        PathElement::new(
            vec![
                (r.min_events_per_sec, SegmentValue::CenterOf(seg(i))),
                (r.max_events_per_sec, SegmentValue::CenterOf(seg(i))),
            ],
            BLACK.stroke_width(2),
        )
    }))?;
    root.present()?;
    Ok(())
}

/// A W2 point: (window, value).
type Point = (i64, f64);

/// Per W2 series and contender, its points: `pick` reads a row.
fn w2_points(workloads: &[Workload], rows: &[Row], pick: impl Fn(&Row) -> Option<f64>) -> BTreeMap<String, Vec<Point>> {
    let mut series: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    for w in workloads {
        let Some(s) = &w.series else { continue };
        for r in rows.iter().filter(|r| r.workload == w.name) {
            if let Some(v) = pick(r) {
                series.entry(format!("{}, {}", s.name, r.engine)).or_default().push((s.window, v));
            }
        }
    }
    series
}

/// Left: batch / per-event ratio against the window, ours (lines) and the
/// paper's (crosses); right: matches/s of every contender.
fn w2_rates(path: &Path, workloads: &[Workload], rows: &[Row]) -> Drawn {
    let ratios = w2_points(workloads, rows, |r| r.ratio.filter(|_| r.engine == "stack batch"));
    let mut paper: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    for w in workloads {
        if let Some(s) = &w.series
            && let Some(p) = s.paper
        {
            paper.entry(format!("{}, paper", s.name)).or_default().push((s.window, p));
        }
    }
    let rates = w2_points(workloads, rows, |r| Some(r.median_matches_per_sec));
    let root = SVGBackend::new(path, (1300, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "W2: aggregated-link batches against per-event construction (stack engine), with the paper's figures",
        ("sans-serif", 18),
    )?;
    let (left, right) = root.split_horizontally(650);
    let all: Vec<Point> = ratios.values().chain(rates.values()).flatten().copied().collect();
    let (wlo, whi) = (all.iter().map(|p| p.0).min().unwrap_or(0) - 50, all.iter().map(|p| p.0).max().unwrap_or(1) + 50);

    let top = ratios.values().chain(paper.values()).flatten().map(|p| p.1).fold(1.0, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(&left)
        .caption("batch / per-event (events/s)", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(wlo..whi, 0.0..top)?;
    chart.configure_mesh().x_desc("window (events)").y_desc("ratio").draw()?;
    for (k, (name, points)) in ratios.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(name.replace(", stack batch", ", ours"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        let paper_name = name.replace(", stack batch", ", paper");
        if let Some(pts) = paper.get(&paper_name) {
            chart
                .draw_series(pts.iter().map(|&p| Cross::new(p, 7, color.stroke_width(2))))?
                .label(paper_name)
                .legend(move |(x, y)| Cross::new((x + 10, y), 5, color.stroke_width(2)));
        }
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;

    let values: Vec<f64> = rates.values().flatten().map(|p| p.1).collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(&right)
        .caption("matches/s", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(wlo..whi, decades(lo, hi).log_scale())?;
    chart.configure_mesh().x_desc("window (events)").y_desc("matches/s").y_label_formatter(&|v| rate(*v)).draw()?;
    for (k, (name, points)) in rates.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

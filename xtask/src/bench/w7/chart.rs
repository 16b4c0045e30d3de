//! The grid's charts, laid out as the paper's figures 8–10: one SVG per
//! true ratio (`w7_ratio_0.1.svg`, …), one panel per communication delay,
//! events/s (log) against the evaluation delay, a line per mode and the
//! max curve. The delays are the grid's few values, so the x axis is their
//! rank, labelled with the value (a log axis has no place for 0).

use std::error::Error;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::grid::{CellResult, MODES};
use super::rate;

const COLORS: [RGBColor; 3] = [RGBColor(0xff, 0x7f, 0x0e), RGBColor(0x1f, 0x77, 0xb4), RGBColor(0x2c, 0xa0, 0x2c)];

fn delay(us: u64) -> String {
    match us {
        0 => "0".into(),
        v if v % 1000 == 0 => format!("{} ms", v / 1000),
        v => format!("{v} µs"),
    }
}

/// Writes one chart per true ratio into `dir`.
pub fn all(dir: &Path, cells: &[CellResult]) -> Vec<Result<PathBuf, String>> {
    let mut ratios: Vec<f64> = cells.iter().map(|c| c.ratio).collect();
    ratios.dedup();
    ratios
        .into_iter()
        .map(|ratio| {
            let path = dir.join(format!("w7_ratio_{ratio}.svg"));
            let mine: Vec<&CellResult> = cells.iter().filter(|c| c.ratio == ratio).collect();
            draw(&path, ratio, &mine).map(|()| path.clone()).map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

fn draw(path: &Path, ratio: f64, cells: &[&CellResult]) -> Result<(), Box<dyn Error>> {
    let mut comms: Vec<u64> = cells.iter().map(|c| c.comm_us).collect();
    comms.sort_unstable();
    comms.dedup();
    let mut evals: Vec<u64> = cells.iter().map(|c| c.eval_us).collect();
    evals.sort_unstable();
    evals.dedup();
    let values: Vec<f64> = cells
        .iter()
        .flat_map(|c| c.events_per_sec.iter().copied().chain([c.max_curve]))
        .filter(|v| v.is_finite())
        .collect();
    let lo = 10f64.powf(values.iter().copied().fold(f64::INFINITY, f64::min).max(1.0).log10().floor());
    let hi = 10f64.powf(values.iter().copied().fold(10.0, f64::max).log10().ceil());
    let root = SVGBackend::new(path, (420 * comms.len() as u32, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        &format!("W7: encounter query, true ratio {ratio}: events/s against evaluation delay (log scale)"),
        ("sans-serif", 18),
    )?;
    let panels = root.split_evenly((1, comms.len()));
    let x_max = evals.len().saturating_sub(1) as f64;
    for (panel, &comm) in panels.iter().zip(&comms) {
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("communication delay {}", delay(comm)), ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.2..x_max + 0.2, (lo..hi).log_scale())?;
        chart
            .configure_mesh()
            .x_labels(evals.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    evals.get(i as usize).map_or_else(String::new, |&e| delay(e))
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| rate(*v))
            .x_desc("evaluation delay")
            .y_desc("events/s")
            .draw()?;
        let line = |pick: &dyn Fn(&CellResult) -> f64| -> Vec<(f64, f64)> {
            evals
                .iter()
                .enumerate()
                .filter_map(|(i, &e)| {
                    let c = cells.iter().find(|c| c.comm_us == comm && c.eval_us == e)?;
                    let v = pick(c);
                    v.is_finite().then_some((i as f64, v))
                })
                .collect()
        };
        for (m, (_, name)) in MODES.iter().enumerate() {
            let color = COLORS[m];
            let points = line(&|c| c.events_per_sec[m]);
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        let max = line(&|c| c.max_curve);
        chart
            .draw_series(LineSeries::new(max.clone(), BLACK.stroke_width(1)))?
            .label("max curve 1/(comm+eval)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
        chart.draw_series(max.iter().map(|&p| Cross::new(p, 5, BLACK.stroke_width(1))))?;
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}

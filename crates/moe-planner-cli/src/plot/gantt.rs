//! The all-to-all timetable as a Gantt chart: one row per sending GPU, one panel per schedule,
//! all panels on the same time axis, with the lower bound marked.

use std::path::Path;

use moe_planner::alltoall_sched::Algorithm;
use moe_planner::schedule::{SchedulePlan, ScheduleSpec, plan_schedule};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::heatmap::cell_label;
use super::{LABEL_FONT, TITLE_FONT, axis_max, colour, draw_err, svg_root};
use crate::error::CliError;

/// Width of the chart in pixels.
const WIDTH: u32 = 1000;
/// Bars narrower than this many pixels carry no destination number.
const MIN_LABEL_PX: f64 = 16.0;

/// Draws `plans` (label, schedule of the same matrix) one above the other.
pub(crate) fn write(
    path: &Path,
    title: &str,
    plans: &[(&str, &SchedulePlan)],
) -> Result<(), CliError> {
    let gpus = plans
        .iter()
        .flat_map(|(_, p)| p.transfers.iter().map(|t| t.src.max(t.dst) + 1))
        .max()
        .unwrap_or(1);
    // Pixel sizes: saturate rather than wrap (the library caps GPUs far below u32::MAX).
    let gpus_px = u32::try_from(gpus).unwrap_or(u32::MAX);
    let panels = u32::try_from(plans.len().max(1)).unwrap_or(u32::MAX);
    let row_px = (400 / gpus_px).clamp(8, 28);
    let panel_px = row_px.saturating_mul(gpus_px).saturating_add(110);
    let height = panel_px.saturating_mul(panels).saturating_add(50);
    let root = svg_root(path, (WIDTH, height));
    let err = draw_err(path);
    let body = root.titled(title, TITLE_FONT).map_err(&err)?;
    let x_max_ms = axis_max(plans.iter().map(|(_, p)| p.makespan_s * 1e3), 1e-9) * 1.02;
    for ((label, plan), area) in plans.iter().zip(body.split_evenly((plans.len().max(1), 1))) {
        panel(&area, label, plan, gpus, x_max_ms).map_err(&err)?;
    }
    root.present().map_err(&err)
}

type DrawResult<T = ()> = Result<T, DrawingAreaErrorKind<std::io::Error>>;

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    label: &str,
    plan: &SchedulePlan,
    gpus: usize,
    x_max_ms: f64,
) -> DrawResult {
    let caption = format!(
        "{label}: makespan {:.3} ms = {:.3}x the lower bound {:.3} ms (dashed line)",
        plan.makespan_s * 1e3,
        plan.ratio_to_bound,
        plan.lower_bound_s * 1e3
    );
    let rows = gpus as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, LABEL_FONT)
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max_ms, (rows - 0.5)..-0.5)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(gpus.min(16))
        .y_label_formatter(&|y| gpu_label(*y, gpus))
        .x_desc("time (ms); bar colour and number = destination GPU")
        .y_desc("sending GPU")
        .axis_desc_style(LABEL_FONT)
        .draw()?;
    let plot_px = f64::from(chart.plotting_area().dim_in_pixel().0);
    chart.draw_series(plan.transfers.iter().map(|t| {
        let (x0, x1) = (t.start_s * 1e3, t.end_s * 1e3);
        let y = t.src as f64;
        Rectangle::new(
            [(x0, y - 0.4), (x1, y + 0.4)],
            colour(t.dst).mix(0.85).filled(),
        )
    }))?;
    // A thin outline separates back-to-back pieces of the same colour.
    chart.draw_series(plan.transfers.iter().map(|t| {
        let y = t.src as f64;
        Rectangle::new(
            [(t.start_s * 1e3, y - 0.4), (t.end_s * 1e3, y + 0.4)],
            WHITE.stroke_width(1),
        )
    }))?;
    let wide = |x0: f64, x1: f64| (x1 - x0) / x_max_ms * plot_px >= MIN_LABEL_PX;
    chart.draw_series(
        plan.transfers
            .iter()
            .filter(|t| wide(t.start_s * 1e3, t.end_s * 1e3))
            .map(|t| {
                let x = (t.start_s + t.end_s) * 0.5e3;
                let text_colour = if matches!(t.dst % 8, 1 | 2 | 5 | 6) {
                    BLACK
                } else {
                    WHITE
                };
                Text::new(
                    t.dst.to_string(),
                    (x, t.src as f64),
                    ("sans-serif", 12)
                        .into_font()
                        .color(&text_colour)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                )
            }),
    )?;
    let bound_ms = plan.lower_bound_s * 1e3;
    chart.draw_series(DashedLineSeries::new(
        [(bound_ms, rows - 0.5), (bound_ms, -0.5)],
        6,
        4,
        BLACK.stroke_width(2),
    ))?;
    Ok(())
}

/// `GPU i` at the integer ticks of the `gpus` rows, nothing between them.
fn gpu_label(y: f64, gpus: usize) -> String {
    let i = cell_label(y, gpus);
    if i.is_empty() { i } else { format!("GPU {i}") }
}

/// Draws the schedule `plan` of `spec` above shortest-job-first on the same matrix (or alone
/// when it is SJF).
pub(crate) fn write_with_sjf(
    path: &Path,
    title: &str,
    spec: &ScheduleSpec,
    plan: &SchedulePlan,
) -> Result<(), CliError> {
    let label = plan.algorithm.to_string();
    if plan.algorithm == Algorithm::Sjf {
        return write(path, title, &[(&label, plan)]);
    }
    let sjf = plan_schedule(&ScheduleSpec {
        algorithm: Algorithm::Sjf,
        ..spec.clone()
    })?;
    write(
        path,
        title,
        &[
            (&label, plan),
            ("sjf (shortest job first, contended)", &sjf),
        ],
    )
}

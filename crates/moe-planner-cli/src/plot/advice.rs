//! The advisor's sweep: balance against redundant experts, ours and EPLB's, with the target.

use std::path::Path;

use moe_planner::placement::Advice;
use plotters::prelude::*;

use super::{LABEL_FONT, TITLE_FONT, axis_max, colour, draw_err, svg_root};
use crate::error::CliError;

/// Draws the busiest GPU's load over the mean (mean over layers, solid; worst layer, dashed)
/// for every number of redundant experts tried, ours (circles) and EPLB's (triangles), and the
/// target (black dashed).
pub(crate) fn write(path: &Path, a: &Advice) -> Result<(), CliError> {
    let root = svg_root(path, (1000, 600));
    let err = draw_err(path);
    let title = format!(
        "How many redundant experts? {} experts on {} GPUs ({} vs {})",
        a.experts, a.gpus, a.policy, a.baseline_policy
    );
    let body = root.titled(&title, TITLE_FONT).map_err(&err)?;
    draw(&body, a).map_err(&err)?;
    root.present().map_err(&err)
}

fn draw(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    a: &Advice,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let x = |r: usize| r as f64;
    let ours: Vec<(f64, f64)> = a
        .points
        .iter()
        .map(|p| (x(p.redundant), p.imbalance))
        .collect();
    let ours_worst: Vec<(f64, f64)> = a
        .points
        .iter()
        .map(|p| (x(p.redundant), p.worst_layer_imbalance))
        .collect();
    let eplb: Vec<(f64, f64)> = a
        .points
        .iter()
        .map(|p| (x(p.redundant), p.baseline_imbalance))
        .collect();
    let eplb_worst: Vec<(f64, f64)> = a
        .points
        .iter()
        .map(|p| (x(p.redundant), p.baseline_worst_layer_imbalance))
        .collect();
    let x_max = a.points.last().map_or(1.0, |p| x(p.redundant)).max(1.0);
    let x_min = a.points.first().map_or(0.0, |p| x(p.redundant));
    let pad = ((x_max - x_min) * 0.05).max(0.5);
    let y_max = axis_max(
        ours_worst.iter().chain(&eplb_worst).map(|p| p.1),
        a.target_imbalance,
    ) * 1.05;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Busiest GPU's load / mean: mean over layers (solid), worst layer (dashed)",
            LABEL_FONT,
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x_min - pad..x_max + pad, 0.98..y_max)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .x_desc("redundant experts per layer")
        .y_desc("max / mean GPU load")
        .axis_desc_style(LABEL_FONT)
        .draw()?;
    let (c_ours, c_eplb) = (colour(0), colour(3));
    chart
        .draw_series(LineSeries::new(ours.clone(), c_ours.stroke_width(2)))?
        .label(format!("{} (circles)", a.policy))
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, c_ours.filled()));
    chart.draw_series(ours.iter().map(|&p| Circle::new(p, 4, c_ours.filled())))?;
    chart.draw_series(DashedLineSeries::new(
        ours_worst,
        6,
        4,
        c_ours.stroke_width(1),
    ))?;
    chart
        .draw_series(LineSeries::new(eplb.clone(), c_eplb.stroke_width(2)))?
        .label(format!("{} (triangles)", a.baseline_policy))
        .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 5, c_eplb.filled()));
    chart.draw_series(
        eplb.iter()
            .map(|&p| TriangleMarker::new(p, 5, c_eplb.filled())),
    )?;
    chart.draw_series(DashedLineSeries::new(
        eplb_worst,
        6,
        4,
        c_eplb.stroke_width(1),
    ))?;
    let t = a.target_imbalance;
    chart
        .draw_series(DashedLineSeries::new(
            [(x_min - pad, t), (x_max + pad, t)],
            8,
            4,
            BLACK.stroke_width(2),
        ))?
        .label(format!("target {t:.3} (black dashed)"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(LABEL_FONT)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

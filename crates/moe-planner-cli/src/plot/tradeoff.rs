//! The trade-off curve of traffic-aware placement: cross-node ratio against the busiest GPU.

use std::path::Path;

use moe_planner::traffic::TrafficPlan;
use plotters::prelude::*;

use super::{LABEL_FONT, TITLE_FONT, axis_max, colour, draw_err, svg_root};
use crate::error::CliError;

/// Writes the curve of `plan` (its `curve` points) to `path`.
pub(crate) fn write(path: &Path, plan: &TrafficPlan) -> Result<(), CliError> {
    if plan.curve.is_empty() {
        return Err(CliError::input("no trade-off curve to plot"));
    }
    let root = svg_root(path, (900, 600));
    let err = draw_err(path);
    let pts: Vec<(f64, f64)> = plan
        .curve
        .iter()
        .map(|p| (100.0 * p.tolerance, p.cross_node_ratio))
        .collect();
    let bound: Vec<(f64, f64)> = plan
        .curve
        .iter()
        .map(|p| (100.0 * p.tolerance, p.lower_bound_ratio))
        .collect();
    let x_max = axis_max(pts.iter().map(|p| p.0), 1.0);
    let y_max = axis_max(pts.iter().map(|p| p.1), 0.05) * 1.1;
    let title = format!(
        "Cross-node tokens vs balance ({} GPUs in {} nodes, {} experts)",
        plan.gpus, plan.nodes, plan.experts
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, TITLE_FONT)
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc("allowed busiest-GPU excess over the compute-only plan (%)")
        .y_desc("cross-node ratio (tokens)")
        .axis_desc_style(LABEL_FONT)
        .draw()
        .map_err(&err)?;
    let c = colour(0);
    chart
        .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
        .map_err(&err)?
        .label("traffic-aware plan (circles)")
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
    chart
        .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
        .map_err(&err)?;
    chart
        .draw_series(DashedLineSeries::new(bound, 5, 4, BLACK.stroke_width(2)))
        .map_err(&err)?
        .label("lower bound (dashed)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(LABEL_FONT)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(&err)?;
    root.present().map_err(&err)
}

//! Expert placement against EPLB: the busiest GPU's load over the mean on every layer (ours,
//! EPLB's and the lower bound), and the per-GPU loads of one layer side by side.

use std::path::Path;

use moe_planner::placement::{PlacementPlan, PlacementPolicy, PlacementSpec, plan_placement};
use plotters::prelude::*;

use super::{LABEL_FONT, TITLE_FONT, axis_max, colour, draw_err, svg_root};
use crate::error::CliError;

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Draws `plan` (made from `spec`) against EPLB.
///
/// The per-GPU panel shows the layer where EPLB's busiest GPU is furthest above ours (the title
/// says which), with EPLB re-run on that layer alone for its per-GPU loads.
pub(crate) fn write(
    path: &Path,
    spec: &PlacementSpec,
    plan: &PlacementPlan,
) -> Result<(), CliError> {
    let Some(layer) = widest_layer(plan) else {
        return Err(CliError::input("no layer to plot"));
    };
    let eplb = eplb_gpu_loads(spec, layer)?;
    let root = svg_root(path, (1000, 900));
    let err = draw_err(path);
    let title = format!(
        "Expert placement: {} vs {} ({} GPUs x {} slots, {} experts)",
        plan.policy, plan.baseline_policy, plan.gpus, plan.slots_per_gpu, plan.experts
    );
    let body = root.titled(&title, TITLE_FONT).map_err(&err)?;
    let (top, bottom) = body.split_vertically(380);
    per_layer(&top, plan).map_err(&err)?;
    per_gpu(&bottom, plan, layer, &eplb).map_err(&err)?;
    root.present().map_err(&err)
}

/// The layer where EPLB's maximum load exceeds ours the most.
fn widest_layer(plan: &PlacementPlan) -> Option<usize> {
    let excess = |l: usize| plan.layers[l].baseline_max_gpu_load - plan.layers[l].max_gpu_load;
    (0..plan.layers.len()).max_by(|&a, &b| excess(a).total_cmp(&excess(b)))
}

/// EPLB's per-GPU loads on `layer`, planned on that layer alone.
fn eplb_gpu_loads(spec: &PlacementSpec, layer: usize) -> Result<Vec<f64>, CliError> {
    let mut one = spec.clone();
    one.policy = PlacementPolicy::Eplb;
    one.current = None;
    one.loads = vec![spec.loads[layer].clone()];
    for w in &mut one.windows {
        *w = vec![w[layer].clone()];
    }
    let plan = plan_placement(&one)?;
    Ok(plan.layers[0].gpu_loads.clone())
}

/// Max/mean per layer: ours (circles), EPLB (triangles), the lower bound (dashed).
fn per_layer(area: &Area<'_>, plan: &PlacementPlan) -> DrawResult {
    let ratio = |v: f64, mean: f64| if mean > 0.0 { v / mean } else { 1.0 };
    let series = |f: fn(&moe_planner::placement::LayerPlacement) -> f64| -> Vec<(f64, f64)> {
        plan.layers
            .iter()
            .enumerate()
            .map(|(i, l)| (i as f64, ratio(f(l), l.mean_gpu_load)))
            .collect()
    };
    let ours = series(|l| l.max_gpu_load);
    let eplb = series(|l| l.baseline_max_gpu_load);
    let bound = series(|l| l.lower_bound);
    let y_max = axis_max(eplb.iter().chain(&ours).map(|p| p.1), 1.0) * 1.05;
    let x_max = (plan.layers.len().max(2) - 1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Busiest GPU's load / mean GPU load, every layer (1.0 = perfect balance)",
            LABEL_FONT,
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..x_max + 0.5, 0.98..y_max)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .x_desc("MoE layer")
        .y_desc("max / mean GPU load")
        .axis_desc_style(LABEL_FONT)
        .draw()?;
    let (c_ours, c_eplb) = (colour(0), colour(3));
    chart
        .draw_series(LineSeries::new(ours.clone(), c_ours.stroke_width(2)))?
        .label("ours (circles)")
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, c_ours.filled()));
    chart.draw_series(ours.iter().map(|&p| Circle::new(p, 3, c_ours.filled())))?;
    chart
        .draw_series(LineSeries::new(eplb.clone(), c_eplb.stroke_width(2)))?
        .label(format!("{} (triangles)", plan.baseline_policy))
        .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 5, c_eplb.filled()));
    chart.draw_series(
        eplb.iter()
            .map(|&p| TriangleMarker::new(p, 4, c_eplb.filled())),
    )?;
    chart
        .draw_series(DashedLineSeries::new(bound, 5, 4, BLACK.stroke_width(2)))?
        .label("lower bound (dashed)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(LABEL_FONT)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

/// Per-GPU loads of one layer: ours solid, EPLB hollow, the bound dashed.
fn per_gpu(area: &Area<'_>, plan: &PlacementPlan, layer: usize, eplb: &[f64]) -> DrawResult {
    let l = &plan.layers[layer];
    let mean = if l.mean_gpu_load > 0.0 {
        l.mean_gpu_load
    } else {
        1.0
    };
    let gpus = l.gpu_loads.len().max(eplb.len()).max(1);
    let y_max = axis_max(l.gpu_loads.iter().chain(eplb).map(|v| v / mean), 1.0) * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "Layer {layer} (where EPLB's busiest GPU is furthest above ours): load per GPU"
            ),
            LABEL_FONT,
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..gpus as f64 - 0.5, 0.0..y_max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .x_desc("GPU")
        .y_desc("load / mean GPU load")
        .axis_desc_style(LABEL_FONT)
        .draw()?;
    let (c_ours, c_eplb) = (colour(0), colour(3));
    chart
        .draw_series(l.gpu_loads.iter().enumerate().map(|(g, v)| {
            let x = g as f64;
            Rectangle::new([(x - 0.4, 0.0), (x, v / mean)], c_ours.filled())
        }))?
        .label("ours (solid bars)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c_ours.filled()));
    chart
        .draw_series(eplb.iter().enumerate().map(|(g, v)| {
            let x = g as f64;
            Rectangle::new([(x, 0.0), (x + 0.4, v / mean)], c_eplb.stroke_width(2))
        }))?
        .label(format!("{} (hollow bars)", plan.baseline_policy))
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - 5), (x + 14, y + 5)], c_eplb.stroke_width(2))
        });
    let bound = l.lower_bound / mean;
    chart
        .draw_series(DashedLineSeries::new(
            [(-0.5, bound), (gpus as f64 - 0.5, bound)],
            6,
            4,
            BLACK.stroke_width(2),
        ))?
        .label(format!("lower bound {bound:.3} (dashed)"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font(LABEL_FONT)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
}

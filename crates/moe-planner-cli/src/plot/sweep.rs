//! The rail-only paper's sweeps: best iteration time against the HB-domain size K (Fig. 9) and
//! fabric cost against K (Table 2 over K), both on a logarithmic K axis labelled with the real
//! values 1, 2, 4, ...

use std::path::Path;

use moe_planner::network::{
    FabricPlan, FabricSpec, ModelRef, SearchSpec, plan_fabrics, plan_hb_domain_sweep,
};
use moe_planner::rail_network::sweeps::SweepPoint;
use plotters::prelude::*;

use super::{LABEL_FONT, TITLE_FONT, axis_max, colour, draw_err, svg_root};
use crate::error::CliError;

/// The largest HB domain swept.
const MAX_HB_DOMAIN: u64 = 1024;

/// Powers of two from 1 up to `min(gpus, MAX_HB_DOMAIN)` that divide `gpus`.
fn hb_sizes(gpus: u64) -> Vec<u64> {
    (0..=MAX_HB_DOMAIN.ilog2())
        .map(|e| 1u64 << e)
        .take_while(|&k| k <= gpus)
        .filter(|&k| gpus % k == 0)
        .collect()
}

/// Fig. 9 for the model, system, GPU count, batch and link fits of `spec`: the best iteration
/// time at every HB-domain size.
fn hb_domain_points(spec: &SearchSpec) -> Result<Vec<SweepPoint>, CliError> {
    Ok(plan_hb_domain_sweep(spec, &hb_sizes(spec.gpus))?)
}

/// Both fabrics at every HB-domain size the other numbers of `spec` allow.
fn cost_points(spec: &FabricSpec) -> Vec<(u64, FabricPlan)> {
    hb_sizes(spec.gpus)
        .into_iter()
        .filter_map(|k| {
            let s = FabricSpec {
                hb_domain: k,
                ..*spec
            };
            plan_fabrics(&s).ok().map(|p| (k, p))
        })
        .collect()
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// `x = log2(K)`: the K axis is drawn in log2 but labelled with K itself.
fn log2_k(k: u64) -> f64 {
    (k as f64).log2()
}

/// `K` at the integer ticks of a log2 axis, nothing between them.
// The cast runs only for `x >= 0` (an axis position) and saturates below 62.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn k_label(x: f64) -> String {
    if (x - x.round()).abs() < 1e-6 && x >= -1e-6 {
        format!("{}", 1u64 << (x.round() as u32).min(62))
    } else {
        String::new()
    }
}

/// A chart whose x axis is K on a log scale labelled 1, 2, 4, ...
fn k_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    k_max: u64,
    y_max: f64,
    y_desc: &str,
) -> Result<Chart<'a, 'b>, DrawingAreaErrorKind<std::io::Error>> {
    let mut chart = ChartBuilder::on(area)
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.2..log2_k(k_max.max(2)) + 0.2, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_labels(axis_labels(log2_k(k_max.max(2))))
        .x_label_formatter(&|x| k_label(*x))
        .x_desc("HB-domain size K (GPUs per high-bandwidth domain; log scale)")
        .y_desc(y_desc)
        .axis_desc_style(LABEL_FONT)
        .draw()?;
    Ok(chart)
}

/// Fig. 9: best iteration time (solid, circles) and the any-to-any ideal (dashed) against K.
fn write_hb_domain(path: &Path, title: &str, pts: &[SweepPoint]) -> Result<(), CliError> {
    let root = svg_root(path, (900, 560));
    let err = draw_err(path);
    let body = root.titled(title, TITLE_FONT).map_err(&err)?;
    let k_max = pts.iter().map(|p| p.hb_domain).max().unwrap_or(2);
    let y_max = axis_max(pts.iter().map(|p| p.iteration_time_s), 1e-9) * 1.1;
    let mut chart = k_chart(&body, k_max, y_max, "iteration time (s)").map_err(&err)?;
    let line: Vec<(f64, f64)> = pts
        .iter()
        .map(|p| (log2_k(p.hb_domain), p.iteration_time_s))
        .collect();
    let ideal: Vec<(f64, f64)> = pts
        .iter()
        .map(|p| (log2_k(p.hb_domain), p.ideal_time_s))
        .collect();
    let c = colour(0);
    chart
        .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))
        .map_err(&err)?
        .label("rail-only, best parallelization (circles)")
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
    chart
        .draw_series(line.iter().map(|&p| Circle::new(p, 4, c.filled())))
        .map_err(&err)?;
    chart
        .draw_series(DashedLineSeries::new(ideal, 6, 4, BLACK.stroke_width(2)))
        .map_err(&err)?
        .label("ideal: every GPU in one HB domain (dashed)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    legend(&mut chart, SeriesLabelPosition::UpperRight).map_err(&err)?;
    root.present().map_err(&err)
}

/// Fabric cost of both fabrics against K, in millions of USD.
fn write_cost(path: &Path, title: &str, pts: &[(u64, FabricPlan)]) -> Result<(), CliError> {
    let root = svg_root(path, (900, 560));
    let err = draw_err(path);
    let body = root.titled(title, TITLE_FONT).map_err(&err)?;
    let k_max = pts.iter().map(|p| p.0).max().unwrap_or(2);
    let y_max = axis_max(
        pts.iter()
            .flat_map(|(_, p)| [p.rail_optimized.cost_usd, p.rail_only.cost_usd])
            .map(|c| c / 1e6),
        1e-9,
    ) * 1.1;
    let mut chart = k_chart(&body, k_max, y_max, "network cost (million USD)").map_err(&err)?;
    let series = |f: fn(&FabricPlan) -> f64| -> Vec<(f64, f64)> {
        pts.iter().map(|(k, p)| (log2_k(*k), f(p) / 1e6)).collect()
    };
    let (c_opt, c_only) = (colour(3), colour(0));
    let only = series(|p| p.rail_only.cost_usd);
    chart
        .draw_series(LineSeries::new(only.clone(), c_only.stroke_width(2)))
        .map_err(&err)?
        .label("rail-only (solid, circles)")
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, c_only.filled()));
    chart
        .draw_series(only.iter().map(|&p| Circle::new(p, 4, c_only.filled())))
        .map_err(&err)?;
    let opt = series(|p| p.rail_optimized.cost_usd);
    chart
        .draw_series(DashedLineSeries::new(
            opt.clone(),
            6,
            4,
            c_opt.stroke_width(2),
        ))
        .map_err(&err)?
        .label("rail-optimized Clos (dashed, triangles)")
        .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 5, c_opt.filled()));
    chart
        .draw_series(
            opt.iter()
                .map(|&p| TriangleMarker::new(p, 5, c_opt.filled())),
        )
        .map_err(&err)?;
    legend(&mut chart, SeriesLabelPosition::LowerLeft).map_err(&err)?;
    root.present().map_err(&err)
}

fn legend<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    position: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font(LABEL_FONT)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

/// Sweeps `spec` over the HB-domain size and draws Fig. 9 into `path`.
pub(crate) fn write_hb_domain_sweep(path: &Path, spec: &SearchSpec) -> Result<(), CliError> {
    let model = match &spec.model {
        ModelRef::Preset(name) => name.clone(),
        ModelRef::Custom(_) => "custom model".to_string(),
    };
    let title = format!(
        "Iteration time vs HB-domain size: {model} on {} GPUs, batch {} (rail-only Fig. 9)",
        spec.gpus, spec.global_batch
    );
    write_hb_domain(path, &title, &hb_domain_points(spec)?)
}

/// Both fabrics of `spec` at every HB-domain size, drawn into `path`.
pub(crate) fn write_cost_sweep(path: &Path, spec: &FabricSpec) -> Result<(), CliError> {
    let title = format!(
        "Network cost vs HB-domain size: {} GPUs, radix-{} switches (rail-only Table 2)",
        spec.gpus, spec.radix
    );
    write_cost(path, &title, &cost_points(spec))
}

/// Labels of an axis from 0 to `max` (a base-2 logarithm, at most 64).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn axis_labels(max: f64) -> usize {
    max.clamp(0.0, 64.0) as usize + 1
}

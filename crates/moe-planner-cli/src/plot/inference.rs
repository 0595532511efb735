//! Inference time per scenario against every baseline: one panel per scenario, one horizontal
//! bar per method, each bar labelled with what it is, its time and its ratio to ours.

use std::path::Path;

use moe_planner::inference::InferencePlan;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{LABEL_FONT, TITLE_FONT, axis_max, colour, draw_err, svg_root};
use crate::error::CliError;

/// Draws one panel per `(scenario label, plan)`.
pub(crate) fn write(path: &Path, plans: &[(&str, &InferencePlan)]) -> Result<(), CliError> {
    let rows: usize = plans.iter().map(|(_, p)| p.baselines.len() + 1).sum();
    let px = |n: usize, each: u32| u32::try_from(n).unwrap_or(u32::MAX).saturating_mul(each);
    let height = px(plans.len(), 90)
        .saturating_add(px(rows, 44))
        .saturating_add(60);
    let root = svg_root(path, (1000, height));
    let err = draw_err(path);
    let body = root
        .titled(
            "MoE inference time: our plan vs the baselines (shorter is better)",
            TITLE_FONT,
        )
        .map_err(&err)?;
    let mut rest = body;
    for (label, plan) in plans {
        let px = px(plan.baselines.len() + 1, 44).saturating_add(90);
        let (area, below) = rest.split_vertically(px);
        panel(&area, label, plan).map_err(&err)?;
        rest = below;
    }
    root.present().map_err(&err)
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    label: &str,
    plan: &InferencePlan,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let mut bars = vec![(
        "our plan (optimized placement, contention-free order)".to_string(),
        plan.inference_time_s,
    )];
    bars.extend(
        plan.baselines
            .iter()
            .map(|b| (b.description.clone(), b.inference_time_s)),
    );
    let x_max = axis_max(bars.iter().map(|b| b.1 * 1e3), 1e-9) * 1.05;
    let n = bars.len() as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{label}, {} layers summed", plan.layers.len()),
            LABEL_FONT,
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..x_max, n - 0.2..-0.6)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("inference time (ms)")
        .axis_desc_style(LABEL_FONT)
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, t))| {
        let y = i as f64;
        Rectangle::new([(0.0, y - 0.1), (t * 1e3, y + 0.3)], colour(i).filled())
    }))?;
    let ours = plan.inference_time_s;
    chart.draw_series(bars.iter().enumerate().map(|(i, (name, t))| {
        let ratio = if i == 0 {
            String::new()
        } else if ours > 0.0 {
            format!(", {:.2}x ours", t / ours)
        } else {
            String::new()
        };
        Text::new(
            format!("{name}: {:.3} ms{ratio}", t * 1e3),
            (0.0, i as f64 - 0.15),
            ("sans-serif", 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Bottom)),
        )
    }))?;
    Ok(())
}

//! Step-time breakdown of the top MoE training mappings: one stacked horizontal bar per
//! mapping, one colour (and a legend entry) per term, each bar labelled with its mapping and
//! step time.

use std::path::Path;

use moe_planner::training::{MoeTrainingPlan, TrainingConfig};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{LABEL_FONT, TITLE_FONT, axis_max, colour, draw_err, svg_root};
use crate::error::CliError;

/// The terms drawn, in stacking order, with their legend names.
fn segments(c: &TrainingConfig) -> [(&'static str, f64); 9] {
    let t = &c.terms;
    [
        (
            "compute",
            t.attention_compute_s + t.dense_compute_s + t.expert_compute_s + t.logits_compute_s,
        ),
        ("pipeline bubble", t.bubble_s),
        ("TP comm", t.tp_comm_s),
        ("CP comm", t.cp_comm_s),
        ("EP all-to-all", t.ep_comm_s),
        ("PP p2p", t.pp_comm_s),
        ("DP sync", t.dp_comm_s),
        ("optimizer", t.optimizer_s),
        ("offload", t.offload_s),
    ]
}

/// Draws the breakdown of every config of `plan`.
pub(crate) fn write(path: &Path, plan: &MoeTrainingPlan) -> Result<(), CliError> {
    let n = plan.configs.len().max(1);
    let height = u32::try_from(n)
        .unwrap_or(u32::MAX)
        .saturating_mul(50)
        .saturating_add(200);
    let root = svg_root(path, (1100, height));
    let err = draw_err(path);
    // Room on the right for the legend, so that it never covers the end of a bar.
    let x_max = axis_max(plan.configs.iter().map(|c| c.step_time_s), 1e-9) * 1.35;
    let rows = n as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "MoE training step time by term, fastest mappings first",
            TITLE_FONT,
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..x_max, rows - 0.2..-0.8)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("step time (s)")
        .axis_desc_style(LABEL_FONT)
        .draw()
        .map_err(&err)?;
    for k in 0..9 {
        let name = plan.configs.first().map_or("", |c| segments(c)[k].0);
        chart
            .draw_series(plan.configs.iter().enumerate().map(|(i, c)| {
                let seg = segments(c);
                let start: f64 = seg[..k].iter().map(|s| s.1).sum();
                let y = i as f64;
                Rectangle::new(
                    [(start, y - 0.05), (start + seg[k].1, y + 0.35)],
                    colour(k).filled(),
                )
            }))
            .map_err(&err)?
            .label(name)
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour(k).filled())
            });
    }
    chart
        .draw_series(plan.configs.iter().enumerate().map(|(i, c)| {
            Text::new(
                format!(
                    "TP{} CP{} PP{} VP{} EP{} ETP{} mb{} {}: {:.3} s, {:.0} tok/s/GPU, MFU {:.1}%",
                    c.tp,
                    c.cp,
                    c.pp,
                    c.vp,
                    c.ep,
                    c.etp,
                    c.micro_batch,
                    crate::format::json_name(&c.recompute),
                    c.step_time_s,
                    c.tokens_per_s_per_gpu,
                    100.0 * c.mfu
                ),
                (0.0, i as f64 - 0.1),
                ("sans-serif", 13)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            )
        }))
        .map_err(&err)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(LABEL_FONT)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(&err)?;
    root.present().map_err(&err)
}

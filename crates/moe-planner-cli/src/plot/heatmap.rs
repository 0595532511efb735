//! The traffic matrix as a heatmap: row = sending GPU, column = receiving GPU, colour = bytes on
//! a sequential colour-blind-safe scale (viridis), with a colour bar and, for small matrices, the
//! value in every cell.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{LABEL_FONT, TITLE_FONT, axis_max, draw_err, svg_root};
use crate::error::CliError;

/// Matrices up to this size print their values in the cells.
const MAX_LABELLED: usize = 16;

/// Viridis at eight evenly spaced points (dark purple to yellow).
const VIRIDIS: [(u8, u8, u8); 8] = [
    (68, 1, 84),
    (70, 50, 127),
    (54, 92, 141),
    (39, 127, 142),
    (31, 161, 135),
    (74, 194, 109),
    (159, 218, 58),
    (253, 231, 37),
];

/// Colour of `t` in `[0, 1]` on the viridis scale.
pub(crate) fn viridis(t: f64) -> RGBColor {
    let x = t.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    // `x` is in [0, len - 1], so the floor fits; each channel mixes two bytes, so it fits a byte.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Draws the `n x n` matrix of bytes `traffic`.
pub(crate) fn write(path: &Path, title: &str, traffic: &[Vec<f64>]) -> Result<(), CliError> {
    let n = traffic.len().max(1);
    let max_mb = axis_max(traffic.iter().flatten().map(|b| b / 1e6), 1e-12);
    let root = svg_root(path, (820, 720));
    let err = draw_err(path);
    let body = root.titled(title, TITLE_FONT).map_err(&err)?;
    let (matrix_area, bar_area) = body.split_horizontally(700);
    let size = n as f64;
    let mut chart = ChartBuilder::on(&matrix_area)
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..size - 0.5, size - 0.5..-0.5)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(n.min(16) + 1)
        .y_labels(n.min(16) + 1)
        .x_label_formatter(&|x| cell_label(*x, n))
        .y_label_formatter(&|y| cell_label(*y, n))
        .x_label_style(LABEL_FONT)
        .y_label_style(LABEL_FONT)
        .x_desc("receiving GPU")
        .y_desc("sending GPU")
        .axis_desc_style(LABEL_FONT)
        .draw()
        .map_err(&err)?;
    let cells = traffic.iter().enumerate().flat_map(|(i, row)| {
        row.iter()
            .enumerate()
            .map(move |(j, &b)| (i as f64, j as f64, b / 1e6))
    });
    chart
        .draw_series(cells.clone().map(|(i, j, mb)| {
            Rectangle::new(
                [(j - 0.5, i - 0.5), (j + 0.5, i + 0.5)],
                viridis(mb / max_mb).filled(),
            )
        }))
        .map_err(&err)?;
    if n <= MAX_LABELLED {
        chart
            .draw_series(cells.map(|(i, j, mb)| {
                let text = if mb / max_mb > 0.6 { BLACK } else { WHITE };
                Text::new(
                    format!("{mb:.1}"),
                    (j, i),
                    ("sans-serif", 12)
                        .into_font()
                        .color(&text)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                )
            }))
            .map_err(&err)?;
    }
    colour_bar(&bar_area, max_mb).map_err(&err)?;
    root.present().map_err(&err)
}

/// The index of the cell whose centre is at `x`, or nothing between centres.
// The cast runs only for `x >= 0` and saturates; the comparison with `n` bounds it.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub(crate) fn cell_label(x: f64, n: usize) -> String {
    if (x - x.round()).abs() < 1e-6 && x >= -1e-6 && (x.round() as usize) < n {
        format!("{}", x.round())
    } else {
        String::new()
    }
}

fn colour_bar(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    max_mb: f64,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let mut bar = ChartBuilder::on(area)
        .margin_top(10)
        .margin_bottom(55)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..1.0, 0.0..max_mb)?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc("MB sent")
        .y_label_style(LABEL_FONT)
        .axis_desc_style(LABEL_FONT)
        .draw()?;
    let steps: i32 = 64;
    bar.draw_series((0..steps).map(|s| {
        let (lo, hi) = (
            f64::from(s) / f64::from(steps),
            f64::from(s + 1) / f64::from(steps),
        );
        Rectangle::new(
            [(0.0, lo * max_mb), (1.0, hi * max_mb)],
            viridis(lo).filled(),
        )
    }))?;
    Ok(())
}

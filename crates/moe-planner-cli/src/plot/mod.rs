//! SVG plots of the planners' results, one chart per file.
//!
//! Every chart uses the Okabe-Ito palette (distinguishable with the common colour-vision
//! deficiencies) and tells its series apart by a second cue too (marker, line style, fill or a
//! text label), names its axes with units and has a title. Text is left to the SVG viewer's
//! sans-serif font: plotters' SVG backend needs no font files.

pub(crate) mod advice;
pub(crate) mod demo;
pub(crate) mod gantt;
pub(crate) mod heatmap;
pub(crate) mod inference;
pub(crate) mod placement;
pub(crate) mod sweep;
pub(crate) mod tradeoff;
pub(crate) mod training;

use std::path::Path;

use plotters::prelude::*;

use crate::error::CliError;

/// Okabe-Ito: blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow, black.
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// Colour of series `i` (cycles through the palette).
pub(crate) fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Font of titles.
pub(crate) const TITLE_FONT: (&str, u32) = ("sans-serif", 22);
/// Font of axis descriptions and legends.
pub(crate) const LABEL_FONT: (&str, u32) = ("sans-serif", 15);

/// The SVG backend of `path` with a white background.
pub(crate) fn svg_root(
    path: &Path,
    size: (u32, u32),
) -> DrawingArea<SVGBackend<'_>, plotters::coord::Shift> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    // Filling a fresh SVG canvas cannot fail (nothing is written before `present`).
    let _ = root.fill(&WHITE);
    root
}

/// Turns a drawing error into a one-line CLI error naming the file.
pub(crate) fn draw_err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> CliError + '_ {
    move |e| CliError::input(format!("cannot draw {}: {e}", path.display()))
}

/// `max` of finite values, at least `floor` (so empty or all-zero data still give an axis).
pub(crate) fn axis_max(values: impl IntoIterator<Item = f64>, floor: f64) -> f64 {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(floor, f64::max)
}

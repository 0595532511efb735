//! Measured tables (the CSVs under `examples/data/measured/`, extracted from NVIDIA's
//! `aiconfigurator-core` package) and the held-out validation of the cost models against them.
//!
//! * [`parse_collective_csv`]: `collective,gpus,bytes,seconds` rows (other columns ignored).
//! * [`parse_deepep_csv`]: `mode,ranks,hidden,tokens,top_k,experts,dispatch_s,combine_s` rows.
//! * [`plan_nccl_validation`]: per collective, fit on every other size and predict the others
//!   (per GPU count), then fit across the smaller GPU counts and predict the largest.
//! * [`plan_deepep_validation`]: DeepEP dispatch and combine predicted from the bytes they move,
//!   first with the NCCL AlltoAll link alone, then with DeepEP's own fitted per-call overhead
//!   and bandwidth on half the model shapes, scored on the other half.
//!
//! # Examples
//!
//! ```
//! use moe_planner::measured::{parse_collective_csv, plan_nccl_validation};
//! let mut text = String::from("collective,gpus,bytes,seconds\n");
//! for gpus in [2u64, 4, 8] {
//!     for i in 0..16 {
//!         let bytes = 1024.0 * f64::powi(2.0, i);
//!         let bus = bytes * (gpus as f64 - 1.0) / gpus as f64;
//!         let seconds = 5e-6 + 1e-6 * (gpus as f64 - 1.0) + bus / 300e9;
//!         text += &format!("all_gather,{gpus},{bytes},{seconds}\n");
//!     }
//! }
//! let rows = plan_nccl_validation(&parse_collective_csv(&text)?)?;
//! assert!(rows.iter().all(|r| r.held_out.worst < 1e-6));
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use std::collections::BTreeMap;

use comm_cost_model::deepep::{DeepEpCall, DeepEpMode};
use comm_cost_model::fit::Sample;
use comm_cost_model::gpu_scaling::{Collective, GpuSample};
use comm_cost_model::held_out::ErrorSummary;
use comm_cost_model::piecewise::{PiecewiseFit, PiecewiseOptions, piecewise_fit};
use comm_cost_model::validation::{every_other_size, smaller_gpu_counts, validate_deepep};
use serde::{Deserialize, Serialize};

use crate::PlanError;
use crate::fitting::Measurement;

// The DeepEP model and the validation methodology live in comm-cost-model; the facade reads
// the tables and names the rows.
pub use comm_cost_model::deepep::{COMBINE_BYTES_PER_ELEMENT, DISPATCH_BYTES_PER_ELEMENT};
pub use comm_cost_model::validation::{DeepEpMeasurement, DeepEpValidationRow};

/// A header-indexed comma-separated table.
struct Table<'a> {
    header: Vec<&'a str>,
    rows: Vec<(usize, Vec<&'a str>)>,
}

impl<'a> Table<'a> {
    fn parse(text: &'a str) -> Result<Self, PlanError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let (_, header) = lines.next().ok_or_else(|| PlanError::Format {
            line: 0,
            message: "empty table".into(),
        })?;
        Ok(Self {
            header: header.split(',').map(str::trim).collect(),
            rows: lines
                .map(|(i, l)| (i, l.split(',').map(str::trim).collect()))
                .collect(),
        })
    }

    fn column(&self, name: &'static str) -> Result<usize, PlanError> {
        self.header
            .iter()
            .position(|h| *h == name)
            .ok_or(PlanError::MissingField {
                field: name,
                needed_by: "the table's header",
            })
    }

    fn cell<T: std::str::FromStr>(row: &(usize, Vec<&str>), at: usize) -> Result<T, PlanError> {
        let token = row.1.get(at).copied().unwrap_or("");
        token.parse().map_err(|_| PlanError::Format {
            line: row.0,
            message: format!("column {}: `{token}` is not valid here", at + 1),
        })
    }

    /// A measured size or time: a finite, non-negative number (Rust's float parser also
    /// accepts `inf` and `nan`, which no measurement is).
    fn quantity(row: &(usize, Vec<&str>), at: usize) -> Result<f64, PlanError> {
        let x: f64 = Self::cell(row, at)?;
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(PlanError::Format {
                line: row.0,
                message: format!(
                    "column {}: `{}` is not a finite non-negative number",
                    at + 1,
                    comm_cost_model::Shown(x)
                ),
            })
        }
    }
}

/// Reads `collective,gpus,bytes,seconds` rows (extra columns such as `gpu` are ignored;
/// `#` lines are comments).
///
/// # Errors
///
/// [`PlanError::MissingField`] for a missing column; [`PlanError::Format`] naming the line of a
/// bad cell or an unknown collective.
///
/// # Complexity
///
/// O(length of the text).
pub fn parse_collective_csv(text: &str) -> Result<Vec<Measurement>, PlanError> {
    let t = Table::parse(text)?;
    let (c, g, b, s) = (
        t.column("collective")?,
        t.column("gpus")?,
        t.column("bytes")?,
        t.column("seconds")?,
    );
    t.rows
        .iter()
        .map(|row| {
            let name: String = Table::cell(row, c)?;
            let collective = Collective::from_name(&name).ok_or_else(|| PlanError::Format {
                line: row.0,
                message: format!("unknown collective `{name}`"),
            })?;
            Ok(Measurement {
                collective,
                gpus: Table::cell(row, g)?,
                bytes: Table::quantity(row, b)?,
                seconds: Table::quantity(row, s)?,
            })
        })
        .collect()
}

/// Reads `mode,ranks,hidden,tokens,top_k,experts,dispatch_s,combine_s` rows (`mode` is
/// `normal` or `low-latency`).
///
/// # Errors
///
/// As [`parse_collective_csv`].
///
/// # Complexity
///
/// O(length of the text).
pub fn parse_deepep_csv(text: &str) -> Result<Vec<DeepEpMeasurement>, PlanError> {
    let t = Table::parse(text)?;
    let cols = [
        "mode",
        "ranks",
        "hidden",
        "tokens",
        "top_k",
        "experts",
        "dispatch_s",
        "combine_s",
    ]
    .map(|name| t.column(name));
    let [
        mode,
        ranks,
        hidden,
        tokens,
        top_k,
        experts,
        dispatch,
        combine,
    ] = cols;
    let (mode, ranks, hidden, tokens) = (mode?, ranks?, hidden?, tokens?);
    let (top_k, experts, dispatch, combine) = (top_k?, experts?, dispatch?, combine?);
    t.rows
        .iter()
        .map(|row| {
            let name: String = Table::cell(row, mode)?;
            let mode = match name.as_str() {
                "normal" => DeepEpMode::Normal,
                "low-latency" | "ll" => DeepEpMode::LowLatency,
                _ => {
                    return Err(PlanError::Format {
                        line: row.0,
                        message: format!("unknown DeepEP mode `{name}`"),
                    });
                }
            };
            Ok(DeepEpMeasurement {
                mode,
                call: DeepEpCall {
                    ranks: Table::cell(row, ranks)?,
                    tokens: Table::cell(row, tokens)?,
                    hidden: Table::cell(row, hidden)?,
                    top_k: Table::cell(row, top_k)?,
                    experts: Table::cell(row, experts)?,
                    bytes_per_element: DISPATCH_BYTES_PER_ELEMENT,
                },
                dispatch_s: Table::quantity(row, dispatch)?,
                combine_s: Table::quantity(row, combine)?,
            })
        })
        .collect()
}

/// The piecewise fit of one collective on one GPU count of a measured table (for example the
/// AlltoAll link that [`plan_deepep_validation`] predicts DeepEP from).
///
/// # Errors
///
/// [`PlanError::Input`] as [`piecewise_fit`] (no such rows gives `CountTooSmall`).
///
/// # Complexity
///
/// O(n + g^2 k) for `g` rows of that collective and GPU count.
pub fn link_fit(
    measurements: &[Measurement],
    collective: Collective,
    gpus: u64,
) -> Result<PiecewiseFit, PlanError> {
    let samples: Vec<Sample> = measurements
        .iter()
        .filter(|m| m.collective == collective && m.gpus == gpus)
        .map(|m| Sample {
            bytes: m.bytes,
            seconds: m.seconds,
        })
        .collect();
    Ok(piecewise_fit(&samples, PiecewiseOptions::default())?)
}

/// Held-out error of one collective under one split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcclValidationRow {
    /// The collective.
    pub collective: Collective,
    /// `every-other-size` or `smaller-gpu-counts` (fit on all but the largest GPU count,
    /// predict it).
    pub split: String,
    /// Samples fitted.
    pub fitted: usize,
    /// Errors on the held-out samples.
    pub held_out: ErrorSummary,
}

fn by_collective(measurements: &[Measurement]) -> BTreeMap<Collective, Vec<Measurement>> {
    let mut groups: BTreeMap<Collective, Vec<Measurement>> = BTreeMap::new();
    for m in measurements {
        groups.entry(m.collective).or_default().push(*m);
    }
    groups
}

/// Held-out validation of the piecewise collective models on a measured table (see the module
/// docs): two rows per collective, `every-other-size` and `smaller-gpu-counts`.
///
/// # Errors
///
/// [`PlanError::Input`] when a split leaves too few samples to fit or to score (for example a
/// table with a single GPU count cannot be extrapolated across GPU counts).
///
/// # Complexity
///
/// O(n^2 k) for `n` samples per collective and `k = 3` segments.
pub fn plan_nccl_validation(
    measurements: &[Measurement],
) -> Result<Vec<NcclValidationRow>, PlanError> {
    let mut rows = Vec::new();
    for (collective, group) in by_collective(measurements) {
        let samples: Vec<GpuSample> = group
            .iter()
            .map(|m| GpuSample {
                gpus: m.gpus,
                bytes: m.bytes,
                seconds: m.seconds,
            })
            .collect();
        for (split, score) in [
            ("every-other-size", every_other_size(&samples)?),
            (
                "smaller-gpu-counts",
                smaller_gpu_counts(collective, &samples)?,
            ),
        ] {
            rows.push(NcclValidationRow {
                collective,
                split: split.to_string(),
                fitted: score.fitted,
                held_out: score.held_out,
            });
        }
    }
    Ok(rows)
}

/// Held-out validation of the DeepEP model ([`comm_cost_model::validation::validate_deepep`]): for each mode and phase,
/// the error of predicting from `alltoall` (the NCCL AlltoAll fit of the same GPU count) and
/// of DeepEP's own fit on every other model shape `(hidden, top_k, experts)`, scored on the
/// rest.
///
/// # Errors
///
/// [`PlanError::Input`] for an invalid configuration (experts not divisible by ranks, ...) or
/// a split with too few samples.
///
/// # Complexity
///
/// O(n^2 k) for `n` configurations per mode.
pub fn plan_deepep_validation(
    measured: &[DeepEpMeasurement],
    alltoall: &PiecewiseFit,
) -> Result<Vec<DeepEpValidationRow>, PlanError> {
    Ok(validate_deepep(measured, alltoall)?)
}

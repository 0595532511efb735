//! Serving-engine file formats for expert loads and placements, read and written at the edge.
//!
//! * Loads: SGLang's expert-distribution dump and `--init-expert-location` input,
//!   `{"logical_count": [[...]]}`, either `[layers][experts]` or `[windows][layers][experts]`
//!   (SGLang sums a 3-D count over its first axis before balancing; we can also plan against every
//!   window, see [`LogicalCount::windows`]).
//! * Placements: `{"physical_to_logical_map": [[...]]}`, `[layers][physical slots]`, slot `s`
//!   on GPU `s / slots_per_gpu`, the file SGLang's `--init-expert-location` accepts.
//!
//! SGLang passes every key of a placement file to `init_by_mapping` as a keyword argument, and
//! that function takes only `physical_to_logical_map`, so [`EngineFile`] holds that key alone; the
//! two other EPLB-shaped maps (`logical_to_physical_map`, `replica_count`) travel in the plan.

use serde::{Deserialize, Serialize};

use comm_cost_model::CostModelError;

use crate::PlanError;

/// Token counts per logical expert, as SGLang dumps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogicalCountFile {
    /// `[layers][experts]` or `[windows][layers][experts]` token counts.
    pub logical_count: LogicalCount,
}

/// A 2-D (one window) or 3-D (several windows, oldest first) load array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LogicalCount {
    /// `[layers][experts]`.
    Layers(Vec<Vec<f64>>),
    /// `[windows][layers][experts]`, oldest window first.
    Windows(Vec<Vec<Vec<f64>>>),
}

impl LogicalCount {
    /// Every window as `[layers][experts]`, oldest first (one window for a 2-D count).
    #[must_use]
    pub fn windows(&self) -> Vec<Vec<Vec<f64>>> {
        match self {
            Self::Layers(layers) => vec![layers.clone()],
            Self::Windows(windows) => windows.clone(),
        }
    }

    /// The element-wise sum over windows, what SGLang balances on.
    ///
    /// # Errors
    ///
    /// [`PlanError::SizeMismatch`] when the windows do not all have the same shape;
    /// [`PlanError::Cost`] (`CountTooSmall`) for no window, (`NonFinite`) for a sum that is
    /// NaN or overflows (counts near `f64::MAX`).
    pub fn summed(&self) -> Result<Vec<Vec<f64>>, PlanError> {
        let windows = self.windows();
        let Some(first) = windows.first() else {
            return Err(PlanError::Cost(CostModelError::CountTooSmall {
                what: "logical_count windows",
                min: 1,
                value: 0,
            }));
        };
        let mut sum = first.clone();
        for window in &windows[1..] {
            check_same_shape(&sum, window)?;
            for (acc, layer) in sum.iter_mut().zip(window) {
                for (a, &b) in acc.iter_mut().zip(layer) {
                    *a += b;
                }
            }
        }
        for &x in sum.iter().flatten() {
            comm_cost_model::check_finite_result("summed logical_count", x)?;
        }
        Ok(sum)
    }
}

fn check_same_shape(a: &[Vec<f64>], b: &[Vec<f64>]) -> Result<(), PlanError> {
    if a.len() != b.len() {
        return Err(PlanError::SizeMismatch {
            what: "logical_count windows (layers)",
            expected: a.len(),
            actual: b.len(),
        });
    }
    for (x, y) in a.iter().zip(b) {
        if x.len() != y.len() {
            return Err(PlanError::SizeMismatch {
                what: "logical_count windows (experts)",
                expected: x.len(),
                actual: y.len(),
            });
        }
    }
    Ok(())
}

/// A placement in SGLang's `--init-expert-location` format: the whole file, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineFile {
    /// `[layers][physical slots]`: the logical expert in each slot; slot `s` is on GPU
    /// `s / slots_per_gpu`.
    pub physical_to_logical_map: Vec<Vec<i64>>,
}

/// Reads a current placement: `{"physical_to_logical_map": ...}`; extra keys (for example a
/// plan's `logical_to_physical_map`) are ignored so a plan document can be fed back.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CurrentPlacementFile {
    /// `[layers][physical slots]` logical expert ids.
    pub physical_to_logical_map: Vec<Vec<i64>>,
}

/// EPLB's `logical_to_physical_map` for one layer: each expert's slots (the library's
/// [`expert_placement::Placement::logical_to_physical`]) padded with -1 to `width` entries
/// (an expert with more slots than `width` keeps them all).
///
/// # Errors
///
/// [`PlanError::TooLarge`] when `width` or a slot id exceeds
/// [`expert_placement::MAX_PLACEMENT_SLOTS`] (checked before any row is allocated).
///
/// # Complexity
///
/// `O(experts * max(width, replicas))` time and space.
///
/// # Examples
///
/// ```
/// use moe_planner::placement::formats::pad_logical_to_physical;
/// let map = pad_logical_to_physical(vec![vec![1], vec![0, 2]], 2)?;
/// assert_eq!(map, vec![vec![1, -1], vec![0, 2]]);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn pad_logical_to_physical(
    slots_of_expert: Vec<Vec<usize>>,
    width: usize,
) -> Result<Vec<Vec<i64>>, PlanError> {
    let limit = expert_placement::MAX_PLACEMENT_SLOTS;
    let largest = slots_of_expert.iter().flatten().copied().max().unwrap_or(0);
    for (what, value) in [
        ("logical_to_physical_map width", width),
        ("slot id", largest),
    ] {
        if value > limit {
            return Err(PlanError::TooLarge { what, limit, value });
        }
    }
    Ok(slots_of_expert
        .into_iter()
        .map(|slots| {
            let len = slots.len();
            slots
                .into_iter()
                // Below MAX_PLACEMENT_SLOTS (2^24), so the conversion is exact.
                .map(|s| i64::try_from(s).unwrap_or(i64::MAX))
                .chain(std::iter::repeat_n(-1, width.saturating_sub(len)))
                .collect()
        })
        .collect())
}

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

use comm_cost_model::{InputError, check_at_most};

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
    /// [`PlanError::InvalidField`] (`logical_count`) for a negative, NaN or infinite count in any
    /// window, [`PlanError::Input`] (`SizeMismatch`) when the windows do not all have the same shape;
    /// [`PlanError::Input`] (`CountTooSmall`) for no window, (`NonFinite`) for a sum that is
    /// NaN or overflows (counts near `f64::MAX`).
    pub fn summed(&self) -> Result<Vec<Vec<f64>>, PlanError> {
        self.check_counts()?;
        let windows = self.windows();
        let Some(first) = windows.first() else {
            return Err(PlanError::Input(InputError::CountTooSmall {
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

impl LogicalCount {
    /// Every count finite and non-negative, checked in every window before any sum (a negative
    /// count in one window must not cancel against another's).
    ///
    /// # Errors
    ///
    /// [`PlanError::InvalidField`] (`logical_count`) naming the first bad entry.
    pub fn check_counts(&self) -> Result<(), PlanError> {
        let windows: Vec<&Vec<Vec<f64>>> = match self {
            Self::Layers(layers) => vec![layers],
            Self::Windows(windows) => windows.iter().collect(),
        };
        let three_d = matches!(self, Self::Windows(_));
        for (w, layers) in windows.iter().enumerate() {
            for (l, row) in layers.iter().enumerate() {
                if let Some((e, x)) = row
                    .iter()
                    .enumerate()
                    .find(|(_, x)| !(x.is_finite() && **x >= 0.0))
                {
                    let at = if three_d {
                        format!("[{w}][{l}][{e}]")
                    } else {
                        format!("[{l}][{e}]")
                    };
                    return Err(PlanError::InvalidField {
                        field: "logical_count",
                        reason: format!(
                            "logical_count{at} = {x} is not a finite non-negative token count"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

fn check_same_shape(a: &[Vec<f64>], b: &[Vec<f64>]) -> Result<(), PlanError> {
    if a.len() != b.len() {
        return Err(PlanError::Input(InputError::size_mismatch(
            "logical_count windows (layers)",
            a.len(),
            b.len(),
        )));
    }
    for (x, y) in a.iter().zip(b) {
        if x.len() != y.len() {
            return Err(PlanError::Input(InputError::size_mismatch(
                "logical_count windows (experts)",
                x.len(),
                y.len(),
            )));
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

/// Reads a current placement from either document `place` writes:
///
/// * the engine file, `{"physical_to_logical_map": [[...]]}` (`--out`; other keys, for example
///   EPLB's `logical_to_physical_map`, are ignored);
/// * a whole plan, `{"layers": [{"physical_to_logical_map": [...]}, ...], ...}` (`--json`),
///   whose per-layer maps are taken in layer order.
///
/// # Examples
///
/// ```
/// use moe_planner::placement::formats::CurrentPlacementFile;
/// let engine: CurrentPlacementFile =
///     serde_json::from_str(r#"{"physical_to_logical_map": [[0, 1]]}"#).unwrap();
/// let plan: CurrentPlacementFile = serde_json::from_str(
///     r#"{"policy": "optimal", "layers": [{"physical_to_logical_map": [0, 1], "gap": 0}]}"#,
/// )
/// .unwrap();
/// assert_eq!(engine, plan);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "CurrentDocument")]
pub struct CurrentPlacementFile {
    /// `[layers][physical slots]` logical expert ids.
    pub physical_to_logical_map: Vec<Vec<i64>>,
}

/// The two documents a current placement is read from.
#[derive(Deserialize)]
#[serde(untagged)]
#[serde(
    expecting = "a placement: {\"physical_to_logical_map\": [[...]]} (SGLang's file, `place --out`) \
                 or a plan document with \"layers\": [{\"physical_to_logical_map\": [...]}] \
                 (`place --json`)"
)]
enum CurrentDocument {
    Engine {
        physical_to_logical_map: Vec<Vec<i64>>,
    },
    Plan {
        layers: Vec<PlanLayerMap>,
    },
}

/// One layer of a plan document: its map; the other keys are ignored.
#[derive(Deserialize)]
struct PlanLayerMap {
    physical_to_logical_map: Vec<i64>,
}

impl From<CurrentDocument> for CurrentPlacementFile {
    fn from(doc: CurrentDocument) -> Self {
        let physical_to_logical_map = match doc {
            CurrentDocument::Engine {
                physical_to_logical_map,
            } => physical_to_logical_map,
            CurrentDocument::Plan { layers } => layers
                .into_iter()
                .map(|l| l.physical_to_logical_map)
                .collect(),
        };
        Self {
            physical_to_logical_map,
        }
    }
}

pub use expert_placement::MAX_PADDED_MAP_ENTRIES;

/// Checks, before allocating, that `layers` padded maps of `experts` rows of `width` entries
/// fit [`MAX_PADDED_MAP_ENTRIES`].
///
/// # Errors
///
/// [`PlanError::Input`] (`TooLarge`) naming the padded map's entry count.
///
/// # Examples
///
/// ```
/// use moe_planner::PlanError;
/// use moe_planner::comm_cost_model::InputError;
/// use moe_planner::placement::formats::check_padded_map_size;
/// assert!(check_padded_map_size(58, 256, 33).is_ok());
/// assert!(matches!(
///     check_padded_map_size(1, 16_384, 16_385),
///     Err(PlanError::Input(InputError::TooLarge { value: 268_451_840, .. }))
/// ));
/// ```
pub fn check_padded_map_size(layers: usize, experts: usize, width: usize) -> Result<(), PlanError> {
    let entries = layers.saturating_mul(experts).saturating_mul(width);
    Ok(check_at_most(
        "logical_to_physical_map entries (layers x experts x most replicas of an expert)",
        MAX_PADDED_MAP_ENTRIES,
        entries,
    )?)
}

/// EPLB's `logical_to_physical_map` for one layer: each expert's slots (the library's
/// [`expert_placement::Placement::logical_to_physical`]) padded with -1 to `width` entries
/// (an expert with more slots than `width` keeps them all).
///
/// # Errors
///
/// [`PlanError::Input`] (`TooLarge`) when `width` or a slot id exceeds
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
        check_at_most(what, limit, value)?;
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

/// An engine's current placement (`[layers][slots]` logical expert ids, SGLang's and vLLM's
/// `physical_to_logical_map`) checked and converted: one row per layer, `slots` ids per row, each
/// in `0..experts`, every expert present in every layer.
///
/// # Errors
///
/// [`PlanError::InvalidField`] with `field` (the caller's name for the map: `current`,
/// `old_global_expert_indices`) for a wrong layer or slot count, an id out of range (negative
/// included) or an expert without a slot, naming the layer and slot.
///
/// # Complexity
///
/// `O(layers · (slots + experts))`.
///
/// # Examples
///
/// ```
/// use moe_planner::placement::formats::current_placement;
///
/// let maps = current_placement(&[vec![1, 0, 1]], 1, 3, 2, "current")?;
/// assert_eq!(maps, vec![vec![1, 0, 1]]);
/// assert!(current_placement(&[vec![1, 1, 1]], 1, 3, 2, "current").is_err()); // no expert 0
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn current_placement(
    current: &[Vec<i64>],
    layers: usize,
    slots: usize,
    experts: usize,
    field: &'static str,
) -> Result<Vec<Vec<usize>>, PlanError> {
    let invalid = |reason: String| PlanError::InvalidField { field, reason };
    if current.len() != layers {
        return Err(invalid(format!(
            "{} layers, the loads have {layers}",
            current.len()
        )));
    }
    current
        .iter()
        .enumerate()
        .map(|(l, row)| {
            if row.len() != slots {
                return Err(invalid(format!(
                    "layer {l} has {} slots, the cluster has {slots}",
                    row.len()
                )));
            }
            let mut seen = vec![false; experts];
            let map = row
                .iter()
                .enumerate()
                .map(|(s, &id)| {
                    let e = usize::try_from(id)
                        .ok()
                        .filter(|&e| e < experts)
                        .ok_or_else(|| {
                            invalid(format!(
                                "layer {l}, slot {s}: expert id {id} is not in 0..{experts}"
                            ))
                        })?;
                    seen[e] = true;
                    Ok(e)
                })
                .collect::<Result<Vec<usize>, PlanError>>()?;
            if let Some(e) = seen.iter().position(|&x| !x) {
                return Err(invalid(format!("layer {l}: expert {e} has no slot")));
            }
            Ok(map)
        })
        .collect()
}

//! What to place: loads, cluster, policy, current placement; and what can be wrong with it.

use comm_cost_model::check_at_most;
use expert_placement::{
    CancelFlag, EplbPolicy, MAX_PLACEMENT_SLOTS, MAX_PLAN_ENTRIES, PlacementAlgorithm,
    PlacementCluster, PlacementError, PlacementOptions, RobustObjective,
};
use serde::{Deserialize, Serialize};

use crate::PlanError;

/// Which planner places the experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementPolicy {
    /// Minimum maximum GPU load, never two replicas of an expert on one GPU (default).
    #[default]
    Optimal,
    /// [`PlacementPolicy::Optimal`] with each expert group's replicas kept inside one node
    /// (needs `groups`); the plan reports what the constraint costs.
    OptimalNodeAware,
    /// Branch and bound to proven optimality (small instances only).
    Exact,
    /// DeepSeek's EPLB as published: hierarchical when `groups` is a multiple of the node
    /// count, global otherwise. Mostly useful to export EPLB's own plan.
    Eplb,
}

/// A placement request. Loads are token counts (any unit, as long as all layers agree); the
/// plan's loads are in the same unit per unit of GPU speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementSpec {
    /// `[layers][experts]`: load of each logical expert, the window to plan on (the newest).
    pub loads: Vec<Vec<f64>>,
    /// Older windows, each `[layers][experts]`, oldest first. With policy `optimal` every layer
    /// is planned against all of them and `loads` at once ([`RobustObjective`]); with policy
    /// `eplb` EPLB plans on their element-wise sum with `loads` (as SGLang does with a 3-D
    /// `logical_count`); `optimal-node-aware` and `exact` have no multi-window planner and
    /// refuse windows ([`PlanError::Incompatible`]). The baseline is then EPLB on the summed
    /// windows, figures are scored under `loads`, and the plan reports each window's figure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<Vec<Vec<f64>>>,
    /// How windows combine (default `worst`).
    #[serde(default)]
    pub robust_objective: RobustObjective,
    /// Number of GPUs `G`.
    pub gpus: usize,
    /// Physical expert slots per GPU `S` (`R = G * S >= E`).
    pub slots_per_gpu: usize,
    /// Number of nodes; GPUs are numbered node by node, and when `nodes` does not divide `gpus`
    /// the first `gpus % nodes` nodes hold one GPU more. Default 1.
    #[serde(default = "one")]
    pub nodes: usize,
    /// Relative compute speed of each GPU (default all 1): a GPU's load is divided by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_speed: Option<Vec<f64>>,
    /// Number of expert groups (contiguous experts, DeepSeek-V3 group-limited routing), used by
    /// EPLB's hierarchical policy and by `optimal-node-aware`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<usize>,
    /// The planner (default `optimal`).
    #[serde(default)]
    pub policy: PlacementPolicy,
    /// The placement serving now, `[layers][R]` logical expert per slot (SGLang's
    /// `physical_to_logical_map`); turns the plan into a fewest-move rebalance (policy
    /// `optimal` without `windows`; under `optimal-node-aware` each node rebalanced in place or the node-aware plan relabeled onto this placement,
    /// whichever moves less within `tolerance`, groups still inside nodes;
    /// with windows or another policy, the plan is made as usual and its moves from this
    /// placement are reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Vec<Vec<i64>>>,
    /// Allowed relative excess of the maximum GPU load over the best found, traded for fewer
    /// moves (default 0).
    #[serde(default)]
    pub tolerance: f64,
    /// Bytes of one expert's weights; gives transfer sizes and times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_bytes: Option<f64>,
    /// Per-GPU bandwidth for weight transfers in Gbps (default 400).
    #[serde(default = "default_bandwidth_gbps")]
    pub bandwidth_gbps: f64,
    /// Copies one GPU may send, and receive, per migration round of a rebalance's
    /// `transfer_rounds` (default 1: one peer at a time, as vLLM PR 52641 does).
    #[serde(default = "one")]
    pub transfer_peer_limit: usize,
    /// Steps the exact search of one layer may take (policies `optimal`, `optimal-node-aware`
    /// and `exact`; absent: 500,000 (3,000,000 for the 2-slot count search), or 20,000,000 for
    /// `exact`; 0 skips the exact search).
    /// Rebalances and robust plans use the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_steps: Option<u64>,
    /// Wall-clock limit of one layer's search in seconds (absent: 1). A search it ends depends
    /// on the machine's speed; the plan's `termination` says `time-capped`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget_s: Option<f64>,
    /// Stops the plan from another thread (the Python package raises it on Ctrl-C); the plan
    /// then fails with [`PlacementError::Cancelled`]. Never read from or written to JSON.
    #[serde(skip)]
    pub cancel: Option<CancelFlag>,
}

fn one() -> usize {
    1
}

fn default_bandwidth_gbps() -> f64 {
    400.0
}

impl PlacementSpec {
    /// A spec with the defaults: one node, speed 1, no groups, policy `optimal`, no current
    /// placement, tolerance 0, no expert size, 400 Gbps.
    #[must_use]
    pub fn new(loads: Vec<Vec<f64>>, gpus: usize, slots_per_gpu: usize) -> Self {
        Self {
            loads,
            windows: Vec::new(),
            robust_objective: RobustObjective::default(),
            gpus,
            slots_per_gpu,
            nodes: 1,
            gpu_speed: None,
            groups: None,
            policy: PlacementPolicy::default(),
            current: None,
            tolerance: 0.0,
            expert_bytes: None,
            bandwidth_gbps: default_bandwidth_gbps(),
            transfer_peer_limit: 1,
            search_steps: None,
            time_budget_s: None,
            cancel: None,
        }
    }

    /// The search budget of the spec ([`expert_placement::PlacementOptions`]).
    #[must_use]
    pub fn options(&self) -> PlacementOptions {
        PlacementOptions {
            search_steps: self.search_steps,
            time_budget_s: self
                .time_budget_s
                .unwrap_or(expert_placement::DEFAULT_TIME_BUDGET_S),
            cancel: self.cancel.clone(),
        }
    }

    /// Checks every field a user sets, in the spec's own vocabulary, before any planner runs:
    /// one [`PlanError::InvalidField`] or [`PlanError::Incompatible`] naming the field, instead
    /// of a planner's internal name for it. Returns the expert count.
    pub(crate) fn check_fields(&self) -> Result<usize, PlanError> {
        let experts = check_load_array("loads", &self.loads, None)?;
        for (w, window) in self.windows.iter().enumerate() {
            check_load_array("windows", window, Some((w, self.loads.len(), experts)))?;
        }
        let invalid =
            |field: &'static str, reason: String| PlanError::InvalidField { field, reason };
        if self.gpus == 0 {
            return Err(invalid("gpus", "there must be at least one GPU".into()));
        }
        if let Some(t) = self.time_budget_s
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(invalid(
                "time_budget_s",
                format!("{t} is not a finite non-negative number of seconds"),
            ));
        }
        if self.transfer_peer_limit == 0 {
            return Err(invalid(
                "transfer_peer_limit",
                "a GPU must be able to send to one peer per round at least".into(),
            ));
        }
        if self.slots_per_gpu == 0 {
            return Err(invalid(
                "slots_per_gpu",
                "every GPU needs at least one expert slot".into(),
            ));
        }
        if self.nodes == 0 || self.nodes > self.gpus {
            return Err(invalid(
                "nodes",
                format!(
                    "{} node(s) for {} GPU(s): there must be between 1 node and one node per GPU",
                    self.nodes, self.gpus
                ),
            ));
        }
        let slots = self.gpus.checked_mul(self.slots_per_gpu).ok_or_else(|| {
            invalid(
                "slots_per_gpu",
                format!(
                    "{} GPUs x {} slots overflows",
                    self.gpus, self.slots_per_gpu
                ),
            )
        })?;
        // Size limits named by the spec's fields (the placement cluster would say "total
        // slots", a name the user never typed).
        check_at_most(
            "total slots (gpus x slots_per_gpu)",
            MAX_PLACEMENT_SLOTS,
            slots,
        )?;
        check_at_most(
            "plan entries (layers x gpus x slots_per_gpu)",
            MAX_PLAN_ENTRIES,
            self.loads.len().saturating_mul(slots),
        )?;
        if slots < experts {
            return Err(invalid(
                "slots_per_gpu",
                format!(
                    "{} GPU(s) x {} slot(s) = {slots} slots cannot hold {experts} experts \
                     (every expert needs at least one slot)",
                    self.gpus, self.slots_per_gpu
                ),
            ));
        }
        if self.slots_per_gpu > experts && self.policy != PlacementPolicy::Eplb {
            return Err(invalid(
                "slots_per_gpu",
                format!(
                    "{} slots per GPU but only {experts} experts: a GPU would hold one expert \
                     twice (policy {} never does)",
                    self.slots_per_gpu,
                    self.policy.name()
                ),
            ));
        }
        if let Some(speed) = &self.gpu_speed {
            if speed.len() != self.gpus {
                return Err(invalid(
                    "gpu_speed",
                    format!("{} speeds for {} GPUs", speed.len(), self.gpus),
                ));
            }
            if let Some((g, x)) = speed
                .iter()
                .enumerate()
                .find(|(_, x)| !(x.is_finite() && **x > 0.0))
            {
                return Err(invalid(
                    "gpu_speed",
                    format!("GPU {g}: speed {x} is not a finite positive number"),
                ));
            }
        }
        if let Some(groups) = self.groups {
            if groups == 0 {
                return Err(invalid("groups", "there must be at least one group".into()));
            }
            if experts % groups != 0 {
                return Err(invalid(
                    "groups",
                    format!(
                        "{experts} experts cannot be split into {groups} groups of equal size \
                         (groups must divide the expert count)"
                    ),
                ));
            }
        }
        for (field, value, positive) in [
            ("tolerance", Some(self.tolerance), false),
            ("expert_bytes", self.expert_bytes, true),
            ("bandwidth_gbps", Some(self.bandwidth_gbps), true),
        ] {
            let Some(x) = value else { continue };
            if !x.is_finite() || x < 0.0 || (positive && x == 0.0) {
                let kind = if positive { "positive" } else { "non-negative" };
                return Err(invalid(field, format!("{x} is not a finite {kind} number")));
            }
        }
        if !self.windows.is_empty() {
            let reason = match self.policy {
                PlacementPolicy::OptimalNodeAware => Some(
                    "no planner keeps expert groups inside nodes across several load windows; \
                     plan on one window (sum the windows into the loads) or use policy optimal",
                ),
                PlacementPolicy::Exact => Some(
                    "the exact solver plans one load window; plan on one window (sum the \
                     windows into the loads) or use policy optimal",
                ),
                PlacementPolicy::Optimal | PlacementPolicy::Eplb => None,
            };
            if let Some(reason) = reason {
                return Err(PlanError::Incompatible {
                    field: "windows",
                    other: "policy",
                    reason: format!("policy {}: {reason}", self.policy.name()),
                });
            }
        }
        if let Some(current) = &self.current {
            check_current(current, self.loads.len(), slots, experts)?;
        }
        Ok(experts)
    }

    /// The validated cluster of the spec.
    pub(crate) fn cluster(&self) -> Result<PlacementCluster, PlanError> {
        let uniform = PlacementCluster::uniform(self.gpus, self.slots_per_gpu, self.nodes)?;
        match &self.gpu_speed {
            None => Ok(uniform),
            Some(speed) => Ok(PlacementCluster::new(
                uniform.slots_of_gpu().to_vec(),
                speed.clone(),
                uniform.node_of_gpu().to_vec(),
            )?),
        }
    }

    /// The planner the policy names.
    pub(crate) fn algorithm(&self) -> Result<PlacementAlgorithm, PlanError> {
        Ok(match self.policy {
            PlacementPolicy::Optimal => PlacementAlgorithm::Optimal,
            PlacementPolicy::Exact => PlacementAlgorithm::Exact,
            PlacementPolicy::Eplb => PlacementAlgorithm::Eplb(self.eplb_policy()),
            PlacementPolicy::OptimalNodeAware => PlacementAlgorithm::OptimalNodeAware {
                groups: self.groups.ok_or(PlanError::MissingField {
                    field: "groups",
                    needed_by: "policy optimal-node-aware",
                })?,
            },
        })
    }

    /// The EPLB policy our plan is compared with, like for like: EPLB's global policy for the
    /// unconstrained planners (`optimal`, `exact`), EPLB's own choice for this shape
    /// (hierarchical when `groups` is a multiple of `nodes`) for `optimal-node-aware` and
    /// `eplb`.
    pub(crate) fn baseline_policy(&self) -> EplbPolicy {
        match self.policy {
            PlacementPolicy::Optimal | PlacementPolicy::Exact => EplbPolicy::Global,
            PlacementPolicy::OptimalNodeAware | PlacementPolicy::Eplb => self.eplb_policy(),
        }
    }

    /// EPLB's own choice of policy for this shape (its `rebalance_experts`).
    /// Without groups EPLB's global policy (SGLang picks it when the model has no groups).
    pub(crate) fn eplb_policy(&self) -> EplbPolicy {
        self.groups
            .map_or(EplbPolicy::Global, |g| EplbPolicy::for_shape(g, self.nodes))
    }
}

impl PlacementPolicy {
    /// The policy's name in specs and on the command line (`optimal`, `optimal-node-aware`,
    /// `exact`, `eplb`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Optimal => "optimal",
            Self::OptimalNodeAware => "optimal-node-aware",
            Self::Exact => "exact",
            Self::Eplb => "eplb",
        }
    }
}

/// Every layer of a `[layers][experts]` array present, of one length, finite and
/// non-negative; the expert count. `window` is `(index, layers, experts)` for an older window,
/// which must have the newest's shape.
fn check_load_array(
    field: &'static str,
    rows: &[Vec<f64>],
    window: Option<(usize, usize, usize)>,
) -> Result<usize, PlanError> {
    let at = |l: usize| match window {
        Some((w, ..)) => format!("window {w}, layer {l}"),
        None => format!("layer {l}"),
    };
    let invalid = |reason: String| PlanError::InvalidField { field, reason };
    let experts = match window {
        Some((w, layers, experts)) => {
            if rows.len() != layers {
                return Err(invalid(format!(
                    "window {w} has {} layers, the newest loads have {layers}",
                    rows.len()
                )));
            }
            experts
        }
        None => rows
            .first()
            .ok_or_else(|| invalid("no layer: give at least one layer of expert loads".into()))?
            .len(),
    };
    if experts == 0 {
        return Err(invalid(
            "no expert: a layer needs at least one expert load".into(),
        ));
    }
    for (l, row) in rows.iter().enumerate() {
        if row.len() != experts {
            return Err(invalid(format!(
                "{} has {} experts, expected {experts} (every layer has the same experts)",
                at(l),
                row.len()
            )));
        }
        if let Some((e, x)) = row
            .iter()
            .enumerate()
            .find(|(_, x)| !(x.is_finite() && **x >= 0.0))
        {
            return Err(invalid(format!(
                "{}, expert {e}: load {x} is not a finite non-negative number",
                at(l)
            )));
        }
    }
    Ok(experts)
}

/// A current placement: one row per layer, one valid expert id per slot, every expert present.
fn check_current(
    current: &[Vec<i64>],
    layers: usize,
    slots: usize,
    experts: usize,
) -> Result<(), PlanError> {
    super::formats::current_placement(current, layers, slots, experts, "current").map(|_| ())
}

/// Attaches a layer index to a planner error.
pub(crate) fn in_layer(layer: usize) -> impl Fn(PlacementError) -> PlanError {
    move |source| PlanError::Layer { layer, source }
}

/// Attaches a layer index to a placement error inside a [`PlanError`].
pub(crate) fn plan_error_in_layer(layer: usize) -> impl Fn(PlanError) -> PlanError {
    move |err| match err {
        PlanError::Placement(source) => PlanError::Layer { layer, source },
        other => other,
    }
}

//! What to place: loads, cluster, policy, current placement; and what can be wrong with it.

use expert_placement::PlacementError;
use expert_placement::{EplbPolicy, PlacementAlgorithm, PlacementCluster, RobustObjective};
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
    /// Older windows, each `[layers][experts]`: when given, every layer is planned against all of
    /// them and `loads` at once ([`RobustObjective`]), and the plan reports each window's figure.
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
    /// `optimal` without `windows`; with windows or another policy, the plan is made as usual
    /// and its moves from this placement are reported).
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
        }
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

    /// EPLB's own choice of policy for this shape (its `rebalance_experts`).
    /// Without groups EPLB's global policy (SGLang picks it when the model has no groups).
    pub(crate) fn eplb_policy(&self) -> EplbPolicy {
        self.groups
            .map_or(EplbPolicy::Global, |g| EplbPolicy::for_shape(g, self.nodes))
    }
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

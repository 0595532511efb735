//! The inference plan: placement, per-layer schedules and times, and the baselines.

use alltoall_sched::Transfer;
use serde::{Deserialize, Serialize};

/// Which of Aurora's four scenarios the spec falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// One model, identical GPUs (Aurora §4).
    ExclusiveHomogeneous,
    /// One model, mixed GPUs (§5).
    ExclusiveHeterogeneous,
    /// Two models, identical GPUs (§6).
    ColocatingHomogeneous,
    /// Two models, mixed GPUs (§7, NP-hard; heuristic).
    ColocatingHeterogeneous,
}

/// One all-to-all of one layer as scheduled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllToAllSummary {
    /// Lower bound (Aurora Thm 4.2 / 5.2), seconds.
    pub lower_bound_s: f64,
    /// Completion time of the schedule, seconds.
    pub makespan_s: f64,
    /// Transfers in the schedule.
    pub pieces: usize,
    /// GPU pairs with traffic: the fewest transfers any schedule can have.
    #[serde(default)]
    pub nonzero_pairs: usize,
    /// The transfers a system runs, ordered by sender, then start time: each GPU posts its
    /// sends in this order, one outstanding send per port.
    #[serde(default)]
    pub timetable: Vec<Transfer>,
}

/// One MoE layer of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerPlan {
    /// The dispatch all-to-all of all models on the cluster (aggregated when colocated).
    pub dispatch: AllToAllSummary,
    /// The combine all-to-all (aggregated when colocated).
    pub combine: AllToAllSummary,
    /// Layer inference time (Eq. 1, or Eq. 4 when colocated), seconds.
    pub inference_time_s: f64,
    /// Replicated mode: this layer's placement, `experts_of_gpu[g]` the experts GPU `g`
    /// hosts, one per slot (replicas repeated on every GPU that holds one). Empty in the
    /// one-per-GPU mode, whose placement is the plan's `experts_of_gpu` for every layer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub experts_of_gpu: Vec<Vec<usize>>,
}

/// How the baseline deployment does on the same workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineSummary {
    /// What the baseline is.
    pub description: String,
    /// `experts_of_gpu` of the baseline placement (one-per-GPU mode; empty in the replicated
    /// mode, where the baselines place each layer anew).
    pub experts_of_gpu: Vec<Vec<usize>>,
    /// Its total inference time over all layers, seconds.
    pub inference_time_s: f64,
    /// Its inference time over the plan's (1 when both are zero).
    #[serde(default)]
    pub speedup: f64,
}

/// The plan: placement, per-layer schedules and times, and the baseline comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InferencePlan {
    /// The scenario the spec falls in.
    pub scenario: Scenario,
    /// One-per-GPU mode: `experts_of_gpu[g]` lists the experts GPU `g` hosts, one per model in
    /// model order (the same placement for every layer). Empty in the replicated mode, where
    /// each layer has its own placement in the same shape: `layers[l].experts_of_gpu`.
    pub experts_of_gpu: Vec<Vec<usize>>,
    /// Per-layer schedules and times.
    pub layers: Vec<LayerPlan>,
    /// Inference time summed over layers, seconds.
    pub inference_time_s: f64,
    /// Each GPU's compute time (gate, FFN, aggregation of every model it hosts) over the layer's
    /// inference time, averaged over GPUs and layers (§8.1).
    pub gpu_utilization: f64,
    /// The baseline a plain deployment gets: random placement with shortest-job-first order
    /// (one expert per GPU), EPLB with NCCL's peer order (many experts per GPU).
    pub baseline: BaselineSummary,
    /// `baseline.inference_time_s / inference_time_s` (1 when both are zero).
    pub speedup_over_baseline: f64,
    /// Every baseline on the same cost model, `baseline` first.
    #[serde(default)]
    pub baselines: Vec<BaselineSummary>,
}

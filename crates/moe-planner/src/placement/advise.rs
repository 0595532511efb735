//! The EPLB advisor: how many redundant experts a workload needs, and whether rebalancing a
//! running placement now pays for its weight transfers.

use serde::{Deserialize, Serialize};

use super::plan::{PlacementPlan, plan_placement};
use super::spec::{PlacementPolicy, PlacementSpec};
use crate::PlanError;

/// Default `target_imbalance`: the busiest GPU at most 5% above the mean.
pub const DEFAULT_TARGET_IMBALANCE: f64 = 1.05;

/// Default steps each layer's exact search may take in the advisor's plans (small instances
/// only): a deterministic budget, so the advice depends on the loads alone, never on the
/// machine's speed. It stays at 2,000,000, four times `place`'s default: the advisor has no
/// wall-clock limit that a longer search could run into, and on EPLB's README example (12
/// experts on 4 GPUs x 6 slots) the longer search finds a lower plan (1.0002 against 1.0003).
pub const ADVISE_SEARCH_STEPS: u64 = 2_000_000;

/// The advisor's wall-clock limit per layer, seconds: high enough never to decide (the step
/// budget does), see [`ADVISE_SEARCH_STEPS`].
const ADVISE_TIME_BUDGET_S: f64 = 3600.0;

/// Default `min_gain`: rebalance when it cuts the busiest GPU's load (mean over layers) by at
/// least 5%.
pub const DEFAULT_MIN_GAIN: f64 = 0.05;

/// What to advise on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdviseSpec {
    /// `[layers][experts]`: load of each logical expert (SGLang's `logical_count`, vLLM's
    /// expert load window summed).
    pub loads: Vec<Vec<f64>>,
    /// GPUs (expert-parallel ranks).
    pub gpus: usize,
    /// Nodes (default 1). With `groups` and more than one node, plans keep every group inside
    /// one node (`optimal-node-aware` against EPLB's hierarchical policy).
    #[serde(default = "one")]
    pub nodes: usize,
    /// Expert groups (must divide the experts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<usize>,
    /// Largest number of redundant experts (slots beyond one per expert) to try (default: the
    /// GPU count, one extra slot per GPU on average, or the smallest feasible count above it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_redundant: Option<usize>,
    /// The balance to reach: the busiest GPU's load over the mean, averaged over layers
    /// (default [`DEFAULT_TARGET_IMBALANCE`]).
    #[serde(default = "default_target")]
    pub target_imbalance: f64,
    /// The placement serving now, `[layers][slots]` (SGLang's `physical_to_logical_map`):
    /// asks whether rebalancing it now pays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Vec<Vec<i64>>>,
    /// Relative gain (cut in the mean over layers of the busiest GPU's load) below which a
    /// rebalance is not worth it (default [`DEFAULT_MIN_GAIN`]).
    #[serde(default = "default_min_gain")]
    pub min_gain: f64,
    /// Allowed relative excess of the rebalance's maximum load over the best, traded for fewer
    /// copies (default 0).
    #[serde(default)]
    pub tolerance: f64,
    /// Bytes of one expert's weights (gives transfer bytes and time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_bytes: Option<f64>,
    /// Per-GPU bandwidth for weight transfers, Gbps (default 400).
    #[serde(default = "default_bandwidth_gbps")]
    pub bandwidth_gbps: f64,
    /// Copies one GPU may send, and receive, per migration round (default 1).
    #[serde(default = "one")]
    pub transfer_peer_limit: usize,
    /// Steps each layer's exact search may take (small instances only; default
    /// [`ADVISE_SEARCH_STEPS`]); deterministic, there is no wall-clock limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_steps: Option<u64>,
    /// Stops the advice from another thread (see [`PlacementSpec::cancel`]); never read from
    /// or written to JSON.
    #[serde(skip)]
    pub cancel: Option<expert_placement::CancelFlag>,
}

fn one() -> usize {
    1
}
fn default_target() -> f64 {
    DEFAULT_TARGET_IMBALANCE
}
fn default_min_gain() -> f64 {
    DEFAULT_MIN_GAIN
}
fn default_bandwidth_gbps() -> f64 {
    400.0
}

impl AdviseSpec {
    /// A spec with the defaults for `loads` on `gpus` GPUs.
    #[must_use]
    pub fn new(loads: Vec<Vec<f64>>, gpus: usize) -> Self {
        Self {
            loads,
            gpus,
            nodes: 1,
            groups: None,
            max_redundant: None,
            target_imbalance: DEFAULT_TARGET_IMBALANCE,
            current: None,
            min_gain: DEFAULT_MIN_GAIN,
            tolerance: 0.0,
            expert_bytes: None,
            bandwidth_gbps: default_bandwidth_gbps(),
            transfer_peer_limit: 1,
            search_steps: None,
            cancel: None,
        }
    }
}

/// The balance with one number of redundant experts, ours and EPLB's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedundancyPoint {
    /// Redundant experts (slots beyond one per expert, per layer).
    pub redundant: usize,
    /// Slots per GPU (`(experts + redundant) / gpus`).
    pub slots_per_gpu: usize,
    /// Our plan: the busiest GPU's load over the mean, averaged over layers.
    pub imbalance: f64,
    /// Our plan's worst layer.
    pub worst_layer_imbalance: f64,
    /// EPLB's plan on the same input, averaged over layers.
    pub baseline_imbalance: f64,
    /// EPLB's worst layer.
    pub baseline_worst_layer_imbalance: f64,
}

/// Whether rebalancing the current placement now pays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebalanceAdvice {
    /// The current placement under these loads: busiest over mean, averaged over layers.
    pub current_imbalance: f64,
    /// After the fewest-move rebalance.
    pub rebalanced_imbalance: f64,
    /// `1 - rebalanced / current` of the busiest GPU's load averaged over layers: the share of
    /// the MoE layers' critical-path compute the rebalance saves.
    pub gain: f64,
    /// Expert copies to make (all layers).
    pub moves: usize,
    /// Bytes moved (with `expert_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_bytes: Option<f64>,
    /// Migration rounds over all layers (each GPU at most `transfer_peer_limit` copies out and
    /// in per round).
    pub transfer_rounds: usize,
    /// Time of those rounds, layer after layer, seconds (with `expert_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_time_s: Option<f64>,
    /// The threshold the recommendation used (`min_gain`).
    pub min_gain: f64,
    /// Rebalance now: `gain >= min_gain`.
    pub recommend: bool,
}

/// The advisor's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// Logical experts per layer.
    pub experts: usize,
    /// GPUs.
    pub gpus: usize,
    /// Our planner (`optimal` or `optimal-node-aware`) and EPLB's policy beside it.
    pub policy: String,
    /// EPLB's policy.
    pub baseline_policy: String,
    /// The target balance.
    pub target_imbalance: f64,
    /// Every feasible number of redundant experts from the fewest up to `max_redundant`
    /// (feasible: `experts + redundant` a multiple of `gpus`, at most `experts` slots per GPU).
    pub points: Vec<RedundancyPoint>,
    /// The fewest redundant experts whose plan reaches the target (ours), if any does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommended_redundant: Option<usize>,
    /// The same for EPLB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_recommended_redundant: Option<usize>,
    /// With a current placement: whether rebalancing it now pays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebalance: Option<RebalanceAdvice>,
}

/// Advises on expert-parallel load balancing from the actual load statistics: the balance
/// (busiest GPU's load over the mean, averaged over layers) for every feasible number of
/// redundant experts, ours and EPLB's, the fewest that reach `target_imbalance`, and, with the
/// current placement, the gain of a fewest-move rebalance now against its transfers, with a
/// yes/no recommendation (`gain >= min_gain`).
///
/// Every plan searches with `search_steps` (default [`ADVISE_SEARCH_STEPS`]) and no
/// wall-clock limit that matters, so the same loads always get the same advice.
///
/// Operators ask this (vllm-ascend RFC 16795, SGLang issue 8345's skip threshold, `ROCm` ATOM's
/// `--eplb-rebalance-min-balancedness`); here every figure is a plan of
/// [`plan_placement`] on the given loads.
///
/// # Errors
///
/// [`PlanError::InvalidField`] naming the field: `gpus` zero, `target_imbalance` below 1 or not
/// finite, `min_gain` or `tolerance` negative or not finite, `current` rows whose length is not
/// a multiple of `gpus` or whose slots per GPU exceed the experts; no feasible number of
/// redundant experts up to `max_redundant` (`max_redundant`); and every error of
/// [`plan_placement`] on the derived specs.
///
/// # Complexity
///
/// One [`plan_placement`] per feasible point (`max_redundant / gpus + 1` of them) plus one
/// rebalance.
///
/// # Examples
///
/// ```
/// use moe_planner::placement::{AdviseSpec, advise};
///
/// // One hot expert among 8 on 4 GPUs: without redundancy its GPU carries 8x the mean share.
/// let mut loads = vec![10.0; 8];
/// loads[0] = 80.0;
/// let a = advise(&AdviseSpec::new(vec![loads], 4))?;
/// assert_eq!(a.points[0].redundant, 0);
/// assert!(a.points[0].imbalance > 1.5);
/// assert!(a.points.last().unwrap().imbalance < a.points[0].imbalance);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn advise(spec: &AdviseSpec) -> Result<Advice, PlanError> {
    let invalid = |field: &'static str, reason: String| PlanError::InvalidField { field, reason };
    if spec.gpus == 0 {
        return Err(invalid("gpus", "there must be at least one GPU".into()));
    }
    if !(spec.target_imbalance.is_finite() && spec.target_imbalance >= 1.0) {
        return Err(invalid(
            "target_imbalance",
            format!(
                "{} is not a finite number of at least 1 (busiest GPU over the mean)",
                spec.target_imbalance
            ),
        ));
    }
    if !(spec.min_gain.is_finite() && spec.min_gain >= 0.0) {
        return Err(invalid(
            "min_gain",
            format!("{} is not a finite non-negative fraction", spec.min_gain),
        ));
    }
    let experts = spec.loads.first().map_or(0, Vec::len);
    if experts == 0 {
        return Err(invalid(
            "loads",
            "no expert: give at least one layer of expert loads".into(),
        ));
    }
    let node_aware = spec.groups.is_some() && spec.nodes > 1;
    let base = |slots: usize| {
        let mut s = PlacementSpec::new(spec.loads.clone(), spec.gpus, slots);
        s.nodes = spec.nodes;
        s.groups = spec.groups;
        s.policy = if node_aware {
            PlacementPolicy::OptimalNodeAware
        } else {
            PlacementPolicy::Optimal
        };
        s.search_steps = Some(spec.search_steps.unwrap_or(ADVISE_SEARCH_STEPS));
        s.time_budget_s = Some(ADVISE_TIME_BUDGET_S);
        s.cancel.clone_from(&spec.cancel);
        s
    };
    let first = (spec.gpus - experts % spec.gpus) % spec.gpus;
    let limit = spec
        .max_redundant
        .unwrap_or_else(|| first.saturating_add(spec.gpus))
        .max(first);
    let mut points = Vec::new();
    let mut names = (String::new(), String::new());
    let mut redundant = first;
    while redundant <= limit {
        let slots = (experts + redundant) / spec.gpus;
        if slots > experts {
            break;
        }
        let plan = plan_placement(&base(slots))?;
        points.push(point(redundant, slots, &plan));
        names = (plan.policy.clone(), plan.baseline_policy.clone());
        redundant = match redundant.checked_add(spec.gpus) {
            Some(r) => r,
            None => break,
        };
    }
    if points.is_empty() {
        return Err(invalid(
            "max_redundant",
            format!(
                "no feasible number of redundant experts up to {limit}: {experts} experts on {} \
                 GPUs need {first} to fill whole GPUs, and at most {experts} slots per GPU",
                spec.gpus
            ),
        ));
    }
    let reaches = |v: f64| v <= spec.target_imbalance;
    let rebalance = spec
        .current
        .as_ref()
        .map(|current| rebalance_advice(spec, current, experts, &base))
        .transpose()?;
    Ok(Advice {
        experts,
        gpus: spec.gpus,
        policy: names.0,
        baseline_policy: names.1,
        target_imbalance: spec.target_imbalance,
        recommended_redundant: points
            .iter()
            .find(|p| reaches(p.imbalance))
            .map(|p| p.redundant),
        baseline_recommended_redundant: points
            .iter()
            .find(|p| reaches(p.baseline_imbalance))
            .map(|p| p.redundant),
        points,
        rebalance,
    })
}

fn point(redundant: usize, slots: usize, plan: &PlacementPlan) -> RedundancyPoint {
    let ratio = |v: f64, mean: f64| if mean > 0.0 { v / mean } else { 1.0 };
    let worst = |f: fn(&super::LayerPlacement) -> f64| {
        plan.layers
            .iter()
            .map(|l| ratio(f(l), l.mean_gpu_load))
            .fold(1.0, f64::max)
    };
    RedundancyPoint {
        redundant,
        slots_per_gpu: slots,
        imbalance: plan.totals.mean_imbalance,
        worst_layer_imbalance: worst(|l| l.max_gpu_load),
        baseline_imbalance: plan.totals.baseline_mean_imbalance,
        baseline_worst_layer_imbalance: worst(|l| l.baseline_max_gpu_load),
    }
}

fn rebalance_advice(
    spec: &AdviseSpec,
    current: &[Vec<i64>],
    experts: usize,
    base: &dyn Fn(usize) -> PlacementSpec,
) -> Result<RebalanceAdvice, PlanError> {
    let slots_total = current.first().map_or(0, Vec::len);
    if slots_total % spec.gpus != 0 || slots_total == 0 {
        return Err(PlanError::InvalidField {
            field: "current",
            reason: format!(
                "{slots_total} slots per layer do not split evenly over {} GPUs",
                spec.gpus
            ),
        });
    }
    let mut s = base(slots_total / spec.gpus);
    if slots_total / spec.gpus > experts {
        return Err(PlanError::InvalidField {
            field: "current",
            reason: format!(
                "{} slots per GPU but only {experts} experts",
                slots_total / spec.gpus
            ),
        });
    }
    s.current = Some(current.to_vec());
    s.tolerance = spec.tolerance;
    s.expert_bytes = spec.expert_bytes;
    s.bandwidth_gbps = spec.bandwidth_gbps;
    s.transfer_peer_limit = spec.transfer_peer_limit;
    let plan = plan_placement(&s)?;
    let n = plan.layers.len().max(1) as f64;
    let ratio = |v: f64, mean: f64| if mean > 0.0 { v / mean } else { 1.0 };
    let current_imbalance = plan
        .layers
        .iter()
        .map(|l| {
            ratio(
                l.current_max_gpu_load.unwrap_or(l.max_gpu_load),
                l.mean_gpu_load,
            )
        })
        .sum::<f64>()
        / n;
    let mean_of =
        |f: &dyn Fn(&super::LayerPlacement) -> f64| plan.layers.iter().map(f).sum::<f64>() / n;
    let before = mean_of(&|l| l.current_max_gpu_load.unwrap_or(l.max_gpu_load));
    let after = mean_of(&|l| l.max_gpu_load);
    let gain = if before > 0.0 {
        1.0 - after / before
    } else {
        0.0
    };
    Ok(RebalanceAdvice {
        current_imbalance,
        rebalanced_imbalance: plan.totals.mean_imbalance,
        gain,
        moves: plan.totals.moves.unwrap_or(0),
        transfer_bytes: plan.totals.transfer_bytes,
        transfer_rounds: plan.totals.transfer_rounds.unwrap_or(0),
        transfer_time_s: plan.totals.transfer_rounds_time_s,
        min_gain: spec.min_gain,
        recommend: gain >= spec.min_gain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readme() -> Vec<Vec<f64>> {
        vec![
            vec![
                90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0,
            ],
            vec![
                20.0, 107.0, 104.0, 64.0, 19.0, 197.0, 187.0, 157.0, 172.0, 86.0, 16.0, 27.0,
            ],
        ]
    }

    #[test]
    fn redundancy_sweep_and_the_smallest_count_reaching_the_target() {
        let mut spec = AdviseSpec::new(readme(), 4);
        spec.max_redundant = Some(12);
        spec.target_imbalance = 1.02;
        spec.search_steps = Some(20_000);
        let a = advise(&spec).unwrap();
        let r: Vec<usize> = a.points.iter().map(|p| p.redundant).collect();
        assert_eq!(r, vec![0, 4, 8, 12]);
        // More slots never hurt our plan much, and the recommendation is the first point at
        // the target.
        assert!(a.points.last().unwrap().imbalance <= a.points[0].imbalance);
        if let Some(k) = a.recommended_redundant {
            let p = a.points.iter().find(|p| p.redundant == k).unwrap();
            assert!(p.imbalance <= 1.02);
            assert!(
                a.points
                    .iter()
                    .filter(|q| q.redundant < k)
                    .all(|q| q.imbalance > 1.02)
            );
        }
        assert!(
            a.points
                .iter()
                .all(|p| p.imbalance <= p.baseline_imbalance + 1e-9)
        );
    }

    #[test]
    fn rebalancing_an_unchanged_placement_does_not_pay() {
        let fresh = plan_placement(&PlacementSpec::new(readme(), 8, 2)).unwrap();
        let current: Vec<Vec<i64>> = fresh
            .physical_to_logical_map()
            .into_iter()
            .map(|r| r.into_iter().map(|e| i64::try_from(e).unwrap()).collect())
            .collect();
        let mut spec = AdviseSpec::new(readme(), 8);
        spec.search_steps = Some(20_000);
        spec.current = Some(current.clone());
        spec.expert_bytes = Some(1e9);
        let a = advise(&spec).unwrap().rebalance.unwrap();
        assert_eq!(a.moves, 0);
        assert!(!a.recommend && a.gain.abs() < 1e-12);
        // Reversed loads: the old placement is badly off, rebalancing pays.
        spec.loads = readme()
            .into_iter()
            .map(|r| r.into_iter().rev().collect())
            .collect();
        let a = advise(&spec).unwrap().rebalance.unwrap();
        assert!(a.recommend && a.gain >= DEFAULT_MIN_GAIN, "{a:?}");
        assert!(a.moves > 0 && a.transfer_rounds > 0);
        assert!(a.transfer_time_s.unwrap() > 0.0);
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |s: AdviseSpec| match advise(&s) {
            Err(PlanError::InvalidField { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(AdviseSpec::new(readme(), 0)), "gpus");
        let mut s = AdviseSpec::new(readme(), 4);
        s.target_imbalance = 0.5;
        assert_eq!(field(s), "target_imbalance");
        let mut s = AdviseSpec::new(readme(), 4);
        s.min_gain = f64::NAN;
        assert_eq!(field(s), "min_gain");
        let mut s = AdviseSpec::new(readme(), 4);
        s.current = Some(vec![vec![0; 7]; 2]);
        assert_eq!(field(s), "current");
        // 12 experts on 5 GPUs need 3 redundant; a limit of 2 still tries 3 (the fewest).
        let mut s = AdviseSpec::new(readme(), 5);
        s.max_redundant = Some(2);
        s.search_steps = Some(20_000);
        assert_eq!(advise(&s).unwrap().points[0].redundant, 3);
    }
}

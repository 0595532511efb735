//! Fuzzing `traffic::plan_traffic` (issue 23) with hostile shapes and values: every call returns
//! within [`moe_fuzz::TIME_LIMIT`] without panicking, and an `Ok` holds finite numbers only.
//!
//! `MOE_FUZZ_CASES=N` runs `N` cases (64 by default).

use moe_fuzz::{check_finite_json, count, f64_value, fuzz, vec_of};
use moe_planner::traffic::{TrafficSpec, plan_traffic};
use proptest::prelude::*;

/// Optional fields of the plan, where `null` means absent.
const OPTIONAL: &[&str] = &[
    "cross_node_bytes",
    "eplb_hierarchical",
    "topology_aware",
    "eplb_hierarchical_ratio",
    "topology_aware_ratio",
];

#[test]
fn plan_traffic_never_panics_or_returns_non_finite() {
    let strategy = (
        count(4),
        count(6),
        count(5),
        vec_of(f64_value(), 48),
        count(3),
        count(3),
        any::<bool>(),
        f64_value(),
        prop::option::of(f64_value()),
    );
    fuzz(
        "plan_traffic",
        strategy,
        |(gpus, experts, slots, values, nodes, groups, in_nodes, eps, bytes)| {
            let (gpus, experts) = (gpus.min(8), experts.min(12));
            let layer: Vec<Vec<f64>> = (0..gpus)
                .map(|g| {
                    (0..experts)
                        .map(|e| values.get(g * experts + e).copied().unwrap_or(1.0))
                        .collect()
                })
                .collect();
            let mut spec = TrafficSpec::new(vec![layer], slots.min(64), nodes.min(64));
            spec.groups = (groups > 0).then_some(groups.min(64));
            spec.groups_in_nodes = in_nodes;
            spec.traffic_tolerance = eps;
            spec.bytes_per_token = bytes;
            spec.time_budget_s = Some(0.5);
            match plan_traffic(&spec) {
                Ok(plan) => check_finite_json(&plan, OPTIONAL),
                Err(_) => Ok(()),
            }
        },
    );
}

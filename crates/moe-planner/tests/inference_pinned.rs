//! The numbers `infer` gave on today's spec files before experts-per-GPU placements existed.
//!
//! With one expert per GPU (`E = G`) the planner must reproduce these exactly: the spec files
//! stay valid and their plans do not move.

use moe_planner::inference::{InferencePlan, InferenceSpec, plan_inference};

const COLOCATED: &str = include_str!("../../../examples/data/inference_colocated.json");
const DEMO: &str = include_str!("../../moe-planner-cli/src/demo_workload.json");

fn specs() -> Vec<(&'static str, InferenceSpec)> {
    let colocated: InferenceSpec = serde_json::from_str(COLOCATED).unwrap();
    let demo: serde_json::Value = serde_json::from_str(DEMO).unwrap();
    let demo: InferenceSpec = serde_json::from_value(demo["inference"].clone()).unwrap();
    let first = |s: &InferenceSpec| {
        let mut s = s.clone();
        if let InferenceSpec::OnePerGpu(one) = &mut s {
            one.models.truncate(1);
        }
        s
    };
    vec![
        ("colocated-file", colocated.clone()),
        ("colocated-file-first", first(&colocated)),
        ("demo", demo.clone()),
        ("demo-first", first(&demo)),
    ]
}

/// The figures pinned per spec: total, baseline, utilization, then per layer
/// (dispatch bound, dispatch makespan, combine bound, combine makespan, layer time).
fn figures(plan: &InferencePlan) -> Vec<f64> {
    let mut out = vec![
        plan.inference_time_s,
        plan.baseline.inference_time_s,
        plan.gpu_utilization,
    ];
    for l in &plan.layers {
        out.extend([
            l.dispatch.lower_bound_s,
            l.dispatch.makespan_s,
            l.combine.lower_bound_s,
            l.combine.makespan_s,
            l.inference_time_s,
        ]);
    }
    out
}

/// Pinned before the change, from `main` at d87bad7.
type Pinned = (&'static str, &'static [&'static [usize]], &'static [f64]);
const COLOCATED_FIGURES: &[f64] = &[
    0.054351779601066665,
    0.05774069627638519,
    0.260611995821883,
    0.00465240064,
    0.00465240064,
    0.00465240064,
    0.00465240064,
    0.02729935875072,
    0.00424738816,
    0.00424738816,
    0.00424738816,
    0.00424738816,
    0.027052420850346665,
];
const FIRST_FIGURES: &[f64] = &[
    0.0322694593536,
    0.03601928539780741,
    0.22646165407552077,
    0.0030113792,
    0.0030113792,
    0.0030113792,
    0.0030113792,
    0.014545831202133333,
    0.0036831232,
    0.0036831232,
    0.0036831232,
    0.0036831232,
    0.017723628151466667,
];
const PAIRS: &[&[usize]] = &[
    &[0, 1],
    &[1, 4],
    &[2, 2],
    &[3, 7],
    &[4, 0],
    &[5, 3],
    &[6, 5],
    &[7, 6],
];
const IDENTITY: &[&[usize]] = &[&[0], &[1], &[2], &[3], &[4], &[5], &[6], &[7]];
const PINNED: [Pinned; 4] = [
    ("colocated-file", PAIRS, COLOCATED_FIGURES),
    ("colocated-file-first", IDENTITY, FIRST_FIGURES),
    ("demo", PAIRS, COLOCATED_FIGURES),
    ("demo-first", IDENTITY, FIRST_FIGURES),
];

#[test]
fn one_expert_per_gpu_plans_are_unchanged() {
    for ((name, spec), (pinned_name, placement, pinned)) in specs().into_iter().zip(PINNED) {
        assert_eq!(name, pinned_name);
        let plan = plan_inference(&spec).unwrap();
        assert_eq!(plan.experts_of_gpu, placement, "{name}");
        let got = figures(&plan);
        assert_eq!(got.len(), pinned.len(), "{name}");
        for (k, (x, y)) in got.iter().zip(pinned).enumerate() {
            assert!(
                (x - y).abs() <= 1e-12 * y.abs(),
                "{name} figure {k}: {x} vs {y}"
            );
        }
    }
}

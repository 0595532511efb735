//! Times near `f64::MAX` and clusters too large to plan are typed errors, never a `null` time,
//! a `NaN` speedup or an out-of-memory abort.

use moe_planner::PlanError;
use moe_planner::comm_cost_model::InputError;
use moe_planner::inference::{
    GpuInput, InferenceModelSpec, InferenceSpec, MAX_REPLICATED_BYTES, OnePerGpuSpec,
    ReplicatedModelSpec, ReplicatedSpec, plan_inference,
};

const DEEPSEEK: &str = include_str!("../../moe-planner-cli/data/inference_deepseek_like.json");

fn gpus(n: usize) -> Vec<GpuInput> {
    vec![
        GpuInput {
            tflop_per_s: 100.0,
            bandwidth_gbps: 100.0,
        };
        n
    ]
}

fn is_non_finite(result: Result<impl std::fmt::Debug, PlanError>) -> bool {
    matches!(result, Err(PlanError::Input(InputError::NonFinite { .. })))
}

#[test]
fn huge_gate_and_aggregation_times_are_typed_errors_in_both_modes() {
    for (gate_s, aggregation_s) in [(1e308, 0.0), (0.0, 1e308), (1e308, 1e308)] {
        let one: InferenceSpec = OnePerGpuSpec {
            gpus: gpus(2),
            models: vec![InferenceModelSpec {
                name: "a".into(),
                layers: vec![vec![vec![0.0, 1e6], vec![2e6, 0.0]]; 2],
                gate_s: gate_s.into(),
                aggregation_s: aggregation_s.into(),
                ffn_flop_per_byte: 1.0,
            }],
            ..Default::default()
        }
        .into();
        assert!(
            is_non_finite(plan_inference(&one)),
            "{gate_s} {aggregation_s}"
        );
        let InferenceSpec::Replicated(mut replicated) = serde_json::from_str(DEEPSEEK).unwrap()
        else {
            panic!("the DeepSeek-like spec is replicated");
        };
        replicated.models[0].gate_s = gate_s.into();
        replicated.models[0].aggregation_s = aggregation_s.into();
        let plan = plan_inference(&replicated.into());
        assert!(is_non_finite(plan), "{gate_s} {aggregation_s}");
    }
}

#[test]
fn one_huge_layer_still_plans_with_a_finite_speedup() {
    let one: InferenceSpec = OnePerGpuSpec {
        gpus: gpus(2),
        models: vec![InferenceModelSpec {
            name: "a".into(),
            layers: vec![vec![vec![0.0, 1e6], vec![2e6, 0.0]]],
            gate_s: (1e300).into(),
            aggregation_s: (0.0).into(),
            ffn_flop_per_byte: 1.0,
        }],
        ..Default::default()
    }
    .into();
    let plan = plan_inference(&one).unwrap();
    assert!(plan.inference_time_s.is_finite() && plan.speedup_over_baseline.is_finite());
    let text = serde_json::to_string(&plan).unwrap();
    assert!(!text.contains("null"), "{text}");
}

#[test]
fn expert_tokens_on_8192_gpus_are_refused_before_allocating() {
    let spec: InferenceSpec = ReplicatedSpec {
        gpus: gpus(8192),
        models: vec![ReplicatedModelSpec {
            name: "big".into(),
            expert_tokens: vec![vec![1e3; 256]; 58],
            bytes_per_token: 7168.0,
            flop_per_token: 1e8,
            gate_s: (1e-5).into(),
            aggregation_s: (1e-5).into(),
            ..Default::default()
        }],
        slots_per_gpu: Some(1),
        ..Default::default()
    }
    .into();
    match plan_inference(&spec) {
        Err(PlanError::Input(InputError::TooLarge { limit, value, .. })) => {
            assert_eq!(limit, MAX_REPLICATED_BYTES as u64);
            assert!(value > limit);
        }
        other => panic!("{other:?}"),
    }
}

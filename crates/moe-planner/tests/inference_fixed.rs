//! A fixed deployment (`InferenceSpec::placement`) evaluated on the spec's traffic: the plan's
//! own placement reproduces the plan, another one is timed on the same cost model, and a
//! malformed one is a typed error.

use moe_planner::PlanError;
use moe_planner::alltoall_sched::ScheduleError;
use moe_planner::alltoall_sched::workload::zipf_traffic;
use moe_planner::comm_cost_model::InputError;
use moe_planner::expert_placement::PlacementError;
use moe_planner::inference::{
    GpuInput, InferenceModelSpec, InferenceSpec, OnePerGpuSpec, ReplicatedSpec, plan_inference,
};

const DEEPSEEK: &str = include_str!("../../moe-planner-cli/data/inference_deepseek_like.json");

fn deepseek() -> ReplicatedSpec {
    match serde_json::from_str(DEEPSEEK).unwrap() {
        InferenceSpec::Replicated(spec) => spec,
        other => panic!("not replicated: {other:?}"),
    }
}

fn model(exponent: f64, seed: u64) -> InferenceModelSpec {
    InferenceModelSpec {
        name: format!("zipf-{exponent}"),
        layers: (0..2)
            .map(|l| {
                zipf_traffic(4, exponent, 512, 4096, seed + l)
                    .unwrap()
                    .to_rows()
            })
            .collect(),
        gate_s: (1e-4).into(),
        aggregation_s: (1e-4).into(),
        ffn_flop_per_byte: 1e3,
    }
}

fn mixed_gpus() -> Vec<GpuInput> {
    (0..4)
        .map(|g| GpuInput {
            tflop_per_s: if g < 2 { 100.0 } else { 25.0 },
            bandwidth_gbps: if g < 2 { 100.0 } else { 50.0 },
        })
        .collect()
}

#[test]
fn the_plans_own_placement_reproduces_the_plan() {
    for models in [vec![model(1.0, 1)], vec![model(1.0, 1), model(1.2, 9)]] {
        let mut spec = OnePerGpuSpec {
            gpus: mixed_gpus(),
            models,
            seed: 5,
            ..Default::default()
        };
        let plan = plan_inference(&spec.clone().into()).unwrap();
        spec.placement = Some(plan.experts_of_gpu.clone());
        let again = plan_inference(&spec.clone().into()).unwrap();
        assert_eq!(again, plan);
        // Any other placement is timed on the same model, and the baseline does not change.
        let mut other = plan.experts_of_gpu.clone();
        other.rotate_left(1);
        spec.placement = Some(other.clone());
        let moved = plan_inference(&spec.clone().into()).unwrap();
        assert_eq!(moved.experts_of_gpu, other);
        assert_eq!(
            moved.baseline.inference_time_s,
            plan.baseline.inference_time_s
        );
        assert!(moved.inference_time_s > 0.0);
    }
}

#[test]
fn fixed_layer_placements_with_many_experts_per_gpu_are_evaluated() {
    let mut spec = deepseek();
    let plan = plan_inference(&spec.clone().into()).unwrap();
    spec.layer_placements = plan
        .layers
        .iter()
        .map(|l| l.experts_of_gpu.clone())
        .collect();
    assert_eq!(plan_inference(&spec.clone().into()).unwrap(), plan);
    // Every layer given the first layer's placement.
    let first = plan.layers[0].experts_of_gpu.clone();
    spec.layer_placements = vec![first.clone(); plan.layers.len()];
    let fixed = plan_inference(&spec.clone().into()).unwrap();
    assert_eq!(fixed.layers[0], plan.layers[0]);
    for layer in &fixed.layers {
        assert_eq!(layer.experts_of_gpu, first);
    }
    // The EPLB baselines do not depend on the plan (the random one copies its replica counts).
    for (a, b) in fixed.baselines.iter().zip(&plan.baselines).take(3) {
        assert_eq!(a.inference_time_s, b.inference_time_s);
    }
}

#[test]
fn malformed_fixed_placements_are_typed_errors() {
    let mut spec = OnePerGpuSpec {
        gpus: mixed_gpus(),
        models: vec![model(1.0, 1)],
        ..Default::default()
    };
    spec.placement = Some(vec![vec![0], vec![1], vec![2]]);
    assert!(matches!(
        plan_inference(&spec.clone().into()),
        Err(PlanError::Input(InputError::SizeMismatch {
            expected: 4,
            actual: 3,
            ..
        }))
    ));
    spec.placement = Some(vec![vec![0, 1], vec![1], vec![2], vec![3]]);
    assert!(matches!(
        plan_inference(&spec.clone().into()),
        Err(PlanError::Input(InputError::SizeMismatch {
            expected: 1,
            actual: 2,
            ..
        }))
    ));
    spec.placement = Some(vec![vec![0], vec![0], vec![2], vec![3]]);
    assert!(matches!(
        plan_inference(&spec.clone().into()),
        Err(PlanError::Schedule(ScheduleError::NotAPartition { .. }))
    ));

    let mut deepseek = deepseek();
    let slots = deepseek.slots_per_gpu.unwrap();
    let layers = deepseek.models[0].routed_tokens.len();
    let mut rows = vec![vec![0; slots]; deepseek.gpus.len()];
    deepseek.layer_placements = vec![rows.clone(); layers];
    assert!(matches!(
        plan_inference(&deepseek.clone().into()),
        Err(PlanError::Placement(PlacementError::MissingExpert { .. }))
    ));
    deepseek.layer_placements = vec![rows.clone(); layers + 1];
    assert!(matches!(
        plan_inference(&deepseek.clone().into()),
        Err(PlanError::Input(InputError::SizeMismatch { .. }))
    ));
    rows[3].pop();
    deepseek.layer_placements = vec![rows; layers];
    assert!(matches!(
        plan_inference(&deepseek.clone().into()),
        Err(PlanError::Input(InputError::SizeMismatch {
            actual: 8,
            expected: 9,
            ..
        }))
    ));
}

#[test]
fn a_field_of_the_other_mode_is_rejected_by_name() {
    // `placement` is the one-per-GPU mode's; `layer_placements` the replicated mode's: before
    // the split one was an error and the other silently ignored, now both are named.
    let mut replicated: serde_json::Value = serde_json::from_str(DEEPSEEK).unwrap();
    replicated["placement"] = serde_json::json!(vec![vec![0]; 32]);
    let err = serde_json::from_value::<InferenceSpec>(replicated).unwrap_err();
    assert!(
        err.to_string().contains("unknown field `placement`"),
        "{err}"
    );
    let one = OnePerGpuSpec {
        gpus: mixed_gpus(),
        models: vec![model(1.0, 1)],
        ..Default::default()
    };
    for (field, value) in [
        (
            "layer_placements",
            serde_json::json!([[[0], [1], [2], [3]]]),
        ),
        ("slots_per_gpu", serde_json::json!(2)),
        ("gpus_per_node", serde_json::json!(2)),
    ] {
        let mut json = serde_json::to_value(InferenceSpec::from(one.clone())).unwrap();
        json[field] = value.clone();
        let err = serde_json::from_value::<InferenceSpec>(json.clone()).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("unknown field `{field}`")),
            "{err}"
        );
        // The same without `mode` (an older file): still named, not ignored.
        json.as_object_mut().unwrap().remove("mode");
        let err = serde_json::from_value::<InferenceSpec>(json).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("unknown field `{field}`")),
            "{err}"
        );
    }
    // A model field of the other mode, and a misspelt one.
    for (field, value) in [
        ("bytes_per_token", serde_json::json!(7168)),
        ("ffn_flop_per_bytes", serde_json::json!(1)),
    ] {
        let mut json = serde_json::to_value(InferenceSpec::from(one.clone())).unwrap();
        json["models"][0][field] = value;
        let err = serde_json::from_value::<InferenceSpec>(json).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("unknown field `{field}`")),
            "{err}"
        );
    }
    let mut both: serde_json::Value = serde_json::from_str(DEEPSEEK).unwrap();
    both["models"][0]["layers"] = serde_json::json!([[[0.0]]]);
    let err = serde_json::from_value::<InferenceSpec>(both).unwrap_err();
    assert!(err.to_string().contains("unknown field `layers`"), "{err}");
    let mut spec = deepseek();
    spec.models[0].expert_tokens = vec![vec![1.0; 256]; 4];
    assert!(matches!(
        plan_inference(&spec.into()),
        Err(PlanError::Incompatible {
            field: "routed_tokens",
            other: "expert_tokens",
            ..
        })
    ));
}

#[test]
fn specs_round_trip_with_their_mode() {
    let one: InferenceSpec = OnePerGpuSpec {
        gpus: mixed_gpus(),
        models: vec![model(1.0, 1)],
        ..Default::default()
    }
    .into();
    let text = serde_json::to_string(&one).unwrap();
    assert!(text.starts_with(r#"{"mode":"one-per-gpu""#), "{text}");
    assert_eq!(serde_json::from_str::<InferenceSpec>(&text).unwrap(), one);
    let replicated = InferenceSpec::from(deepseek());
    let text = serde_json::to_string(&replicated).unwrap();
    assert!(text.starts_with(r#"{"mode":"replicated""#));
    assert_eq!(
        serde_json::from_str::<InferenceSpec>(&text).unwrap(),
        replicated
    );
    let err = serde_json::from_str::<InferenceSpec>(r#"{"mode": "many"}"#).unwrap_err();
    assert!(err.to_string().contains("unknown variant `many`"), "{err}");
}

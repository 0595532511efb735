//! Issue 24 item 5: gate and aggregation times per GPU (heterogeneous clusters), in both modes:
//! an array equal on every GPU gives the numbers of the scalar, a slower GPU's longer gate
//! lengthens the inference, and a wrong length or a negative entry is an error naming the field.

use moe_planner::PlanError;
use moe_planner::comm_cost_model::InputError;
use moe_planner::inference::{
    GpuInput, InferenceModelSpec, InferenceSpec, OnePerGpuSpec, PerGpuSeconds, plan_inference,
};

const DEEPSEEK: &str = include_str!("../../moe-planner-cli/data/inference_deepseek_like.json");

fn one_per_gpu(gate_s: PerGpuSeconds, aggregation_s: PerGpuSeconds) -> InferenceSpec {
    OnePerGpuSpec {
        // A heterogeneous pair: the second GPU has half the compute.
        gpus: vec![
            GpuInput {
                tflop_per_s: 200.0,
                bandwidth_gbps: 100.0,
            },
            GpuInput {
                tflop_per_s: 100.0,
                bandwidth_gbps: 100.0,
            },
        ],
        models: vec![InferenceModelSpec {
            name: "a".into(),
            layers: vec![vec![vec![0.0, 1e6], vec![2e6, 0.0]]; 3],
            gate_s,
            aggregation_s,
            ffn_flop_per_byte: 1e3,
        }],
        ..Default::default()
    }
    .into()
}

#[test]
fn equal_per_gpu_times_give_the_scalar_numbers_and_a_slow_gate_costs_time() {
    let scalar = plan_inference(&one_per_gpu(1e-4.into(), 2e-4.into())).unwrap();
    let same = plan_inference(&one_per_gpu(
        PerGpuSeconds::PerGpu(vec![1e-4, 1e-4]),
        PerGpuSeconds::PerGpu(vec![2e-4, 2e-4]),
    ))
    .unwrap();
    assert_eq!(scalar.inference_time_s, same.inference_time_s);
    let slow = plan_inference(&one_per_gpu(
        PerGpuSeconds::PerGpu(vec![1e-4, 5e-4]),
        PerGpuSeconds::PerGpu(vec![2e-4, 6e-4]),
    ))
    .unwrap();
    assert!(slow.inference_time_s > scalar.inference_time_s);
}

#[test]
fn per_gpu_times_from_json_in_the_replicated_mode() {
    let mut value: serde_json::Value = serde_json::from_str(DEEPSEEK).unwrap();
    let gpus = value["gpus"].as_array().unwrap().len();
    let gate = value["models"][0]["gate_s"].as_f64().unwrap();
    let scalar = plan_inference(&serde_json::from_value(value.clone()).unwrap()).unwrap();
    value["models"][0]["gate_s"] = serde_json::json!(vec![gate; gpus]);
    let same = plan_inference(&serde_json::from_value(value.clone()).unwrap()).unwrap();
    assert_eq!(scalar.inference_time_s, same.inference_time_s);
    let mut slower = vec![gate; gpus];
    slower[0] = gate * 10.0 + 1e-3;
    value["models"][0]["gate_s"] = serde_json::json!(slower);
    let slow = plan_inference(&serde_json::from_value(value).unwrap()).unwrap();
    assert!(slow.inference_time_s > scalar.inference_time_s);
}

#[test]
fn a_wrong_length_or_a_negative_entry_names_the_field() {
    let short = plan_inference(&one_per_gpu(PerGpuSeconds::PerGpu(vec![1e-4]), 0.0.into()));
    match short {
        Err(PlanError::Input(InputError::SizeMismatch { what, .. })) => {
            assert!(what.contains("gate time"), "{what}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let negative = plan_inference(&one_per_gpu(
        0.0.into(),
        PerGpuSeconds::PerGpu(vec![1e-4, -1.0]),
    ));
    let message = negative.unwrap_err().to_string();
    assert!(message.contains("aggregation time"), "{message}");
}

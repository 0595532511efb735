//! Spec files written before the inference spec was split into modes load unchanged and give
//! the numbers they gave then (pinned in `tests/data/inference_pins.json`, within 1e-12
//! relative): one expert per GPU (exclusive, colocated, heterogeneous, a fixed placement,
//! measured link fits) and many experts per GPU (router traces, per-expert loads, fixed
//! per-layer placements).
//!
//! Regenerate the pins (only when a change of the numbers is intended and explained):
//! `PIN_INFERENCE=1 cargo test -p moe-planner --test inference_specs_pinned`.

use moe_planner::inference::{InferencePlan, InferenceSpec, plan_inference};
use serde_json::{Value, json};

const COLOCATED: &str = include_str!("../../../examples/data/inference_colocated.json");
const DEEPSEEK: &str = include_str!("../../moe-planner-cli/data/inference_deepseek_like.json");
const FITS: &str = include_str!("../../../examples/data/measured/h100_fits.json");
const PINS: &str = include_str!("data/inference_pins.json");

/// The old-format spec files, as JSON values (edited the way a user would edit them).
fn specs() -> Vec<(&'static str, Value)> {
    let colocated: Value = serde_json::from_str(COLOCATED).unwrap();
    let deepseek = legacy(serde_json::from_str(DEEPSEEK).unwrap());
    let fits: Value = serde_json::from_str(FITS).unwrap();
    let mut first = colocated.clone();
    first["models"].as_array_mut().unwrap().truncate(1);
    let mut mixed = colocated.clone();
    for g in mixed["gpus"].as_array_mut().unwrap().iter_mut().skip(4) {
        *g = json!({"tflops": 60.0, "bandwidth_gbps": 50.0});
    }
    let mut mixed_first = mixed.clone();
    mixed_first["models"].as_array_mut().unwrap().truncate(1);
    let mut fixed = colocated.clone();
    fixed["placement"] = json!([
        [7, 0],
        [6, 1],
        [5, 2],
        [4, 3],
        [3, 4],
        [2, 5],
        [1, 6],
        [0, 7]
    ]);
    let mut fitted = first.clone();
    fitted["link_fits"] = fits;
    let mut small = deepseek.clone();
    small["models"][0]["routed_tokens"]
        .as_array_mut()
        .unwrap()
        .truncate(2);
    // Per-expert loads: each expert's routed tokens summed over source GPUs.
    let mut loads = small.clone();
    let routed = loads["models"][0]["routed_tokens"].take();
    let expert_tokens: Vec<Vec<f64>> = routed
        .as_array()
        .unwrap()
        .iter()
        .map(|layer| {
            let rows: Vec<Vec<f64>> = serde_json::from_value(layer.clone()).unwrap();
            (0..rows[0].len())
                .map(|e| rows.iter().map(|r| r[e]).sum())
                .collect()
        })
        .collect();
    loads["models"][0]
        .as_object_mut()
        .unwrap()
        .remove("routed_tokens");
    loads["models"][0]["expert_tokens"] = json!(expert_tokens);
    let mut default_slots = loads.clone();
    let object = default_slots.as_object_mut().unwrap();
    object.remove("slots_per_gpu");
    object.remove("gpus_per_node");
    vec![
        ("colocated", colocated),
        ("colocated-first", first),
        ("mixed", mixed),
        ("mixed-first", mixed_first),
        ("fixed", fixed),
        ("fitted-links", fitted),
        ("deepseek-like", deepseek),
        ("deepseek-like-2-layers", small),
        ("expert-tokens", loads),
        ("expert-tokens-default-slots", default_slots),
    ]
}

/// A replicated spec as files were written before `mode` (the DeepSeek-like file itself was,
/// until the split): no `mode`, an empty `layers`, a zero `ffn_flop_per_byte`, `link_fits`
/// `null`, and the older `tflops` spelling.
fn legacy(mut spec: Value) -> Value {
    let object = spec.as_object_mut().unwrap();
    object.remove("mode");
    object.insert("link_fits".into(), Value::Null);
    for gpu in object["gpus"].as_array_mut().unwrap() {
        let tflops = gpu.as_object_mut().unwrap().remove("tflop_per_s").unwrap();
        gpu["tflops"] = tflops;
    }
    let model = &mut object["models"][0];
    model["layers"] = json!([]);
    model["ffn_flop_per_byte"] = json!(0.0);
    spec
}

#[test]
fn the_tagged_file_plans_as_its_older_form() {
    let tagged: InferenceSpec = serde_json::from_str(DEEPSEEK).unwrap();
    let older: InferenceSpec =
        serde_json::from_value(legacy(serde_json::from_str(DEEPSEEK).unwrap())).unwrap();
    assert_eq!(tagged, older);
}

/// Every number and placement of a plan that the pins cover.
fn figures(plan: &InferencePlan) -> Value {
    let layers: Vec<Value> = plan
        .layers
        .iter()
        .map(|l| {
            json!({
                "dispatch": [l.dispatch.lower_bound_s, l.dispatch.makespan_s, l.dispatch.pieces, l.dispatch.nonzero_pairs],
                "combine": [l.combine.lower_bound_s, l.combine.makespan_s, l.combine.pieces, l.combine.nonzero_pairs],
                "inference_time_s": l.inference_time_s,
                "experts_of_gpu": l.experts_of_gpu,
            })
        })
        .collect();
    let baselines: Vec<Value> = plan
        .baselines
        .iter()
        .map(|b| {
            json!([
                b.description,
                b.inference_time_s,
                b.speedup,
                b.experts_of_gpu
            ])
        })
        .collect();
    json!({
        "scenario": plan.scenario,
        "experts_of_gpu": plan.experts_of_gpu,
        "inference_time_s": plan.inference_time_s,
        "gpu_utilization": plan.gpu_utilization,
        "speedup_over_baseline": plan.speedup_over_baseline,
        "baselines": baselines,
        "layers": layers,
    })
}

/// Equal up to 1e-12 relative on numbers, exactly elsewhere.
fn same(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= 1e-12 * y.abs(), "{at}: {x} vs pinned {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: length");
            for (k, (x, y)) in x.iter().zip(y).enumerate() {
                same(x, y, &format!("{at}[{k}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (k, v) in x {
                same(v, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

#[test]
fn old_spec_files_give_the_pinned_numbers() {
    let mut got = serde_json::Map::new();
    for (name, value) in specs() {
        let spec: InferenceSpec =
            serde_json::from_value(value).unwrap_or_else(|e| panic!("{name} no longer loads: {e}"));
        let plan = plan_inference(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
        got.insert(name.to_owned(), figures(&plan));
    }
    let got = Value::Object(got);
    if std::env::var_os("PIN_INFERENCE").is_some() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/inference_pins.json"
        );
        std::fs::write(path, serde_json::to_string_pretty(&got).unwrap()).unwrap();
        return;
    }
    let pinned: Value = serde_json::from_str(PINS).unwrap();
    same(&got, &pinned, "pins");
}

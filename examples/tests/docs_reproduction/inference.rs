//! End-to-end inference planning (`examples/examples/moe_inference_plan.rs`, scenarios from
//! `moe_planner_examples::inference`) and Lina timed on `examples/data/inference_colocated.json`.

use crate::tables::{Drift, Table};
use moe_planner::inference::{InferencePlan, InferenceSpec, plan_inference};
use moe_planner_examples::inference::{SCENARIOS, run};
use serde_json::{Value, json};

const COLOCATED: &str = include_str!("../../data/inference_colocated.json");

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn end_to_end_inference_table_matches_the_code() {
    let t = Table::after(
        "### End-to-end inference planning (§8.2 Q1–Q2)",
        "| scenario | Aurora (paper, Fig. 11) | ours: speedup over baseline, mean (range) | ours: GPU utilization |",
    );
    let mut drift = Drift::new("Aurora, end-to-end inference planning");
    let mut at_bound = true;
    let mut util = [0.0; 2];
    for (models, hetero, name) in SCENARIOS {
        let s = run(models, hetero).expect("planner");
        at_bound &= s.at_bound;
        let lo = s.speedup.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = s.speedup.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let row = t.row_starting(name);
        drift.cell_start(
            row,
            2,
            &format!("{:.2}× ({lo:.2}–{hi:.2})", mean(&s.speedup)),
        );
        drift.cells(
            row,
            &[3],
            &[format!("{:.1}%", 100.0 * mean(&s.utilization))],
        );
        if !hetero {
            util[models - 1] = mean(&s.utilization);
        }
    }
    drift.value(
        "every dispatch all-to-all at its lower bound (doc: yes)",
        "true",
        &at_bound.to_string(),
    );
    drift.text(&format!(
        "colocation raises it {:.2}× here",
        util[1] / util[0]
    ));
    drift.finish();
}

fn plan(spec: Value) -> InferencePlan {
    let spec: InferenceSpec = serde_json::from_value(spec).expect("the spec loads");
    plan_inference(&spec).expect("the spec plans")
}

/// Lina's time on the plan: the baseline whose description names Lina.
fn lina_s(plan: &InferencePlan) -> f64 {
    plan.baselines
        .iter()
        .find(|b| b.description.contains("Lina"))
        .expect("Lina is a baseline for two models on an even GPU count")
        .inference_time_s
}

#[test]
fn lina_timed_matches_the_code() {
    let colocated: Value = serde_json::from_str(COLOCATED).expect("JSON");
    let mut mixed = colocated.clone();
    for g in mixed["gpus"]
        .as_array_mut()
        .expect("gpus")
        .iter_mut()
        .skip(4)
    {
        *g = json!({"tflops": 60.0, "bandwidth_gbps": 50.0});
    }
    let mut drift = Drift::new("Aurora, Lina timed (prose)");
    let same = plan(colocated);
    let (ours, lina) = (same.inference_time_s, lina_s(&same));
    drift.text(&format!(
        "ours {:.3} ms, Lina **{:.3} ms** (ours {:.2}× *slower*)",
        ours * 1e3,
        lina * 1e3,
        ours / lina
    ));
    let mixed = plan(mixed);
    let (ours, lina) = (mixed.inference_time_s, lina_s(&mixed));
    drift.text(&format!(
        "ours {:.3} ms, Lina {:.3} ms (ours **{:.2}×** faster)",
        ours * 1e3,
        lina * 1e3,
        lina / ours
    ));
    drift.finish();
}

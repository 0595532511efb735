//! Every spec the facade reads rejects a field it does not know, naming it, instead of
//! ignoring it (a misspelt option would otherwise silently keep its default).

use moe_planner::fitting::CollectiveFitPlan;
use moe_planner::grouping::GroupSpec;
use moe_planner::inference::InferenceSpec;
use moe_planner::network::{FabricSpec, SearchSpec};
use moe_planner::schedule::ScheduleSpec;
use moe_planner::training::TrainingSpec;
use serde::de::DeserializeOwned;
use serde_json::Value;

const DEMO: &str = include_str!("../../moe-planner-cli/src/demo_workload.json");
const SCHEDULE: &str = include_str!("../../../examples/data/traffic_zipf8.json");
const PARM: &str = include_str!("../../../examples/data/parm_layer.json");
const FITS: &str = include_str!("../../../examples/data/measured/h100_fits.json");

/// `value` loads as `T`, and with one more top-level field `bogus` it is an error naming it.
fn rejects_bogus<T: DeserializeOwned>(name: &str, mut value: Value) {
    serde_json::from_value::<T>(value.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
    value
        .as_object_mut()
        .unwrap()
        .insert("bogus".into(), Value::from(1));
    let err = serde_json::from_value::<T>(value)
        .map(|_| ())
        .expect_err(name);
    assert!(err.to_string().contains("`bogus`"), "{name}: {err}");
}

#[test]
fn every_facade_spec_names_an_unknown_field() {
    let demo: Value = serde_json::from_str(DEMO).unwrap();
    rejects_bogus::<InferenceSpec>("inference", demo["inference"].clone());
    rejects_bogus::<TrainingSpec>("training", serde_json::from_str(PARM).unwrap());
    rejects_bogus::<GroupSpec>("grouping", demo["grouping"].clone());
    rejects_bogus::<FabricSpec>("fabric", demo["network"]["fabric"].clone());
    rejects_bogus::<SearchSpec>("search", demo["network"]["search"].clone());
    rejects_bogus::<ScheduleSpec>("schedule", serde_json::from_str(SCHEDULE).unwrap());
    rejects_bogus::<CollectiveFitPlan>("link fits", serde_json::from_str(FITS).unwrap());
}

//! Fuzzing the facade's planners (issue 13): arbitrary specs built by mutating valid ones with
//! extreme values (0, negatives, subnormals, `f64::MAX`, `u64::MAX`, NaN and infinities),
//! emptied, grown and ragged arrays, and huge sizes. Every call must return within
//! [`moe_fuzz::TIME_LIMIT`] without panicking, and an `Ok` plan must hold finite numbers only.
//!
//! `cargo test` runs [`moe_fuzz::DEFAULT_CASES`] cases per planner; set `MOE_FUZZ_CASES` for a long run:
//!
//! ```text
//! MOE_FUZZ_CASES=100000 cargo test --release -p moe-planner --test fuzz_planners -- --nocapture
//! ```
//!
//! Each failing spec the fuzzing found is kept as a regression test at the end of the file.

use moe_fuzz::json_extremes;
use moe_planner::colocation::plan_colocation;
use moe_planner::fitting::plan_fit;
use moe_planner::grouping::plan_groups;
use moe_planner::inference::plan_inference;
use moe_planner::network::{plan_fabrics, plan_iteration, plan_search};
use moe_planner::placement::plan_placement;
use moe_planner::schedule::plan_schedule;
use moe_planner::training::plan_training;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Keys whose value is an `Option` in some plan, so `null` there is `None`, not a NaN.
const OPTION_KEYS: &[&str] = &[
    "a2a_shift",
    "ag_of_slice",
    "baseline_moves",
    "bandwidth_bytes_per_s",
    "bus_bandwidth_bytes_per_s",
    "bytes",
    "bytes_per_token",
    "compute",
    "current",
    "current_max_gpu_load",
    "dp",
    "error_vs_paper",
    "expert_bytes",
    "flop_per_token",
    "global_batch",
    "gpu_speed",
    "gpus_per_node",
    "groups",
    "link_fits",
    "moves",
    "moves_at_baseline_load",
    "options",
    "paper_computed_s",
    "placement",
    "quantum_fraction",
    "ratio_to_lysigroup",
    "saa",
    "slots_per_gpu",
    "transfer_bytes",
    "transfer_schedule",
    "transfer_time_s",
    "unconstrained_max_gpu_load",
];

/// Values only Rust can put in a spec: poked into its `f64` fields after deserializing.
const FLOAT_EXTREMES: &[f64] = &[
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MAX,
    f64::MIN_POSITIVE,
    5e-324,
    0.0,
    -0.0,
    -1.0,
    1e308,
];

/// One change to a spec.
#[derive(Debug, Clone)]
enum Mutation {
    /// Sets the `at`-th number of the document (mod their count) to `json_extremes()[value]`.
    Number { at: usize, value: usize },
    /// Truncates the `at`-th array to `len` or grows it by copies of its last element.
    Resize { at: usize, len: usize },
    /// Drops the last element of the `at`-th array inside an array (a ragged matrix).
    Ragged { at: usize },
    /// Sets the `at`-th `f64` the planner's poke function knows to `FLOAT_EXTREMES[value]`.
    Float { at: usize, value: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let n = json_extremes().len();
    prop_oneof![
        4 => (any::<usize>(), 0..n).prop_map(|(at, value)| Mutation::Number { at, value }),
        2 => (any::<usize>(), 0_usize..24).prop_map(|(at, len)| Mutation::Resize { at, len }),
        1 => any::<usize>().prop_map(|at| Mutation::Ragged { at }),
        2 => (any::<usize>(), 0..FLOAT_EXTREMES.len())
            .prop_map(|(at, value)| Mutation::Float { at, value }),
    ]
}

/// JSON pointers of every number and every array in `v`, in document order.
fn leaves(v: &Value, at: &str, numbers: &mut Vec<String>, arrays: &mut Vec<String>) {
    match v {
        Value::Number(_) => numbers.push(at.to_string()),
        Value::Array(items) => {
            arrays.push(at.to_string());
            for (i, item) in items.iter().enumerate() {
                leaves(item, &format!("{at}/{i}"), numbers, arrays);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let key = k.replace('~', "~0").replace('/', "~1");
                leaves(item, &format!("{at}/{key}"), numbers, arrays);
            }
        }
        _ => {}
    }
}

/// Applies the JSON-level mutations to a copy of `seed`; also returns what it changed, as
/// `pointer = value` lines a failure message can show.
fn mutate_json(seed: &Value, mutations: &[Mutation]) -> (Value, Vec<String>) {
    let mut v = seed.clone();
    let mut log = Vec::new();
    let extremes = json_extremes();
    for m in mutations {
        let (mut numbers, mut arrays) = (Vec::new(), Vec::new());
        leaves(&v, "", &mut numbers, &mut arrays);
        match *m {
            Mutation::Number { at, value } if !numbers.is_empty() => {
                let at = &numbers[at % numbers.len()];
                if let Some(slot) = v.pointer_mut(at) {
                    *slot = extremes[value].clone();
                    log.push(format!("{at} = {}", extremes[value]));
                }
            }
            Mutation::Resize { at, len } if !arrays.is_empty() => {
                let at = &arrays[at % arrays.len()];
                log.push(format!("{at}: length {len}"));
                if let Some(Value::Array(items)) = v.pointer_mut(at) {
                    match items.last().cloned() {
                        Some(last) if len > items.len() => items.resize(len, last),
                        _ => items.truncate(len),
                    }
                }
            }
            Mutation::Ragged { at } if !arrays.is_empty() => {
                let at = &arrays[at % arrays.len()];
                log.push(format!("{at}: last row one shorter"));
                if let Some(Value::Array(items)) = v.pointer_mut(at)
                    && let Some(Value::Array(inner)) = items.last_mut()
                {
                    inner.pop();
                }
            }
            _ => {}
        }
    }
    (v, log)
}

/// The `f64` fields of a spec that [`Mutation::Float`] may poke.
type Poke<S> = fn(&mut S) -> Vec<&mut f64>;

fn no_floats<S>(_: &mut S) -> Vec<&mut f64> {
    Vec::new()
}

/// Runs `plan` on `spec` through [`moe_fuzz::within`]: `Err` describes a panic, a timeout or a
/// non-finite plan.
fn call<S, P, E>(spec: S, plan: fn(&S) -> Result<P, E>) -> Result<(), String>
where
    S: Send + 'static + std::fmt::Debug,
    P: Serialize + Send + 'static,
    E: Send + 'static,
{
    let shown = format!("{spec:?}");
    let shown = &shown[..shown.len().min(2000)];
    moe_fuzz::within(move || match plan(&spec) {
        Err(_) => Ok(()),
        Ok(p) => moe_fuzz::check_finite_json(&p, OPTION_KEYS),
    })
    .and_then(|r| r)
    .map_err(|e| format!("{e} on {shown}"))
}

/// Mutates `seed`, deserializes it (a spec serde rejects is fine), pokes floats, and calls.
fn check<S, P, E>(
    seed: &Value,
    mutations: &[Mutation],
    poke: Poke<S>,
    plan: fn(&S) -> Result<P, E>,
) -> Result<(), String>
where
    S: DeserializeOwned + Send + 'static + std::fmt::Debug,
    P: Serialize + Send + 'static,
    E: Send + 'static,
{
    let (value, mut log) = mutate_json(seed, mutations);
    let Ok(mut spec) = serde_json::from_value::<S>(value) else {
        return Ok(());
    };
    for m in mutations {
        if let Mutation::Float { at, value } = *m {
            let mut floats = poke(&mut spec);
            if !floats.is_empty() {
                let n = floats.len();
                *floats[at % n] = FLOAT_EXTREMES[value];
                log.push(format!("float {} = {}", at % n, FLOAT_EXTREMES[value]));
            }
        }
    }
    call(spec, plan).map_err(|e| format!("{e}; mutations: {log:?}"))
}

/// Runs the property on `seed` for `cases()` cases and panics with the first failing spec.
fn fuzz<S, P, E>(seed: &Value, poke: Poke<S>, plan: fn(&S) -> Result<P, E>)
where
    S: DeserializeOwned + Send + 'static + std::fmt::Debug,
    P: Serialize + Send + 'static,
    E: Send + 'static,
{
    // The seed itself must plan, or the mutations would only ever test serde.
    let base: S = serde_json::from_value(seed.clone()).expect("the seed spec deserializes");
    call(base, plan).expect("the seed spec plans");
    let config = Config {
        cases: moe_fuzz::cases(),
        failure_persistence: None,
        ..Config::default()
    };
    // A fixed stream, so CI runs the same cases every time; longer runs see more of it.
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&prop::collection::vec(mutation(), 1..5), |mutations| {
        check(seed, &mutations, poke, plan).map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => eprintln!("fuzz plan: {} cases, no failure", moe_fuzz::cases()),
        Err(e) => panic!("{e}"),
    }
}

fn matrix_floats(m: &mut [Vec<f64>]) -> Vec<&mut f64> {
    m.iter_mut().flatten().collect()
}

fn schedule_seed(algorithm: &str) -> Value {
    json!({
        "traffic": [[0, 3, 1, 7], [2, 0, 5, 1], [1, 1, 0, 4], [9, 0, 2, 0]],
        "bandwidth_gbps": [100, 50, 100, 200],
        "algorithm": algorithm,
        "seed": 7
    })
}

#[test]
fn schedule_every_algorithm() {
    for algorithm in [
        "optimal",
        "aurora-greedy",
        "non-preemptive",
        "sjf",
        "random",
        "shift",
        "nccl",
    ] {
        fuzz(
            &schedule_seed(algorithm),
            |s: &mut moe_planner::schedule::ScheduleSpec| matrix_floats(&mut s.traffic),
            plan_schedule,
        );
    }
}

#[test]
fn colocation() {
    let seed = json!({
        "model_a_traffic_bytes": [[0, 5, 1, 2], [3, 0, 2, 2], [1, 4, 0, 6], [2, 2, 1, 0]],
        "model_b_traffic_bytes": [[0, 1, 1, 9], [2, 0, 3, 1], [4, 1, 0, 1], [1, 8, 2, 0]],
        "seed": 3
    });
    fuzz(
        &seed,
        |s: &mut moe_planner::colocation::ColocationSpec| {
            let mut f = matrix_floats(&mut s.model_a_traffic_bytes);
            f.extend(matrix_floats(&mut s.model_b_traffic_bytes));
            f
        },
        plan_colocation,
    );
}

#[test]
fn inference() {
    let seed: Value = serde_json::from_str(include_str!(
        "../../../examples/data/inference_colocated.json"
    ))
    .expect("example spec");
    fuzz(&seed, no_floats, plan_inference);
}

#[test]
fn training() {
    let seed: Value = serde_json::from_str(include_str!("../../../examples/data/parm_layer.json"))
        .expect("example spec");
    fuzz(&seed, no_floats, plan_training);
}

#[test]
fn fitting() {
    let seed = json!({"samples": [
        {"bytes": 1024, "seconds": 1.2e-5},
        {"bytes": 65536, "seconds": 2.0e-5},
        {"bytes": 1048576, "seconds": 1.1e-4},
        {"bytes": 16777216, "seconds": 1.5e-3}
    ]});
    fuzz(
        &seed,
        |s: &mut moe_planner::fitting::FitSpec| {
            s.samples
                .iter_mut()
                .flat_map(|x| [&mut x.bytes, &mut x.seconds])
                .collect()
        },
        plan_fit,
    );
}

#[test]
fn grouping() {
    fuzz(&group_seed(), no_floats, plan_groups);
}

/// A small Perlmutter grouping: 2 nodes of 4 GPUs, 16 experts.
fn group_seed() -> Value {
    json!({
        "cluster": { "kind": "perlmutter", "nodes": 2, "expert_slots": 8 },
        "experts": { "count": 16, "flop_per_expert": 1.073741824e9 },
        "training": { "recompute": 1.0, "layers": 4, "global_batch": 32, "moe_every": 2, "micro_batch": 4 },
        "messages_per_edge": 2.0,
        "all_to_all_mb": 16.777216,
        "all_reduce_mb": 1610.612736,
        "inference": false,
        "assign": "refined"
    })
}

#[test]
fn fabrics() {
    let seed = json!({"gpus": 1024, "hb_domain": 8, "radix": 64});
    fuzz(
        &seed,
        |s: &mut moe_planner::network::FabricSpec| {
            vec![&mut s.transceiver_usd, &mut s.switch_port_usd]
        },
        plan_fabrics,
    );
}

#[test]
fn iteration() {
    let seed = json!({
        "model": "gpt-1t",
        "system": "dgx-a100",
        "gpus": 512,
        "parallelization": { "tp": 8, "pp": 64, "micro_batch": 1, "global_batch": 512 }
    });
    fuzz(&seed, no_floats, plan_iteration);
}

#[test]
fn search() {
    let seed =
        json!({"model": "gpt-1t", "system": "gh200", "gpus": 64, "global_batch": 64, "keep": 3});
    fuzz(&seed, no_floats, plan_search);
}

#[test]
fn placement() {
    let seed = json!({
        "loads": [[10, 3, 7, 1, 0, 5], [2, 2, 9, 4, 4, 1]],
        "gpus": 4,
        "slots_per_gpu": 2,
        "nodes": 2
    });
    fuzz(
        &seed,
        |s: &mut moe_planner::placement::PlacementSpec| matrix_floats(&mut s.loads),
        plan_placement,
    );
}

/// Deserializes one spec and asserts it plans without panic, hang or non-finite `Ok`.
fn regression<S, P, E>(spec: Value, plan: fn(&S) -> Result<P, E>)
where
    S: DeserializeOwned + Send + 'static + std::fmt::Debug,
    P: Serialize + Send + 'static,
    E: Send + 'static,
{
    let spec: S = serde_json::from_value(spec).expect("the spec deserializes");
    if let Err(e) = call(spec, plan) {
        panic!("{e}");
    }
}

#[test]
fn training_huge_bytes_per_element_is_refused() {
    let mut spec: Value =
        serde_json::from_str(include_str!("../../../examples/data/parm_layer.json"))
            .expect("example spec");
    spec["bytes_per_element"] = json!(1e308);
    regression(spec, plan_training);
}

#[test]
fn grouping_u64_max_expert_slots_is_refused() {
    let mut spec = group_seed();
    spec["cluster"]["expert_slots"] = json!(u64::MAX);
    regression(spec, plan_groups);
}

#[test]
fn fabric_huge_transceiver_price_is_refused() {
    let spec = json!({"gpus": 1024, "hb_domain": 8, "radix": 64, "transceiver_usd": 1e308});
    regression(spec, plan_fabrics);
}

#[test]
fn placement_f64_max_load_is_refused() {
    let spec = json!({
        "loads": [[f64::MAX, 3, 7, 1, 0, 5], [2, 2, 9, 4, 4, 1]],
        "gpus": 4,
        "slots_per_gpu": 2,
        "nodes": 2
    });
    regression(spec, plan_placement);
}

#[test]
fn colocation_1e308_traffic_is_refused() {
    let spec = json!({
        "model_a_traffic_bytes": [[0, 5, 1, 2], [3, 0, 2, 1e308], [1, 4, 0, 6], [2, 2, 1, 0]],
        "model_b_traffic_bytes": [[0, 1, 1, 9], [2, 0, 3, 1], [4, 1, 0, 1], [1e308, 8, 2, 0]],
        "seed": 3
    });
    regression(spec, plan_colocation);
}

#[test]
fn inference_1e308_aggregation_time_is_refused() {
    let mut spec: Value = serde_json::from_str(include_str!(
        "../../../examples/data/inference_colocated.json"
    ))
    .expect("example spec");
    spec["models"][1]["aggregation_s"] = json!(1e308);
    regression(spec, plan_inference);
}

#[test]
fn fit_with_zero_slope_is_refused() {
    let spec = json!({"samples": [
        {"bytes": 0, "seconds": 1.2e-5},
        {"bytes": 1024, "seconds": 1.2e-5}
    ]});
    regression(spec, plan_fit);
}

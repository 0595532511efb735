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

use moe_fuzz::{JsonMutation, json_mutation, mutate_json};
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
    /// A change to the JSON document, before deserializing.
    Json(JsonMutation),
    /// Sets the `at`-th `f64` the planner's poke function knows to `FLOAT_EXTREMES[value]`.
    Float { at: usize, value: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        7 => json_mutation().prop_map(Mutation::Json),
        2 => (any::<usize>(), 0..FLOAT_EXTREMES.len())
            .prop_map(|(at, value)| Mutation::Float { at, value }),
    ]
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
        Ok(p) => {
            let mut v = serde_json::to_value(&p).map_err(|e| format!("serialize: {e}"))?;
            allow_infeasible_baselines(&mut v);
            moe_fuzz::check_finite_json(&v, OPTION_KEYS)
        }
    })
    .and_then(|r| r)
    .map_err(|e| format!("{e} on {shown}"))
}

/// A grouping baseline that cannot hold the experts (a node with too few slots) has an infinite
/// time by design (`topology-partition`: infinite `T` means infeasible, and an overflow is an
/// error instead) and no ratio to LysiGroup; its `null` times are not a non-finite result.
fn allow_infeasible_baselines(plan: &mut Value) {
    let Some(Value::Array(baselines)) = plan.get_mut("baselines") else {
        return;
    };
    for b in baselines {
        if b.get("ratio_to_lysigroup") == Some(&Value::Null)
            && let Value::Object(fields) = b
        {
            fields.remove("objective_s");
            fields.remove("max_objective_s");
        }
    }
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
    let json: Vec<JsonMutation> = mutations
        .iter()
        .filter_map(|m| match m {
            Mutation::Json(j) => Some(*j),
            Mutation::Float { .. } => None,
        })
        .collect();
    let (value, mut log) = mutate_json(seed, &json);
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
        Ok(()) => eprintln!(
            "fuzz {}: {} cases, no failure",
            std::any::type_name::<S>()
                .rsplit("::")
                .next()
                .unwrap_or("plan"),
            moe_fuzz::cases()
        ),
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

#[test]
fn grouping_2_pow_32_experts_is_refused() {
    // Found by the fuzzing: the per-expert FLOP list was allocated (32 GiB) before any check.
    let mut spec = group_seed();
    spec["experts"]["count"] = json!(1_u64 << 32);
    regression(spec, plan_groups);
}

#[test]
fn grouping_10_pow_18_nodes_of_a_kind_is_refused() {
    // A node list repeated `count` times: bounded before the repetition.
    let mut spec = group_seed();
    spec["cluster"] = json!({"kind": "nodes", "nodes": [{
        "count": 1_000_000_000_000_000_000_u64, "gpus": 4, "tflop_per_s": 312.0, "expert_slots": 4,
        "intra": {"alpha_ms": 0.01, "beta_ms_per_mb": 0.004},
        "inter": {"alpha_ms": 0.02, "beta_ms_per_mb": 0.04}
    }]});
    regression(spec.clone(), plan_groups);
    let spec: moe_planner::grouping::GroupSpec =
        serde_json::from_value(spec).expect("the spec deserializes");
    assert!(matches!(
        spec.cluster.build(),
        Err(moe_planner::topology_partition::TopologyError::Input(
            moe_planner::comm_cost_model::InputError::TooLarge { .. }
        ))
    ));
}

#[test]
fn training_with_a_1e308_latency_is_refused_or_finite() {
    // Found by the fuzzing: the speedup, a ratio of two finite times, overflowed.
    let mut spec: Value =
        serde_json::from_str(include_str!("../../../examples/data/parm_layer.json"))
            .expect("example spec");
    spec["costs"]["ag_esp"]["alpha_s"] = json!(1e308);
    regression(spec, plan_training);
}

#[test]
fn placement_of_six_experts_on_thousands_of_gpus_is_fast_and_near_the_bound() {
    // Found by the fuzzing (100,000 GPUs): EPLB's packing scanned every GPU per replica, our
    // packing looked up every replica's GPUs, and the local search scored moves touching
    // thousands of GPUs in quadratic time: more than 2 minutes in release builds, now 1.4 s.
    // 1,500 GPUs here keep the debug build under 2 s.
    let spec = json!({
        "loads": [[10, 3, 7, 1, 0, 5]],
        "gpus": 1500,
        "slots_per_gpu": 2,
        "nodes": 2
    });
    let spec: moe_planner::placement::PlacementSpec =
        serde_json::from_value(spec).expect("the spec deserializes");
    let plan = moe_fuzz::within(move || plan_placement(&spec))
        .expect("answers within the time limit")
        .expect("plans");
    for layer in &plan.layers {
        assert!(layer.gap < 0.01, "gap {}", layer.gap);
    }
}

#[test]
fn grouping_1e308_recompute_is_refused() {
    // Found by the fuzzing: every group's time overflowed and came back as `null`.
    let mut spec = group_seed();
    spec["training"]["recompute"] = json!(1e308);
    regression(spec, plan_groups);
}

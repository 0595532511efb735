//! Many experts per GPU on the embedded DeepSeek-like spec: every token delivered once, every
//! timetable contention-free on its bound, and the plan never slower than a baseline.

use moe_planner::PlanError;
use moe_planner::alltoall_sched::{Bandwidth, Timetable, TrafficMatrix, dispatch_tokens};
use moe_planner::comm_cost_model::InputError;
use moe_planner::inference::{InferenceSpec, ReplicatedSpec, plan_inference};

const DEEPSEEK: &str = include_str!("../../moe-planner-cli/data/inference_deepseek_like.json");

fn deepseek() -> ReplicatedSpec {
    match serde_json::from_str(DEEPSEEK).unwrap() {
        InferenceSpec::Replicated(spec) => spec,
        other => panic!("not replicated: {other:?}"),
    }
}

#[test]
fn deepseek_like_plan_delivers_every_token_on_the_bound() {
    let spec = deepseek();
    let plan = plan_inference(&spec.clone().into()).unwrap();
    let model = &spec.models[0];
    let bytes_per_token = model.bytes_per_token;
    let bandwidth = Bandwidth::uniform(400e9 / 8.0).unwrap();
    let per_node = spec.gpus_per_node.unwrap();
    let node_of_gpu: Vec<usize> = (0..spec.gpus.len()).map(|g| g / per_node).collect();
    assert_eq!(plan.layers.len(), model.routed_tokens.len());
    for (layer, routed) in plan.layers.iter().zip(&model.routed_tokens) {
        // Each GPU holds its slots, every expert at least once.
        let mut held: Vec<usize> = layer.experts_of_gpu.concat();
        assert_eq!(held.len(), spec.gpus.len() * spec.slots_per_gpu.unwrap());
        held.sort_unstable();
        held.dedup();
        assert_eq!(held.len(), routed[0].len());
        let d = dispatch_tokens(routed, &layer.experts_of_gpu, &node_of_gpu).unwrap();
        let total: f64 = routed.iter().flatten().sum();
        assert_eq!(d.computed_tokens().iter().sum::<f64>(), total);
        for e in 0..routed[0].len() {
            let want: f64 = routed.iter().map(|r| r[e]).sum();
            let got: f64 = d.expert_tokens.iter().map(|r| r[e]).sum();
            assert_eq!(want, got, "expert {e}");
        }
        let there = d.traffic(bytes_per_token).unwrap();
        for (a2a, matrix) in [
            (&layer.dispatch, &there),
            (&layer.combine, &there.transposed()),
        ] {
            check_timetable(a2a, matrix, &bandwidth);
        }
    }
    for b in &plan.baselines {
        assert!(plan.inference_time_s <= b.inference_time_s, "{b:?}");
        assert!(b.speedup >= 1.0);
    }
    assert_eq!(plan.baselines.len(), 4);
    assert_eq!(plan.baseline, plan.baselines[0]);
}

#[test]
fn two_models_with_many_experts_name_what_is_supported() {
    let mut spec = deepseek();
    spec.models.push(spec.models[0].clone());
    let err = plan_inference(&spec.into()).unwrap_err();
    assert!(
        matches!(
            err,
            PlanError::Input(InputError::TooLarge {
                limit: 1,
                value: 2,
                ..
            })
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("one model may have many experts per GPU"),
        "{message}"
    );
    assert!(message.contains("one expert each per GPU"), "{message}");
}

fn check_timetable(
    a2a: &moe_planner::inference::AllToAllSummary,
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
) {
    let timetable = Timetable {
        n: matrix.n(),
        transfers: a2a.timetable.clone(),
    };
    timetable.validate(matrix, bandwidth).unwrap();
    assert_eq!(a2a.makespan_s, a2a.lower_bound_s);
    assert_eq!(a2a.pieces, a2a.timetable.len());
    assert_eq!(a2a.nonzero_pairs, matrix.nonzeros());
    assert!(a2a.pieces >= a2a.nonzero_pairs);
    // Ordered by sender, then start.
    assert!(
        a2a.timetable
            .windows(2)
            .all(|w| (w[0].src, w[0].start_s) <= (w[1].src, w[1].start_s))
    );
}

/// Tokens that cross nodes in each layer's dispatch of a plan.
fn cross_node_tokens(spec: &ReplicatedSpec, plan: &moe_planner::inference::InferencePlan) -> f64 {
    let per_node = spec.gpus_per_node.unwrap();
    let node_of_gpu: Vec<usize> = (0..spec.gpus.len()).map(|g| g / per_node).collect();
    plan.layers
        .iter()
        .zip(&spec.models[0].routed_tokens)
        .map(|(layer, routed)| {
            let d = dispatch_tokens(routed, &layer.experts_of_gpu, &node_of_gpu).unwrap();
            let mut cross = 0.0;
            for (src, row) in d.gpu_tokens.iter().enumerate() {
                for (dst, &t) in row.iter().enumerate() {
                    if node_of_gpu[src] != node_of_gpu[dst] {
                        cross += t;
                    }
                }
            }
            cross
        })
        .sum()
}

#[test]
fn traffic_aware_placement_in_infer() {
    use moe_planner::traffic_placement::{LocalityTrace, locality_trace};
    // The embedded spec's GPUs and model, cut to 8 GPUs in 2 nodes with 64 experts and router
    // traces whose sources prefer the experts of their node (the embedded traces have no
    // locality: there the traffic-aware plan is the compute-only one). Small, so that a debug
    // build plans it well within the planner's 1 s budget per layer.
    let mut spec = deepseek();
    let g = 8;
    spec.gpus.truncate(g);
    spec.gpus_per_node = Some(4);
    spec.slots_per_gpu = Some(9);
    let trace = LocalityTrace {
        experts: 64,
        ..LocalityTrace::deepseek_like(2, g, 2, 0.5)
    };
    spec.models[0].routed_tokens = locality_trace(&trace, 1)
        .unwrap()
        .iter()
        .map(|t| {
            (0..g)
                .map(|src| (0..t.experts()).map(|e| t.get(src, e)).collect())
                .collect()
        })
        .collect();
    let compute_only = plan_inference(&spec.clone().into()).unwrap();
    let mut traffic = spec.clone();
    traffic.traffic_tolerance = Some(0.01);
    let plan = plan_inference(&traffic.clone().into()).unwrap();
    let (ours, base) = (
        cross_node_tokens(&traffic, &plan),
        cross_node_tokens(&spec, &compute_only),
    );
    println!(
        "cross-node tokens: traffic-aware {ours:.0}, compute-only {base:.0}; inference {:.4} ms vs {:.4} ms",
        1e3 * plan.inference_time_s,
        1e3 * compute_only.inference_time_s
    );
    assert!(ours < 0.8 * base, "{ours} vs {base}");
    // Needs per-source tokens and nodes.
    let mut no_nodes = traffic.clone();
    no_nodes.gpus_per_node = None;
    assert!(matches!(
        plan_inference(&no_nodes.into()).unwrap_err(),
        PlanError::InvalidField {
            field: "traffic_tolerance",
            ..
        }
    ));
}

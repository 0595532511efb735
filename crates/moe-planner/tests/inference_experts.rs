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

//! Inference planner: where each expert runs and in what order its tokens flow (Aurora).
//!
//! [`plan_inference`] takes an [`InferenceSpec`] in one of two modes, each with only the fields
//! it uses ([`OnePerGpuSpec`], [`ReplicatedSpec`]). With one expert of each model per GPU
//! (`mode: "one-per-gpu"`) it composes the algorithm crates along the four scenarios of Aurora
//! (Li et al., §3, Fig. 2):
//!
//! | models | GPUs | placement | Aurora |
//! |---|---|---|---|
//! | one | identical | expert `i` on GPU `i` | §4 |
//! | one | mixed | exact bottleneck GPU assignment ([`colocation_matching::assign_gpus_bottleneck`]) | §5, Thm 5.1 generalised |
//! | two | identical | bottleneck pairing of the two models' experts ([`colocation_matching::pair_bottleneck`]) | §6, Thm 6.2 |
//! | two | mixed | decoupled matching improved by local search ([`colocation_matching::colocate_local_search`]) | §7 |
//!
//! and compares it with what a plain deployment gets: random GPU assignment (RGA) and random
//! colocation (REC) with shortest-job-first send order under contention (Aurora §8.1).
//! Placement decisions use the traffic summed over all layers (Aurora's historical
//! statistics); the per-layer schedules use each layer's own matrix.
//!
//! With many experts per GPU (`mode: "replicated"`) each layer gets an optimal replica
//! placement ([`expert_placement::place`]) and is compared with EPLB under NCCL's, the shift
//! and the shortest-job-first orders and with a random slot placement.
//!
//! In both modes every layer's dispatch all-to-all (and the combine, its transpose) is
//! scheduled with the contention-free optimal order ([`alltoall_sched::optimal`]) and the layer
//! is timed by one evaluator: the exclusive model (Eq. 1) with per-GPU terms, or the colocated
//! timeline (Table 2, Eq. 4). `experts_of_gpu[g]` has one shape everywhere: the experts GPU
//! `g` hosts, one per slot (in the one-per-GPU mode a GPU has one slot per model).
//!
//! # Examples
//!
//! ```
//! use moe_planner::inference::{plan_inference, GpuInput, InferenceModelSpec, OnePerGpuSpec};
//! let model = InferenceModelSpec {
//!     name: "moe".into(),
//!     layers: vec![vec![
//!         vec![0.0, 4e6, 1e6],
//!         vec![2e6, 0.0, 1e6],
//!         vec![3e6, 1e6, 0.0],
//!     ]],
//!     gate_s: (1e-4).into(),
//!     aggregation_s: (1e-4).into(),
//!     ffn_flop_per_byte: 1e3,
//! };
//! let spec = OnePerGpuSpec {
//!     gpus: vec![GpuInput { tflop_per_s: 100.0, bandwidth_gbps: 100.0 }; 3],
//!     models: vec![model],
//!     seed: 7,
//!     ..Default::default()
//! };
//! let plan = plan_inference(&spec.into())?;
//! // The optimal order reaches the all-to-all lower bound on every layer.
//! for layer in &plan.layers {
//!     assert!((layer.dispatch.makespan_s - layer.dispatch.lower_bound_s).abs() < 1e-12);
//! }
//! assert!(plan.inference_time_s <= plan.baseline.inference_time_s + 1e-12);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

mod cluster;
mod evaluate;
mod one_per_gpu;
mod plan;
mod replicated;
mod spec;

pub use plan::{AllToAllSummary, BaselineSummary, InferencePlan, LayerPlan, Scenario};
pub use replicated::MAX_REPLICATED_BYTES;
pub use spec::{
    GpuInput, InferenceModelSpec, InferenceSpec, OnePerGpuSpec, PerGpuSeconds, ReplicatedModelSpec,
    ReplicatedSpec,
};

use crate::PlanError;

/// Plans an MoE inference deployment: Aurora §4–7 with one expert of each model per GPU, or an
/// optimal replica placement per layer with many experts per GPU; both timed by one evaluator
/// of Aurora's timeline and compared with their baselines on the same cost model.
///
/// # Errors
///
/// [`PlanError::Input`] for no GPUs, no models, a model without layers, or a negative or
/// non-finite time, rate or FLOP count, and for an inference time or speedup that overflows
/// to infinity; [`PlanError::Input`] (`TooLarge`) for more than two models (one-per-GPU), more than one
/// (replicated), or a replicated cluster whose traffic matrices would exceed
/// [`MAX_REPLICATED_BYTES`]; [`PlanError::Input`] (`SizeMismatch`) for a layer matrix that does not have
/// one row per GPU or models with different layer counts; [`PlanError::Incompatible`] for both
/// `routed_tokens` and `expert_tokens`; [`PlanError::Schedule`] / [`PlanError::Matching`] /
/// [`PlanError::Placement`] for traffic the algorithm crates reject (ragged rows, negative or
/// non-finite bytes).
///
/// # Complexity
///
/// Placement: one bottleneck matching (or local search) on `n` GPUs, or one replica placement
/// per layer; then, for each of `L` layers and each model, two optimal all-to-all schedules and
/// the simulated baselines; dominated by the all-to-all decomposition, `O(L · n^2.5 · log n)`
/// in practice.
pub fn plan_inference(spec: &InferenceSpec) -> Result<InferencePlan, PlanError> {
    match spec {
        InferenceSpec::OnePerGpu(spec) => one_per_gpu::plan(spec),
        InferenceSpec::Replicated(spec) => replicated::plan(spec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alltoall_sched::ScheduleError;
    use comm_cost_model::InputError;

    fn model(name: &str, layers: Vec<Vec<Vec<f64>>>) -> InferenceModelSpec {
        InferenceModelSpec {
            name: name.into(),
            layers,
            gate_s: (1e-4).into(),
            aggregation_s: (1e-4).into(),
            ffn_flop_per_byte: 1e3,
        }
    }

    fn skewed(n: usize, scale: f64) -> Vec<Vec<f64>> {
        (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if i == j {
                            0.0
                        } else {
                            scale * 1e6 / (1 + j) as f64
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn spec(gpus: Vec<GpuInput>, models: Vec<InferenceModelSpec>) -> InferenceSpec {
        OnePerGpuSpec {
            gpus,
            models,
            seed: 3,
            ..Default::default()
        }
        .into()
    }

    fn uniform_gpus(n: usize) -> Vec<GpuInput> {
        vec![
            GpuInput {
                tflop_per_s: 100.0,
                bandwidth_gbps: 100.0
            };
            n
        ]
    }

    #[test]
    fn exclusive_homogeneous_reaches_the_bound_and_beats_the_baseline() {
        let plan = plan_inference(&spec(
            uniform_gpus(4),
            vec![model("a", vec![skewed(4, 1.0)])],
        ))
        .unwrap();
        assert_eq!(plan.scenario, Scenario::ExclusiveHomogeneous);
        assert_eq!(
            plan.experts_of_gpu,
            vec![vec![0], vec![1], vec![2], vec![3]]
        );
        let l = &plan.layers[0];
        assert!((l.dispatch.makespan_s - l.dispatch.lower_bound_s).abs() < 1e-12);
        assert!(plan.inference_time_s <= plan.baseline.inference_time_s + 1e-12);
        assert!(plan.gpu_utilization > 0.0 && plan.gpu_utilization <= 1.0);
    }

    #[test]
    fn three_gpus_match_eq_1_by_hand() {
        // 3 identical GPUs at 8 Gbps = 1e9 bytes/s and 1 TFLOP/s; one layer, in MB:
        //     d = [[0, 4, 1], [1, 0, 1], [1, 3, 0]]
        // Row sums 5, 2, 4; column sums 2, 7, 2. GPU 1 receives 7 MB: its port is the
        // bottleneck of the dispatch (7 ms) and, sending those 7 MB back, of the combine (7 ms),
        // so the optimal orders keep it busy until 7 ms both times: N_1 = C_1 = 7 ms.
        // FFN at 1000 FLOP/byte: F = (2, 7, 2) ms. Gate 1 ms, aggregation 0.5 ms. Eq. 1:
        //     t = max_i(G + N_i) + max_j(F_j + C_j) + max_k A_k = (1 + 7) + (7 + 7) + 0.5 = 22.5 ms
        // (GPUs 0 and 2 give at most 2 + 7 < 14 in the middle term).
        let mb = |rows: [[f64; 3]; 3]| rows.map(|r| r.map(|x| x * 1e6).to_vec()).to_vec();
        let spec = OnePerGpuSpec {
            gpus: vec![
                GpuInput {
                    tflop_per_s: 1.0,
                    bandwidth_gbps: 8.0
                };
                3
            ],
            models: vec![InferenceModelSpec {
                name: "hand".into(),
                layers: vec![mb([[0.0, 4.0, 1.0], [1.0, 0.0, 1.0], [1.0, 3.0, 0.0]])],
                gate_s: (1e-3).into(),
                aggregation_s: (0.5e-3).into(),
                ffn_flop_per_byte: 1e3,
            }],
            seed: 0,
            ..Default::default()
        };
        let plan = plan_inference(&spec.into()).unwrap();
        assert_eq!(plan.scenario, Scenario::ExclusiveHomogeneous);
        assert_eq!(plan.experts_of_gpu, vec![vec![0], vec![1], vec![2]]);
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y;
        let layer = &plan.layers[0];
        for a2a in [&layer.dispatch, &layer.combine] {
            assert!(close(a2a.lower_bound_s, 7e-3) && close(a2a.makespan_s, 7e-3));
        }
        assert!(close(layer.inference_time_s, 22.5e-3), "{layer:?}");
        assert!(close(plan.inference_time_s, 22.5e-3));
        // Utilization (§8.1): each GPU computes G + F_i + A = 3.5, 8.5, 3.5 ms of 22.5 ms.
        assert!(close(plan.gpu_utilization, (3.5 + 8.5 + 3.5) / 3.0 / 22.5));
    }

    #[test]
    fn colocating_homogeneous_pairs_every_expert_once() {
        let models = vec![
            model("a", vec![skewed(4, 1.0)]),
            model("b", vec![skewed(4, 2.0)]),
        ];
        let plan = plan_inference(&spec(uniform_gpus(4), models)).unwrap();
        assert_eq!(plan.scenario, Scenario::ColocatingHomogeneous);
        for m in 0..2 {
            let mut experts: Vec<usize> = plan.experts_of_gpu.iter().map(|p| p[m]).collect();
            experts.sort_unstable();
            assert_eq!(experts, vec![0, 1, 2, 3]);
        }
        assert!(plan.speedup_over_baseline >= 1.0 - 1e-12);
    }

    #[test]
    fn heterogeneous_scenarios_are_detected_and_planned() {
        let mut gpus = uniform_gpus(4);
        gpus[0] = GpuInput {
            tflop_per_s: 300.0,
            bandwidth_gbps: 400.0,
        };
        let one =
            plan_inference(&spec(gpus.clone(), vec![model("a", vec![skewed(4, 1.0)])])).unwrap();
        assert_eq!(one.scenario, Scenario::ExclusiveHeterogeneous);
        // The most popular expert (0 receives the most) goes to the fast GPU 0.
        assert_eq!(one.experts_of_gpu[0], vec![0]);
        let two = plan_inference(&spec(
            gpus,
            vec![
                model("a", vec![skewed(4, 1.0)]),
                model("b", vec![skewed(4, 1.0)]),
            ],
        ))
        .unwrap();
        assert_eq!(two.scenario, Scenario::ColocatingHeterogeneous);
    }

    #[test]
    fn colocated_plans_hold_on_zipf_workloads_and_mixed_gpus() {
        use alltoall_sched::workload::zipf_traffic;
        let mut gpus = uniform_gpus(6);
        for g in &mut gpus[3..] {
            *g = GpuInput {
                tflop_per_s: 25.0,
                bandwidth_gbps: 50.0,
            };
        }
        for seed in 0..6 {
            let layer = |s: f64, k: u64| zipf_traffic(6, s, 512, 4096, seed * 10 + k).unwrap();
            let models = vec![
                model("a", vec![layer(1.0, 0).to_rows(), layer(1.0, 1).to_rows()]),
                model("b", vec![layer(1.2, 2).to_rows(), layer(1.2, 3).to_rows()]),
            ];
            for cluster in [uniform_gpus(6), gpus.clone()] {
                let plan = plan_inference(&spec(cluster, models.clone())).unwrap();
                for l in &plan.layers {
                    let lb = l.dispatch.lower_bound_s;
                    assert!((l.dispatch.makespan_s - lb).abs() <= 1e-9 * lb);
                }
                assert!(plan.gpu_utilization > 0.0 && plan.gpu_utilization <= 1.0);
                assert!(plan.baseline.inference_time_s > 0.0);
            }
        }
    }

    #[test]
    fn gpus_load_under_both_spellings_of_their_compute() {
        let new: GpuInput =
            serde_json::from_str(r#"{"tflop_per_s": 312.0, "bandwidth_gbps": 100.0}"#).unwrap();
        let old: GpuInput =
            serde_json::from_str(r#"{"tflops": 312.0, "bandwidth_gbps": 100.0}"#).unwrap();
        assert_eq!(new, old);
        assert_eq!(new.tflop_per_s, 312.0);
        assert!(
            serde_json::to_string(&new)
                .unwrap()
                .contains("\"tflop_per_s\"")
        );
    }

    #[test]
    fn bad_specs_are_typed_errors() {
        let m = || model("a", vec![skewed(3, 1.0)]);
        assert!(matches!(
            plan_inference(&spec(vec![], vec![m()])),
            Err(PlanError::Input(InputError::CountTooSmall {
                what: "GPUs",
                ..
            }))
        ));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(4), vec![m()])),
            Err(PlanError::Input(InputError::SizeMismatch {
                expected: 4,
                actual: 3,
                ..
            }))
        ));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![m(), m(), m()])),
            Err(PlanError::Input(InputError::TooLarge {
                limit: 2,
                value: 3,
                ..
            }))
        ));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![])),
            Err(PlanError::Input(InputError::CountTooSmall {
                what: "models",
                ..
            }))
        ));
        let mut bad_gpu = uniform_gpus(3);
        bad_gpu[1].bandwidth_gbps = 0.0;
        assert!(matches!(
            plan_inference(&spec(bad_gpu, vec![m()])),
            Err(PlanError::Input(InputError::NotPositive { .. }))
        ));
        let mut nan = m();
        nan.layers[0][0][1] = f64::NAN;
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![nan])),
            Err(PlanError::Schedule(ScheduleError::InvalidTraffic {
                src: 0,
                dst: 1,
                ..
            }))
        ));
        let mut ragged = m();
        ragged.layers[0][2].pop();
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![ragged])),
            Err(PlanError::Schedule(ScheduleError::NotSquare { row: 2, .. }))
        ));
        let mut empty = m();
        empty.layers.clear();
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![empty])),
            Err(PlanError::Input(InputError::CountTooSmall { .. }))
        ));
        let mut two_layers = m();
        two_layers.layers.push(skewed(3, 2.0));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![m(), two_layers])),
            Err(PlanError::Input(InputError::SizeMismatch {
                expected: 1,
                actual: 2,
                ..
            }))
        ));
        let mut negative = m();
        negative.gate_s = (-1.0).into();
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![negative])),
            Err(PlanError::Input(InputError::Negative { .. }))
        ));
    }
}

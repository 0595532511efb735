//! Pairing, GPU assignment, colocating + heterogeneous, baselines and LysiAssign.

mod common;

use colocation_matching::{
    ColocationCostModel, CostTensor, ExpertDemand, ExpertLoads, ExpertPairing, GpuSpec,
    HyperedgeCost, LocalSearchOptions, MatchingError, PairingOptions, SquareMatrix, TieBreak,
    Worker, assign_by_popularity, assign_gpus_bottleneck, colocate_decoupled, colocate_exact,
    colocate_local_search, colocate_milp, exclusive_time_matrix, lina_pairs, lysi_assign,
    lysi_assign_milp, pair_bottleneck, pair_sorted, placement_loads, random_colocation,
    random_gpu_assignment,
};
use comm_cost_model::InputError;
use common::{is_permutation, permutations};
use proptest::prelude::*;

fn loads(n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((0u16..50).prop_map(f64::from), n)
}

/// Smallest pairing bottleneck over all pairings, Eq. 6 weights.
fn brute_pairing(a: &ExpertLoads, b: &ExpertLoads) -> f64 {
    permutations(a.len())
        .iter()
        .map(|p| ExpertPairing::evaluate(a, b, p).unwrap().bottleneck_bytes)
        .fold(f64::INFINITY, f64::min)
}

/// Smallest hetero bottleneck by trying every pairing and every GPU assignment.
fn brute_hetero(cost: &impl HyperedgeCost) -> f64 {
    let n = cost.size();
    let perms = permutations(n);
    let mut best = f64::INFINITY;
    for p in &perms {
        for g in &perms {
            let v = (0..n)
                .map(|a| cost.cost_s(a, p[a], g[a]))
                .fold(0.0, f64::max);
            best = best.min(v);
        }
    }
    best
}

fn demand(s: f64, r: f64, f: f64) -> ExpertDemand {
    ExpertDemand {
        send_bytes: s,
        recv_bytes: r,
        flop: f,
    }
}

fn gpu(flops: f64, bw: f64) -> GpuSpec {
    GpuSpec {
        flop_per_s: flops,
        bandwidth_bytes_per_s: bw,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn case_one_equals_case_two_when_send_equals_receive((a, b) in (1usize..=6).prop_flat_map(|n| (loads(n), loads(n)))) {
        let sorted = pair_sorted(&a, &b).unwrap();
        let la = ExpertLoads::symmetric(a).unwrap();
        let lb = ExpertLoads::symmetric(b).unwrap();
        let matched = pair_bottleneck(&la, &lb, &PairingOptions::default()).unwrap();
        prop_assert_eq!(sorted.bottleneck_bytes, matched.bottleneck_bytes);
        prop_assert_eq!(sorted.bottleneck_bytes, brute_pairing(&la, &lb));
    }

    #[test]
    fn case_two_is_optimal((s_a, r_a, s_b, r_b) in (1usize..=6).prop_flat_map(|n| (loads(n), loads(n), loads(n), loads(n))), gate in 0u16..40) {
        let a = ExpertLoads::new(s_a, r_a).unwrap();
        let b = ExpertLoads::new(s_b, r_b).unwrap();
        let p = pair_bottleneck(&a, &b, &PairingOptions::default()).unwrap();
        prop_assert!(is_permutation(&p.b_of_a()));
        prop_assert_eq!(p.bottleneck_bytes, brute_pairing(&a, &b));
        // Footnote 4: optimal for its own weight max(a + max(b, G), ...).
        let g = f64::from(gate);
        let opts = PairingOptions { gate_b_bytes: g, ..Default::default() };
        let q = pair_bottleneck(&a, &b, &opts).unwrap();
        let gated = |perm: &[usize]| (0..a.len()).map(|i| {
            let j = perm[i];
            f64::max(a.send_bytes[i] + b.send_bytes[j].max(g), a.recv_bytes[i] + b.recv_bytes[j].max(g))
        }).fold(0.0, f64::max);
        let best = permutations(a.len()).iter().map(|p| gated(p)).fold(f64::INFINITY, f64::min);
        prop_assert_eq!(gated(&q.b_of_a()), best);
    }

    #[test]
    fn dominance_sweep_agrees_with_matrix_bottleneck(
        raw in prop::collection::vec((0.0f64..1.0, 0.0f64..1.0, 0.0f64..1.0, 0.0f64..1.0), 1..40),
        gate in prop_oneof![Just(0.0f64), 0.0f64..1.0],
    ) {
        // Float loads (rounding matters) up to 40 experts: the sweep (TieBreak::Any) and the
        // generic matrix path (MinTotalWeight) must reach the same bottleneck.
        let a = ExpertLoads::new(raw.iter().map(|r| r.0).collect(), raw.iter().map(|r| r.1).collect()).unwrap();
        let b = ExpertLoads::new(raw.iter().map(|r| r.2).collect(), raw.iter().map(|r| r.3).collect()).unwrap();
        let fast = pair_bottleneck(&a, &b, &PairingOptions { gate_b_bytes: gate, ..Default::default() }).unwrap();
        let slow = pair_bottleneck(&a, &b, &PairingOptions { gate_b_bytes: gate, tie_break: TieBreak::MinTotalWeight }).unwrap();
        let gated = |p: &ExpertPairing| p.pairs.iter().map(|&[i, j]| {
            f64::max(a.send_bytes[i] + b.send_bytes[j].max(gate), a.recv_bytes[i] + b.recv_bytes[j].max(gate))
        }).fold(0.0, f64::max);
        prop_assert!(is_permutation(&fast.b_of_a()));
        prop_assert_eq!(gated(&fast), gated(&slow));
    }

    #[test]
    fn theorem_5_1_is_optimal_under_its_assumption(
        tokens in prop::collection::vec(1u16..100, 1..=6),
        speeds in prop::collection::vec(1u16..10, 6),
    ) {
        let n = tokens.len();
        // Footnote 2: more FLOPS never means less bandwidth (here both scale with one speed).
        let gpus: Vec<GpuSpec> = speeds[..n].iter().map(|&s| gpu(f64::from(s) * 10.0, f64::from(s))).collect();
        let experts: Vec<ExpertDemand> = tokens.iter().map(|&t| { let t = f64::from(t); demand(t, t, 3.0 * t) }).collect();
        let times = exclusive_time_matrix(&experts, &gpus).unwrap();
        let tok: Vec<f64> = tokens.iter().map(|&t| f64::from(t)).collect();
        let perf: Vec<f64> = gpus.iter().map(|g| g.flop_per_s).collect();
        let by_thm = assign_by_popularity(&tok, &perf).unwrap();
        let thm_value = (0..n).filter_map(|e| times.get(e, by_thm[e])).fold(0.0, f64::max);
        let exact = assign_gpus_bottleneck(&times).unwrap();
        prop_assert!((thm_value - exact.bottleneck_s).abs() <= 1e-9 * thm_value.max(1.0));
    }

    #[test]
    fn hetero_solvers_bracket_the_optimum(
        raw in prop::collection::vec((0u16..20, 0u16..20, 0u16..20), 8),
        speeds in prop::collection::vec(1u16..5, 4),
        n in 2usize..=4,
    ) {
        let e: Vec<ExpertDemand> = raw.iter().map(|&(s, r, f)| demand(s.into(), r.into(), f.into())).collect();
        let g: Vec<GpuSpec> = speeds[..n].iter().map(|&s| gpu(f64::from(s), f64::from(5 - s))).collect();
        let model = ColocationCostModel::new(e[..n].to_vec(), e[4..4 + n].to_vec(), g).unwrap();
        let best = brute_hetero(&model);
        let exact = colocate_exact(&model).unwrap();
        prop_assert!((exact.bottleneck_s - best).abs() < 1e-9);
        let paper = colocate_decoupled(&model).unwrap();
        let ours = colocate_local_search(&model, &LocalSearchOptions::default()).unwrap();
        prop_assert!(ours.bottleneck_s <= paper.bottleneck_s);
        prop_assert!(ours.bottleneck_s >= best - 1e-9);
        for p in [&exact, &paper, &ours] {
            let a: Vec<usize> = p.gpu_experts.iter().map(|x| x[0]).collect();
            let b: Vec<usize> = p.gpu_experts.iter().map(|x| x[1]).collect();
            prop_assert!(is_permutation(&a) && is_permutation(&b));
        }
    }

    #[test]
    fn lysi_assign_is_feasible_and_bounded(
        costs in prop::collection::vec(0u16..100, 1..40),
        workers in prop::collection::vec((1u16..8, 1usize..12), 1..6),
    ) {
        let costs: Vec<f64> = costs.into_iter().map(f64::from).collect();
        let workers: Vec<Worker> = workers.into_iter().map(|(f, m)| Worker { flop_per_s: f.into(), expert_slots: m }).collect();
        let slots: usize = workers.iter().map(|w| w.expert_slots).sum();
        match lysi_assign(&costs, &workers) {
            Err(MatchingError::InsufficientCapacity { .. }) => prop_assert!(slots < costs.len()),
            Ok(a) => {
                prop_assert!(slots >= costs.len());
                let mut used = vec![0usize; workers.len()];
                for &j in &a.gpu_of_expert { used[j] += 1; }
                prop_assert!(used.iter().zip(&workers).all(|(&u, w)| u <= w.expert_slots));
                prop_assert!(a.makespan_s >= a.lower_bound_s - 1e-9);
            }
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }
}

#[test]
fn theorem_5_1_loses_when_a_faster_gpu_has_less_bandwidth() {
    // GPU 0: 100 FLOP/s but 1 B/s; GPU 1: 10 FLOP/s and 10 B/s (violates Aurora footnote 2).
    let gpus = [gpu(100.0, 1.0), gpu(10.0, 10.0)];
    let experts = [demand(10.0, 10.0, 100.0), demand(1.0, 1.0, 10.0)];
    let times = exclusive_time_matrix(&experts, &gpus).unwrap();
    let thm = assign_by_popularity(&[10.0, 1.0], &[100.0, 10.0]).unwrap();
    assert_eq!(thm, vec![0, 1]);
    // Theorem 5.1: popular expert on GPU 0: 2·10/1 + 100/100 = 21; other: 2·1/10 + 10/10 = 1.2.
    let thm_value = f64::max(times.get(0, 0).unwrap(), times.get(1, 1).unwrap());
    assert_eq!(thm_value, 21.0);
    // Exact: 2·10/10 + 100/10 = 12 and 2·1/1 + 10/100 = 2.1.
    let exact = assign_gpus_bottleneck(&times).unwrap();
    assert_eq!(exact.gpu_of_expert, vec![1, 0]);
    assert_eq!(exact.bottleneck_s, 12.0);
}

#[test]
fn milp_agrees_with_enumeration_on_tiny_instances() {
    for seed in 0..3u64 {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 17) as f64
        };
        let t = CostTensor::from_fn(3, |_, _, _| next()).unwrap();
        let milp = colocate_milp(&t).unwrap();
        let exact = colocate_exact(&t).unwrap();
        assert!(
            (milp.bottleneck_s - exact.bottleneck_s).abs() < 1e-6,
            "seed {seed}"
        );
        assert!((exact.bottleneck_s - brute_hetero(&t)).abs() < 1e-12);
    }
}

#[test]
fn lysi_milp_matches_brute_force_and_bounds_the_heuristic() {
    let costs = [7.0, 5.0, 4.0, 3.0, 3.0, 2.0];
    let workers = [
        Worker {
            flop_per_s: 3.0,
            expert_slots: 3,
        },
        Worker {
            flop_per_s: 2.0,
            expert_slots: 2,
        },
        Worker {
            flop_per_s: 1.0,
            expert_slots: 2,
        },
    ];
    let milp = lysi_assign_milp(&costs, &workers).unwrap();
    let heuristic = lysi_assign(&costs, &workers).unwrap();
    // Brute force over 3^6 assignments.
    let mut best = f64::INFINITY;
    for code in 0..3usize.pow(6) {
        let mut c = code;
        let mut load = [0.0; 3];
        let mut used = [0usize; 3];
        for &f in &costs {
            load[c % 3] += f;
            used[c % 3] += 1;
            c /= 3;
        }
        if (0..3).all(|j| used[j] <= workers[j].expert_slots) {
            best = best.min(
                (0..3)
                    .map(|j| load[j] / workers[j].flop_per_s)
                    .fold(0.0, f64::max),
            );
        }
    }
    assert!((milp.makespan_s - best).abs() < 1e-9);
    assert!(heuristic.makespan_s >= best - 1e-9);
    // Σf / ΣF = 24 / 6 = 4 and 7 / 3: the bound is 4.
    assert_eq!(heuristic.lower_bound_s, 4.0);
}

#[test]
fn lysi_errors() {
    let w = [Worker {
        flop_per_s: 0.0,
        expert_slots: 4,
    }];
    assert!(matches!(
        lysi_assign(&[1.0], &w),
        Err(MatchingError::Input(InputError::NotPositiveEntry { .. }))
    ));
    let w = [Worker {
        flop_per_s: 1.0,
        expert_slots: 1,
    }];
    assert!(matches!(
        lysi_assign(&[1.0, 2.0], &w),
        Err(MatchingError::InsufficientCapacity {
            capacity: 1,
            experts: 2
        })
    ));
    assert!(matches!(
        lysi_assign(&[f64::NAN], &w),
        Err(MatchingError::Input(InputError::InvalidEntry { .. }))
    ));
    assert!(matches!(
        lysi_assign(&[], &w),
        Err(MatchingError::Input(InputError::Empty { .. }))
    ));
}

#[test]
fn baselines_are_seeded_permutations() {
    assert_eq!(
        random_colocation(16, 3).unwrap(),
        random_colocation(16, 3).unwrap()
    );
    assert_ne!(
        random_colocation(16, 3).unwrap(),
        random_colocation(16, 4).unwrap()
    );
    assert!(is_permutation(&random_gpu_assignment(16, 3).unwrap()));
    assert_eq!(
        lina_pairs(&[1.0, 2.0, 3.0]).unwrap(),
        vec![vec![2, 0], vec![1]]
    );
}

#[test]
fn lina_placement_keeps_mutual_traffic_local() {
    // 4 experts, uniform 1 byte between every pair; Lina puts two per GPU.
    let d = SquareMatrix::from_fn(4, |i, j| if i == j { 0.0 } else { 1.0 }).unwrap();
    let groups = lina_pairs(&[4.0, 3.0, 2.0, 1.0]).unwrap();
    let mut gpu_of = vec![0; 4];
    for (g, experts) in groups.iter().enumerate() {
        for &e in experts {
            gpu_of[e] = g;
        }
    }
    let l = placement_loads(&d, &gpu_of, groups.len()).unwrap();
    // Each GPU's two experts each send 1 byte to each of the 2 remote experts: 4 bytes.
    assert_eq!(l.send_bytes, vec![4.0, 4.0]);
    assert_eq!(l.recv_bytes, vec![4.0, 4.0]);
}

#[test]
fn pairing_errors() {
    let a = ExpertLoads::symmetric(vec![1.0, 2.0]).unwrap();
    let b = ExpertLoads::symmetric(vec![1.0]).unwrap();
    assert!(matches!(
        pair_bottleneck(&a, &b, &PairingOptions::default()),
        Err(MatchingError::Input(InputError::SizeMismatch { .. }))
    ));
    // Padding B with an empty slot makes the sizes agree.
    let p = pair_bottleneck(&a, &b.padded(2).unwrap(), &PairingOptions::default()).unwrap();
    assert_eq!(p.bottleneck_bytes, 2.0); // 2 + empty, 1 + 1
    assert!(matches!(
        pair_sorted(&[1.0], &[f64::NAN]),
        Err(MatchingError::Input(InputError::InvalidEntry { .. }))
    ));
    assert!(matches!(
        ExpertLoads::new(vec![1.0], vec![]),
        Err(MatchingError::Input(InputError::SizeMismatch { .. }))
    ));
    assert!(matches!(
        ExpertPairing::evaluate(&a, &a, &[0, 0]),
        Err(MatchingError::Input(InputError::IndexOutOfRange { .. }))
    ));
    let bad_gate = PairingOptions {
        gate_b_bytes: -1.0,
        ..Default::default()
    };
    assert!(matches!(
        pair_bottleneck(&a, &a, &bad_gate),
        Err(MatchingError::Input(InputError::Negative {
            what: "gate_b_bytes",
            ..
        }))
    ));
}

#[test]
fn hetero_errors() {
    let e = vec![demand(1.0, 1.0, 1.0)];
    assert!(matches!(
        ColocationCostModel::new(e.clone(), e.clone(), vec![gpu(0.0, 1.0)]),
        Err(MatchingError::Input(InputError::NotPositiveEntry { .. }))
    ));
    assert!(matches!(
        ColocationCostModel::new(e.clone(), vec![], vec![gpu(1.0, 1.0)]),
        Err(MatchingError::Input(InputError::SizeMismatch { .. }))
    ));
    let big = CostTensor::from_fn(10, |_, _, _| 1.0).unwrap();
    assert!(matches!(
        colocate_exact(&big),
        Err(MatchingError::Input(InputError::TooLarge { .. }))
    ));
    assert!(matches!(
        colocate_milp(&big),
        Err(MatchingError::Input(InputError::TooLarge { .. }))
    ));
    assert!(matches!(
        CostTensor::from_fn(2, |_, _, _| f64::NAN),
        Err(MatchingError::Input(InputError::InvalidEntry { .. }))
    ));
}

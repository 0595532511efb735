//! Optimal placement against an exact MILP (`good_lp` + `microlp`) on small instances.

use expert_placement::{
    EplbPolicy, LayerLoads, PlacementAlgorithm, PlacementCluster, eplb, place,
    placement_lower_bound,
};
use good_lp::{Expression, ProblemVariables, Solution, SolverModel, constraint, microlp, variable};

/// The optimal maximum GPU load by a MILP: binary `y[e][g][k]` puts one of `k` replicas of `e`
/// on GPU `g`, binary `z[e][k]` picks `e`'s replica count.
fn milp_optimum(w: &[f64], c: &PlacementCluster) -> f64 {
    let (experts, gpus) = (w.len(), c.gpus());
    let max_k = gpus.min(c.total_slots() - experts + 1);
    let mut vars = ProblemVariables::new();
    let t = vars.add(variable().min(0.0));
    let y: Vec<Vec<Vec<_>>> = (0..experts)
        .map(|_| {
            (0..gpus)
                .map(|_| (1..=max_k).map(|_| vars.add(variable().binary())).collect())
                .collect()
        })
        .collect();
    let z: Vec<Vec<_>> = (0..experts)
        .map(|_| (1..=max_k).map(|_| vars.add(variable().binary())).collect())
        .collect();
    let mut model = vars.minimise(t).using(microlp);
    for e in 0..experts {
        let one: Expression = z[e].iter().copied().sum();
        model = model.with(constraint!(one == 1));
        for k in 1..=max_k {
            let placed: Expression = (0..gpus).map(|g| y[e][g][k - 1]).sum();
            model = model.with(constraint!(placed == (k as f64) * z[e][k - 1]));
        }
    }
    let gpu_of = c.slots_of_gpu().iter().zip(c.speed_of_gpu()).enumerate();
    for (g, (&slots, &speed)) in gpu_of {
        let held: Expression = (0..experts)
            .flat_map(|e| (0..max_k).map(move |k| (e, k)))
            .map(|(e, k)| y[e][g][k])
            .sum();
        model = model.with(constraint!(held == slots as f64));
        let load: Expression = (0..experts)
            .flat_map(|e| (1..=max_k).map(move |k| (e, k)))
            .map(|(e, k)| (w[e] / k as f64 / speed) * y[e][g][k - 1])
            .sum();
        model = model.with(constraint!(t >= load));
    }
    let solution = model.solve().expect("the MILP is feasible");
    solution.value(t)
}

/// The optimal maximum GPU load by enumerating every GPU's expert set (a bitmask with as many
/// bits as slots); consecutive identical GPUs take nondecreasing masks.
fn brute_force_optimum(w: &[f64], c: &PlacementCluster) -> f64 {
    let experts = w.len();
    let masks: Vec<Vec<u32>> = c
        .slots_of_gpu()
        .iter()
        .map(|&s| {
            (0u32..1 << experts)
                .filter(|m| m.count_ones() as usize == s)
                .collect()
        })
        .collect();
    let mut chosen = vec![0u32; c.gpus()];
    let mut best = f64::INFINITY;
    enumerate(w, c, &masks, 0, &mut chosen, &mut best);
    best
}

fn enumerate(
    w: &[f64],
    c: &PlacementCluster,
    masks: &[Vec<u32>],
    g: usize,
    chosen: &mut Vec<u32>,
    best: &mut f64,
) {
    if g == chosen.len() {
        let all = (1u32 << w.len()) - 1;
        if chosen.iter().fold(0, |a, m| a | m) != all {
            return;
        }
        let count: Vec<u32> = (0..w.len())
            .map(|e| chosen.iter().filter(|&&m| m >> e & 1 == 1).count() as u32)
            .collect();
        let worst = (0..chosen.len())
            .map(|h| {
                (0..w.len())
                    .filter(|&e| chosen[h] >> e & 1 == 1)
                    .map(|e| w[e] / f64::from(count[e]))
                    .sum::<f64>()
                    / c.speed_of_gpu()[h]
            })
            .fold(0.0, f64::max);
        *best = best.min(worst);
        return;
    }
    let same_as_previous = g > 0
        && c.slots_of_gpu()[g] == c.slots_of_gpu()[g - 1]
        && c.speed_of_gpu()[g] == c.speed_of_gpu()[g - 1];
    for &m in &masks[g] {
        if same_as_previous && m < chosen[g - 1] {
            continue;
        }
        chosen[g] = m;
        enumerate(w, c, masks, g + 1, chosen, best);
    }
}

/// Test instances come from the workspace's portable generator.
struct Rng(comm_cost_model::SeededRng);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(comm_cost_model::seeded_rng(seed, 0))
    }

    /// Uniform in `0..n`.
    fn next(&mut self, n: u64) -> u64 {
        rand::RngExt::random_range(&mut self.0, 0..n)
    }
}

/// Random small instance: 4 to 8 experts on 2 to 4 GPUs with 1 to 3 replicas to spare, no GPU
/// with more slots than experts.
fn instance(rng: &mut Rng, hetero: bool) -> (Vec<f64>, PlacementCluster) {
    let gpus = 2 + rng.next(3) as usize;
    let experts = 4 + rng.next(5) as usize;
    let total = experts + 1 + rng.next(3) as usize;
    let mut slots = vec![1; gpus];
    for _ in gpus..total.max(gpus) {
        // One more slot to a random GPU that still has fewer slots than experts.
        loop {
            let g = rng.next(gpus as u64) as usize;
            if slots[g] < experts {
                slots[g] += 1;
                break;
            }
        }
    }
    let speeds = (0..gpus)
        .map(|_| {
            if hetero {
                [1.0, 2.0, 0.5][rng.next(3) as usize]
            } else {
                1.0
            }
        })
        .collect();
    let w = (0..experts).map(|_| rng.next(100) as f64).collect();
    let c = PlacementCluster::new(slots, speeds, vec![0; gpus]).unwrap();
    (w, c)
}

/// Checks `Optimal` and `Exact` against `oracle` on `n` random instances from `seed`.
fn check_against(
    oracle: fn(&[f64], &PlacementCluster) -> f64,
    seed: u64,
    n: usize,
    max_extra: u64,
) -> usize {
    let mut rng = Rng::new(seed);
    let mut checked = 0;
    for case in 0..n {
        let (w, c) = instance(&mut rng, case % 3 == 2);
        if c.total_slots() - w.len() > max_extra as usize {
            continue;
        }
        let loads = LayerLoads::new(w.clone()).unwrap();
        let best = oracle(&w, &c);
        let opt = place(&loads, &c, PlacementAlgorithm::Optimal).unwrap();
        let exact = place(&loads, &c, PlacementAlgorithm::Exact).unwrap();
        let tol = 1e-9 * best.max(1.0);
        assert!(
            (opt.max_gpu_load - best).abs() <= tol,
            "{w:?} {c:?}: optimal {} vs oracle {best}",
            opt.max_gpu_load
        );
        assert!((exact.max_gpu_load - best).abs() <= tol, "{w:?} {c:?}");
        // Proved optimal: the reported bound is the optimum; the relaxation is below it.
        assert!((opt.lower_bound - best).abs() <= tol);
        assert!(placement_lower_bound(&loads, &c).unwrap() <= best + tol);
        assert_eq!(opt.duplicates_on_gpu, 0);
        if c.uniform_slots().is_some() {
            let base = eplb(&loads, &c, EplbPolicy::Global).unwrap();
            assert!(opt.max_gpu_load <= base.max_gpu_load + tol);
        }
        checked += 1;
    }
    checked
}

#[test]
fn optimal_matches_brute_force_up_to_8_experts_on_4_gpus() {
    assert_eq!(check_against(brute_force_optimum, 11, 40, 3), 40);
}

#[test]
fn optimal_matches_the_milp_on_small_instances() {
    // The MILP's relaxation is weak: keep to one or two spare replicas in debug builds.
    assert!(check_against(milp_optimum, 5, 12, 1) >= 3);
}

/// The MILP on larger instances (about a minute in release):
/// `cargo test --release -p expert-placement --test placement_oracles -- --ignored`.
#[test]
#[ignore = "slow: microlp needs seconds per instance"]
fn optimal_matches_the_milp_with_three_spare_replicas() {
    assert_eq!(check_against(milp_optimum, 11, 12, 3), 12);
}

/// The fewest moves of any placement of `w` on `c` whose maximum GPU load is at most `target`,
/// by a MILP: `y[e][g][k]` puts one of `k` replicas of `e` on `g`, `z[e][k]` picks the count; a
/// replica on a GPU whose `old` set lacks its expert is a move.
fn milp_fewest_moves(w: &[f64], c: &PlacementCluster, old: &[usize], target: f64) -> usize {
    let (experts, gpus) = (w.len(), c.gpus());
    let max_k = gpus.min(c.total_slots() - experts + 1);
    let held = |e: usize, g: usize| c.slot_range(g).any(|s| old[s] == e);
    let mut vars = ProblemVariables::new();
    let y: Vec<Vec<Vec<_>>> = (0..experts)
        .map(|_| {
            (0..gpus)
                .map(|_| (1..=max_k).map(|_| vars.add(variable().binary())).collect())
                .collect()
        })
        .collect();
    let z: Vec<Vec<_>> = (0..experts)
        .map(|_| (1..=max_k).map(|_| vars.add(variable().binary())).collect())
        .collect();
    let moves: Expression = (0..experts)
        .flat_map(|e| (0..gpus).map(move |g| (e, g)))
        .filter(|&(e, g)| !held(e, g))
        .flat_map(|(e, g)| (0..max_k).map(move |k| (e, g, k)))
        .map(|(e, g, k)| y[e][g][k])
        .sum();
    let mut model = vars.minimise(moves.clone()).using(microlp);
    for e in 0..experts {
        let one: Expression = z[e].iter().copied().sum();
        model = model.with(constraint!(one == 1));
        for k in 1..=max_k {
            let placed: Expression = (0..gpus).map(|g| y[e][g][k - 1]).sum();
            model = model.with(constraint!(placed == (k as f64) * z[e][k - 1]));
        }
    }
    for (g, (&slots, &speed)) in c.slots_of_gpu().iter().zip(c.speed_of_gpu()).enumerate() {
        let on: Expression = (0..experts)
            .flat_map(|e| (0..max_k).map(move |k| (e, k)))
            .map(|(e, k)| y[e][g][k])
            .sum();
        model = model.with(constraint!(on == slots as f64));
        let load: Expression = (0..experts)
            .flat_map(|e| (1..=max_k).map(move |k| (e, k)))
            .map(|(e, k)| (w[e] / k as f64 / speed) * y[e][g][k - 1])
            .sum();
        model = model.with(constraint!(load <= target * (1.0 + 1e-9)));
    }
    let solution = model.solve().expect("the current target is reachable");
    solution.eval(&moves).round() as usize
}

/// Issue 20: the rebalance used more moves than a MILP at the same load target on 7 of 47 small
/// instances. It now proves the fewest moves by exhaustive search on instances this small
/// (`FEWEST_MOVES_EXACT_MAX_SETS`) and equals the MILP.
#[test]
fn rebalance_uses_the_fewest_moves_of_the_milp() {
    let mut rng = Rng::new(47);
    let mut checked = 0;
    for case in 0..16 {
        let (w, c) = instance(&mut rng, case % 4 == 3);
        if c.total_slots() - w.len() > 2 {
            continue;
        }
        let old = LayerLoads::new(w.clone()).unwrap();
        let current = place(&old, &c, PlacementAlgorithm::Optimal)
            .unwrap()
            .physical_to_logical;
        // New loads: the experts' loads rotate by one.
        let mut shifted = w.clone();
        shifted.rotate_left(1);
        let new = LayerLoads::new(shifted.clone()).unwrap();
        for tolerance in [0.0, 0.1] {
            let r = expert_placement::rebalance(&current, &new, &c, tolerance).unwrap();
            assert!(r.moves_proved_fewest, "case {case}: not proved");
            let fewest = milp_fewest_moves(&shifted, &c, &current, r.target_max_gpu_load);
            assert_eq!(
                r.moves, fewest,
                "case {case} tolerance {tolerance}: {shifted:?} {c:?}"
            );
            assert!(r.placement.max_gpu_load <= r.target_max_gpu_load * (1.0 + 1e-9));
        }
        checked += 1;
    }
    assert!(checked >= 6, "{checked}");
}

/// Random instance with 1 to `max_hot` hot experts on 2 to 4 GPUs of 2 to `max_slots` slots,
/// at most `max_experts` experts and at most two spare slots: where the counts are nearly forced
/// and the partners of the hot experts' replicas decide the optimum.
fn hot_instance_of(
    rng: &mut Rng,
    hetero: bool,
    max_slots: u64,
    max_experts: usize,
    max_hot: u64,
) -> (Vec<f64>, PlacementCluster) {
    let gpus = 2 + rng.next(3) as usize;
    let slots: Vec<usize> = (0..gpus)
        .map(|_| 2 + rng.next(max_slots - 1) as usize)
        .collect();
    let total: usize = slots.iter().sum();
    let experts = (total - rng.next(3) as usize).clamp(3, max_experts);
    let hot = 1 + rng.next(max_hot) as usize;
    let w = (0..experts)
        .map(|e| {
            if e < hot {
                (200 + rng.next(800)) as f64
            } else {
                rng.next(60) as f64
            }
        })
        .collect();
    let speeds = (0..gpus)
        .map(|_| {
            if hetero {
                [1.0, 2.0][rng.next(2) as usize]
            } else {
                1.0
            }
        })
        .collect();
    (
        w,
        PlacementCluster::new(slots, speeds, vec![0; gpus]).unwrap(),
    )
}

/// Checks the lower bound against brute force on `n` instances from `seed` of
/// [`hot_instance_of`]'s shape; returns how many were checked and on how many it is tight.
fn check_bound(
    seed: u64,
    n: usize,
    max_slots: u64,
    max_experts: usize,
    max_hot: u64,
) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let (mut checked, mut tight) = (0, 0);
    for case in 0..n {
        let (w, c) = hot_instance_of(&mut rng, case % 4 == 3, max_slots, max_experts, max_hot);
        if w.len() > c.total_slots() || c.slots_of_gpu().iter().any(|&s| s > w.len()) {
            continue;
        }
        let best = brute_force_optimum(&w, &c);
        let bound = placement_lower_bound(&LayerLoads::new(w.clone()).unwrap(), &c).unwrap();
        assert!(
            bound <= best * (1.0 + 1e-9),
            "{w:?} {c:?}: bound {bound} > optimum {best}"
        );
        checked += 1;
        tight += usize::from(bound >= best * (1.0 - 1e-9));
    }
    eprintln!("checked {checked}, bound = optimum on {tight}");
    (checked, tight)
}

#[test]
fn lower_bound_is_valid_and_often_tight_on_hot_experts_with_few_slots() {
    let (checked, tight) = check_bound(23, 120, 3, 7, 2);
    assert!(checked >= 100, "{checked}");
    // 20 with the bounds before the target-tested partner bound, 43 with it (45 without its
    // work cap).
    assert!(tight >= 40, "{tight}");
}

/// The bound against brute force on many more hot-expert instances, up to 4 slots per GPU, 8
/// experts and 3 hot ones (2,000 in about 5 minutes in release on 2 loaded cores; all valid, the
/// bound equal to the optimum on 463):
/// `MOE_BOUND_CAMPAIGN=2000 cargo test --release -p expert-placement --test placement_oracles -- --ignored bound_campaign --nocapture`.
#[test]
#[ignore = "long: a brute-force validity campaign of the lower bound"]
fn bound_campaign() {
    let n: usize = std::env::var("MOE_BOUND_CAMPAIGN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    check_bound(29, n, 4, 8, 3);
}

//! The seeded LysiAssign instances of `examples/examples/lysi_assign_quality.rs` and their
//! brute-force optimum, shared with the drift test of its table
//! (`examples/tests/docs_reproduction`).

use colocation_matching::Worker;
use comm_cost_model::seeded_rng;
use rand::RngExt;

/// One assignment instance: expert costs (FLOP) and workers.
pub struct Instance {
    /// Cost of each expert.
    pub costs: Vec<f64>,
    /// The workers (FLOP/s and expert slots).
    pub workers: Vec<Worker>,
}

/// Ranges of one family of random instances.
/// A family of seeded instances.
pub struct Family {
    /// Range of the expert count (inclusive).
    pub experts: (usize, usize),
    /// Range of the worker count (inclusive).
    pub workers: (usize, usize),
    /// Most expert slots of a worker.
    pub max_slots: usize,
    /// The generator stream of the family.
    pub stream: u64,
}

/// 3-8 experts on 2-4 workers of 1-8 slots: small enough for brute force.
pub const SMALL: Family = Family {
    experts: (3, 8),
    workers: (2, 4),
    max_slots: 8,
    stream: 0,
};

/// 16-48 experts on 3-8 workers of 1-16 slots.
pub const LARGE: Family = Family {
    experts: (16, 48),
    workers: (3, 8),
    max_slots: 16,
    stream: 1,
};

/// Instance `seed` of `family`: costs 1-10, FLOP/s 1-4, workers redrawn until they hold every
/// expert.
#[must_use]
pub fn instance(family: &Family, seed: u64) -> Instance {
    let mut rng = seeded_rng(seed, family.stream);
    let experts = rng.random_range(family.experts.0..=family.experts.1);
    let costs = (0..experts)
        .map(|_| f64::from(rng.random_range(1..=10u32)))
        .collect();
    let count = rng.random_range(family.workers.0..=family.workers.1);
    loop {
        let workers: Vec<Worker> = (0..count)
            .map(|_| Worker {
                flop_per_s: f64::from(rng.random_range(1..=4u32)),
                expert_slots: rng.random_range(1..=family.max_slots),
            })
            .collect();
        if workers.iter().map(|w| w.expert_slots).sum::<usize>() >= experts {
            return Instance { costs, workers };
        }
    }
}

/// Smallest makespan over every assignment that respects the slots.
/// The optimal makespan over every slot-respecting assignment.
#[must_use]
pub fn brute_force(inst: &Instance) -> f64 {
    fn go(x: usize, inst: &Instance, load: &mut [f64], free: &mut [usize], best: &mut f64) {
        if x == inst.costs.len() {
            let makespan = load
                .iter()
                .zip(&inst.workers)
                .map(|(l, w)| l / w.flop_per_s)
                .fold(0.0, f64::max);
            *best = best.min(makespan);
            return;
        }
        for j in 0..load.len() {
            if free[j] > 0 {
                free[j] -= 1;
                load[j] += inst.costs[x];
                go(x + 1, inst, load, free, best);
                load[j] -= inst.costs[x];
                free[j] += 1;
            }
        }
    }
    let mut best = f64::INFINITY;
    let mut load = vec![0.0; inst.workers.len()];
    let mut free: Vec<usize> = inst.workers.iter().map(|w| w.expert_slots).collect();
    go(0, inst, &mut load, &mut free, &mut best);
    best
}

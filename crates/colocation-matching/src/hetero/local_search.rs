//! Closing the decoupled method's gap: alternating exact re-matching plus swap local search.

use comm_cost_model::{SeededRng, seeded_rng};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{HeteroPlacement, HyperedgeCost, colocate_decoupled, matrix_of};
use crate::error::MatchingError;
use bipartite::{BottleneckOptions, TieBreak, bottleneck_assignment};
use comm_cost_model::check_at_most;

/// Largest [`LocalSearchOptions::restarts`] and [`LocalSearchOptions::max_rounds`]
/// [`colocate_local_search`] accepts: each restart is a whole descent, so `usize::MAX` of them
/// never ended.
pub const LOCAL_SEARCH_MAX_ITERATIONS: usize = 1 << 12;

/// Options of [`colocate_local_search`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalSearchOptions {
    /// Upper limit on improvement rounds (each round: three exact re-matchings and a swap pass).
    pub max_rounds: usize,
    /// Use the minimum-total-weight tie-break (an `O(n^3)` Hungarian pass) in the re-matchings up
    /// to this many GPUs; larger instances take any bottleneck-optimal matching.
    pub min_total_up_to: usize,
    /// Perturb-and-descend restarts after the first descent (iterated local search); 0 disables.
    pub restarts: usize,
    /// Seed of the restarts' random perturbations.
    pub seed: u64,
}

impl Default for LocalSearchOptions {
    fn default() -> Self {
        Self {
            max_rounds: 32,
            min_total_up_to: 128,
            restarts: 8,
            seed: 0,
        }
    }
}

/// Colocating + heterogeneous placement by alternating exact re-matching and swap local search.
///
/// Improves on Aurora §7.2. Starting from [`colocate_decoupled`], each round
/// 1. keeps A's experts on their GPUs and re-places B's experts by an exact bottleneck matching of
///    `(b, g) ↦ cost(a_on(g), b, g)`; 2. the same for A with B fixed; 3. re-assigns the current
///    pairs to GPUs exactly (stage 2 again);
/// 4. swaps, for a slowest GPU, its A expert, its B expert or its whole pair with another GPU's
///    while that lowers the slowest GPU below the current bottleneck.
///
/// A step is kept only if it lowers `(bottleneck, sum of GPU times)` lexicographically, so the
/// search never ends worse than the paper's method and always terminates. Each of steps 1–3 is
/// optimal for the part it changes; ties are broken towards the least total time, which gives the
/// next step room to move. Then [`LocalSearchOptions::restarts`] times (seeded, deterministic):
/// swap the A or B experts of about `n/4` random GPU pairs of the best placement so far and
/// descend again, keeping the best.
///
/// # Errors
///
/// [`MatchingError::Input`] (`InvalidEntry`) or [`MatchingError::Input`] if `cost` returns a NaN, infinite
/// or negative value it uses, [`MatchingError::Input`] (`TooLarge`) for more than [`LOCAL_SEARCH_MAX_ITERATIONS`] restarts or rounds,
/// and those of [`colocate_decoupled`].
///
/// # Complexity
///
/// Per round three bottleneck matchings (plus `O(n^3)` Hungarian tie-breaks up to
/// [`LocalSearchOptions::min_total_up_to`]) and `O(n)` per swap tried; at most
/// [`LocalSearchOptions::max_rounds`] rounds per descent and `1 + restarts` descents.
///
/// # Examples
///
/// ```
/// use colocation_matching::{CostTensor, LocalSearchOptions, colocate_decoupled, colocate_local_search};
///
/// let load = [1.0, 3.0];
/// let t = CostTensor::from_fn(2, |a, b, g| (load[a] + load[b]) * (1.0 + g as f64))?;
/// assert_eq!(colocate_decoupled(&t)?.bottleneck_s, 8.0);
/// let p = colocate_local_search(&t, &LocalSearchOptions::default())?;
/// assert_eq!(p.bottleneck_s, 6.0); // the optimum: A1+B1 on the fast GPU
/// assert_eq!(p.gpu_experts, vec![[1, 1], [0, 0]]);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn colocate_local_search(
    cost: &impl HyperedgeCost,
    options: &LocalSearchOptions,
) -> Result<HeteroPlacement, MatchingError> {
    check_at_most(
        "local search restarts",
        LOCAL_SEARCH_MAX_ITERATIONS,
        options.restarts,
    )?;
    check_at_most(
        "local search rounds",
        LOCAL_SEARCH_MAX_ITERATIONS,
        options.max_rounds,
    )?;
    let start = colocate_decoupled(cost)?;
    let mut best = Search::new(cost, &start.gpu_experts, options);
    best.descend(options.max_rounds)?;
    // Two more starts that place one model first: each of its experts on the GPU where its
    // cheapest partner would run it fastest, then the other model by exact re-matching.
    for side in [Side::A, Side::B] {
        let mut trial = Search::new(cost, &one_side_first(cost, side)?, options);
        trial.descend(options.max_rounds)?;
        if trial.key() < best.key() {
            best = trial;
        }
    }
    let mut rng = seeded_rng(options.seed, 0);
    for _ in 0..options.restarts {
        let mut trial = best.perturbed(&mut rng);
        trial.descend(options.max_rounds)?;
        if trial.key() < best.key() {
            best = trial;
        }
    }
    HeteroPlacement::scored(cost, best.placement())
}

/// A start placing `side`'s experts by a bottleneck matching of `min over partners` costs, the
/// other model's experts in index order (the first re-matching replaces them).
fn one_side_first(cost: &impl HyperedgeCost, side: Side) -> Result<Vec<[usize; 2]>, MatchingError> {
    let n = cost.size();
    let weights = matrix_of(n, |x, g| {
        (0..n)
            .map(|y| match side {
                Side::B => cost.cost_s(y, x, g),
                _ => cost.cost_s(x, y, g),
            })
            .fold(f64::INFINITY, f64::min)
    })?;
    let gpu_of = bottleneck_assignment(&weights, &BottleneckOptions::default())?;
    let mut placement: Vec<[usize; 2]> = (0..n).map(|g| [g, g]).collect();
    for (x, &g) in gpu_of.iter().enumerate() {
        match side {
            Side::B => placement[g][1] = x,
            _ => placement[g][0] = x,
        }
    }
    Ok(placement)
}

#[derive(Debug, Clone, Copy)]
enum Side {
    A,
    B,
    Pair,
}

struct Search<'c, C: HyperedgeCost> {
    cost: &'c C,
    a_on: Vec<usize>,
    b_on: Vec<usize>,
    times: Vec<f64>,
    tie_break: TieBreak,
}

impl<'c, C: HyperedgeCost> Search<'c, C> {
    fn new(cost: &'c C, gpu_experts: &[[usize; 2]], options: &LocalSearchOptions) -> Self {
        let tie_break = if cost.size() <= options.min_total_up_to {
            TieBreak::MinTotalWeight
        } else {
            TieBreak::Any
        };
        let mut search = Self {
            cost,
            a_on: gpu_experts.iter().map(|p| p[0]).collect(),
            b_on: gpu_experts.iter().map(|p| p[1]).collect(),
            times: Vec::new(),
            tie_break,
        };
        search.refresh();
        search
    }

    /// Rounds of re-matching and swapping until a round brings no improvement.
    fn descend(&mut self, max_rounds: usize) -> Result<(), MatchingError> {
        for _ in 0..max_rounds {
            let before = self.key();
            self.rematch(Side::B)?;
            self.rematch(Side::A)?;
            self.rematch(Side::Pair)?;
            self.swap_pass();
            if self.key() >= before {
                break;
            }
        }
        Ok(())
    }

    /// A copy with the A or B experts of about `n/4` random GPU pairs swapped.
    fn perturbed(&self, rng: &mut SeededRng) -> Self {
        let n = self.a_on.len();
        let mut copy = Self {
            cost: self.cost,
            a_on: self.a_on.clone(),
            b_on: self.b_on.clone(),
            times: Vec::new(),
            tie_break: self.tie_break,
        };
        if n >= 2 {
            for _ in 0..(n / 4).max(1) {
                let g = rng.random_range(0..n);
                let h = rng.random_range(0..n);
                if rng.random_range(0..2) == 0 {
                    copy.a_on.swap(g, h);
                } else {
                    copy.b_on.swap(g, h);
                }
            }
        }
        copy.refresh();
        copy
    }

    fn refresh(&mut self) {
        self.times = (0..self.a_on.len())
            .map(|g| self.cost.cost_s(self.a_on[g], self.b_on[g], g))
            .collect();
    }

    /// `(bottleneck, total)`: what every step must lower.
    fn key(&self) -> (f64, f64) {
        key_of(&self.times)
    }

    fn placement(&self) -> Vec<[usize; 2]> {
        self.a_on
            .iter()
            .zip(&self.b_on)
            .map(|(&a, &b)| [a, b])
            .collect()
    }

    /// Exact bottleneck re-placement of one side with the other fixed; kept only if better.
    fn rematch(&mut self, side: Side) -> Result<(), MatchingError> {
        let n = self.a_on.len();
        let (a_on, b_on, cost) = (&self.a_on, &self.b_on, self.cost);
        // Row r is the item being placed: an A expert, a B expert, or the pair now on GPU r.
        let weights = matrix_of(n, |r, g| match side {
            Side::A => cost.cost_s(r, b_on[g], g),
            Side::B => cost.cost_s(a_on[g], r, g),
            Side::Pair => cost.cost_s(a_on[r], b_on[r], g),
        })?;
        let options = BottleneckOptions {
            tie_break: self.tie_break,
            ..BottleneckOptions::default()
        };
        let gpu_of = bottleneck_assignment(&weights, &options)?;
        let (mut new_a, mut new_b) = (self.a_on.clone(), self.b_on.clone());
        for (r, &g) in gpu_of.iter().enumerate() {
            match side {
                Side::A => new_a[g] = r,
                Side::B => new_b[g] = r,
                Side::Pair => {
                    new_a[g] = self.a_on[r];
                    new_b[g] = self.b_on[r];
                }
            }
        }
        let times: Vec<f64> = (0..n).map(|g| cost.cost_s(new_a[g], new_b[g], g)).collect();
        if key_of(&times) < self.key() {
            (self.a_on, self.b_on, self.times) = (new_a, new_b, times);
        }
        Ok(())
    }

    /// Swaps that lower a slowest GPU below the current bottleneck, best first, until none is left.
    fn swap_pass(&mut self) {
        let n = self.a_on.len();
        // Every accepted swap lowers (bottleneck, GPUs at the bottleneck); the cap is a safety net.
        for _ in 0..4 * n * n {
            let bottleneck = self.times.iter().copied().fold(0.0, f64::max);
            let Some(best) = (0..n)
                .filter(|&g| self.times[g] == bottleneck)
                .filter_map(|g| self.best_swap(g, bottleneck))
                .min_by(|x, y| x.0.total_cmp(&y.0))
            else {
                return;
            };
            let (_, g, h, kind) = best;
            self.apply_swap(g, h, kind);
        }
    }

    /// The best swap between slowest GPU `g` and any other GPU: `(new max of the two, g, h, kind)`
    /// where kind 0 swaps A experts, 1 swaps B experts, 2 swaps whole pairs.
    fn best_swap(&self, g: usize, bottleneck: f64) -> Option<(f64, usize, usize, u8)> {
        let (a, b, c) = (&self.a_on, &self.b_on, self.cost);
        let mut best: Option<(f64, usize, usize, u8)> = None;
        for h in (0..a.len()).filter(|&h| h != g) {
            let moves = [
                (c.cost_s(a[h], b[g], g), c.cost_s(a[g], b[h], h)),
                (c.cost_s(a[g], b[h], g), c.cost_s(a[h], b[g], h)),
                (c.cost_s(a[h], b[h], g), c.cost_s(a[g], b[g], h)),
            ];
            for (kind, (tg, th)) in (0u8..).zip(moves) {
                let worst = tg.max(th);
                if worst < bottleneck && best.is_none_or(|x| worst < x.0) {
                    best = Some((worst, g, h, kind));
                }
            }
        }
        best
    }

    fn apply_swap(&mut self, g: usize, h: usize, kind: u8) {
        if kind != 1 {
            self.a_on.swap(g, h);
        }
        if kind != 0 {
            self.b_on.swap(g, h);
        }
        for x in [g, h] {
            self.times[x] = self.cost.cost_s(self.a_on[x], self.b_on[x], x);
        }
    }
}

fn key_of(times: &[f64]) -> (f64, f64) {
    (
        times.iter().copied().fold(0.0, f64::max),
        times.iter().sum(),
    )
}

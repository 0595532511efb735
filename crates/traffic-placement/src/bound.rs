//! A certified lower bound on the cross-node tokens of every placement whose busiest GPU stays
//! within a limit, from the Lagrangian dual of an LP relaxation.

use serde::{Deserialize, Serialize};

use crate::cap::Cap;
use crate::context::Context;

/// Default number of coordinate-descent rounds of [`crate::traffic_lower_bound`].
pub const DEFAULT_BOUND_ROUNDS: usize = 30;

/// A lower bound on the cross-node tokens of one layer at one balance limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrafficBound {
    /// No placement whose busiest GPU (locality dispatch, best split) is at most
    /// [`TrafficBound::max_gpu_load_limit`] sends fewer tokens across nodes.
    pub cross_node_tokens: f64,
    /// The balance limit the bound holds under (load over speed).
    pub max_gpu_load_limit: f64,
    /// The same bound with no balance limit (slots only).
    pub unlimited_cross_node_tokens: f64,
    /// Coordinate-descent rounds run.
    pub rounds: usize,
    /// Whether the descent stopped because a round no longer improved the bound (`false`: the
    /// round budget or the planner's time cap ended it; the bound is valid either way, only
    /// perhaps looser).
    pub converged: bool,
}

/// The relaxation: `x[e][n] in [0, 1]` says expert `e` has a replica in node `n`. Every expert
/// has one (`sum_n x >= 1`); a node hosting `e` must serve the tokens its own sources send to
/// `e` (the locality dispatch), so its forced load `sum_e x D[n][e]` is at most `limit · V_n`
/// (`V_n` its GPUs' total speed), and those tokens need `q[e][n] = max(1, ceil(D[n][e] /
/// (limit · v_max(n))))` replicas on distinct GPUs of the node, so `sum_e q x <= slots_n`. The
/// captured (in-node) tokens `sum x D` are at most the LP optimum, which equals the Lagrangian
/// dual `min_{lambda, mu >= 0} sum_e max_{nonempty S} sum_{n in S} (D(1 - lambda_n) - mu_n q) +
/// sum_n (lambda_n limit V_n + mu_n slots_n)` (the inner problem is integral per expert); any
/// multipliers give a valid bound, coordinate descent with a convex line search finds good ones.
pub(crate) fn lower_bound(
    ctx: &Context<'_>,
    limit: f64,
    rounds: usize,
    safety: &Cap,
) -> TrafficBound {
    let k = ctx.nodes();
    let e_count = ctx.experts();
    let cap: Vec<f64> = ctx
        .gpus_of_node
        .iter()
        .map(|gs| limit * gs.iter().map(|&g| ctx.speed[g]).sum::<f64>())
        .collect();
    let slots: Vec<f64> = ctx
        .gpus_of_node
        .iter()
        .map(|gs| {
            gs.iter()
                .map(|&g| ctx.cluster.slots_of_gpu()[g] as f64)
                .sum()
        })
        .collect();
    let q: Vec<Vec<f64>> = (0..k)
        .map(|n| {
            let vmax = ctx.gpus_of_node[n]
                .iter()
                .map(|&g| ctx.speed[g])
                .fold(0.0, f64::max);
            (0..e_count)
                .map(|e| {
                    let per = limit * vmax;
                    if per > 0.0 && per.is_finite() {
                        (ctx.by_node[n][e] / per).ceil().max(1.0)
                    } else {
                        1.0
                    }
                })
                .collect()
        })
        .collect();
    let total = ctx.routed.total();
    let ones = vec![vec![1.0; e_count]; k];
    // Slots only (no balance limit): one slot per hosted pair, the load multipliers stay 0.
    let free = Relaxation {
        d: &ctx.by_node,
        q: &ones,
        cap: &cap,
        slots: &slots,
    };
    let mut lam = vec![0.0; k];
    let mut mu = vec![0.0; k];
    let unlimited = free.descend(&mut lam, &mut mu, rounds, false, safety).0;
    let relax = Relaxation {
        d: &ctx.by_node,
        q: &q,
        cap: &cap,
        slots: &slots,
    };
    let (value, used, converged) = relax.descend(&mut lam, &mut mu, rounds, true, safety);
    let limited = value.min(unlimited);
    TrafficBound {
        cross_node_tokens: (total - limited).max(0.0),
        max_gpu_load_limit: limit,
        unlimited_cross_node_tokens: (total - unlimited).max(0.0),
        rounds: used,
        converged,
    }
}

struct Relaxation<'a> {
    d: &'a [Vec<f64>],
    q: &'a [Vec<f64>],
    cap: &'a [f64],
    slots: &'a [f64],
}

impl Relaxation<'_> {
    /// The dual function at `(lam, mu)`: an upper bound on the captured tokens.
    fn value(&self, lam: &[f64], mu: &[f64]) -> f64 {
        let k = self.cap.len();
        let e_count = self.d.first().map_or(0, Vec::len);
        let mut sum = 0.0;
        for e in 0..e_count {
            let (mut pos, mut best) = (0.0, f64::NEG_INFINITY);
            for n in 0..k {
                let c = self.d[n][e] * (1.0 - lam[n]) - mu[n] * self.q[n][e];
                if c > 0.0 {
                    pos += c;
                }
                best = best.max(c);
            }
            sum += if pos > 0.0 { pos } else { best };
        }
        for n in 0..k {
            sum += lam[n] * self.cap[n] + mu[n] * self.slots[n];
        }
        sum
    }

    /// Coordinate descent with a ternary line search on each multiplier (the dual is convex);
    /// returns the best value, the rounds run and whether it converged.
    fn descend(
        &self,
        lam: &mut [f64],
        mu: &mut [f64],
        rounds: usize,
        with_load: bool,
        cap: &Cap,
    ) -> (f64, usize, bool) {
        let k = self.cap.len();
        let dmax: Vec<f64> = self
            .d
            .iter()
            .map(|row| row.iter().copied().fold(0.0, f64::max))
            .collect();
        let mut best = self.value(lam, mu);
        for round in 0..rounds {
            // At least one round, so a spent cap still gives a useful bound.
            if round > 0 && cap.passed() {
                return (best, round, false);
            }
            let before = best;
            for (n, &d) in dmax.iter().enumerate().take(k) {
                if with_load {
                    best = self.line(lam, mu, n, true, 4.0).min(best);
                }
                best = self.line(lam, mu, n, false, 2.0 * d + 1.0).min(best);
            }
            if before - best <= before.abs() * 1e-12 {
                return (best, round + 1, true);
            }
        }
        (best, rounds, false)
    }

    /// Minimizes over one multiplier in `[0, hi]` and keeps the best point; returns its value.
    /// Only node `n`'s terms change along the line, so each expert's other terms are summed
    /// once and every evaluation is `O(E)`.
    fn line(&self, lam: &mut [f64], mu: &mut [f64], n: usize, is_lam: bool, hi: f64) -> f64 {
        let k = self.cap.len();
        let e_count = self.d.first().map_or(0, Vec::len);
        // Per expert: its other nodes' positive terms added up and their largest term, node
        // by node (each expert's terms in the same order as an expert-by-expert loop).
        let mut others: Vec<(f64, f64)> = vec![(0.0, f64::NEG_INFINITY); e_count];
        for m in (0..k).filter(|&m| m != n) {
            let (l, u) = (lam[m], mu[m]);
            for ((o, &d), &q) in others.iter_mut().zip(&self.d[m]).zip(&self.q[m]) {
                let c = d * (1.0 - l) - u * q;
                if c > 0.0 {
                    o.0 += c;
                }
                o.1 = o.1.max(c);
            }
        }
        let constant: f64 = (0..k)
            .filter(|&m| m != n)
            .map(|m| lam[m] * self.cap[m] + mu[m] * self.slots[m])
            .sum();
        let (lam_n, mu_n) = (lam[n], mu[n]);
        let (d_n, q_n) = (&self.d[n], &self.q[n]);
        // The dual at two points of the line in one pass over the experts (each sum formed in
        // the same order as alone, so the same values).
        let eval2 = |x1: f64, x2: f64| -> (f64, f64) {
            let at = |x: f64| if is_lam { (x, mu_n) } else { (lam_n, x) };
            let ((l1, u1), (l2, u2)) = (at(x1), at(x2));
            let mut sum1 = constant + l1 * self.cap[n] + u1 * self.slots[n];
            let mut sum2 = constant + l2 * self.cap[n] + u2 * self.slots[n];
            for ((&d, &q), &(po, bo)) in d_n.iter().zip(q_n).zip(&others) {
                let c1 = d * (1.0 - l1) - u1 * q;
                let pos1 = po + c1.max(0.0);
                sum1 += if pos1 > 0.0 { pos1 } else { bo.max(c1) };
                let c2 = d * (1.0 - l2) - u2 * q;
                let pos2 = po + c2.max(0.0);
                sum2 += if pos2 > 0.0 { pos2 } else { bo.max(c2) };
            }
            (sum1, sum2)
        };
        let start = if is_lam { lam_n } else { mu_n };
        let (mut a, mut b) = (0.0, hi.max(start));
        for _ in 0..40 {
            let m1 = a + (b - a) / 3.0;
            let m2 = b - (b - a) / 3.0;
            let (v1, v2) = eval2(m1, m2);
            if v1 <= v2 {
                b = m2;
            } else {
                a = m1;
            }
        }
        let cand = a + (b - a) / 2.0;
        let (v_start, v_cand) = eval2(start, cand);
        let (x, v) = if v_cand <= v_start {
            (cand, v_cand)
        } else {
            (start, v_start)
        };
        if is_lam {
            lam[n] = x;
        } else {
            mu[n] = x;
        }
        v
    }
}

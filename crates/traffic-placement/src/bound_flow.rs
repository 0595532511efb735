//! A tighter certified bound on cross-node tokens: the Lagrangian dual of the node-level hosting
//! problem itself, where a node's load counts the remote tokens it serves, not only its own.
//!
//! The relaxation of [`crate::bound`] charges a node only the tokens its own sources send to the
//! experts it hosts, so on balanced layers its load constraints never bind and it is the slot
//! bound alone. Here every expert chooses a nonempty set `S` of hosting nodes (integral, by
//! enumeration: at most [`MAX_FLOW_BOUND_NODES`] nodes): the tokens of a node in `S` stay there
//! (the locality dispatch), the rest cross to some node of `S`, and the expert needs `q[n][e] =
//! max(1, ceil(D[n][e] / (limit · v_max(n))))` replicas in each node `n` of `S` and at least
//! `R_e = ceil(W_e / (limit · v_max))` in all (each replica's GPU serves at most `limit · v`).
//! Dualizing the node load limits `limit · V_n` (multipliers `lambda`) and the node slot counts
//! (multipliers `mu`) leaves one independent problem per expert:
//!
//! `min over S of (W - D_S)(1 + min_{n in S} lambda_n) + sum_{n in S} (lambda_n D[n][e] +
//! mu_n q[n][e]) + min_{n in S} mu_n · max(0, R_e - Q_S)`
//!
//! (remote tokens to the cheapest hosting node, extra replicas to the cheapest too: every
//! placement's own choice costs at least that). The sum over experts minus `sum lambda cap + mu
//! slots` is below the cross-node tokens of every placement within the limit, for any `lambda,
//! mu >= 0`; projected subgradient ascent with Polyak steps towards the plan's traffic chooses
//! them. It is the Lagrangian dual of the integer problem, so at least the LP relaxation of this
//! hosting model, which is at least the relaxation of [`crate::bound`] with the remote load added.

use crate::cap::Cap;
use crate::context::Context;

/// Nodes up to which the bound enumerates every hosting set (`2^K - 1` per expert).
pub(crate) const MAX_FLOW_BOUND_NODES: usize = 8;

/// Subgradient iterations of one bound.
pub(crate) const FLOW_BOUND_ITERATIONS: usize = 400;

/// The bound and, at its best multipliers, each expert's cheapest hosting nodes (a starting
/// point for the node-level construction).
pub(crate) struct FlowBound {
    /// Lower bound on the cross-node tokens.
    pub(crate) value: f64,
    /// Hosting nodes of each expert in the subproblems' solution at the best multipliers
    /// (ascending).
    pub(crate) hosts: Vec<Vec<usize>>,
}

/// The hosting problem's data, per expert and per hosting set.
struct Model {
    k: usize,
    e_count: usize,
    /// `[E · 2^K]` (expert-major): tokens the nodes of the set send the expert (kept for the
    /// tests' expert-by-expert scan and LP; the scan reads `remote_by_set`).
    #[cfg(test)]
    d_set: Vec<f64>,
    /// `[E · 2^K]`: replicas the set's own tokens force.
    #[cfg(test)]
    q_set: Vec<f64>,
    /// Each set's lowest node and the set without it (the subset-sum order of the scan).
    low_rest: Vec<(usize, usize)>,
    /// `[2^K · E]` (set-major): the remote tokens `max(0, W - D_S)` and the extra replicas
    /// `max(0, R - Q_S)` of each expert and set, for the scan over experts of one set.
    remote_by_set: Vec<f64>,
    extra_by_set: Vec<f64>,
    /// `[K][E]`.
    d: Vec<Vec<f64>>,
    q: Vec<Vec<f64>>,
    #[cfg(test)]
    w: Vec<f64>,
    #[cfg(test)]
    r: Vec<f64>,
    cap: Vec<f64>,
    slots: Vec<f64>,
}

/// How the model is tightened to build plans: each node's load limit times `cap[n]` (all 1
/// when empty), slot counts times `slots`, and the largest replica `replica` times the limit (so
/// that hot experts reserve the slots their splitting over GPUs needs). All 1 for the bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scale<'s> {
    pub(crate) cap: &'s [f64],
    pub(crate) slots: f64,
    /// Slots each node keeps free on top of the scale (spare room to split hot experts).
    pub(crate) spare: f64,
    pub(crate) replica: f64,
}

impl Scale<'_> {
    /// The model itself: what the bound uses.
    pub(crate) const EXACT: Self = Self {
        cap: &[],
        slots: 1.0,
        spare: 0.0,
        replica: 1.0,
    };
}

/// `2^52`: a float in `[2^52, 2^53)` holds an integer in its low mantissa bits.
const TWO_52: f64 = 4_503_599_627_370_496.0;

/// A set's smallest multiplier and the node that has it.
type Cheapest = (f64, usize);

/// Scratch space of [`Model::evaluate`], allocated once per ascent.
struct Scan {
    /// `[K · E]`: `lambda_n D[n][e]` and `mu_n q[n][e]`.
    lam_d: Vec<f64>,
    mu_q: Vec<f64>,
    /// `[2^K · E]`: the linear part of each set's cost.
    linear: Vec<f64>,
    best_cost: Vec<f64>,
    /// Each expert's best set so far, as a float (see [`Model::evaluate`]).
    best_mask: Vec<f64>,
    /// `[K]`: each node's load and slots used at the choices of the last evaluation (the
    /// subgradient's sums, added up while the choices are read).
    load: Vec<f64>,
    used: Vec<f64>,
}

impl Scan {
    fn new(k: usize, e_count: usize) -> Self {
        Self {
            lam_d: vec![0.0; k * e_count],
            mu_q: vec![0.0; k * e_count],
            linear: vec![0.0; (1usize << k) * e_count],
            best_cost: Vec::with_capacity(e_count),
            best_mask: Vec::with_capacity(e_count),
            load: vec![0.0; k],
            used: vec![0.0; k],
        }
    }
}

/// Per-expert choice at given multipliers.
#[derive(Clone, Copy)]
struct Choice {
    mask: usize,
    cost: f64,
    lam_arg: usize,
    mu_arg: usize,
}

impl Model {
    /// The model at `limit`, scaled by `scale` ([`Scale::EXACT`] for the bound).
    fn new(ctx: &Context<'_>, limit: f64, scale: Scale<'_>) -> Self {
        let Scale {
            cap: cap_scale,
            slots: slot_scale,
            spare,
            replica: replica_scale,
        } = scale;
        let k = ctx.nodes();
        let e_count = ctx.experts();
        let slots_of = ctx.cluster.slots_of_gpu();
        let vmax_node: Vec<f64> = ctx
            .gpus_of_node
            .iter()
            .map(|gs| gs.iter().map(|&g| ctx.speed[g]).fold(0.0, f64::max))
            .collect();
        let vmax = vmax_node.iter().copied().fold(0.0, f64::max);
        let replicas = |tokens: f64, v: f64| {
            let per = replica_scale * limit * v;
            if per > 0.0 && per.is_finite() {
                (tokens / per).ceil().max(1.0)
            } else {
                1.0
            }
        };
        let q: Vec<Vec<f64>> = (0..k)
            .map(|n| {
                (0..e_count)
                    .map(|e| replicas(ctx.by_node[n][e], vmax_node[n]))
                    .collect()
            })
            .collect();
        let masks = 1usize << k;
        let low: Vec<usize> = (0..masks)
            .map(|mask: usize| mask.trailing_zeros() as usize % k.max(1))
            .collect();
        let rest: Vec<usize> = (0..masks).map(|mask| mask & mask.wrapping_sub(1)).collect();
        let mut d_set = vec![0.0; e_count * masks];
        let mut q_set = vec![0.0; e_count * masks];
        for e in 0..e_count {
            let (ds, qs) = (
                &mut d_set[e * masks..(e + 1) * masks],
                &mut q_set[e * masks..(e + 1) * masks],
            );
            for mask in 1..masks {
                let (l, r) = (low[mask], rest[mask]);
                ds[mask] = ds[r] + ctx.by_node[l][e];
                qs[mask] = qs[r] + q[l][e];
            }
        }
        let w: Vec<f64> = ctx.loads.clone();
        let r: Vec<f64> = ctx.loads.iter().map(|&w| replicas(w, vmax)).collect();
        let mut remote_by_set = vec![0.0; e_count * masks];
        let mut extra_by_set = vec![0.0; e_count * masks];
        for mask in 1..masks {
            for e in 0..e_count {
                remote_by_set[mask * e_count + e] = (w[e] - d_set[e * masks + mask]).max(0.0);
                extra_by_set[mask * e_count + e] = (r[e] - q_set[e * masks + mask]).max(0.0);
            }
        }
        Self {
            k,
            e_count,
            #[cfg(test)]
            d_set,
            #[cfg(test)]
            q_set,
            low_rest: low.iter().copied().zip(rest.iter().copied()).collect(),
            remote_by_set,
            extra_by_set,
            d: ctx.by_node.clone(),
            q,
            #[cfg(test)]
            w,
            #[cfg(test)]
            r,
            cap: ctx
                .gpus_of_node
                .iter()
                .enumerate()
                .map(|(n, gs)| {
                    cap_scale.get(n).copied().unwrap_or(1.0)
                        * limit
                        * gs.iter().map(|&g| ctx.speed[g]).sum::<f64>()
                })
                .collect(),
            slots: ctx
                .gpus_of_node
                .iter()
                .map(|gs| {
                    (slot_scale * gs.iter().map(|&g| slots_of[g] as f64).sum::<f64>() - spare)
                        .max(0.0)
                })
                .collect(),
        }
    }

    /// Per set: the cheapest node's multiplier and index, for lambda and for mu.
    fn cheapest(&self, lam: &[f64], mu: &[f64]) -> (Vec<Cheapest>, Vec<Cheapest>) {
        let masks = 1usize << self.k;
        let mut lmin = vec![(f64::INFINITY, 0usize); masks];
        let mut mmin = vec![(f64::INFINITY, 0usize); masks];
        for mask in 1..masks {
            let low = mask.trailing_zeros() as usize;
            let rest = mask & (mask - 1);
            lmin[mask] = if lam[low] < lmin[rest].0 {
                (lam[low], low)
            } else {
                lmin[rest]
            };
            mmin[mask] = if mu[low] < mmin[rest].0 {
                (mu[low], low)
            } else {
                mmin[rest]
            };
        }
        (lmin, mmin)
    }

    /// The dual function at `(lam, mu)` and each expert's choice. The scan runs set by set over
    /// all experts (each set's linear part is its set-without-lowest-node's plus one node's
    /// term), so the inner loop is a flat pass over experts the compiler can vectorize; the
    /// sums are formed in the same order as an expert-by-expert scan, so the choices and the
    /// value are the same to the bit.
    fn evaluate(&self, lam: &[f64], mu: &[f64], choices: &mut [Choice], scan: &mut Scan) -> f64 {
        let (k, e_count) = (self.k, self.e_count);
        let masks = 1usize << k;
        let (lmin, mmin) = self.cheapest(lam, mu);
        for n in 0..k {
            let (ld, mq) = (
                &mut scan.lam_d[n * e_count..(n + 1) * e_count],
                &mut scan.mu_q[n * e_count..(n + 1) * e_count],
            );
            let (l, m) = (lam[n], mu[n]);
            for (x, &d) in ld.iter_mut().zip(&self.d[n]) {
                *x = l * d;
            }
            for (x, &q) in mq.iter_mut().zip(&self.q[n]) {
                *x = m * q;
            }
        }
        scan.best_cost.clear();
        scan.best_cost.resize(e_count, f64::INFINITY);
        scan.best_mask.clear();
        scan.best_mask.resize(e_count, 1.0);
        scan.linear[..e_count].fill(0.0);
        for mask in 1..masks {
            let (low, rest) = self.low_rest[mask];
            // Per set: the remote-token price `1 + min lambda` and the extra-replica price
            // `min mu`.
            let (rp, ep) = (1.0 + lmin[mask].0, mmin[mask].0);
            // The mask as a float (exact below 2^53), so that the choice is a plain blend of
            // floats like the cost's and the pass has no per-lane branch.
            #[allow(clippy::cast_precision_loss)]
            let mask_f = mask as f64;
            let (done, now) = scan.linear.split_at_mut(mask * e_count);
            let prev = &done[rest * e_count..(rest + 1) * e_count];
            let ld = &scan.lam_d[low * e_count..(low + 1) * e_count];
            let mq = &scan.mu_q[low * e_count..(low + 1) * e_count];
            let remote = &self.remote_by_set[mask * e_count..(mask + 1) * e_count];
            let extra = &self.extra_by_set[mask * e_count..(mask + 1) * e_count];
            let best_cost = &mut scan.best_cost[..e_count];
            let best_mask = &mut scan.best_mask[..e_count];
            let terms = prev.iter().zip(ld).zip(mq).zip(remote).zip(extra);
            let best = best_cost.iter_mut().zip(best_mask.iter_mut());
            if mask & 1 == 1 {
                // A set with the lowest node is never another set's `rest`: its linear part
                // need not be kept.
                for (((((&p, &l), &m), &r), &x), (bc, bm)) in terms.zip(best) {
                    let lin = p + l + m;
                    let cost = r * rp + lin + ep * x;
                    let better = cost < *bc;
                    *bc = if better { cost } else { *bc };
                    *bm = if better { mask_f } else { *bm };
                }
            } else {
                let now = &mut now[..e_count];
                for ((((((&p, &l), &m), &r), &x), now), (bc, bm)) in terms.zip(now).zip(best) {
                    let lin = p + l + m;
                    *now = lin;
                    let cost = r * rp + lin + ep * x;
                    // Branch-free, so that the pass vectorizes.
                    let better = cost < *bc;
                    *bc = if better { cost } else { *bc };
                    *bm = if better { mask_f } else { *bm };
                }
            }
        }
        let mut total = 0.0;
        let (load, used) = (&mut scan.load, &mut scan.used);
        load.fill(0.0);
        used.fill(0.0);
        for (e, slot) in choices.iter_mut().enumerate().take(e_count) {
            // An exact small integer (a set of at most 8 nodes), read from the float's bits:
            // adding 2^52 puts it in the low mantissa bits (cheaper than a saturating cast).
            #[allow(clippy::cast_possible_truncation)]
            let best_mask = ((scan.best_mask[e] + TWO_52).to_bits() - TWO_52.to_bits()) as usize;
            let c = Choice {
                mask: best_mask,
                cost: scan.best_cost[e],
                lam_arg: lmin[best_mask].1,
                mu_arg: mmin[best_mask].1,
            };
            *slot = c;
            total += c.cost;
            // The subgradient's sums: the set's nodes in ascending order, as a filter over
            // `0..K` visits them, then `max(0, W - D_S)` and `max(0, R - Q_S)`.
            let mut bits = c.mask;
            while bits != 0 {
                let n = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                load[n] += self.d[n][e];
                used[n] += self.q[n][e];
            }
            load[c.lam_arg] += self.remote_by_set[c.mask * e_count + e];
            used[c.mu_arg] += self.extra_by_set[c.mask * e_count + e];
        }
        for n in 0..self.k {
            total -= lam[n] * self.cap[n] + mu[n] * self.slots[n];
        }
        total
    }

    /// The expert-by-expert scan [`Model::evaluate`] replaced (kept to check it).
    #[cfg(test)]
    fn evaluate_by_expert(&self, lam: &[f64], mu: &[f64], choices: &mut [Choice]) -> f64 {
        let masks = 1usize << self.k;
        let (lmin, mmin) = self.cheapest(lam, mu);
        // Per set: the remote-token price `1 + min lambda` and the extra-replica price `min mu`.
        let remote_price: Vec<f64> = lmin.iter().map(|&(l, _)| 1.0 + l).collect();
        let extra_price: Vec<f64> = mmin.iter().map(|&(m, _)| m).collect();
        let k = self.k;
        let mut linear = vec![0.0; masks];
        let (mut lam_d, mut mu_q) = (vec![0.0; k], vec![0.0; k]);
        let mut total = 0.0;
        for (e, slot) in choices.iter_mut().enumerate().take(self.e_count) {
            let (w, r) = (self.w[e], self.r[e]);
            for n in 0..k {
                lam_d[n] = lam[n] * self.d[n][e];
                mu_q[n] = mu[n] * self.q[n][e];
            }
            let (ds, qs) = (
                &self.d_set[e * masks..(e + 1) * masks],
                &self.q_set[e * masks..(e + 1) * masks],
            );
            let (mut best_mask, mut best_cost) = (1, f64::INFINITY);
            let sets = self.low_rest[1..]
                .iter()
                .zip(&ds[1..])
                .zip(&qs[1..])
                .zip(&remote_price[1..])
                .zip(&extra_price[1..]);
            for (i, ((((&(low, rest), &d), &q), &rp), &ep)) in sets.enumerate() {
                let mask = i + 1;
                let lin = linear[rest] + lam_d[low] + mu_q[low];
                linear[mask] = lin;
                let remote = (w - d).max(0.0);
                let extra = (r - q).max(0.0);
                let cost = remote * rp + lin + ep * extra;
                if cost < best_cost {
                    best_mask = mask;
                    best_cost = cost;
                }
            }
            let best = Choice {
                mask: best_mask,
                cost: best_cost,
                lam_arg: lmin[best_mask].1,
                mu_arg: mmin[best_mask].1,
            };
            total += best.cost;
            *slot = best;
        }
        for n in 0..self.k {
            total -= lam[n] * self.cap[n] + mu[n] * self.slots[n];
        }
        total
    }

    /// The subgradient of the normalized constraints (`load / cap - 1`, `used / slots - 1`) at
    /// the choices of the last [`Model::evaluate`] (whose sums `scan` holds), into `ga`, `gb`.
    fn subgradient(&self, scan: &Scan, ga: &mut [f64], gb: &mut [f64]) {
        let norm = |x: f64, c: f64| if c > 0.0 { x / c - 1.0 } else { 0.0 };
        for n in 0..self.k {
            ga[n] = norm(scan.load[n], self.cap[n]);
            gb[n] = norm(scan.used[n], self.slots[n]);
        }
    }
}

/// The bound at `limit`, by projected subgradient ascent with Polyak steps towards `target`
/// (an upper bound on the optimum, e.g. a plan's cross-node tokens; the total tokens when none
/// is known); `None` above [`MAX_FLOW_BOUND_NODES`] nodes.
pub(crate) fn flow_bound(
    ctx: &Context<'_>,
    limit: f64,
    target: f64,
    iterations: usize,
    cap: &Cap,
) -> Option<FlowBound> {
    ascend(ctx, limit, Scale::EXACT, target, iterations, cap)
}

/// The ascent on the model with node limits and slots scaled by `scale` (load, slots): with
/// both 1, [`flow_bound`]; below 1, a hosting that leaves room for packing replicas onto GPUs
/// (its value then bounds nothing).
pub(crate) fn ascend(
    ctx: &Context<'_>,
    limit: f64,
    scale: Scale<'_>,
    target: f64,
    iterations: usize,
    cap: &Cap,
) -> Option<FlowBound> {
    let k = ctx.nodes();
    if k == 0 || k > MAX_FLOW_BOUND_NODES || ctx.experts() == 0 {
        return None;
    }
    let model = Model::new(ctx, limit, scale);
    // Multipliers of the normalized constraints: a (load) and b (slots), in tokens.
    let mut a = vec![0.0; k];
    let mut b = vec![0.0; k];
    // The multipliers themselves, rewritten at each iteration.
    let (mut lam, mut mu) = (vec![0.0; k], vec![0.0; k]);
    // The subgradient, rewritten at each iteration.
    let (mut ga, mut gb) = (vec![0.0; k], vec![0.0; k]);
    let mut choices = vec![
        Choice {
            mask: 1,
            cost: 0.0,
            lam_arg: 0,
            mu_arg: 0,
        };
        ctx.experts()
    ];
    let mut scan = Scan::new(k, ctx.experts());
    let mut best_value = f64::NEG_INFINITY;
    let mut best_masks: Vec<usize> = Vec::new();
    let mut theta = 1.0;
    let mut stale = 0;
    for it in 0..iterations.max(1) {
        if it > 0 && cap.passed() {
            break;
        }
        for n in 0..k {
            let (c, s) = (model.cap[n], model.slots[n]);
            lam[n] = if c > 0.0 { a[n] / c } else { 0.0 };
            mu[n] = if s > 0.0 { b[n] / s } else { 0.0 };
        }
        let value = model.evaluate(&lam, &mu, &mut choices, &mut scan);
        if best_masks.is_empty() || value > best_value + 1e-12 * (1.0 + best_value.abs()) {
            best_value = value;
            best_masks.clear();
            best_masks.extend(choices.iter().map(|c| c.mask));
            stale = 0;
        } else {
            stale += 1;
            if stale >= 10 {
                theta /= 2.0;
                stale = 0;
            }
        }
        model.subgradient(&scan, &mut ga, &mut gb);
        let norm2: f64 = ga.iter().chain(&gb).map(|x| x * x).sum();
        let gap = target - value;
        if norm2 <= 1e-18 || gap <= 1e-9 * (1.0 + target.abs()) || theta < 1e-4 {
            break;
        }
        let step = theta * gap / norm2;
        for n in 0..k {
            a[n] = (a[n] + step * ga[n]).max(0.0);
            b[n] = (b[n] + step * gb[n]).max(0.0);
        }
    }
    let hosts = best_masks
        .iter()
        .map(|&mask| (0..k).filter(|&n| mask >> n & 1 == 1).collect())
        .collect();
    Some(FlowBound {
        value: best_value.max(0.0),
        hosts,
    })
}

#[cfg(test)]
mod diag {
    use super::*;

    #[test]
    #[ignore = "diagnostics"]
    fn flow_bound_diagnostics() {
        for (g, k, s, loc) in [(16, 2, 18, 0.5), (32, 4, 9, 0.5), (32, 4, 9, 0.8)] {
            let (t, c, limit) = crate::context::deepseek_case(1, 0, (g, k, s), loc);
            let ctx = Context::new(&t, &c).unwrap();
            let total = t.total();
            let old = crate::bound::lower_bound(&ctx, limit, 30, &Cap::never());
            for target in [total, 0.5 * total, 0.3 * total] {
                let f = flow_bound(&ctx, limit, target, 2000, &Cap::never()).unwrap();
                let m = Model::new(&ctx, limit, Scale::EXACT);
                let mut load = vec![0.0; k];
                let mut used = vec![0.0; k];
                let mut cross = 0.0;
                for (e, h) in f.hosts.iter().enumerate() {
                    let mut local = 0.0;
                    for &n in h {
                        load[n] += m.d[n][e];
                        used[n] += m.q[n][e];
                        local += m.d[n][e];
                    }
                    cross += m.w[e] - local;
                    load[h[0]] += m.w[e] - local;
                    let extra = (m.r[e] - h.iter().map(|&n| m.q[n][e]).sum::<f64>()).max(0.0);
                    used[h[0]] += extra;
                }
                println!(
                    "G={g} K={k} S={s} loc={loc} target {:.3}: old {:.4} (slots only {:.4}) flow {:.4} | hosts cross {:.4} load/cap {:?} used/slots {:?} C/(T/G) {:.4} sum R {}",
                    target / total,
                    old.cross_node_tokens / total,
                    old.unlimited_cross_node_tokens / total,
                    f.value / total,
                    cross / total,
                    load.iter()
                        .zip(&m.cap)
                        .map(|(l, c)| (l / c * 1000.0).round() / 1000.0)
                        .collect::<Vec<_>>(),
                    used.iter()
                        .zip(&m.slots)
                        .map(|(l, c)| (l / c * 1000.0).round() / 1000.0)
                        .collect::<Vec<_>>(),
                    limit / 1.01 / (total / g as f64),
                    m.r.iter().sum::<f64>(),
                );
            }
        }
    }

    #[test]
    #[ignore = "diagnostics"]
    fn flow_plan_diagnostics() {
        use crate::lagrange::bound_plans;
        for (g, k, s, loc) in [
            (16, 2, 18, 0.5),
            (32, 4, 9, 0.5),
            (32, 4, 9, 0.8),
            (32, 4, 10, 0.5),
        ] {
            let (t, c, limit) = crate::context::deepseek_case(1, 0, (g, k, s), loc);
            let ctx = Context::new(&t, &c).unwrap();
            let total = t.total();
            let f = flow_bound(&ctx, limit, 0.3 * total, 2000, &Cap::never()).unwrap();
            let start = std::time::Instant::now();
            let plans = bound_plans(
                &ctx,
                limit,
                0.3 * total,
                0.0,
                &expert_placement::PlacementOptions::default(),
                &Cap::never(),
            )
            .unwrap();
            println!(
                "G={g} K={k} S={s} loc={loc}: bound {:.4}, {} plans in {:?}",
                f.value / total,
                plans.len(),
                start.elapsed()
            );
            for c in plans {
                println!(
                    "  cross {:.4} busiest/limit {:.4}",
                    c.report.cross_node_tokens / total,
                    c.report.max_gpu_load / limit
                );
            }
        }
    }
}

#[cfg(test)]
mod diag_iters {
    use super::*;

    #[test]
    #[ignore = "diagnostics"]
    fn flow_bound_iterations() {
        for loc in [0.3, 0.5, 0.8] {
            for layer in 0..8 {
                let (t, c, limit) = crate::context::deepseek_case(8, layer, (32, 4, 9), loc);
                let ctx = Context::new(&t, &c).unwrap();
                let total = t.total();
                let vals: Vec<f64> = [(400, 1.0), (400, 0.3), (4000, 0.3), (20000, 0.3)]
                    .iter()
                    .map(|&(it, tg)| {
                        flow_bound(&ctx, limit, tg * total, it, &Cap::never())
                            .unwrap()
                            .value
                            / total
                    })
                    .collect();
                println!("loc {loc} layer {layer}: {vals:.5?}");
            }
        }
    }
}

#[cfg(test)]
mod diag_lp {
    use super::*;
    use good_lp::{
        Expression, ProblemVariables, Solution, SolverModel, constraint, microlp, variable,
    };

    /// The LP over the convex hull of every expert's choices (hosting set, node of its remote
    /// tokens, node of its extra replicas): the best any multipliers can give.
    fn lp(ctx: &Context<'_>, limit: f64) -> f64 {
        let m = Model::new(ctx, limit, Scale::EXACT);
        let k = m.k;
        let masks = 1usize << k;
        let mut vars = ProblemVariables::new();
        let mut cross = Expression::from(0.0);
        let mut load: Vec<Expression> = (0..k).map(|_| Expression::from(0.0)).collect();
        let mut used: Vec<Expression> = (0..k).map(|_| Expression::from(0.0)).collect();
        let mut convex = Vec::new();
        for e in 0..m.e_count {
            let mut one = Expression::from(0.0);
            for mask in 1..masks {
                let rem = (m.w[e] - m.d_set[e * masks + mask]).max(0.0);
                let ext = (m.r[e] - m.q_set[e * masks + mask]).max(0.0);
                let y = vars.add(variable().min(0.0));
                one += y;
                cross += rem * y;
                for n in (0..k).filter(|&n| mask >> n & 1 == 1) {
                    load[n] += m.d[n][e] * y;
                    used[n] += m.q[n][e] * y;
                }
                let mut ra = Expression::from(0.0);
                let mut xb = Expression::from(0.0);
                for n in (0..k).filter(|&n| mask >> n & 1 == 1) {
                    if rem > 0.0 {
                        let a = vars.add(variable().min(0.0));
                        ra += a;
                        load[n] += rem * a;
                    }
                    if ext > 0.0 {
                        let b = vars.add(variable().min(0.0));
                        xb += b;
                        used[n] += ext * b;
                    }
                }
                if rem > 0.0 {
                    convex.push(constraint!(ra - y == 0.0));
                }
                if ext > 0.0 {
                    convex.push(constraint!(xb - y == 0.0));
                }
            }
            convex.push(constraint!(one == 1.0));
        }
        let mut model = vars.minimise(cross.clone()).using(microlp);
        for c in convex {
            model = model.with(c);
        }
        for n in 0..k {
            model = model.with(constraint!(load[n].clone() <= m.cap[n]));
            model = model.with(constraint!(used[n].clone() <= m.slots[n]));
        }
        let s = model.solve().unwrap();
        s.eval(&cross)
    }

    #[test]
    #[ignore = "diagnostics"]
    fn flow_bound_against_its_lp() {
        for loc in [0.3, 0.5, 0.8] {
            for layer in 0..2 {
                let (t, c, limit) = crate::context::deepseek_case(8, layer, (32, 4, 9), loc);
                let ctx = Context::new(&t, &c).unwrap();
                let total = t.total();
                let start = std::time::Instant::now();
                let v = lp(&ctx, limit) / total;
                println!(
                    "loc {loc} layer {layer}: LP {v:.5} in {:?}",
                    start.elapsed()
                );
            }
        }
    }
}

#[cfg(test)]
mod scan_tests {
    use super::*;
    use rand::RngExt;

    /// The set-by-set scan gives the expert-by-expert scan's value and choices to the bit.
    #[test]
    fn set_major_scan_matches_the_expert_scan() {
        let mut rng = comm_cost_model::seeded_rng(2302, 0);
        for (g, k, s, loc) in [(16, 2, 18, 0.5), (32, 4, 9, 0.8), (24, 3, 12, 0.3)] {
            let (t, c, limit) = crate::context::deepseek_case(1, 0, (g, k, s), loc);
            let ctx = Context::new(&t, &c).unwrap();
            let m = Model::new(&ctx, limit, Scale::EXACT);
            let mut scan = Scan::new(k, ctx.experts());
            let blank = Choice {
                mask: 1,
                cost: 0.0,
                lam_arg: 0,
                mu_arg: 0,
            };
            for _ in 0..20 {
                let lam: Vec<f64> = (0..k).map(|_| rng.random_range(0.0..2.0)).collect();
                let mu: Vec<f64> = (0..k).map(|_| rng.random_range(0.0..50.0)).collect();
                let (mut a, mut b) = (vec![blank; ctx.experts()], vec![blank; ctx.experts()]);
                let va = m.evaluate(&lam, &mu, &mut a, &mut scan);
                let vb = m.evaluate_by_expert(&lam, &mu, &mut b);
                assert_eq!(va.to_bits(), vb.to_bits());
                for (x, y) in a.iter().zip(&b) {
                    assert_eq!((x.mask, x.lam_arg, x.mu_arg), (y.mask, y.lam_arg, y.mu_arg));
                    assert_eq!(x.cost.to_bits(), y.cost.to_bits());
                }
            }
        }
    }
}

//! The node-level construction: which nodes host each expert, chosen for traffic under node
//! load and slot limits, then each node's experts placed on its GPUs by `expert-placement`.
//!
//! Cross-node tokens depend only on which nodes host each expert (a token crosses iff its
//! expert has no replica in the sender's node), and under the locality dispatch a node's load is
//! the tokens its own sources send to the experts it hosts plus the remote tokens of those
//! experts, so the node level carries the whole trade-off; packing replicas onto a node's GPUs is
//! the compute-only problem `expert-placement` solves.

use expert_placement::{LayerLoads, PlacementCluster, PlacementOptions, place_within};

use crate::cap::Cap;

use crate::context::Context;
use crate::error::TrafficError;

/// How many of the most eager experts of each side the improving swaps pair up.
const SWAP_CANDIDATES: usize = 48;

/// How many of the heaviest experts of the overloaded node, and of the lightest of another,
/// the repair's swaps pair up.
const REPAIR_SWAP_CANDIDATES: usize = 24;

/// How many of the cheapest moves a rebalance tries.
const REBALANCE_TRIES: usize = 16;

/// Node-level state.
struct Nodes<'c, 'a> {
    ctx: &'c Context<'a>,
    /// Hosting nodes of each expert (ascending).
    hosts: Vec<Vec<usize>>,
    /// The node that takes the expert's remote tokens.
    remote_to: Vec<usize>,
    /// Node loads (tokens).
    load: Vec<f64>,
    /// Node slot use (replicas needed, fractional: `max(1, load / tau)` per hosted expert).
    used: Vec<f64>,
    cap: Vec<f64>,
    slots: Vec<f64>,
    widest: Vec<usize>,
    gpus: Vec<usize>,
    /// Experts hosted by each node.
    hosted: Vec<usize>,
    /// Largest replica load that packs well (from the compute-only plan).
    tau: f64,
}

impl<'c, 'a> Nodes<'c, 'a> {
    fn remote(&self, e: usize) -> f64 {
        let local: f64 = self.hosts[e].iter().map(|&n| self.ctx.by_node[n][e]).sum();
        (self.ctx.loads[e] - local).max(0.0)
    }

    /// Load of expert `e` on node `n` (forced in-node tokens, plus the remote ones if `n` takes
    /// them).
    fn expert_load(&self, e: usize, n: usize) -> f64 {
        let r = if self.remote_to[e] == n {
            self.remote(e)
        } else {
            0.0
        };
        self.ctx.by_node[n][e] + r
    }

    fn replicas_for(&self, load: f64, n: usize) -> f64 {
        let need = if self.tau > 0.0 { load / self.tau } else { 1.0 };
        if need.is_finite() {
            need.clamp(1.0, self.gpus[n] as f64)
        } else {
            1.0
        }
    }

    fn remove(&mut self, e: usize) {
        self.shift(e, -1.0);
    }

    fn add(&mut self, e: usize) {
        self.shift(e, 1.0);
    }

    /// Adds (`sign = 1`) or removes (`-1`) expert `e`'s loads and slots on its hosts.
    fn shift(&mut self, e: usize, sign: f64) {
        let remote = self.remote(e);
        for i in 0..self.hosts[e].len() {
            let n = self.hosts[e][i];
            if sign > 0.0 {
                self.hosted[n] += 1;
            } else {
                self.hosted[n] -= 1;
            }
            let l = self.ctx.by_node[n][e] + if self.remote_to[e] == n { remote } else { 0.0 };
            self.load[n] += sign * l;
            self.used[n] += sign * self.replicas_for(l, n);
        }
    }

    /// Sets expert `e`'s hosts; the remote tokens go to the relatively lightest host.
    fn set(&mut self, e: usize, hosts: Vec<usize>) {
        self.remove(e);
        self.hosts[e] = hosts;
        let lightest = self.hosts[e]
            .iter()
            .copied()
            .min_by(|&a, &b| {
                (self.load[a] / self.cap[a])
                    .total_cmp(&(self.load[b] / self.cap[b]))
                    .then(a.cmp(&b))
            })
            .unwrap_or(0);
        self.remote_to[e] = lightest;
        self.add(e);
    }

    fn violation(&self) -> f64 {
        (0..self.cap.len())
            .map(|n| {
                (self.load[n] - self.cap[n]).max(0.0) / self.cap[n].max(f64::MIN_POSITIVE)
                    + (self.used[n] - self.slots[n]).max(0.0)
            })
            .sum()
    }

    fn feasible(&self) -> bool {
        (0..self.cap.len()).all(|n| {
            self.load[n] <= self.cap[n]
                && self.used[n] <= self.slots[n] + 1e-9
                && self.hosted(n) >= self.widest[n]
        })
    }

    fn hosted(&self, n: usize) -> usize {
        self.hosted[n]
    }

    /// After a change to expert `skip` that gained `gain` tokens but broke a node limit, moves
    /// one single-homed expert out of the most overloaded node to restore every limit, if one
    /// costs less than the gain; returns whether it did.
    fn rebalance(&mut self, skip: usize, gain: f64) -> bool {
        let k = self.cap.len();
        let Some(hot) = (0..k)
            .max_by(|&a, &b| (self.load[a] / self.cap[a]).total_cmp(&(self.load[b] / self.cap[b])))
        else {
            return false;
        };
        // Cheapest first; the first move that restores every limit is the cheapest one.
        let mut moves: Vec<(f64, usize, usize)> = Vec::new();
        for f in 0..self.hosts.len() {
            if f == skip || self.hosts[f] != [hot] {
                continue;
            }
            for m in (0..k).filter(|&m| m != hot) {
                let cost = self.ctx.by_node[hot][f] - self.ctx.by_node[m][f];
                if cost < gain {
                    moves.push((cost, f, m));
                }
            }
        }
        moves.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        for (_, f, m) in moves.into_iter().take(REBALANCE_TRIES) {
            self.set(f, vec![m]);
            if self.feasible() {
                return true;
            }
            self.set(f, vec![hot]);
        }
        false
    }

    fn traffic_of(&self, e: usize) -> f64 {
        self.remote(e)
    }
}

/// A groups-free plan built at the node level with node loads capped at `limit · V_n · (1 -
/// margin)`; `None` when the node level or a node's packing fails.
pub(crate) fn construct(
    ctx: &Context<'_>,
    limit: f64,
    margin: f64,
    tau: f64,
    placement: &PlacementOptions,
    cap: &Cap,
    start: Option<&[Vec<usize>]>,
) -> Result<Option<Vec<usize>>, TrafficError> {
    let late = || cap.passed();
    let (k, e_count) = (ctx.nodes(), ctx.experts());
    let slots_of = ctx.cluster.slots_of_gpu();
    let mut st = Nodes {
        ctx,
        hosts: vec![Vec::new(); e_count],
        remote_to: vec![0; e_count],
        load: vec![0.0; k],
        used: vec![0.0; k],
        cap: ctx
            .gpus_of_node
            .iter()
            .map(|gs| limit * (1.0 - margin) * gs.iter().map(|&g| ctx.speed[g]).sum::<f64>())
            .collect(),
        slots: ctx
            .gpus_of_node
            .iter()
            .map(|gs| gs.iter().map(|&g| slots_of[g]).sum::<usize>() as f64)
            .collect(),
        widest: ctx
            .gpus_of_node
            .iter()
            .map(|gs| gs.iter().map(|&g| slots_of[g]).max().unwrap_or(0))
            .collect(),
        gpus: ctx.gpus_of_node.iter().map(Vec::len).collect(),
        hosted: vec![0; k],
        tau,
    };
    // 1. Every expert at the given start's nodes (the bound's subproblem solution), or at the
    // node that sends it the most tokens, heaviest expert first.
    let mut order: Vec<usize> = (0..e_count).collect();
    order.sort_by(|&a, &b| ctx.loads[b].total_cmp(&ctx.loads[a]).then(a.cmp(&b)));
    for &e in &order {
        if let Some(hosts) = start.and_then(|s| s.get(e)).filter(|h| !h.is_empty()) {
            st.set(e, hosts.clone());
            continue;
        }
        let home = (0..k)
            .max_by(|&a, &b| {
                ctx.by_node[a][e]
                    .total_cmp(&ctx.by_node[b][e])
                    .then(b.cmp(&a))
            })
            .unwrap_or(0);
        st.hosts[e] = vec![home];
        st.remote_to[e] = home;
        st.add(e);
    }
    // 2. Repair: moves and duplicates that reduce the violation, cheapest in traffic first.
    let mut guard = 0;
    while st.violation() > 0.0 && guard < 4 * e_count * k && !late() {
        guard += 1;
        let mut best: Option<(f64, usize, Vec<usize>)> = None;
        let v0 = st.violation();
        let worst = (0..k)
            .max_by(|&a, &b| {
                let va = (st.load[a] - st.cap[a]).max(0.0) / st.cap[a]
                    + (st.used[a] - st.slots[a]).max(0.0);
                let vb = (st.load[b] - st.cap[b]).max(0.0) / st.cap[b]
                    + (st.used[b] - st.slots[b]).max(0.0);
                va.total_cmp(&vb)
            })
            .unwrap_or(0);
        for e in 0..e_count {
            if !st.hosts[e].contains(&worst) {
                continue;
            }
            let cur = st.hosts[e].clone();
            let mut options: Vec<Vec<usize>> = Vec::new();
            for n in 0..k {
                if !cur.contains(&n) {
                    let mut dup = cur.clone();
                    dup.push(n);
                    dup.sort_unstable();
                    options.push(dup);
                    if cur.len() == 1 {
                        options.push(vec![n]);
                    }
                }
            }
            if cur.len() > 1 {
                for &n in &cur {
                    options.push(cur.iter().copied().filter(|&m| m != n).collect());
                }
            }
            for opt in options {
                let t0 = st.traffic_of(e);
                let old_remote = st.remote_to[e];
                st.set(e, opt.clone());
                let (v1, t1) = (st.violation(), st.traffic_of(e));
                st.set(e, cur.clone());
                st.remove(e);
                st.remote_to[e] = old_remote;
                st.add(e);
                if v1 < v0 - 1e-12 {
                    let score = (t1 - t0) / (v0 - v1);
                    if best.as_ref().is_none_or(|b| score < b.0) {
                        best = Some((score, e, opt));
                    }
                }
            }
        }
        // Swaps of two single-homed experts between the most overloaded node and another.
        let mut best_swap: Option<(f64, usize, usize)> = None;
        if let Some(hot) =
            (0..k).max_by(|&a, &b| (st.load[a] / st.cap[a]).total_cmp(&(st.load[b] / st.cap[b])))
        {
            let singles: Vec<Vec<usize>> = (0..k)
                .map(|n| (0..e_count).filter(|&e| st.hosts[e] == [n]).collect())
                .collect();
            let mut from = singles[hot].clone();
            from.sort_by(|&a, &b| ctx.loads[b].total_cmp(&ctx.loads[a]));
            from.truncate(REPAIR_SWAP_CANDIDATES);
            for m in (0..k).filter(|&m| m != hot) {
                let mut to = singles[m].clone();
                to.sort_by(|&a, &b| ctx.loads[a].total_cmp(&ctx.loads[b]));
                to.truncate(REPAIR_SWAP_CANDIDATES);
                for &e in &from {
                    for &f in &to {
                        if ctx.loads[f] >= ctx.loads[e] {
                            continue;
                        }
                        let t0 = st.traffic_of(e) + st.traffic_of(f);
                        st.set(e, vec![m]);
                        st.set(f, vec![hot]);
                        let (v1, t1) = (st.violation(), st.traffic_of(e) + st.traffic_of(f));
                        st.set(e, vec![hot]);
                        st.set(f, vec![m]);
                        if v1 < v0 - 1e-12 {
                            let score = (t1 - t0) / (v0 - v1);
                            if best_swap.is_none_or(|b| score < b.0) {
                                best_swap = Some((score, e, f));
                            }
                        }
                    }
                }
            }
        }
        let single = best.as_ref().map(|b| b.0);
        match (best, best_swap) {
            (_, Some((score, e, f))) if single.is_none_or(|s| score < s) => {
                let (n, m) = (st.hosts[e][0], st.hosts[f][0]);
                st.set(e, vec![m]);
                st.set(f, vec![n]);
            }
            (Some((_, e, opt)), _) => st.set(e, opt),
            _ => break,
        }
    }
    if !st.feasible() {
        return Ok(None);
    }
    // 3. Improve: duplicates and moves that cut traffic and keep every limit, by gain.
    for _ in 0..2 {
        let mut changed = false;
        let mut pairs: Vec<(usize, usize)> = (0..e_count)
            .flat_map(|e| (0..k).map(move |n| (e, n)))
            .filter(|&(e, n)| !st.hosts[e].contains(&n) && ctx.by_node[n][e] > 0.0)
            .collect();
        pairs.sort_by(|a, b| {
            ctx.by_node[b.1][b.0]
                .total_cmp(&ctx.by_node[a.1][a.0])
                .then(a.cmp(b))
        });
        for (e, n) in pairs {
            if late() {
                break;
            }
            if st.hosts[e].contains(&n) {
                continue;
            }
            let before = st.hosts[e].clone();
            let mut dup = before.clone();
            dup.push(n);
            dup.sort_unstable();
            let mut options = vec![dup];
            if before.len() == 1 {
                options.push(vec![n]);
            }
            for opt in options {
                let t0 = st.traffic_of(e);
                st.set(e, opt.clone());
                let gain = t0 - st.traffic_of(e);
                if gain > 1e-12 * (1.0 + t0) && (st.feasible() || st.rebalance(e, gain)) {
                    changed = true;
                    break;
                }
                st.set(e, before.clone());
            }
        }
        // Swaps of single-homed experts that both prefer the other's node.
        for n in 0..k {
            for m in n + 1..k {
                let desire =
                    |e: usize, from: usize, to: usize| ctx.by_node[to][e] - ctx.by_node[from][e];
                let mut a: Vec<usize> = (0..e_count)
                    .filter(|&e| st.hosts[e] == [n] && desire(e, n, m) > 0.0)
                    .collect();
                let mut b: Vec<usize> = (0..e_count)
                    .filter(|&e| st.hosts[e] == [m] && desire(e, m, n) > 0.0)
                    .collect();
                a.sort_by(|&x, &y| desire(y, n, m).total_cmp(&desire(x, n, m)));
                b.sort_by(|&x, &y| desire(y, m, n).total_cmp(&desire(x, m, n)));
                a.truncate(SWAP_CANDIDATES);
                b.truncate(SWAP_CANDIDATES);
                for &e in &a {
                    if st.hosts[e] != [n] {
                        continue;
                    }
                    for &f in &b {
                        if st.hosts[f] != [m] {
                            continue;
                        }
                        st.set(e, vec![m]);
                        st.set(f, vec![n]);
                        if st.feasible() {
                            changed = true;
                            break;
                        }
                        st.set(e, vec![n]);
                        st.set(f, vec![m]);
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    if !st.feasible() {
        return Ok(None);
    }
    // 4. Each node's experts on its GPUs.
    let loads: Vec<Vec<f64>> = (0..k)
        .map(|n| {
            (0..e_count)
                .map(|e| {
                    if st.hosts[e].contains(&n) {
                        st.expert_load(e, n)
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    pack(ctx, &st.hosts, &loads, limit, placement, cap, None)
}

/// Packs each node's hosted experts onto its GPUs with `expert-placement`'s optimal planner
/// (no exact search; it stops once its busiest GPU is within `limit`, and otherwise after its
/// counted starts and perturbations), each expert with its load `loads[n][e]` in that node;
/// `None` when a node's packing fails (too few slots). The packer gets what is left of the cap
/// as its time budget, and a packing that ran for half of it records a hit.
pub(crate) fn pack(
    ctx: &Context<'_>,
    hosts: &[Vec<usize>],
    node_loads: &[Vec<f64>],
    limit: f64,
    placement: &PlacementOptions,
    cap: &Cap,
    hopeless: Option<f64>,
) -> Result<Option<Vec<usize>>, TrafficError> {
    let e_count = ctx.experts();
    let slots_of = ctx.cluster.slots_of_gpu();
    let mut map = vec![0usize; ctx.cluster.total_slots()];
    let hosted: Vec<Vec<usize>> = (0..ctx.nodes())
        .map(|n| (0..e_count).filter(|&e| hosts[e].contains(&n)).collect())
        .collect();
    // A node that cannot take its experts (none, more than its slots, or fewer than a GPU's
    // slots: `place_within` refuses those) fails the plan; found before any node is packed.
    for (gpus, experts) in ctx.gpus_of_node.iter().zip(&hosted) {
        let slots: usize = gpus.iter().map(|&g| slots_of[g]).sum();
        let widest = gpus.iter().map(|&g| slots_of[g]).max().unwrap_or(0);
        if experts.is_empty() || experts.len() > slots || experts.len() < widest {
            return Ok(None);
        }
    }
    let mut nodes = Vec::with_capacity(ctx.nodes());
    for (n, (gpus, experts)) in ctx.gpus_of_node.iter().zip(&hosted).enumerate() {
        let sub = PlacementCluster::new(
            gpus.iter().map(|&g| slots_of[g]).collect(),
            gpus.iter().map(|&g| ctx.speed[g]).collect(),
            vec![0; gpus.len()],
        )?;
        let loads = LayerLoads::new(experts.iter().map(|&e| node_loads[n][e]).collect())?;
        nodes.push((sub, loads));
    }
    // The node's packing is a heuristic step inside a heuristic: no exact search, and done as
    // soon as the node's busiest GPU is within the limit.
    let run = |sub: &PlacementCluster, loads: &LayerLoads, target: f64| {
        let time_s = cap.left_s();
        let quick = PlacementOptions {
            search_steps: Some(0),
            time_budget_s: time_s,
            cancel: placement.cancel.clone(),
        };
        cap.watch(time_s, || place_within(loads, sub, target, &quick))
    };
    let mut packed = Vec::with_capacity(nodes.len());
    match hopeless {
        None => {
            for (sub, loads) in &nodes {
                let Ok(p) = run(sub, loads, limit) else {
                    return Ok(None);
                };
                packed.push(p);
            }
        }
        Some(excess) => {
            // The first descent of every node first (what the search returns when it is within
            // the limit); the full search only for the nodes above it, and only when no node is
            // more than `excess` above it.
            for (sub, loads) in &nodes {
                let Ok(p) = run(sub, loads, f64::MAX) else {
                    return Ok(None);
                };
                packed.push(p);
            }
            let worst = packed.iter().map(|p| p.max_gpu_load).fold(0.0, f64::max);
            if worst <= limit * (1.0 + excess) {
                for ((sub, loads), p) in nodes.iter().zip(packed.iter_mut()) {
                    if p.max_gpu_load > limit {
                        let Ok(full) = run(sub, loads, limit) else {
                            return Ok(None);
                        };
                        *p = full;
                    }
                }
            }
        }
    }
    for ((gpus, experts), (sub, p)) in ctx
        .gpus_of_node
        .iter()
        .zip(&hosted)
        .zip(nodes.iter().map(|(sub, _)| sub).zip(&packed))
    {
        for (i, &g) in gpus.iter().enumerate() {
            for (sub_slot, slot) in sub.slot_range(i).zip(ctx.cluster.slot_range(g)) {
                map[slot] = experts[p.physical_to_logical[sub_slot]];
            }
        }
    }
    Ok(Some(map))
}

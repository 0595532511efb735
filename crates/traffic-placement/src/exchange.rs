//! The node-level exchange search: moves hosts of experts between nodes for fewer cross-node
//! tokens, judged by whether the locality dispatch can still keep every node within its load
//! limit, not by an even split.
//!
//! Under the locality dispatch a node serves its own sources' tokens to the experts it hosts, and
//! an expert's remote tokens (those of nodes without a replica) go to any of its hosting nodes,
//! split as the balance needs. Whether some split keeps every node `n` within `cap[n]` is a
//! transportation problem whose Hall condition reads: for every set `U` of nodes, the nodes'
//! own tokens to the experts they host plus the remote tokens of the experts hosted only inside
//! `U` fit in `sum_{n in U} cap[n]`. With at most 8 nodes that is `2^K` sums, kept by a subset
//! transform in `O(K 2^K)` per check, so a move is judged exactly and cheaply. A move adds a node
//! to an expert's hosts, moves a host, or pairs such a gain with a host given up in the same node
//! (dropped, or moved elsewhere), whenever the pair sends fewer tokens across nodes; the search
//! takes the best feasible move until none is left or the move budget is spent. Slots are
//! counted as the bound counts them (`max(1, ceil(D[n][e] / (limit · v_max)))` per hosted expert,
//! within each node's slot limit), so the result still packs as well as its start.

use crate::context::Context;
use crate::flow::Network;

/// Single moves paired with a host given up in their node.
const PAIRED_MOVES: usize = 32;

/// The node-level hosting being improved.
struct Hosting<'c, 'a> {
    ctx: &'c Context<'a>,
    k: usize,
    mask: Vec<usize>,
    /// `[K][E]`: slots a hosted expert takes in a node.
    q: Vec<Vec<f64>>,
    /// Own tokens each node serves.
    local: Vec<f64>,
    /// Remote tokens of the experts of each hosting set.
    remote_of_set: Vec<f64>,
    used: Vec<f64>,
    cap: Vec<f64>,
    slots: Vec<f64>,
    /// Load each node set may carry: its nodes' caps, or its load at the start where that was
    /// more (a start over a limit may stay there, never go further over it).
    room: Vec<f64>,
    /// Scratch of the subset transform.
    scratch: Vec<f64>,
}

/// A move: up to two experts change their hosting sets.
#[derive(Clone, Copy)]
struct Move {
    gain: f64,
    changes: [(usize, usize); 2],
    len: usize,
    /// Generation order: ties of gain are tried in it.
    order: usize,
}

/// Best gain first, ties in generation order (a total order, so any sort gives one sequence).
fn best_first(a: &Move, b: &Move) -> std::cmp::Ordering {
    b.gain.total_cmp(&a.gain).then(a.order.cmp(&b.order))
}

/// Moves sorted first: the first feasible move is usually among the best few.
const SORT_CHUNK: usize = 64;

impl Hosting<'_, '_> {
    fn local_of(&self, e: usize, mask: usize) -> f64 {
        (0..self.k)
            .filter(|&n| mask >> n & 1 == 1)
            .map(|n| self.ctx.by_node[n][e])
            .sum()
    }

    fn remote_of(&self, e: usize, mask: usize) -> f64 {
        (self.ctx.loads[e] - self.local_of(e, mask)).max(0.0)
    }

    /// Applies (`sign = 1`) or takes back (`sign = -1`) expert `e` hosted by `mask`.
    fn account(&mut self, e: usize, mask: usize, sign: f64) {
        for n in (0..self.k).filter(|&n| mask >> n & 1 == 1) {
            self.local[n] += sign * self.ctx.by_node[n][e];
            self.used[n] += sign * self.q[n][e];
        }
        self.remote_of_set[mask] += sign * self.remote_of(e, mask);
    }

    fn set(&mut self, e: usize, mask: usize) {
        let old = self.mask[e];
        self.account(e, old, -1.0);
        self.account(e, mask, 1.0);
        self.mask[e] = mask;
    }

    /// Whether every node's slots and every node set's load fit (Hall's condition of the
    /// remote tokens' transportation problem).
    fn feasible(&mut self) -> bool {
        let k = self.k;
        let tol = 1e-9 * self.cap.iter().sum::<f64>();
        if (0..k).any(|n| self.used[n] > self.slots[n] + 1e-9) {
            return false;
        }
        let g = &mut self.scratch;
        g.copy_from_slice(&self.remote_of_set);
        for bit in 0..k {
            for u in 0..g.len() {
                if u >> bit & 1 == 1 {
                    g[u] += g[u ^ (1 << bit)];
                }
            }
        }
        (1..g.len()).all(|u| {
            let own: f64 = (0..k)
                .filter(|&n| u >> n & 1 == 1)
                .map(|n| self.local[n])
                .sum();
            own + g[u] <= self.room[u] + tol
        })
    }

    /// The load of every node set (own tokens plus the remote tokens hosted only inside it).
    fn set_loads(&self) -> Vec<f64> {
        let k = self.k;
        let mut g = self.remote_of_set.clone();
        for bit in 0..k {
            for u in 0..g.len() {
                if u >> bit & 1 == 1 {
                    g[u] += g[u ^ (1 << bit)];
                }
            }
        }
        for (u, x) in g.iter_mut().enumerate() {
            *x += (0..k)
                .filter(|&n| u >> n & 1 == 1)
                .map(|n| self.local[n])
                .sum::<f64>();
        }
        g
    }

    /// Applies `mv` if the result is feasible; otherwise leaves the hosting as it was.
    fn try_move(&mut self, mv: &Move) -> bool {
        let mut old = [(0usize, 0usize); 2];
        for (o, &(e, m)) in old.iter_mut().zip(&mv.changes[..mv.len]) {
            *o = (e, self.mask[e]);
            self.set(e, m);
        }
        if self.feasible() {
            return true;
        }
        for &(e, m) in old[..mv.len].iter().rev() {
            self.set(e, m);
        }
        false
    }

    /// Whether a move keeps every node within its slots (checked before the loads).
    fn slots_fit(&self, mv: &Move) -> bool {
        let mut delta = [0.0f64; 8];
        let mut touched = 0usize;
        for &(e, m) in &mv.changes[..mv.len] {
            touched |= self.slot_delta(e, m, &mut delta);
        }
        self.delta_fits(&delta, touched)
    }

    /// Adds the slot change of expert `e` going to hosting set `m` to `delta`; returns the nodes
    /// it changes. (The slot counts are small integers, so the sums are exact in any order.)
    fn slot_delta(&self, e: usize, m: usize, delta: &mut [f64; 8]) -> usize {
        let touched = self.mask[e] ^ m;
        let mut diff = touched;
        while diff != 0 {
            let n = diff.trailing_zeros() as usize;
            diff &= diff - 1;
            let q = self.q[n][e];
            delta[n] += if m >> n & 1 == 1 { q } else { -q };
        }
        touched
    }

    /// Whether every node in `touched` whose slots grow by `delta` stays within them.
    fn delta_fits(&self, delta: &[f64; 8], mut touched: usize) -> bool {
        while touched != 0 {
            let n = touched.trailing_zeros() as usize;
            touched &= touched - 1;
            if delta[n] > 0.0 && self.used[n] + delta[n] > self.slots[n] + 1e-9 {
                return false;
            }
        }
        true
    }

    /// The improving moves that fit the slots, unsorted, into `out`: the single moves in
    /// generation order, then the pairs (`order` numbers them so); `singles`, `top` and `gains`
    /// are scratch. With `head_only`, the pairs that cannot be among the [`SORT_CHUNK`] best
    /// moves are left out (returns whether any was): a pair ranks after every single of its
    /// gain (its `order` is larger), so one no better than the `SORT_CHUNK`-th best fitting
    /// single is not in the head.
    fn moves(
        &self,
        out: &mut Vec<Move>,
        singles: &mut Vec<(Move, usize)>,
        top: &mut Vec<(Move, usize)>,
        gains: &mut Vec<f64>,
        head_only: bool,
    ) -> bool {
        let (k, d) = (self.k, &self.ctx.by_node);
        singles.clear();
        for (e, &mask) in self.mask.iter().enumerate() {
            for n in (0..k).filter(|&n| mask >> n & 1 == 0) {
                let one = |m: usize, gain: f64, order: usize| Move {
                    gain,
                    changes: [(e, m), (0, 0)],
                    len: 1,
                    order,
                };
                singles.push((one(mask | 1 << n, d[n][e], singles.len()), n));
                for m in (0..k).filter(|&m| mask >> m & 1 == 1) {
                    let gain = d[n][e] - d[m][e];
                    if gain > 0.0 {
                        singles.push((one((mask | 1 << n) & !(1 << m), gain, singles.len()), n));
                    }
                }
            }
        }
        top.clear();
        top.extend_from_slice(singles);
        let best = PAIRED_MOVES.min(top.len());
        if best > 0 && best < top.len() {
            top.select_nth_unstable_by(best - 1, |a, b| best_first(&a.0, &b.0));
        }
        top.truncate(best);
        top.sort_unstable_by(|a, b| best_first(&a.0, &b.0));
        out.clear();
        out.extend(singles.iter().map(|s| s.0).filter(|m| self.slots_fit(m)));
        // Pairs at or below this gain are not generated (head only).
        let floor = if head_only && out.len() >= SORT_CHUNK {
            gains.clear();
            gains.extend(out.iter().map(|m| m.gain));
            let (_, kth, _) =
                gains.select_nth_unstable_by(SORT_CHUNK - 1, |a: &f64, b: &f64| b.total_cmp(a));
            *kth
        } else {
            f64::NEG_INFINITY
        };
        let mut left_out = false;
        let mut order = singles.len();
        // The experts each node hosts, ascending (the pairs' partners).
        let mut hosted_by: Vec<Vec<usize>> = vec![Vec::new(); k];
        if !top.is_empty() {
            for (h, &mask) in self.mask.iter().enumerate() {
                let mut bits = mask;
                while bits != 0 {
                    hosted_by[bits.trailing_zeros() as usize].push(h);
                    bits &= bits - 1;
                }
            }
        }
        // Pair the best gains into a node with a host that node gives up.
        for &(mv, n) in top.iter() {
            let e = mv.changes[0].0;
            // The single's own slot change, once for all its pairs.
            let mut first = [0.0f64; 8];
            let first_touched = self.slot_delta(e, mv.changes[0].1, &mut first);
            for &h in hosted_by[n].iter().filter(|&&h| h != e) {
                let mask = self.mask[h];
                let without = mask & !(1 << n);
                let mut give_up = |m: usize, loss: f64| {
                    if mv.gain - loss > 0.0 && mv.gain - loss <= floor {
                        // Numbered as in the full list, so that the order of the rest holds.
                        order += 1;
                        left_out = true;
                    } else if mv.gain - loss > 0.0 {
                        let pair = Move {
                            gain: mv.gain - loss,
                            changes: [mv.changes[0], (h, m)],
                            len: 2,
                            order,
                        };
                        order += 1;
                        let mut delta = first;
                        let touched = first_touched | self.slot_delta(h, m, &mut delta);
                        if self.delta_fits(&delta, touched) {
                            out.push(pair);
                        }
                    }
                };
                if without != 0 {
                    give_up(without, d[n][h]);
                }
                for m in (0..k).filter(|&m| mask >> m & 1 == 0) {
                    give_up(without | 1 << m, d[n][h] - d[m][h]);
                }
            }
        }
        left_out
    }
}

/// Improves `hosts` (hosting nodes of each expert, ascending) for fewer cross-node tokens with
/// every node's load within `cap[n]` under the best split of remote tokens and its slots within
/// `slot_limit[n]`, by at most `budget` moves; returns the moves made. A start over a limit is
/// searched too, with every node set's load and every node's slots kept within the larger of
/// the limit and the start's. More than 8 nodes are left as they are.
pub(crate) fn exchange_hosts(
    ctx: &Context<'_>,
    hosts: &mut [Vec<usize>],
    limit: f64,
    cap: &[f64],
    slot_limit: &[f64],
    budget: usize,
) -> usize {
    let k = ctx.nodes();
    if k == 0 || k > 8 || budget == 0 {
        return 0;
    }
    let vmax: Vec<f64> = ctx
        .gpus_of_node
        .iter()
        .map(|gs| gs.iter().map(|&g| ctx.speed[g]).fold(0.0, f64::max))
        .collect();
    let q: Vec<Vec<f64>> = (0..k)
        .map(|n| {
            ctx.by_node[n]
                .iter()
                .map(|&t| {
                    let per = limit * vmax[n];
                    if per > 0.0 && per.is_finite() {
                        (t / per).ceil().max(1.0)
                    } else {
                        1.0
                    }
                })
                .collect()
        })
        .collect();
    let mut h = Hosting {
        ctx,
        k,
        mask: hosts
            .iter()
            .map(|hs| hs.iter().fold(0usize, |m, &n| m | 1 << n))
            .collect(),
        q,
        local: vec![0.0; k],
        remote_of_set: vec![0.0; 1 << k],
        used: vec![0.0; k],
        cap: cap.to_vec(),
        slots: slot_limit.to_vec(),
        room: (0..1usize << k)
            .map(|u| (0..k).filter(|&n| u >> n & 1 == 1).map(|n| cap[n]).sum())
            .collect(),
        scratch: vec![0.0; 1 << k],
    };
    if h.mask.contains(&0) {
        return 0;
    }
    for e in 0..h.mask.len() {
        h.account(e, h.mask[e], 1.0);
    }
    // A start over a node set's limit (the repair could not restore it, or the feedback
    // lowered the limits since) is searched too: no set may end over both its limit and its
    // start, so the hosting gets no less balanced anywhere.
    let start = h.set_loads();
    for (room, load) in h.room.iter_mut().zip(start) {
        *room = room.max(load);
    }
    for (n, slots) in h.slots.iter_mut().enumerate() {
        *slots = slots.max(h.used[n]);
    }
    let mut made = 0;
    let (mut moves, mut singles, mut top, mut gains) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    'search: while made < budget {
        // The best chunk first (a feasible move is usually there, so only the moves that can
        // be in it are generated); when none of it is, the rest sorted whole.
        let pruned = h.moves(&mut moves, &mut singles, &mut top, &mut gains, true);
        let take = SORT_CHUNK.min(moves.len());
        if take < moves.len() {
            moves.select_nth_unstable_by(take.saturating_sub(1), best_first);
        }
        let head = &mut moves[..take];
        head.sort_unstable_by(best_first);
        if head.iter().any(|mv| h.try_move(mv)) {
            made += 1;
            continue 'search;
        }
        if pruned {
            // All of them; the best chunk is the same one (a total order), tried already.
            h.moves(&mut moves, &mut singles, &mut top, &mut gains, false);
            let take = SORT_CHUNK.min(moves.len());
            if take < moves.len() {
                moves.select_nth_unstable_by(take.saturating_sub(1), best_first);
            }
        }
        let take = SORT_CHUNK.min(moves.len());
        let tail = &mut moves[take..];
        tail.sort_unstable_by(best_first);
        if tail.iter().any(|mv| h.try_move(mv)) {
            made += 1;
            continue 'search;
        }
        break;
    }
    for (e, hs) in hosts.iter_mut().enumerate() {
        *hs = (0..k).filter(|&n| h.mask[e] >> n & 1 == 1).collect();
    }
    made
}

/// Each hosted expert's load in each of its nodes with every node within `cap[n]`: the node's
/// own tokens plus a share of the remote ones, by a maximum flow; `None` when no split fits.
pub(crate) fn allocate(
    ctx: &Context<'_>,
    hosts: &[Vec<usize>],
    cap: &[f64],
) -> Option<Vec<Vec<f64>>> {
    let (k, e_count) = (ctx.nodes(), ctx.experts());
    let mut loads = vec![vec![0.0; e_count]; k];
    let mut room = cap.to_vec();
    let mut remote = vec![0.0; e_count];
    for (e, hs) in hosts.iter().enumerate() {
        let mut local = 0.0;
        for &n in hs {
            loads[n][e] = ctx.by_node[n][e];
            room[n] -= ctx.by_node[n][e];
            local += ctx.by_node[n][e];
        }
        remote[e] = (ctx.loads[e] - local).max(0.0);
    }
    let demand: f64 = remote.iter().sum();
    let eps = 1e-12 * ctx.routed.total().max(1.0);
    let (src, sink) = (0, 1);
    let mut net = Network::new(2 + e_count + k, eps);
    let mut edges = Vec::new();
    for (e, &r) in remote.iter().enumerate() {
        if r > 0.0 {
            net.add_edge(src, 2 + e, r);
            for &n in &hosts[e] {
                edges.push((e, n, net.add_edge(2 + e, 2 + e_count + n, r)));
            }
        }
    }
    for (n, &r) in room.iter().enumerate() {
        net.add_edge(2 + e_count + n, sink, r.max(0.0));
    }
    if net.max_flow(src, sink) < demand - 1e-9 * demand.max(1.0) {
        return None;
    }
    for (e, n, id) in edges {
        loads[n][e] += net.flow(id);
    }
    Some(loads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routed::RoutedTokens;
    use expert_placement::PlacementCluster;
    use rand::RngExt;

    fn cross(ctx: &Context<'_>, hosts: &[Vec<usize>]) -> f64 {
        hosts
            .iter()
            .enumerate()
            .map(|(e, h)| ctx.loads[e] - h.iter().map(|&n| ctx.by_node[n][e]).sum::<f64>())
            .sum()
    }

    /// Random tokens of 6 GPUs in 3 nodes to 9 experts, node caps and a random hosting.
    fn instance(seed: u64) -> (RoutedTokens, PlacementCluster, Vec<Vec<usize>>, Vec<f64>) {
        let mut rng = comm_cost_model::seeded_rng(2301, seed);
        let rows: Vec<Vec<f64>> = (0..6)
            .map(|_| {
                (0..9)
                    .map(|_| f64::from(rng.random_range(0..20u32)))
                    .collect()
            })
            .collect();
        let t = RoutedTokens::new(rows).unwrap();
        let c = PlacementCluster::uniform(6, 4, 3).unwrap();
        let hosts: Vec<Vec<usize>> = (0..9)
            .map(|_| {
                let mask = rng.random_range(1..8usize);
                (0..3).filter(|&n| mask >> n & 1 == 1).collect()
            })
            .collect();
        let share = rng.random_range(0.34..0.6);
        let cap = vec![share * t.total(); 3];
        (t, c, hosts, cap)
    }

    /// Hall's condition over node sets says exactly what a maximum flow of the remote tokens
    /// says: some split keeps every node within its cap.
    #[test]
    fn hall_condition_matches_the_flow() {
        let (mut yes, mut no) = (0, 0);
        for seed in 0..300 {
            let (t, c, hosts, cap) = instance(seed);
            let ctx = Context::new(&t, &c).unwrap();
            let mut h = Hosting {
                ctx: &ctx,
                k: 3,
                mask: hosts
                    .iter()
                    .map(|hs| hs.iter().fold(0usize, |m, &n| m | 1 << n))
                    .collect(),
                q: vec![vec![1.0; 9]; 3],
                local: vec![0.0; 3],
                remote_of_set: vec![0.0; 8],
                used: vec![0.0; 3],
                cap: cap.clone(),
                slots: vec![100.0; 3],
                room: (0..8usize)
                    .map(|u| (0..3).filter(|&n| u >> n & 1 == 1).map(|n| cap[n]).sum())
                    .collect(),
                scratch: vec![0.0; 8],
            };
            for e in 0..9 {
                h.account(e, h.mask[e], 1.0);
            }
            let hall = h.feasible();
            let flow = allocate(&ctx, &hosts, &cap).is_some();
            assert_eq!(hall, flow, "seed {seed}");
            if hall { yes += 1 } else { no += 1 }
        }
        assert!(yes > 20 && no > 20, "{yes} feasible, {no} not");
    }

    /// Every node set's load (own tokens plus the remote tokens hosted only inside it).
    fn set_loads(ctx: &Context<'_>, hosts: &[Vec<usize>]) -> Vec<f64> {
        (0..8usize)
            .map(|u| {
                hosts
                    .iter()
                    .enumerate()
                    .map(|(e, h)| {
                        let own: f64 = h
                            .iter()
                            .filter(|&&n| u >> n & 1 == 1)
                            .map(|&n| ctx.by_node[n][e])
                            .sum();
                        let inside = h.iter().all(|&n| u >> n & 1 == 1);
                        let local: f64 = h.iter().map(|&n| ctx.by_node[n][e]).sum();
                        own + if inside { ctx.loads[e] - local } else { 0.0 }
                    })
                    .sum()
            })
            .collect()
    }

    /// From a start over a limit the search never takes a node set further over its limit than
    /// it started, and never sends more tokens across nodes.
    #[test]
    fn over_limit_start_gets_no_worse() {
        let mut searched = 0;
        for seed in 0..200 {
            let (t, c, mut hosts, cap) = instance(seed);
            let ctx = Context::new(&t, &c).unwrap();
            if allocate(&ctx, &hosts, &cap).is_some() {
                continue;
            }
            let before = set_loads(&ctx, &hosts);
            let cross_before = cross(&ctx, &hosts);
            let slots = vec![9.0; 3];
            exchange_hosts(&ctx, &mut hosts, t.total(), &cap, &slots, 50);
            let after = set_loads(&ctx, &hosts);
            for u in 1..8usize {
                let room: f64 = (0..3).filter(|&n| u >> n & 1 == 1).map(|n| cap[n]).sum();
                assert!(
                    after[u] <= room.max(before[u]) * (1.0 + 1e-9) + 1e-9,
                    "seed {seed} set {u}: {} -> {} (room {room})",
                    before[u],
                    after[u]
                );
            }
            assert!(cross(&ctx, &hosts) <= cross_before + 1e-9);
            searched += 1;
        }
        assert!(searched > 20, "{searched}");
    }

    /// The search never sends more tokens across nodes, keeps every expert hosted, the slots
    /// within their limits and the node loads within their caps (checked by the flow).
    #[test]
    fn exchange_improves_and_stays_feasible() {
        let mut improved = 0;
        for seed in 0..200 {
            let (t, c, mut hosts, cap) = instance(seed);
            let ctx = Context::new(&t, &c).unwrap();
            if allocate(&ctx, &hosts, &cap).is_none() {
                continue;
            }
            let slots = vec![6.0; 3];
            if (0..3).any(|n| hosts.iter().filter(|h| h.contains(&n)).count() > 6) {
                continue;
            }
            let before = cross(&ctx, &hosts);
            let limit = t.total();
            let made = exchange_hosts(&ctx, &mut hosts, limit, &cap, &slots, 50);
            let after = cross(&ctx, &hosts);
            assert!(after <= before + 1e-9, "seed {seed}: {before} -> {after}");
            assert!(hosts.iter().all(|h| !h.is_empty()));
            assert!((0..3).all(|n| hosts.iter().filter(|h| h.contains(&n)).count() <= 6));
            let loads = allocate(&ctx, &hosts, &cap).expect("feasible after the search");
            for (n, row) in loads.iter().enumerate() {
                assert!(
                    row.iter().sum::<f64>() <= cap[n] * (1.0 + 1e-9),
                    "seed {seed}"
                );
            }
            improved += usize::from(made > 0 && after < before);
        }
        assert!(improved > 20, "improved {improved}");
    }
}

//! The traffic-aware local search: from a balanced placement, move replicas into the nodes that
//! send their experts the most tokens, as long as the busiest GPU stays within the limit.
//!
//! Loads in the search are those of the static (even) dispatch, an upper bound on the best
//! split's ([`crate::dispatch()`]), so every plan the search accepts as balanced is balanced.

use crate::cap::Cap;
use crate::context::Context;

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// No improving move is left (a local optimum).
    Converged,
    /// The step budget ran out.
    Steps,
    /// The wall-clock safety cap passed.
    Time,
}

/// The budget of one search: counted steps, and the layer's safety cap.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget<'t> {
    pub(crate) steps: u64,
    pub(crate) cap: &'t Cap,
}

/// The search state: a slot map and everything derived from it.
pub(crate) struct State<'c, 'a> {
    ctx: &'c Context<'a>,
    pub(crate) map: Vec<usize>,
    gpu_of_slot: Vec<usize>,
    /// Slots of each compact node.
    slots_of_node: Vec<Vec<usize>>,
    /// Distinct replica GPUs of each expert.
    pub(crate) replicas: Vec<Vec<usize>>,
    /// `G x E` membership.
    on_gpu: Vec<bool>,
    /// Replicas of each expert per node, `E x K`.
    in_node: Vec<u32>,
    /// Proxy tokens per GPU.
    load: Vec<f64>,
    /// Cross-node tokens per expert.
    cross: Vec<f64>,
    pub(crate) traffic: f64,
    /// Optional expert group per expert and the node each group is pinned to.
    group_node: Option<(Vec<usize>, Vec<usize>)>,
    limit: f64,
    pub(crate) steps: u64,
    last_pass_improved: bool,
    /// Optional move budget: the placement moves are counted from, and the most slots that may
    /// differ from it.
    origin: Option<(Vec<usize>, usize)>,
    /// Slots that differ from the origin.
    changed: usize,
    /// Scratch of [`State::busiest_after`].
    scratch_delta: Vec<(usize, f64)>,
    scratch_load: Vec<f64>,
    /// Buffers for the two replica lists a tried move builds (a rejected move's are reused,
    /// an applied move's replace the lists they displace).
    scratch_lists: [Vec<usize>; 2],
    /// The busiest GPU's load over speed, kept with `load` (read at every tried move).
    busiest: f64,
}

/// A candidate move: slot `slot` takes expert `incoming`; with `swap_from`, that slot takes the
/// expert `slot` held (a swap), otherwise the outgoing expert just loses a replica.
#[derive(Debug, Clone, Copy)]
struct Move {
    slot: usize,
    incoming: usize,
    swap_from: Option<usize>,
    traffic_delta: f64,
}

impl<'c, 'a> State<'c, 'a> {
    /// The state of a slot map without two replicas of one expert on a GPU.
    pub(crate) fn new(ctx: &'c Context<'a>, map: Vec<usize>, limit: f64) -> Self {
        let (g, e_count, k) = (ctx.gpus(), ctx.experts(), ctx.nodes());
        let gpu_of_slot = ctx.cluster.gpu_of_each_slot();
        let mut slots_of_node = vec![Vec::new(); k];
        for (s, &gpu) in gpu_of_slot.iter().enumerate() {
            slots_of_node[ctx.node[gpu]].push(s);
        }
        let mut st = Self {
            ctx,
            map,
            gpu_of_slot,
            slots_of_node,
            replicas: vec![Vec::new(); e_count],
            on_gpu: vec![false; g * e_count],
            in_node: vec![0; e_count * k],
            load: vec![0.0; g],
            cross: vec![0.0; e_count],
            traffic: 0.0,
            group_node: None,
            limit,
            steps: 0,
            last_pass_improved: false,
            origin: None,
            changed: 0,
            scratch_delta: Vec::with_capacity(16),
            scratch_load: Vec::with_capacity(g),
            scratch_lists: [Vec::new(), Vec::new()],
            busiest: 0.0,
        };
        for s in 0..st.map.len() {
            let (e, gpu) = (st.map[s], st.gpu_of_slot[s]);
            if !st.on_gpu[gpu * e_count + e] {
                st.on_gpu[gpu * e_count + e] = true;
                st.replicas[e].push(gpu);
                st.in_node[e * k + ctx.node[gpu]] += 1;
            }
        }
        for e in 0..e_count {
            let reps = std::mem::take(&mut st.replicas[e]);
            let load = &mut st.load;
            st.cross[e] = ctx.proxy_contribution(e, &reps, |gpu, t| load[gpu] += t);
            st.replicas[e] = reps;
        }
        st.traffic = st.cross.iter().sum();
        st.busiest = st.compute_busiest();
        st
    }

    /// Limits the search to maps that differ from `origin` (same length as the map) in at most
    /// `max_changes` slots; a map already beyond that only moves back towards it.
    pub(crate) fn cap_changes(&mut self, origin: Vec<usize>, max_changes: usize) {
        self.changed = self.map.iter().zip(&origin).filter(|(a, b)| a != b).count();
        self.origin = Some((origin, max_changes));
    }

    /// Slots differing from the origin after `mv`.
    fn changed_after(&self, mv: &Move) -> usize {
        let Some((origin, _)) = &self.origin else {
            return 0;
        };
        let mut n = self.changed;
        let mut update = |slot: usize, new: usize| {
            let was = usize::from(self.map[slot] != origin[slot]);
            let now = usize::from(new != origin[slot]);
            n = n + now - was;
        };
        let out = self.map[mv.slot];
        update(mv.slot, mv.incoming);
        if let Some(from) = mv.swap_from {
            update(from, out);
        }
        n
    }

    /// Pins each expert's replicas to its group's node (groups-in-nodes).
    pub(crate) fn pin_groups(&mut self, group_of_expert: Vec<usize>, node_of_group: Vec<usize>) {
        self.group_node = Some((group_of_expert, node_of_group));
    }

    pub(crate) fn busiest(&self) -> f64 {
        self.busiest
    }

    /// The busiest GPU's load over speed, from the loads.
    fn compute_busiest(&self) -> f64 {
        self.load
            .iter()
            .zip(&self.ctx.speed)
            .map(|(t, v)| t / v)
            .fold(0.0, f64::max)
    }

    fn excess(&self, busiest: f64) -> f64 {
        (busiest - self.limit).max(0.0)
    }

    fn allowed(&self, e: usize, node: usize) -> bool {
        match &self.group_node {
            Some((group, pin)) => pin[group[e]] == node,
            None => true,
        }
    }

    /// The busiest GPU after replacing the contributions of the experts in `changed` by those
    /// of their new replica lists.
    fn busiest_after(&mut self, changed: &[(usize, &[usize])]) -> (f64, f64) {
        // Scratch buffers kept between moves (the same sums in the same order as fresh ones).
        let mut delta = std::mem::take(&mut self.scratch_delta);
        let mut load = std::mem::take(&mut self.scratch_load);
        delta.clear();
        let mut cross = 0.0;
        for &(e, new) in changed {
            self.ctx
                .proxy_contribution(e, &self.replicas[e], |gpu, t| delta.push((gpu, -t)));
            cross += self
                .ctx
                .proxy_contribution(e, new, |gpu, t| delta.push((gpu, t)))
                - self.cross[e];
        }
        load.clear();
        load.extend_from_slice(&self.load);
        for &(gpu, d) in &delta {
            load[gpu] += d;
        }
        let busiest = load
            .iter()
            .zip(&self.ctx.speed)
            .map(|(t, v)| t / v)
            .fold(0.0, f64::max);
        self.scratch_delta = delta;
        self.scratch_load = load;
        (busiest, cross)
    }

    /// The replica lists after `mv`, written into `lists` (the same lists, in the same order,
    /// as fresh vectors would hold): the incoming expert's, then the outgoing one's.
    fn lists_after(&self, mv: &Move, lists: &mut [Vec<usize>; 2]) -> [usize; 2] {
        let to = self.gpu_of_slot[mv.slot];
        let out = self.map[mv.slot];
        let [inc, outl] = lists;
        inc.clear();
        inc.extend_from_slice(&self.replicas[mv.incoming]);
        outl.clear();
        outl.extend(self.replicas[out].iter().copied().filter(|&g| g != to));
        match mv.swap_from {
            Some(from_slot) => {
                let from = self.gpu_of_slot[from_slot];
                inc.retain(|&g| g != from);
                inc.push(to);
                outl.push(from);
            }
            None => inc.push(to),
        }
        [mv.incoming, out]
    }

    /// Traffic change of `mv` from the per-node replica counts alone (`O(1)`).
    fn traffic_delta(&self, slot: usize, incoming: usize, swap_from: Option<usize>) -> f64 {
        let k = self.ctx.nodes();
        let d = &self.ctx.by_node;
        let out = self.map[slot];
        let n_to = self.ctx.node[self.gpu_of_slot[slot]];
        let mut delta = 0.0;
        if self.in_node[incoming * k + n_to] == 0 {
            delta -= d[n_to][incoming];
        }
        if self.in_node[out * k + n_to] == 1 {
            delta += d[n_to][out];
        }
        if let Some(from_slot) = swap_from {
            let n_from = self.ctx.node[self.gpu_of_slot[from_slot]];
            if n_from != n_to {
                if self.in_node[incoming * k + n_from] == 1 {
                    delta += d[n_from][incoming];
                }
                if self.in_node[out * k + n_from] == 0 {
                    delta -= d[n_from][out];
                }
            }
        }
        delta
    }

    /// Whether `mv` keeps every expert placed, never two replicas on a GPU, and the groups pinned.
    fn valid(&self, slot: usize, incoming: usize, swap_from: Option<usize>) -> bool {
        let e_count = self.ctx.experts();
        let out = self.map[slot];
        let to = self.gpu_of_slot[slot];
        if out == incoming || self.on_gpu[to * e_count + incoming] {
            return false;
        }
        if !self.allowed(incoming, self.ctx.node[to]) {
            return false;
        }
        match swap_from {
            Some(from_slot) => {
                let from = self.gpu_of_slot[from_slot];
                from != to
                    && self.map[from_slot] == incoming
                    && !self.on_gpu[from * e_count + out]
                    && self.allowed(out, self.ctx.node[from])
            }
            None => self.replicas[out].len() >= 2,
        }
    }

    /// Tries `mv`; applies it and returns `true` when it is lexicographically better in
    /// (excess over the limit, cross-node tokens, busiest GPU).
    fn try_move(&mut self, mv: &Move) -> bool {
        self.steps += 1;
        let differing = self.changed_after(mv);
        if let Some((_, max)) = &self.origin {
            if differing > *max && differing >= self.changed {
                return false;
            }
        }
        let before = self.busiest();
        let mut lists = std::mem::take(&mut self.scratch_lists);
        let experts = self.lists_after(mv, &mut lists);
        let changed = [
            (experts[0], lists[0].as_slice()),
            (experts[1], lists[1].as_slice()),
        ];
        let (after, dcross) = self.busiest_after(&changed);
        let (ex0, ex1) = (self.excess(before), self.excess(after));
        let tol = 1e-12 * (1.0 + self.limit.abs());
        let ttol = 1e-12 * (1.0 + self.traffic.abs());
        let better = if ex1 < ex0 - tol {
            true
        } else if ex1 > ex0 + tol {
            false
        } else if dcross < -ttol {
            true
        } else if dcross > ttol {
            false
        } else {
            after < before - tol
        };
        if better {
            self.apply(mv, experts, lists);
            self.changed = differing;
        } else {
            self.scratch_lists = lists;
        }
        better
    }

    fn apply(&mut self, mv: &Move, experts: [usize; 2], mut lists: [Vec<usize>; 2]) {
        let (e_count, k) = (self.ctx.experts(), self.ctx.nodes());
        let to = self.gpu_of_slot[mv.slot];
        let out = self.map[mv.slot];
        self.on_gpu[to * e_count + out] = false;
        self.on_gpu[to * e_count + mv.incoming] = true;
        self.in_node[out * k + self.ctx.node[to]] -= 1;
        self.in_node[mv.incoming * k + self.ctx.node[to]] += 1;
        self.map[mv.slot] = mv.incoming;
        if let Some(from_slot) = mv.swap_from {
            let from = self.gpu_of_slot[from_slot];
            self.on_gpu[from * e_count + mv.incoming] = false;
            self.on_gpu[from * e_count + out] = true;
            self.in_node[mv.incoming * k + self.ctx.node[from]] -= 1;
            self.in_node[out * k + self.ctx.node[from]] += 1;
            self.map[from_slot] = out;
        }
        for (&e, list) in experts.iter().zip(&mut lists) {
            // The displaced list goes back into `lists`, the buffers of the next tried move.
            std::mem::swap(&mut self.replicas[e], list);
            let load = &mut self.load;
            self.ctx
                .proxy_contribution(e, list, |gpu, t| load[gpu] -= t);
            let (ctx, new, load) = (self.ctx, &self.replicas[e], &mut self.load);
            let c = ctx.proxy_contribution(e, new, |gpu, t| load[gpu] += t);
            self.traffic += c - self.cross[e];
            self.cross[e] = c;
        }
        self.scratch_lists = lists;
        self.busiest = self.compute_busiest();
    }

    /// Local search until no move improves, or the budget ends.
    pub(crate) fn run(&mut self, budget: Budget<'_>) -> End {
        loop {
            let mut improved = false;
            if self.excess(self.busiest()) > 0.0 {
                match self.repair_pass(budget) {
                    Some(end) => return end,
                    None => improved |= self.last_pass_improved,
                }
            }
            match self.traffic_pass(budget) {
                Some(end) => return end,
                None => improved |= self.last_pass_improved,
            }
            if !improved {
                return End::Converged;
            }
        }
    }

    fn out_of_budget(&self, budget: Budget<'_>) -> Option<End> {
        if self.steps >= budget.steps {
            return Some(End::Steps);
        }
        if self.steps % 64 == 0 && budget.cap.passed() {
            return Some(End::Time);
        }
        None
    }
}

/// How many of the best traffic moves of a target are tried for balance.
const TRIES_PER_TARGET: usize = 6;

impl State<'_, '_> {
    /// One pass over the (expert, node) targets by tokens, heaviest first: bring a replica of the
    /// expert into the node by replacing a spare replica there or by a swap.
    fn traffic_pass(&mut self, budget: Budget<'_>) -> Option<End> {
        self.last_pass_improved = false;
        let (e_count, k) = (self.ctx.experts(), self.ctx.nodes());
        let mut targets: Vec<(usize, usize)> = (0..e_count)
            .flat_map(|e| (0..k).map(move |n| (e, n)))
            .filter(|&(e, n)| self.in_node[e * k + n] == 0 && self.ctx.by_node[n][e] > 0.0)
            .filter(|&(e, n)| self.allowed(e, n))
            .collect();
        targets.sort_by(|a, b| {
            self.ctx.by_node[b.1][b.0]
                .total_cmp(&self.ctx.by_node[a.1][a.0])
                .then(a.cmp(b))
        });
        let mut cands: Vec<Move> = Vec::new();
        for (e, n) in targets {
            if budget.cap.passed() {
                return Some(End::Time);
            }
            if self.in_node[e * k + n] != 0 {
                continue;
            }
            cands.clear();
            let sources: Vec<Option<usize>> = std::iter::once(None)
                .chain(self.slots_holding(e).into_iter().map(Some))
                .collect();
            for &slot in &self.slots_of_node[n] {
                for &swap_from in &sources {
                    if !self.valid(slot, e, swap_from) {
                        continue;
                    }
                    let d = self.traffic_delta(slot, e, swap_from);
                    if d < 0.0 {
                        cands.push(Move {
                            slot,
                            incoming: e,
                            swap_from,
                            traffic_delta: d,
                        });
                    }
                }
            }
            cands.sort_by(|a, b| {
                a.traffic_delta
                    .total_cmp(&b.traffic_delta)
                    .then(a.slot.cmp(&b.slot))
            });
            for mv in cands
                .iter()
                .take(TRIES_PER_TARGET)
                .copied()
                .collect::<Vec<_>>()
            {
                if let Some(end) = self.out_of_budget(budget) {
                    return Some(end);
                }
                if self.try_move(&mv) {
                    self.last_pass_improved = true;
                    break;
                }
            }
        }
        None
    }

    /// Swaps that lower the busiest GPU: each slot of the busiest GPU against every other slot.
    fn repair_pass(&mut self, budget: Budget<'_>) -> Option<End> {
        self.last_pass_improved = false;
        let g = self.ctx.gpus();
        for _ in 0..4 * g {
            let busiest_gpu = (0..g)
                .max_by(|&a, &b| {
                    (self.load[a] / self.ctx.speed[a])
                        .total_cmp(&(self.load[b] / self.ctx.speed[b]))
                })
                .unwrap_or(0);
            let mut moved = false;
            let hot: Vec<usize> = self.ctx.cluster.slot_range(busiest_gpu).collect();
            'outer: for &slot in &hot {
                for other in 0..self.map.len() {
                    if self.gpu_of_slot[other] == busiest_gpu {
                        continue;
                    }
                    if let Some(end) = self.out_of_budget(budget) {
                        return Some(end);
                    }
                    let incoming = self.map[other];
                    let swap = if self.valid(slot, incoming, Some(other)) {
                        Some(Some(other))
                    } else if self.valid(other, self.map[slot], None) {
                        // Give the hot slot's expert a replica elsewhere instead.
                        None
                    } else {
                        continue;
                    };
                    let mv = match swap {
                        Some(from) => Move {
                            slot,
                            incoming,
                            swap_from: from,
                            traffic_delta: 0.0,
                        },
                        None => Move {
                            slot: other,
                            incoming: self.map[slot],
                            swap_from: None,
                            traffic_delta: 0.0,
                        },
                    };
                    if self.try_move(&mv) {
                        self.last_pass_improved = true;
                        moved = true;
                        break 'outer;
                    }
                }
            }
            if !moved || self.excess(self.busiest()) <= 0.0 {
                break;
            }
        }
        None
    }

    fn slots_holding(&self, e: usize) -> Vec<usize> {
        self.replicas[e]
            .iter()
            .flat_map(|&gpu| {
                self.ctx
                    .cluster
                    .slot_range(gpu)
                    .filter(|&s| self.map[s] == e)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

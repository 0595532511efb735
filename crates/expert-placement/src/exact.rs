//! Exact placement by branch and bound over replica counts and GPU sets, for small instances.

use crate::model::PlacementCluster;
use crate::options::{Budget, Deadline};
use crate::tolerance::REL_EPS;

/// Largest expert count [`crate::PlacementAlgorithm::Exact`] accepts.
pub const PLACEMENT_EXACT_MAX_EXPERTS: usize = 16;

/// Largest GPU count [`crate::PlacementAlgorithm::Exact`] accepts.
pub const PLACEMENT_EXACT_MAX_GPUS: usize = 16;

/// Search steps [`crate::PlacementAlgorithm::Exact`] may take before giving up by default (the
/// same as [`crate::DEFAULT_EXACT_SEARCH_STEPS`]; [`crate::PlacementOptions`] sets another).
pub const PLACEMENT_EXACT_NODE_BUDGET: usize = 20_000_000;

/// Steps between two looks at the clock.
const CLOCK_EVERY: u64 = 4096;

/// What a branch and bound run found.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// A placement strictly better than the incumbent, if one was found.
    pub(crate) map: Option<Vec<usize>>,
    /// Whether the search finished, proving `value` optimal up to the relative tolerance.
    pub(crate) proven: bool,
}

/// Searches for a placement with maximum GPU load below `incumbent`.
///
/// Experts are placed heaviest first. For each, the search picks a replica count `c` and a set of
/// `c` GPUs with free slots; GPUs with equal load, free slots and speed are interchangeable, so
/// only how many of each such class is chosen matters. Pruned: any GPU reaching the incumbent;
/// remaining work exceeding the remaining capacity below the incumbent; replica counts the
/// remaining slots cannot give; a GPU with more free slots than experts left.
pub(crate) fn branch_and_bound(
    w: &[f64],
    cluster: &PlacementCluster,
    incumbent: f64,
    budget: &Budget,
) -> Outcome {
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
    let mut suffix = vec![0.0; w.len() + 1];
    for i in (0..w.len()).rev() {
        suffix[i] = suffix[i + 1] + w[order[i]];
    }
    let gpus = cluster.gpus();
    let mut search = Search {
        w,
        order,
        suffix,
        speed: cluster.speed_of_gpu().to_vec(),
        max_speed: cluster.speed_of_gpu().iter().copied().fold(0.0, f64::max),
        load: vec![0.0; gpus],
        free: cluster.slots_of_gpu().to_vec(),
        on: vec![Vec::new(); gpus],
        best: incumbent,
        best_map: None,
        nodes: 0,
        budget: budget.steps,
        deadline: budget.deadline(),
        aborted: false,
    };
    search.expert(0);
    Outcome {
        map: search.best_map,
        proven: !search.aborted,
    }
}

struct Search<'a> {
    w: &'a [f64],
    order: Vec<usize>,
    /// `suffix[i]`: total load of the experts from position `i` on.
    suffix: Vec<f64>,
    speed: Vec<f64>,
    max_speed: f64,
    load: Vec<f64>,
    free: Vec<usize>,
    on: Vec<Vec<usize>>,
    best: f64,
    best_map: Option<Vec<usize>>,
    nodes: u64,
    budget: u64,
    deadline: Deadline,
    aborted: bool,
}

impl Search<'_> {
    /// Counts one step; `true` when the budget (steps or time) is spent.
    fn step(&mut self) -> bool {
        if self.aborted {
            return true;
        }
        self.nodes += 1;
        let late = self.nodes % CLOCK_EVERY == 0 && self.deadline.passed();
        if self.nodes > self.budget || late {
            self.aborted = true;
        }
        self.aborted
    }

    /// The largest load a GPU may reach in a strictly better placement.
    fn ceiling(&self) -> f64 {
        self.best * (1.0 - REL_EPS)
    }

    /// Places the expert at position `i` of the order (and the rest, recursively).
    fn expert(&mut self, i: usize) {
        if self.step() {
            return;
        }
        if i == self.order.len() {
            self.record();
            return;
        }
        let Some((lo, hi)) = self.count_range(i) else {
            return;
        };
        let e = self.order[i];
        let rest = self.order.len() - i - 1;
        for c in lo..=hi {
            let p = self.w[e] / c as f64;
            let ceiling = self.ceiling();
            // GPUs that can take a replica, lightest first; a GPU with one free slot per
            // remaining expert (this one included) must take one now.
            let mut eligible: Vec<usize> = (0..self.load.len())
                .filter(|&g| self.free[g] > 0 && self.load[g] + p / self.speed[g] < ceiling)
                .collect();
            let forced = (0..self.load.len())
                .filter(|&g| self.free[g] == rest + 1)
                .count();
            if eligible
                .iter()
                .filter(|&&g| self.free[g] == rest + 1)
                .count()
                < forced
                || eligible.len() < c
            {
                continue;
            }
            eligible.sort_by(|&a, &b| {
                self.key(a)
                    .partial_cmp(&self.key(b))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let classes = self.classes(&eligible, rest);
            let mut chosen = Vec::with_capacity(c);
            self.choose(i, p, &classes, 0, c, &mut chosen);
            if self.aborted {
                return;
            }
        }
    }

    /// Sort key of a GPU: load, then free slots, then speed.
    fn key(&self, g: usize) -> (f64, usize, f64) {
        (self.load[g], self.free[g], self.speed[g])
    }

    /// Groups eligible GPUs (sorted by [`Search::key`]) into interchangeable classes, each with
    /// whether it is forced (all its GPUs must be chosen).
    fn classes(&self, eligible: &[usize], rest: usize) -> Vec<(Vec<usize>, bool)> {
        let mut out: Vec<(Vec<usize>, bool)> = Vec::new();
        for &g in eligible {
            match out.last_mut() {
                Some((members, _)) if self.key(members[0]) == self.key(g) => members.push(g),
                _ => out.push((vec![g], self.free[g] == rest + 1)),
            }
        }
        out
    }

    /// Chooses how many GPUs of each class from `class` on receive a replica of load `p`
    /// (`left` still to choose), then recurses to the next expert.
    fn choose(
        &mut self,
        i: usize,
        p: f64,
        classes: &[(Vec<usize>, bool)],
        class: usize,
        left: usize,
        chosen: &mut Vec<usize>,
    ) {
        if self.step() {
            return;
        }
        if left == 0 {
            if classes[class..].iter().any(|(_, forced)| *forced) {
                return;
            }
            self.descend(i, p, chosen);
            return;
        }
        let Some((members, forced)) = classes.get(class) else {
            return;
        };
        let capacity_after: usize = classes[class + 1..].iter().map(|(m, _)| m.len()).sum();
        let most = left.min(members.len());
        let least = if *forced {
            members.len()
        } else {
            left.saturating_sub(capacity_after)
        };
        if least > most {
            return;
        }
        // Lightest classes first, as many of them as possible.
        for k in (least..=most).rev() {
            chosen.extend_from_slice(&members[..k]);
            self.choose(i, p, classes, class + 1, left - k, chosen);
            chosen.truncate(chosen.len() - k);
        }
    }

    /// Puts a replica of load `p` of expert `order[i]` on every GPU of `chosen` and recurses.
    fn descend(&mut self, i: usize, p: f64, chosen: &[usize]) {
        let e = self.order[i];
        for &g in chosen {
            self.load[g] += p / self.speed[g];
            self.free[g] -= 1;
            self.on[g].push(e);
        }
        if self.capacity_suffices(i + 1) {
            self.expert(i + 1);
        }
        for &g in chosen {
            self.on[g].pop();
            self.free[g] += 1;
            self.load[g] -= p / self.speed[g];
        }
    }

    /// Whether the work from position `i` on fits under the ceiling on GPUs with free slots.
    fn capacity_suffices(&self, i: usize) -> bool {
        let ceiling = self.ceiling();
        let room: f64 = (0..self.load.len())
            .filter(|&g| self.free[g] > 0)
            .map(|g| (ceiling - self.load[g]).max(0.0) * self.speed[g])
            .sum();
        room >= self.suffix[i] * (1.0 - 1e-9)
    }

    /// The replica counts expert `order[i]` may take, or `None` when none is feasible.
    fn count_range(&self, i: usize) -> Option<(usize, usize)> {
        let rest = self.order.len() - i - 1;
        let open = self.free.iter().filter(|&&f| f > 0).count();
        let free_total: usize = self.free.iter().sum();
        if self.free.iter().any(|&f| f > rest + 1) {
            return None;
        }
        let ceiling = self.ceiling();
        // Fewest replicas each remaining expert needs to stay below the ceiling anywhere.
        let need = |e: usize| -> usize {
            let per = ceiling * self.max_speed;
            if per <= 0.0 {
                return usize::MAX / 4;
            }
            // `w / per >= 0`; the saturating conversion turns a huge quotient into "unbounded"
            // (and `saturating_add` keeps it there).
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let whole = (self.w[e] / per).floor() as usize;
            whole.saturating_add(1)
        };
        let others = self.order[i + 1..]
            .iter()
            .fold(0usize, |acc, &e| acc.saturating_add(need(e)));
        let lo = need(self.order[i]);
        let hi = open.min(free_total.checked_sub(others)?);
        (lo <= hi).then_some((lo, hi))
    }

    /// Records the current complete placement if it beats the incumbent.
    fn record(&mut self) {
        let value = self.load.iter().copied().fold(0.0, f64::max);
        if value < self.ceiling() {
            self.best = value;
            self.best_map = Some(self.on.concat());
        }
    }
}

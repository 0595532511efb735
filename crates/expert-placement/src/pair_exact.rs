//! An exact search for GPUs with two slots each: the least busiest GPU over all replica counts,
//! proved by branch and bound on Hall's condition, not found by local moves.
//!
//! With two slots per GPU (one speed) a placement is a pairing of the `2G` replicas, and for
//! given counts the best pairing is the sorted one (see [`crate::count_search`]). Ignoring the
//! rule that two replicas of one expert may not share a GPU, "is there a count vector whose
//! pairing keeps every GPU within `T`" has a finite form:
//!
//! * a replica is *big* when its load is above `T / 2`; an expert's replicas are all big or all
//!   small (they have one load), and two big replicas cannot share a GPU;
//! * a big replica of load `b` needs a small partner of load at most `T - b`, and these
//!   neighbourhoods are nested, so a pairing exists exactly when, for every big load `v`, the
//!   big replicas of load at least `v` are no more than the small replicas of load at most
//!   `T - v` (Hall's condition). Checking it at every *candidate* big load (every `w_e / c` above
//!   `T / 2`) is equivalent, which makes the constraints independent of the choice.
//!
//! Each expert then chooses a count: big counts add demand to a suffix of the constraints
//! (sorted by candidate load, heaviest first), small counts add supply to a suffix (the fewest
//! replicas for each distinct suffix suffice: slots left over at the end go to the small expert
//! whose suffix starts first, which only adds supply). A depth-first search over the experts,
//! heaviest first, prunes a partial choice when, at some constraint, even every remaining slot
//! cannot cover the deficit: the remaining experts too heavy to reach that constraint within
//! the slots left (a fractional knapsack decides which could) waste their minimum counts.
//! Experts of equal load choose in order (symmetry), and failed states (constraint slacks,
//! remaining room, slots used) are remembered.
//!
//! Each complete choice is then placed without two replicas of an expert on a GPU
//! ([`realize`]); one that meets the relaxation but cannot be placed is skipped, and the test
//! then proves nothing.
//!
//! [`minimize`] bisects `T` between a certified lower bound and the plan's value: an infeasible
//! `T` is a lower bound on the optimum (the relaxation only drops a rule); a feasible one gives
//! a placement below the plan. It was written from the problem statement,
//! like the independent oracle `scripts/placement_oracle.py --solver pairs` (an integer
//! programme over the same condition), which it agrees with on the seeded campaign
//! (`docs/reproduction.md`).

use std::collections::HashMap;

use crate::bisection::{Minimized, Probe};
use crate::options::Deadline;
use crate::tolerance::REL_EPS;
use crate::word_hash::WordHash;

/// Most GPUs on which [`crate::optimal`] runs the search: beyond, on the shapes tried (256
/// experts on 160 GPUs), the default budget ran out without a lower plan or a higher bound,
/// adding about 0.4 s a layer.
pub(crate) const PAIR_EXACT_MAX_GPUS: usize = 64;

/// Elements a node may touch per step of the budget (see [`Search::descend`]).
const WORK_PER_STEP: u64 = 128;

/// Relative tolerance of the comparisons against `T` (integer loads divided by counts).
const TOL: f64 = 1e-12;

/// Bytes of remembered failed states one feasibility test may hold (keys and entries), so that
/// the memory is fixed whatever the budget.
const MEMO_BYTES: usize = 32 << 20;

/// Entries of the failed-state table reserved when a test starts (its control bytes, 128 KiB,
/// are written at once; its slots only when used).
const MEMO_RESERVE: usize = 1 << 17;

/// One choice of an expert: `count` replicas, big (demand) or small (supply), acting on the
/// constraints from `start` on.
#[derive(Debug, Clone, Copy)]
struct Choice {
    count: usize,
    big: bool,
    start: usize,
}

/// The answer of one feasibility test.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Feasibility {
    /// Counts (sum `2G`, each in `1..=G`) and a placement of them (slot-ordered, no two
    /// replicas of an expert on a GPU) with every GPU within `T`.
    Feasible(Vec<usize>, Vec<usize>),
    /// Proved: no count vector's pairing is within `T`, even with replicas of one expert
    /// sharing a GPU.
    Infeasible,
    /// No placement found: some count vectors met the relaxation but could not be placed
    /// without two replicas of one expert on a GPU (no proof either way).
    Unrealized,
    /// The step budget or the deadline ended the search first.
    Stopped,
}

/// `x` as a signed count (every count here is at most the slot count, far below `i64::MAX`).
fn signed(x: usize) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

/// The least largest pair sum of the replicas of `counts` (the sorted pairing; same-expert
/// pairs allowed). `O(R log R)` for `R = sum(counts)`.
pub(crate) fn sorted_pairing(w: &[f64], counts: &[usize]) -> f64 {
    let mut items: Vec<f64> = counts
        .iter()
        .enumerate()
        .flat_map(|(e, &c)| std::iter::repeat_n(w[e] / c.max(1) as f64, c))
        .collect();
    items.sort_by(f64::total_cmp);
    let n = items.len();
    (0..n / 2)
        .map(|i| items[i] + items[n - 1 - i])
        .fold(0.0, f64::max)
}

/// A placement of `counts` on `gpus` GPUs of two slots (GPU `g` holds slots `2g` and `2g + 1`)
/// with every GPU within `t` and no two replicas of one expert on a GPU, or `None`.
///
/// Two big replicas (above `t / 2`) never share a GPU, so a same-expert pair can only be two
/// small ones. The big replicas take partners heaviest first (their partner sets are nested,
/// so any eligible choice keeps Hall's condition), each the eligible small replica of the
/// expert with the most replicas left; the small replicas left then pair without conflict
/// when no expert holds more than half of them, most numerous experts first.
/// `O(R (E + log R))` time for `R = 2G` replicas, `O(R)` memory.
pub(crate) fn realize(w: &[f64], counts: &[usize], gpus: usize, t: f64) -> Option<Vec<usize>> {
    let total: usize = counts.iter().sum();
    if total != 2 * gpus || counts.contains(&0) || counts.len() != w.len() {
        return None;
    }
    let load = |e: usize| w[e] / counts[e] as f64;
    let limit = t * (1.0 + TOL);
    let mut big: Vec<usize> = Vec::new();
    let mut left = vec![0usize; w.len()];
    for (e, &c) in counts.iter().enumerate() {
        if load(e) > t / 2.0 * (1.0 + TOL) {
            big.extend(std::iter::repeat_n(e, c));
        } else {
            left[e] = c;
        }
    }
    big.sort_by(|&a, &b| load(b).total_cmp(&load(a)).then(a.cmp(&b)));
    let mut map = Vec::with_capacity(total);
    for &b in &big {
        let partner = (0..w.len())
            .filter(|&e| left[e] > 0 && load(b) + load(e) <= limit)
            .max_by(|&x, &y| left[x].cmp(&left[y]).then(y.cmp(&x)))?;
        left[partner] -= 1;
        map.extend([b, partner]);
    }
    // Pair the rest: always the two experts with the most replicas left.
    loop {
        let mut first: Option<usize> = None;
        let mut second: Option<usize> = None;
        for e in 0..w.len() {
            if left[e] == 0 {
                continue;
            }
            if first.is_none_or(|f| left[e] > left[f]) {
                second = first;
                first = Some(e);
            } else if second.is_none_or(|s| left[e] > left[s]) {
                second = Some(e);
            }
        }
        match (first, second) {
            (None, _) => break,
            (Some(a), Some(b)) => {
                left[a] -= 1;
                left[b] -= 1;
                map.extend([a, b]);
            }
            (Some(_), None) => return None,
        }
    }
    (map.len() == total).then_some(map)
}

/// [`crate::bisection::minimize`] with the 2-slot test: between `lower` (certified) and
/// `value` (a plan's busiest GPU), spending at most `steps` steps in all (a node costs one, plus
/// one per [`WORK_PER_STEP`] elements it touches). A test that finds a lower placement hands
/// its counts to `polish`, a local search from them (it reached 104.2 from counts of 104.93 on
/// case 108, whose optimum is 103.8), and reports the better of the two.
///
/// `O(steps * (C + E))` time for `C` constraints; memory `O(E * C)` plus at most
/// [`MEMO_BYTES`] per test.
// The search's inputs, its hint and its two limits: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn minimize(
    w: &[f64],
    gpus: usize,
    lower: f64,
    value: f64,
    counts: &[usize],
    polish: &mut dyn FnMut(&[usize]) -> Option<Vec<usize>>,
    steps: &mut u64,
    deadline: &Deadline,
) -> Minimized {
    let mut test = |t: f64, hi: f64, near: &[usize], allowed: &mut u64| -> Probe {
        match feasible(w, gpus, t, near, allowed, deadline) {
            Feasibility::Infeasible => Probe::Infeasible,
            Feasibility::Unrealized | Feasibility::Stopped => Probe::Unsettled,
            Feasibility::Feasible(counts, map) => {
                let v = pair_max(w, &counts, &map);
                if v < hi * (1.0 - REL_EPS)
                    && let Some(better) = polish(&counts)
                {
                    let value = sorted_pairing(w, &better);
                    if value < v * (1.0 - REL_EPS)
                        && let Some(polished) = realize(w, &better, gpus, value)
                    {
                        let pv = pair_max(w, &better, &polished);
                        if pv < v * (1.0 - REL_EPS) {
                            return Probe::Found(polished, better, pv);
                        }
                    }
                }
                Probe::Found(map, counts, v)
            }
        }
    };
    crate::bisection::minimize(lower, value, counts, steps, deadline, &mut test)
}

/// The busiest GPU of a slot-ordered 2-slot map under the even split of `counts`.
fn pair_max(w: &[f64], counts: &[usize], map: &[usize]) -> f64 {
    map.chunks(2)
        .map(|p| p.iter().map(|&e| w[e] / counts[e] as f64).sum::<f64>())
        .fold(0.0, f64::max)
}

/// Whether some count vector (sum `2G`, each count in `1..=G`) has a sorted pairing within `t`,
/// searched within `steps` nodes (decremented), trying for each expert first the counts nearest
/// `near[e]` (ignored unless it has one count per expert). The answer's kind is the same in any
/// order (every option is still tried); only which feasible counts are found first, and how
/// soon, depend on it.
///
/// `O(steps * (C + E))` time for `C` candidate big loads; memory `O(E * C)` and at most
/// [`MEMO_BYTES`] of remembered states.
pub(crate) fn feasible(
    w: &[f64],
    gpus: usize,
    t: f64,
    near: &[usize],
    steps: &mut u64,
    deadline: &Deadline,
) -> Feasibility {
    match Search::new(w, gpus, t, near) {
        None => Feasibility::Infeasible,
        Some(mut search) => search.run(steps, deadline),
    }
}

/// The depth-first search of one feasibility test.
struct Search<'a> {
    w: &'a [f64],
    t: f64,
    /// The counts and placement of the complete choice found.
    found: Option<(Vec<usize>, Vec<usize>)>,
    /// Whether a complete choice met the relaxation but could not be placed without two
    /// replicas of an expert on a GPU.
    rejected: bool,
    gpus: usize,
    slots: usize,
    /// Experts, heaviest first.
    order: Vec<usize>,
    /// Whether expert `order[i]` has the load of `order[i - 1]` (it then chooses no earlier
    /// option, breaking the symmetry).
    tie: Vec<bool>,
    options: Vec<Vec<Choice>>,
    /// Fewest replicas of `order[i]` over its options.
    min_count: Vec<usize>,
    /// `suffix_min[i]`: the sum of `min_count[i..]`.
    suffix_min: Vec<usize>,
    /// `need[i][j]`: fewest replicas with which `order[i]`, as a small expert, supplies
    /// constraint `j` (`usize::MAX` when it cannot).
    need: Vec<Vec<usize>>,
    /// Supply minus demand at each constraint.
    slack: Vec<i64>,
    /// Spare room (`G - count`) of the chosen small experts that supply each constraint.
    room: Vec<i64>,
    /// Spare room of all chosen small experts.
    room_total: i64,
    chosen: Vec<usize>,
    failed: HashMap<Vec<i64>, usize, WordHash>,
    /// The key of the node at each depth ([`Search::key`]), built in place: a node allocates
    /// only when its failure is remembered.
    keys: Vec<Vec<i64>>,
    memo_bytes: usize,
    /// [`Search::capacity_row`] by position and slots left.
    capacity: HashMap<(usize, usize), Vec<i64>, WordHash>,
    capacity_bytes: usize,
    /// Nodes visited (the deadline is read every 4096).
    nodes: u64,
    /// Scratch for the knapsack of the bound.
    items: Vec<(f64, usize, usize)>,
}

impl<'a> Search<'a> {
    fn new(w: &'a [f64], gpus: usize, t: f64, near: &[usize]) -> Option<Self> {
        let slots = gpus.checked_mul(2)?;
        let experts = w.len();
        if experts == 0 || experts > slots || t.is_nan() || t <= 0.0 {
            return None;
        }
        let half = t / 2.0;
        let is_big = |v: f64| v > half * (1.0 + TOL);
        let fits = |v: f64| v <= t * (1.0 + TOL);
        // Candidate big loads, heaviest first: the constraints.
        let mut loads: Vec<f64> = Vec::new();
        for &x in w {
            for c in 1..=gpus {
                let v = x / c as f64;
                if !is_big(v) {
                    break;
                }
                if fits(v) {
                    loads.push(v);
                }
            }
        }
        loads.sort_by(|a, b| b.total_cmp(a));
        loads.dedup_by(|a, b| (*a - *b).abs() <= TOL * t);
        let partner: Vec<f64> = loads.iter().map(|v| t - v).collect();
        let constraints = loads.len();
        // First constraint a big replica of load `v` counts in (those with load <= v).
        let demand_start = |v: f64| {
            loads
                .iter()
                .position(|&l| l <= v * (1.0 + TOL))
                .unwrap_or(constraints)
        };
        // First constraint a small replica of load `v` may partner (partner limit >= v).
        let supply_start = |v: f64| {
            partner
                .iter()
                .position(|&p| v <= p + TOL * t)
                .unwrap_or(constraints)
        };
        let mut order: Vec<usize> = (0..experts).collect();
        order.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
        let mut options: Vec<Vec<Choice>> = Vec::with_capacity(experts);
        for (i, &e) in order.iter().enumerate() {
            // Experts of equal load have the same options in the same order, which the
            // symmetry rule (no earlier option than the predecessor's) needs.
            if i > 0 && w[e] == w[order[i - 1]] {
                options.push(options[i - 1].clone());
                continue;
            }
            let mut opts = Vec::new();
            let mut c = 1;
            while c <= gpus {
                let v = w[e] / c as f64;
                if !is_big(v) {
                    break;
                }
                if fits(v) {
                    opts.push(Choice {
                        count: c,
                        big: true,
                        start: demand_start(v),
                    });
                }
                c += 1;
            }
            let mut last = usize::MAX;
            while c <= gpus {
                let start = supply_start(w[e] / c as f64);
                if start != last {
                    opts.push(Choice {
                        count: c,
                        big: false,
                        start,
                    });
                    last = start;
                }
                if start == 0 {
                    break;
                }
                c += 1;
            }
            if opts.is_empty() {
                return None;
            }
            if near.len() == experts {
                opts.sort_by_key(|c| (c.count.abs_diff(near[e]), c.count));
            }
            options.push(opts);
        }
        let min_count: Vec<usize> = options
            .iter()
            .map(|o| o.iter().map(|c| c.count).min().unwrap_or(0))
            .collect();
        let mut suffix_min = vec![0; experts + 1];
        for i in (0..experts).rev() {
            suffix_min[i] = suffix_min[i + 1] + min_count[i];
        }
        if suffix_min[0] > slots {
            return None;
        }
        let need = options
            .iter()
            .map(|o| {
                (0..constraints)
                    .map(|j| {
                        o.iter()
                            .filter(|c| !c.big && c.start <= j)
                            .map(|c| c.count)
                            .min()
                            .unwrap_or(usize::MAX)
                    })
                    .collect()
            })
            .collect();
        let tie = (0..experts)
            .map(|i| i > 0 && w[order[i]] == w[order[i - 1]])
            .collect();
        Some(Self {
            w,
            t,
            found: None,
            rejected: false,
            gpus,
            slots,
            order,
            tie,
            options,
            min_count,
            suffix_min,
            need,
            slack: vec![0; constraints],
            room: vec![0; constraints],
            room_total: 0,
            chosen: vec![0; experts],
            // Room for the first entries up front: growing the table from empty, once per
            // tested target, rehashed it a dozen times (14 % of the search's time).
            failed: HashMap::with_capacity_and_hasher(
                (MEMO_BYTES / (16 * constraints + 80)).min(MEMO_RESERVE),
                WordHash::default(),
            ),
            keys: Vec::new(),
            memo_bytes: 0,
            items: Vec::new(),
            capacity: HashMap::default(),
            capacity_bytes: 0,
            nodes: 0,
        })
    }

    fn run(&mut self, steps: &mut u64, deadline: &Deadline) -> Feasibility {
        match self.descend(0, 0, steps, deadline) {
            Some(true) => match self.found.take() {
                Some((counts, map)) => Feasibility::Feasible(counts, map),
                None => Feasibility::Stopped,
            },
            // A leaf the rule rejected voids the proof: the remembered failures then cover
            // count vectors that were never tried.
            Some(false) if self.rejected => Feasibility::Unrealized,
            Some(false) => Feasibility::Infeasible,
            None => Feasibility::Stopped,
        }
    }

    /// The counts of the current complete choice, leftover slots given to the small experts
    /// whose supply starts first.
    fn leaf_counts(&self, used: usize) -> Vec<usize> {
        let mut counts = vec![0; self.order.len()];
        let mut smalls: Vec<(usize, usize)> = Vec::new();
        for (i, &e) in self.order.iter().enumerate() {
            let choice = self.options[i][self.chosen[i]];
            counts[e] = choice.count;
            if !choice.big {
                smalls.push((choice.start, e));
            }
        }
        smalls.sort_unstable();
        let mut left = self.slots - used;
        for (_, e) in smalls {
            let add = left.min(self.gpus - counts[e]);
            counts[e] += add;
            left -= add;
        }
        counts
    }

    /// Whether the experts from `order[i]` on can complete the choice (`None`: stopped).
    fn descend(
        &mut self,
        i: usize,
        used: usize,
        steps: &mut u64,
        deadline: &Deadline,
    ) -> Option<bool> {
        self.nodes += 1;
        if *steps == 0 || (self.nodes & 0xfff == 0 && deadline.passed()) {
            return None;
        }
        let experts = self.order.len();
        let left = self.slots - used;
        if i == experts {
            // Leftover slots go to the chosen small experts whose supply starts first: each
            // constraint gains the room before it, up to the leftover.
            let left = signed(left);
            let ok = self.room_total >= left
                && self
                    .slack
                    .iter()
                    .zip(&self.room)
                    .all(|(&s, &r)| s + r.min(left) >= 0);
            if !ok {
                return Some(false);
            }
            // The relaxation holds; the placement must also keep replicas of one expert apart.
            let counts = self.leaf_counts(used);
            // At the counts' own pairing value first, the loosest target second.
            let tight = sorted_pairing(self.w, &counts);
            let map = realize(self.w, &counts, self.gpus, tight)
                .or_else(|| realize(self.w, &counts, self.gpus, self.t));
            return Some(match map {
                Some(map) => {
                    self.found = Some((counts, map));
                    true
                }
                None => {
                    self.rejected = true;
                    false
                }
            });
        }
        let (holds, work) = self.bound_holds(i, left);
        // A node costs one step plus one per WORK_PER_STEP elements it touched (its constraints
        // twice, the bound's knapsacks), so large instances stop at a like amount of time.
        let work = (2 * self.slack.len() + work) as u64;
        *steps = steps.saturating_sub(1 + work / WORK_PER_STEP);
        if !holds {
            return Some(false);
        }
        let mut key = self.take_key(i);
        self.key(i, left, &mut key);
        if self.failed.get(&key[..]).is_some_and(|&u| u <= used) {
            self.keys[i] = key;
            return Some(false);
        }
        let from = if self.tie[i] { self.chosen[i - 1] } else { 0 };
        for k in from..self.options[i].len() {
            let choice = self.options[i][k];
            if used + choice.count + self.suffix_min[i + 1] > self.slots {
                continue;
            }
            self.chosen[i] = k;
            self.apply(choice, 1);
            let found = self.descend(i + 1, used + choice.count, steps, deadline);
            self.apply(choice, -1);
            match found {
                Some(true) => return Some(true),
                Some(false) => {}
                None => return None,
            }
        }
        self.remember(&key, used);
        self.keys[i] = key;
        Some(false)
    }

    fn apply(&mut self, choice: Choice, sign: i64) {
        let count = signed(choice.count);
        let (delta, room) = if choice.big {
            (-count, 0)
        } else {
            (count, signed(self.gpus - choice.count))
        };
        self.room_total += sign * room;
        for j in choice.start..self.slack.len() {
            self.slack[j] += sign * delta;
            self.room[j] += sign * room;
        }
    }

    /// Whether every constraint in deficit can still be covered by the slots `left` (the
    /// remaining experts' minimum counts included), and the elements this touched.
    fn bound_holds(&mut self, i: usize, left: usize) -> (bool, usize) {
        let mut work = self.slack.len();
        if self.slack.iter().all(|&s| s >= 0) {
            return (true, work);
        }
        if self.slack.iter().any(|&s| -s > signed(left)) {
            return (false, work);
        }
        // The capacities depend on the position and the slots left only: computed once each.
        if !self.capacity.contains_key(&(i, left)) {
            let row = self.capacity_row(i, left);
            work += 2 * row.len() * (self.order.len() - i);
            let bytes = row.len() * 8 + 64;
            if self.capacity_bytes + bytes > MEMO_BYTES {
                let ok = self.slack.iter().zip(&row).all(|(&s, &c)| -s <= c);
                return (ok, work);
            }
            self.capacity_bytes += bytes;
            self.capacity.insert((i, left), row);
        }
        let ok = self
            .capacity
            .get(&(i, left))
            .is_some_and(|row| self.slack.iter().zip(row).all(|(&s, &c)| -s <= c));
        (ok, work)
    }

    /// For each constraint, the most supply the experts from `order[i]` on can add with the
    /// slots `left`: every slot, less the minimum counts of the experts that cannot reach the
    /// constraint within the spare slots, chosen by a fractional knapsack (an upper bound).
    fn capacity_row(&mut self, i: usize, left: usize) -> Vec<i64> {
        let spare = left.saturating_sub(self.suffix_min[i]);
        let mut row = Vec::with_capacity(self.slack.len());
        for j in 0..self.slack.len() {
            self.items.clear();
            let mut waste = 0usize;
            for k in i..self.order.len() {
                let need = self.need[k][j];
                let min = self.min_count[k];
                if need <= min {
                    continue;
                }
                waste += min;
                if need != usize::MAX && need - min <= spare {
                    self.items
                        .push((min as f64 / (need - min) as f64, need - min, min));
                }
            }
            self.items.sort_by(|a, b| b.0.total_cmp(&a.0));
            let mut cap = spare;
            let mut saved = 0.0;
            for &(_, extra, min) in &self.items {
                if extra <= cap {
                    cap -= extra;
                    saved += min as f64;
                } else {
                    saved += min as f64 * cap as f64 / extra as f64;
                    break;
                }
            }
            // The waste is an integer at least `waste - saved`; both are at most E * G.
            #[allow(clippy::cast_possible_truncation)]
            let wasted = (waste as f64 - saved - 1e-9).ceil().max(0.0) as i64;
            row.push(signed(left) - wasted);
        }
        row
    }

    /// The state a failure depends on: the position, the tie predecessor's choice, each
    /// constraint's slack and the room usable by the leftover (capped at the slots left).
    fn key(&self, i: usize, left: usize, key: &mut Vec<i64>) {
        key.clear();
        key.push(signed(i));
        key.push(if self.tie[i] {
            signed(self.chosen[i - 1])
        } else {
            -1
        });
        key.extend_from_slice(&self.slack);
        key.extend(self.room.iter().map(|&r| r.min(signed(left))));
    }

    /// The key buffer of depth `i`, taken out (and put back by the caller) so that the nodes
    /// below it can use theirs.
    fn take_key(&mut self, i: usize) -> Vec<i64> {
        if self.keys.len() <= i {
            self.keys.resize_with(i + 1, Vec::new);
        }
        std::mem::take(&mut self.keys[i])
    }

    fn remember(&mut self, key: &[i64], used: usize) {
        let bytes = key.len() * 8 + 64;
        if let Some(u) = self.failed.get_mut(key) {
            *u = (*u).min(used);
        } else if self.memo_bytes + bytes <= MEMO_BYTES {
            self.memo_bytes += bytes;
            self.failed.insert(key.to_vec(), used);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisection::PROOF_GAP;

    /// Every count vector (sum `2G`, each in `1..=G`) by recursion.
    fn all_counts(experts: usize, gpus: usize) -> Vec<Vec<usize>> {
        fn rec(
            e: usize,
            left: usize,
            gpus: usize,
            cur: &mut Vec<usize>,
            out: &mut Vec<Vec<usize>>,
        ) {
            if e == cur.len() {
                if left == 0 {
                    out.push(cur.clone());
                }
                return;
            }
            for c in 1..=gpus.min(left) {
                cur[e] = c;
                rec(e + 1, left - c, gpus, cur, out);
            }
        }
        let mut out = Vec::new();
        rec(0, 2 * gpus, gpus, &mut vec![0; experts], &mut out);
        out
    }

    /// The least `value` over every count vector.
    fn least(w: &[f64], gpus: usize, value: impl Fn(&[usize]) -> f64) -> f64 {
        all_counts(w.len(), gpus)
            .iter()
            .map(|c| value(c))
            .fold(f64::INFINITY, f64::min)
    }

    fn brute_force(w: &[f64], gpus: usize) -> f64 {
        least(w, gpus, |c| sorted_pairing(w, c))
    }

    /// The least busiest GPU of `counts` over every pairing without a same-expert pair.
    fn best_conflict_free(w: &[f64], counts: &[usize]) -> f64 {
        fn rec(items: &mut Vec<(usize, f64)>, worst: f64, best: &mut f64) {
            if worst >= *best {
                return;
            }
            let Some(a) = items.pop() else {
                *best = worst;
                return;
            };
            for k in 0..items.len() {
                if items[k].0 == a.0 {
                    continue;
                }
                let b = items.remove(k);
                rec(items, worst.max(a.1 + b.1), best);
                items.insert(k, b);
            }
            items.push(a);
        }
        let mut items: Vec<(usize, f64)> = counts
            .iter()
            .enumerate()
            .flat_map(|(e, &c)| std::iter::repeat_n((e, w[e] / c as f64), c))
            .collect();
        let mut best = f64::INFINITY;
        rec(&mut items, 0.0, &mut best);
        best
    }

    fn true_optimum(w: &[f64], gpus: usize) -> f64 {
        least(w, gpus, |c| best_conflict_free(w, c))
    }

    #[test]
    fn sorted_pairing_pairs_lightest_with_heaviest() {
        // Replicas 6, 6, 3, 1: pairs (6, 1) and (6, 3).
        assert_eq!(sorted_pairing(&[12.0, 3.0, 1.0], &[2, 1, 1]), 9.0);
    }

    #[test]
    fn minimize_equals_brute_force_on_small_instances() {
        let mut rng = comm_cost_model::seeded_rng(7, 0);
        let mut realized = 0;
        for case in 0..300 {
            use rand::RngExt;
            let gpus = rng.random_range(2..=4usize);
            let experts = rng.random_range(2..=(2 * gpus).min(6));
            let hot = case % 3 == 0;
            let w: Vec<f64> = (0..experts)
                .map(|e| {
                    if hot && e == 0 {
                        f64::from(rng.random_range(50..=200u32))
                    } else {
                        f64::from(rng.random_range(1..=30u32))
                    }
                })
                .collect();
            let relaxed = brute_force(&w, gpus);
            let optimum = true_optimum(&w, gpus);
            let start = w.iter().sum::<f64>() + 1.0;
            let mut steps = 1 << 20;
            let found = minimize(
                &w,
                gpus,
                0.0,
                start,
                &[],
                &mut |_| None,
                &mut steps,
                &Deadline::never(),
            );
            // The bound is valid.
            assert!(found.lower_bound <= relaxed * (1.0 + 1e-12), "case {case}");
            // Every map is valid and never below the true optimum.
            if let Some((map, value)) = &found.map {
                assert_eq!(map.len(), 2 * gpus);
                assert!(map.chunks(2).all(|p| p[0] != p[1]));
                assert!(*value >= optimum * (1.0 - 1e-12));
                assert!(
                    (pair_max(&w, &crate::plan::counts(map, experts), map) - value).abs() < 1e-9
                );
            }
            // Where the relaxation is tight the search reaches the optimum and proves it.
            if optimum <= relaxed * (1.0 + 1e-12) {
                let value = found.map.as_ref().map_or(f64::INFINITY, |m| m.1);
                assert!(
                    value <= optimum * (1.0 + 1e-9),
                    "case {case}: {value} vs {optimum} for {w:?} on {gpus}"
                );
                assert!(
                    found.lower_bound >= optimum * (1.0 - 1e-8),
                    "case {case}: {w:?}"
                );
                realized += 1;
            }
        }
        // The rule rarely binds on these shapes.
        assert!(realized >= 250, "{realized}");
    }

    #[test]
    fn the_counts_tried_first_change_no_answer_kind() {
        // The order of the options only decides which feasible counts are found first.
        let mut rng = comm_cost_model::seeded_rng(11, 0);
        let mut feasible_seen = 0;
        for case in 0..200 {
            use rand::RngExt;
            let gpus = rng.random_range(2..=5usize);
            let experts = rng.random_range(2..=(2 * gpus).min(7));
            let w: Vec<f64> = (0..experts)
                .map(|e| {
                    if case % 2 == 0 && e == 0 {
                        f64::from(rng.random_range(40..=150u32))
                    } else {
                        f64::from(rng.random_range(1..=30u32))
                    }
                })
                .collect();
            // Any count vector as the hint (sum `2G`, each in `1..=G`).
            let mut near = vec![1usize; experts];
            for _ in experts..2 * gpus {
                let e = rng.random_range(0..experts);
                if near[e] < gpus {
                    near[e] += 1;
                }
            }
            let relaxed = brute_force(&w, gpus);
            for factor in [0.97, 0.999, 1.0, 1.02, 1.2] {
                let t = relaxed * factor;
                let d = Deadline::never();
                let (mut a, mut b) = (u64::MAX, u64::MAX);
                let plain = feasible(&w, gpus, t, &[], &mut a, &d);
                let hinted = feasible(&w, gpus, t, &near, &mut b, &d);
                match (&plain, &hinted) {
                    (Feasibility::Feasible(..), Feasibility::Feasible(c, map)) => {
                        assert!(pair_max(&w, c, map) <= t * (1.0 + 1e-12), "case {case}");
                        feasible_seen += 1;
                    }
                    // A rejected leaf may be met in one order and not the other.
                    (Feasibility::Unrealized, _) | (_, Feasibility::Unrealized) => {}
                    (a, b) => assert_eq!(a, b, "case {case} at {factor}: {w:?} on {gpus}"),
                }
            }
        }
        assert!(feasible_seen >= 300, "{feasible_seen}");
    }

    #[test]
    fn a_target_below_the_optimum_is_infeasible_and_one_at_it_feasible() {
        // Case 382 of the campaign: optimum 15.5 (the pairing oracle's).
        let w = [
            111.0, 2.0, 14.0, 15.0, 10.0, 19.0, 19.0, 17.0, 112.0, 7.0, 7.0, 12.0, 5.0, 3.0, 16.0,
            15.0,
        ];
        let mut steps = u64::MAX;
        let d = Deadline::never();
        assert_eq!(
            feasible(&w, 25, 15.49, &[], &mut steps, &d),
            Feasibility::Infeasible
        );
        let Feasibility::Feasible(c, map) = feasible(&w, 25, 15.5, &[], &mut steps, &d) else {
            panic!("15.5 is feasible");
        };
        assert!(sorted_pairing(&w, &c) <= 15.5 * (1.0 + 1e-12));
        assert!(map.chunks(2).all(|p| p[0] != p[1]));
        assert!(pair_max(&w, &c, &map) <= 15.5 * (1.0 + 1e-12));
    }

    #[test]
    fn the_budget_stops_the_search_and_says_so() {
        let w = [
            111.0, 2.0, 14.0, 15.0, 10.0, 19.0, 19.0, 17.0, 112.0, 7.0, 7.0, 12.0, 5.0, 3.0, 16.0,
            15.0,
        ];
        let mut steps = 10;
        assert_eq!(
            feasible(&w, 25, 15.49, &[], &mut steps, &Deadline::never()),
            Feasibility::Stopped
        );
        assert_eq!(steps, 0);
        let mut steps = 10;
        let found = minimize(
            &w,
            25,
            15.36,
            15.73,
            &[],
            &mut |_| None,
            &mut steps,
            &Deadline::never(),
        );
        assert!(found.lower_bound >= 15.36 && found.lower_bound <= 15.5);
        assert!(found.lower_bound < 15.5 * (1.0 - PROOF_GAP));
    }

    #[test]
    fn impossible_inputs_are_infeasible_not_panics() {
        let mut steps = 1000;
        let d = Deadline::never();
        // More experts than slots, no experts, a non-positive or NaN target.
        assert_eq!(
            feasible(&[1.0; 5], 2, 10.0, &[], &mut steps, &d),
            Feasibility::Infeasible
        );
        assert_eq!(
            feasible(&[], 2, 10.0, &[], &mut steps, &d),
            Feasibility::Infeasible
        );
        assert_eq!(
            feasible(&[1.0, 1.0], 2, 0.0, &[], &mut steps, &d),
            Feasibility::Infeasible
        );
        assert_eq!(
            feasible(&[1.0, 1.0], 2, f64::NAN, &[], &mut steps, &d),
            Feasibility::Infeasible
        );
        // One expert heavier than a GPU can take even split over every GPU.
        assert_eq!(
            feasible(&[100.0, 1.0], 2, 10.0, &[], &mut steps, &d),
            Feasibility::Infeasible
        );
    }
}

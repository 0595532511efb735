//! An exact search for GPUs with a few slots each (3 to 8, one speed) where the replica-count
//! vectors are few enough to list: it proves the least busiest GPU, or finds a lower plan, where
//! the heuristic's local moves stop above it and the relaxation bounds cannot tell.
//!
//! Every slot holds a replica, so a count vector sums to `G * S`. Under a target `T` each
//! expert needs at least `ceil(w_e / T)` replicas (its replica load is `w_e / c_e`), and the
//! slots left over are spread over the experts in every way (at most `G` replicas each, experts
//! of equal load in order, by symmetry). Each count vector is then packed by *bin completion*
//! (Korf's scheme for bin packing, here with exactly `S` replicas of distinct experts per GPU):
//! GPUs are filled one at a time, each opened with the heaviest replica left and completed by
//! every set of `S - 1` replicas of other experts that keeps it within `T`, heaviest first.
//! GPUs are interchangeable, so a packing state is just the replicas each expert has left;
//! states that failed are remembered. Pruned: the load left above `T` times the GPUs left, an
//! expert with more replicas left than GPUs, pigeonholes over the heaviest replicas left.
//!
//! A target at which no count vector packs is a lower bound on every placement (nothing was
//! relaxed); a packed vector is a placement within it. [`minimize`] bisects `T` between the
//! certified bound and the plan's value on the schedule of [`crate::bisection`], as the 2-slot
//! search does.
//! Written from the problem statement; on the seeded campaign it proves the optimum of plans
//! that the branch and bound, `HiGHS` and CP-SAT could not settle (`docs/reproduction.md`), and a
//! brute force over every placement checks it on small instances (the tests below).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::bisection::{Minimized, Probe};
use crate::model::PlacementCluster;
use crate::options::Deadline;

/// Most count vectors (at the plan's value) for which [`crate::optimal`] runs the search:
/// beyond, listing them would spend the step budget on vectors instead of packings (on the
/// seeded campaign, 100,000 settles one plan and lowers two more than 10,000 did; the next
/// instances have millions).
pub(crate) const SLOT_EXACT_MAX_VECTORS: u64 = 100_000;

/// Fewest and most slots per GPU the search handles (two slots have their own exact search,
/// [`crate::pair_exact`]; with more than eight the completions of a GPU are too many).
const MIN_SLOTS: usize = 3;
const MAX_SLOTS: usize = 8;

/// Most GPUs (the recursion is one level per slot).
const MAX_GPUS: usize = 256;

/// Most experts: a layer of 256 experts on 32 GPUs of 8 slots (one replica each, so a single
/// count vector) spent the whole default budget (about 0.3 s) to lower one inference layer's
/// time by 0.17%, and in a loaded debug build the 1 s clock ended it first, so the plan
/// depended on the machine. The seeded campaign has at most 64 experts.
const MAX_EXPERTS: usize = 128;

/// Relative tolerance of the comparisons against `T`.
const TOL: f64 = 1e-12;

/// Bytes of remembered failed states per packing, so that memory is fixed whatever the budget.
const MEMO_BYTES: usize = 16 << 20;

/// Nodes a packing may take in the first pass over the count vectors (doubled per pass).
const FIRST_PACK_LIMIT: u64 = 4096;

/// Nodes per step of the budget (a count vector, a packing state or a completion tried is a
/// node, a few tens of nanoseconds; a step of the other exact searches costs about a
/// microsecond, so that one step budget means about the same time in each). The clock is read
/// once per step.
const NODES_PER_STEP: u64 = 32;

/// The answer of one feasibility test.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Test {
    /// A slot-ordered placement (GPU `g` holds slots `g * S .. (g + 1) * S`, no two replicas
    /// of an expert on a GPU) with every GPU within `T`.
    Feasible(Vec<usize>),
    /// Proved: no placement keeps every GPU within `T`.
    Infeasible,
    /// The step budget or the deadline ended the test first.
    Stopped,
}

/// The slots per GPU when the search applies to `cluster` and `w` at the plan value `value`:
/// every GPU with the same 3 to 8 slots and one speed, within the size limits, and at most
/// [`SLOT_EXACT_MAX_VECTORS`] count vectors at `value`.
pub(crate) fn applies(w: &[f64], cluster: &PlacementCluster, value: f64) -> Option<usize> {
    let slots = *cluster.slots_of_gpu().first()?;
    let speed = cluster.speed_of_gpu();
    let uniform =
        cluster.slots_of_gpu().iter().all(|&s| s == slots) && speed.iter().all(|&v| v == speed[0]);
    let gpus = cluster.gpus();
    if !uniform
        || !(MIN_SLOTS..=MAX_SLOTS).contains(&slots)
        || gpus > MAX_GPUS
        || w.len() > MAX_EXPERTS
    {
        return None;
    }
    let vectors = count_vectors(w, gpus, slots, value, SLOT_EXACT_MAX_VECTORS);
    (1..=SLOT_EXACT_MAX_VECTORS)
        .contains(&vectors)
        .then_some(slots)
}

/// Each expert's fewest replicas with a replica load within `t`, or `None` when some expert
/// needs more than `gpus` (or `t` is not a positive number).
fn least_counts(w: &[f64], gpus: usize, t: f64) -> Option<Vec<usize>> {
    if !(t > 0.0 && t.is_finite()) {
        return None;
    }
    let limit = t * (1.0 + TOL);
    w.iter()
        .map(|&x| {
            // The least `c` in `1..=gpus` with `x / c` within the limit (it falls with `c`).
            if x / gpus as f64 > limit {
                return None;
            }
            let (mut lo, mut hi) = (1usize, gpus);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if x / mid as f64 <= limit {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            Some(lo)
        })
        .collect()
}

/// The number of count vectors at target `t` (each expert at least its least count and at most
/// `gpus`, summing to `gpus * slots`), saturating above `cap`; 0 when there is none.
/// `O(E * spare)` time.
pub(crate) fn count_vectors(w: &[f64], gpus: usize, slots: usize, t: f64, cap: u64) -> u64 {
    let Some(least) = least_counts(w, gpus, t) else {
        return 0;
    };
    let Some(spare) = gpus
        .checked_mul(slots)
        .and_then(|total| total.checked_sub(least.iter().sum()))
    else {
        return 0;
    };
    let limit = cap.saturating_add(1);
    // ways[s]: vectors of the experts so far using `s` spare slots.
    let mut ways = vec![0u64; spare + 1];
    ways[0] = 1;
    let mut next = vec![0u64; spare + 1];
    for &c in &least {
        let most = gpus - c;
        // next[s] = ways[s - most ..= s], by a running sum.
        let mut window = 0u64;
        for s in 0..=spare {
            window = window.saturating_add(ways[s]);
            if s > most {
                window -= ways[s - most - 1].min(window);
            }
            next[s] = window.min(limit);
        }
        std::mem::swap(&mut ways, &mut next);
    }
    ways[spare]
}

/// Whether some placement keeps every GPU within `t`, within `steps` steps (decremented once
/// per [`NODES_PER_STEP`] nodes: a count vector, a packing state, a completion tried), trying
/// first the counts nearest `near` (ignored unless it has one count per expert). The answer's
/// kind does not depend on `near`; only which placement is found first does.
///
/// `O(steps * E)` time; memory `O(E * G)` plus at most [`MEMO_BYTES`] per packing.
pub(crate) fn feasible(
    w: &[f64],
    gpus: usize,
    slots: usize,
    t: f64,
    near: &[usize],
    steps: &mut u64,
    deadline: &Deadline,
) -> Test {
    let Some(least) = least_counts(w, gpus, t) else {
        return Test::Infeasible;
    };
    let Some(spare) = gpus
        .checked_mul(slots)
        .and_then(|total| total.checked_sub(least.iter().sum()))
    else {
        return Test::Infeasible;
    };
    // Experts heaviest first; equal loads are adjacent and take non-increasing extras.
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
    let mut room = vec![0usize; w.len() + 1];
    for i in (0..w.len()).rev() {
        room[i] = room[i + 1].saturating_add(gpus - least[order[i]]);
    }
    let mut search = Search {
        w,
        gpus,
        slots,
        limit: t * (1.0 + TOL),
        order,
        least,
        room,
        near: if near.len() == w.len() {
            near.to_vec()
        } else {
            Vec::new()
        },
        counts: vec![0; w.len()],
        steps,
        deadline,
        work: 0,
        stopped: false,
        found: None,
        leaf: 0,
        settled: Vec::new(),
        pack_limit: FIRST_PACK_LIMIT,
        pack_left: 0,
        pack_cut: false,
        cut: false,
    };
    search.counts.clone_from(&search.least);
    // Passes over the count vectors, each packing cut at a node limit that doubles per pass:
    // one hard packing must not take the budget while an easy vector waits behind it. A vector
    // whose packing finished without a placement is skipped in later passes.
    let mut limit = FIRST_PACK_LIMIT;
    loop {
        search.leaf = 0;
        search.cut = false;
        search.pack_limit = limit;
        search.choose(0, spare, usize::MAX);
        match (search.found.take(), search.stopped, search.cut) {
            (Some(map), _, _) => return Test::Feasible(map),
            (None, true, _) => return Test::Stopped,
            (None, false, false) => return Test::Infeasible,
            (None, false, true) => limit = limit.saturating_mul(2),
        }
    }
}

/// The depth-first search over count vectors of one feasibility test.
struct Search<'a> {
    w: &'a [f64],
    gpus: usize,
    slots: usize,
    limit: f64,
    order: Vec<usize>,
    least: Vec<usize>,
    /// `room[i]`: the extra replicas the experts from position `i` of `order` on can take.
    room: Vec<usize>,
    near: Vec<usize>,
    counts: Vec<usize>,
    steps: &'a mut u64,
    deadline: &'a Deadline,
    /// Work charged since the last step was taken from `steps`.
    work: u64,
    stopped: bool,
    found: Option<Vec<usize>>,
    /// The current count vector's number in the listing order, and which vectors' packings
    /// finished without a placement (skipped by later passes).
    leaf: usize,
    settled: Vec<bool>,
    /// Nodes a packing may take in this pass, nodes left to the current one, and whether it or
    /// an earlier packing of this pass was cut.
    pack_limit: u64,
    pack_left: u64,
    pack_cut: bool,
    cut: bool,
}

impl Search<'_> {
    /// Takes one step; false (and `stopped`) when the budget or the deadline is spent.
    fn step(&mut self) -> bool {
        self.charge(1)
    }

    /// Charges `units` of work (a node is one); false (and `stopped`) when the budget or the
    /// deadline is spent.
    fn charge(&mut self, units: u64) -> bool {
        if self.stopped {
            return false;
        }
        self.work += units;
        while self.work >= NODES_PER_STEP {
            if *self.steps == 0 || self.deadline.passed() {
                self.stopped = true;
                return false;
            }
            *self.steps -= 1;
            self.work -= NODES_PER_STEP;
        }
        true
    }

    /// Takes one step of a packing; false when the budget, the deadline or this packing's node
    /// limit is spent (the last sets `pack_cut`).
    fn pack_step(&mut self, units: u64) -> bool {
        if self.pack_left < units {
            self.pack_cut = true;
            return false;
        }
        self.pack_left -= units;
        self.charge(units)
    }

    /// Whether a packing step failed for a limit rather than a proof.
    fn interrupted(&self) -> bool {
        self.stopped || self.pack_cut
    }

    /// Chooses the extra replicas of the expert at position `i` of `order` (at most `cap`, the
    /// previous expert's extras when its load is equal), with `spare` slots left.
    fn choose(&mut self, i: usize, spare: usize, cap: usize) {
        if self.found.is_some() || !self.step() {
            return;
        }
        if i == self.order.len() {
            if spare == 0 {
                let leaf = self.leaf;
                self.leaf += 1;
                if self.settled.len() <= leaf {
                    self.settled.resize(leaf + 1, false);
                }
                if !self.settled[leaf] {
                    self.pack_left = self.pack_limit;
                    self.pack_cut = false;
                    self.found = self.pack();
                    if self.found.is_none() && !self.stopped {
                        if self.pack_cut {
                            self.cut = true;
                        } else {
                            self.settled[leaf] = true;
                        }
                    }
                }
            }
            return;
        }
        // Spare slots that the experts from here on cannot all take leave no count vector.
        if spare > self.room[i] {
            return;
        }
        let e = self.order[i];
        let most = spare.min(self.gpus - self.least[e]).min(cap);
        let wanted = self
            .near
            .get(e)
            .map_or(0, |&c| c.saturating_sub(self.least[e]).min(most));
        for extra in outward(wanted, most) {
            self.counts[e] = self.least[e] + extra;
            let tied = self
                .order
                .get(i + 1)
                .is_some_and(|&next| self.w[next] == self.w[e]);
            self.choose(i + 1, spare - extra, if tied { extra } else { usize::MAX });
            if self.found.is_some() || self.stopped {
                return;
            }
        }
        self.counts[e] = self.least[e];
    }

    /// Packs the current counts, or `None` (failed or stopped).
    fn pack(&mut self) -> Option<Vec<usize>> {
        let mut items: Vec<(f64, usize)> = self
            .counts
            .iter()
            .enumerate()
            .map(|(e, &c)| (self.w[e] / c as f64, e))
            .collect();
        items.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut packing = Packing {
            load: items.iter().map(|x| x.0).collect(),
            left: items
                .iter()
                .map(|x| u16::try_from(self.counts[x.1]).unwrap_or(u16::MAX))
                .collect(),
            slots: self.slots,
            limit: self.limit,
            failed: Memo::default(),
            hash: 0,
            word: (0..items.len() as u64)
                .map(|p| crate::optimal::mix(p ^ 0x5107_e8ac))
                .collect(),
            path: Vec::with_capacity(self.gpus * self.slots),
        };
        packing.hash = packing
            .left
            .iter()
            .zip(&packing.word)
            .fold(0u64, |h, (&c, &x)| {
                h.wrapping_add(x.wrapping_mul(u64::from(c)))
            });
        let total: f64 = self.w.iter().sum();
        if packing.fill(self, self.gpus, total) {
            Some(packing.path.iter().map(|&p| items[p].1).collect())
        } else {
            None
        }
    }
}

/// `0..=most`, starting at `from` and moving outward (`from`, `from + 1`, `from - 1`, ...).
fn outward(from: usize, most: usize) -> impl Iterator<Item = usize> {
    let from = from.min(most);
    (0..=most).map(move |k| {
        // Alternate above and below `from` while both sides last, then the rest of one side.
        let below = from;
        let above = most - from;
        let pairs = below.min(above);
        if k == 0 {
            from
        } else if k <= 2 * pairs {
            if k % 2 == 1 {
                from + k.div_ceil(2)
            } else {
                from - k / 2
            }
        } else if above > below {
            from + (k - pairs)
        } else {
            from - (k - pairs)
        }
    })
}

/// The bin completion of one count vector: replicas as positions sorted by load, heaviest
/// first, with the replicas each position has left.
struct Packing {
    load: Vec<f64>,
    left: Vec<u16>,
    slots: usize,
    limit: f64,
    failed: Memo,
    /// `sum(left[p] * word[p])`, kept up to date as replicas are taken and put back: the
    /// state's key in `failed`.
    hash: u64,
    word: Vec<u64>,
    /// The positions placed so far, GPU by GPU.
    path: Vec<usize>,
}

impl Packing {
    /// Takes a replica of position `p`.
    fn take(&mut self, p: usize) {
        self.left[p] -= 1;
        self.hash = self.hash.wrapping_sub(self.word[p]);
    }

    /// Puts a replica of position `p` back.
    fn put_back(&mut self, p: usize) {
        self.left[p] += 1;
        self.hash = self.hash.wrapping_add(self.word[p]);
    }

    /// Fills `gpus` more GPUs with every replica left (total load `rest`); true when done.
    fn fill(&mut self, search: &mut Search<'_>, gpus: usize, rest: f64) -> bool {
        // The scans and the remembered state below touch every position: about one node's work
        // per 16 of them.
        if !search.pack_step(1 + self.left.len() as u64 / 16) {
            return false;
        }
        let Some(first) = self.left.iter().position(|&c| c > 0) else {
            return true;
        };
        if gpus == 0
            || rest > self.limit * gpus as f64 * (1.0 + TOL)
            || self.left.iter().any(|&c| usize::from(c) > gpus)
            || self.failed.contains(self.hash, &self.left)
        {
            return false;
        }
        // The lightest replica left bounds what each partner adds (taking replicas only raises
        // the lightest one left).
        let lightest = self
            .left
            .iter()
            .rposition(|&c| c > 0)
            .map_or(0.0, |p| self.load[p]);
        if self.crowded(gpus, lightest) {
            return false;
        }
        self.take(first);
        self.path.push(first);
        let done = self.complete(
            search,
            gpus,
            rest,
            first + 1,
            self.slots - 1,
            self.load[first],
            lightest,
        );
        if done {
            return true;
        }
        self.path.pop();
        self.put_back(first);
        if !search.interrupted() {
            self.failed.insert(self.hash, &self.left);
        }
        false
    }

    /// Whether pigeonholes prove that `gpus` GPUs cannot take the replicas left within the
    /// limit: for `k` in `1..S`, some GPU holds `k + 1` of the `k·gpus + 1` heaviest replicas, so
    /// its load is at least the `k + 1` lightest of those plus `S - k - 1` of the lightest
    /// replica left. `O(E)` time.
    fn crowded(&self, gpus: usize, lightest: f64) -> bool {
        let slots = self.slots;
        // sums[k]: the replicas of ranks `k·gpus - k + 1 ..= k·gpus + 1` (1-based, heaviest
        // first) added up.
        let mut sums = [0.0f64; MAX_SLOTS];
        let last = (slots - 1) * gpus + 1;
        let mut seen = 0usize;
        for (p, &c) in self.left.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let (from, to) = (seen + 1, seen + usize::from(c));
            seen = to;
            for (k, sum) in sums.iter_mut().enumerate().take(slots).skip(1) {
                let lo = (k * gpus + 1).saturating_sub(k).max(from);
                let hi = (k * gpus + 1).min(to);
                if lo <= hi {
                    *sum += self.load[p] * (hi - lo + 1) as f64;
                }
            }
            if seen >= last {
                break;
            }
        }
        if seen < last {
            return false;
        }
        (1..slots).any(|k| sums[k] + lightest * (slots - k - 1) as f64 > self.limit)
    }

    /// Adds `need` more replicas of distinct positions from `from` on to the open GPU, whose
    /// load is `sum`, then fills the other `gpus - 1`.
    // The GPU being completed (its load, the next position, how many more) and the state of
    // the GPUs after it: a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        search: &mut Search<'_>,
        gpus: usize,
        rest: f64,
        from: usize,
        need: usize,
        sum: f64,
        lightest: f64,
    ) -> bool {
        if need == 0 {
            return self.fill(search, gpus - 1, rest - sum);
        }
        for p in from..self.left.len() {
            if self.left[p] == 0 {
                continue;
            }
            let with = sum + self.load[p];
            if with + lightest * (need - 1) as f64 > self.limit {
                continue;
            }
            if !search.pack_step(1) {
                return false;
            }
            self.take(p);
            self.path.push(p);
            if self.complete(search, gpus, rest, p + 1, need - 1, with, lightest) {
                return true;
            }
            self.path.pop();
            self.put_back(p);
            if search.interrupted() {
                return false;
            }
        }
        false
    }
}

/// Failed packing states, keyed by [`Packing::hash`]; each bucket keeps the states themselves,
/// so that two states with one hash never prune each other. At most [`MEMO_BYTES`].
#[derive(Default)]
struct Memo {
    buckets: HashMap<u64, Vec<Box<[u16]>>, BuildHasherDefault<Identity>>,
    bytes: usize,
}

impl Memo {
    fn contains(&self, hash: u64, state: &[u16]) -> bool {
        self.buckets
            .get(&hash)
            .is_some_and(|b| b.iter().any(|s| **s == *state))
    }

    fn insert(&mut self, hash: u64, state: &[u16]) {
        let bytes = state.len() * 2 + 48;
        if self.bytes + bytes <= MEMO_BYTES {
            self.bytes += bytes;
            self.buckets.entry(hash).or_default().push(state.into());
        }
    }
}

/// A hasher that passes a `u64` key through (the keys are already mixed words).
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

/// [`crate::bisection::minimize`] with the count-listing test: between `lower` (certified) and
/// `value` (a plan's busiest GPU), spending at most `steps` steps in all.
///
/// `O(steps * E)` time; memory `O(E * G)` plus at most [`MEMO_BYTES`] per test.
// The search's inputs, its hint and its two limits: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn minimize(
    w: &[f64],
    gpus: usize,
    slots: usize,
    lower: f64,
    value: f64,
    counts: &[usize],
    steps: &mut u64,
    deadline: &Deadline,
) -> Minimized {
    let mut test = |t: f64, _hi: f64, near: &[usize], allowed: &mut u64| -> Probe {
        match feasible(w, gpus, slots, t, near, allowed, deadline) {
            Test::Infeasible => Probe::Infeasible,
            Test::Stopped => Probe::Unsettled,
            Test::Feasible(map) => {
                let v = busiest(w, slots, &map);
                let counts = crate::plan::counts(&map, w.len());
                Probe::Found(map, counts, v)
            }
        }
    };
    crate::bisection::minimize(lower, value, counts, steps, deadline, &mut test)
}

/// The busiest GPU of a slot-ordered map of `slots` slots per GPU (one speed, even split).
fn busiest(w: &[f64], slots: usize, map: &[usize]) -> f64 {
    let counts = crate::plan::counts(map, w.len());
    map.chunks(slots)
        .map(|g| g.iter().map(|&e| w[e] / counts[e] as f64).sum::<f64>())
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::seeded_rng;
    use rand::RngExt;

    /// The least busiest GPU over every placement of `w` on `gpus` GPUs of `slots` slots (every
    /// slot filled, no two replicas of an expert on a GPU): every GPU content is a set of
    /// `slots` distinct experts, GPUs in non-decreasing order of their sets.
    fn brute_force(w: &[f64], gpus: usize, slots: usize) -> f64 {
        fn sets(
            e: usize,
            from: usize,
            need: usize,
            cur: &mut Vec<usize>,
            out: &mut Vec<Vec<usize>>,
        ) {
            if need == 0 {
                out.push(cur.clone());
                return;
            }
            for x in from..e {
                cur.push(x);
                sets(e, x + 1, need - 1, cur, out);
                cur.pop();
            }
        }
        let mut all = Vec::new();
        sets(w.len(), 0, slots, &mut Vec::new(), &mut all);
        fn rec(
            w: &[f64],
            all: &[Vec<usize>],
            gpus: usize,
            from: usize,
            chosen: &mut Vec<usize>,
            best: &mut f64,
        ) {
            if chosen.len() == gpus {
                let mut c = vec![0usize; w.len()];
                for &s in chosen.iter() {
                    for &e in &all[s] {
                        c[e] += 1;
                    }
                }
                if c.contains(&0) {
                    return;
                }
                let v = chosen
                    .iter()
                    .map(|&s| all[s].iter().map(|&e| w[e] / c[e] as f64).sum::<f64>())
                    .fold(0.0, f64::max);
                *best = best.min(v);
                return;
            }
            for s in from..all.len() {
                chosen.push(s);
                rec(w, all, gpus, s, chosen, best);
                chosen.pop();
            }
        }
        let mut best = f64::INFINITY;
        rec(w, &all, gpus, 0, &mut Vec::new(), &mut best);
        best
    }

    fn instance(rng: &mut impl rand::Rng, i: u64) -> (Vec<f64>, usize, usize) {
        let gpus = rng.random_range(2..=4usize);
        let slots = rng.random_range(3..=4usize);
        let experts = rng.random_range(slots..=(gpus * slots).min(7));
        let hot = i % 3 == 0;
        let w = (0..experts)
            .map(|e| {
                if hot && e == 0 {
                    f64::from(rng.random_range(50..200))
                } else {
                    f64::from(rng.random_range(0..30))
                }
            })
            .collect();
        (w, gpus, slots)
    }

    #[test]
    fn minimize_equals_brute_force_on_small_instances() {
        let mut rng = seeded_rng(31, 0);
        let mut checked = 0;
        for i in 0..150 {
            let (w, gpus, slots) = instance(&mut rng, i);
            let optimum = brute_force(&w, gpus, slots);
            let total: f64 = w.iter().sum();
            let lower = total / gpus as f64;
            // A valid start well above the optimum: the bisection must come down to it.
            let value = optimum * 1.5 + 1.0;
            let mut steps = 5_000_000;
            let found = minimize(
                &w,
                gpus,
                slots,
                lower,
                value,
                &[],
                &mut steps,
                &Deadline::never(),
            );
            assert!(steps > 0, "budget spent on {w:?}");
            let (map, v) = found.map.clone().expect("a plan below 1.5x the optimum");
            assert!(
                (v - optimum).abs() <= 1e-9 * optimum.max(1.0),
                "{w:?} on {gpus}x{slots}: {v} vs {optimum}"
            );
            assert!(found.lower_bound <= optimum * (1.0 + 1e-9));
            assert!(v <= found.lower_bound * (1.0 + 1e-8) + 1e-12);
            assert_eq!(map.len(), gpus * slots);
            assert!(crate::plan::counts(&map, w.len()).iter().all(|&c| c >= 1));
            for g in map.chunks(slots) {
                let mut s = g.to_vec();
                s.sort_unstable();
                s.dedup();
                assert_eq!(s.len(), slots, "duplicate on a GPU: {map:?}");
            }
            checked += 1;
        }
        assert_eq!(checked, 150);
    }

    #[test]
    fn a_target_below_the_optimum_is_infeasible_and_one_at_it_feasible() {
        let mut rng = seeded_rng(32, 0);
        for i in 0..60 {
            let (w, gpus, slots) = instance(&mut rng, i);
            let optimum = brute_force(&w, gpus, slots);
            let mut steps = 5_000_000;
            let below = feasible(
                &w,
                gpus,
                slots,
                optimum * (1.0 - 1e-6),
                &[],
                &mut steps,
                &Deadline::never(),
            );
            assert_eq!(below, Test::Infeasible, "{w:?}");
            let at = feasible(
                &w,
                gpus,
                slots,
                optimum,
                &[],
                &mut steps,
                &Deadline::never(),
            );
            assert!(matches!(at, Test::Feasible(_)), "{w:?}");
        }
    }

    #[test]
    fn the_counts_tried_first_change_no_answer_kind() {
        let mut rng = seeded_rng(33, 0);
        for i in 0..60 {
            let (w, gpus, slots) = instance(&mut rng, i);
            let optimum = brute_force(&w, gpus, slots);
            let near: Vec<usize> = (0..w.len()).map(|_| rng.random_range(1..=gpus)).collect();
            for t in [optimum * 0.99, optimum, optimum * 1.05] {
                let mut a = 5_000_000;
                let mut b = 5_000_000;
                let plain = feasible(&w, gpus, slots, t, &[], &mut a, &Deadline::never());
                let hinted = feasible(&w, gpus, slots, t, &near, &mut b, &Deadline::never());
                assert_eq!(
                    matches!(plain, Test::Feasible(_)),
                    matches!(hinted, Test::Feasible(_)),
                    "{w:?} at {t}"
                );
            }
        }
    }

    #[test]
    fn the_budget_stops_the_search_and_says_so() {
        // Case 126 of the campaign: 17 experts on 8 x 3, optimum 300.5.
        let w = [
            622.0, 451.0, 281.0, 257.0, 147.0, 136.0, 96.0, 81.0, 78.0, 68.0, 50.0, 42.0, 30.0,
            20.0, 13.0, 9.0, 6.0,
        ];
        let mut steps = 10;
        let test = feasible(&w, 8, 3, 300.0, &[], &mut steps, &Deadline::never());
        assert_eq!(test, Test::Stopped);
        assert_eq!(steps, 0);
    }

    #[test]
    fn outward_lists_every_extra_once() {
        for most in 0..7 {
            for from in 0..9 {
                let mut v: Vec<usize> = outward(from, most).collect();
                assert_eq!(v[0], from.min(most));
                v.sort_unstable();
                assert_eq!(v, (0..=most).collect::<Vec<_>>(), "from {from} most {most}");
            }
        }
    }

    #[test]
    fn count_vectors_counts_what_the_search_lists() {
        // Three experts of loads 6, 3, 3 on 2 GPUs x 3 at target 3: least counts 2, 1, 1,
        // spare 2, each count at most 2: extras (0, 1, 1) only.
        assert_eq!(count_vectors(&[6.0, 3.0, 3.0], 2, 3, 3.0, 100), 1);
        // Target 6: least 1, 1, 1, spare 3, extras at most 1 each: (1, 1, 1) only.
        assert_eq!(count_vectors(&[6.0, 3.0, 3.0], 2, 3, 6.0, 100), 1);
        // Four experts on 3 GPUs x 3, target 100: least 1 each, spare 5, extras at most 2:
        // the solutions of a + b + c + d = 5 with each at most 2: 16.
        assert_eq!(count_vectors(&[1.0; 4], 3, 3, 100.0, 100), 16);
        assert_eq!(count_vectors(&[1.0; 4], 3, 3, 100.0, 5), 6);
        // An expert above `G * t` needs too many replicas.
        assert_eq!(count_vectors(&[100.0, 1.0, 1.0], 2, 3, 10.0, 100), 0);
    }
}

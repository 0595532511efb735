//! Best-improvement local search on the busiest GPU: swaps of two replicas and, optionally,
//! replica moves that change two experts' replica counts.

use super::state::{Move, SlotState};

/// How the figures of several load windows combine into one objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Aggregate {
    /// The largest maximum GPU load over the windows.
    Worst,
    /// The mean of the windows' maximum GPU loads.
    Mean,
}

/// Relative tolerance below which two objective values are treated as equal (floating-point
/// noise of incremental load updates is far smaller).
pub(crate) const REL_EPS: f64 = 1e-12;

/// How many of each window's busiest GPUs are cached to find the busiest untouched one.
const TOP: usize = 4;

/// Options of [`improve`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchOptions {
    pub(crate) aggregate: Aggregate,
    /// Also try [`Move::Replace`] (changes replica counts), after swaps fail.
    pub(crate) count_changes: bool,
    /// Stop as soon as the objective is at most this (a lower bound: nothing better exists).
    pub(crate) target: f64,
    /// Stop after this many moves.
    pub(crate) max_moves: usize,
}

/// The objective and its secondary measure (sum of squared loads) after a candidate move.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score {
    objective: f64,
    ssq_change: f64,
}

/// The search's view of the windows' busiest GPUs.
struct Tops {
    /// `top[k]`: up to [`TOP`] GPUs of window `k`, busiest first.
    top: Vec<Vec<usize>>,
    max: Vec<f64>,
}

impl Tops {
    fn new(s: &SlotState) -> Self {
        let mut t = Self {
            top: vec![Vec::with_capacity(TOP + 1); s.windows],
            max: vec![0.0; s.windows],
        };
        t.refresh(s);
        t
    }

    fn refresh(&mut self, s: &SlotState) {
        for k in 0..s.windows {
            let top = &mut self.top[k];
            top.clear();
            for g in 0..s.gpus() {
                let l = s.gpu_load(k, g);
                if top.len() < TOP || l > s.gpu_load(k, top[top.len() - 1]) {
                    let at = top.partition_point(|&x| s.gpu_load(k, x) >= l);
                    top.insert(at, g);
                    top.truncate(TOP);
                }
            }
            self.max[k] = s.gpu_load(k, top[0]);
        }
    }

    /// Largest load of window `k` over GPUs not in `touched`.
    fn untouched_max(&self, s: &SlotState, k: usize, touched: &[usize]) -> f64 {
        match self.top[k].iter().find(|g| !touched.contains(g)) {
            Some(&g) => s.gpu_load(k, g),
            None if self.top[k].len() < TOP => 0.0,
            None => (0..s.gpus())
                .filter(|g| !touched.contains(g))
                .map(|g| s.gpu_load(k, g))
                .fold(0.0, f64::max),
        }
    }
}

fn combine(aggregate: Aggregate, maxima: impl Iterator<Item = f64>, windows: usize) -> f64 {
    match aggregate {
        Aggregate::Worst => maxima.fold(0.0, f64::max),
        Aggregate::Mean => maxima.sum::<f64>() / windows as f64,
    }
}

/// Improves `s` by best-improvement moves on the busiest GPUs until no move lowers the objective
/// (or, at equal objective, the sum of squared loads). Returns the number of moves made.
///
/// Each accepted move lowers the pair (objective, sum of squares) lexicographically by more than
/// a relative [`REL_EPS`], so the search ends; `max_moves` bounds its time.
pub(crate) fn improve(s: &mut SlotState, options: SearchOptions) -> usize {
    let mut tops = Tops::new(s);
    let mut buffers = (Vec::new(), Vec::new());
    let mut moves = 0;
    while moves < options.max_moves {
        let current = combine(options.aggregate, tops.max.iter().copied(), s.windows);
        if current <= options.target * (1.0 + REL_EPS) {
            break;
        }
        let hot = hot_gpus(&tops, options.aggregate, current);
        let mut best = best_swap(s, &tops, &hot, options.aggregate, current, &mut buffers);
        if best.is_none() && options.count_changes {
            best = best_replace(s, &tops, &hot, options.aggregate, current, &mut buffers);
        }
        let Some((mv, _)) = best else { break };
        s.apply(mv);
        tops.refresh(s);
        moves += 1;
    }
    moves
}

/// The busiest GPU of every window that decides the objective.
fn hot_gpus(tops: &Tops, aggregate: Aggregate, current: f64) -> Vec<usize> {
    let mut hot: Vec<usize> = (0..tops.top.len())
        .filter(|&k| aggregate == Aggregate::Mean || tops.max[k] >= current * (1.0 - REL_EPS))
        .map(|k| tops.top[k][0])
        .collect();
    hot.sort_unstable();
    hot.dedup();
    hot
}

/// Whether `candidate` improves on `current` and beats `best`.
fn better(candidate: Score, current: f64, best: Option<Score>) -> bool {
    let eps = current * REL_EPS;
    let improves = candidate.objective < current - eps
        || (candidate.objective <= current + eps
            && candidate.ssq_change < -eps * current.max(f64::MIN_POSITIVE));
    improves
        && best.is_none_or(|b| {
            candidate.objective < b.objective - eps
                || (candidate.objective <= b.objective + eps && candidate.ssq_change < b.ssq_change)
        })
}

/// Scores any move through [`SlotState::effect`].
fn score(
    s: &SlotState,
    tops: &Tops,
    aggregate: Aggregate,
    mv: Move,
    (touched, new_load): &mut (Vec<usize>, Vec<f64>),
) -> Score {
    s.effect(mv, touched, new_load);
    let kk = s.windows;
    let (mut ssq_change, mut worst, mut sum) = (0.0, 0.0f64, 0.0);
    for k in 0..kk {
        let mut m = tops.untouched_max(s, k, touched);
        for (t, &g) in touched.iter().enumerate() {
            let (old, new) = (s.gpu_load(k, g), new_load[t * kk + k]);
            m = m.max(new);
            ssq_change += new * new - old * old;
        }
        worst = worst.max(m);
        sum += m;
    }
    let objective = match aggregate {
        Aggregate::Worst => worst,
        Aggregate::Mean => sum / kk as f64,
    };
    Score {
        objective,
        ssq_change,
    }
}

/// The best swap of a replica on a hot GPU with a replica elsewhere.
fn best_swap(
    s: &SlotState,
    tops: &Tops,
    hot: &[usize],
    aggregate: Aggregate,
    current: f64,
    buffers: &mut (Vec<usize>, Vec<f64>),
) -> Option<(Move, Score)> {
    if s.windows == 1 {
        return best_swap_one_window(s, tops, hot[0], current);
    }
    let mut best: Option<(Move, Score)> = None;
    let slots = s.expert_of_slot.len();
    for &g in hot {
        for i in s.cluster.slot_range(g) {
            for j in 0..slots {
                let mv = Move::Swap(i, j);
                if !s.is_valid(mv) {
                    continue;
                }
                let sc = score(s, tops, aggregate, mv, buffers);
                if better(sc, current, best.map(|b| b.1)) {
                    best = Some((mv, sc));
                }
            }
        }
    }
    best
}

/// [`best_swap`] for a single window, inlined: the busiest GPU `g` gives a replica of share
/// `sa` and takes one of share `sb < sa` from a GPU that stays below the current maximum.
fn best_swap_one_window(
    s: &SlotState,
    tops: &Tops,
    g: usize,
    current: f64,
) -> Option<(Move, Score)> {
    let limit = current * (1.0 - REL_EPS);
    let share: Vec<f64> = s
        .expert_of_slot
        .iter()
        .map(|&e| s.share(0, e, s.count[e]))
        .collect();
    let (lg, ig) = (s.gpu_load(0, g), s.inv_speed(g));
    let mut best: Option<(Move, Score)> = None;
    for i in s.cluster.slot_range(g) {
        let a = s.expert_of_slot[i];
        for h in 0..s.gpus() {
            let (lh, ih) = (s.gpu_load(0, h), s.inv_speed(h));
            if h == g || lh >= limit || s.has(h, a) {
                continue;
            }
            for j in s.cluster.slot_range(h) {
                let d = share[i] - share[j];
                let (new_g, new_h) = (lg - d * ig, lh + d * ih);
                if d <= 0.0 || new_g >= limit || new_h >= limit || s.has(g, s.expert_of_slot[j]) {
                    continue;
                }
                let others = tops.top[0]
                    .iter()
                    .find(|&&x| x != g && x != h)
                    .map_or(0.0, |&x| s.gpu_load(0, x));
                let sc = Score {
                    objective: others.max(new_g).max(new_h),
                    ssq_change: new_g * new_g + new_h * new_h - lg * lg - lh * lh,
                };
                if better(sc, current, best.map(|b| b.1)) {
                    best = Some((Move::Swap(i, j), sc));
                }
            }
        }
    }
    best
}

/// The best replica move involving a hot GPU: one of its replicas becomes another expert, or
/// one of its experts gains a replica elsewhere.
fn best_replace(
    s: &SlotState,
    tops: &Tops,
    hot: &[usize],
    aggregate: Aggregate,
    current: f64,
    buffers: &mut (Vec<usize>, Vec<f64>),
) -> Option<(Move, Score)> {
    let mut best: Option<(Move, Score)> = None;
    let slots = s.expert_of_slot.len();
    let mut consider = |mv: Move, best: &mut Option<(Move, Score)>| {
        if s.is_valid(mv) {
            let sc = score(s, tops, aggregate, mv, buffers);
            if better(sc, current, best.map(|b| b.1)) {
                *best = Some((mv, sc));
            }
        }
    };
    for &g in hot {
        for i in s.cluster.slot_range(g) {
            let a = s.expert_of_slot[i];
            if s.count[a] >= 2 {
                for b in 0..s.experts {
                    if replaced_slot_stays_below(s, i, b, current) {
                        consider(Move::Replace(i, b), &mut best);
                    }
                }
            }
            for j in 0..slots {
                if replaced_slot_stays_below(s, j, a, current) {
                    consider(Move::Replace(j, a), &mut best);
                }
            }
        }
    }
    best
}

/// Cheap necessary condition with one window: after `slot` takes expert `b`, its GPU stays
/// below the current maximum (always true with several windows, where the full score decides).
#[inline]
fn replaced_slot_stays_below(s: &SlotState, slot: usize, b: usize, current: f64) -> bool {
    if s.windows > 1 {
        return true;
    }
    let g = s.gpu_of_slot[slot];
    let a = s.expert_of_slot[slot];
    let new = s.gpu_load(0, g)
        + (s.share(0, b, s.count[b] + 1) - s.share(0, a, s.count[a])) * s.inv_speed(g);
    new < current * (1.0 - REL_EPS)
}

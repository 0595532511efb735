//! Best-improvement local search on the busiest GPU: swaps of two replicas and replica moves
//! that change two experts' replica counts, optionally counting weight transfers.

use crate::state::{Move, SlotState, key_value, order_key, sort_nearly_sorted};

/// How the figures of several load windows combine into one objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Aggregate {
    /// The largest maximum GPU load over the windows.
    Worst,
    /// The mean of the windows' maximum GPU loads.
    Mean,
}

pub(crate) use crate::tolerance::REL_EPS;

/// Slot count up to which a transfer-counting search tries replica moves at every step.
const EVERY_STEP_MAX_SLOTS: usize = 1024;

/// Work after which a search stops with the best placement found so far: candidate moves
/// scored (each counted by the GPUs it touches, times the logarithm `effect`'s sort adds) plus
/// slots scanned. A few experts on thousands of slots make every candidate touch
/// thousands of GPUs; without this bound such a search ran for minutes (6 experts on 10,000
/// GPUs: more than 2 minutes). The benchmark instances stay far below it (see the tests).
const WORK_BUDGET: u64 = 1 << 28;

/// How many of each window's busiest GPUs are cached to find the busiest untouched one.
const TOP: usize = 4;

/// Which experts each GPU held before a rebalance: a replica placed elsewhere is a move.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    words: usize,
    bits: Vec<u64>,
}

impl Origin {
    /// The (GPU, expert) pairs of a map.
    pub(crate) fn new(gpu_of_slot: &[usize], map: &[usize], gpus: usize, experts: usize) -> Self {
        let words = experts.div_ceil(64);
        let mut bits = vec![0; gpus * words];
        for (&g, &e) in gpu_of_slot.iter().zip(map) {
            bits[g * words + e / 64] |= 1 << (e % 64);
        }
        Self { words, bits }
    }

    /// Whether GPU `g` held expert `e`.
    #[inline]
    pub(crate) fn holds(&self, g: usize, e: usize) -> bool {
        self.bits[g * self.words + e / 64] & (1 << (e % 64)) != 0
    }

    /// The experts GPU `g` held, in increasing order (the set bits of its words).
    pub(crate) fn held(&self, g: usize) -> impl Iterator<Item = usize> + '_ {
        self.bits[g * self.words..(g + 1) * self.words]
            .iter()
            .enumerate()
            .flat_map(|(k, &word)| {
                let mut rest = word;
                std::iter::from_fn(move || {
                    (rest != 0).then(|| {
                        let bit = rest.trailing_zeros() as usize;
                        rest &= rest - 1;
                        k * 64 + bit
                    })
                })
            })
    }

    /// 1 when expert `e` in a slot of GPU `g` is a transfer.
    #[inline]
    fn cost(&self, g: usize, e: usize) -> i64 {
        i64::from(!self.holds(g, e))
    }

    /// Change in the number of transfers if `mv` is applied to `s`.
    #[inline(always)]
    pub(crate) fn delta(&self, s: &SlotState, mv: Move) -> i64 {
        match mv {
            Move::Swap(i, j) => {
                let (a, b) = (s.expert_of_slot[i], s.expert_of_slot[j]);
                let (g, h) = (s.gpu_of_slot[i], s.gpu_of_slot[j]);
                self.cost(g, b) + self.cost(h, a) - self.cost(g, a) - self.cost(h, b)
            }
            Move::Replace(i, b) => {
                let (a, g) = (s.expert_of_slot[i], s.gpu_of_slot[i]);
                self.cost(g, b) - self.cost(g, a)
            }
        }
    }

    /// The least `cost(g, b) - cost(h, b)` over the replicas `b` on GPU `h`: the partner's part
    /// of [`Origin::delta`] for any swap between `g` and `h` (1 when `h` has no slots).
    ///
    /// Each term is -1, 0 or 1, so the least is read from bits, a word of 64 experts at a
    /// time: -1 when `h` now holds an expert that `g` held and `h` did not, else 0 when it
    /// holds one that both or neither held, else 1.
    pub(crate) fn least_partner_term(&self, s: &SlotState, g: usize, h: usize) -> i64 {
        let Some(now) = s.member_words(h, self.words) else {
            return s
                .cluster
                .slot_range(h)
                .map(|j| {
                    let b = s.expert_of_slot[j];
                    i64::from(!self.holds(g, b)) - i64::from(!self.holds(h, b))
                })
                .min()
                .unwrap_or(1);
        };
        let (held_g, held_h) = (self.words_of(g), self.words_of(h));
        let (mut minus, mut zero) = (0, 0);
        for ((&m, &og), &oh) in now.iter().zip(held_g).zip(held_h) {
            minus |= m & og & !oh;
            zero |= m & !(og ^ oh);
        }
        if minus != 0 {
            -1
        } else if zero != 0 {
            0
        } else {
            1
        }
    }

    /// GPU `g`'s words of bits.
    #[inline]
    fn words_of(&self, g: usize) -> &[u64] {
        &self.bits[g * self.words..(g + 1) * self.words]
    }

    /// Number of transfers of a map (`gpu_of_slot` from [`PlacementCluster::gpu_of_each_slot`]).
    ///
    /// [`PlacementCluster::gpu_of_each_slot`]: crate::model::PlacementCluster::gpu_of_each_slot
    pub(crate) fn count(&self, gpu_of_slot: &[usize], map: &[usize]) -> usize {
        gpu_of_slot
            .iter()
            .zip(map)
            .filter(|&(&g, &e)| !self.holds(g, e))
            .count()
    }

    /// Whether every replica on GPU `g` is one it held before: then it holds exactly its old
    /// experts, and a swap giving one of them away for an expert from elsewhere adds a transfer
    /// on `g` (the lower bound of [`Candidates::swaps_one_window`]'s partner test).
    pub(crate) fn untouched(&self, s: &SlotState, g: usize) -> bool {
        match s.member_words(g, self.words) {
            // No expert it holds now that it did not hold before.
            Some(now) => now.iter().zip(self.words_of(g)).all(|(&m, &o)| m & !o == 0),
            None => s
                .cluster
                .slot_range(g)
                .all(|slot| self.holds(g, s.expert_of_slot[slot])),
        }
    }
}

/// Options of [`improve`].
#[derive(Debug, Clone)]
pub(crate) struct SearchOptions<'o> {
    pub(crate) aggregate: Aggregate,
    /// Also try [`Move::Replace`] (changes replica counts): after swaps fail, or at every step
    /// when transfers are counted on up to 1024 slots (a replacement is one transfer, a swap
    /// two).
    pub(crate) count_changes: bool,
    /// Stop as soon as the objective is at most this.
    pub(crate) target: f64,
    /// Stop after this many moves.
    pub(crate) max_moves: usize,
    /// Count transfers against this placement: among moves reaching the same objective, the one
    /// adding the fewest transfers wins.
    pub(crate) origin: Option<&'o Origin>,
    /// Stop at this instant with the best placement so far (the caller's time budget).
    pub(crate) deadline: crate::options::Deadline,
    /// Stop before the next move once this is set (by the caller's `after_move`: the low-move
    /// path of a rebalance stops once its later points cannot be picked).
    pub(crate) stop: Option<&'o std::cell::Cell<bool>>,
}

impl<'o> SearchOptions<'o> {
    /// Swaps and replica moves until nothing improves (or `target` is reached), with the move
    /// budget of [`move_budget`] and no transfer counting.
    pub(crate) fn full(
        aggregate: Aggregate,
        target: f64,
        cluster: &crate::model::PlacementCluster,
    ) -> Self {
        Self {
            aggregate,
            count_changes: true,
            target,
            max_moves: move_budget(cluster),
            origin: None,
            deadline: crate::options::Deadline::never(),
            stop: None,
        }
    }
}

/// Moves a local search may make: enough to touch every slot a few times.
pub(crate) fn move_budget(cluster: &crate::model::PlacementCluster) -> usize {
    4 * cluster.total_slots() + 64
}

/// The objective, transfers added, and the change in the sum of squared loads of a move.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score {
    objective: f64,
    transfers: i64,
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

    /// Largest load of window `k` over GPUs not in `touched`, and whether finding it took a
    /// scan of every GPU (when all cached busiest GPUs are touched). `mask` is scratch space,
    /// all `false` before and after: the scan marks the touched GPUs in it, so a move touching
    /// thousands of GPUs costs `O(G)`, not `O(G t)`.
    fn untouched_max(
        &self,
        s: &SlotState,
        k: usize,
        touched: &[usize],
        mask: &mut Vec<bool>,
    ) -> (f64, bool) {
        match self.top[k].iter().find(|g| !touched.contains(g)) {
            Some(&g) => (s.gpu_load(k, g), false),
            None if self.top[k].len() < TOP => (0.0, false),
            None => {
                mask.resize(s.gpus(), false);
                for &g in touched {
                    mask[g] = true;
                }
                let max = (0..s.gpus())
                    .filter(|&g| !mask[g])
                    .map(|g| s.gpu_load(k, g))
                    .fold(0.0, f64::max);
                for &g in touched {
                    mask[g] = false;
                }
                (max, true)
            }
        }
    }

    fn objective(&self, aggregate: Aggregate) -> f64 {
        combine(aggregate, self.max.iter().copied(), self.max.len())
    }
}

/// The objective of a state.
pub(crate) fn objective(s: &SlotState, aggregate: Aggregate) -> f64 {
    Tops::new(s).objective(aggregate)
}

fn combine(aggregate: Aggregate, maxima: impl Iterator<Item = f64>, windows: usize) -> f64 {
    match aggregate {
        Aggregate::Worst => maxima.fold(0.0, f64::max),
        Aggregate::Mean => maxima.sum::<f64>() / windows as f64,
    }
}

/// Improves `s` by best-improvement moves on the busiest GPUs until no move lowers the objective
/// (or, at equal objective, the sum of squared loads), calling `after_move` with the state, the
/// move and the objective after each accepted move. Returns the number of moves made.
///
/// Each accepted move lowers the pair (objective, sum of squares) lexicographically by more than
/// a relative [`REL_EPS`], so the search ends; `max_moves` bounds its time.
pub(crate) fn improve(
    s: &mut SlotState,
    options: SearchOptions,
    mut after_move: impl FnMut(&SlotState, Move, f64),
) -> usize {
    let mut tops = Tops::new(s);
    let (max_moves, aggregate, target) = (options.max_moves, options.aggregate, options.target);
    let every_step_allowed = options.origin.is_some();
    let count_changes = options.count_changes;
    let mut search = Candidates {
        options,
        buffers: (Vec::new(), Vec::new()),
        best: None,
        work: 0,
        mask: Vec::new(),
        scratch: Scratch::default(),
    };
    search
        .scratch
        .share
        .extend(s.expert_of_slot.iter().map(|&e| s.share_now[e]));
    let mut moves = 0;
    while moves < max_moves && search.work < WORK_BUDGET {
        // The clock is read before every move (a move costs microseconds to, on thousands of
        // slots with tied loads, a tenth of a second; reading the clock costs nanoseconds).
        if search.options.deadline.passed() || search.options.stop.is_some_and(|c| c.get()) {
            break;
        }
        let current = tops.objective(aggregate);
        if current <= target * (1.0 + REL_EPS) {
            break;
        }
        let hot = hot_gpus(&tops, aggregate, current);
        search.best = None;
        search.swaps(s, &tops, &hot, current);
        // Counting transfers, replica moves (one transfer) compete with swaps (two) at every
        // step, except on large instances where their scan would dominate.
        let every_step = every_step_allowed && s.expert_of_slot.len() <= EVERY_STEP_MAX_SLOTS;
        if count_changes && (search.best.is_none() || every_step) {
            search.replacements(s, &tops, &hot, current);
        }
        let Some((mv, _)) = search.best else { break };
        let old_expert = match mv {
            Move::Replace(i, _) => s.expert_of_slot[i],
            Move::Swap(i, _) => s.expert_of_slot[i],
        };
        s.apply(mv);
        search.scratch.moved(s, mv, old_expert);
        tops.refresh(s);
        moves += 1;
        after_move(s, mv, tops.objective(aggregate));
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

/// The candidate moves of one iteration and the best found so far.
struct Candidates<'o> {
    options: SearchOptions<'o>,
    buffers: (Vec<usize>, Vec<f64>),
    best: Option<(Move, Score)>,
    /// Work done so far, see [`WORK_BUDGET`].
    work: u64,
    /// Scratch space of [`Tops::untouched_max`].
    mask: Vec<bool>,
    /// Buffers reused from step to step (the search allocated them at every step).
    scratch: Scratch,
}

/// A slot whose expert has another replica, with what the replacement scan reads of it.
#[derive(Debug, Clone, Copy)]
struct Spare {
    j: usize,
    x: usize,
    h: usize,
    load: f64,
    share: f64,
    inv_speed: f64,
}

/// Per-step buffers of [`Candidates`]: their contents are rebuilt at every use.
#[derive(Default)]
struct Scratch {
    /// Per slot: the share of its expert's load one replica carries (window 0), kept up to
    /// date by [`improve`] after each move.
    share: Vec<f64>,
    /// GPUs a swap with the busiest GPU may improve, lightest first (with their
    /// [`order_key`]).
    partners: Vec<(u64, usize)>,
    /// Every GPU by load (with its [`order_key`]), lightest first, from the last step.
    by_load: Vec<(u64, usize)>,
    /// The partner's slots a swap with one slot of the busiest GPU passes the tests with.
    passing: Vec<usize>,
    /// Per spare slot: its expert, GPU, the GPU's load and inverse speed, and the share.
    spare_info: Vec<Spare>,
    /// Experts a replacement on the busiest GPU may bring (those on one GPU that must hold
    /// them), in index order.
    bring: Vec<usize>,
    /// Slots whose expert has another replica.
    spare: Vec<usize>,
    /// GPUs of a slot's expert that end above the cap whatever replaces it.
    heavy: Vec<usize>,
    /// Per expert with several replicas: the two largest loads of its GPUs if it lost one
    /// replica, with their GPUs (`load_of_other_holder` without the other expert's relief).
    heavier_top: Vec<[(f64, usize); 2]>,
    /// Indices in `spare_info` of the spare slots not doomed at the step's cap, in order.
    live: Vec<usize>,
    /// The doomed ones as (their heavier other GPU, index).
    doomed: Vec<(usize, usize)>,
    /// Their indices grouped by that GPU (group `y` is `doomed_start[y]..doomed_start[y + 1]`).
    doomed_by_gpu: Vec<usize>,
    doomed_start: Vec<usize>,
    /// The indices one slot of the busiest GPU tests, in order.
    visit: Vec<usize>,
    /// The smallest share of any expert with one more replica, while no count changed.
    min_next: Option<f64>,
}

impl Scratch {
    /// Updates the per-slot shares after `mv` (whose replaced expert was `old_expert`): a swap
    /// changes its two slots, a replacement every slot of the two experts whose count changed.
    fn moved(&mut self, s: &SlotState, mv: Move, old_expert: usize) {
        match mv {
            Move::Swap(i, j) => {
                for slot in [i, j] {
                    self.share[slot] = s.share_now[s.expert_of_slot[slot]];
                }
            }
            Move::Replace(_, b) => {
                self.min_next = None;
                for e in [old_expert, b] {
                    for &slot in s.slots_of(e) {
                        self.share[slot] = s.share_now[e];
                    }
                }
            }
        }
    }
}

impl Candidates<'_> {
    /// Keeps `mv` if it improves on `current` and beats the best so far.
    fn offer(&mut self, mv: Move, sc: Score, current: f64) {
        let eps = current * REL_EPS;
        let improves = sc.objective < current - eps
            || (sc.objective <= current + eps
                && sc.ssq_change < -eps * current.max(f64::MIN_POSITIVE));
        let beats = |b: &Score| {
            if sc.objective < b.objective - eps {
                true
            } else if sc.objective > b.objective + eps {
                false
            } else {
                (sc.transfers, sc.ssq_change) < (b.transfers, b.ssq_change)
            }
        };
        if improves && self.best.as_ref().is_none_or(|b| beats(&b.1)) {
            self.best = Some((mv, sc));
        }
    }

    /// Transfers `mv` adds (0 when none are counted).
    fn transfers(&self, s: &SlotState, mv: Move) -> i64 {
        self.options.origin.map_or(0, |o| o.delta(s, mv))
    }

    /// Scores any move through [`SlotState::effect`].
    fn score(&mut self, s: &SlotState, tops: &Tops, mv: Move) -> Score {
        let (touched, new_load) = &mut self.buffers;
        let mask = &mut self.mask;
        s.effect(mv, touched, new_load);
        // `effect` sorts the shifts of a move touching many GPUs.
        let t = touched.len() as u64;
        self.work = self
            .work
            .saturating_add(1 + t * u64::from(t.max(2).ilog2()));
        let kk = s.windows;
        let (mut ssq_change, mut worst, mut sum) = (0.0, 0.0f64, 0.0);
        for k in 0..kk {
            let (mut m, scanned) = tops.untouched_max(s, k, touched, mask);
            if scanned {
                self.work = self.work.saturating_add(s.gpus() as u64);
            }
            for (t, &g) in touched.iter().enumerate() {
                let (old, new) = (s.gpu_load(k, g), new_load[t * kk + k]);
                m = m.max(new);
                ssq_change += new * new - old * old;
            }
            worst = worst.max(m);
            sum += m;
        }
        let objective = match self.options.aggregate {
            Aggregate::Worst => worst,
            Aggregate::Mean => sum / kk as f64,
        };
        Score {
            objective,
            transfers: self.transfers(s, mv),
            ssq_change,
        }
    }

    /// Swaps of a replica on a hot GPU with a replica elsewhere.
    fn swaps(&mut self, s: &SlotState, tops: &Tops, hot: &[usize], current: f64) {
        if s.windows == 1 {
            self.swaps_one_window(s, tops, hot[0], current);
            return;
        }
        for &g in hot {
            self.work = self.work.saturating_add(s.expert_of_slot.len() as u64);
            s.moves_touching(g, false, |mv| {
                if self.work >= WORK_BUDGET {
                    return;
                }
                let sc = self.score(s, tops, mv);
                self.offer(mv, sc, current);
            });
        }
    }

    /// [`Candidates::swaps`] for a single window, inlined: the busiest GPU `g` gives a replica
    /// of share `sa` and takes one of share `sb < sa` from a GPU that stays below the maximum.
    fn swaps_one_window(&mut self, s: &SlotState, tops: &Tops, g: usize, current: f64) {
        let limit = current * (1.0 - REL_EPS);
        self.work = self
            .work
            .saturating_add((s.expert_of_slot.len() + 2 * s.gpus()) as u64);
        // Kept up to date by `improve` after each move.
        let share = std::mem::take(&mut self.scratch.share);
        let (lg, ig) = (s.gpu_load(0, g), s.inv_speed(g));
        // Lightest partners first: their swaps can balance the most, so later partners are
        // usually cut by the bound below. Ties by GPU index: the order of a stable sort of
        // the GPUs by load.
        let mut partners = std::mem::take(&mut self.scratch.partners);
        // Every GPU in the last step's order, sorted again: a move changes few loads.
        let by_load = &mut self.scratch.by_load;
        if by_load.len() != s.gpus() {
            by_load.clear();
            by_load.extend((0..s.gpus()).map(|h| (0, h)));
        }
        for (key, h) in by_load.iter_mut() {
            *key = order_key(s.gpu_load(0, *h));
        }
        sort_nearly_sorted(by_load);
        partners.clear();
        partners.extend(
            by_load
                .iter()
                .filter(|&&(_, h)| h != g && s.gpu_load(0, h) < limit),
        );
        // Counting transfers: +1 when the busiest GPU holds only its old experts (any swap
        // then adds one there), else -1 (its lowest possible share of a swap's transfers).
        let mut passing = std::mem::take(&mut self.scratch.passing);
        let g_term = self
            .options
            .origin
            .map(|o| if o.untouched(s, g) { 1 } else { -1 });
        for &(_, h) in &partners {
            if self.work >= WORK_BUDGET {
                break;
            }
            let (lh, ih) = (s.gpu_load(0, h), s.inv_speed(h));
            let others = tops.top[0]
                .iter()
                .find(|&&x| x != g && x != h)
                .map_or(0.0, |&x| s.gpu_load(0, x));
            // Counting transfers, the sum of squares no longer decides ties of the objective
            // (fewer transfers first), so only the objective may rule a partner out, unless
            // no swap with it can have fewer transfers either.
            let cannot_win = match (self.options.origin, g_term) {
                (Some(o), Some(g_term)) => {
                    self.partner_cannot_win_counting(s, o, (lg, ig, g_term), (h, lh, ih), others)
                }
                _ => self.partner_cannot_win(lg, ig, lh, ih, others),
            };
            if cannot_win {
                continue;
            }
            let pairs = s.cluster.slot_range(g).len() * s.cluster.slot_range(h).len();
            self.work = self.work.saturating_add(pairs as u64);
            // The partner's slots by share (kept sorted by the state): for each slot of `g`,
            // the swaps that pass the tests below are a run of them (see the loop), found
            // without testing every pair.
            // Heaviest first, each slot's share read back from its sort key (the same value
            // as `share`'s).
            let heaviest_first = s.slots_by_share(h).iter().rev();
            // Counting transfers, when no swap with this partner can win on the objective
            // (see `partner_cannot_win_counting`), the fewest transfers of a swap of slot `i`
            // decide: `cost(h, a) - cost(g, a)` for its replica `a` plus the least
            // `cost(g, b) - cost(h, b)` of the partner's replicas (`Origin::delta`).
            let tie_bound = match (self.options.origin, self.best) {
                (Some(o), Some(_)) => {
                    let b_term = o.least_partner_term(s, g, h);
                    let cross = (lg * ih + lh * ig) / (ig + ih);
                    let ssq = -(lg * ig - lh * ih).powi(2) / (ig * ig + ih * ih);
                    Some((
                        o,
                        b_term,
                        others.max(cross - cross.abs() * 1e-9),
                        ssq - (lg * lg + lh * lh) * 1e-9,
                    ))
                }
                _ => None,
            };
            for i in s.cluster.slot_range(g) {
                if s.has(h, s.expert_of_slot[i]) {
                    continue;
                }
                if let (Some((o, b_term, lowest, ssq)), Some((_, best))) = (tie_bound, self.best) {
                    let a = s.expert_of_slot[i];
                    let fewest = i64::from(!o.holds(h, a)) - i64::from(!o.holds(g, a)) + b_term;
                    // No swap is better in objective by `offer`'s tolerance; then none with
                    // more transfers, or as many and no lower sum of squares, is taken.
                    if lowest >= best.objective
                        && (fewest > best.transfers
                            || (fewest == best.transfers && ssq >= best.ssq_change))
                    {
                        continue;
                    }
                }
                // A swap needs `d > 0`, that is a lighter replica (`x - y > 0` exactly when
                // `x > y`); taking them heaviest first, `d` and so `new_h` only grow (every
                // operation is monotone): past the first that puts `h` at the limit, none
                // passes. The others are tested as before, then offered in slot order.
                let si = share[i];
                passing.clear();
                for &(key, j) in heaviest_first.clone() {
                    let sj = key_value(key);
                    // Not lighter (`sj >= si`; shares are never NaN).
                    if sj >= si {
                        continue;
                    }
                    let d = si - sj;
                    let (new_g, new_h) = (lg - d * ig, lh + d * ih);
                    if new_h >= limit {
                        break;
                    }
                    if d <= 0.0 || new_g >= limit || s.has(g, s.expert_of_slot[j]) {
                        continue;
                    }
                    passing.push(j);
                }
                passing.sort_unstable();
                for &j in passing.iter() {
                    let d = share[i] - share[j];
                    let (new_g, new_h) = (lg - d * ig, lh + d * ih);
                    let mv = Move::Swap(i, j);
                    let sc = Score {
                        objective: others.max(new_g).max(new_h),
                        transfers: self.transfers(s, mv),
                        ssq_change: new_g * new_g + new_h * new_h - lg * lg - lh * lh,
                    };
                    self.offer(mv, sc, current);
                }
            }
        }
        self.scratch.share = share;
        self.scratch.partners = partners;
        self.scratch.passing = passing;
    }

    /// [`Candidates::partner_objective_too_high`], or else (no swap with partner `h` can
    /// reach an objective below the best candidate's by more than `offer`'s tolerance) whether
    /// none can add fewer transfers, or as few with a lower sum of squares: a swap adds at least
    /// `g_term + h_term` transfers (+1 for a GPU holding only its old experts, else -1), and
    /// its sum-of-squares change is at least `-(lg ig - lh ih)^2 / (ig^2 + ih^2)` (less a
    /// relative `1e-9` for rounding). Skips only partners none of whose swaps `offer` would
    /// keep, so the search is unchanged.
    fn partner_cannot_win_counting(
        &self,
        s: &SlotState,
        origin: &Origin,
        (lg, ig, g_term): (f64, f64, i64),
        (h, lh, ih): (usize, f64, f64),
        others: f64,
    ) -> bool {
        let Some((_, best)) = self.best else {
            return false;
        };
        if self.partner_objective_too_high(lg, ig, lh, ih, others) {
            return true;
        }
        // Not below the best objective at all: then no swap is better in objective by
        // `offer`'s tolerance either, and transfers decide.
        let cross = (lg * ih + lh * ig) / (ig + ih);
        if others.max(cross - cross.abs() * 1e-9) < best.objective {
            return false;
        }
        let h_term = if origin.untouched(s, h) { 1 } else { -1 };
        let transfers = g_term + h_term;
        if transfers != best.transfers {
            return transfers > best.transfers;
        }
        let ssq = -(lg * ig - lh * ih).powi(2) / (ig * ig + ih * ih);
        ssq - (lg * lg + lh * lh) * 1e-9 >= best.ssq_change
    }

    /// Whether no swap between the busiest GPU (load `lg`, inverse speed `ig`) and a partner
    /// (`lh`, `ih`) can beat the best candidate: shifting `d` raw load makes the pair
    /// `(lg - d ig, lh + d ih)`, whose larger value is at least where the two lines cross and
    /// whose sum-of-squares change is at least `-(lg ig - lh ih)^2 / (ig^2 + ih^2)`.
    fn partner_cannot_win(&self, lg: f64, ig: f64, lh: f64, ih: f64, others: f64) -> bool {
        let Some((_, best)) = self.best else {
            return false;
        };
        let eps = best.objective * REL_EPS;
        let cross = (lg * ih + lh * ig) / (ig + ih);
        let objective = others.max(cross);
        let ssq = -(lg * ig - lh * ih).powi(2) / (ig * ig + ih * ih);
        objective > best.objective + eps
            || (objective >= best.objective - eps && ssq >= best.ssq_change)
    }

    /// Whether every swap between the busiest GPU and a partner leaves an objective above the
    /// best candidate's by more than the tolerance `offer` allows (see
    /// [`Candidates::partner_cannot_win`]).
    fn partner_objective_too_high(&self, lg: f64, ig: f64, lh: f64, ih: f64, others: f64) -> bool {
        let Some((_, best)) = self.best else {
            return false;
        };
        let eps = best.objective * REL_EPS;
        let cross = (lg * ih + lh * ig) / (ig + ih);
        // A relative 1e-9 below the crossing absorbs its rounding.
        others.max(cross - cross.abs() * 1e-9) > best.objective + eps
    }

    /// Replica moves involving a hot GPU: one of its replicas becomes another expert, or one of
    /// its experts gains a replica elsewhere (the moves of
    /// [`SlotState::replacements_touching`], in its order).
    fn replacements(&mut self, s: &SlotState, tops: &Tops, hot: &[usize], current: f64) {
        for &g in hot {
            let slots = s.cluster.slot_range(g).len() * (s.expert_of_slot.len() + s.experts);
            self.work = self.work.saturating_add(slots as u64);
            if s.windows > 1 {
                s.replacements_touching(g, |mv| self.try_replacement(s, tops, mv, current));
                continue;
            }
            let mut scratch = std::mem::take(&mut self.scratch);
            self.replacements_one_window(s, tops, g, current, &mut scratch);
            self.scratch = scratch;
        }
    }

    /// [`Candidates::replacements`] of the busiest GPU `g` for a single window, with the cheap
    /// tests of [`Candidates::try_replacement`] inlined and most of their work done once per
    /// step (the moves scored, and their order, are those of
    /// [`SlotState::replacements_touching`] that pass the tests).
    fn replacements_one_window(
        &mut self,
        s: &SlotState,
        tops: &Tops,
        g: usize,
        current: f64,
        scratch: &mut Scratch,
    ) {
        let Scratch {
            spare,
            heavy,
            heavier_top,
            bring,
            spare_info,
            live,
            doomed,
            doomed_start,
            doomed_by_gpu,
            visit,
            min_next,
            ..
        } = scratch;
        s.spare_slots_into(spare);
        let next_share = &s.share_more;
        // The smallest next share changes only with the replica counts (a replacement).
        let min_next = *min_next
            .get_or_insert_with(|| next_share.iter().copied().fold(f64::INFINITY, f64::min));
        // Per expert with a spare replica: the two largest loads its GPUs would have if it
        // lost a replica, each added up as `load_of_other_holder` adds it before the other
        // expert's relief (which can only lower it): when the larger one off the slot's GPU
        // is within the cap, no holder ends above it and the exact test below is not needed.
        // Only the entries of the spare slots' experts are read: only those are reset.
        let none = [(f64::NEG_INFINITY, usize::MAX); 2];
        heavier_top.resize(s.experts, none);
        for &j in spare.iter() {
            heavier_top[s.expert_of_slot[j]] = none;
        }
        for &j in spare.iter() {
            let (x, y) = (s.expert_of_slot[j], s.gpu_of_slot[j]);
            let v = s.gpu_load(0, y) + (s.share_less[x] - s.share_now[x]) * s.inv_speed(y);
            let top = &mut heavier_top[x];
            if v > top[0].0 {
                top[1] = top[0];
                top[0] = (v, y);
            } else if v > top[1].0 {
                top[1] = (v, y);
            }
        }
        // The spare slots' figures, looked up once per step rather than once per slot of `g`.
        spare_info.clear();
        spare_info.extend(spare.iter().map(|&j| {
            let (x, h) = (s.expert_of_slot[j], s.gpu_of_slot[j]);
            Spare {
                j,
                x,
                h,
                load: s.gpu_load(0, h),
                share: s.share_now[x],
                inv_speed: s.inv_speed(h),
            }
        }));
        // Spare slots whose heavier other GPU `y` (off the slot's GPU) ends above the cap
        // whatever expert the slot takes are doomed: the test below rejects them unless `y`
        // holds that expert (then its relief may save it). The cap only falls during the
        // scan except by `offer`'s tolerance, which the scan watches for (see below).
        let sorted_cap = self.cap(current);
        live.clear();
        doomed.clear();
        doomed_start.clear();
        doomed_start.resize(s.gpus() + 1, 0);
        for (k, sp) in spare_info.iter().enumerate() {
            let [(v1, g1), (v2, g2)] = heavier_top[sp.x];
            let (v, y) = if g1 == sp.h { (v2, g2) } else { (v1, g1) };
            if v > sorted_cap {
                doomed.push((y, k));
                doomed_start[y + 1] += 1;
            } else {
                live.push(k);
            }
        }
        // Grouped by their heavier GPU (a counting sort: each group in index order).
        for y in 0..s.gpus() {
            doomed_start[y + 1] += doomed_start[y];
        }
        doomed_by_gpu.clear();
        doomed_by_gpu.resize(doomed.len(), 0);
        for &(y, k) in doomed.iter() {
            doomed_by_gpu[doomed_start[y]] = k;
            doomed_start[y] += 1;
        }
        // `doomed_start[y]` is now where group `y + 1` starts; shift back.
        for y in (0..s.gpus()).rev() {
            doomed_start[y + 1] = doomed_start[y];
        }
        doomed_start[0] = 0;
        let (lg, ig) = (s.gpu_load(0, g), s.inv_speed(g));
        for i in s.cluster.slot_range(g) {
            let a = s.expert_of_slot[i];
            let sa = s.share_now[a];
            // The slot's new load rises with `b`'s next share (each operation is monotone):
            // when even the smallest fails the first test below, every `b` does.
            if s.count[a] >= 2 && lg + (min_next - sa) * ig < self.ceiling(current) {
                // Other replicas of `a` that end above the cap whatever `b` is, unless they
                // hold `b` too (then `b`'s share lightens them): computed once for the
                // slot, with the cap as it is now (it only falls, so this skips no move
                // the exact test below would keep).
                let cap = self.cap(current);
                heavy.clear();
                heavy.extend(
                    s.slots_of(a)
                        .iter()
                        .map(|&o| s.gpu_of_slot[o])
                        .filter(|&x| {
                            x != g
                                && s.gpu_load(0, x)
                                    + (s.share_less[a] - s.share_now[a]) * s.inv_speed(x)
                                    > cap
                        }),
                );
                // `try_replacement`'s first test, inlined (the same expression, against
                // the ceiling refreshed after each scored move): most replacements end here.
                // An expert `b` must be on every heavy GPU: when there is one, only its
                // experts are looked at (in index order, so the moves come in the same order).
                let mut ceiling = self.ceiling(current);
                let mut try_expert = |this: &mut Self, b: usize| {
                    let nb = next_share[b];
                    if lg + (nb - sa) * ig >= ceiling {
                        return;
                    }
                    if b != a && !s.has(g, b) && heavy.iter().all(|&x| s.has(x, b)) {
                        this.try_replacement(s, tops, Move::Replace(i, b), current);
                        ceiling = this.ceiling(current);
                    }
                };
                if let Some(&x) = heavy.first() {
                    bring.clear();
                    bring.extend(s.cluster.slot_range(x).map(|o| s.expert_of_slot[o]));
                    bring.sort_unstable();
                    for &b in bring.iter() {
                        try_expert(self, b);
                    }
                } else {
                    for b in 0..next_share.len() {
                        try_expert(self, b);
                    }
                }
            }
            // `try_replacement`'s two tests, inlined (the same expressions, against bounds
            // refreshed after each scored move): the slot's GPU, then the other GPUs of the
            // slot's expert, which get heavier.
            let (mut ceiling, mut cap) = (self.ceiling(current), self.cap(current));
            let next_a = next_share[a];
            // The spare slots the test below may pass, in slot order: the live ones and the
            // doomed ones whose heavier GPU holds `a` (`a`'s GPUs are few). Should the cap
            // ever rise above the one the slots were sorted with (a later best may be worse
            // by `offer`'s tolerance), the remaining slots are all tested, as before.
            visit.clear();
            visit.extend_from_slice(live);
            for &o in s.slots_of(a) {
                let y = s.gpu_of_slot[o];
                visit.extend_from_slice(&doomed_by_gpu[doomed_start[y]..doomed_start[y + 1]]);
            }
            if visit.len() > live.len() {
                visit.sort_unstable();
            }
            let mut next = 0;
            // A replacement scored above (this slot's experts) may have raised it already.
            let mut all_from: Option<usize> = (cap > sorted_cap).then_some(0);
            loop {
                let k = match all_from {
                    Some(k) if k < spare_info.len() => {
                        all_from = Some(k + 1);
                        k
                    }
                    Some(_) => break,
                    None if next < visit.len() => {
                        next += 1;
                        visit[next - 1]
                    }
                    None => break,
                };
                let Spare {
                    j,
                    x,
                    h,
                    load,
                    share,
                    inv_speed,
                } = spare_info[k];
                let new_h = load + (next_a - share) * inv_speed;
                if new_h >= ceiling || x == a || s.has(h, a) {
                    continue;
                }
                // The exact test's answer, usually from the cached top two: the heavier one
                // off `h` decides when it is within the cap (no holder is above it) or when it
                // does not hold `a` (its load is then exactly the cached value, above the cap).
                let [(v1, g1), (v2, g2)] = heavier_top[x];
                let (v, y) = if g1 == h { (v2, g2) } else { (v1, g1) };
                let heavier = v > cap
                    && (!s.has(y, a)
                        || s.slots_of(x).iter().any(|&o| {
                            let y = s.gpu_of_slot[o];
                            y != h && s.load_of_other_holder(j, a, y) > cap
                        }));
                if !heavier {
                    self.try_replacement(s, tops, Move::Replace(j, a), current);
                    (ceiling, cap) = (self.ceiling(current), self.cap(current));
                    if cap > sorted_cap && all_from.is_none() {
                        all_from = Some(k + 1);
                    }
                }
            }
        }
    }

    /// The largest GPU load (one window) a move may leave and still be offered: `offer` needs
    /// the objective, at least every touched GPU's load, within `current + eps` and within
    /// `best + eps`; a relative `1e-9` more absorbs rounding, so no move `offer` would keep is
    /// skipped.
    fn cap(&self, current: f64) -> f64 {
        let cap = self
            .best
            .map_or(current, |(_, best)| current.min(best.objective))
            + current * REL_EPS;
        cap + cap.abs() * 1e-9
    }

    /// The load the slot's GPU must stay below for a replacement to be scored.
    fn ceiling(&self, current: f64) -> f64 {
        self.best.map_or(current * (1.0 - REL_EPS), |(_, best)| {
            (current * (1.0 - REL_EPS)).min(best.objective * (1.0 + REL_EPS))
        })
    }

    /// Scores and offers one replacement unless a cheap test shows it cannot be kept.
    fn try_replacement(&mut self, s: &SlotState, tops: &Tops, mv: Move, current: f64) {
        let Move::Replace(slot, b) = mv else { return };
        if self.work >= WORK_BUDGET {
            return;
        }
        // The slot's GPU alone must stay below the maximum, and must not exceed the best
        // candidate's objective (which the move's objective is at least).
        let ceiling = self.ceiling(current);
        if replaced_slot_load(s, slot, b).is_some_and(|new| new >= ceiling) {
            return;
        }
        // Nor may another replica of the slot's expert, which gets heavier, end above the cap:
        // skipping such a move changes nothing, and saves its full score.
        if s.windows == 1 {
            let cap = self.cap(current);
            let h = s.gpu_of_slot[slot];
            let a = s.expert_of_slot[slot];
            let over = s.slots_of(a).iter().any(|&o| {
                let x = s.gpu_of_slot[o];
                x != h && s.load_of_other_holder(slot, b, x) > cap
            });
            if over {
                return;
            }
        }
        let sc = self.score(s, tops, mv);
        self.offer(mv, sc, current);
    }
}

/// With one window, the load of `slot`'s GPU after the slot takes expert `b` (`None` with
/// several windows, where the full score decides).
#[inline]
fn replaced_slot_load(s: &SlotState, slot: usize, b: usize) -> Option<f64> {
    if s.windows > 1 {
        return None;
    }
    let g = s.gpu_of_slot[slot];
    let a = s.expert_of_slot[slot];
    Some(s.gpu_load(0, g) + (s.share_more[b] - s.share_now[a]) * s.inv_speed(g))
}

#[cfg(test)]
mod tests {
    use super::Origin;
    use crate::model::PlacementCluster;
    use crate::state::{Move, SlotState};

    /// [`Origin::least_partner_term`] and [`Origin::untouched`] read from bits give what a
    /// scan of the slots gives, on states moved far from the origin (experts across several
    /// words).
    #[test]
    fn partner_terms_from_bits_equal_the_slot_scans() {
        let c = PlacementCluster::uniform(10, 7, 2).unwrap();
        let experts = 150;
        let w: Vec<f64> = (0..experts).map(|e| 1.0 + (e % 17) as f64).collect();
        let map: Vec<usize> = (0..70).map(|slot| (slot * 37) % experts).collect();
        let origin = Origin::new(&c.gpu_of_each_slot(), &map, c.gpus(), experts);
        let mut s = SlotState::new(&c, &[&w], map);
        let mut checked = 0;
        for k in 0..3000_u64 {
            let r = crate::optimal::mix(k);
            #[allow(clippy::cast_possible_truncation)]
            let (x, y) = ((r % 70) as usize, ((r >> 32) % 150) as usize);
            let mv = if k % 2 == 0 {
                Move::Swap(x, y % 70)
            } else {
                Move::Replace(x, y)
            };
            if s.is_valid(mv) {
                s.apply(mv);
            }
            if k % 50 != 0 {
                continue;
            }
            for g in 0..c.gpus() {
                let untouched = c
                    .slot_range(g)
                    .all(|slot| origin.holds(g, s.expert_of_slot[slot]));
                assert_eq!(origin.untouched(&s, g), untouched);
                for h in 0..c.gpus() {
                    let least = c
                        .slot_range(h)
                        .map(|j| {
                            let b = s.expert_of_slot[j];
                            i64::from(!origin.holds(g, b)) - i64::from(!origin.holds(h, b))
                        })
                        .min()
                        .unwrap_or(1);
                    assert_eq!(origin.least_partner_term(&s, g, h), least, "{g} {h}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000);
    }

    #[test]
    fn held_lists_each_gpus_old_experts_in_index_order() {
        // Two GPUs of three slots, experts across three 64-bit words.
        let origin = Origin::new(&[0, 0, 0, 1, 1, 1], &[129, 3, 64, 0, 64, 127], 2, 130);
        assert_eq!(origin.held(0).collect::<Vec<_>>(), vec![3, 64, 129]);
        assert_eq!(origin.held(1).collect::<Vec<_>>(), vec![0, 64, 127]);
        for g in 0..2 {
            let scanned: Vec<usize> = (0..130).filter(|&e| origin.holds(g, e)).collect();
            assert_eq!(origin.held(g).collect::<Vec<_>>(), scanned);
        }
    }
}

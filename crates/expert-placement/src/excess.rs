//! Bringing every GPU under a load target with few transfers: a greedy on excess load per
//! transfer.

use crate::local_search::{Origin, REL_EPS};
use crate::options::Deadline;
use crate::state::{Move, SlotState};

/// Applies moves to `s` (one window) until no GPU's load exceeds `target`, each time the move
/// touching the busiest GPU that removes the most excess load (`sum_g max(0, L_g - target)`) per
/// transfer it adds (moves adding none come first, by excess removed). Stops when the excess is
/// gone, when no move removes any, or after `max_moves`; calls `after_move` with the state and
/// the move after each step. Returns whether the target was reached.
///
/// Each step lowers the excess by more than a relative [`REL_EPS`], so the greedy ends; it also
/// stops at `deadline` (the clock is read before every move, and before every step of the undo
/// pass), saying so with [`Reduced::Cut`].
pub(crate) fn reduce_excess(
    s: &mut SlotState,
    origin: &Origin,
    target: f64,
    max_moves: usize,
    deadline: &Deadline,
    after_move: &mut dyn FnMut(&SlotState, Move),
) -> Reduced {
    let tiny = target.abs().max(f64::MIN_POSITIVE) * REL_EPS;
    let over = |l: f64| (l - target).max(0.0);
    let late = || deadline.passed();
    let (mut share, mut spare) = (Vec::new(), Vec::new());
    let (mut lightest, mut fewest, mut b_excess) = (Vec::new(), Vec::new(), Vec::new());
    let excess_of = |s: &SlotState, e: usize| {
        s.slots_of(e)
            .iter()
            .fold(0.0, |sum, &o| sum + over(s.gpu_load(0, s.gpu_of_slot[o])))
    };
    let (mut min_next, mut max_replicas, mut counts_changed) = (f64::INFINITY, 0, true);
    let mut partners: Vec<(usize, f64, f64, i64)> = Vec::new();
    let mut listed: Vec<usize> = Vec::new();
    let mut lighter: Vec<(usize, f64)> = Vec::new();
    let mut spare_info: Vec<SpareSlot> = Vec::new();
    // Per slot of the busiest GPU: its expert's other GPUs, their terms of a replacement's
    // gain, and what they lose when it gains a replica elsewhere (reused buffers).
    let (mut a_gpus, mut a_terms, mut relief) = (Vec::new(), Vec::new(), Vec::new());
    let mut near: Vec<u64> = Vec::new();
    // Per slot its replica's share, and per GPU the fewest transfers a swap adds on it (+1
    // when it holds only experts it held before: giving one away adds a transfer; else -1),
    // both updated after each move where it changed them.
    let kept = |s: &SlotState, h: usize| if origin.untouched(s, h) { 1_i64 } else { -1 };
    share.extend(s.expert_of_slot.iter().map(|&e| s.share_now[e]));
    fewest.extend((0..s.gpus()).map(|h| kept(s, h)));
    for _ in 0..max_moves {
        if late() {
            return Reduced::Cut;
        }
        let g = (0..s.gpus())
            .max_by(|&a, &b| s.gpu_load(0, a).total_cmp(&s.gpu_load(0, b)))
            .unwrap_or(0);
        if over(s.gpu_load(0, g)) <= tiny {
            return if undo_moves(s, origin, target, deadline, after_move) {
                Reduced::Reached
            } else {
                Reduced::Cut
            };
        }
        // (free move, gain per transfer, gain) of the best candidate.
        let mut best: Option<(Move, (bool, f64, f64))> = None;
        // `consider` with the move's transfers already known.
        let offer =
            |best: &mut Option<(Move, (bool, f64, f64))>, mv: Move, gain: f64, cost: i64| {
                let key = if cost <= 0 {
                    (true, gain, gain)
                } else {
                    (false, gain / cost as f64, gain)
                };
                if best.is_none_or(|b| key > b.1) {
                    *best = Some((mv, key));
                }
            };
        let consider = |best: &mut Option<(Move, (bool, f64, f64))>, mv: Move, gain: f64| {
            if gain <= tiny {
                return;
            }
            offer(best, mv, gain, origin.delta(s, mv));
        };
        // The moves of `SlotState::moves_touching(g, true)` in its order, each tested cheapest
        // first (the gain before validity): most are rejected before any look-up. The buffers
        // are reused from step to step.
        let (lg, ig) = (s.gpu_load(0, g), s.inv_speed(g));
        s.spare_slots_into(&mut spare);
        let next_share = &s.share_more;
        // Per expert: the excess of its GPUs added up (0 exactly when none is above the
        // target), the most a replica more of it can remove there: all of them at the first
        // step, then after each move those of the experts on the GPUs it changed.
        if b_excess.is_empty() {
            b_excess.extend((0..s.experts).map(|e| excess_of(s, e)));
        }
        let max_excess = b_excess.iter().copied().fold(0.0, f64::max);
        // Both change only with the replica counts (a replacement, not a swap).
        if counts_changed {
            min_next = next_share.iter().copied().fold(f64::INFINITY, f64::min);
            max_replicas = s.count.iter().copied().max().unwrap_or(0);
            counts_changed = false;
        }
        // What the spare-slot scan reads of each spare slot, once per step: with exactly one
        // other replica of its expert, that GPU's term of the gain (the same expression the
        // scan would add, so the same value).
        spare_info.clear();
        spare_info.extend(spare.iter().map(|&j| {
            let (x, h) = (s.expert_of_slot[j], s.gpu_of_slot[j]);
            let other = match s.slots_of(x) {
                &[o1, o2] => {
                    let y = s.gpu_of_slot[if o1 == j { o2 } else { o1 }];
                    let dx = s.share_less[x] - share[j];
                    let ly = s.gpu_load(0, y);
                    Some((y, over(ly) - over(ly + dx * s.inv_speed(y))))
                }
                _ => None,
            };
            // What `x`'s other GPUs lose, added up from 0 in the scan's order, and the sum of
            // the terms' sizes.
            let (damage, size) = match other {
                Some((_, term)) => (0.0 + term, term.abs()),
                None => {
                    let dx = s.share_less[x] - share[j];
                    s.slots_of(x)
                        .iter()
                        .filter(|&&o| o != j)
                        .fold((0.0, 0.0), |(sum, size), &o| {
                            let y = s.gpu_of_slot[o];
                            let ly = s.gpu_load(0, y);
                            let term = over(ly) - over(ly + dx * s.inv_speed(y));
                            (sum + term, size + term.abs())
                        })
                }
            };
            SpareSlot {
                slot: j,
                expert: x,
                gpu: h,
                load: s.gpu_load(0, h),
                inv_speed: s.inv_speed(h),
                other,
                damage,
                size,
                kept_cost: i64::from(!origin.holds(h, x)),
            }
        }));
        // Over the spare slots: the largest excess of the slot's GPU plus what its expert's
        // other GPUs lose, and of the excess plus the sizes of those terms (the spare-slot
        // scan's bound below).
        let (mut spare_top, mut spare_size) = (f64::NEG_INFINITY, 0.0_f64);
        for sp in &spare_info {
            let lift = over(sp.load);
            spare_top = spare_top.max(lift + sp.damage);
            spare_size = spare_size.max(lift + sp.size);
        }
        // Per GPU: its lightest replica's share.
        lightest.clear();
        lightest.extend((0..s.gpus()).map(|h| {
            // The state keeps each GPU's slots sorted by share, lightest first.
            s.slots_by_share(h)
                .first()
                .map_or(f64::INFINITY, |&(_, j)| share[j])
        }));
        // Whether a GPU other than the busiest is above the target (then a replacement may
        // also relieve it, and the bound on the busiest GPU's replacements below is not used).
        let others_over = (0..s.gpus()).any(|h| h != g && s.gpu_load(0, h) > target);
        // The GPUs a swap with the busiest one may help, in order, with their loads and
        // inverse speeds (the same for every slot of the busiest GPU).
        partners.clear();
        partners.extend(
            (0..s.gpus())
                .filter(|&h| h != g)
                .map(|h| (h, s.gpu_load(0, h), s.inv_speed(h)))
                .filter(|&(_, lh, ih)| {
                    !(lh > target && ih == ig && swaps_over_target_lose(lg, lh, target))
                })
                .map(|(h, lh, ih)| {
                    // The fewest transfers the partner's replica adds in any swap with `g`
                    // (`cost(g, b) - cost(h, b)` of `origin.delta`, the rest is the replica
                    // of `g`'s).
                    (h, lh, ih, origin.least_partner_term(s, g, h))
                }),
        );
        for i in s.cluster.slot_range(g) {
            let a = s.expert_of_slot[i];
            // The slots in order, GPU by GPU (slot ranges are consecutive).
            // `cost(h, a) - cost(g, a)` of `origin.delta` for a swap of this slot: with the
            // partner's least `b` term, a bound on the swap's transfers at least as high as
            // the GPUs' `fewest`.
            let a_term_g = i64::from(!origin.holds(g, a));
            // A swap with a partner at or below the target removes at most the busiest GPU's
            // excess (exactly: the partner's terms are 0 or negative). When a swap adding two
            // transfers cannot beat the best with that, a partner that did not hold `a` and
            // whose replicas all add a transfer on `g` (its least term 1), with `g` holding
            // `a` before, is skipped: its swaps add at least two.
            let swaps_saturated = a_term_g == 0 && cannot_beat(best.map(|b| b.1), over(lg), 2);
            for &(h, lh, ih, b_term) in &partners {
                if lh <= target {
                    if swaps_saturated && b_term > 0 && !origin.holds(h, a) {
                        continue;
                    }
                    let least = i64::from(!origin.holds(h, a)) - a_term_g + b_term;
                    if swaps_cannot_win(
                        best.map(|b| b.1),
                        (lg, ig),
                        (lh, ih),
                        share[i] - lightest[h],
                        (fewest[g] + fewest[h]).max(least),
                        target,
                    ) {
                        continue;
                    }
                    // Only a lighter replica gains here (`d > 0` exactly when `sj < share[i]`):
                    // the partner's slots lightest first (the state keeps them sorted by the
                    // same shares) up to the first that is not lighter. The passing swaps are
                    // offered in slot order, as the scan of every slot offered them (the gain
                    // and validity do not depend on the best so far).
                    lighter.clear();
                    for &(_, j) in s.slots_by_share(h) {
                        let sj = share[j];
                        if sj >= share[i] {
                            break;
                        }
                        let d = share[i] - sj;
                        let gain = over(lg) - over(lg - d * ig) + over(lh) - over(lh + d * ih);
                        if gain > tiny && s.is_valid(Move::Swap(i, j)) {
                            lighter.push((j, gain));
                        }
                    }
                    if lighter.len() > 1 {
                        lighter.sort_unstable_by_key(|&(j, _)| j);
                    }
                    for &(j, gain) in &lighter {
                        consider(&mut best, Move::Swap(i, j), gain);
                    }
                    continue;
                }
                let range = s.cluster.slot_range(h);
                for (j, &sj) in range.clone().zip(&share[range]) {
                    // Two GPUs change: no need for the general effect. A replica no lighter
                    // than the one it replaces on the busiest GPU gains nothing unless the
                    // partner is above the target too (exactly: `over` is monotone, and 0
                    // below the target).
                    let d = share[i] - sj;
                    if d <= 0.0 && lh <= target {
                        continue;
                    }
                    let gain = over(lg) - over(lg - d * ig) + over(lh) - over(lh + d * ih);
                    if gain > tiny && s.is_valid(Move::Swap(i, j)) {
                        consider(&mut best, Move::Swap(i, j), gain);
                    }
                }
            }
            a_gpus.clear();
            a_gpus.extend(
                s.slots_of(a)
                    .iter()
                    .map(|&o| s.gpu_of_slot[o])
                    .filter(|&x| x != g),
            );
            let a_gpus = &a_gpus;
            let (ca, sa) = (s.count[a], share[i]);
            // With every other GPU at or below the target, `Replace(i, b)` removes at most
            // what emptying the slot would (`b`'s share is at least 0, and every other term is
            // 0 or negative); it adds at least `fewest[g]` transfers.
            let b_moves_cannot_win = !others_over
                && cannot_beat(
                    best.map(|b| b.1),
                    over(lg) - over(lg + (0.0 - sa) * ig),
                    fewest[g],
                );
            if ca >= 2 && !b_moves_cannot_win {
                // `a` loses this replica: its other GPUs get heavier by the same amount for
                // every `b` not on them, so their part of the gain is computed once. For such
                // a `b` the gain is added up here in `replace_gain`'s order (same value), the
                // others go through `replace_gain` itself.
                let da = s.share_less[a] - s.share_now[a];
                a_terms.clear();
                a_terms.extend(a_gpus.iter().map(|&x| {
                    let lx = s.gpu_load(0, x);
                    over(lx) - over(lx + da * s.inv_speed(x))
                }));
                let a_terms = &a_terms;
                let a_cost = i64::from(!origin.holds(g, a));
                let one = |best: &mut Option<(Move, (bool, f64, f64))>, b: usize| {
                    let nb = next_share[b];
                    // On the busiest GPU the slot must get lighter.
                    let lighter_slot = (nb - sa) * ig < 0.0;
                    if b == a || !lighter_slot || s.has(g, b) {
                        return;
                    }
                    let gain = if a_gpus.iter().any(|&x| s.has(x, b)) {
                        replace_gain(s, i, b, &over)
                    } else {
                        let mut gain = over(lg) - over(lg + (nb - sa) * ig);
                        for &t in a_terms {
                            gain += t;
                        }
                        // `b`'s GPUs get lighter: each adds at most its excess. None above the
                        // target: each adds exactly 0. Otherwise, when even every excess
                        // added (with a margin for the order of the additions) cannot beat
                        // the best, neither can the move.
                        let most = b_excess[b];
                        // The move's transfers (`origin.delta`, inlined).
                        let cost = || i64::from(!origin.holds(g, b)) - a_cost;
                        if most == 0.0 {
                            if gain > tiny {
                                offer(best, Move::Replace(i, b), gain, cost());
                            }
                            return;
                        }
                        let cost = cost();
                        let n = s.count[b] as f64;
                        let bound = gain + most + (gain.abs() + most) * 1e-14 * (n + 1.0);
                        if bound <= tiny || cannot_beat(best.map(|x| x.1), bound, cost) {
                            return;
                        }
                        let db = nb - s.share_now[b];
                        for &o in s.slots_of(b) {
                            let y = s.gpu_of_slot[o];
                            let ly = s.gpu_load(0, y);
                            gain += over(ly) - over(ly + db * s.inv_speed(y));
                        }
                        if gain > tiny {
                            offer(best, Move::Replace(i, b), gain, cost);
                        }
                        return;
                    };
                    consider(best, Move::Replace(i, b), gain);
                };
                // A `b` on none of `a`'s other GPUs removes at most what the smallest next
                // share would on the busiest GPU, plus the other replicas' terms, plus the
                // largest excess of any expert's GPUs (with a margin for the order of the
                // additions), adding at least -1 transfer. When that cannot beat the best,
                // only the experts on `a`'s other GPUs (whose gain can be larger: such a GPU
                // gets lighter by `b`'s share too) are scored, in the same order.
                let mut most = over(lg) - over(lg + (min_next - sa) * ig);
                for &t in a_terms {
                    most += t;
                }
                let n = (a_terms.len() + max_replicas) as f64;
                most += max_excess + (most.abs() + max_excess) * 1e-14 * (n + 2.0);
                if most <= tiny || cannot_beat(best.map(|x| x.1), most, -1) {
                    listed.clear();
                    for &x in a_gpus {
                        listed.extend(s.cluster.slot_range(x).map(|o| s.expert_of_slot[o]));
                    }
                    listed.sort_unstable();
                    listed.dedup();
                    for &b in &listed {
                        one(&mut best, b);
                    }
                } else {
                    for b in 0..next_share.len() {
                        one(&mut best, b);
                    }
                }
            }
            // `a` gains a replica in a spare slot elsewhere: its GPUs get lighter by the same
            // amount whatever the slot. As above, the gain is added up here in `replace_gain`'s
            // order unless a GPU holds both experts.
            let da_gain = s.share_more[a] - s.share_now[a];
            relief.clear();
            relief.extend(s.slots_of(a).iter().map(|&o| {
                let y = s.gpu_of_slot[o];
                let ly = s.gpu_load(0, y);
                over(ly) - over(ly + da_gain * s.inv_speed(y))
            }));
            let relief = &relief;
            let next_a = next_share[a];
            // Below, a slot on a GPU at or below the target adds no gain there, and `x`'s other
            // GPUs get heavier: the gain is at most the relief added up in the same order
            // (each partial sum is at most the relief's, every operation being monotone).
            let most_relief = relief.iter().fold(0.0, |sum, &t| sum + t);
            // The experts on `a`'s GPUs: a spare slot's expert `x` has another replica on a
            // GPU holding `a` (when the slot's own GPU does not hold `a`) exactly when `x` is
            // among them.
            near.clear();
            near.resize(s.member_of(g).len(), 0);
            for &o in s.slots_of(a) {
                for (n, &m) in near.iter_mut().zip(s.member_of(s.gpu_of_slot[o])) {
                    *n |= m;
                }
            }
            let near = &near;
            let near_a = |x: usize| near[x / 64] & (1 << (x % 64)) != 0;
            // A spare slot whose expert `x` has no replica on a GPU holding `a`, and whose GPU
            // held `x` and not `a`, adds exactly one transfer and removes at most its GPU's
            // excess (`over` is never negative) plus what `x`'s other GPUs lose plus the relief
            // (with a margin for the rounding of the additions, the relief's terms being
            // non-negative). When that cannot beat the best, only the other spare slots (free
            // moves, or a GPU holding both experts) are scored, in the same order.
            #[allow(clippy::cast_precision_loss)]
            let n = (relief.len() + max_replicas + 4) as f64;
            let bound = spare_top + most_relief + (spare_size + most_relief) * 1e-14 * n;
            let only_others = cannot_beat(best.map(|b| b.1), bound, 1);
            for sp in &spare_info {
                let (j, x, h, lh, ih) = (sp.slot, sp.expert, sp.gpu, sp.load, sp.inv_speed);
                if x == a {
                    continue;
                }
                if only_others && sp.kept_cost == 0 && !origin.holds(h, a) && !near_a(x) {
                    continue;
                }
                // The slot must get lighter on the busiest GPU, and elsewhere its GPU must not rise
                // above both its load and the target.
                let shift = (next_a - share[j]) * ih;
                let may_gain = if h == g {
                    shift < 0.0
                } else {
                    lh + shift <= lh.max(target)
                };
                if !may_gain || s.has(h, a) {
                    continue;
                }
                let x_gpus = s
                    .slots_of(x)
                    .iter()
                    .filter(|&&o| o != j)
                    .map(|&o| s.gpu_of_slot[o]);
                // Whether another GPU of `x` holds `a` (`h` does not).
                let holds_a = near_a(x);
                if let (Some((_, term)), false) = (sp.other, holds_a) {
                    // One other replica: the gain is cheaper to compute than to bound.
                    let mut gain = over(lh) - over(lh + shift);
                    gain += term;
                    for &t in relief {
                        gain += t;
                    }
                    if gain > tiny {
                        let cost = i64::from(!origin.holds(h, a)) - sp.kept_cost;
                        offer(&mut best, Move::Replace(j, a), gain, cost);
                    }
                    continue;
                }
                let gain = if holds_a {
                    replace_gain(s, j, a, &over)
                } else {
                    if lh <= target && cannot_beat(best.map(|b| b.1), most_relief, fewest[h]) {
                        continue;
                    }
                    // The slot's GPU at or below the target adds at most 0 (its term is 0
                    // minus an excess): the gain is at most the relief added to what `x`'s
                    // other GPUs lose, summed in the same order (each partial sum at most
                    // the gain's, every operation being monotone). The move's transfers are
                    // known exactly here.
                    let cost = i64::from(!origin.holds(h, a)) - sp.kept_cost;
                    if lh <= target {
                        let mut most = sp.damage;
                        for &t in relief {
                            most += t;
                        }
                        if most <= tiny || cannot_beat(best.map(|b| b.1), most, cost) {
                            continue;
                        }
                    }
                    let mut gain = over(lh) - over(lh + shift);
                    if let Some((_, term)) = sp.other {
                        gain += term;
                    } else {
                        let dx = s.share_less[x] - share[j];
                        for y in x_gpus {
                            let ly = s.gpu_load(0, y);
                            gain += over(ly) - over(ly + dx * s.inv_speed(y));
                        }
                    }
                    for &t in relief {
                        gain += t;
                    }
                    if gain > tiny {
                        offer(&mut best, Move::Replace(j, a), gain, cost);
                    }
                    continue;
                };
                consider(&mut best, Move::Replace(j, a), gain);
            }
        }
        let Some((mv, _)) = best else {
            return Reduced::Stuck;
        };
        let old_expert = match mv {
            Move::Replace(i, _) => s.expert_of_slot[i],
            Move::Swap(..) => 0,
        };
        s.apply(mv);
        match mv {
            Move::Swap(i, j) => {
                for slot in [i, j] {
                    share[slot] = s.share_now[s.expert_of_slot[slot]];
                    fewest[s.gpu_of_slot[slot]] = kept(s, s.gpu_of_slot[slot]);
                }
            }
            Move::Replace(i, b) => {
                counts_changed = true;
                // The slot's old expert (now one replica fewer) and `b` change share.
                let a = old_expert;
                for &e in &[a, b] {
                    for &slot in s.slots_of(e) {
                        share[slot] = s.share_now[e];
                    }
                }
                fewest[s.gpu_of_slot[i]] = kept(s, s.gpu_of_slot[i]);
            }
        }
        // The GPUs whose loads the move changed (a swap's two, a replacement's GPUs of both
        // experts, slot `i`'s among `b`'s now): their experts' excess is added up again.
        let mut again = |y: usize| {
            for j in s.cluster.slot_range(y) {
                let x = s.expert_of_slot[j];
                b_excess[x] = excess_of(s, x);
            }
        };
        match mv {
            Move::Swap(i, j) => {
                again(s.gpu_of_slot[i]);
                again(s.gpu_of_slot[j]);
            }
            Move::Replace(_, b) => {
                for e in [old_expert, b] {
                    for &o in s.slots_of(e) {
                        again(s.gpu_of_slot[o]);
                    }
                }
            }
        }
        after_move(s, mv);
    }
    Reduced::Stuck
}

/// Whether no swap of a slot of the busiest GPU (load `lg`, inverse speed `ig`) whose share
/// exceeds the partner's lightest by at most `widest`, with a partner at or below the target,
/// can beat `best`, when every such swap adds at least `fewest` transfers. The partner stays at
/// or below the target or loses gain, so a swap removes at most `over(lg) - over(lg - d ig)`
/// (the same floating-point expression with the largest `d`: every operation is monotone, so
/// this bounds the computed gain exactly). A partner (load `lh`, inverse speed `ih`) of the
/// same speed bounds it by its room to the `target` too.
fn swaps_cannot_win(
    best: Option<(bool, f64, f64)>,
    (lg, ig): (f64, f64),
    (lh, ih): (f64, f64),
    widest: f64,
    fewest: i64,
    target: f64,
) -> bool {
    if widest <= 0.0 {
        // No swap lightens the busiest GPU, and the partner gains nothing.
        return true;
    }
    let over = |l: f64| (l - target).max(0.0);
    let mut most = over(lg) - over(lg - widest * ig);
    if ih == ig && target.is_finite() {
        // Same speed: moving `p` off the busiest GPU removes at most `min(p, over(lg))`, and
        // past the partner's room `target - lh` adds as much to the partner's excess, so a
        // swap removes at most `target - lh` (exactly; the margin covers the computed gain's
        // rounding, at most about `5e-15 (lg + lh)`).
        most = most.min(target - lh + (lg + lh + target) * 1e-13);
    }
    cannot_beat(best, most, fewest)
}

/// Whether no swap between the busiest GPU (load `lg`) and a partner of the same speed also
/// above the target (load `lh`) can remove more than `tiny = target · REL_EPS` excess, so the
/// partner's swaps need not be scored (a third to a half of the swaps scanned at tolerance 0).
///
/// With both GPUs above the target and the same inverse speed, a swap shifting `p = d · ig`
/// from one to the other lowers one GPU's excess by at most `|p|` and raises the other's by
/// exactly `|p|`: its exact gain is at most 0. The computed gain differs from the exact one of
/// its rounded inputs by at most about `10 · 2^-53` times its largest intermediate value, at
/// most `4 (lg + lh)` (`|p|` is at most the larger GPU load); with `lg + lh <= 64 · target`
/// that is below `3e-14 · target`, well under `tiny` (`1e-12 · target`), so the computed gain
/// never passes `gain > tiny` either and skipping the partner changes nothing. Targets near
/// the subnormal range are not skipped (rounding is no longer relative there).
fn swaps_over_target_lose(lg: f64, lh: f64, target: f64) -> bool {
    target >= 1e-250 && target.is_finite() && lg + lh <= 64.0 * target
}

/// Whether no move removing at most `most` excess and adding at least `fewest` transfers can
/// beat `best`, the key (free, gain per transfer, gain) of the best candidate so far (the keys
/// are compared as tuples, a total order: a move that cannot beat the best now cannot beat a
/// later, better one either).
fn cannot_beat(best: Option<(bool, f64, f64)>, most: f64, fewest: i64) -> bool {
    let Some((free, per_transfer, gain)) = best else {
        return false;
    };
    if free {
        // A move adding a transfer is never free, so it cannot win; a free one only by
        // removing more.
        return fewest >= 1 || most <= gain;
    }
    if fewest <= 0 {
        // A free move would win with any gain.
        return false;
    }
    // `fewest` is 1 or 2, exact in `f64`; a move's key is at most (false, most / fewest, most).
    #[allow(clippy::cast_precision_loss)]
    let ratio = most / fewest as f64;
    ratio < per_transfer || (ratio <= per_transfer && most <= gain)
}

/// A slot whose expert has another replica, as [`reduce_excess`]'s spare-slot scan reads it.
struct SpareSlot {
    slot: usize,
    expert: usize,
    gpu: usize,
    load: f64,
    inv_speed: f64,
    /// With exactly one other replica of the expert: its GPU, and that GPU's term of the gain
    /// when the expert loses this replica.
    other: Option<(usize, f64)>,
    /// What the other GPUs of the expert lose when it loses this replica, added up from 0.
    damage: f64,
    /// The sizes of those terms added up.
    size: f64,
    /// 1 when the slot's GPU did not hold its expert before (replacing it removes a transfer).
    kept_cost: i64,
}

/// How [`reduce_excess`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reduced {
    /// Every GPU is at most the target (and the undo pass finished).
    Reached,
    /// No move removes excess, or the move budget ran out.
    Stuck,
    /// The deadline came first.
    Cut,
}

/// The excess removed by `Replace(slot, b)` (one window): the slot's GPU, then the other
/// replicas of its expert (heavier), then the replicas of `b` on other GPUs (lighter), each
/// GPU's new load added up in the order of [`SlotState::effect`], so the sum is the same as
/// summing over its touched GPUs, without building them.
fn replace_gain(s: &SlotState, slot: usize, b: usize, over: &impl Fn(f64) -> f64) -> f64 {
    let (h, a) = (s.gpu_of_slot[slot], s.expert_of_slot[slot]);
    let lh = s.gpu_load(0, h);
    let mut gain = over(lh) - over(lh + (s.share_more[b] - s.share_now[a]) * s.inv_speed(h));
    for &o in s.slots_of(a) {
        let x = s.gpu_of_slot[o];
        if o != slot {
            gain += over(s.gpu_load(0, x)) - over(s.load_of_other_holder(slot, b, x));
        }
    }
    for &o in s.slots_of(b) {
        let y = s.gpu_of_slot[o];
        if !s.has(y, a) {
            let ly = s.gpu_load(0, y);
            gain += over(ly) - over(ly + (s.share_more[b] - s.share_now[b]) * s.inv_speed(y));
        }
    }
    gain
}

/// Once every GPU is under `target`: takes back transfers while all loads stay under it, each
/// time the move removing the most transfers (then leaving the lowest maximum) among moves that
/// put an expert back on a GPU that held it.
///
/// Returns `false` when `deadline` stopped it.
fn undo_moves(
    s: &mut SlotState,
    origin: &Origin,
    target: f64,
    deadline: &Deadline,
    after_move: &mut dyn FnMut(&SlotState, Move),
) -> bool {
    let limit = target + target.abs() * REL_EPS;
    let (mut touched, mut new_load, mut moved) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        if deadline.passed() {
            return false;
        }
        moved.clear();
        moved.extend(
            (0..s.expert_of_slot.len())
                .filter(|&i| !origin.holds(s.gpu_of_slot[i], s.expert_of_slot[i])),
        );
        let mut best: Option<(Move, (i64, f64))> = None;
        let mut consider = |mv: Move, best: &mut Option<(Move, (i64, f64))>| {
            let cost = origin.delta(s, mv);
            if cost >= 0 || !s.is_valid(mv) {
                return;
            }
            s.effect(mv, &mut touched, &mut new_load);
            let worst = new_load.iter().copied().fold(f64::MIN, f64::max);
            if worst <= limit && best.is_none_or(|b| (cost, worst) < b.1) {
                *best = Some((mv, (cost, worst)));
            }
        };
        for &i in &moved {
            let g = s.gpu_of_slot[i];
            // The experts `g` held, in index order (as a scan of every expert would meet them).
            for b in origin.held(g) {
                consider(Move::Replace(i, b), &mut best);
            }
            for &j in &moved {
                consider(Move::Swap(i, j), &mut best);
            }
        }
        let Some((mv, _)) = best else { return true };
        s.apply(mv);
        after_move(s, mv);
    }
}

//! Bringing every GPU under a load target with few transfers: a greedy on excess load per
//! transfer.

use crate::local_search::{Origin, REL_EPS};
use crate::state::{Move, SlotState};

/// Applies moves to `s` (one window) until no GPU's load exceeds `target`, each time the move
/// touching the busiest GPU that removes the most excess load (`sum_g max(0, L_g - target)`) per
/// transfer it adds (moves adding none come first, by excess removed). Stops when the excess is
/// gone, when no move removes any, or after `max_moves`; calls `after_move` with the state and
/// the move after each step. Returns whether the target was reached.
///
/// Each step lowers the excess by more than a relative [`REL_EPS`], so the greedy ends.
pub(crate) fn reduce_excess(
    s: &mut SlotState,
    origin: &Origin,
    target: f64,
    max_moves: usize,
    after_move: &mut dyn FnMut(&SlotState, Move),
) -> bool {
    let tiny = target.abs().max(f64::MIN_POSITIVE) * REL_EPS;
    let over = |l: f64| (l - target).max(0.0);
    let (mut touched, mut new_load) = (Vec::new(), Vec::new());
    for _ in 0..max_moves {
        let g = (0..s.gpus())
            .max_by(|&a, &b| s.gpu_load(0, a).total_cmp(&s.gpu_load(0, b)))
            .unwrap_or(0);
        if over(s.gpu_load(0, g)) <= tiny {
            undo_moves(s, origin, target, after_move);
            return true;
        }
        // (free move, gain per transfer, gain) of the best candidate.
        let mut best: Option<(Move, (bool, f64, f64))> = None;
        s.moves_touching(g, true, |mv| {
            let gain = match mv {
                Move::Swap(i, j) => {
                    // Two GPUs change: no need for the general effect.
                    let (h, a, b) = (s.gpu_of_slot[j], s.expert_of_slot[i], s.expert_of_slot[j]);
                    let d = s.share(0, a, s.count[a]) - s.share(0, b, s.count[b]);
                    let (lg, lh) = (s.gpu_load(0, g), s.gpu_load(0, h));
                    over(lg) - over(lg - d * s.inv_speed(g)) + over(lh)
                        - over(lh + d * s.inv_speed(h))
                }
                Move::Replace(slot, b) => {
                    if !slot_may_gain(s, slot, b, g, target) {
                        return;
                    }
                    s.effect(mv, &mut touched, &mut new_load);
                    touched
                        .iter()
                        .zip(&new_load)
                        .map(|(&h, &new)| over(s.gpu_load(0, h)) - over(new))
                        .sum()
                }
            };
            if gain <= tiny {
                return;
            }
            let cost = origin.delta(s, mv);
            let key = if cost <= 0 {
                (true, gain, gain)
            } else {
                (false, gain / cost as f64, gain)
            };
            if best.is_none_or(|b| key > b.1) {
                best = Some((mv, key));
            }
        });
        let Some((mv, _)) = best else {
            return false;
        };
        s.apply(mv);
        after_move(s, mv);
    }
    false
}

/// Cheap filter for a replacement of `slot`'s expert by `b` while GPU `g` is the busiest: on `g`
/// the slot must get lighter; elsewhere its GPU must not rise above both its load and `target`.
fn slot_may_gain(s: &SlotState, slot: usize, b: usize, g: usize, target: f64) -> bool {
    let h = s.gpu_of_slot[slot];
    let a = s.expert_of_slot[slot];
    let shift = (s.share(0, b, s.count[b] + 1) - s.share(0, a, s.count[a])) * s.inv_speed(h);
    if h == g {
        shift < 0.0
    } else {
        s.gpu_load(0, h) + shift <= s.gpu_load(0, h).max(target)
    }
}

/// Once every GPU is under `target`: takes back transfers while all loads stay under it, each
/// time the move removing the most transfers (then leaving the lowest maximum) among moves that
/// put an expert back on a GPU that held it.
fn undo_moves(
    s: &mut SlotState,
    origin: &Origin,
    target: f64,
    after_move: &mut dyn FnMut(&SlotState, Move),
) {
    let limit = target + target.abs() * REL_EPS;
    let (mut touched, mut new_load) = (Vec::new(), Vec::new());
    loop {
        let moved: Vec<usize> = (0..s.expert_of_slot.len())
            .filter(|&i| !origin.holds(s.gpu_of_slot[i], s.expert_of_slot[i]))
            .collect();
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
            for b in 0..s.experts {
                if origin.holds(g, b) {
                    consider(Move::Replace(i, b), &mut best);
                }
            }
            for &j in &moved {
                consider(Move::Swap(i, j), &mut best);
            }
        }
        let Some((mv, _)) = best else { return };
        s.apply(mv);
        after_move(s, mv);
    }
}

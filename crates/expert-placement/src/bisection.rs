//! The bisection on a target load shared by the exact count searches ([`crate::pair_exact`] on
//! GPUs of two slots, [`crate::slot_exact`] on three to eight): which targets are tested, how
//! the step budget is split between them, and what their answers prove.

use crate::options::Deadline;
use crate::tolerance::REL_EPS;

/// Relative width below which the bisection stops: a plan within it of the largest target
/// proved infeasible is optimal (up to this tolerance, far below any load's precision).
pub(crate) const PROOF_GAP: f64 = 1e-9;

/// The first probe and each midpoint test may spend at most `1 / MIDPOINT_SHARE` of the steps
/// left.
const MIDPOINT_SHARE: u64 = 4;

/// The answer of one test at a target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Probe {
    /// Proved: no placement keeps every GPU within the target.
    Infeasible,
    /// A placement within the target (slot-ordered map), its replica counts and its busiest
    /// GPU.
    Found(Vec<usize>, Vec<usize>, f64),
    /// Nothing proved either way (the budget or the deadline stopped the test, or what it found
    /// could not be placed).
    Unsettled,
}

/// A test at a target: `(t, hi, near, allowed)` as [`minimize`] describes.
pub(crate) type TargetTest<'a> = dyn FnMut(f64, f64, &[usize], &mut u64) -> Probe + 'a;

/// What [`minimize`] established.
#[derive(Debug, Clone)]
pub(crate) struct Minimized {
    /// The best placement found below the starting value (slot-ordered, no two replicas of an
    /// expert on a GPU), and its busiest GPU.
    pub(crate) map: Option<(Vec<usize>, f64)>,
    /// A certified lower bound on the least busiest GPU of any placement (at least the bound
    /// passed in).
    pub(crate) lower_bound: f64,
}

/// Bisection on the target between `lower` (certified) and `value` (a plan's busiest GPU, with
/// replica counts `counts`), spending at most `steps` steps in all.
///
/// `test(t, hi, near, allowed)` tests target `t` (`hi`: the best value so far) within `allowed`
/// steps (decremented), trying first the counts nearest `near`, those of the best placement so
/// far. Tests alternate between a probe just below the best value (which proves it, or finds a
/// lower one; tried first) and a midpoint (cheap far from the optimum), except that a probe
/// just below the best value that found a lower one is followed by another such probe with
/// every step left: the search is then near better placements, and a midpoint in between took
/// the steps the next one needed (campaign case 110: 244.67 with a midpoint in between, 243.5
/// without, against the optimum 243; no plan or bound of the 500 got worse). The first probe and each
/// midpoint may spend at most a quarter of the steps left ([`MIDPOINT_SHARE`]): near the optimum
/// a midpoint just below it is the hardest test of all (an infeasibility proof over nearly
/// feasible count vectors), and letting it take the whole budget left the plan where the
/// heuristic put it (campaign case 108: 1.4% above the optimum with the default budget, every
/// step spent on one midpoint 0.04% below the optimum). A midpoint that proves nothing moves
/// the later midpoints above it.
///
/// At most 200 tests; the work is the tests'.
pub(crate) fn minimize(
    lower: f64,
    value: f64,
    counts: &[usize],
    steps: &mut u64,
    deadline: &Deadline,
    test: &mut TargetTest<'_>,
) -> Minimized {
    // `lo`: the largest target proved infeasible; `hi`: the least placement's busiest GPU;
    // `open`: the largest target whose test proved nothing (at least `lo`).
    let mut lo = lower;
    let mut hi = value;
    let mut open = lower;
    let mut best: Option<(Vec<usize>, f64)> = None;
    let mut near = counts.to_vec();
    let mut probe_high = true;
    for round in 0..200 {
        if hi <= lo * (1.0 + PROOF_GAP) || *steps == 0 || deadline.passed() {
            break;
        }
        let high = probe_high || hi <= open * (1.0 + PROOF_GAP);
        // The first probe is a share too: where the plan is already optimal it cannot finish,
        // and the midpoints after it may still raise the bound.
        let first = round == 0;
        let (t, share) = if high && !first {
            (hi * (1.0 - PROOF_GAP / 2.0), *steps)
        } else if high {
            (hi * (1.0 - PROOF_GAP / 2.0), steps.div_ceil(MIDPOINT_SHARE))
        } else {
            (f64::midpoint(open, hi), steps.div_ceil(MIDPOINT_SHARE))
        };
        let mut allowed = share;
        let answer = test(t, hi, &near, &mut allowed);
        *steps -= share - allowed;
        let was_high = high;
        let mut found_last = false;
        match answer {
            Probe::Infeasible => {
                lo = lo.max(t);
                open = open.max(lo);
            }
            Probe::Found(map, counts, v) => {
                if v >= hi * (1.0 - REL_EPS) {
                    // Only rounding can put a placement within `t < hi` at `hi`: stop there.
                    break;
                }
                hi = v;
                near = counts;
                best = Some((map, v));
                found_last = was_high;
            }
            // A later probe just below the best has no target left above it; a midpoint moves
            // the next ones up.
            Probe::Unsettled => {
                if high && !first {
                    break;
                }
                if !high {
                    open = t;
                }
            }
        }
        // After a lower placement found just below the best, probe just below it again.
        probe_high = !probe_high || found_last;
    }
    Minimized {
        map: best.filter(|b| b.1 < value),
        lower_bound: lo,
    }
}

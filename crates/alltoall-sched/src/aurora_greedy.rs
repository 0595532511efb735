//! Aurora's Algorithm 1, as the paper writes it.

use comm_cost_model::seeded_rng;
use rand::seq::SliceRandom;

use crate::non_preemptive::{Starts, starts_to_timetable};
use crate::ticks::Ticks;
use crate::{Bandwidth, ScheduleError, Timetable, TrafficMatrix};

/// Aurora Algorithm 1 ("determine token transmission order"), to compare against
/// [`crate::optimal()`].
///
/// Implements Aurora §4.2, Algorithm 1: find the bottleneck GPU (the largest send or receive
/// total), give its transfers a random order (seeded) and remove them from the matrix; then
/// visit the other GPUs by remaining traffic, largest first, and place each of their remaining
/// transfers so that it does not conflict with what is already placed. The paper does not say
/// how "arrange tokens to avoid conflicts" works; here each transfer (largest first) is one
/// piece placed at the earliest time both its ports are free (first fit into the gaps).
///
/// The bottleneck's own transfers are back to back, so its port finishes at the bound; that is
/// all the algorithm guarantees. Other ports can still end later: when a port's transfers
/// only fit into gaps that do not line up with its partners' gaps, it waits (the unit test
/// `aurora_greedy_is_not_always_optimal` shows a 4-GPU matrix where it misses the bound, and
/// `docs/reproduction.md` reports the gap on Zipf traffic). It is optimal for example when only
/// one GPU sends or receives (a star), or for `n = 2`.
///
/// # Errors
///
/// As [`crate::optimal()`].
///
/// # Complexity
///
/// `O(n^3)` time: each of the `n^2` transfers is fitted against two ports of at most `n`
/// intervals each.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{aurora_greedy, Bandwidth, TrafficMatrix};
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let plan = aurora_greedy(&d, &b, 42)?;
/// plan.validate(&d, &b).unwrap();
/// assert_eq!(plan.makespan_s(), 2.0); // Fig. 4(c)
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn aurora_greedy(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
    seed: u64,
) -> Result<Timetable, ScheduleError> {
    let ticks = Ticks::new(matrix, bandwidth)?;
    ticks.check_greedy_fits()?;
    starts_to_timetable(&ticks, greedy_starts(&ticks, seed)).finite()
}

fn greedy_starts(ticks: &Ticks, seed: u64) -> Starts {
    let n = ticks.n;
    let mut q = ticks.q.to_vec();
    let mut ports = Ports::new(n);
    let mut starts = Starts::new();
    let traffic = |q: &[u64], g: usize| {
        let send: u64 = (0..n).map(|j| q[g * n + j]).sum();
        let recv: u64 = (0..n).map(|i| q[i * n + g]).sum();
        send.max(recv)
    };
    // Lines 2-4: the bottleneck, in random order.
    let Some(bottleneck) = (0..n).max_by_key(|&g| (traffic(&q, g), std::cmp::Reverse(g))) else {
        return starts;
    };
    let mut rng = seeded_rng(seed, 0);
    let mut mine = pairs_of(&q, n, bottleneck);
    mine.shuffle(&mut rng);
    place_all(&mut q, n, &mine, &mut ports, &mut starts);
    // Lines 5-10: the others by remaining traffic, each placed around what exists.
    let mut order: Vec<usize> = (0..n).filter(|&g| g != bottleneck).collect();
    order.sort_by_key(|&g| (std::cmp::Reverse(traffic(&q, g)), g));
    for g in order {
        let mut mine = pairs_of(&q, n, g);
        mine.sort_by_key(|&(i, j)| (std::cmp::Reverse(q[i * n + j]), i, j));
        place_all(&mut q, n, &mine, &mut ports, &mut starts);
    }
    starts
}

/// Every pair with traffic that GPU `g` sends or receives.
fn pairs_of(q: &[u64], n: usize, g: usize) -> Vec<(usize, usize)> {
    let sends = (0..n).filter(|&j| q[g * n + j] > 0).map(|j| (g, j));
    let recvs = (0..n).filter(|&i| q[i * n + g] > 0).map(|i| (i, g));
    sends.chain(recvs).collect()
}

fn place_all(
    q: &mut [u64],
    n: usize,
    pairs: &[(usize, usize)],
    ports: &mut Ports,
    starts: &mut Starts,
) {
    for &(i, j) in pairs {
        let dur = q[i * n + j];
        if dur == 0 {
            continue;
        }
        let t = ports.place(i, n + j, dur);
        starts.push((i, j, t, t.saturating_add(dur)));
        q[i * n + j] = 0;
    }
}

/// Busy intervals of the `2n` ports (send ports `0..n`, receive ports `n..2n`), sorted.
struct Ports {
    busy: Vec<Vec<(u64, u64)>>,
}

impl Ports {
    fn new(n: usize) -> Self {
        Self {
            busy: vec![Vec::new(); 2 * n],
        }
    }

    /// Books the earliest interval of length `dur` free on both ports; returns its start.
    fn place(&mut self, a: usize, b: usize, dur: u64) -> u64 {
        let t = earliest_common_gap(&self.busy[a], &self.busy[b], dur);
        for p in [a, b] {
            let pos = self.busy[p].partition_point(|&(s, _)| s < t);
            self.busy[p].insert(pos, (t, t.saturating_add(dur)));
        }
        t
    }
}

/// Earliest `t` such that `[t, t + dur)` overlaps no interval of `a` or `b`.
fn earliest_common_gap(a: &[(u64, u64)], b: &[(u64, u64)], dur: u64) -> u64 {
    let (mut t, mut ia, mut ib) = (0u64, 0, 0);
    loop {
        while ia < a.len() && a[ia].1 <= t {
            ia += 1;
        }
        while ib < b.len() && b[ib].1 <= t {
            ib += 1;
        }
        let end = t.saturating_add(dur);
        let mut moved = false;
        for (list, idx) in [(a, ia), (b, ib)] {
            if let Some(&(s, e)) = list.get(idx)
                && s < end
            {
                t = t.max(e);
                moved = true;
            }
        }
        if !moved {
            return t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bandwidth, TrafficMatrix, lower_bound_s, optimal};

    #[test]
    fn aurora_greedy_is_not_always_optimal() {
        // GPU 1 receives 1 + 3 + 2 = 6 and GPU 2 sends 3 + 3 = 6: the bound is 6.
        let d = TrafficMatrix::from_rows_u64(&[
            vec![0, 1, 0, 1],
            vec![1, 0, 0, 1],
            vec![3, 3, 0, 0],
            vec![1, 2, 0, 0],
        ])
        .unwrap();
        let b = Bandwidth::uniform(1.0).unwrap();
        assert_eq!(lower_bound_s(&d, &b).unwrap(), 6.0);
        // Algorithm 1 shuffles the bottleneck's transfers: some orders reach the bound, others
        // leave GPU 2's second transfer no common gap until GPU 1 is done (seed 1: 9 = 1.5x).
        let lucky = aurora_greedy(&d, &b, 0).unwrap();
        lucky.validate(&d, &b).unwrap();
        assert_eq!(lucky.makespan_s(), 6.0);
        let greedy = aurora_greedy(&d, &b, 1).unwrap();
        greedy.validate(&d, &b).unwrap();
        assert_eq!(greedy.makespan_s(), 9.0);
        assert_eq!(optimal(&d, &b).unwrap().makespan_s(), 6.0);
    }

    #[test]
    fn first_fit_uses_gaps() {
        assert_eq!(earliest_common_gap(&[(0, 2), (5, 6)], &[(3, 4)], 1), 2);
        assert_eq!(earliest_common_gap(&[(0, 2), (5, 6)], &[(3, 4)], 2), 6);
        assert_eq!(earliest_common_gap(&[], &[], 3), 0);
    }
}

//! A lower bound from the replicas that share a GPU with a hot expert's replicas.

use crate::model::{LayerLoads, PlacementCluster};

/// Largest `E · G` the partner bound is computed for (64 experts on 32 GPUs: the campaign's
/// sizes; on 256 experts x 32 GPUs it cost about a millisecond per layer, as much as the plan).
const PARTNER_MAX_PAIRS: usize = 1 << 11;

/// Heaviest experts the partner bound looks at.
const PARTNER_MAX_HEAVY: usize = 8;

/// The largest, over experts heavier than `from`, of the smallest over replica counts `c` of
/// `(w_e / c + q(c (S_min - 1))) / v_max`, where `q(j)` is the smallest possible `j`-th lightest
/// replica of the other experts; `from` when no expert is heavier or no GPU has two slots.
///
/// Why it is a lower bound: expert `e` with `c` replicas puts `w_e / c` on `c` distinct GPUs,
/// each of which fills at least `S_min - 1` more slots with replicas of other experts; those
/// `j = c (S_min - 1)` replicas are distinct, so the heaviest is at least the `j`-th lightest
/// replica of the others, whatever their counts (which `q` minimizes over: `R - c` slots, at
/// least one and at most `G` each), and the GPU holding it carries at least `w_e / c` plus it,
/// raw, so at least that over `v_max` in load. On 2-slot GPUs with one hot expert among cold
/// ones (the campaign's loosest bounds) this is the cold partner the average misses.
///
/// `O(H · G · E log(E G))` for the `H <= 8` heaviest experts heavier than `from` (none on
/// balanced layers), and only where `E · G <= 2^11` (the sizes where hot experts on few slots
/// leave the other bounds loose; above it the cost would grow to seconds for no gain seen).
pub(crate) fn partner_bound(loads: &LayerLoads, cluster: &PlacementCluster, from: f64) -> f64 {
    let w = loads.as_slice();
    let v_max = cluster.speed_of_gpu().iter().copied().fold(0.0, f64::max);
    let s_min = cluster.slots_of_gpu().iter().copied().min().unwrap_or(0);
    let (gpus, slots) = (cluster.gpus(), cluster.total_slots());
    if !(from.is_finite() && v_max > 0.0 && v_max.is_finite())
        || s_min < 2
        || w.len() < 2
        || w.len().saturating_mul(gpus) > PARTNER_MAX_PAIRS
    {
        return from;
    }
    let mut heavy: Vec<usize> = (0..w.len()).filter(|&e| w[e] / v_max > from).collect();
    heavy.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
    heavy.truncate(PARTNER_MAX_HEAVY);
    let mut best = from;
    for e in heavy {
        let we = w[e];
        if we / v_max <= best {
            continue;
        }
        let others: Vec<f64> = w
            .iter()
            .enumerate()
            .filter(|&(f, _)| f != e)
            .map(|(_, &x)| x)
            .collect();
        let most = gpus.min(slots + 1 - w.len());
        let lightest = Lightest::new(&others, gpus);
        let bound_e = (1..=most)
            .map(|c| {
                let partners = c * (s_min - 1);
                let q = lightest.at_least(partners, slots - c);
                (we / c as f64 + q) / v_max
            })
            .fold(f64::INFINITY, f64::min);
        if bound_e.is_finite() {
            best = best.max(bound_e);
        }
    }
    best
}

/// The other experts' loads and every replica size they can take, sorted.
struct Lightest<'a> {
    w: &'a [f64],
    gpus: usize,
    sizes: Vec<f64>,
}

impl<'a> Lightest<'a> {
    fn new(w: &'a [f64], gpus: usize) -> Self {
        let mut sizes: Vec<f64> = w
            .iter()
            .flat_map(|&x| (1..=gpus).map(move |k| x / k as f64))
            .collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        Self { w, gpus, sizes }
    }

    /// The smallest size `t` such that some counts (`budget` replicas in all, each expert
    /// between 1 and `G`) give at least `j` replicas of size at most `t` (0 when `j` is 0).
    fn at_least(&self, j: usize, budget: usize) -> f64 {
        if j == 0 {
            return 0.0;
        }
        // `reach` is monotone in `t`: bisect over the sizes that can occur.
        let (mut lo, mut hi) = (0, self.sizes.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.reach(self.sizes[mid], budget) >= j {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.sizes.get(lo).copied().unwrap_or(f64::INFINITY)
    }

    /// The most replicas of size at most `t` that `budget` replicas (each expert 1 to `G`) can
    /// include: every expert gets one; an expert is *small* with `n = ceil(w / t)` replicas;
    /// the others keep one (above `t`), so making the cheapest experts small first leaves the
    /// fewest replicas above `t`, and every spare replica goes to a small expert.
    fn reach(&self, t: f64, budget: usize) -> usize {
        let Some(extra) = budget.checked_sub(self.w.len()) else {
            return 0;
        };
        // Extra replicas each expert needs to be small (`None`: it cannot be).
        let mut need: Vec<usize> = self
            .w
            .iter()
            .filter_map(|&x| {
                if x <= t {
                    return Some(0);
                }
                let n = (x / t).ceil();
                (n.is_finite() && n <= self.gpus as f64).then(|| {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let n = n as usize;
                    n - 1
                })
            })
            .collect();
        need.sort_unstable();
        let (mut spent, mut small) = (0usize, 0usize);
        for n in need {
            if spent + n > extra {
                break;
            }
            spent += n;
            small += 1;
        }
        let big = self.w.len() - small;
        (budget - big).min(small.saturating_mul(self.gpus))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hot_expert_on_two_slot_gpus_pays_for_its_cold_partners() {
        // One expert of 600 and 9 cold ones of 10 on 6 GPUs of 2 slots (12 slots): with c hot
        // replicas the 9 colds fill 12 - c slots; c = 3 leaves no spare, so the hot GPUs hold
        // 200 + 10; c = 2 gives 300 + 10 (a cold expert duplicated to 5 is no lighter than 10
        // in the 2nd smallest). The average is 690 / 6 = 115.
        let mut w = vec![600.0];
        w.extend([10.0; 9]);
        let loads = LayerLoads::new(w).unwrap();
        let c = PlacementCluster::uniform(6, 2, 1).unwrap();
        let b = partner_bound(&loads, &c, 115.0);
        assert!((b - 210.0).abs() < 1e-9, "{b}");
    }

    #[test]
    fn balanced_layers_are_left_alone() {
        let loads = LayerLoads::new(vec![10.0; 8]).unwrap();
        let c = PlacementCluster::uniform(4, 2, 1).unwrap();
        assert_eq!(partner_bound(&loads, &c, 20.0), 20.0);
    }
}

//! Packing replicas onto GPU slots without two replicas of one expert on a GPU.

use super::model::PlacementCluster;

/// Packs `count[e]` replicas of each expert (`sum count = R`, `count[e] <= G`) onto the slots:
/// largest replica first, each to the GPU where it ends lightest among those with a free slot
/// that do not hold its expert yet (longest-processing-time first with slot and conflict
/// constraints). When no such GPU is left, an ejection makes room: a replica moves from a full
/// GPU without the expert to a GPU with a free slot. Returns the slot-to-expert map, or `None`
/// when the ejection finds nothing (possible only with unequal slot counts).
///
/// `O(R · G · S_max)` time in the worst case, `O(R · G)` without ejections.
pub(crate) fn pack(w: &[f64], count: &[usize], cluster: &PlacementCluster) -> Option<Vec<usize>> {
    let gpus = cluster.gpus();
    let inv: Vec<f64> = cluster.speed_of_gpu().iter().map(|v| 1.0 / v).collect();
    let share = |e: usize| w[e] / count[e] as f64;
    let mut replicas: Vec<usize> = (0..count.len())
        .flat_map(|e| std::iter::repeat_n(e, count[e]))
        .collect();
    replicas.sort_by(|&a, &b| share(b).total_cmp(&share(a)).then(a.cmp(&b)));
    let mut free: Vec<usize> = cluster.slots_of_gpu().to_vec();
    let mut load = vec![0.0; gpus];
    let mut on: Vec<Vec<usize>> = vec![Vec::new(); gpus];
    // GPUs holding each expert (at most its replica count).
    let mut gpus_of: Vec<Vec<usize>> = vec![Vec::new(); count.len()];
    for e in replicas {
        let p = share(e);
        let mut direct: Option<(f64, usize)> = None;
        for g in 0..gpus {
            let after = load[g] + p * inv[g];
            if free[g] > 0 && direct.is_none_or(|d| after < d.0) && !gpus_of[e].contains(&g) {
                direct = Some((after, g));
            }
        }
        let direct = direct.map(|d| d.1);
        let g = match direct {
            Some(g) => g,
            None => eject(e, &mut on, &mut gpus_of, &mut free, &mut load, &inv, &share)?,
        };
        on[g].push(e);
        gpus_of[e].push(g);
        free[g] -= 1;
        load[g] += p * inv[g];
    }
    Some(on.concat())
}

/// Makes room for a replica of `e`: moves a replica `x` from a GPU `k` without `e` to a GPU `h`
/// with a free slot and without `x`, and returns `k` (now with a free slot and no `e`). Picks the
/// move that leaves the two GPUs' larger load smallest.
fn eject(
    e: usize,
    on: &mut [Vec<usize>],
    gpus_of: &mut [Vec<usize>],
    free: &mut [usize],
    load: &mut [f64],
    inv: &[f64],
    share: &impl Fn(usize) -> f64,
) -> Option<usize> {
    let gpus = on.len();
    let p = share(e);
    let mut best: Option<(f64, usize, usize, usize)> = None;
    for h in (0..gpus).filter(|&h| free[h] > 0) {
        for k in (0..gpus).filter(|&k| k != h && !on[k].contains(&e)) {
            for (pos, &x) in on[k].iter().enumerate() {
                if on[h].contains(&x) {
                    continue;
                }
                let worst = (load[h] + share(x) * inv[h]).max(load[k] + (p - share(x)) * inv[k]);
                if best.is_none_or(|b| worst < b.0) {
                    best = Some((worst, h, k, pos));
                }
            }
        }
    }
    let (_, h, k, pos) = best?;
    let x = on[k].swap_remove(pos);
    on[h].push(x);
    if let Some(at) = gpus_of[x].iter().position(|&g| g == k) {
        gpus_of[x][at] = h;
    }
    free[h] -= 1;
    free[k] += 1;
    load[h] += share(x) * inv[h];
    load[k] -= share(x) * inv[k];
    Some(k)
}

/// A valid map for any instance with `E <= R` and no GPU holding more slots than experts:
/// slot `s` gets expert `s mod E`, so a GPU's consecutive slots hold distinct experts.
pub(crate) fn round_robin(experts: usize, cluster: &PlacementCluster) -> Vec<usize> {
    (0..cluster.total_slots()).map(|s| s % experts).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(map: &[usize], c: &PlacementCluster, experts: usize) -> bool {
        (0..c.gpus()).all(|g| {
            let mut on: Vec<usize> = c.slot_range(g).map(|s| map[s]).collect();
            on.sort_unstable();
            on.windows(2).all(|p| p[0] != p[1])
        }) && (0..experts).all(|e| map.contains(&e))
    }

    #[test]
    fn packs_without_duplicates() {
        let c = PlacementCluster::uniform(4, 3, 1).unwrap();
        let w = [100.0, 50.0, 10.0, 10.0, 5.0];
        let count = [4, 3, 2, 2, 1];
        let map = pack(&w, &count, &c).unwrap();
        assert!(valid(&map, &c, 5));
        assert!(valid(&round_robin(5, &c), &c, 5));
    }

    #[test]
    fn ejection_makes_room() {
        // Expert 0's 3 replicas go first; expert 1 (2 replicas, load 3 each) then expert 2:
        // the last replicas find free slots only on GPUs that already hold their expert.
        let c = PlacementCluster::uniform(3, 2, 1).unwrap();
        let w = [30.0, 6.0, 1.0];
        let count = [3, 2, 1];
        let map = pack(&w, &count, &c).unwrap();
        assert!(valid(&map, &c, 3));
    }
}

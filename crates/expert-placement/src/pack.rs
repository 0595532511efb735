//! Packing replicas onto GPU slots without two replicas of one expert on a GPU.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::PlacementCluster;

/// Packs `count[e]` replicas of each expert (`sum count = R`, `count[e] <= G`) onto the slots:
/// largest replica first, each to the GPU where it ends lightest among those with a free slot
/// that do not hold its expert yet (longest-processing-time first with slot and conflict
/// constraints; ties go to the lowest GPU index). When no such GPU is left, an ejection makes
/// room: a replica moves from a full GPU without the expert to a GPU with a free slot. Returns
/// the slot-to-expert map, or `None` when the ejection finds nothing (possible only with
/// unequal slot counts).
///
/// `O(R · C · log G)` time for `C` distinct GPU speeds without ejections (a heap of free GPUs
/// per speed; an expert's replicas are consecutive, so the GPUs that took one sit out until
/// the expert is done), plus `O(G^2 · S_max)` per ejection.
pub(crate) fn pack(w: &[f64], count: &[usize], cluster: &PlacementCluster) -> Option<Vec<usize>> {
    let gpus = cluster.gpus();
    let inv: Vec<f64> = cluster.speed_of_gpu().iter().map(|v| 1.0 / v).collect();
    // One replica's share per expert, divided once (the sort compared them by dividing).
    let shares: Vec<f64> = w.iter().zip(count).map(|(&we, &c)| we / c as f64).collect();
    let share = |e: usize| shares[e];
    // The experts with replicas, largest share first (by `total_cmp`, whose order the keys
    // keep), equal shares by index; each expert's replicas are consecutive.
    let mut order: Vec<(std::cmp::Reverse<u64>, usize)> = (0..count.len())
        .filter(|&e| count[e] > 0)
        .map(|e| (std::cmp::Reverse(crate::state::order_key(shares[e])), e))
        .collect();
    order.sort_unstable();
    let replicas = order
        .iter()
        .flat_map(|&(_, e)| std::iter::repeat_n(e, count[e]));
    let mut free: Vec<usize> = cluster.slots_of_gpu().to_vec();
    let mut load = vec![0.0; gpus];
    let mut on = Lists::new(cluster.slots_of_gpu());
    // GPUs holding each expert (at most its replica count).
    let mut gpus_of = Lists::new(count);
    let mut heaps = FreeGpus::new(&inv, &free, &load);
    let mut current = None;
    for e in replicas {
        if current != Some(e) {
            // The previous expert is done: its GPUs may take the next one.
            if let Some(prev) = current {
                heaps.restore(gpus_of.get(prev), &free, &load);
            }
            current = Some(e);
        }
        let p = share(e);
        let (g, ejected) = match heaps.pop_lightest(p) {
            Some(g) => (g, false),
            None => (
                eject(e, &mut on, &mut gpus_of, &mut free, &mut load, &inv, &share)?,
                true,
            ),
        };
        on.push(g, e);
        gpus_of.push(e, g);
        free[g] -= 1;
        load[g] += p * inv[g];
        if ejected {
            // Three GPUs changed: rebuild, keeping out those that hold `e` now.
            heaps = FreeGpus::new(&inv, &free, &load);
            heaps.remove_all(gpus_of.get(e));
        }
    }
    // With as many replicas as slots every list is full, and the buffer is the map.
    if (0..gpus).all(|g| on.len[g] == cluster.slots_of_gpu()[g]) {
        Some(on.items)
    } else {
        Some((0..gpus).flat_map(|g| on.get(g).to_vec()).collect())
    }
}

/// Lists with a fixed room each, laid end to end in one buffer (one allocation instead of one
/// per list): list `k` is `items[start[k]..start[k] + len[k]]`.
struct Lists {
    items: Vec<usize>,
    start: Vec<usize>,
    len: Vec<usize>,
}

impl Lists {
    fn new(room: &[usize]) -> Self {
        let mut start = Vec::with_capacity(room.len());
        let mut total = 0;
        for &r in room {
            start.push(total);
            total += r;
        }
        Self {
            items: vec![0; total],
            start,
            len: vec![0; room.len()],
        }
    }

    fn get(&self, k: usize) -> &[usize] {
        &self.items[self.start[k]..self.start[k] + self.len[k]]
    }

    fn get_mut(&mut self, k: usize) -> &mut [usize] {
        &mut self.items[self.start[k]..self.start[k] + self.len[k]]
    }

    /// Appends `x` to list `k` (which has room: each list gets at most its room).
    fn push(&mut self, k: usize, x: usize) {
        self.items[self.start[k] + self.len[k]] = x;
        self.len[k] += 1;
    }

    /// `Vec::swap_remove` on list `k`.
    fn swap_remove(&mut self, k: usize, pos: usize) -> usize {
        let list = self.get_mut(k);
        let last = list.len() - 1;
        list.swap(pos, last);
        self.len[k] -= 1;
        self.items[self.start[k] + last]
    }
}

/// A load as a heap key (loads are finite, so `total_cmp` is their order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Load(pub(crate) f64);

impl Eq for Load {}

impl PartialOrd for Load {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Load {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A min-heap of `(load, GPU)`.
type GpuHeap = BinaryHeap<Reverse<(Load, usize)>>;

/// GPUs with a free slot, one min-heap of `(load, GPU)` per distinct inverse speed. A GPU
/// popped for an expert stays out until [`FreeGpus::restore`]; entries are exact (every
/// change of a GPU's load or free slots goes through a pop or a rebuild).
struct FreeGpus {
    classes: Vec<(f64, GpuHeap)>,
    class_of: Vec<usize>,
}

impl FreeGpus {
    fn new(inv: &[f64], free: &[usize], load: &[f64]) -> Self {
        let mut classes: Vec<(f64, GpuHeap)> = Vec::new();
        let mut class_of = Vec::with_capacity(inv.len());
        for (g, &i) in inv.iter().enumerate() {
            let c = match classes.iter().position(|(x, _)| x.to_bits() == i.to_bits()) {
                Some(c) => c,
                None => {
                    classes.push((i, BinaryHeap::new()));
                    classes.len() - 1
                }
            };
            class_of.push(c);
            if free[g] > 0 {
                classes[c].1.push(Reverse((Load(load[g]), g)));
            }
        }
        Self { classes, class_of }
    }

    /// Takes the GPU where a replica of raw load `p` ends lightest (lowest index on ties).
    fn pop_lightest(&mut self, p: f64) -> Option<usize> {
        let best = self
            .classes
            .iter()
            .enumerate()
            .filter_map(|(c, (inv, heap))| {
                heap.peek().map(|Reverse((l, g))| ((l.0 + p * inv), *g, c))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))?;
        self.classes[best.2].1.pop();
        Some(best.1)
    }

    /// Puts back the GPUs of a finished expert that still have a free slot.
    fn restore(&mut self, gpus: &[usize], free: &[usize], load: &[f64]) {
        for &g in gpus {
            if free[g] > 0 {
                self.classes[self.class_of[g]]
                    .1
                    .push(Reverse((Load(load[g]), g)));
            }
        }
    }

    /// Removes `gpus` (a rebuild's GPUs that already hold the expert being placed).
    fn remove_all(&mut self, gpus: &[usize]) {
        for (_, heap) in &mut self.classes {
            heap.retain(|Reverse((_, g))| !gpus.contains(g));
        }
    }
}

/// Makes room for a replica of `e`: moves a replica `x` from a GPU `k` without `e` to a GPU `h`
/// with a free slot and without `x`, and returns `k` (now with a free slot and no `e`). Picks the
/// move that leaves the two GPUs' larger load smallest.
fn eject(
    e: usize,
    on: &mut Lists,
    gpus_of: &mut Lists,
    free: &mut [usize],
    load: &mut [f64],
    inv: &[f64],
    share: &impl Fn(usize) -> f64,
) -> Option<usize> {
    let gpus = on.len.len();
    let p = share(e);
    let mut best: Option<(f64, usize, usize, usize)> = None;
    for h in (0..gpus).filter(|&h| free[h] > 0) {
        for k in (0..gpus).filter(|&k| k != h && !on.get(k).contains(&e)) {
            for (pos, &x) in on.get(k).iter().enumerate() {
                if on.get(h).contains(&x) {
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
    let x = on.swap_remove(k, pos);
    on.push(h, x);
    if let Some(at) = gpus_of.get(x).iter().position(|&g| g == k) {
        gpus_of.get_mut(x)[at] = h;
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

//! Relabeling a new placement onto the GPUs and slots of a current one, to move fewer experts.

use crate::error::PlacementError;
use crate::local_search::Origin;
use crate::model::PlacementCluster;
use bipartite::SquareMatrix;
use bipartite::min_cost_perfect_matching;

/// Above this many interchangeable GPUs the relabeling is greedy instead of an `O(n³)`
/// assignment.
const HUNGARIAN_MAX_GPUS: usize = 256;

/// Gives the contents of `next`'s GPUs to interchangeable GPUs (equal slots and speed) so that
/// as many replicas as possible stay where `current` has them (a maximum-overlap assignment per
/// class of GPUs), then keeps each kept expert in its current slot.
pub(crate) fn align(
    next: &[usize],
    current: &[usize],
    cluster: &PlacementCluster,
    experts: usize,
) -> Vec<usize> {
    let gpu_of_slot = cluster.gpu_of_each_slot();
    let origin = Origin::new(&gpu_of_slot, current, cluster.gpus(), experts);
    let contents: Vec<&[usize]> = (0..cluster.gpus())
        .map(|g| &next[cluster.slot_range(g)])
        .collect();
    let mut target_of = (0..cluster.gpus()).collect::<Vec<usize>>();
    for class in classes(cluster) {
        let overlap = |i: usize, j: usize| {
            contents[class[i]]
                .iter()
                .filter(|&&e| origin.holds(class[j], e))
                .count()
        };
        let assignment = assign_max_overlap(class.len(), &overlap);
        for (i, &j) in assignment.iter().enumerate() {
            target_of[class[i]] = class[j];
        }
    }
    let mut out = vec![0; next.len()];
    for (g, items) in contents.iter().enumerate() {
        let t = target_of[g];
        let range = cluster.slot_range(t);
        out[range.clone()].copy_from_slice(items);
        keep_slots(&mut out[range.clone()], &current[range]);
    }
    out
}

/// GPUs grouped by (slot count, speed).
fn classes(cluster: &PlacementCluster) -> Vec<Vec<usize>> {
    let mut keyed: Vec<((usize, u64), usize)> = (0..cluster.gpus())
        .map(|g| {
            (
                (
                    cluster.slots_of_gpu()[g],
                    cluster.speed_of_gpu()[g].to_bits(),
                ),
                g,
            )
        })
        .collect();
    keyed.sort_unstable();
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut last = None;
    for (key, g) in keyed {
        if last == Some(key) {
            if let Some(c) = out.last_mut() {
                c.push(g);
            }
        } else {
            out.push(vec![g]);
            last = Some(key);
        }
    }
    out
}

/// A permutation `i -> j` of `0..n` maximizing `sum overlap(i, j)`: the Hungarian method up to
/// [`HUNGARIAN_MAX_GPUS`], largest overlaps first beyond.
pub(crate) fn assign_max_overlap(n: usize, overlap: &dyn Fn(usize, usize) -> usize) -> Vec<usize> {
    let table: Vec<usize> = (0..n * n).map(|k| overlap(k / n, k % n)).collect();
    let top = table.iter().copied().max().unwrap_or(0);
    if n <= HUNGARIAN_MAX_GPUS {
        let costs = table.iter().map(|&o| (top - o) as f64).collect();
        if let Ok(m) = SquareMatrix::from_flat(n, costs)
            .map_err(PlacementError::from)
            .and_then(|w| min_cost_perfect_matching(&w, &[]).map_err(PlacementError::from))
        {
            return m.assignment;
        }
    }
    let mut pairs: Vec<(usize, usize)> = (0..n * n).map(|k| (table[k], k)).collect();
    pairs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let (mut row_done, mut col_done) = (vec![false; n], vec![false; n]);
    let mut out = vec![0; n];
    for (_, k) in pairs {
        let (i, j) = (k / n, k % n);
        if !row_done[i] && !col_done[j] {
            row_done[i] = true;
            col_done[j] = true;
            out[i] = j;
        }
    }
    out
}

/// Reorders one GPU's new experts so that each expert it already held stays in its old slot.
pub(crate) fn keep_slots(new: &mut [usize], old: &[usize]) {
    let items: Vec<usize> = new.to_vec();
    let mut placed = vec![false; items.len()];
    let mut slot_taken = vec![false; new.len()];
    for (s, &e) in old.iter().enumerate() {
        if let Some(k) = (0..items.len()).find(|&k| !placed[k] && items[k] == e) {
            new[s] = e;
            placed[k] = true;
            slot_taken[s] = true;
        }
    }
    let mut free = (0..new.len()).filter(|&s| !slot_taken[s]);
    for (k, &e) in items.iter().enumerate() {
        if placed[k] {
            continue;
        }
        if let Some(s) = free.next() {
            new[s] = e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relabels_identical_gpus_and_keeps_slots() {
        let c = PlacementCluster::uniform(2, 2, 1).unwrap();
        // The new plan is the current one with GPUs exchanged and slots reversed.
        let current = [0, 1, 2, 3];
        let next = [3, 2, 1, 0];
        assert_eq!(align(&next, &current, &c, 4), vec![0, 1, 2, 3]);
    }

    #[test]
    fn keep_slots_fills_the_rest_in_order() {
        let mut new = [5, 1, 7];
        keep_slots(&mut new, &[1, 2, 3]);
        assert_eq!(new, [1, 5, 7]);
    }
}

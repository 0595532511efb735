//! Relabeling a node-aware plan onto a current placement without breaking its node constraint.

use crate::align::{assign_max_overlap, keep_slots};
use crate::error::PlacementError;
use crate::local_search::Origin;
use crate::model::PlacementCluster;
use crate::plan::check_map;
use comm_cost_model::check_same_len;

/// `next` with whole nodes exchanged and GPUs exchanged inside nodes so that as many replicas
/// as possible stay on a GPU that holds their expert in `current`, each kept expert in its
/// current slot: fewer weight copies, and every expert group that `next` keeps inside one node
/// is still inside one node.
///
/// Nodes are exchanged only when every node has the same GPUs (count, slots and speeds in
/// order) and GPUs only with GPUs of equal slots and speed; the assignment is exact on two
/// levels (for each pair of nodes the best GPU matching, then the best node matching, both by
/// the Hungarian method up to 256 items and greedy beyond).
///
/// # Errors
///
/// [`PlacementError::Input`] (`SizeMismatch`) unless both maps have one entry per slot,
/// [`PlacementError::Input`] (`IndexOutOfRange`) for an expert id `>= experts`,
/// [`PlacementError::MissingExpert`] when a map lacks an expert, [`PlacementError::Input`] (`TooLarge`)
/// above the cluster's GPU-expert pair limit.
///
/// # Complexity
///
/// `O(N² · (G/N)³ + N³)` for `N` nodes of `G/N` GPUs, plus `O(R · S)` for the slots.
///
/// # Examples
///
/// ```
/// use expert_placement::{PlacementCluster, align_within_nodes, count_moves};
///
/// // Two nodes of two GPUs with one slot; the new plan has the nodes swapped.
/// let c = PlacementCluster::uniform(4, 1, 2)?;
/// let current = [0, 1, 2, 3];
/// let next = [2, 3, 1, 0];
/// let aligned = align_within_nodes(&next, &current, &c, 4)?;
/// assert_eq!(aligned, vec![0, 1, 2, 3]);
/// assert_eq!(count_moves(&current, &aligned, &c, 4)?, 0);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn align_within_nodes(
    next: &[usize],
    current: &[usize],
    cluster: &PlacementCluster,
    experts: usize,
) -> Result<Vec<usize>, PlacementError> {
    check_same_len("next placement", next.len(), cluster.total_slots())?;
    cluster.check_pairs(experts)?;
    check_map("current placement", current, experts, cluster)?;
    check_map("next placement", next, experts, cluster)?;
    let gpu_of_slot = cluster.gpu_of_each_slot();
    let origin = Origin::new(&gpu_of_slot, current, cluster.gpus(), experts);
    let node_of = cluster.node_of_gpu();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); cluster.nodes()];
    for (g, &n) in node_of.iter().enumerate() {
        members[n].push(g);
    }
    let shape = |g: usize| {
        (
            cluster.slots_of_gpu()[g],
            cluster.speed_of_gpu()[g].to_bits(),
        )
    };
    let node_shape = |n: usize| members[n].iter().map(|&g| shape(g)).collect::<Vec<_>>();
    // GPUs interchangeable with each other.
    let same = |a: usize, b: usize| shape(a) == shape(b);
    // Replicas of new GPU a that old GPU b holds already (0 when they cannot be exchanged).
    let overlap = |a: usize, b: usize| {
        if !same(a, b) {
            return 0;
        }
        next[cluster.slot_range(a)]
            .iter()
            .filter(|&&e| origin.holds(b, e))
            .count()
    };
    // The best GPU matching between new node i and old node j (GPUs matched only to equals).
    let gpu_matching = |i: usize, j: usize| -> (usize, Vec<usize>) {
        let (a, b) = (&members[i], &members[j]);
        let m = assign_max_overlap(a.len(), &|x, y| {
            if same(a[x], b[y]) {
                overlap(a[x], b[y]) + 1
            } else {
                0
            }
        });
        let ok = m.iter().enumerate().all(|(x, &y)| same(a[x], b[y]));
        let value = m
            .iter()
            .enumerate()
            .map(|(x, &y)| overlap(a[x], b[y]))
            .sum();
        if ok {
            (value, m)
        } else {
            (0, (0..a.len()).collect())
        }
    };
    let nodes = cluster.nodes();
    let exchangeable = (1..nodes).all(|n| node_shape(n) == node_shape(0));
    let node_target: Vec<usize> = if exchangeable {
        let table: Vec<usize> = (0..nodes * nodes)
            .map(|k| gpu_matching(k / nodes, k % nodes).0)
            .collect();
        assign_max_overlap(nodes, &|i, j| table[i * nodes + j])
    } else {
        (0..nodes).collect()
    };
    let mut out = vec![0; next.len()];
    for (i, &j) in node_target.iter().enumerate() {
        let (_, m) = gpu_matching(i, j);
        for (x, &y) in m.iter().enumerate() {
            let (from, to) = (members[i][x], members[j][y]);
            let target = cluster.slot_range(to);
            out[target.clone()].copy_from_slice(&next[cluster.slot_range(from)]);
            keep_slots(&mut out[target.clone()], &current[target]);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count_moves;

    #[test]
    fn never_more_moves_than_the_plan_as_given_and_nodes_stay_whole() {
        // Two nodes of two GPUs, two slots; groups {0,1,2,3} and {4,5,6,7}.
        let c = PlacementCluster::uniform(4, 2, 2).unwrap();
        let current = [0, 1, 2, 3, 4, 5, 6, 7];
        let next = [6, 7, 4, 5, 2, 3, 0, 1];
        let aligned = align_within_nodes(&next, &current, &c, 8).unwrap();
        assert_eq!(count_moves(&current, &aligned, &c, 8).unwrap(), 0);
        let next = [5, 4, 7, 6, 0, 2, 1, 3];
        let aligned = align_within_nodes(&next, &current, &c, 8).unwrap();
        let before = count_moves(&current, &next, &c, 8).unwrap();
        let after = count_moves(&current, &aligned, &c, 8).unwrap();
        assert!(after <= before, "{after} > {before}");
        // Node 0 of the result holds exactly what one node of `next` held.
        let mut node0: Vec<usize> = aligned[..4].to_vec();
        node0.sort_unstable();
        assert!(node0 == vec![0, 1, 2, 3] || node0 == vec![4, 5, 6, 7]);
    }
}

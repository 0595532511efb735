//! Splitting one batch's tokens over an expert's replicas to balance the GPUs.

use comm_cost_model::InputError;
use comm_cost_model::check_finite_result;
use serde::{Deserialize, Serialize};

use crate::error::PlacementError;
use crate::flow::FlowNetwork;
use crate::model::PlacementCluster;
use crate::plan::check_map;

/// Largest total token count [`split_tokens`] accepts, `2^53` (token counts convert exactly to
/// `f64`).
pub const MAX_SPLIT_TOKENS: u64 = 1 << 53;

/// One batch's tokens assigned to replicas: the balanced split next to the even one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenSplit {
    /// Tokens each physical slot processes under the balanced split (length `R`).
    pub slot_tokens: Vec<u64>,
    /// Tokens per GPU under the balanced split.
    pub gpu_tokens: Vec<u64>,
    /// `max_g gpu_tokens[g] / speed[g]`: the smallest possible with whole tokens.
    pub max_gpu_load: f64,
    /// Tokens per slot under the even split (`t_e / c_e` each, the remainder to the first
    /// replicas in slot order).
    pub even_slot_tokens: Vec<u64>,
    /// Tokens per GPU under the even split.
    pub even_gpu_tokens: Vec<u64>,
    /// Maximum GPU load under the even split.
    pub even_max_gpu_load: f64,
}

/// Splits each expert's tokens of one batch over its replicas so that the busiest GPU
/// processes as few tokens (over its speed) as possible.
///
/// Engines split an expert's tokens evenly over its replicas; with a known batch a router can do
/// better. For a limit `T`, a split keeping every GPU `g` at most `T · speed_g` exists iff the
/// flow network source → expert `e` (capacity `t_e`) → each GPU holding `e` → sink (capacity
/// `floor(T · speed_g)`) carries all tokens; bisection on `T` finds the least such limit, and the
/// maximum flow gives the integral split (flow integrality), so the result is exactly optimal
/// with whole tokens (up to `f64` resolution of `T` with heterogeneous speeds). Two replicas of
/// one expert on one GPU (EPLB's duplicates) count as one: the first slot takes that GPU's share.
///
/// # Errors
///
/// [`PlacementError::Input`] (`SizeMismatch`) unless the map has one entry per slot,
/// [`PlacementError::Input`] (`IndexOutOfRange`) for an expert id `>= tokens.len()`,
/// [`PlacementError::MissingExpert`] for an expert without a replica,
/// [`PlacementError::Input`] (`TooLarge`) above [`MAX_SPLIT_TOKENS`] tokens in total,
/// [`PlacementError::Input`] (`NonFinite`) when a GPU's tokens over its speed overflow (a
/// subnormal speed).
///
/// # Complexity
///
/// `O(log(total) · F)` where `F` is one maximum flow on `E + G + 2` nodes and `E + R + G` edges
/// (Dinic); `O(E + R + G)` space.
///
/// # Examples
///
/// ```
/// use expert_placement::{PlacementCluster, split_tokens};
///
/// // Expert 0 on both GPUs, expert 1 on GPU 0, expert 2 on GPU 1.
/// let c = PlacementCluster::uniform(2, 2, 1)?;
/// let s = split_tokens(&[0, 1, 0, 2], &[10, 8, 0], &c)?;
/// // Even: GPU 0 gets 5 + 8, GPU 1 gets 5. Balanced: expert 0 sends 1 + 9.
/// assert_eq!(s.even_gpu_tokens, vec![13, 5]);
/// assert_eq!(s.gpu_tokens, vec![9, 9]);
/// assert_eq!(s.slot_tokens, vec![1, 8, 9, 0]);
/// assert_eq!((s.max_gpu_load, s.even_max_gpu_load), (9.0, 13.0));
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn split_tokens(
    physical_to_logical: &[usize],
    tokens: &[u64],
    cluster: &PlacementCluster,
) -> Result<TokenSplit, PlacementError> {
    check_map(
        "physical_to_logical",
        physical_to_logical,
        tokens.len(),
        cluster,
    )?;
    let total = tokens.iter().fold(0u64, |acc, &t| acc.saturating_add(t));
    if total > MAX_SPLIT_TOKENS {
        return Err(PlacementError::Input(InputError::too_large(
            "total tokens of the batch",
            usize::try_from(MAX_SPLIT_TOKENS).unwrap_or(usize::MAX),
            usize::try_from(total).unwrap_or(usize::MAX),
        )));
    }
    let gpu_of_slot = cluster.gpu_of_each_slot();
    let even_slot_tokens = even_split(physical_to_logical, tokens);
    let even_gpu_tokens = per_gpu(&even_slot_tokens, &gpu_of_slot, cluster.gpus());
    let even_max_gpu_load = check_finite_result(
        "maximum GPU load of the even split",
        max_load(&even_gpu_tokens, cluster),
    )?;
    let network = Network::new(physical_to_logical, tokens, &gpu_of_slot, cluster);
    let speed = cluster.speed_of_gpu();
    let average = total as f64 / speed.iter().sum::<f64>();
    let (mut lo, mut hi) = (average * (1.0 - 1e-12), even_max_gpu_load);
    let mut best = network
        .route(hi)
        .unwrap_or_else(|| even_slot_tokens.clone());
    // Bisection: `lo` infeasible (or the bound), `hi` feasible.
    for _ in 0..200 {
        if hi - lo <= hi * 1e-15 {
            break;
        }
        let mid = lo + (hi - lo) / 2.0;
        match network.route(mid) {
            Some(split) => {
                hi = mid;
                best = split;
            }
            None => lo = mid,
        }
    }
    let gpu_tokens = per_gpu(&best, &gpu_of_slot, cluster.gpus());
    let max_gpu_load = check_finite_result(
        "maximum GPU load of the split",
        max_load(&gpu_tokens, cluster),
    )?;
    Ok(TokenSplit {
        slot_tokens: best,
        gpu_tokens,
        max_gpu_load,
        even_slot_tokens,
        even_gpu_tokens,
        even_max_gpu_load,
    })
}

/// `t_e / c_e` tokens per replica, the remainder to the first replicas in slot order.
fn even_split(map: &[usize], tokens: &[u64]) -> Vec<u64> {
    let count = crate::plan::counts(map, tokens.len());
    let mut seen = vec![0u64; tokens.len()];
    map.iter()
        .map(|&e| {
            let c = count[e] as u64;
            let extra = u64::from(seen[e] < tokens[e] % c);
            seen[e] += 1;
            tokens[e] / c + extra
        })
        .collect()
}

fn per_gpu(slot_tokens: &[u64], gpu_of_slot: &[usize], gpus: usize) -> Vec<u64> {
    let mut out = vec![0u64; gpus];
    for (&t, &g) in slot_tokens.iter().zip(gpu_of_slot) {
        out[g] += t;
    }
    out
}

fn max_load(gpu_tokens: &[u64], cluster: &PlacementCluster) -> f64 {
    gpu_tokens
        .iter()
        .zip(cluster.speed_of_gpu())
        .map(|(&t, &v)| t as f64 / v)
        .fold(0.0, f64::max)
}

/// The expert → GPU network of one batch.
struct Network<'a> {
    map: &'a [usize],
    tokens: &'a [u64],
    speed: &'a [f64],
    /// `(expert, GPU)` pairs with at least one replica, and the first such slot.
    pairs: Vec<(usize, usize, usize)>,
    total: u64,
}

impl<'a> Network<'a> {
    fn new(
        map: &'a [usize],
        tokens: &'a [u64],
        gpu_of_slot: &'a [usize],
        cluster: &'a PlacementCluster,
    ) -> Self {
        let mut pairs: Vec<(usize, usize, usize)> = map
            .iter()
            .zip(gpu_of_slot)
            .enumerate()
            .map(|(s, (&e, &g))| (e, g, s))
            .collect();
        pairs.sort_unstable();
        pairs.dedup_by_key(|p| (p.0, p.1));
        Self {
            map,
            tokens,
            speed: cluster.speed_of_gpu(),
            pairs,
            total: tokens.iter().sum(),
        }
    }

    /// A split keeping every GPU at most `limit · speed` tokens, as tokens per slot, if any.
    fn route(&self, limit: f64) -> Option<Vec<u64>> {
        let (experts, gpus) = (self.tokens.len(), self.speed.len());
        let (source, sink) = (experts + gpus, experts + gpus + 1);
        let mut f = FlowNetwork::new(experts + gpus + 2);
        for (e, &t) in self.tokens.iter().enumerate() {
            f.add_edge(source, e, t);
        }
        let ids: Vec<usize> = self
            .pairs
            .iter()
            .map(|&(e, g, _)| f.add_edge(e, experts + g, self.tokens[e]))
            .collect();
        for (g, &v) in self.speed.iter().enumerate() {
            // Saturating float-to-integer conversion: a huge limit is no limit (and both
            // factors are non-negative).
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            f.add_edge(experts + g, sink, (limit * v).floor() as u64);
        }
        if f.max_flow(source, sink) < self.total {
            return None;
        }
        let mut slots = vec![0u64; self.map.len()];
        for (&(_, _, s), &id) in self.pairs.iter().zip(&ids) {
            slots[s] = f.flow(id);
        }
        Some(slots)
    }
}

//! Synthetic router traces with locality: the sources of a node prefer some experts.

use comm_cost_model::InputError;
use comm_cost_model::seeded_rng;
use rand::RngExt;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::error::TrafficError;
use crate::routed::{MAX_ROUTED_PAIRS, RoutedTokens};
use comm_cost_model::{check_at_most, check_entry};

/// Parameters of [`locality_trace`].
///
/// Expert popularity is Zipf (`p_e ∝ r^-zipf_exponent`, a random rank order per layer, stream
/// `3 · layer`); each expert has a home node (a random balanced partition, stream `3 · layer +
/// 1`); a source GPU of node `n` sends a share `1 - locality` of its tokens by global popularity
/// and a share `locality` to the experts at home in `n`, by popularity among them; each count
/// is then scaled by an independent uniform factor in `[1 - noise, 1 + noise]` (stream `3 ·
/// layer + 2`). `locality = 0` is the no-locality control (every node sees the same
/// popularity).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalityTrace {
    /// Number of layers.
    pub layers: usize,
    /// Source GPUs.
    pub gpus: usize,
    /// Nodes (GPUs numbered node by node; the first `gpus % nodes` nodes hold one more).
    pub nodes: usize,
    /// Logical experts.
    pub experts: usize,
    /// Token-expert pairs each source GPU routes per layer (tokens times top-k).
    pub tokens_per_gpu: f64,
    /// Zipf exponent of expert popularity.
    pub zipf_exponent: f64,
    /// Share of a node's tokens that go to its home experts, in `[0, 1]`.
    pub locality: f64,
    /// Relative noise of each count, in `[0, 1]`.
    pub noise: f64,
}

impl LocalityTrace {
    /// DeepSeek-like layers: 256 experts, 8 routed per token and 4096 tokens per GPU
    /// (32,768 pairs), Zipf exponent 0.8, noise 0.1, at the given locality.
    #[must_use]
    pub fn deepseek_like(layers: usize, gpus: usize, nodes: usize, locality: f64) -> Self {
        Self {
            layers,
            gpus,
            nodes,
            experts: 256,
            tokens_per_gpu: 32_768.0,
            zipf_exponent: 0.8,
            locality,
            noise: 0.1,
        }
    }
}

/// Generates router traces with locality, one [`RoutedTokens`] per layer (see
/// [`LocalityTrace`] for the model), seeded through `comm_cost_model::seeded_rng`.
///
/// # Errors
///
/// [`TrafficError::Input`] (`Empty`) for no layer, GPU, node or expert, [`TrafficError::Input`] (`InvalidEntry`) for
/// a negative or non-finite token count or exponent, or a locality or noise outside `[0, 1]`,
/// [`TrafficError::Input`] (`TooLarge`) for more nodes than GPUs or more than
/// [`crate::MAX_ROUTED_PAIRS`] pairs in all layers together.
///
/// # Complexity
///
/// `O(layers · G · E)`.
///
/// # Examples
///
/// ```
/// use traffic_placement::{LocalityTrace, locality_trace};
///
/// let spec = LocalityTrace::deepseek_like(2, 16, 2, 0.5);
/// let layers = locality_trace(&spec, 7)?;
/// assert_eq!((layers.len(), layers[0].sources(), layers[0].experts()), (2, 16, 256));
/// assert_eq!(layers, locality_trace(&spec, 7)?); // same seed, same trace
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
pub fn locality_trace(spec: &LocalityTrace, seed: u64) -> Result<Vec<RoutedTokens>, TrafficError> {
    for (what, v) in [
        ("layers", spec.layers),
        ("gpus", spec.gpus),
        ("nodes", spec.nodes),
        ("experts", spec.experts),
    ] {
        if v == 0 {
            return Err(TrafficError::Input(InputError::Empty { what }));
        }
    }
    check_at_most("nodes (at most one per GPU)", spec.gpus, spec.nodes)?;
    check_at_most(
        "layers x gpus x experts",
        MAX_ROUTED_PAIRS,
        spec.layers
            .saturating_mul(spec.gpus)
            .saturating_mul(spec.experts),
    )?;
    check_entry("tokens_per_gpu", 0, spec.tokens_per_gpu)?;
    check_entry("zipf_exponent", 0, spec.zipf_exponent)?;
    for (what, v) in [("locality", spec.locality), ("noise", spec.noise)] {
        check_entry(what, 0, v)?;
        if v > 1.0 {
            return Err(TrafficError::Input(InputError::InvalidEntry {
                what,
                index: 0,
                value: v,
            }));
        }
    }
    let (g, k, e) = (spec.gpus, spec.nodes, spec.experts);
    let (base, extra) = (g / k, g % k);
    let node_of_gpu: Vec<usize> = (0..k)
        .flat_map(|n| std::iter::repeat_n(n, base + usize::from(n < extra)))
        .collect();
    let mut out = Vec::with_capacity(spec.layers);
    for l in 0..spec.layers as u64 {
        let mut p: Vec<f64> = (1..=e)
            .map(|r| (r as f64).powf(-spec.zipf_exponent))
            .collect();
        p.shuffle(&mut seeded_rng(seed, 3 * l));
        let sum: f64 = p.iter().sum();
        p.iter_mut().for_each(|x| *x /= sum);
        let mut home: Vec<usize> = (0..e).map(|x| x % k).collect();
        home.shuffle(&mut seeded_rng(seed, 3 * l + 1));
        let mut home_mass = vec![0.0; k];
        for x in 0..e {
            home_mass[home[x]] += p[x];
        }
        let mut noise = seeded_rng(seed, 3 * l + 2);
        let rows = (0..g)
            .map(|src| {
                let n = node_of_gpu[src];
                (0..e)
                    .map(|x| {
                        let local = if home[x] == n && home_mass[n] > 0.0 {
                            p[x] / home_mass[n]
                        } else {
                            0.0
                        };
                        let share = (1.0 - spec.locality) * p[x] + spec.locality * local;
                        let f = if spec.noise > 0.0 {
                            noise.random_range(1.0 - spec.noise..=1.0 + spec.noise)
                        } else {
                            1.0
                        };
                        spec.tokens_per_gpu * share * f
                    })
                    .collect()
            })
            .collect();
        out.push(RoutedTokens::new(rows)?);
    }
    Ok(out)
}

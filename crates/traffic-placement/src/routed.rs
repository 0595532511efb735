//! The input: tokens each source GPU routes to each logical expert of one layer, and optionally
//! each token's top-k expert ids.

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use crate::error::TrafficError;
use comm_cost_model::{check_at_most, check_entry, check_same_len};

/// Largest `G · E` (source GPUs times experts) of one layer's [`RoutedTokens`], `2^26`: the
/// planners keep a few words per source-expert pair.
pub const MAX_ROUTED_PAIRS: usize = 1 << 26;

/// Largest number of expert ids of one layer's [`TopKRoutes`] (tokens times k), `2^28`.
pub const MAX_TOPK_ENTRIES: usize = 1 << 28;

/// One layer's routed tokens: `tokens[src][e]` is how many tokens source GPU `src` sent to
/// logical expert `e` in the window (any unit, as long as it is the same for every entry).
///
/// This is `routed_tokens[layer]` of the `infer` spec and of `place --routed-tokens`; an engine's
/// expert-distribution recorder gives it per layer when it keeps the source rank (see
/// `docs/cli.md#place`). Sources are the GPUs of the [`expert_placement::PlacementCluster`] the
/// experts are placed on, in the same order (rank `r` is GPU `r`).
///
/// # Examples
///
/// ```
/// use traffic_placement::RoutedTokens;
///
/// let t = RoutedTokens::new(vec![vec![3.0, 1.0, 0.0], vec![0.0, 2.0, 4.0]])?;
/// assert_eq!((t.sources(), t.experts()), (2, 3));
/// assert_eq!(t.expert_loads(), vec![3.0, 3.0, 4.0]);
/// assert_eq!(t.get(1, 2), 4.0);
/// assert!(RoutedTokens::new(vec![vec![1.0], vec![-1.0]]).is_err());
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Vec<f64>>", into = "Vec<Vec<f64>>")]
pub struct RoutedTokens {
    sources: usize,
    experts: usize,
    /// Row-major `[src][e]`.
    tokens: Vec<f64>,
}

impl TryFrom<Vec<Vec<f64>>> for RoutedTokens {
    type Error = TrafficError;
    fn try_from(rows: Vec<Vec<f64>>) -> Result<Self, TrafficError> {
        Self::new(rows)
    }
}

impl From<RoutedTokens> for Vec<Vec<f64>> {
    fn from(t: RoutedTokens) -> Self {
        t.rows()
    }
}

impl RoutedTokens {
    /// One layer from its rows, one per source GPU, each with one entry per logical expert.
    ///
    /// # Errors
    ///
    /// [`TrafficError::Input`] (`Empty`) for no source or no expert, [`TrafficError::Input`] (`SizeMismatch`) for rows
    /// of different lengths, [`TrafficError::Input`] (`InvalidEntry`) for a NaN, infinite or negative count
    /// (flat row-major index), [`TrafficError::Input`] (`TooLarge`) above [`MAX_ROUTED_PAIRS`] entries,
    /// [`TrafficError::Input`] (`NonFinite`) when the counts sum beyond `f64`.
    ///
    /// # Complexity
    ///
    /// `O(G · E)`.
    pub fn new(rows: Vec<Vec<f64>>) -> Result<Self, TrafficError> {
        let sources = rows.len();
        if sources == 0 {
            return Err(TrafficError::Input(InputError::Empty {
                what: "routed_tokens (source GPUs)",
            }));
        }
        let experts = rows[0].len();
        if experts == 0 {
            return Err(TrafficError::Input(InputError::Empty {
                what: "routed_tokens (experts)",
            }));
        }
        check_at_most(
            "routed_tokens sources x experts",
            MAX_ROUTED_PAIRS,
            sources.saturating_mul(experts),
        )?;
        let mut tokens = Vec::with_capacity(sources * experts);
        let mut total = 0.0f64;
        for row in rows {
            check_same_len("routed_tokens row length (experts)", row.len(), experts)?;
            for v in row {
                check_entry("routed_tokens", tokens.len(), v)?;
                total += v;
                tokens.push(v);
            }
        }
        // Every sum the planners form is at most the total: refuse one that overflows.
        comm_cost_model::check_finite_result("total of routed_tokens", total)?;
        Ok(Self {
            sources,
            experts,
            tokens,
        })
    }

    /// Every layer of a `[layers][G][E]` array (each layer checked as [`RoutedTokens::new`];
    /// every layer must have the same shape).
    ///
    /// # Errors
    ///
    /// Those of [`RoutedTokens::new`] for the first bad layer, [`TrafficError::Input`] (`Empty`) for no
    /// layer, [`TrafficError::Input`] (`SizeMismatch`) when layers differ in shape.
    ///
    /// # Complexity
    ///
    /// `O(layers · G · E)`.
    pub fn layers(layers: Vec<Vec<Vec<f64>>>) -> Result<Vec<Self>, TrafficError> {
        if layers.is_empty() {
            return Err(TrafficError::Input(InputError::Empty {
                what: "routed_tokens (layers)",
            }));
        }
        let out = layers
            .into_iter()
            .map(Self::new)
            .collect::<Result<Vec<_>, _>>()?;
        for l in &out {
            check_same_len(
                "routed_tokens source GPUs per layer",
                l.sources,
                out[0].sources,
            )?;
            check_same_len("routed_tokens experts per layer", l.experts, out[0].experts)?;
        }
        Ok(out)
    }

    /// Number of source GPUs `G`.
    #[must_use]
    pub fn sources(&self) -> usize {
        self.sources
    }

    /// Number of logical experts `E`.
    #[must_use]
    pub fn experts(&self) -> usize {
        self.experts
    }

    /// Tokens from `src` to expert `e` (0 out of range).
    #[must_use]
    pub fn get(&self, src: usize, e: usize) -> f64 {
        if src < self.sources && e < self.experts {
            self.tokens[src * self.experts + e]
        } else {
            0.0
        }
    }

    /// The row of source `src` (empty out of range).
    #[must_use]
    pub fn row(&self, src: usize) -> &[f64] {
        if src < self.sources {
            &self.tokens[src * self.experts..(src + 1) * self.experts]
        } else {
            &[]
        }
    }

    /// The rows, `[G][E]`.
    #[must_use]
    pub fn rows(&self) -> Vec<Vec<f64>> {
        (0..self.sources).map(|s| self.row(s).to_vec()).collect()
    }

    /// Tokens of each expert over all sources (the `logical_count` of EPLB).
    #[must_use]
    pub fn expert_loads(&self) -> Vec<f64> {
        let mut w = vec![0.0; self.experts];
        for s in 0..self.sources {
            for (we, &t) in w.iter_mut().zip(self.row(s)) {
                *we += t;
            }
        }
        w
    }

    /// All tokens of the layer (token-expert pairs).
    #[must_use]
    pub fn total(&self) -> f64 {
        self.tokens.iter().sum()
    }

    /// `[nodes][E]`: tokens the sources of each node send to each expert, for `node_of_source`
    /// (one entry per source; ids below `nodes`).
    pub(crate) fn by_node(&self, node_of_source: &[usize], nodes: usize) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; self.experts]; nodes];
        for (s, &n) in node_of_source.iter().enumerate().take(self.sources) {
            if let Some(row) = d.get_mut(n) {
                for (x, &t) in row.iter_mut().zip(self.row(s)) {
                    *x += t;
                }
            }
        }
        d
    }
}

/// One layer's per-token routing: `topk_ids[src][token]` lists the logical experts one token of
/// source GPU `src` is sent to (its top-k). It gives [`RoutedTokens`] by counting, and lets the
/// dispatch count a token sent to several experts of one remote node once, as DeepEP's normal
/// kernels do ([`crate::cross_node_sends`]).
///
/// # Examples
///
/// ```
/// use traffic_placement::TopKRoutes;
///
/// let r = TopKRoutes::new(vec![vec![vec![0, 1], vec![1, 2]], vec![vec![2, 0]]], 3)?;
/// assert_eq!(r.routed_tokens()?.rows(), vec![vec![1.0, 2.0, 1.0], vec![1.0, 0.0, 1.0]]);
/// assert!(TopKRoutes::new(vec![vec![vec![3]]], 3).is_err());
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopKRoutes {
    experts: usize,
    topk_ids: Vec<Vec<Vec<usize>>>,
}

impl TopKRoutes {
    /// Per-token routes of `experts` logical experts.
    ///
    /// # Errors
    ///
    /// [`TrafficError::Input`] (`Empty`) for no source or `experts == 0`, [`TrafficError::Input`] (`IndexOutOfRange`)
    /// for an expert id `>= experts`, [`TrafficError::Input`] (`TooLarge`) above [`MAX_TOPK_ENTRIES`] ids.
    ///
    /// # Complexity
    ///
    /// `O(tokens · k)`.
    pub fn new(topk_ids: Vec<Vec<Vec<usize>>>, experts: usize) -> Result<Self, TrafficError> {
        if topk_ids.is_empty() {
            return Err(TrafficError::Input(InputError::Empty {
                what: "topk_ids (source GPUs)",
            }));
        }
        if experts == 0 {
            return Err(TrafficError::Input(InputError::Empty {
                what: "topk_ids (experts)",
            }));
        }
        let mut entries = 0usize;
        for src in &topk_ids {
            for token in src {
                entries = entries.saturating_add(token.len());
                check_at_most("topk_ids entries", MAX_TOPK_ENTRIES, entries)?;
                if let Some(&bad) = token.iter().find(|&&e| e >= experts) {
                    return Err(TrafficError::Input(InputError::index_out_of_range(
                        "topk_ids", bad, experts,
                    )));
                }
            }
        }
        Ok(Self { experts, topk_ids })
    }

    /// Number of source GPUs.
    #[must_use]
    pub fn sources(&self) -> usize {
        self.topk_ids.len()
    }

    /// The tokens of each source, each the list of its experts.
    #[must_use]
    pub fn topk_ids(&self) -> &[Vec<Vec<usize>>] {
        &self.topk_ids
    }

    /// The counts `[src][e]` (an expert listed twice for one token counts twice).
    ///
    /// # Errors
    ///
    /// [`TrafficError::Input`] (`TooLarge`) when `G · E` exceeds [`MAX_ROUTED_PAIRS`].
    pub fn routed_tokens(&self) -> Result<RoutedTokens, TrafficError> {
        check_at_most(
            "routed_tokens sources x experts",
            MAX_ROUTED_PAIRS,
            self.sources().saturating_mul(self.experts),
        )?;
        let rows = self
            .topk_ids
            .iter()
            .map(|tokens| {
                let mut row = vec![0.0; self.experts];
                for &e in tokens.iter().flatten() {
                    row[e] += 1.0;
                }
                row
            })
            .collect();
        RoutedTokens::new(rows)
    }
}

//! Synthetic per-expert loads for placement experiments: log-normal and Zipf layers, and drift.
//!
//! Real expert-load dumps are rarely published; these generators stand in for them with stated
//! assumptions. DeepEP PR 393 reports that per-rank token counts of DeepSeek-V3 layers on MMLU-Pro
//! are fitted best by a log-normal distribution, so [`lognormal_loads`] draws each expert's
//! share from `exp(N(-sigma^2 / 2, sigma^2))` (mean 1); [`zipf_loads`] gives the `r`-th most
//! popular expert a share proportional to `r^-s` with a random rank order per layer;
//! [`drift_loads`] multiplies every load by independent log-normal noise of mean 1, what the next
//! window of a serving engine looks like.

use comm_cost_model::{InputError, check_non_negative, check_positive, seeded_rng};
use rand::RngExt;
use rand::seq::SliceRandom;

use crate::error::PlacementError;
use crate::model::MAX_PLACEMENT_SLOTS;
use comm_cost_model::check_at_most;

/// Largest `layers * experts` the generators produce (`2^24` loads, 128 MiB of `f64`, a few
/// seconds of work at most; `2^26` let a fuzzed call run for more than 20 s).
pub const MAX_WORKLOAD_LOADS: usize = 1 << 24;

/// `layers` layers of `experts` log-normal loads, each layer scaled to `tokens_per_layer` in
/// total and rounded to whole tokens.
///
/// Layer `l` uses its own stream of `seed`, so adding layers does not change earlier ones.
///
/// # Errors
///
/// [`PlacementError::Input`] (`Empty`) for no layer or no expert, [`PlacementError::Input`] (`TooLarge`) above
/// [`MAX_PLACEMENT_SLOTS`] experts or [`MAX_WORKLOAD_LOADS`] loads, [`PlacementError::Input`] for
/// a `sigma` that is negative or not finite or a `tokens_per_layer` that is not positive.
///
/// # Complexity
///
/// `O(layers · experts)` time and output space.
///
/// # Examples
///
/// ```
/// use expert_placement::lognormal_loads;
///
/// let w = lognormal_loads(2, 256, 1.0, 65_536.0, 7)?;
/// assert_eq!((w.len(), w[0].len()), (2, 256));
/// let total: f64 = w[0].iter().sum();
/// assert!((total - 65_536.0).abs() <= 256.0); // rounding to whole tokens
/// assert_eq!(w, lognormal_loads(2, 256, 1.0, 65_536.0, 7)?);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn lognormal_loads(
    layers: usize,
    experts: usize,
    sigma: f64,
    tokens_per_layer: f64,
    seed: u64,
) -> Result<Vec<Vec<f64>>, PlacementError> {
    check_shape(layers, experts)?;
    check_non_negative("log-normal sigma", sigma)?;
    check_positive("tokens per layer", tokens_per_layer)?;
    let layer = |l: usize| {
        let mut rng = seeded_rng(seed, l as u64);
        let shares: Vec<f64> = (0..experts)
            .map(|_| (sigma * standard_normal(&mut rng) - sigma * sigma / 2.0).exp())
            .collect();
        scale(&shares, tokens_per_layer)
    };
    (0..layers).map(layer).collect()
}

/// `layers` layers of `experts` Zipf(`exponent`) loads in a random rank order per layer, each
/// layer scaled to `tokens_per_layer` and rounded.
///
/// # Errors
///
/// As [`lognormal_loads`], for `exponent` in place of `sigma`.
///
/// # Complexity
///
/// `O(layers · experts)` time.
///
/// # Examples
///
/// ```
/// use expert_placement::zipf_loads;
///
/// let w = zipf_loads(1, 4, 1.0, 2_500.0, 3)?;
/// let mut sorted = w[0].clone();
/// sorted.sort_by(|a, b| b.total_cmp(a));
/// assert_eq!(sorted, vec![1200.0, 600.0, 400.0, 300.0]); // 1, 1/2, 1/3, 1/4 of 2500 / 2.083
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn zipf_loads(
    layers: usize,
    experts: usize,
    exponent: f64,
    tokens_per_layer: f64,
    seed: u64,
) -> Result<Vec<Vec<f64>>, PlacementError> {
    check_shape(layers, experts)?;
    check_non_negative("Zipf exponent", exponent)?;
    check_positive("tokens per layer", tokens_per_layer)?;
    let popularity = zipf_shares(experts, exponent)?;
    let layer = |l: usize| {
        let mut shares = popularity.clone();
        shares.shuffle(&mut seeded_rng(seed, l as u64));
        scale(&shares, tokens_per_layer)
    };
    (0..layers).map(layer).collect()
}

/// The unscaled Zipf(`exponent`) shares `r^-exponent` of `experts` experts in popularity order
/// (`r = 1, 2, ...`): hottest first, unshuffled, what [`zipf_loads`] permutes per layer. A
/// contiguous layout of these experts is the worst case for the busiest rank.
///
/// # Errors
///
/// [`PlacementError::Input`] (`Empty`) for no expert, [`PlacementError::Input`] (`TooLarge`) above
/// [`MAX_WORKLOAD_LOADS`], [`PlacementError::Input`] for an exponent that is negative or not
/// finite.
///
/// # Complexity
///
/// `O(experts)` time.
///
/// # Examples
///
/// ```
/// use expert_placement::zipf_shares;
///
/// assert_eq!(zipf_shares(3, 1.0)?, vec![1.0, 0.5, 1.0 / 3.0]);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn zipf_shares(experts: usize, exponent: f64) -> Result<Vec<f64>, PlacementError> {
    check_shape(1, experts)?;
    check_non_negative("Zipf exponent", exponent)?;
    Ok((1..=experts).map(|r| (r as f64).powf(-exponent)).collect())
}

/// Every load multiplied by `exp(N(-sigma^2 / 2, sigma^2))` (mean 1), rounded to whole tokens:
/// the next window of the same workload. `sigma = 0.2` is roughly "20% multiplicative noise".
///
/// # Errors
///
/// [`PlacementError::Input`] for a negative or non-finite `sigma` or a load that is negative or
/// not finite.
///
/// # Complexity
///
/// `O(total loads)` time.
///
/// # Examples
///
/// ```
/// use expert_placement::drift_loads;
///
/// let w = vec![vec![100.0, 0.0, 50.0]];
/// assert_eq!(drift_loads(&w, 0.0, 1)?, w); // no noise, no change
/// assert_eq!(drift_loads(&w, 0.2, 1)?[0][1], 0.0); // an idle expert stays idle
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn drift_loads(
    loads: &[Vec<f64>],
    sigma: f64,
    seed: u64,
) -> Result<Vec<Vec<f64>>, PlacementError> {
    check_non_negative("drift sigma", sigma)?;
    let mut out = Vec::with_capacity(loads.len());
    for (l, row) in loads.iter().enumerate() {
        let mut rng = seeded_rng(seed, l as u64);
        let mut drifted = Vec::with_capacity(row.len());
        for &w in row {
            check_non_negative("load", w)?;
            let factor = (sigma * standard_normal(&mut rng) - sigma * sigma / 2.0).exp();
            drifted.push(finite((w * factor).round(), "drifted load")?);
        }
        out.push(drifted);
    }
    Ok(out)
}

fn check_shape(layers: usize, experts: usize) -> Result<(), PlacementError> {
    if layers == 0 {
        return Err(PlacementError::Input(InputError::Empty { what: "layers" }));
    }
    if experts == 0 {
        return Err(PlacementError::Input(InputError::Empty { what: "experts" }));
    }
    check_at_most("experts", MAX_PLACEMENT_SLOTS, experts)?;
    Ok(check_at_most(
        "layers x experts",
        MAX_WORKLOAD_LOADS,
        layers.saturating_mul(experts),
    )?)
}

/// Shares scaled to `total` and rounded.
fn scale(shares: &[f64], total: f64) -> Result<Vec<f64>, PlacementError> {
    let sum: f64 = shares.iter().sum();
    shares
        .iter()
        .map(|&s| finite((s / sum * total).round(), "scaled load"))
        .collect()
}

fn finite(value: f64, what: &'static str) -> Result<f64, PlacementError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(InputError::NonFinite { what, value }.into())
    }
}

/// One standard normal draw (Box-Muller; the cosine branch only, for a simple fixed sequence).
fn standard_normal(rng: &mut comm_cost_model::SeededRng) -> f64 {
    // 1 - u keeps the logarithm's argument in (0, 1].
    let u: f64 = 1.0 - rng.random_range(0.0..1.0);
    let v: f64 = rng.random_range(0.0..1.0);
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

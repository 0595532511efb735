//! Seeded synthetic traffic matrices for benches, examples and demos.
//!
//! MoE routing is skewed: a few experts receive most tokens. [`zipf_traffic`] models one
//! expert per GPU with Zipf popularity (rank `r` gets weight `1 / r^s`, ranks shuffled over GPUs)
//! and per-pair noise, so the hot receivers set the bound. [`uniform_traffic`] draws every entry
//! uniformly, the balanced case where every port is close to the bound.

use comm_cost_model::InputError;
use comm_cost_model::{SeededRng, seeded_rng};
use rand::RngExt;
use rand::seq::SliceRandom;

use comm_cost_model::{check_non_negative, check_same_len};

use crate::{ScheduleError, TrafficMatrix};

/// A Zipf-skewed all-to-all: each GPU routes `tokens_per_gpu` tokens of `bytes_per_token` bytes.
///
/// GPU `j` hosts the expert of Zipf rank `r_j` (a seeded permutation); sender `i` sends
/// `round(tokens_per_gpu * p_j * u_ij)` tokens to `j`, with `p_j ∝ r_j^(-exponent)` and `u_ij`
/// uniform in `[0.5, 1.5)`. The diagonal is zero (local tokens).
///
/// # Errors
///
/// [`ScheduleError::Input`] (`Empty`) for `n = 0`, [`ScheduleError::Input`] for a negative or
/// non-finite exponent, [`ScheduleError::Input`] (`Overflow`) if an entry exceeds `u64`.
/// [`ScheduleError::Input`] (`TooLarge`) above [`crate::MAX_GPUS`] GPUs.
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::workload::zipf_traffic;
/// let d = zipf_traffic(8, 1.0, 4096, 8192, 7)?;
/// assert_eq!(d.n(), 8);
/// assert_eq!(d, zipf_traffic(8, 1.0, 4096, 8192, 7)?); // seeded
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn zipf_traffic(
    n: usize,
    exponent: f64,
    tokens_per_gpu: u64,
    bytes_per_token: u64,
    seed: u64,
) -> Result<TrafficMatrix, ScheduleError> {
    check_zipf(n, exponent)?;
    let weights = zipf_weights(n, exponent, &mut seeded_rng(seed, POPULARITY_STREAM));
    zipf_rows(
        &weights,
        tokens_per_gpu,
        bytes_per_token,
        &mut seeded_rng(seed, NOISE_STREAM),
    )
}

/// Another batch of the same Zipf layer: the expert ranks of
/// [`zipf_traffic`]`(.., layer_seed)`, with the per-pair noise drawn from `batch_seed`.
///
/// This is what a plan made from historical statistics meets at run time (Aurora §2.4, Q4): the
/// same popular experts, different token counts.
///
/// # Errors
///
/// As [`zipf_traffic`].
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::workload::{zipf_batch, zipf_traffic};
/// let history = zipf_traffic(8, 1.0, 4096, 1, 5)?;
/// let today = zipf_batch(8, 1.0, 4096, 1, 5, 99)?;
/// // Same hot receiver, different counts.
/// let hot = |d: &alltoall_sched::TrafficMatrix| {
///     let r = d.receive_totals();
///     (0..8).max_by(|&a, &b| r[a].total_cmp(&r[b])).unwrap()
/// };
/// assert_eq!(hot(&history), hot(&today));
/// assert_ne!(history, today);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn zipf_batch(
    n: usize,
    exponent: f64,
    tokens_per_gpu: u64,
    bytes_per_token: u64,
    layer_seed: u64,
    batch_seed: u64,
) -> Result<TrafficMatrix, ScheduleError> {
    check_zipf(n, exponent)?;
    // Popularity and noise come from separate streams, so batch_seed == layer_seed gives
    // exactly `zipf_traffic`.
    let weights = zipf_weights(n, exponent, &mut seeded_rng(layer_seed, POPULARITY_STREAM));
    let mut noise = seeded_rng(batch_seed, NOISE_STREAM);
    zipf_rows(&weights, tokens_per_gpu, bytes_per_token, &mut noise)
}

/// A seeded router trace of one MoE layer: tokens each of `gpus` source GPUs routes to each
/// logical expert, `[G][E]` (the input of [`crate::dispatch_tokens`]).
///
/// Source `g` sends `round(t_e / G * u_ge)` tokens to expert `e`, where `t_e` is the layer's
/// token count of expert `e` (for example one layer of a per-expert load file) and `u_ge` is
/// uniform in `[max(0, 1 - noise), 1 + noise]`: balanced batches with per-source jitter.
///
/// # Errors
///
/// [`ScheduleError::Input`] (`Empty`) for no GPU; [`ScheduleError::InvalidTraffic`] (source 0) for a
/// negative or non-finite token count; [`ScheduleError::Input`] for a negative or non-finite
/// noise; [`ScheduleError::Input`] (`TooLarge`) above [`crate::MAX_GPUS`] GPUs;
/// [`ScheduleError::Input`] (`Overflow`) if a noisy count exceeds the `f64` range.
///
/// # Complexity
///
/// `O(G·E)`.
///
/// # Examples
///
/// ```
/// use alltoall_sched::workload::router_trace;
/// let t = router_trace(&[800.0, 80.0, 8.0], 4, 0.25, 1)?;
/// assert_eq!((t.len(), t[0].len()), (4, 3));
/// assert!(t.iter().all(|row| (150.0..=250.0).contains(&row[0])));
/// assert_eq!(t, router_trace(&[800.0, 80.0, 8.0], 4, 0.25, 1)?); // seeded
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn router_trace(
    expert_tokens: &[f64],
    gpus: usize,
    noise: f64,
    seed: u64,
) -> Result<Vec<Vec<f64>>, ScheduleError> {
    let shares = crate::uniform_sources(expert_tokens, gpus)?;
    let noise = check_non_negative("router trace noise", noise)?;

    let mut rng = seeded_rng(seed, NOISE_STREAM);
    let trace: Vec<Vec<f64>> = shares
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|t| (t * rng.random_range((1.0 - noise).max(0.0)..=1.0 + noise)).round())
                .collect()
        })
        .collect();
    // A count near `f64::MAX` times noise above 1 is infinite (found by fuzzing).
    if trace.iter().flatten().any(|t| !t.is_finite()) {
        return Err(ScheduleError::Input(InputError::Overflow {
            what: "tokens of a router trace",
        }));
    }
    Ok(trace)
}

/// Traffic a plan made on `base` meets when a fraction `noise` of it comes from other
/// patterns: `(1 - noise) · base + noise · mean(others)`, entry by entry.
///
/// Aurora's robustness experiment (§8.2 Q4, Fig. 14) plans on the first layer's statistics
/// and evaluates with the other layers' traffic mixed in, from 0% to 75% imprecision as each
/// further layer is added. With `others` = layers 2..=k+1 and `noise = k/4`, every added layer
/// contributes a quarter of the traffic, and at 75% the four layers weigh the same. The total
/// volume stays that of the blend of the inputs, so a plan is not helped or hurt by a change of
/// scale.
///
/// # Errors
///
/// [`ScheduleError::Input`] for a noise that is negative, non-finite or above 1 (reported as
/// `1 - noise` negative); [`ScheduleError::Input`] (`Empty`) for a positive noise and no other matrix;
/// [`ScheduleError::Input`] (`SizeMismatch`) for matrices of different sizes.
///
/// # Complexity
///
/// `O(k · n^2)` time for `k` other matrices.
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// use alltoall_sched::workload::blend_traffic;
/// let planned = TrafficMatrix::from_rows_u64(&[vec![0, 8], vec![4, 0]])?;
/// let other = TrafficMatrix::from_rows_u64(&[vec![0, 0], vec![12, 0]])?;
/// let actual = blend_traffic(&planned, &[other], 0.25)?;
/// assert_eq!(actual.to_rows(), vec![vec![0.0, 6.0], vec![6.0, 0.0]]);
/// assert_eq!(blend_traffic(&planned, &[], 0.0)?, planned);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn blend_traffic(
    base: &TrafficMatrix,
    others: &[TrafficMatrix],
    noise: f64,
) -> Result<TrafficMatrix, ScheduleError> {
    let noise = check_non_negative("noise fraction", noise)?;
    check_non_negative("1 - noise fraction", 1.0 - noise)?;
    let n = base.n();
    for other in others {
        check_same_len("GPUs of a noise matrix", other.n(), n)?;
    }
    if noise == 0.0 {
        return Ok(base.clone());
    }
    if others.is_empty() {
        return Err(ScheduleError::EMPTY);
    }
    let weight = noise / others.len() as f64;
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let mixed: f64 = others.iter().map(|o| o.at(i, j)).sum();
                    (1.0 - noise) * base.at(i, j) + weight * mixed
                })
                .collect()
        })
        .collect();
    TrafficMatrix::from_rows(&rows)
}

/// Stream of [`seeded_rng`] that permutes the experts' popularity ranks.
const POPULARITY_STREAM: u64 = 0;
/// Stream of [`seeded_rng`] that draws the per-pair noise.
const NOISE_STREAM: u64 = 1;

fn check_zipf(n: usize, exponent: f64) -> Result<(), ScheduleError> {
    if n == 0 {
        return Err(ScheduleError::EMPTY);
    }
    crate::error::check_gpus("GPUs of a Zipf matrix", n)?;
    check_non_negative("Zipf exponent", exponent)?;
    Ok(())
}

/// Popularity of each GPU's expert: rank `r` (a shuffle of `1..=n`) gets `r^-exponent`.
fn zipf_weights(n: usize, exponent: f64, rng: &mut SeededRng) -> Vec<f64> {
    let mut ranks: Vec<usize> = (1..=n).collect();
    ranks.shuffle(rng);
    let weights: Vec<f64> = ranks.iter().map(|&r| (r as f64).powf(-exponent)).collect();
    let total: f64 = weights.iter().sum();
    weights.into_iter().map(|w| w / total).collect()
}

/// A non-negative token count rounded to an integer; up to 1.5x `tokens_per_gpu` can exceed
/// `u64`, which `as` would silently clamp.
fn token_count(tokens: f64) -> Result<u64, ScheduleError> {
    let rounded = tokens.round();
    // 2^64 as an `f64` (exact): the first value that does not fit.
    if rounded >= 18_446_744_073_709_551_616.0 {
        return Err(ScheduleError::Input(InputError::Overflow {
            what: "tokens of a Zipf pair",
        }));
    }
    // Non-negative (weights and noise are) and below 2^64: the conversion is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(rounded as u64)
}

fn zipf_rows(
    weights: &[f64],
    tokens_per_gpu: u64,
    bytes_per_token: u64,
    rng: &mut SeededRng,
) -> Result<TrafficMatrix, ScheduleError> {
    let n = weights.len();
    let mut rows = vec![vec![0u64; n]; n];
    for (i, row) in rows.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            let noise: f64 = rng.random_range(0.5..1.5);
            if i != j {
                let tokens = token_count(tokens_per_gpu as f64 * weights[j] * noise)?;
                *cell = tokens
                    .checked_mul(bytes_per_token)
                    .ok_or(ScheduleError::Input(InputError::Overflow {
                        what: "tokens * bytes per token",
                    }))?;
            }
        }
    }
    TrafficMatrix::from_rows_u64(&rows)
}

/// Every off-diagonal entry uniform in `[0, max_bytes]` (seeded).
///
/// # Errors
///
/// [`ScheduleError::Input`] (`Empty`) for `n = 0`.
/// [`ScheduleError::Input`] (`TooLarge`) above [`crate::MAX_GPUS`] GPUs.
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::workload::uniform_traffic;
/// let d = uniform_traffic(4, 1000, 1)?;
/// assert!(d.pairs().all(|(_, _, b)| b <= 1000.0));
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn uniform_traffic(
    n: usize,
    max_bytes: u64,
    seed: u64,
) -> Result<TrafficMatrix, ScheduleError> {
    if n == 0 {
        return Err(ScheduleError::EMPTY);
    }
    crate::error::check_gpus("GPUs of a uniform matrix", n)?;
    let mut rng = seeded_rng(seed, 0);
    let rows: Vec<Vec<u64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        0
                    } else {
                        rng.random_range(0..=max_bytes)
                    }
                })
                .collect()
        })
        .collect();
    TrafficMatrix::from_rows_u64(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::InputError;

    #[test]
    fn batch_with_the_layer_seed_is_the_layer() {
        assert_eq!(
            zipf_batch(6, 1.1, 1000, 3, 4, 4).unwrap(),
            zipf_traffic(6, 1.1, 1000, 3, 4).unwrap()
        );
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert_eq!(zipf_traffic(0, 1.0, 1, 1, 0), Err(ScheduleError::EMPTY));
        assert!(matches!(
            zipf_traffic(4, -1.0, 1, 1, 0),
            Err(ScheduleError::Input(InputError::Negative { .. }))
        ));
        assert!(matches!(
            zipf_batch(4, f64::NAN, 1, 1, 0, 1),
            Err(ScheduleError::Input(InputError::NonFinite { .. }))
        ));
        assert!(matches!(
            zipf_traffic(4, 0.0, u64::MAX, 4, 0),
            Err(ScheduleError::Input(InputError::Overflow { .. }))
        ));
        assert_eq!(uniform_traffic(0, 1, 0), Err(ScheduleError::EMPTY));
    }

    #[test]
    fn blends_weigh_every_added_layer_alike() {
        let layer = |k: u64| zipf_traffic(5, 1.0, 400, 2, k).unwrap();
        let layers: Vec<TrafficMatrix> = (0..4).map(layer).collect();
        let all = blend_traffic(&layers[0], &layers[1..], 0.75).unwrap();
        for (i, j, bytes) in all.pairs() {
            let mean = layers.iter().map(|l| l.at(i, j)).sum::<f64>() / 4.0;
            assert!((bytes - mean).abs() <= 1e-9 * mean.max(1.0), "{i} {j}");
        }
        assert_eq!(
            blend_traffic(&layers[0], &layers[1..], 0.0).unwrap(),
            layers[0]
        );
        let full = blend_traffic(&layers[0], &layers[1..2], 1.0).unwrap();
        assert_eq!(full.to_rows(), layers[1].to_rows());
    }

    #[test]
    fn bad_blends_are_errors() {
        let d = zipf_traffic(3, 1.0, 100, 1, 0).unwrap();
        let small = zipf_traffic(2, 1.0, 100, 1, 0).unwrap();
        assert!(matches!(
            blend_traffic(&d, std::slice::from_ref(&d), 1.5),
            Err(ScheduleError::Input(InputError::Negative { .. }))
        ));
        assert!(matches!(
            blend_traffic(&d, std::slice::from_ref(&d), f64::NAN),
            Err(ScheduleError::Input(InputError::NonFinite { .. }))
        ));
        assert_eq!(blend_traffic(&d, &[], 0.5), Err(ScheduleError::EMPTY));
        assert!(matches!(
            blend_traffic(&d, &[small], 0.5),
            Err(ScheduleError::Input(InputError::SizeMismatch {
                expected: 3,
                actual: 2,
                ..
            }))
        ));
    }
}

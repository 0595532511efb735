//! Times of collective operations under the alpha-beta and bandwidth models.
//!
//! Conventions, the same for every function:
//!
//! * `total_bytes` of an AllGather or ReduceScatter is the size of the *gathered* buffer (every
//!   participant ends with all of it); each of the `n` participants owns `total_bytes / n`.
//! * `total_bytes` of an AllReduce is the size of the buffer every participant reduces.
//! * `shard_bytes` of an AlltoAll is what one GPU sends to *each* other GPU.
//! * A group of one GPU communicates nothing and takes zero time.
//!
//! The ring algorithms are the bandwidth-optimal schedules used by NCCL: an AllGather is `n - 1`
//! steps, each moving one shard per link. The hierarchical functions implement the two-tier
//! algorithms of the rail-only paper (Wang et al., §2.2 Eq. 1 and Appendix D), where `x` GPUs
//! share a high-bandwidth (HB) domain of per-GPU bandwidth `C_F` and `y` domains are joined by a
//! network of per-GPU bandwidth `C_S`; like the paper, they are bandwidth-only (no latency).

use crate::units::{Bytes, BytesPerSecond, Seconds};
use crate::validate::check_count;
use crate::{AlphaBeta, InputError, check_finite_result, check_non_negative, check_positive};

/// Ring AllGather of `total_bytes` over `n` participants: `(n - 1) * (alpha + beta * total / n)`.
///
/// # Errors
///
/// [`InputError`] if `total_bytes` is negative or not finite, `n == 0`, or the link was
/// built with a bad `alpha` or `beta` (its fields are public);
/// [`InputError::NonFinite`] if the time overflows `f64` (extreme sizes or costs).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{collectives::ring_all_gather_time_s, AlphaBeta};
/// let link = AlphaBeta::new(1e-5, 1e-9)?;
/// // 4 GPUs, 4 MB gathered: 3 steps of (10 us + 1 MB * 1 ns/B) = 3 * 1.01 ms.
/// let t = ring_all_gather_time_s(4e6, 4, &link)?;
/// assert!((t - 3.0 * 1.01e-3).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn ring_all_gather_time_s(
    total_bytes: Bytes,
    n: usize,
    link: &AlphaBeta,
) -> Result<Seconds, InputError> {
    let total = check_non_negative("AllGather size (bytes)", total_bytes)?;
    let n = check_count("AllGather participants", n, 1)?;
    let link = link.validated()?;
    if n == 1 {
        // No steps: zero, even where one step's time would overflow.
        return Ok(0.0);
    }
    let steps = (n - 1) as f64;
    check_finite_result(
        "ring AllGather time (s)",
        steps * link.time_s(total / n as f64),
    )
}

/// Ring ReduceScatter of `total_bytes` over `n` participants; the same traffic as the AllGather
/// it inverts, so the same time (reduction arithmetic is not modelled).
///
/// # Errors
///
/// As [`ring_all_gather_time_s`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{collectives::*, AlphaBeta};
/// let link = AlphaBeta::new(1e-5, 1e-9)?;
/// assert_eq!(ring_reduce_scatter_time_s(4e6, 4, &link)?, ring_all_gather_time_s(4e6, 4, &link)?);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn ring_reduce_scatter_time_s(
    total_bytes: Bytes,
    n: usize,
    link: &AlphaBeta,
) -> Result<Seconds, InputError> {
    ring_all_gather_time_s(total_bytes, n, link)
}

/// Ring AllReduce of `total_bytes` over `n` participants: a ReduceScatter then an AllGather,
/// `2 (n - 1) (alpha + beta * total / n)`.
///
/// # Errors
///
/// As [`ring_all_gather_time_s`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{collectives::ring_all_reduce_time_s, AlphaBeta};
/// let link = AlphaBeta::new(0.0, 1e-9)?;
/// // 2 * 7/8 * 8 MB * 1 ns/B = 14 ms.
/// assert!((ring_all_reduce_time_s(8e6, 8, &link)? - 14e-3).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn ring_all_reduce_time_s(
    total_bytes: Bytes,
    n: usize,
    link: &AlphaBeta,
) -> Result<Seconds, InputError> {
    check_finite_result(
        "ring AllReduce time (s)",
        2.0 * ring_all_gather_time_s(total_bytes, n, link)?,
    )
}

/// Pairwise-exchange AlltoAll: `n - 1` steps, in step `k` GPU `i` sends its shard for GPU
/// `(i + k) mod n`; each step costs `alpha + beta * shard_bytes` on a full-bisection network.
///
/// # Errors
///
/// [`InputError`] if `shard_bytes` is negative or not finite, `n == 0`, or the link was
/// built with a bad `alpha` or `beta` (its fields are public);
/// [`InputError::NonFinite`] if the time overflows `f64` (extreme sizes or costs).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{collectives::pairwise_all_to_all_time_s, AlphaBeta};
/// let link = AlphaBeta::new(1e-5, 1e-9)?;
/// let t = pairwise_all_to_all_time_s(1e6, 8, &link)?;
/// assert!((t - 7.0 * 1.01e-3).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn pairwise_all_to_all_time_s(
    shard_bytes: Bytes,
    n: usize,
    link: &AlphaBeta,
) -> Result<Seconds, InputError> {
    let shard = check_non_negative("AlltoAll shard (bytes)", shard_bytes)?;
    let n = check_count("AlltoAll participants", n, 1)?;
    let link = link.validated()?;
    if n == 1 {
        return Ok(0.0);
    }
    check_finite_result(
        "pairwise AlltoAll time (s)",
        (n - 1) as f64 * link.time_s(shard),
    )
}

/// Flat (one-shot) AlltoAll: every GPU posts its `n - 1` messages at once, paying the start-up
/// cost once and streaming `(n - 1) * shard_bytes` through its port: `alpha + beta (n-1) shard`.
///
/// This is the optimistic model of a fully pipelined all-to-all without contention; compare
/// [`pairwise_all_to_all_time_s`], which pays `alpha` per step.
///
/// # Errors
///
/// As [`pairwise_all_to_all_time_s`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{collectives::flat_all_to_all_time_s, AlphaBeta};
/// let link = AlphaBeta::new(1e-5, 1e-9)?;
/// assert!((flat_all_to_all_time_s(1e6, 8, &link)? - (1e-5 + 7e-3)).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn flat_all_to_all_time_s(
    shard_bytes: Bytes,
    n: usize,
    link: &AlphaBeta,
) -> Result<Seconds, InputError> {
    let shard = check_non_negative("AlltoAll shard (bytes)", shard_bytes)?;
    let n = check_count("AlltoAll participants", n, 1)?;
    let link = link.validated()?;
    if n == 1 {
        return Ok(0.0);
    }
    check_finite_result(
        "flat AlltoAll time (s)",
        link.time_s((n - 1) as f64 * shard),
    )
}

/// The shape and bandwidths of a two-tier grid: `x` GPUs per HB domain, `y` domains.
///
/// `hb_bytes_per_s` is `C_F`, the per-GPU bandwidth inside an HB domain (NVLink class);
/// `network_bytes_per_s` is `C_S`, the per-GPU bandwidth of the network between domains.
///
/// Deserializes through [`TwoTierGrid::new`], so a parsed grid is valid.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "TwoTierGridFields")]
pub struct TwoTierGrid {
    /// GPUs of the group inside one HB domain (`x`, at least 1).
    pub x: usize,
    /// HB domains the group spans (`y`, at least 1).
    pub y: usize,
    /// Per-GPU bandwidth inside an HB domain (`C_F`), bytes/s.
    pub hb_bytes_per_s: BytesPerSecond,
    /// Per-GPU bandwidth across the network (`C_S`), bytes/s.
    pub network_bytes_per_s: BytesPerSecond,
}

impl TwoTierGrid {
    /// Builds a validated grid.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] if `x` or `y` is zero; [`InputError::Overflow`]
    /// if `x * y` does not fit in `usize`; `NotPositive`/`NonFinite` if a bandwidth is not a
    /// positive finite number.
    pub fn new(
        x: usize,
        y: usize,
        hb_bytes_per_s: BytesPerSecond,
        network_bytes_per_s: BytesPerSecond,
    ) -> Result<Self, InputError> {
        let x = check_count("GPUs per HB domain (x)", x, 1)?;
        let y = check_count("HB domains (y)", y, 1)?;
        // Every user multiplies the two; a wrapped product made the exact bound loop for ages.
        x.checked_mul(y).ok_or(InputError::Overflow {
            what: "GPUs in the grid (x * y)",
        })?;
        Ok(Self {
            x,
            y,
            hb_bytes_per_s: check_positive("HB-domain bandwidth C_F (bytes/s)", hb_bytes_per_s)?,
            network_bytes_per_s: check_positive(
                "network bandwidth C_S (bytes/s)",
                network_bytes_per_s,
            )?,
        })
    }

    fn validated(&self) -> Result<Self, InputError> {
        Self::new(
            self.x,
            self.y,
            self.hb_bytes_per_s,
            self.network_bytes_per_s,
        )
    }
}

/// The serialized form of [`TwoTierGrid`], validated on the way in.
#[derive(serde::Deserialize)]
struct TwoTierGridFields {
    x: usize,
    y: usize,
    hb_bytes_per_s: BytesPerSecond,
    network_bytes_per_s: BytesPerSecond,
}

impl TryFrom<TwoTierGridFields> for TwoTierGrid {
    type Error = InputError;

    fn try_from(f: TwoTierGridFields) -> Result<Self, Self::Error> {
        Self::new(f.x, f.y, f.hb_bytes_per_s, f.network_bytes_per_s)
    }
}

/// Hierarchical AllGather time `AGtime(D, x, y, C_F, C_S)` (rail-only, Wang et al., Eq. 1).
///
/// Phase 1 gathers along each rail through the network, moving `D (y-1) / (x y)` bytes per GPU
/// at `C_S`; phase 2 gathers inside each HB domain, moving `D (x-1) / x` per GPU at `C_F`:
///
/// `AGtime = (y-1) D / (x y C_S) + (x-1) D / (x C_F)`.
///
/// ReduceScatter inverts the schedule and costs the same; see
/// [`hierarchical_all_reduce_time_s`] for AllReduce.
///
/// # Errors
///
/// [`InputError`] if `total_bytes` is negative or not finite, or the grid is invalid;
/// [`InputError::NonFinite`] if the time is not finite (extreme sizes or bandwidths).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::collectives::{hierarchical_all_gather_time_s, TwoTierGrid};
/// // 8 GPUs per domain at 300 GB/s, 4 domains at 25 GB/s, 1 GB gathered:
/// // 3/32 GB / 25 GB/s + 7/8 GB / 300 GB/s = 3.75 ms + 2.9167 ms.
/// let grid = TwoTierGrid::new(8, 4, 300e9, 25e9)?;
/// let t = hierarchical_all_gather_time_s(1e9, &grid)?;
/// assert!((t - (3.0 / 32.0 / 25.0 + 7.0 / 8.0 / 300.0)).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn hierarchical_all_gather_time_s(
    total_bytes: Bytes,
    grid: &TwoTierGrid,
) -> Result<Seconds, InputError> {
    let d = check_non_negative("AllGather size D (bytes)", total_bytes)?;
    let g = grid.validated()?;
    let (x, y) = (g.x as f64, g.y as f64);
    check_finite_result(
        "hierarchical AllGather time (s)",
        (y - 1.0) * d / (x * y * g.network_bytes_per_s) + (x - 1.0) * d / (x * g.hb_bytes_per_s),
    )
}

/// Hierarchical ReduceScatter: the AllGather schedule run backwards, the same time.
///
/// # Errors
///
/// As [`hierarchical_all_gather_time_s`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::collectives::*;
/// let grid = TwoTierGrid::new(4, 2, 100e9, 10e9)?;
/// assert_eq!(
///     hierarchical_reduce_scatter_time_s(1e6, &grid)?,
///     hierarchical_all_gather_time_s(1e6, &grid)?
/// );
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn hierarchical_reduce_scatter_time_s(
    total_bytes: Bytes,
    grid: &TwoTierGrid,
) -> Result<Seconds, InputError> {
    hierarchical_all_gather_time_s(total_bytes, grid)
}

/// Hierarchical AllReduce: ReduceScatter then AllGather, `2 AGtime(D, x, y, C_F, C_S)`
/// (rail-only Eq. 7 uses it for parameter synchronisation).
///
/// # Errors
///
/// As [`hierarchical_all_gather_time_s`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::collectives::*;
/// let grid = TwoTierGrid::new(4, 2, 100e9, 10e9)?;
/// let ag = hierarchical_all_gather_time_s(1e6, &grid)?;
/// assert_eq!(hierarchical_all_reduce_time_s(1e6, &grid)?, 2.0 * ag);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn hierarchical_all_reduce_time_s(
    total_bytes: Bytes,
    grid: &TwoTierGrid,
) -> Result<Seconds, InputError> {
    check_finite_result(
        "hierarchical AllReduce time (s)",
        2.0 * hierarchical_all_gather_time_s(total_bytes, grid)?,
    )
}

/// AlltoAll on a full-bisection (rail-optimized) network, rail-only Appendix D Eq. 20:
/// `max((x-1) D / C_F, x (y-1) D / C_S)` with `D` the shard each GPU sends to each other GPU.
///
/// The paper simplifies the maximum to its second term; this function keeps both, so it is also
/// right for a single domain (`y = 1`) or a slow HB domain.
///
/// # Errors
///
/// As [`hierarchical_all_gather_time_s`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::collectives::*;
/// let grid = TwoTierGrid::new(8, 4, 300e9, 50e9)?;
/// // max(7 MB / 300 GB/s, 24 MB / 50 GB/s) = 0.48 ms.
/// assert!((full_bisection_all_to_all_time_s(1e6, &grid)? - 24e6 / 50e9).abs() < 1e-15);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn full_bisection_all_to_all_time_s(
    shard_bytes: Bytes,
    grid: &TwoTierGrid,
) -> Result<Seconds, InputError> {
    let d = check_non_negative("AlltoAll shard D (bytes)", shard_bytes)?;
    let g = grid.validated()?;
    let (x, y) = (g.x as f64, g.y as f64);
    let hb = (x - 1.0) * d / g.hb_bytes_per_s;
    let net = x * (y - 1.0) * d / g.network_bytes_per_s;
    check_finite_result("full-bisection AlltoAll time (s)", hb.max(net))
}

/// AlltoAll on a rail-only network with hierarchical forwarding, rail-only Appendix D Eq. 21:
/// `y (x-1) D / C_F + x (y-1) D / C_S`.
///
/// Step 1 is an AlltoAll inside each HB domain that hands each GPU everything destined for its
/// rail (shard `y D`), step 2 an AlltoAll along each rail (shard `x D`).
///
/// # Errors
///
/// As [`hierarchical_all_gather_time_s`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::collectives::*;
/// let grid = TwoTierGrid::new(8, 4, 300e9, 50e9)?;
/// let t = rail_only_all_to_all_time_s(1e6, &grid)?;
/// assert!((t - (28e6 / 300e9 + 24e6 / 50e9)).abs() < 1e-15);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn rail_only_all_to_all_time_s(
    shard_bytes: Bytes,
    grid: &TwoTierGrid,
) -> Result<Seconds, InputError> {
    let d = check_non_negative("AlltoAll shard D (bytes)", shard_bytes)?;
    let g = grid.validated()?;
    let (x, y) = (g.x as f64, g.y as f64);
    check_finite_result(
        "rail-only AlltoAll time (s)",
        y * (x - 1.0) * d / g.hb_bytes_per_s + x * (y - 1.0) * d / g.network_bytes_per_s,
    )
}

/// Relative slowdown of the rail-only AlltoAll over the full-bisection one,
/// `(T_rail_only - T_full) / T_full`; zero when both are zero.
///
/// Appendix D states this is approximately `C_F / C_S`; when `y (x-1) ≈ x (y-1)` the exact value
/// is the ratio of the forwarding term to the network term, `≈ C_S / C_F`, small when the HB
/// domain is much faster (see `docs/algorithms.md`).
///
/// # Errors
///
/// As [`hierarchical_all_gather_time_s`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::collectives::*;
/// // x = y = 8: y(x-1) = x(y-1), slowdown is exactly C_S / C_F = 50/450.
/// let grid = TwoTierGrid::new(8, 8, 450e9, 50e9)?;
/// let s = rail_only_all_to_all_slowdown(1e6, &grid)?;
/// assert!((s - 50.0 / 450.0).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn rail_only_all_to_all_slowdown(
    shard_bytes: Bytes,
    grid: &TwoTierGrid,
) -> Result<f64, InputError> {
    let full = full_bisection_all_to_all_time_s(shard_bytes, grid)?;
    let rail = rail_only_all_to_all_time_s(shard_bytes, grid)?;
    if full == 0.0 {
        return Ok(0.0);
    }
    check_finite_result("rail-only AlltoAll slowdown", (rail - full) / full)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 13: a grid deserializes through `TwoTierGrid::new`.
    #[test]
    fn grids_deserialize_validated() {
        let json = |x: &str| {
            format!(r#"{{"x": {x}, "y": 2, "hb_bytes_per_s": 1.0, "network_bytes_per_s": 1.0}}"#)
        };
        let grid: TwoTierGrid = serde_json::from_str(&json("4")).unwrap();
        assert_eq!(grid, TwoTierGrid::new(4, 2, 1.0, 1.0).unwrap());
        for bad in ["0", "18446744073709551615"] {
            assert!(serde_json::from_str::<TwoTierGrid>(&json(bad)).is_err());
        }
        let negative = r#"{"x": 1, "y": 2, "hb_bytes_per_s": -1.0, "network_bytes_per_s": 1.0}"#;
        assert!(serde_json::from_str::<TwoTierGrid>(negative).is_err());
    }

    #[test]
    fn single_participant_costs_nothing() {
        let link = AlphaBeta::new(1e-3, 1e-9).unwrap();
        assert_eq!(ring_all_gather_time_s(1e6, 1, &link).unwrap(), 0.0);
        assert_eq!(pairwise_all_to_all_time_s(1e6, 1, &link).unwrap(), 0.0);
        assert_eq!(flat_all_to_all_time_s(1e6, 1, &link).unwrap(), 0.0);
        let grid = TwoTierGrid::new(1, 1, 1e9, 1e9).unwrap();
        assert_eq!(hierarchical_all_gather_time_s(1e6, &grid).unwrap(), 0.0);
    }

    #[test]
    fn hierarchical_reduces_to_flat_ring_bandwidth_term() {
        // One domain (y = 1): AGtime = (x-1) D / (x C_F), the ring's bandwidth term.
        let grid = TwoTierGrid::new(8, 1, 100e9, 1e9).unwrap();
        let link = AlphaBeta::from_latency_bandwidth(0.0, 100e9).unwrap();
        let h = hierarchical_all_gather_time_s(8e9, &grid).unwrap();
        let r = ring_all_gather_time_s(8e9, 8, &link).unwrap();
        assert!((h - r).abs() < 1e-12);
        // x = 1: AGtime = (y-1) D / (y C_S).
        let grid = TwoTierGrid::new(1, 4, 100e9, 1e9).unwrap();
        assert!((hierarchical_all_gather_time_s(4e9, &grid).unwrap() - 3.0).abs() < 1e-12);
    }

    #[test]
    fn rejects_invalid_input() {
        let link = AlphaBeta::new(0.0, 1e-9).unwrap();
        assert!(ring_all_gather_time_s(-1.0, 4, &link).is_err());
        assert!(ring_all_gather_time_s(f64::NAN, 4, &link).is_err());
        assert!(ring_all_gather_time_s(1.0, 0, &link).is_err());
        assert!(TwoTierGrid::new(0, 1, 1.0, 1.0).is_err());
        assert!(TwoTierGrid::new(1, 1, 0.0, 1.0).is_err());
        let bad = TwoTierGrid {
            x: 2,
            y: 2,
            hb_bytes_per_s: -1.0,
            network_bytes_per_s: 1.0,
        };
        assert!(hierarchical_all_gather_time_s(1.0, &bad).is_err());
    }
}

//! The bandwidth-optimal AllGather time on an `x`-by-`y` grid (rail-only, Wang et al., App. A).
//!
//! Following Zhao & Krishnamurthy's cut argument, the best AllGather time per unit of data is the
//! worst ratio, over all ways to split the GPUs in two, of the data one side must receive to the
//! bandwidth crossing the split. Appendix A writes it for the rail-optimized network (Eq. 8) and
//! the rail-only network (Eq. 9). We evaluate both exactly by enumerating every partition, which
//! is feasible for grids of up to [`MAX_EXACT_GPUS`] GPUs.
//!
//! Grid convention: HB domain `d` (of `y`) holds GPUs `(d, 0..x)`, one per rail; rail `r` (of `x`)
//! holds GPUs `(0..y, r)`. A partition `A` is a boolean `y`-by-`x` matrix; `R(A)` counts HB domains
//! entirely inside `A` and `C(A)` counts rails entirely inside `A`. The "unit of data" is one
//! GPU's shard, so multiply by `total_bytes / (x y)` for a time.

use serde::{Deserialize, Serialize};

use crate::collectives::TwoTierGrid;
use crate::scale::pow2_scale;
use crate::units::{Bytes, Seconds};
use crate::{InputError, check_finite_result, check_non_negative};

/// The largest grid (`x * y` GPUs) the exact enumeration accepts (2^20 partitions).
pub const MAX_EXACT_GPUS: usize = 20;

/// Which network joins the HB domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fabric {
    /// Any-to-any (rail-optimized Clos) network: Eq. 8.
    RailOptimized,
    /// Only GPUs of the same rail are connected across domains: Eq. 9.
    RailOnly,
}

/// The maximising partition and the bound it gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllGatherBound {
    /// Seconds per byte of one GPU's shard: the Eq. 8 / Eq. 9 value.
    pub seconds_per_shard_byte: f64,
    /// The maximising partition, row-major (`y` HB domains of `x` GPUs); `true` = inside `A`.
    pub partition: Vec<bool>,
}

/// Ingress/egress bandwidth of the side `mask` (bit `d * x + r` is GPU `r` of domain `d`):
/// `C_F` for each GPU whose HB domain is not wholly inside, `C_S` for each GPU (rail-only:
/// whose rail is not wholly inside).
///
/// The GPU counts are exact integers, so the two terms never cancel: with `C_F` 2^53 times
/// `C_S`, `(C_F + C_S) size - x rows C_F` rounded `C_S` away and gave a zero bandwidth.
fn side_bandwidth(mask: u32, grid: &TwoTierGrid, fabric: Fabric) -> f64 {
    let (x, y) = (grid.x, grid.y);
    let size = mask.count_ones() as usize;
    let row = (1u32 << x) - 1;
    let full_rows = (0..y).filter(|d| (mask >> (d * x)) & row == row).count();
    let full_cols = match fabric {
        Fabric::RailOptimized => 0,
        Fabric::RailOnly => (0..x)
            .filter(|r| (0..y).all(|d| mask >> (d * x + r) & 1 == 1))
            .count(),
    };
    // Both products are at most `size` (<= MAX_EXACT_GPUS), checked by the caller.
    let hb_gpus = (size - x * full_rows) as f64;
    let net_gpus = (size - y * full_cols) as f64;
    grid.hb_bytes_per_s * hb_gpus + grid.network_bytes_per_s * net_gpus
}

/// Exact bandwidth-optimal AllGather bound of rail-only App. A, Eq. 8 (rail-optimized) or
/// Eq. 9 (rail-only), with its maximising partition.
///
/// # Errors
///
/// [`InputError::TooLarge`] when `x * y > MAX_EXACT_GPUS`; [`InputError::CountTooSmall`]
/// for a grid of one GPU (there is no partition); the grid's own validation errors;
/// [`InputError::NonFinite`] when the bound does not fit in `f64` (bandwidths near the
/// smallest subnormal, or the two bandwidths more than `f64`'s range apart).
///
/// # Complexity
///
/// `O(2^(xy) · xy)` time, `O(xy)` space.
///
/// # Examples
///
/// ```
/// use comm_cost_model::allgather_bound::{optimal_all_gather_bound, Fabric};
/// use comm_cost_model::collectives::TwoTierGrid;
/// // 4 GPUs per domain at 100 GB/s, 2 domains at 10 GB/s: App. A's candidate partition
/// // (y - 1 = 1 whole domain) gives (y - 1) / C_S = 1e-10 s per shard byte.
/// let grid = TwoTierGrid::new(4, 2, 100e9, 10e9)?;
/// let b = optimal_all_gather_bound(&grid, Fabric::RailOnly)?;
/// assert!((b.seconds_per_shard_byte - 1e-10).abs() < 1e-22);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn optimal_all_gather_bound(
    grid: &TwoTierGrid,
    fabric: Fabric,
) -> Result<AllGatherBound, InputError> {
    let grid = TwoTierGrid::new(
        grid.x,
        grid.y,
        grid.hb_bytes_per_s,
        grid.network_bytes_per_s,
    )?;
    let n = grid.x * grid.y;
    if n > MAX_EXACT_GPUS {
        return Err(InputError::TooLarge {
            what: "GPUs in the grid (x * y)",
            limit: MAX_EXACT_GPUS as u64,
            value: n as u64,
        });
    }
    if n < 2 {
        return Err(InputError::CountTooSmall {
            what: "GPUs in the grid (x * y)",
            min: 2,
            value: n as u64,
        });
    }
    // The ratio scales with 1 / bandwidth: work on bandwidths rescaled below 4 by a power of
    // two (exact), so that 1e308 bytes/s cannot overflow a sum (issue 13: `C_F + C_S`
    // overflowed, side bandwidths came out NaN and the bound infinite).
    let s = pow2_scale(grid.hb_bytes_per_s.max(grid.network_bytes_per_s));
    let scaled = TwoTierGrid {
        hb_bytes_per_s: grid.hb_bytes_per_s * s,
        network_bytes_per_s: grid.network_bytes_per_s * s,
        ..grid
    };
    let all = (1u32 << n) - 1;
    let mut best = (f64::NEG_INFINITY, 0u32);
    // A and its complement give the same ratio, so fixing GPU 0 outside A halves the work.
    for mask in (2..=all).step_by(2) {
        let comp = all & !mask;
        let data = f64::from(mask.count_ones().max(comp.count_ones()));
        let bw = side_bandwidth(mask, &scaled, fabric).min(side_bandwidth(comp, &scaled, fabric));
        let ratio = if bw > 0.0 { data / bw } else { f64::INFINITY };
        if ratio > best.0 {
            best = (ratio, mask);
        }
    }
    Ok(AllGatherBound {
        seconds_per_shard_byte: check_finite_result("AllGather bound (s per byte)", best.0 * s)?,
        partition: (0..n).map(|i| best.1 >> i & 1 == 1).collect(),
    })
}

/// The bound of [`optimal_all_gather_bound`] as a time for gathering `total_bytes`
/// (each GPU owns `total_bytes / (x y)`).
///
/// # Errors
///
/// As [`optimal_all_gather_bound`], plus `NonFinite`/`Negative` for `total_bytes`.
///
/// # Complexity
///
/// `O(2^(xy) · xy)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::allgather_bound::{optimal_all_gather_time_s, Fabric};
/// use comm_cost_model::collectives::{hierarchical_all_gather_time_s, TwoTierGrid};
/// let grid = TwoTierGrid::new(4, 2, 100e9, 10e9)?;
/// let bound = optimal_all_gather_time_s(8e9, &grid, Fabric::RailOnly)?;
/// // 1 GB shards * 1e-10 s/B = 0.1 s; the hierarchical algorithm (Eq. 1) needs
/// // 1/8 * 8 GB / 10 GB/s + 3/4 * 8 GB / 100 GB/s = 0.16 s.
/// assert!((bound - 0.1).abs() < 1e-12);
/// assert!(bound <= hierarchical_all_gather_time_s(8e9, &grid)?);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn optimal_all_gather_time_s(
    total_bytes: Bytes,
    grid: &TwoTierGrid,
    fabric: Fabric,
) -> Result<Seconds, InputError> {
    let d = check_non_negative("AllGather size D (bytes)", total_bytes)?;
    let bound = optimal_all_gather_bound(grid, fabric)?;
    check_finite_result(
        "optimal AllGather time (s)",
        bound.seconds_per_shard_byte * d / (grid.x * grid.y) as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::hierarchical_all_gather_time_s;
    use proptest::prelude::*;

    #[test]
    fn single_domain_is_the_ring_bound() {
        // y = 1, x = 4: splitting 3 | 1 GPUs, data 3, bandwidth min(3 (C_F + C_S), (C_F + C_S))
        // = C_F + C_S (the network ports count in Eq. 8 even though they lead nowhere).
        let grid = TwoTierGrid::new(4, 1, 100.0, 10.0).unwrap();
        let b = optimal_all_gather_bound(&grid, Fabric::RailOptimized).unwrap();
        assert!((b.seconds_per_shard_byte - 3.0 / 110.0).abs() < 1e-12);
    }

    #[test]
    fn y_minus_one_domains_give_paper_value() {
        // App. A: the partition of y - 1 whole domains gives (y - 1) / C_S per unit.
        // x = 4, y = 3, C_F = 1000, C_S = 1: 2 / 1 = 2 s per shard byte.
        let grid = TwoTierGrid::new(4, 3, 1000.0, 1.0).unwrap();
        for fabric in [Fabric::RailOptimized, Fabric::RailOnly] {
            let b = optimal_all_gather_bound(&grid, fabric).unwrap();
            assert!(b.seconds_per_shard_byte >= 2.0 - 1e-12, "{fabric:?}");
        }
    }

    #[test]
    fn rejects_bad_grids() {
        let big = TwoTierGrid::new(8, 4, 1.0, 1.0).unwrap();
        assert!(matches!(
            optimal_all_gather_bound(&big, Fabric::RailOnly),
            Err(InputError::TooLarge { .. })
        ));
        let one = TwoTierGrid::new(1, 1, 1.0, 1.0).unwrap();
        assert!(matches!(
            optimal_all_gather_bound(&one, Fabric::RailOnly),
            Err(InputError::CountTooSmall { .. })
        ));
    }

    /// Issue 13: `x * y` wrapped to 2 and the enumeration then walked `x` GPUs per mask.
    #[test]
    fn a_grid_whose_size_wraps_is_an_overflow() {
        let wraps = TwoTierGrid {
            x: (usize::MAX / 2) + 2,
            y: 2,
            hb_bytes_per_s: 1.0,
            network_bytes_per_s: 1.0,
        };
        assert_eq!(wraps.x.wrapping_mul(wraps.y), 2);
        for fabric in [Fabric::RailOnly, Fabric::RailOptimized] {
            assert!(matches!(
                optimal_all_gather_bound(&wraps, fabric),
                Err(InputError::Overflow { .. })
            ));
        }
        assert!(matches!(
            TwoTierGrid::new(usize::MAX, 2, 1.0, 1.0),
            Err(InputError::Overflow { .. })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Fewer links can only slow the optimum: Eq. 8 <= Eq. 9; and the bound is a lower bound
        /// for the hierarchical algorithm of Eq. 1 (which runs on a rail-only network).
        #[test]
        fn bounds_are_ordered(x in 1usize..5, y in 1usize..4, cf in 1.0f64..100.0, cs in 1.0f64..100.0) {
            prop_assume!(x * y >= 2);
            let grid = TwoTierGrid::new(x, y, cf, cs).unwrap();
            let opt = optimal_all_gather_time_s(1.0, &grid, Fabric::RailOptimized).unwrap();
            let only = optimal_all_gather_time_s(1.0, &grid, Fabric::RailOnly).unwrap();
            let hier = hierarchical_all_gather_time_s(1.0, &grid).unwrap();
            prop_assert!(opt <= only * (1.0 + 1e-12));
            prop_assert!(only <= hier * (1.0 + 1e-9), "only {only} hier {hier}");
        }
    }
}

//! Parm's MoE layer with its compute term: the end-to-end layer speedups of S1/S2 over the
//! baseline (DeepSpeed-MoE) schedule that Parm §VI-C measures (1.13-5.77x, Table IV), from the
//! communication model of [`comm_cost_model::parm`] plus the expert FFN compute.
//!
//! The baseline runs every expert on the same tokens `N_MP` times (the MP group holds copies
//! of its input, §III-A); S1 and S2 split the input over the MP group first, so each GPU runs
//! `1/N_MP` of the baseline's expert FLOPs. Per GPU and training iteration the baseline's
//! experts see `E T N_ESP` tokens (the EP-AlltoAll buffer `y = E T M N_ESP` over `M`), each
//! through `1/N_ESP` of a two-matrix FFN (`2 x 2 M H / N_ESP` FLOP), forward and backward
//! (`3x`): `12 E T M H` FLOP, `12 E T M H / N_MP` under S1/S2. The gate (`2 B L M E` FLOP, under
//! 1% of the experts' at Table III's sizes) and the rest of the model are left out, as in the
//! per-layer measurement.
//!
//! The testbeds compute in FP32 (their elements are 4 bytes) on CUDA cores at the clocks of
//! Parm's Table II: RTX 4090, 16,384 cores at 2.23 GHz (73.1 TFLOP/s); RTX 2080 Ti, 4,352 cores
//! at 1.35 GHz (11.75 TFLOP/s). The achieved fraction of that peak is not published, so
//! [`parm_layer_with_compute`] takes it as an argument and `docs/reproduction.md` reports the
//! speedups at 100% and 50%.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use comm_cost_model::parm::{ParmLayer, Schedule, Testbed};
use comm_cost_model::units::{FlopPerSecond, Seconds};
use comm_cost_model::{check_finite_result, check_positive};

/// FP32 peak of testbed A's RTX 4090 at Table II's clock, FLOP/s.
pub const RTX4090_FP32_FLOP_PER_S: FlopPerSecond = 16_384.0 * 2.0 * 2.23e9;
/// FP32 peak of testbed B's RTX 2080 Ti at Table II's clock, FLOP/s.
pub const RTX2080TI_FP32_FLOP_PER_S: FlopPerSecond = 4_352.0 * 2.0 * 1.35e9;

/// One Parm layer's time with communication and expert compute, per training iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ParmLayerTime {
    /// Baseline communication (Eq. 1).
    pub baseline_comm_s: Seconds,
    /// Baseline expert compute (duplicated `N_MP` times).
    pub baseline_compute_s: Seconds,
    /// The chosen schedule's communication.
    pub parm_comm_s: Seconds,
    /// S1/S2 expert compute (`1/N_MP` of the baseline's).
    pub parm_compute_s: Seconds,
    /// Algorithm 1's choice.
    pub choice: Schedule,
    /// `(baseline comm + compute) / (Parm comm + compute)`.
    pub speedup: f64,
    /// The communication-only ratio, for comparison.
    pub comm_speedup: f64,
}

/// A Parm layer on a testbed with its expert compute at `flop_per_s` (see the module
/// documentation for the FLOP count).
///
/// # Errors
///
/// [`RailNetworkError::Input`] for an invalid layer or testbed (the checks of
/// [`Testbed::times`]) or a `flop_per_s` that is not positive and finite.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::{ParmLayer, Testbed};
/// use rail_network::moe::parm_compute::{parm_layer_with_compute, RTX4090_FP32_FLOP_PER_S};
/// let layer = ParmLayer { p: 8, n_mp: 4, n_ep: 2, n_esp: 4, b: 4, l: 1024, m: 8192,
///     h: 8192, e: 2, k: 2, f: 1.2, bytes_per_element: 4.0 };
/// let t = parm_layer_with_compute(&Testbed::parm_testbed_a(), &layer, RTX4090_FP32_FLOP_PER_S)?;
/// assert!(t.speedup > 1.0);
/// // Removing the duplicate compute helps, but less than the communication alone suggests.
/// assert!(t.speedup < t.comm_speedup);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn parm_layer_with_compute(
    testbed: &Testbed,
    layer: &ParmLayer,
    flop_per_s: FlopPerSecond,
) -> Result<ParmLayerTime, RailNetworkError> {
    check_positive("GPU FLOP/s", flop_per_s)?;
    let times = testbed.times(layer)?;
    let v = layer.volumes()?;
    let flop = check_finite_result(
        "expert FLOPs of the layer",
        12.0 * v.etm_elements * layer.h as f64,
    )?;
    let baseline_compute_s = flop / flop_per_s;
    let parm_compute_s = baseline_compute_s / layer.n_mp as f64;
    let base = times.baseline.total_s + baseline_compute_s;
    let parm = times.parm_s + parm_compute_s;
    Ok(ParmLayerTime {
        baseline_comm_s: times.baseline.total_s,
        baseline_compute_s,
        parm_comm_s: times.parm_s,
        parm_compute_s,
        choice: times.choice,
        speedup: check_finite_result("Parm speedup", base / parm)?,
        comm_speedup: check_finite_result(
            "Parm communication speedup",
            times.baseline.total_s / times.parm_s,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::parm::table3_layers;

    #[test]
    fn hand_computed_layer() {
        let layer = ParmLayer {
            p: 8,
            n_mp: 2,
            n_ep: 4,
            n_esp: 2,
            b: 4,
            l: 1024,
            m: 2048,
            h: 4096,
            e: 4,
            k: 2,
            f: 1.2,
            bytes_per_element: 4.0,
        };
        let tb = Testbed::parm_testbed_a();
        let t = parm_layer_with_compute(&tb, &layer, 1e13).unwrap();
        // E T M = k f B L M = 2 x 1.2 x 4 x 1024 x 2048; 12 E T M H FLOP at 1e13 FLOP/s.
        let etm = 2.0 * 1.2 * 4.0 * 1024.0 * 2048.0;
        let compute = 12.0 * etm * 4096.0 / 1e13;
        assert!((t.baseline_compute_s - compute).abs() <= 1e-12 * compute);
        assert!((t.parm_compute_s - compute / 2.0).abs() <= 1e-12 * compute);
        let comm = tb.times(&layer).unwrap();
        let expect = (comm.baseline.total_s + compute) / (comm.parm_s + compute / 2.0);
        assert!((t.speedup - expect).abs() <= 1e-12 * expect);
        assert!(parm_layer_with_compute(&tb, &layer, f64::NAN).is_err());
        assert!(parm_layer_with_compute(&tb, &layer, 0.0).is_err());
    }

    #[test]
    fn compute_pulls_speedups_toward_n_mp() {
        // Every Table III layer on testbed A: the end-to-end speedup lies between the
        // communication-only one and N_MP (the compute's own speedup), and is at least 1.
        let tb = Testbed::parm_testbed_a();
        for layer in table3_layers(8, 4.0) {
            let t = parm_layer_with_compute(&tb, &layer, RTX4090_FP32_FLOP_PER_S).unwrap();
            let n = layer.n_mp as f64;
            let (lo, hi) = if t.comm_speedup < n {
                (t.comm_speedup, n)
            } else {
                (n, t.comm_speedup)
            };
            assert!(t.speedup >= lo * (1.0 - 1e-12) && t.speedup <= hi * (1.0 + 1e-12));
            assert!(t.speedup >= 1.0 - 1e-12, "{layer:?}");
        }
    }

    /// The table of `docs/reproduction.md` (Parm, with compute):
    /// `cargo test -p rail-network --release parm_compute -- --ignored --nocapture`.
    #[test]
    #[ignore = "prints the reproduction table"]
    fn print_end_to_end_table() {
        let cases = [
            (
                Testbed::parm_testbed_a(),
                RTX4090_FP32_FLOP_PER_S,
                vec![8usize],
            ),
            (
                Testbed::parm_testbed_b(),
                RTX2080TI_FP32_FLOP_PER_S,
                vec![8, 16, 32],
            ),
        ];
        for efficiency in [1.0, 0.5] {
            println!("efficiency {efficiency}");
            for (tb, peak, ps) in &cases {
                let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
                for &p in ps {
                    for n_mp in [1usize, 2, 4] {
                        for n_esp in [1usize, 2, 4] {
                            let mut sum = 0.0;
                            let mut count = 0.0;
                            for layer in table3_layers(p, 4.0)
                                .into_iter()
                                .filter(|l| l.n_mp == n_mp && l.n_esp == n_esp)
                            {
                                let t =
                                    parm_layer_with_compute(tb, &layer, peak * efficiency).unwrap();
                                sum += t.speedup;
                                count += 1.0;
                                // The identity layout (N_MP = N_ESP = 1) changes nothing.
                                if n_mp * n_esp > 1 {
                                    lo = lo.min(t.speedup);
                                    hi = hi.max(t.speedup);
                                }
                            }
                            if count > 0.0 && n_mp > 1 && n_esp > 1 {
                                println!(
                                    "{} P={p} N_MP={n_mp} N_ESP={n_esp} mean {:.2}",
                                    tb.name,
                                    sum / count
                                );
                            }
                        }
                    }
                }
                println!("{} range (N_MP N_ESP > 1) {lo:.2}..{hi:.2}", tb.name);
            }
        }
    }
}

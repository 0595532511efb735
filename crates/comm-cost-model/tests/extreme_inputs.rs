//! Regression tests for issue 13: finite but extreme inputs (1e308, 5e-324) give a finite
//! result or `CostModelError::NonFinite`, never `Ok(inf)` or `Ok(NaN)`.

use comm_cost_model::collectives::{
    TwoTierGrid, flat_all_to_all_time_s, full_bisection_all_to_all_time_s,
    hierarchical_all_gather_time_s, hierarchical_all_reduce_time_s, pairwise_all_to_all_time_s,
    rail_only_all_to_all_slowdown, rail_only_all_to_all_time_s, ring_all_gather_time_s,
    ring_all_reduce_time_s,
};
use comm_cost_model::parm::{
    ParmCollectiveCosts, ParmLayer, SaaSpec, parm_times, saa_phases, saa_time_s,
};
use comm_cost_model::{AlphaBeta, CostModelError};

/// Finite and `Ok`, or the typed error: the property every function below must have.
fn finite_or_non_finite_error(r: Result<f64, CostModelError>) -> bool {
    match r {
        Ok(v) => v.is_finite(),
        Err(CostModelError::NonFinite { .. }) => true,
        Err(_) => false,
    }
}

const EXTREMES: [f64; 6] = [0.0, 5e-324, 1e-300, 1.0, 1e300, f64::MAX];

#[test]
fn collectives_never_return_non_finite_ok() {
    for bytes in EXTREMES {
        for beta in EXTREMES {
            let link = AlphaBeta::new(1e-6, beta).unwrap();
            for n in [1, 2, 1 << 20, usize::MAX] {
                assert!(finite_or_non_finite_error(ring_all_gather_time_s(
                    bytes, n, &link
                )));
                assert!(finite_or_non_finite_error(ring_all_reduce_time_s(
                    bytes, n, &link
                )));
                assert!(finite_or_non_finite_error(pairwise_all_to_all_time_s(
                    bytes, n, &link
                )));
                assert!(finite_or_non_finite_error(flat_all_to_all_time_s(
                    bytes, n, &link
                )));
            }
        }
        for bw in EXTREMES.into_iter().filter(|&b| b > 0.0) {
            let grid = TwoTierGrid::new(8, 1 << 20, bw, 5e-324).unwrap();
            assert!(finite_or_non_finite_error(hierarchical_all_gather_time_s(
                bytes, &grid
            )));
            assert!(finite_or_non_finite_error(hierarchical_all_reduce_time_s(
                bytes, &grid
            )));
            assert!(finite_or_non_finite_error(
                full_bisection_all_to_all_time_s(bytes, &grid)
            ));
            assert!(finite_or_non_finite_error(rail_only_all_to_all_time_s(
                bytes, &grid
            )));
            assert!(finite_or_non_finite_error(rail_only_all_to_all_slowdown(
                bytes, &grid
            )));
        }
    }
}

/// 1e308 bytes over a 0.1 B/s ring overflowed to `Ok(inf)`.
#[test]
fn an_overflowing_time_is_a_non_finite_error() {
    let link = AlphaBeta::new(0.0, 10.0).unwrap();
    assert!(matches!(
        ring_all_reduce_time_s(1e308, 4, &link),
        Err(CostModelError::NonFinite { .. })
    ));
    let grid = TwoTierGrid::new(8, 4, 5e-324, 5e-324).unwrap();
    assert!(matches!(
        rail_only_all_to_all_time_s(1.0, &grid),
        Err(CostModelError::NonFinite { .. })
    ));
}

#[test]
fn parm_and_saa_never_return_non_finite_ok() {
    let layer = ParmLayer {
        p: 16,
        n_mp: 2,
        n_ep: 8,
        n_esp: 2,
        b: 4,
        l: 1024,
        m: 2048,
        h: 4096,
        e: 8,
        k: 2,
        f: 1.2,
        bytes_per_element: 1e300,
    };
    let costs = ParmCollectiveCosts::uniform(AlphaBeta::new(0.0, 1e10).unwrap());
    assert!(matches!(
        parm_times(&layer, &costs),
        Err(CostModelError::NonFinite { .. })
    ));
    for bytes in EXTREMES {
        let spec = SaaSpec {
            p: 8,
            n_mp: 2,
            gpus_per_node: 4,
            a2a_bytes_per_gpu: bytes,
            ag_total_bytes: bytes,
            intra_bytes_per_s: 5e-324,
            inter_bytes_per_s: 1.0,
            alpha_s: 0.0,
        };
        assert!(finite_or_non_finite_error(saa_time_s(&spec)));
        match saa_phases(&spec) {
            Ok(phases) => assert!(phases.iter().all(|p| p.time_s.is_finite())),
            Err(e) => assert!(matches!(e, CostModelError::NonFinite { .. })),
        }
    }
}

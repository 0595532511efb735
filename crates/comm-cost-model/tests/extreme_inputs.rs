//! Regression tests for issue 13: finite but extreme inputs (1e308, 5e-324) give a finite
//! result or `InputError::NonFinite`, never `Ok(inf)` or `Ok(NaN)`.

use comm_cost_model::allgather_bound::{Fabric, optimal_all_gather_bound};
use comm_cost_model::collectives::{
    TwoTierGrid, flat_all_to_all_time_s, full_bisection_all_to_all_time_s,
    hierarchical_all_gather_time_s, hierarchical_all_reduce_time_s, pairwise_all_to_all_time_s,
    rail_only_all_to_all_slowdown, rail_only_all_to_all_time_s, ring_all_gather_time_s,
    ring_all_reduce_time_s,
};
use comm_cost_model::deepep::{
    DeepEpCall, DeepEpMode, MAX_TOP_K, call_time_s, copies_per_token, sent_bytes,
};
use comm_cost_model::fit::{AlphaBetaFit, Sample, least_squares, two_point};
use comm_cost_model::gpu_scaling::{GpuSample, ScalingFit, ScalingSegment};
use comm_cost_model::held_out::error_summary;
use comm_cost_model::parm::{
    ParmCollectiveCosts, ParmLayer, SaaSpec, Testbed, algorithm1_as_printed, baseline_times,
    check_claims, parm_times, s1_times, s2_times, saa_phases, saa_time_s, table3_layers,
};
use comm_cost_model::piecewise::{PiecewiseFit, PiecewiseOptions, Segment, piecewise_fit};
use comm_cost_model::timeline::{
    ColocatedLayer, ExclusiveLayer, ModelLayerTimes, colocated_gpu_utilization, exclusive_time,
};
use comm_cost_model::{AlphaBeta, InputError, Worker, checked_product};

/// Finite and `Ok`, or the typed error: the property every function below must have.
fn finite_or_non_finite_error(r: Result<f64, InputError>) -> bool {
    match r {
        Ok(v) => v.is_finite(),
        Err(InputError::NonFinite { .. }) => true,
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
        Err(InputError::NonFinite { .. })
    ));
    let grid = TwoTierGrid::new(8, 4, 5e-324, 5e-324).unwrap();
    assert!(matches!(
        rail_only_all_to_all_time_s(1.0, &grid),
        Err(InputError::NonFinite { .. })
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
        Err(InputError::NonFinite { .. })
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
            Err(e) => assert!(matches!(e, InputError::NonFinite { .. })),
        }
    }
}

// ----- Found by tests/fuzz_entry_points.rs and its audit (issue 13) -----

/// A link built as a struct literal with a negative start-up gave `Ok(-1.0)` seconds.
#[test]
fn struct_literal_links_are_checked_again() {
    let bad = AlphaBeta {
        alpha_s: -1.0,
        beta_s_per_byte: 0.0,
    };
    let negative = |r: Result<f64, InputError>| {
        matches!(
            r,
            Err(InputError::Negative {
                what: "alpha (s)",
                ..
            })
        )
    };
    assert!(negative(ring_all_gather_time_s(1.0, 2, &bad)));
    assert!(negative(ring_all_reduce_time_s(1.0, 2, &bad)));
    assert!(negative(pairwise_all_to_all_time_s(1.0, 2, &bad)));
    assert!(negative(flat_all_to_all_time_s(1.0, 2, &bad)));
    let call = DeepEpCall {
        ranks: 8,
        tokens: 16,
        hidden: 4096,
        top_k: 2,
        experts: 8,
        bytes_per_element: 2.0,
    };
    assert!(negative(call_time_s(&call, DeepEpMode::LowLatency, &bad)));
}

/// `baseline_times` (and S1, S2, Algorithm 1 as printed) took costs with a negative start-up:
/// `Ok(-4.0)` seconds and `Ok(S1)`.
#[test]
fn struct_literal_parm_costs_are_checked_again() {
    let costs = ParmCollectiveCosts::uniform(AlphaBeta {
        alpha_s: -1.0,
        beta_s_per_byte: 0.0,
    });
    let layer = small_layer();
    let negative = |e: InputError| matches!(e, InputError::Negative { .. });
    assert!(negative(baseline_times(&layer, &costs).unwrap_err()));
    assert!(negative(s1_times(&layer, &costs).unwrap_err()));
    assert!(negative(s2_times(&layer, &costs).unwrap_err()));
    assert!(negative(algorithm1_as_printed(&layer, &costs).unwrap_err()));
}

fn small_layer() -> ParmLayer {
    ParmLayer {
        p: 4,
        n_mp: 2,
        n_ep: 2,
        n_esp: 2,
        b: 1,
        l: 8,
        m: 4,
        h: 4,
        e: 2,
        k: 1,
        f: 1.0,
        bytes_per_element: 1.0,
    }
}

/// With 10^18 experts on 10^18 ranks every factor of the miss probability rounded to 1: 0
/// copies per token and 0 bytes sent. One expert per rank means `top_k` distinct ranks.
#[test]
fn deepep_copies_do_not_cancel_to_zero() {
    let call = DeepEpCall {
        ranks: 1_000_000_000_000_000_000,
        tokens: 54,
        hidden: 3956,
        top_k: 5,
        experts: 1_000_000_000_000_000_000,
        bytes_per_element: 2.0,
    };
    let copies = copies_per_token(&call, DeepEpMode::Normal).unwrap();
    assert!((copies - 5.0).abs() < 1e-9, "{copies}");
    assert!(sent_bytes(&call, DeepEpMode::Normal).unwrap() > 0.0);
}

/// `top_k = experts = ranks = 2^62` multiplied 2^62 factors (278 ms per 2^27 in release: a
/// hang), and answered 0 copies.
#[test]
fn a_huge_top_k_is_too_large_not_a_hang() {
    let call = DeepEpCall {
        ranks: 1 << 62,
        tokens: 1,
        hidden: 1,
        top_k: 1 << 62,
        experts: 1 << 62,
        bytes_per_element: 2.0,
    };
    assert!(matches!(
        copies_per_token(&call, DeepEpMode::Normal),
        Err(InputError::TooLarge {
            limit: MAX_TOP_K,
            ..
        })
    ));
    let at_limit = DeepEpCall {
        top_k: MAX_TOP_K,
        ..call
    };
    let copies = copies_per_token(&at_limit, DeepEpMode::Normal).unwrap();
    assert!((copies / MAX_TOP_K as f64 - 1.0).abs() < 1e-9, "{copies}");
}

/// Constant times of 1e300 s, 5e-324 s or `f64::MAX` s were fitted by the zero line (squares
/// of the relative weights under- or overflowed): `alpha = beta = 0`, 100% error.
#[test]
fn piecewise_fits_of_extreme_times_are_right() {
    for t in [1e300, 5e-324, f64::MAX] {
        let samples: Vec<Sample> = (1..=6)
            .map(|i| Sample {
                bytes: f64::from(i),
                seconds: t,
            })
            .collect();
        let fit = piecewise_fit(&samples, PiecewiseOptions::default()).unwrap();
        let s = fit.segments[0];
        assert_eq!((s.alpha_s, s.beta_s_per_byte), (t, 0.0), "{t:e}");
        assert_eq!(s.max_relative_error, 0.0);
    }
}

/// Coefficients beyond `f64` came back as `Ok` with an infinite `beta` and a NaN R² (a 7e5 s
/// rise over a 2.2e-308 byte step), or as the zero line (times from 2e-308 s to 9e15 s).
#[test]
fn piecewise_coefficients_beyond_f64_are_non_finite_errors() {
    let s = |bytes, seconds| Sample { bytes, seconds };
    let steep = [
        s(0.0, 13535.073905961699),
        s(0.0, 606893.8589810611),
        s(2.2250738585072014e-308, 708071.2434531637),
    ];
    let wide = [
        s(0.22848196555931366, 1e-300),
        s(0.0, 2.2250738585072014e-308),
        s(0.0, 9007199254740994.0),
    ];
    for samples in [&steep[..], &wide[..]] {
        assert!(matches!(
            piecewise_fit(samples, PiecewiseOptions::default()),
            Err(InputError::NonFinite { .. })
        ));
    }
}

/// `PiecewiseFit::time_s` returned a plain `f64`: NaN for a NaN size, a time for a negative one.
#[test]
fn piecewise_time_of_a_bad_size_is_an_error() {
    let samples: Vec<Sample> = (0..12)
        .map(|i| 1e3 * f64::powi(2.0, i))
        .map(|bytes| Sample {
            bytes,
            seconds: 5e-6 + bytes / 100e9,
        })
        .collect();
    let fit = piecewise_fit(&samples, PiecewiseOptions::default()).unwrap();
    assert!(matches!(
        fit.time_s(f64::NAN),
        Err(InputError::NonFinite { .. })
    ));
    assert!(matches!(fit.time_s(-1.0), Err(InputError::Negative { .. })));
    let steep = PiecewiseFit {
        segments: vec![Segment {
            beta_s_per_byte: 10.0,
            ..fit.segments[0]
        }],
    };
    assert!(matches!(
        steep.time_s(1e308),
        Err(InputError::NonFinite { .. })
    ));
}

/// Sizes of 1e200 bytes overflowed `Σ dx²` and were called "fewer than two distinct message
/// sizes"; times near `f64::MAX` overflowed their mean ("the fit overflowed").
#[test]
fn least_squares_of_extreme_magnitudes_is_right() {
    let s = |bytes, seconds| Sample { bytes, seconds };
    let big_sizes: Vec<Sample> = (1..=3)
        .map(|i| s(f64::from(i) * 1e200, f64::from(i)))
        .collect();
    let fit = least_squares(&big_sizes).unwrap();
    assert!(fit.alpha_s.abs() < 1e-12 && (fit.beta_s_per_byte / 1e-200 - 1.0).abs() < 1e-12);
    let big_times: Vec<Sample> = (1..=3)
        .map(|i| s(f64::from(i), f64::MAX / 4.0 * f64::from(i)))
        .collect();
    let fit = least_squares(&big_times).unwrap();
    assert!((fit.beta_s_per_byte / (f64::MAX / 4.0) - 1.0).abs() < 1e-12);
    assert!(fit.alpha_s <= 1e-12 * f64::MAX && fit.r_squared > 0.999_999);
    assert!(fit.validate().is_ok());
    // A slope beyond `f64`: a typed error.
    assert!(matches!(
        two_point(s(0.0, 0.0), s(5e-324, 1e300)),
        Err(InputError::NonFinite { .. })
    ));
}

/// `Ok(ErrorSummary { median: inf, mean: inf, worst: inf })` for a 1e308 prediction of a
/// 1e-10 measurement, and an infinite mean and median for two errors near `f64::MAX`.
#[test]
fn held_out_errors_beyond_f64_are_typed_and_large_ones_finite() {
    assert!(matches!(
        error_summary(&[(1e308, 1e-10)]),
        Err(InputError::NonFinite { .. })
    ));
    let s = error_summary(&[(f64::MAX, 1.0), (f64::MAX, 1.0)]).unwrap();
    assert_eq!((s.median, s.mean, s.worst), (f64::MAX, f64::MAX, f64::MAX));
}

/// The AllGather bound was `Ok(inf)` for bandwidths of 1e308 B/s (their sum overflowed) and
/// for 1e9 and 1e-9 B/s (`(C_F + C_S) size - x C_F` cancelled to 0).
#[test]
fn all_gather_bounds_of_extreme_bandwidths_are_finite() {
    let far = TwoTierGrid::new(2, 2, 1e9, 1e-9).unwrap();
    let b = optimal_all_gather_bound(&far, Fabric::RailOnly).unwrap();
    // App. A: y - 1 = 1 whole domain gives (y - 1) / C_S per shard byte.
    assert!((b.seconds_per_shard_byte / 1e9 - 1.0).abs() < 1e-12);
    let fast = TwoTierGrid::new(2, 2, 1e308, 1e308).unwrap();
    for fabric in [Fabric::RailOnly, Fabric::RailOptimized] {
        let b = optimal_all_gather_bound(&fast, fabric).unwrap();
        assert!(b.seconds_per_shard_byte.is_finite() && b.seconds_per_shard_byte > 0.0);
    }
    let slow = TwoTierGrid::new(2, 2, 5e-324, 5e-324).unwrap();
    assert!(matches!(
        optimal_all_gather_bound(&slow, Fabric::RailOnly),
        Err(InputError::NonFinite { .. })
    ));
}

/// `table3_layers(6, ..)` listed layers with `N_EP N_ESP != P`, so `check_claims` failed on
/// the function's own output.
#[test]
fn table3_lists_only_valid_layers() {
    let layers = table3_layers(6, 4.0);
    assert!(!layers.is_empty() && layers.len() < 2916);
    assert!(layers.iter().all(|l| l.validate().is_ok()));
    assert!(check_claims(&Testbed::parm_testbed_a(), &layers).is_ok());
    assert!(table3_layers(8, f64::NAN).is_empty());
    assert_eq!(table3_layers(8, 4.0).len(), 2916);
}

/// A capacity factor of 1e308 gave `Ok` volumes of infinitely many elements.
#[test]
fn overflowing_volumes_are_non_finite_errors() {
    let layer = ParmLayer {
        f: 1e308,
        ..small_layer()
    };
    assert!(matches!(layer.volumes(), Err(InputError::NonFinite { .. })));
}

/// `checked_product(&[u64::MAX, 2, 0])` reported an overflow of the partial product; the
/// product is 0.
#[test]
fn a_zero_factor_makes_a_zero_product() {
    assert_eq!(checked_product("x", &[u64::MAX, 2, 0]), Ok(0));
    assert!(matches!(
        checked_product("x", &[u64::MAX, 2]),
        Err(InputError::Overflow { .. })
    ));
}

/// One participant communicates nothing, but `0 * inf` made a 1e308-byte ring AllGather on one
/// GPU a `NonFinite` error.
#[test]
fn one_participant_is_free_even_at_extreme_sizes() {
    let link = AlphaBeta::new(0.0, 10.0).unwrap();
    assert_eq!(ring_all_gather_time_s(1e308, 1, &link), Ok(0.0));
    assert_eq!(pairwise_all_to_all_time_s(1e308, 1, &link), Ok(0.0));
}

/// Each GPU's busy time is at most the layer's, but their sum overflowed: utilization was a
/// `NonFinite` error (inf, NaN) for two GPUs computing 1e308 s each.
#[test]
fn utilization_of_huge_times_is_finite() {
    let layer = ExclusiveLayer {
        gate_s: vec![1e308; 2],
        dispatch_s: vec![0.0; 2],
        ffn_s: vec![0.0; 2],
        combine_s: vec![0.0; 2],
        aggregation_s: vec![0.0; 2],
    };
    assert_eq!(exclusive_time(&layer).unwrap().gpu_utilization, 1.0);
    let a = ModelLayerTimes {
        gate_s: 1e308,
        dispatch_s: 0.0,
        ffn_s: 0.0,
        combine_s: 0.0,
        aggregation_s: 0.0,
    };
    let b = ModelLayerTimes { gate_s: 0.0, ..a };
    let shared = ColocatedLayer {
        a,
        b,
        aggregated_dispatch_s: 0.0,
        aggregated_combine_s: 0.0,
    };
    let u = colocated_gpu_utilization(&shared, &[0.0, 0.0], &[0.0, 0.0]).unwrap();
    assert_eq!(u, 1.0);
}

/// Types with public fields deserialized whatever the JSON said (a worker of 0 FLOP/s, a
/// negative sample, a layer of 0 GPUs, ...); each now goes through its `validate`.
#[test]
fn input_and_fit_types_deserialize_validated() {
    fn refused<T: serde::de::DeserializeOwned>(json: &str) -> bool {
        serde_json::from_str::<T>(json).is_err()
    }
    assert!(refused::<Worker>(r#"{"flop_per_s": 0, "expert_slots": 1}"#));
    assert!(refused::<Sample>(r#"{"bytes": -1, "seconds": 1}"#));
    assert!(refused::<GpuSample>(
        r#"{"gpus": 1, "bytes": 1, "seconds": 1}"#
    ));
    assert!(refused::<PiecewiseOptions>(
        r#"{"max_segments": 0, "min_points": 3}"#
    ));
    assert!(refused::<DeepEpCall>(
        r#"{"ranks": 3, "tokens": 1, "hidden": 1, "top_k": 1, "experts": 8, "bytes_per_element": 2}"#
    ));
    let layer = serde_json::to_value(small_layer()).unwrap();
    let mut zero = layer.clone();
    zero["p"] = 0.into();
    assert!(serde_json::from_value::<ParmLayer>(zero).is_err());
    assert!(serde_json::from_value::<ParmLayer>(layer).is_ok());
    assert!(refused::<SaaSpec>(
        r#"{"p": 8, "n_mp": 3, "gpus_per_node": 4, "a2a_bytes_per_gpu": 1, "ag_total_bytes": 1,
            "intra_bytes_per_s": 1, "inter_bytes_per_s": 1, "alpha_s": 0}"#
    ));
    let mut testbed = serde_json::to_value(Testbed::parm_testbed_a()).unwrap();
    assert!(serde_json::from_value::<Testbed>(testbed.clone()).is_ok());
    testbed["intra_s_per_element"] = 0.into();
    assert!(serde_json::from_value::<Testbed>(testbed).is_err());
    assert!(refused::<ExclusiveLayer>(
        r#"{"gate_s": [1], "dispatch_s": [1, 2], "ffn_s": [1], "combine_s": [1], "aggregation_s": [1]}"#
    ));
    let times =
        r#"{"gate_s": 1, "dispatch_s": 1, "ffn_s": -1, "combine_s": 1, "aggregation_s": 1}"#;
    assert!(refused::<ModelLayerTimes>(times));
    let good = r#"{"gate_s": 1, "dispatch_s": 1, "ffn_s": 1, "combine_s": 1, "aggregation_s": 1}"#;
    assert!(refused::<ColocatedLayer>(&format!(
        r#"{{"a": {good}, "b": {good}, "aggregated_dispatch_s": -1, "aggregated_combine_s": 1}}"#
    )));
    // Fits: a negative or out-of-order segment, a NaN R², an empty fit.
    let segment = |min: f64, alpha: f64| {
        format!(
            r#"{{"min_bytes": {min}, "max_bytes": 10, "alpha_s": {alpha}, "beta_s_per_byte": 1e-9,
                "r_squared": 1, "max_relative_error": 0, "regime": "latency-bound"}}"#
        )
    };
    assert!(refused::<Segment>(&segment(0.0, -1.0)));
    assert!(refused::<Segment>(&segment(20.0, 1.0)));
    assert!(refused::<PiecewiseFit>(r#"{"segments": []}"#));
    assert!(!refused::<PiecewiseFit>(&format!(
        r#"{{"segments": [{}]}}"#,
        segment(0.0, 1.0)
    )));
    assert!(refused::<AlphaBetaFit>(
        r#"{"alpha_s": 1, "beta_s_per_byte": 1, "r_squared": 2, "residuals_s": [], "alpha_clamped": false}"#
    ));
    let scaling = r#"{"min_bus_bytes": 0, "max_bus_bytes": 1, "alpha_s": 0, "alpha_per_peer_s": -1, "beta_s_per_bus_byte": 0}"#;
    assert!(refused::<ScalingSegment>(scaling));
    assert!(refused::<ScalingFit>(
        r#"{"collective": "all-gather", "segments": [], "r_squared": 1}"#
    ));
}

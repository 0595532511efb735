//! Regression tests for issue 13: overflow-sized counts give typed errors or exact results,
//! never a wrapped value or a hang.

use std::time::{Duration, Instant};

use comm_cost_model::InputError;
use petgraph::algo::connected_components;
use rail_network::RailNetworkError;
use rail_network::accuracy::{
    AccuracyRow, PublishedRun, accuracy_table, calibrate, mean_absolute_error, table4_runs,
};
use rail_network::compute::ComputeModel;
use rail_network::fabric::{
    FabricKind, FabricParams, PriceModel, rail_only_fabric, rail_optimized_fabric,
};
use rail_network::fabric_graph::FabricGraph;
use rail_network::failures::{Failure, FailureContext, failure_impact};
use rail_network::iteration::{IterationModel, iteration_time};
use rail_network::mapping::{MAX_EXPERT_PAIRS, RankMapping};
use rail_network::memory::{layer_activation_bytes, memory_per_gpu};
use rail_network::model::{
    FlopSplit, GptModel, Recompute, flop_split, hardware_flops, model_flops, model_preset,
};
use rail_network::parallel::{ExpertParallelism, Parallelization};
use rail_network::search::{
    MAX_SEARCH_COUNT, MAX_SEARCH_WORK, RankedConfig, SearchOptions, search,
};
use rail_network::sweeps::all_to_all_slowdown_sweep;
use rail_network::system::system_preset;
use rail_network::traffic::{JobTraffic, PairTraffic};

fn gpt_22b() -> IterationModel {
    IterationModel::new(
        model_preset("gpt-22b").unwrap(),
        system_preset("dgx-a100").unwrap(),
        ComputeModel::paper(),
    )
    .unwrap()
}

/// `global_batch = u64::MAX` used to loop forever (`i * i` wrapped in the divisor search).
#[test]
fn a_huge_global_batch_is_too_large_and_fast() {
    let im = gpt_22b();
    let start = Instant::now();
    for (gpus, batch) in [(64, u64::MAX), (1 << 62, 64), (64, MAX_SEARCH_COUNT + 1)] {
        assert!(matches!(
            search(&im, gpus, batch, &SearchOptions::default()),
            Err(RailNetworkError::Input(InputError::TooLarge { .. }))
        ));
    }
    assert!(start.elapsed() < Duration::from_secs(2));
}

/// A global batch with a large prime factor at the limit still finishes quickly with a cap.
#[test]
fn a_capped_micro_batch_search_on_a_large_batch_is_fast() {
    let im = gpt_22b();
    let options = SearchOptions {
        max_micro_batch: 8,
        ..SearchOptions::default()
    };
    let start = Instant::now();
    // 2^6 * a large prime-ish odd factor: only small micro-batches are tried.
    let batch = 64 * ((MAX_SEARCH_COUNT / 64) - 1);
    let r = search(&im, 64, batch, &options);
    assert!(r.is_ok() || matches!(r, Err(RailNetworkError::NoFeasibleConfiguration { .. })));
    assert!(start.elapsed() < Duration::from_secs(10));
}

/// `vocab * hidden` used to wrap in release builds.
#[test]
fn memory_of_a_huge_vocabulary_is_finite_and_not_wrapped() {
    let model = GptModel {
        heads: 1,
        hidden: 1 << 32,
        layers: 1,
        seq_len: 1,
        vocab: 1 << 32,
    };
    let par = Parallelization::with_default_mapping(1, 1, 1, 1, 1, 1, 8).unwrap();
    let mem = memory_per_gpu(&model, &par, Recompute::Selective, 2.0).unwrap();
    // The embedding alone is 2^64 parameters of 2 bytes.
    assert!(mem.weights_and_optimizer_bytes >= 2.0 * 2f64.powi(64));
    assert!(mem.total_bytes.is_finite());
}

/// `dp * micro_batch` used to wrap, giving a non-zero micro-batch count.
#[test]
fn micro_batches_of_an_overflowing_product_are_zero() {
    let par = Parallelization::with_default_mapping(1, 1, u64::MAX, 2, 1000, 1, 8).unwrap();
    assert_eq!(par.micro_batches(), 0);
}

/// The spare GPUs of a huge server's whole domains overflow `u64`: a typed error.
#[test]
fn a_huge_server_failure_is_an_overflow() {
    let params = FabricParams::new(1024, 8, 64);
    let ctx = FailureContext {
        gpus_per_server: u64::MAX,
        optical_reconfiguration: false,
    };
    for kind in [FabricKind::RailOptimized, FabricKind::RailOnly] {
        assert!(matches!(
            failure_impact(kind, &params, Failure::Server, &ctx),
            Err(RailNetworkError::Input(InputError::Overflow { .. }))
        ));
    }
}

/// A subnormal network bandwidth made the iteration time `Ok(inf)`; the search now skips such
/// configurations and errors when none is finite.
#[test]
fn non_finite_iteration_times_are_errors() {
    let mut system = system_preset("dgx-a100").unwrap();
    system.network_bytes_per_s = 5e-324;
    system.hb_bytes_per_s = 5e-324;
    let im = IterationModel::new(
        model_preset("gpt-22b").unwrap(),
        system,
        ComputeModel::paper(),
    )
    .unwrap();
    let par = Parallelization::with_default_mapping(8, 1, 2, 1, 64, 1, 8).unwrap();
    assert!(matches!(
        im.evaluate(&par),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
    assert!(matches!(
        search(&im, 16, 64, &SearchOptions::default()),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
}

/// A system cannot be deserialized invalid.
#[test]
fn systems_deserialize_validated() {
    let good = serde_json::to_string(&system_preset("dgx-h100").unwrap()).unwrap();
    let parsed: rail_network::system::SystemSpec = serde_json::from_str(&good).unwrap();
    assert_eq!(parsed, system_preset("dgx-h100").unwrap());
    for (field, bad) in [
        ("\"hb_domain\":8", "\"hb_domain\":0"),
        ("\"latency_s\":0.0", "\"latency_s\":-1.0"),
    ] {
        assert!(good.contains(field), "{good}");
        let json = good.replace(field, bad);
        assert!(serde_json::from_str::<rail_network::system::SystemSpec>(&json).is_err());
    }
}

// ---------------------------------------------------------------------------------------------
// Found by `tests/fuzz_entry_points.rs` and the finite-result audit of issue 13.
// ---------------------------------------------------------------------------------------------

/// A Clos tier that is not full (18 endpoints on radix 4) folded several butterfly labels onto
/// one switch: 6 ports in use on a radix-4 switch. Spare ports now take the overflow.
#[test]
fn a_partial_clos_graph_respects_the_radix() {
    for (gpus, k, radix) in [(18, 2, 4), (10, 1, 4), (20, 1, 8), (100, 1, 8)] {
        let params = FabricParams::new(gpus, k, radix);
        for kind in [FabricKind::RailOptimized, FabricKind::RailOnly] {
            let g = FabricGraph::build(kind, params).unwrap();
            assert!(g.max_switch_degree() <= radix, "{kind:?} {params:?}");
            assert_eq!(connected_components(g.graph()), 1, "{kind:?} {params:?}");
            let f = match kind {
                FabricKind::RailOnly => rail_only_fabric(&params, &PriceModel::default()),
                FabricKind::RailOptimized => rail_optimized_fabric(&params, &PriceModel::default()),
            }
            .unwrap();
            assert_eq!(g.network_links(), f.links);
            assert_eq!(g.network_switches(), f.dedicated_switches);
        }
    }
}

/// Highly divisible GPU counts, batches and layer counts below `MAX_SEARCH_COUNT` asked for
/// up to 10^12 evaluations (and trial divisions per micro-batch size): now refused before any.
#[test]
fn a_highly_divisible_search_is_too_large_and_fast() {
    let n: u64 = 963_761_198_400; // 6720 divisors, below 2^40
    let mut system = system_preset("gh200").unwrap();
    system.memory_bytes = f64::MAX;
    let start = Instant::now();
    for (hb_domain, gpus) in [(1, n), (n, n), (1 << 20, 1 << 40), (1, 720_720)] {
        system.hb_domain = hb_domain;
        let model = GptModel {
            heads: gpus,
            hidden: gpus,
            layers: gpus,
            seq_len: gpus,
            vocab: 5,
        };
        let im = IterationModel::new(model, system, ComputeModel::paper()).unwrap();
        assert!(matches!(
            search(&im, gpus, gpus, &SearchOptions::default()),
            Err(RailNetworkError::Input(InputError::TooLarge { limit, .. })) if limit == MAX_SEARCH_WORK
        ));
    }
    assert!(start.elapsed() < Duration::from_secs(2));
}

/// `flop_split`, `model_flops` and `hardware_flops` returned `Ok(inf)` for a batch of 1e308.
#[test]
fn flops_of_an_extreme_batch_are_non_finite_errors() {
    let m = model_preset("gpt-1t").unwrap();
    let non_finite = |r: Result<f64, RailNetworkError>| {
        matches!(
            r,
            Err(RailNetworkError::Input(InputError::NonFinite { .. }))
        )
    };
    assert!(non_finite(model_flops(&m, 1e308)));
    assert!(non_finite(hardware_flops(&m, f64::MAX, Recompute::Full)));
    assert!(non_finite(
        flop_split(&m, 1e300, Recompute::Selective).map(|f| f.feed_forward_flop)
    ));
    let hand = FlopSplit {
        feed_forward_flop: f64::MAX,
        attention_projection_flop: f64::MAX,
        attention_score_flop: 0.0,
    };
    assert!(non_finite(hand.total_flop()));
}

/// `peak * efficiency * h` overflowed before dividing by `h + half`: a peak of `f64::MAX` made
/// the compute time of a sequence 0, so a one-GPU iteration took `Ok(0)` seconds.
#[test]
fn an_extreme_peak_gives_a_positive_time() {
    let model = GptModel {
        heads: 1,
        hidden: 2,
        layers: 1,
        seq_len: 1,
        vocab: 1,
    };
    let mut system = system_preset("dgx-a100").unwrap();
    system.hb_domain = 1;
    system.peak_flop_per_s = f64::MAX;
    let rate = ComputeModel::paper()
        .effective_flop_per_s(f64::MAX, 2)
        .unwrap();
    assert_eq!(rate, f64::MAX);
    let par = Parallelization::with_default_mapping(1, 1, 1, 1, 1, 1, 1).unwrap();
    let t = iteration_time(&model, &system, &ComputeModel::paper(), &par).unwrap();
    assert!(t.iteration_time_s > 0.0 && t.iteration_time_s.is_finite());
    // A rate that underflows to 0, or no hidden size (0 / 0), is a typed error instead of an
    // infinite time or NaN; a subnormal rate makes the compute time overflow.
    for (peak, hidden) in [(5e-324, 2), (1e9, 0)] {
        assert!(matches!(
            ComputeModel::calibrated().effective_flop_per_s(peak, hidden),
            Err(RailNetworkError::Input(
                InputError::NotPositive { .. } | InputError::CountTooSmall { .. }
            ))
        ));
    }
    system.peak_flop_per_s = 5e-324;
    assert!(matches!(
        IterationModel::new(model, system, ComputeModel::paper()),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
}

/// An attention slowdown of `f64::MAX` made `weighted_flops_per_sequence` return `Ok(inf)`.
#[test]
fn an_extreme_attention_slowdown_is_non_finite() {
    let c = ComputeModel {
        attention_slowdown: f64::MAX,
        ..ComputeModel::paper()
    };
    assert!(matches!(
        c.weighted_flops_per_sequence(&model_preset("gpt-22b").unwrap()),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
}

/// `memory_per_gpu` returned infinite (1e308 bytes per parameter) or NaN (a model of hidden
/// size 0) memory, and `RankedConfig::evaluate` returned it, with unchecked times, as `Ok`.
#[test]
fn memory_and_ranked_configs_are_finite_or_errors() {
    let m = model_preset("gpt-22b").unwrap();
    let par = Parallelization::with_default_mapping(8, 1, 1, 4, 4, 1, 8).unwrap();
    assert!(matches!(
        memory_per_gpu(&m, &par, Recompute::Selective, 1e308),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
    let hollow = GptModel { hidden: 0, ..m };
    assert!(layer_activation_bytes(&hollow, 1, 1, Recompute::None).is_err());
    let compute = ComputeModel {
        bytes_per_param: 1e308,
        ..ComputeModel::paper()
    };
    let im = IterationModel::new(m, system_preset("dgx-a100").unwrap(), compute).unwrap();
    assert!(matches!(
        RankedConfig::evaluate(&im, 8, par),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
    let mut slow = system_preset("dgx-a100").unwrap();
    slow.hb_bytes_per_s = 5e-324;
    let im = IterationModel::new(m, slow, ComputeModel::paper()).unwrap();
    assert!(matches!(
        RankedConfig::evaluate(&im, 8, par),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
}

/// A bandwidth ratio of 1e308 / 1e-10 was returned as `Ok(inf)`.
#[test]
fn an_overflowing_bandwidth_ratio_is_non_finite() {
    assert!(matches!(
        all_to_all_slowdown_sweep(&[2], 2, 1e308, 1e-10),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
}

/// Relative errors over a subnormal measurement were `Ok(inf)`; a mean of two errors of 1e308
/// overflowed; a calibration on runs no parameter point can predict returned the starting
/// point silently.
#[test]
fn accuracy_results_are_finite_or_errors() {
    let sys = system_preset("dgx-a100").unwrap();
    let mut runs = table4_runs().unwrap();
    runs[0].measured_s = 5e-324;
    assert!(matches!(
        accuracy_table(&runs[..1], &sys, &ComputeModel::paper()),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
    runs[0].measured_s = 0.0;
    assert!(matches!(
        accuracy_table(&runs[..1], &sys, &ComputeModel::paper()),
        Err(RailNetworkError::Input(InputError::NotPositive { .. }))
    ));
    let row = |error_vs_measured| AccuracyRow {
        label: String::new(),
        measured_s: 1.0,
        paper_computed_s: None,
        predicted_s: 1.0,
        error_vs_measured,
        error_vs_paper: None,
    };
    assert_eq!(mean_absolute_error(&[row(1e308), row(1e308)]), Ok(1e308));
    assert!(mean_absolute_error(&[row(f64::NAN)]).is_err());
    // Runs on 64, 280 and 2240 GPUs do not tile HB domains of 256: no parameter point predicts
    // them (the old code returned its starting point as the fit).
    let mut runs = table4_runs().unwrap();
    let gh200 = system_preset("gh200").unwrap();
    assert!(calibrate(&runs[1..4], &gh200, &ComputeModel::paper()).is_err());
    runs[1].measured_s = f64::MIN_POSITIVE;
    assert!(matches!(
        calibrate(&runs[1..4], &sys, &ComputeModel::paper()),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
}

/// Traffic summaries and pair totals of hand-built matrices with bytes near `f64::MAX` were
/// infinite.
#[test]
fn traffic_totals_are_finite_or_errors() {
    let pair = |src, dst| PairTraffic {
        src,
        dst,
        bytes: [f64::MAX, f64::MAX, 0.0, 0.0, 0.0, 0.0, 0.0],
    };
    assert!(pair(0, 1).total_bytes().is_err());
    let traffic = JobTraffic {
        gpus: 2,
        hb_domain: 1,
        entries: vec![pair(0, 1)],
    };
    assert!(matches!(
        traffic.summary(),
        Err(RailNetworkError::Input(InputError::NonFinite { .. }))
    ));
    let unsorted = JobTraffic {
        gpus: 2,
        hb_domain: 1,
        entries: vec![pair(1, 0), pair(0, 1)],
    };
    assert!(matches!(
        unsorted.validate(),
        Err(RailNetworkError::BadTrafficEntry { index: 1, .. })
    ));
}

/// The EP AlltoAll of `job_traffic` has one entry per GPU and EP peer: 8192 GPUs with EP 8192
/// would have built 2^26 entries (gigabytes); `with_experts` refuses it.
#[test]
fn a_huge_expert_all_to_all_is_too_large() {
    let model = GptModel {
        heads: 1,
        hidden: 1,
        layers: 1,
        seq_len: 1,
        vocab: 1,
    };
    let par = Parallelization::with_default_mapping(1, 1, 8192, 1, 8192, 1, 1).unwrap();
    let map = RankMapping::new(&model, &par, 8192, 1).unwrap();
    let expert = ExpertParallelism {
        ep: 8192,
        esp: 1,
        moe_every: 1,
        top_k: 1,
    };
    assert!(matches!(
        map.with_experts(expert),
        Err(RailNetworkError::Input(InputError::TooLarge { limit, .. })) if limit == MAX_EXPERT_PAIRS
    ));
}

/// Every input type with invariants deserializes through its validation: a rank mapping
/// (private fields) used to parse without any check.
#[test]
fn input_types_deserialize_validated() {
    fn refused<T: serde::de::DeserializeOwned>(json: &str) -> bool {
        serde_json::from_str::<T>(json).is_err()
    }
    let model = r#"{"heads": 3, "hidden": 64, "layers": 4, "seq_len": 32, "vocab": 10}"#;
    assert!(refused::<GptModel>(model));
    let par = r#"{"tp": 2, "pp": 1, "dp": 1, "tp_hb": 4, "pp_hb": 1, "dp_hb": 1,
        "micro_batch": 1, "global_batch": 1, "interleave": 1}"#;
    assert!(refused::<Parallelization>(par));
    assert!(refused::<ExpertParallelism>(
        r#"{"ep": 0, "esp": 1, "moe_every": 1, "top_k": 1}"#
    ));
    let mut compute = serde_json::to_value(ComputeModel::paper()).unwrap();
    compute["gemm_efficiency"] = serde_json::json!(1.5);
    assert!(serde_json::from_value::<ComputeModel>(compute).is_err());
    assert!(refused::<PriceModel>(
        r#"{"transceiver_usd": -1, "switch_port_usd": 1}"#
    ));
    assert!(refused::<FabricParams>(
        r#"{"gpus": 100, "hb_domain": 8, "radix": 64}"#
    ));
    assert!(refused::<FailureContext>(
        r#"{"gpus_per_server": 0, "optical_reconfiguration": false}"#
    ));
    let mut run = serde_json::to_value(&table4_runs().unwrap()[0]).unwrap();
    run["measured_s"] = serde_json::json!(0.0);
    assert!(serde_json::from_value::<PublishedRun>(run).is_err());
    let traffic = r#"{"gpus": 2, "hb_domain": 1, "entries": [
        {"src": 0, "dst": 0, "bytes": [1, 0, 0, 0, 0, 0, 0]}]}"#;
    assert!(refused::<JobTraffic>(traffic));
    // A mapping of 16 GPUs for a configuration of 8 (t p d = 8, Eq. 11).
    let model = GptModel {
        heads: 8,
        hidden: 64,
        layers: 4,
        seq_len: 32,
        vocab: 1000,
    };
    let par = Parallelization::with_default_mapping(2, 2, 2, 1, 2, 1, 4).unwrap();
    let map = RankMapping::new(&model, &par, 8, 4).unwrap();
    let mut json = serde_json::to_value(&map).unwrap();
    assert_eq!(
        serde_json::from_value::<RankMapping>(json.clone()).unwrap(),
        map
    );
    json["gpus"] = serde_json::json!(16);
    assert!(serde_json::from_value::<RankMapping>(json).is_err());
}

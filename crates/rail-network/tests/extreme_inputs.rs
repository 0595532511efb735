//! Regression tests for issue 13: overflow-sized counts give typed errors or exact results,
//! never a wrapped value or a hang.

use std::time::{Duration, Instant};

use comm_cost_model::CostModelError;
use rail_network::RailNetworkError;
use rail_network::compute::ComputeModel;
use rail_network::fabric::{FabricKind, FabricParams};
use rail_network::failures::{Failure, FailureContext, failure_impact};
use rail_network::iteration::IterationModel;
use rail_network::memory::memory_per_gpu;
use rail_network::model::{GptModel, Recompute, model_preset};
use rail_network::parallel::Parallelization;
use rail_network::search::{MAX_SEARCH_COUNT, SearchOptions, search};
use rail_network::system::system_preset;

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
            Err(RailNetworkError::Value(CostModelError::TooLarge { .. }))
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
            Err(RailNetworkError::Value(CostModelError::Overflow { .. }))
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
        Err(RailNetworkError::Value(CostModelError::NonFinite { .. }))
    ));
    assert!(matches!(
        search(&im, 16, 64, &SearchOptions::default()),
        Err(RailNetworkError::Value(CostModelError::NonFinite { .. }))
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

//! Criterion benches of `rail-network`: one iteration-time evaluation (target >= 10^6 per second
//! per core), the full parallelization search for GPT-1T from 4096 to 262144 GPUs (target
//! <= 1 s at 65536 on 2 cores), fabric counting and graph building, the calibration, and the
//! per-pair traffic of a 4096-GPU GPT-1T job.
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rail_network::accuracy::{calibrate, published_runs};
use rail_network::compute::ComputeModel;
use rail_network::fabric::{FabricKind, FabricParams, PriceModel, compare_fabrics};
use rail_network::fabric_graph::FabricGraph;
use rail_network::iteration::IterationModel;
use rail_network::mapping::RankMapping;
use rail_network::model::model_preset;
use rail_network::parallel::Parallelization;
use rail_network::search::{SearchOptions, search};
use rail_network::system::system_preset;
use rail_network::traffic::{CollectiveAlgorithm, job_traffic};

fn model(name: &str, system: &str) -> IterationModel {
    IterationModel::new(
        model_preset(name).expect("preset"),
        system_preset(system).expect("preset"),
        ComputeModel::paper(),
    )
    .expect("valid presets")
}

fn evaluation(c: &mut Criterion) {
    let im = model("gpt-1t", "dgx-a100");
    let par = Parallelization::with_default_mapping(8, 64, 1, 1, 512, 1, 8).expect("valid");
    let mut group = c.benchmark_group("rail_network_evaluate");
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("gpt_1t_512_validated", |b| {
        b.iter(|| im.evaluate(black_box(&par)))
    });
    group.finish();
}

fn full_search(c: &mut Criterion) {
    let mut group = c.benchmark_group("rail_network_search_gpt_1t");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(6));
    for (system, gpus) in [
        ("gh200", 4096u64),
        ("gh200", 16384),
        ("gh200", 65536),
        ("dgx-h100", 65536),
        ("gh200", 262_144),
    ] {
        let im = model("gpt-1t", system);
        let id = BenchmarkId::new(system, gpus);
        group.bench_with_input(id, &gpus, |b, &n| {
            b.iter(|| search(&im, black_box(n), 4096, &SearchOptions::default()))
        });
    }
    group.finish();
}

fn fabrics(c: &mut Criterion) {
    let mut group = c.benchmark_group("rail_network_fabric");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    let table2 = FabricParams::new(65536, 256, 256);
    group.bench_function("compare_table2_row", |b| {
        b.iter(|| compare_fabrics(black_box(&table2), &PriceModel::default()))
    });
    for gpus in [1024u64, 16384] {
        let p = FabricParams {
            gpus,
            hb_domain: 8,
            radix: 32,
        };
        group.bench_with_input(
            BenchmarkId::new("graph_rail_optimized", gpus),
            &p,
            |b, p| b.iter(|| FabricGraph::build(FabricKind::RailOptimized, *p)),
        );
    }
    group.finish();
}

fn calibration(c: &mut Criterion) {
    let runs = published_runs().expect("fixed table");
    let sys = system_preset("dgx-a100").expect("preset");
    let mut group = c.benchmark_group("rail_network_calibrate");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("nine_runs", |b| {
        b.iter(|| calibrate(black_box(&runs), &sys, &ComputeModel::paper()))
    });
    group.finish();
}

/// Rail-only §3: per-pair traffic of GPT-1T on 16 GH200 (4096 GPUs), hierarchical collectives.
fn gpt_1t_traffic(c: &mut Criterion) {
    let model = model_preset("gpt-1t").unwrap();
    let par = Parallelization::with_default_mapping(8, 8, 64, 1, 4096, 1, 256).unwrap();
    let map = RankMapping::new(&model, &par, 4096, 256).unwrap();
    let mut group = c.benchmark_group("job_traffic");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("gpt_1t_4096_gh200", |b| {
        b.iter(|| job_traffic(black_box(&map), CollectiveAlgorithm::Hierarchical).summary())
    });
    group.finish();
}

criterion_group!(
    benches,
    evaluation,
    full_search,
    fabrics,
    calibration,
    gpt_1t_traffic
);
criterion_main!(benches);

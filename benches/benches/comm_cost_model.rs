//! Benchmarks of comm-cost-model: every Parm Table III configuration on both testbeds (target
//! <= 1 ms for all of them) and a least-squares fit of 10^6 samples (target <= 50 ms).
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use comm_cost_model::fit::{Sample, least_squares};
use comm_cost_model::parm::{ParmLayer, Testbed, table3_layers};
use comm_cost_model::piecewise::{PiecewiseOptions, piecewise_fit};
use criterion::{Criterion, criterion_group, criterion_main};

fn table3(c: &mut Criterion) {
    let runs: Vec<(Testbed, Vec<ParmLayer>)> = vec![
        (Testbed::parm_testbed_a(), table3_layers(8, 4.0)),
        (
            Testbed::parm_testbed_b(),
            [8, 16, 32]
                .iter()
                .flat_map(|&p| table3_layers(p, 4.0))
                .collect(),
        ),
    ];
    let mut group = c.benchmark_group("parm");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("table3_all_11664_layers_both_testbeds", |b| {
        b.iter(|| {
            let mut s1 = 0usize;
            for (testbed, layers) in &runs {
                for layer in layers {
                    if let Ok(t) = testbed.times(black_box(layer)) {
                        s1 += usize::from(t.s1.total_s <= t.s2.total_s);
                    }
                }
            }
            s1
        })
    });
    group.finish();
}

fn fit(c: &mut Criterion) {
    let samples: Vec<Sample> = (0..1_000_000u32)
        .map(|i| {
            let bytes = f64::from(i % 1000 + 1) * 1e5;
            let wiggle = f64::from(i.wrapping_mul(2_654_435_761) % 1000) / 1000.0 - 0.5;
            Sample {
                bytes,
                seconds: (1e-4 + bytes * 2e-10) * (1.0 + 0.01 * wiggle),
            }
        })
        .collect();
    let mut group = c.benchmark_group("fit");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("least_squares_1e6_samples", |b| {
        b.iter(|| least_squares(black_box(&samples)).map(|f| f.beta_s_per_byte))
    });
    group.finish();
}

/// Piecewise fits of a three-regime curve (flat, protocol switch, bandwidth) over log-spaced
/// sizes: 32 is one nccl-tests run, 1024 the largest input accepted.
fn piecewise(c: &mut Criterion) {
    let mut group = c.benchmark_group("piecewise_fit");
    group.sample_size(10);
    for n in [32u32, 256, 1024] {
        let samples: Vec<Sample> = (0..n)
            .map(|i| {
                let bytes = 256.0 * f64::powf(2.0, 22.0 * f64::from(i) / f64::from(n));
                let wiggle = f64::from(i.wrapping_mul(2_654_435_761) % 1000) / 1000.0 - 0.5;
                let t = if bytes < 3e4 {
                    10e-6
                } else if bytes < 4e6 {
                    12e-6 + bytes / 200e9
                } else {
                    22e-6 + bytes / 320e9
                };
                Sample {
                    bytes,
                    seconds: t * (1.0 + 0.02 * wiggle),
                }
            })
            .collect();
        group.bench_function(format!("{n}_samples"), |b| {
            b.iter(|| piecewise_fit(black_box(&samples), PiecewiseOptions::default()))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = table3, fit, piecewise
}
criterion_main!(benches);

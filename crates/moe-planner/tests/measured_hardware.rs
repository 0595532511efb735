//! The cost models against real NCCL and DeepEP measurements (examples/data/measured/, from
//! NVIDIA's aiconfigurator-core 0.12.0, Apache-2.0): fits, held-out errors, DeepEP. The numbers
//! asserted here are the ones docs/reproduction.md reports (rounded up).

use moe_planner::PlanError;
use moe_planner::comm_cost_model::gpu_scaling::Collective;
use moe_planner::comm_cost_model::piecewise::Regime;
use moe_planner::fitting::{CollectiveFitSpec, plan_collective_fits};
use moe_planner::measured::{
    link_fit, parse_collective_csv, parse_deepep_csv, plan_deepep_validation, plan_nccl_validation,
};
use moe_planner::nccl_tests::parse_nccl_tests;

const H100: &str = include_str!("../../../examples/data/measured/nccl_h100_sxm.csv");
const A100: &str = include_str!("../../../examples/data/measured/nccl_a100_sxm.csv");
const DEEPEP: &str = include_str!("../../../examples/data/measured/deepep_h100_sxm.csv");
const NCCL_TESTS: &str =
    include_str!("../../../examples/data/measured/nccl_tests_all_gather_h100x8.txt");

#[test]
fn bandwidth_bound_segments_explain_the_data() {
    for text in [H100, A100] {
        let measurements = parse_collective_csv(text).unwrap();
        assert_eq!(measurements.len(), 252);
        let spec = CollectiveFitSpec {
            measurements,
            options: None,
        };
        let plan = plan_collective_fits(&spec).unwrap();
        assert_eq!(plan.fits.len(), 12); // 4 collectives x {2, 4, 8} GPUs
        for fit in &plan.fits {
            let last = fit.segments.last().unwrap();
            assert_eq!(last.regime, Regime::BandwidthBound);
            assert!(last.r_squared >= 0.98, "{fit:?}");
            // Every segment, latency-bound ones included, stays within 60% of every sample
            // (the worst is H100 AlltoAll's protocol switch at 64-128 kB).
            assert!(fit.segments.iter().all(|s| s.max_relative_error < 0.6));
        }
    }
}

#[test]
fn held_out_sizes_and_gpu_counts_are_predicted() {
    for text in [H100, A100] {
        let rows = plan_nccl_validation(&parse_collective_csv(text).unwrap()).unwrap();
        assert_eq!(rows.len(), 8);
        for row in rows {
            let target = if row.split == "every-other-size" {
                0.05
            } else {
                0.11
            };
            assert!(row.held_out.median <= target, "{row:?}");
        }
    }
}

#[test]
fn deepep_is_predicted_within_target_on_held_out_shapes() {
    let h100 = parse_collective_csv(H100).unwrap();
    let link = link_fit(&h100, Collective::AllToAll, 8).unwrap();
    let rows = plan_deepep_validation(&parse_deepep_csv(DEEPEP).unwrap(), &link).unwrap();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert!(row.held_out.median <= 0.10, "{row:?}");
        // The NCCL link alone misses the kernels' per-call overhead.
        assert!(row.link_only.median > row.held_out.median);
    }
}

#[test]
fn nccl_tests_output_fits_like_the_table_it_was_written_from() {
    let run = parse_nccl_tests(NCCL_TESTS).unwrap();
    let from_text = plan_collective_fits(&CollectiveFitSpec {
        measurements: run.measurements(Collective::AllGather),
        options: None,
    })
    .unwrap();
    let fit = &from_text.fits[0];
    assert_eq!(
        (fit.collective, fit.gpus, fit.samples),
        (Collective::AllGather, 8, 21)
    );
    let bus = fit
        .segments
        .last()
        .unwrap()
        .bus_bandwidth_bytes_per_s
        .unwrap();
    // H100 NVLink 4: 450 GB/s per direction; NCCL AllGather reaches about 320 GB/s.
    assert!((300e9..350e9).contains(&bus), "{bus}");
}

#[test]
fn inference_takes_the_fitted_alltoall_bandwidth() {
    use moe_planner::fitting::Measurement;
    use moe_planner::inference::{
        GpuInput, InferenceModelSpec, InferenceSpec, OnePerGpuSpec, plan_inference,
    };
    // AlltoAll on 2 GPUs at a bus bandwidth of 1e9 bytes/s (8 Gbps), 5 us start-up.
    let measurements = (0..10)
        .map(|i| 1e6 * f64::powi(2.0, i))
        .map(|bytes| Measurement {
            collective: Collective::AllToAll,
            gpus: 2,
            bytes,
            seconds: 5e-6 + bytes * 0.5 / 1e9,
        })
        .collect();
    let fits = plan_collective_fits(&CollectiveFitSpec {
        measurements,
        options: None,
    })
    .unwrap();
    let spec = |gbps: f64, link_fits| -> InferenceSpec {
        OnePerGpuSpec {
            gpus: vec![
                GpuInput {
                    tflop_per_s: 1.0,
                    bandwidth_gbps: gbps,
                };
                3
            ],
            models: vec![InferenceModelSpec {
                name: "m".into(),
                layers: vec![vec![
                    vec![0.0, 4e6, 1e6],
                    vec![1e6, 0.0, 1e6],
                    vec![1e6, 3e6, 0.0],
                ]],
                gate_s: (1e-3).into(),
                aggregation_s: (0.5e-3).into(),
                ffn_flop_per_byte: 1e3,
            }],
            seed: 0,
            link_fits,
            ..Default::default()
        }
        .into()
    };
    let by_hand = plan_inference(&spec(8.0, None)).unwrap();
    let fitted = plan_inference(&spec(100.0, Some(fits))).unwrap();
    let rel = (fitted.inference_time_s / by_hand.inference_time_s - 1.0).abs();
    assert!(
        rel < 1e-6,
        "{} vs {}",
        fitted.inference_time_s,
        by_hand.inference_time_s
    );
}

#[test]
fn tables_refuse_infinite_nan_and_negative_measurements() {
    // Found by fuzzing: Rust's float parser reads `infinity` and `nan`, which were accepted.
    let row = "normal,8,2048,256,8,128,4.1e-05,";
    for bad in ["infinity", "nan", "-1e-5", "1e309"] {
        let text =
            format!("mode,ranks,hidden,tokens,top_k,experts,dispatch_s,combine_s\n{row}{bad}\n");
        let e = parse_deepep_csv(&text).unwrap_err();
        assert!(matches!(e, PlanError::Format { line: 2, .. }), "{bad}: {e}");
    }
    let text = "collective,gpus,bytes,seconds\nall_gather,8,inf,1e-5\n";
    assert!(matches!(
        parse_collective_csv(text),
        Err(PlanError::Format { line: 2, .. })
    ));
}

/// Issue 24: the HB-domain sweep goes through the facade and uses the spec's link fits at every
/// size (the CLI's plot used to call rail-network directly and drop them).
#[test]
fn the_hb_domain_sweep_uses_the_link_fits() {
    use moe_planner::fitting::{CollectiveFitSpec, Measurement, plan_collective_fits};
    use moe_planner::network::{ModelRef, SearchSpec, SystemRef, plan_hb_domain_sweep};
    // A slow measured HB link (20 GB/s bus bandwidth) on 2, 4 and 8 GPUs.
    let measurements = [2u64, 4, 8]
        .into_iter()
        .flat_map(|gpus| {
            (0..12).map(move |i| {
                let bytes = 1e3 * f64::powi(2.0, i);
                let bus = bytes * (gpus as f64 - 1.0) / gpus as f64;
                Measurement {
                    collective: Collective::AllGather,
                    gpus,
                    bytes,
                    seconds: 10e-6 + bus / 20e9,
                }
            })
        })
        .collect();
    let fits = plan_collective_fits(&CollectiveFitSpec {
        measurements,
        options: None,
    })
    .unwrap();
    let mut spec = SearchSpec {
        model: ModelRef::Preset("gpt-22b".into()),
        system: SystemRef::Preset("dgx-a100".into()),
        gpus: 64,
        global_batch: 64,
        keep: 1,
        compute: None,
        link_fits: None,
    };
    let preset = plan_hb_domain_sweep(&spec, &[1, 8]).unwrap();
    spec.link_fits = Some(fits);
    let fitted = plan_hb_domain_sweep(&spec, &[1, 8]).unwrap();
    assert_eq!(fitted[0], preset[0]);
    assert!((fitted[1].hb_bytes_per_s / 20e9 - 1.0).abs() < 1e-6);
    assert!(fitted[1].iteration_time_s > preset[1].iteration_time_s);
}

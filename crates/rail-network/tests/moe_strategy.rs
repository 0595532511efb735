//! Parameter sharding, pipeline schedules, offloading, SMs held by communication, the overlap
//! cap, the job's HB domain and MTP modules of the MoE step model (issue 21 follow-up).

use comm_cost_model::InputError;
use proptest::prelude::*;
use rail_network::RailNetworkError;
use rail_network::model::Recompute;
use rail_network::moe::*;

fn mixtral() -> StepModel {
    StepModel::new(
        moe_model_preset("mixtral-8x7b").unwrap(),
        training_system_preset("h100").unwrap(),
        StepOptions::default(),
    )
    .unwrap()
}

fn mapping(pp: u64, vp: u64, ep: u64) -> MoeMapping {
    MoeMapping {
        tp: 1,
        cp: 1,
        pp,
        vp,
        ep,
        etp: 1,
        micro_batch: 1,
        recompute: Recompute::None,
    }
}

fn with(sm: &StepModel, f: impl FnOnce(&mut StepOptions)) -> StepModel {
    let mut o = *sm.options();
    f(&mut o);
    sm.with_options(o).unwrap()
}

#[test]
fn job_hb_domain_fills_domains_evenly() {
    let nvl72 = training_system_preset("gb200-nvl72").unwrap();
    assert_eq!(nvl72.job_hb_domain(64), 64);
    assert_eq!(nvl72.job_hb_domain(72), 72);
    assert_eq!(nvl72.job_hb_domain(128), 64);
    assert_eq!(nvl72.job_hb_domain(256), 64);
    assert_eq!(nvl72.job_hb_domain(216), 72);
    let h100 = training_system_preset("h100").unwrap();
    assert_eq!(h100.job_hb_domain(4), 4);
    assert_eq!(h100.job_hb_domain(2048), 8);
    // A large prime: no even split within 1,024 steps, gcd with K.
    assert_eq!(h100.job_hb_domain(1_000_003), 1);
    assert_eq!(h100.job_hb_domain(0), 1);
}

#[test]
fn a_64_gpu_nvl72_job_keeps_expert_data_parallelism_on_nvlink() {
    // EP8 on 64 GB200: the expert-DP group has stride 8; all 64 GPUs share one NVLink domain,
    // so its gradient sync never touches the 50 GB/s NIC.
    let sm = StepModel::new(
        moe_model_preset("mixtral-8x7b").unwrap(),
        training_system_preset("gb200-nvl72").unwrap(),
        StepOptions::default(),
    )
    .unwrap();
    let e = sm.evaluate(&mapping(1, 1, 8), 64, 128).unwrap();
    let mut on_nics = training_system_preset("gb200-nvl72").unwrap();
    on_nics.system.hb_domain = 8;
    let slow = StepModel::new(*sm.model(), on_nics, StepOptions::default())
        .unwrap()
        .evaluate(&mapping(1, 1, 8), 64, 128)
        .unwrap();
    assert!(e.terms.dp_comm_s < slow.terms.dp_comm_s);
}

#[test]
fn comm_sms_slow_compute_by_their_share() {
    let sm = mixtral();
    let m = mapping(4, 8, 8);
    let base = sm.evaluate(&m, 64, 256).unwrap();
    let held = with(&sm, |o| o.comm_sms = 33)
        .evaluate(&m, 64, 256)
        .unwrap();
    let ratio = held.terms.attention_compute_s / base.terms.attention_compute_s;
    assert!((ratio - 132.0 / 99.0).abs() < 1e-9, "{ratio}");
    let bad = StepOptions {
        comm_sms: 132,
        ..StepOptions::default()
    };
    assert!(matches!(
        sm.with_options(bad),
        Err(RailNetworkError::Input(InputError::SizeMismatch { what, .. })) if what.contains("comm_sms")
    ));
}

#[test]
fn overlap_hides_at_most_the_compute() {
    // DeepSeek-V3 on 64 H800 with EP64: the all-to-all exceeds the compute it could hide
    // behind, so full overlap leaves the excess exposed.
    let sm = StepModel::new(
        moe_model_preset("deepseek-v3").unwrap(),
        training_system_preset("h800").unwrap(),
        StepOptions::default(),
    )
    .unwrap();
    let m = MoeMapping {
        recompute: Recompute::Full,
        ..mapping(16, 1, 64)
    };
    let none = sm.evaluate(&m, 1024, 1024).unwrap();
    let all = with(&sm, |o| o.a2a_overlap = 1.0)
        .evaluate(&m, 1024, 1024)
        .unwrap();
    let compute = none.terms.microbatch_compute_s * none.degrees.micro_batches as f64;
    let expect = (none.terms.ep_comm_s - compute).max(0.0);
    assert!((all.terms.ep_comm_s - expect).abs() <= 1e-9 * none.terms.ep_comm_s);
}

#[test]
fn dualpipe_bubble_memory_and_rules() {
    let sm = mixtral();
    let dual = with(&sm, |o| o.pipeline_schedule = PipelineSchedule::DualPipe);
    let m = mapping(4, 1, 8);
    let a = sm.evaluate(&m, 64, 256).unwrap();
    let b = dual.evaluate(&m, 64, 256).unwrap();
    // 1F1B: (pp - 1) micro-batch times; DualPipe: (pp/2 - 1) x 2/3 of one.
    let t = a.terms.microbatch_compute_s;
    assert!((a.terms.bubble_s - 3.0 * t).abs() <= 1e-12 * t);
    assert!((b.terms.bubble_s - 2.0 / 3.0 * t).abs() <= 1e-12 * t);
    // Two copies of the parameters.
    let w = b.memory.weights_and_gradients_bytes / a.memory.weights_and_gradients_bytes;
    assert!((w - 2.0).abs() < 1e-12);
    let what = |r: Result<MoeEvaluation, RailNetworkError>| match r {
        Err(RailNetworkError::Input(
            InputError::SizeMismatch { what, .. } | InputError::NotDivisible { what, .. },
        )) => what,
        other => panic!("expected a schedule error, got {other:?}"),
    };
    assert!(what(dual.evaluate(&mapping(4, 2, 8), 64, 256)).contains("vp"));
    assert!(what(dual.evaluate(&mapping(8, 1, 8), 64, 8)).contains("micro-batch"));
    // The search returns only mappings DualPipe can run.
    let r = search_mappings(&dual, 64, 256, &MoeSearchOptions::default()).unwrap();
    for e in &r.ranked {
        assert_eq!(e.mapping.vp, 1);
        assert!(e.mapping.pp == 1 || e.mapping.pp % 2 == 0);
    }
}

#[test]
fn fsdp_shards_weights_and_syncs_every_micro_batch() {
    let sm = mixtral();
    let m = mapping(1, 1, 8);
    let zero1 = sm.evaluate(&m, 64, 256).unwrap();
    let fsdp = with(&sm, |o| o.param_sharding = ParamSharding::Fsdp)
        .evaluate(&m, 64, 256)
        .unwrap();
    let keep = with(&sm, |o| o.param_sharding = ParamSharding::FsdpKeepGathered)
        .evaluate(&m, 64, 256)
        .unwrap();
    assert!(fsdp.memory.weights_and_gradients_bytes < keep.memory.weights_and_gradients_bytes);
    assert!(keep.memory.weights_and_gradients_bytes < zero1.memory.weights_and_gradients_bytes);
    assert_eq!(fsdp.memory.optimizer_bytes, zero1.memory.optimizer_bytes);
    assert!(fsdp.terms.dp_comm_s >= keep.terms.dp_comm_s);
    assert!(fsdp.terms.dp_comm_s >= zero1.terms.dp_comm_s);
}

#[test]
fn offloading_trades_memory_for_host_traffic() {
    let sm = mixtral();
    let m = mapping(4, 8, 8);
    let base = sm.evaluate(&m, 64, 256).unwrap();
    let opt = with(&sm, |o| o.optimizer_offload_fraction = 1.0)
        .evaluate(&m, 64, 256)
        .unwrap();
    assert_eq!(opt.memory.optimizer_bytes, 0.0);
    assert!(opt.terms.optimizer_s > base.terms.optimizer_s);
    let act = with(&sm, |o| o.activation_offload_fraction = 0.5)
        .evaluate(&m, 64, 256)
        .unwrap();
    assert!((act.memory.activation_bytes - base.memory.activation_bytes / 2.0).abs() < 1.0);
    assert!(act.terms.offload_s >= 0.0);
    let moments = with(&sm, |o| o.bf16_optimizer_moments = true)
        .evaluate(&m, 64, 256)
        .unwrap();
    assert!(
        (moments.memory.optimizer_bytes / base.memory.optimizer_bytes - 8.0 / 12.0).abs() < 1e-12
    );
    for bad in [1.5, -0.1, f64::NAN] {
        let o = StepOptions {
            activation_offload_fraction: bad,
            ..StepOptions::default()
        };
        assert!(o.validate().is_err(), "{bad}");
        let o = StepOptions {
            optimizer_offload_fraction: bad,
            ..StepOptions::default()
        };
        assert!(o.validate().is_err(), "{bad}");
    }
}

#[test]
fn offload_exposes_what_the_compute_cannot_hide() {
    // A host link of 1 MB/s cannot hide any offload: the transfer time is exposed.
    let mut system = training_system_preset("h100").unwrap();
    system.host_bytes_per_s = 1e6;
    let sm = StepModel::new(
        moe_model_preset("mixtral-8x7b").unwrap(),
        system,
        StepOptions {
            activation_offload_fraction: 1.0,
            ..StepOptions::default()
        },
    )
    .unwrap();
    let e = sm.evaluate(&mapping(4, 8, 8), 64, 256).unwrap();
    assert!(e.terms.offload_s > e.terms.microbatch_compute_s);
    assert_eq!(e.memory.activation_bytes, 0.0);
}

#[test]
fn mtp_adds_compute_and_is_counted_apart() {
    let mut ds = moe_model_preset("deepseek-v3").unwrap();
    assert_eq!(ds.mtp_modules, 1);
    let with_mtp = ds.token_flops().unwrap();
    let p = ds.parameters().unwrap();
    ds.mtp_modules = 0;
    let without = ds.token_flops().unwrap();
    assert_eq!(without.mtp_flop, 0.0);
    assert!(with_mtp.total_flop > without.total_flop);
    // The total excludes the module (as DeepSeek's 671B does).
    assert_eq!(p.total, ds.parameters().unwrap().total);
    assert_eq!(ds.parameters().unwrap().mtp, 0.0);
    // A JSON model without the field has none.
    let json = serde_json::json!({
        "layers": 2, "hidden": 64, "attention": {"gqa": {"heads": 4, "kv_heads": 4, "head_dim": 16}},
        "dense_ffn": 128, "gated_ffn": true, "vocab": 100, "tied_embeddings": true, "seq_len": 32
    });
    let m: MoeModel = serde_json::from_value(json).unwrap();
    assert_eq!(m.mtp_modules, 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn every_strategy_gives_finite_positive_times_and_memory(
        sharding in 0usize..3, dual in any::<bool>(), opt in 0.0f64..=1.0, act in 0.0f64..=1.0,
        sms in 0u64..100, overlap in 0.0f64..=1.0, moments in any::<bool>(),
    ) {
        let options = StepOptions {
            param_sharding: [ParamSharding::DistributedOptimizer, ParamSharding::Fsdp,
                ParamSharding::FsdpKeepGathered][sharding],
            pipeline_schedule: if dual { PipelineSchedule::DualPipe } else { PipelineSchedule::OneFOneB },
            optimizer_offload_fraction: opt,
            activation_offload_fraction: act,
            comm_sms: sms,
            a2a_overlap: overlap,
            bf16_optimizer_moments: moments,
            ..StepOptions::default()
        };
        let sm = StepModel::new(moe_model_preset("mixtral-8x7b").unwrap(),
            training_system_preset("h100").unwrap(), options).unwrap();
        let e = sm.evaluate(&mapping(4, 1, 8), 64, 256).unwrap();
        prop_assert!(e.terms.step_time_s.is_finite() && e.terms.step_time_s > 0.0);
        prop_assert!(e.memory.total_bytes.is_finite() && e.memory.total_bytes > 0.0);
        prop_assert!(e.terms.ep_comm_s >= 0.0 && e.terms.offload_s >= 0.0);
        // More offloading never needs more GPU memory.
        let more = sm.with_options(StepOptions {
            optimizer_offload_fraction: 1.0, activation_offload_fraction: 1.0, ..options
        }).unwrap().evaluate(&mapping(4, 1, 8), 64, 256).unwrap();
        prop_assert!(more.memory.total_bytes <= e.memory.total_bytes * (1.0 + 1e-12));
    }
}

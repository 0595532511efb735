//! Fuzzing every public entry point of `rail-network` (issue 13): hostile counts (0, `u64::MAX`,
//! 2^53 + 1, ...), hostile floats (NaN, infinities, subnormals, `f64::MAX`), empty and
//! mismatched lists and huge sizes, mixed into otherwise valid models, systems and
//! parallelizations so that the deep code runs too. Every call must return within
//! [`moe_fuzz::TIME_LIMIT`] without panicking; an `Ok` must hold finite numbers only and pass the
//! crate's own validators (Eq. 11–18 for every configuration a search or sweep returns, sorted
//! times that are positive and finite, square traffic matrices of finite non-negative bytes,
//! fabric counts that match the wiring, a constructor or serde round trip of the result).
//!
//! `cargo test` runs [`moe_fuzz::DEFAULT_CASES`] cases per property; the long run:
//!
//! ```text
//! MOE_FUZZ_CASES=3000 cargo test --release -p rail-network --test fuzz_entry_points -- --nocapture --test-threads 1
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use comm_cost_model::gcd;
use moe_fuzz::{check_finite, check_finite_json, f64_value, fuzz, u64_value, vec_of};
use proptest::prelude::*;
use rail_network::RailNetworkError;
use rail_network::accuracy::{
    AccuracyRow, LeaveOneOutRow, PublishedRun, accuracy_table, calibrate, held_out_runs,
    leave_one_out, mean_absolute_error, megatron_runs, predict, published_runs, table4_runs,
};
use rail_network::compute::{AttentionScope, ComputeModel};
use rail_network::fabric::{
    FabricComparison, FabricCounts, FabricKind, FabricParams, PriceModel, clos_tiers,
    compare_fabrics, rail_only_fabric, rail_optimized_fabric,
};
use rail_network::fabric_graph::{FabricGraph, FabricNode, LinkKind};
use rail_network::failures::{Failure, FailureContext, FailureImpact, failure_impact};
use rail_network::iteration::{IterationModel, IterationTerms, iteration_time};
use rail_network::mapping::{ExpertPlacement, RankMapping};
use rail_network::memory::{MemoryBreakdown, layer_activation_bytes, memory_per_gpu};
use rail_network::model::{
    FlopSplit, GptModel, MODEL_PRESET_NAMES, Recompute, flop_split, hardware_flops, model_flops,
    model_preset,
};
use rail_network::parallel::{ExpertParallelism, Parallelization};
use rail_network::search::{
    RankedConfig, SearchOptions, SearchResult, search, search_with_progress,
};
use rail_network::sweeps::{
    AllToAllPoint, SweepPoint, all_to_all_slowdown_sweep, bandwidth_sweep, batch_sweep,
    hb_domain_sweep, sweep_point,
};
use rail_network::system::{SYSTEM_PRESET_NAMES, SystemSpec, system_preset};
use rail_network::traffic::{
    CollectiveAlgorithm, JobTraffic, KindShare, PairTraffic, TrafficKind, TrafficSummary,
    job_traffic,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Keys of `Option` fields in this crate's types: `null` there is `None`, not a NaN.
const OPTION_KEYS: &[&str] = &["paper_computed_s", "error_vs_paper", "expert", "rail"];

type Check = Result<(), String>;

/// Cases per property whose main call returned `Ok` (printed after each property, so a run
/// shows how much of the deep code the cases reached).
static OK_CASES: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

/// Counts one `Ok` of the main call of `property`.
fn tally<T, E>(property: &'static str, r: &Result<T, E>) {
    if r.is_ok() {
        *OK_CASES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(property)
            .or_default() += 1;
    }
}

/// [`moe_fuzz::fuzz`], then the share of `Ok` cases.
fn run<S, F>(name: &'static str, strategy: S, test: F)
where
    S: Strategy,
    S::Value: Send + std::fmt::Debug + Clone + 'static,
    F: Fn(S::Value) -> Check + Send + Sync + Clone + 'static,
{
    fuzz(name, strategy, test);
    let ok = OK_CASES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(name)
        .copied()
        .unwrap_or(0);
    eprintln!("fuzz {name}: {ok} of {} cases Ok", moe_fuzz::cases());
}

fn fail<T>(what: impl std::fmt::Display) -> Result<T, String> {
    Err(what.to_string())
}

fn finite_json<T: Serialize>(value: &T) -> Check {
    check_finite_json(value, OPTION_KEYS)
}

/// A time that a model may report: positive and finite.
fn positive_finite(what: &str, x: f64) -> Check {
    check_finite(what, x)?;
    if x > 0.0 {
        Ok(())
    } else {
        fail(format!("Ok with non-positive {what} = {x}"))
    }
}

fn non_negative_finite(what: &str, x: f64) -> Check {
    check_finite(what, x)?;
    if x >= 0.0 {
        Ok(())
    } else {
        fail(format!("Ok with negative {what} = {x}"))
    }
}

/// Serializing and parsing again gives the same value (the parse runs the type's validation).
/// `serde_json`'s default float parser may land one ulp off, so numbers compare to 1e-15.
fn round_trip<T: Serialize + DeserializeOwned + std::fmt::Debug>(x: &T) -> Check {
    let json = serde_json::to_string(x).map_err(|e| format!("serialize: {e}"))?;
    let back: T =
        serde_json::from_str(&json).map_err(|e| format!("valid {x:?} does not parse: {e}"))?;
    let (a, b) = (to_json(x), to_json(&back));
    if json_close(&a, &b) {
        Ok(())
    } else {
        fail(format!("round trip changed {x:?} into {back:?}"))
    }
}

fn json_close(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_u64(), y.as_u64()) {
            (Some(x), Some(y)) => x == y,
            _ => {
                let (x, y) = (
                    x.as_f64().unwrap_or(f64::NAN),
                    y.as_f64().unwrap_or(f64::NAN),
                );
                x == y || (x - y).abs() <= 1e-15 * x.abs().max(y.abs())
            }
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_close(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_close(v, w)))
        }
        _ => a == b,
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile edits of valid values
// ---------------------------------------------------------------------------------------------

/// One field of a struct (by index, modulo its field count) set to a hostile integer or float,
/// whichever the field holds.
#[derive(Debug, Clone, Copy)]
struct Poke {
    field: usize,
    int: u64,
    float: f64,
}

fn poke() -> impl Strategy<Value = Poke> {
    (0_usize..64, u64_value(), f64_value()).prop_map(|(field, int, float)| Poke {
        field,
        int,
        float,
    })
}

/// No edit three times in four, else one or two.
fn pokes() -> impl Strategy<Value = Vec<Poke>> {
    prop_oneof![
        3 => Just(Vec::new()),
        1 => prop::collection::vec(poke(), 1..=2),
    ]
}

fn poke_model(m: &mut GptModel, k: Poke) {
    match k.field % 5 {
        0 => m.heads = k.int,
        1 => m.hidden = k.int,
        2 => m.layers = k.int,
        3 => m.seq_len = k.int,
        _ => m.vocab = k.int,
    }
}

fn poke_system(s: &mut SystemSpec, k: Poke) {
    match k.field % 6 {
        0 => s.hb_domain = k.int,
        1 => s.peak_flop_per_s = k.float,
        2 => s.hb_bytes_per_s = k.float,
        3 => s.network_bytes_per_s = k.float,
        4 => s.memory_bytes = k.float,
        _ => s.latency_s = k.float,
    }
}

fn poke_compute(c: &mut ComputeModel, k: Poke) {
    match k.field % 6 {
        0 => c.attention_slowdown = k.float,
        1 => c.gemm_efficiency = k.float,
        2 => c.half_efficiency_hidden = k.float,
        3 => c.bytes_per_param = k.float,
        4 => c.recompute = recompute(k.int),
        _ => {
            c.attention_scope = if k.int % 2 == 0 {
                AttentionScope::Block
            } else {
                AttentionScope::Scores
            }
        }
    }
}

fn poke_par(p: &mut Parallelization, k: Poke) {
    match k.field % 9 {
        0 => p.tp = k.int,
        1 => p.pp = k.int,
        2 => p.dp = k.int,
        3 => p.tp_hb = k.int,
        4 => p.pp_hb = k.int,
        5 => p.dp_hb = k.int,
        6 => p.micro_batch = k.int,
        7 => p.global_batch = k.int,
        _ => p.interleave = k.int,
    }
}

fn recompute(i: u64) -> Recompute {
    [Recompute::None, Recompute::Selective, Recompute::Full][(i % 3) as usize]
}

/// A small valid GPT model (heads divide hidden), then the edits.
fn model() -> impl Strategy<Value = GptModel> {
    (
        0_u32..4,
        0_u32..5,
        1_u64..=12,
        2_u32..7,
        1_u64..2000,
        pokes(),
    )
        .prop_map(|(a, h, layers, s, vocab, edits)| {
            let heads = 1 << a;
            let mut m = GptModel {
                heads,
                hidden: heads << h,
                layers,
                seq_len: 1 << s,
                vocab,
            };
            edits.into_iter().for_each(|k| poke_model(&mut m, k));
            m
        })
}

/// A preset system with HB domains of 1, 2, 4, 8 or 256 GPUs, then the edits.
fn system() -> impl Strategy<Value = SystemSpec> {
    (
        0_usize..SYSTEM_PRESET_NAMES.len(),
        prop::sample::select(vec![1_u64, 2, 4, 8, 8, 256]),
        pokes(),
    )
        .prop_map(|(i, k, edits)| {
            let mut s = system_preset(SYSTEM_PRESET_NAMES[i]).unwrap();
            s.hb_domain = k;
            edits.into_iter().for_each(|e| poke_system(&mut s, e));
            s
        })
}

fn compute() -> impl Strategy<Value = ComputeModel> {
    (any::<bool>(), pokes()).prop_map(|(calibrated, edits)| {
        let mut c = if calibrated {
            ComputeModel::calibrated()
        } else {
            ComputeModel::paper()
        };
        edits.into_iter().for_each(|e| poke_compute(&mut c, e));
        c
    })
}

/// A divisor of `n` up to 64, picked by `index` (never enumerates a huge `n`).
fn pick_divisor(n: u64, index: usize) -> u64 {
    let ds: Vec<u64> = (1..=64).filter(|&x| n % x == 0).collect();
    ds.get(index % ds.len().max(1)).copied().unwrap_or(1)
}

/// Choices that build a parallelization satisfying Eq. 11–18 for a (valid) model, then edits
/// of its fields, the GPU count (field 9) and the HB-domain size (field 10).
#[derive(Debug, Clone)]
struct ParChoice {
    t: usize,
    p: usize,
    d: u64,
    b: u64,
    m: u64,
    v: usize,
    k: usize,
    edits: Vec<Poke>,
}

fn par_choice() -> impl Strategy<Value = ParChoice> {
    (
        (0_usize..8, 0_usize..8, 1_u64..=4),
        (1_u64..=4, 1_u64..=4, 0_usize..8, 0_usize..8),
        pokes(),
    )
        .prop_map(|((t, p, d), (b, m, v, k), edits)| ParChoice {
            t,
            p,
            d,
            b,
            m,
            v,
            k,
            edits,
        })
}

/// The configuration, its GPU count and HB-domain size.
fn build_par(model: &GptModel, c: &ParChoice) -> (Parallelization, u64, u64) {
    let t_max = gcd(gcd(model.hidden, model.seq_len), model.heads);
    let t = pick_divisor(t_max, c.t);
    let p = pick_divisor(model.layers, c.p);
    let v = if p > 1 {
        pick_divisor(model.layers / p.max(1), c.v)
    } else {
        1
    };
    let batch = c.d * c.b * c.m;
    let gpus = t.saturating_mul(p).saturating_mul(c.d);
    let k = pick_divisor(gpus, c.k);
    let mut par = Parallelization::with_default_mapping(t, p, c.d, c.b, batch, v, k).unwrap_or(
        Parallelization {
            tp: t,
            pp: p,
            dp: c.d,
            tp_hb: 1,
            pp_hb: 1,
            dp_hb: 1,
            micro_batch: c.b,
            global_batch: batch,
            interleave: v,
        },
    );
    let (mut gpus, mut k) = (gpus, k);
    for e in &c.edits {
        match e.field % 11 {
            9 => gpus = e.int,
            10 => k = e.int,
            _ => poke_par(&mut par, *e),
        }
    }
    (par, gpus, k)
}

// ---------------------------------------------------------------------------------------------
// Models, FLOPs, compute and systems
// ---------------------------------------------------------------------------------------------

#[test]
fn fuzz_models_and_flops() {
    let names = prop_oneof![
        3 => prop::sample::select(MODEL_PRESET_NAMES.to_vec()).prop_map(str::to_string),
        1 => "\\PC{0,12}",
    ];
    let strategy = (model(), f64_value(), 0_u64..3, names);
    run(
        "rail_network::model",
        strategy,
        |(model, batch, r, name)| -> Check {
            if let Ok(m) = model_preset(&name) {
                m.validate().map_err(|e| format!("preset {name}: {e}"))?;
                round_trip(&m)?;
            }
            // Always finite: counts below 2^64 bound both.
            check_finite("params_per_layer", model.params_per_layer())?;
            check_finite("parameters", model.parameters())?;
            let valid = model.validate().is_ok();
            let parsed = serde_json::from_value::<GptModel>(json!({
                "heads": model.heads, "hidden": model.hidden, "layers": model.layers,
                "seq_len": model.seq_len, "vocab": model.vocab,
            }));
            if parsed.is_ok() != valid {
                return fail(format!(
                    "serde accepts {model:?}: {}, validate: {valid}",
                    parsed.is_ok()
                ));
            }
            let recompute = recompute(r);
            if let Ok(f) = model_flops(&model, batch) {
                non_negative_finite("model FLOPs", f)?;
            }
            let split = flop_split(&model, batch, recompute);
            tally("rail_network::model", &split);
            if let Ok(split) = split {
                finite_json(&split)?;
                let total = split
                    .total_flop()
                    .map_err(|e| format!("flop_split Ok but total_flop {e}"))?;
                let hw = hardware_flops(&model, batch, recompute)
                    .map_err(|e| format!("flop_split Ok but hardware_flops {e}"))?;
                if total != hw {
                    return fail(format!("total {total} != hardware {hw}"));
                }
                for part in [
                    split.feed_forward_flop,
                    split.attention_projection_flop,
                    split.attention_score_flop,
                ] {
                    non_negative_finite("FLOP part", part)?;
                }
            }
            let hand = FlopSplit {
                feed_forward_flop: batch,
                attention_projection_flop: batch,
                attention_score_flop: 1.0,
            };
            if let Ok(total) = hand.total_flop() {
                check_finite("total_flop", total)?;
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_compute_and_systems() {
    let strategy = (
        compute(),
        system(),
        model(),
        f64_value(),
        u64_value(),
        "\\PC{0,10}",
    );
    run(
        "rail_network::compute+system",
        strategy,
        |(compute, system, model, peak, hidden, name)| -> Check {
            for c in [ComputeModel::paper(), ComputeModel::calibrated()] {
                c.validate().map_err(|e| e.to_string())?;
            }
            if let Ok(s) = system_preset(&name) {
                s.validate().map_err(|e| e.to_string())?;
            }
            let compute_ok = compute.validate().is_ok();
            if serde_json::to_value(compute)
                .ok()
                .and_then(|v| serde_json::from_value::<ComputeModel>(v).ok())
                .is_some()
                && !compute_ok
            {
                return fail(format!("an invalid compute model parses: {compute:?}"));
            }
            if compute_ok {
                round_trip(&compute)?;
            }
            let system_ok = system.validate().is_ok();
            if system_ok {
                round_trip(&system)?;
            } else if let Ok(v) = serde_json::to_value(system)
                && serde_json::from_value::<SystemSpec>(v).is_ok()
            {
                return fail(format!("an invalid system parses: {system:?}"));
            }
            for (p, h) in [(peak, hidden), (system.peak_flop_per_s, model.hidden)] {
                if let Ok(rate) = compute.effective_flop_per_s(p, h) {
                    positive_finite("effective FLOP/s", rate)?;
                    if rate > p {
                        return fail(format!("effective {rate} above peak {p}"));
                    }
                }
            }
            let weighted = compute.weighted_flops_per_sequence(&model);
            tally("rail_network::compute+system", &weighted);
            if let Ok((gemm, attention)) = weighted {
                positive_finite("GEMM FLOPs", gemm)?;
                positive_finite("attention FLOPs", attention)?;
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Parallelizations and memory
// ---------------------------------------------------------------------------------------------

fn check_eq_11_to_18(par: &Parallelization, model: &GptModel, gpus: u64, k: u64) -> Check {
    let product = par
        .tp
        .checked_mul(par.pp)
        .and_then(|x| x.checked_mul(par.dp));
    let hb = par
        .tp_hb
        .checked_mul(par.pp_hb)
        .and_then(|x| x.checked_mul(par.dp_hb));
    let divides = |a: u64, b: u64| b != 0 && a % b == 0;
    let ok = product == Some(gpus)
        && hb == Some(k)
        && divides(gpus, k)
        && divides(par.tp, par.tp_hb)
        && divides(par.pp, par.pp_hb)
        && divides(par.dp, par.dp_hb)
        && divides(par.global_batch, par.dp)
        && divides(par.global_batch / par.dp, par.micro_batch)
        && divides(model.layers, par.pp)
        && divides(model.layers / par.pp, par.interleave)
        && divides(model.hidden, par.tp)
        && divides(model.seq_len, par.tp)
        && divides(model.heads, par.tp);
    if ok {
        Ok(())
    } else {
        fail(format!(
            "Ok configuration {par:?} breaks Eq. 11-18 for N = {gpus}, K = {k}, {model:?}"
        ))
    }
}

#[test]
fn fuzz_parallelizations() {
    let degrees = (u64_value(), u64_value(), u64_value(), u64_value());
    let strategy = (
        model(),
        par_choice(),
        degrees,
        u64_value(),
        u64_value(),
        pokes(),
    );
    run(
        "rail_network::parallel",
        strategy,
        |(model, choice, (t, p, d, k), gpus_raw, b, expert_edits)| -> Check {
            let (par, gpus, hb) = build_par(&model, &choice);
            if let Ok(x) = Parallelization::with_default_mapping(t, p, d, b, b, 1, k) {
                round_trip(&x)?;
                if k % (x.tp_hb * x.dp_hb * x.pp_hb) != 0 {
                    return fail(format!("HB parts of {x:?} do not divide K = {k}"));
                }
            }
            if let Ok(dp) = Parallelization::data_parallel_degree(gpus_raw, t, p) {
                if t.checked_mul(p).and_then(|x| x.checked_mul(dp)) != Some(gpus_raw) {
                    return fail(format!("d = {dp} for N = {gpus_raw}, t = {t}, p = {p}"));
                }
            }
            // Accessors on any configuration, valid or not: integers, must not panic.
            let _ = (par.gpus(), par.micro_batches(), par.network_parts());
            let valid = par.validate(&model, gpus, hb);
            tally("rail_network::parallel", &valid);
            if valid.is_ok() {
                check_eq_11_to_18(&par, &model, gpus, hb)?;
                round_trip(&par)?;
                if par.gpus() != gpus || par.micro_batches() == 0 {
                    return fail(format!("accessors of {par:?}"));
                }
            }
            let mut expert = ExpertParallelism {
                ep: pick_divisor(par.dp, choice.k),
                esp: pick_divisor(par.tp, choice.t),
                moe_every: pick_divisor(model.layers / par.pp.max(1), choice.v),
                top_k: choice.b,
            };
            for e in &expert_edits {
                match e.field % 4 {
                    0 => expert.ep = e.int,
                    1 => expert.esp = e.int,
                    2 => expert.moe_every = e.int,
                    _ => expert.top_k = e.int,
                }
            }
            if expert.validate(&par, &model).is_ok() {
                round_trip(&expert)?;
                if par.dp % expert.ep != 0 || par.tp % expert.esp != 0 {
                    return fail(format!("{expert:?} accepted for {par:?}"));
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_memory() {
    let strategy = (
        model(),
        par_choice(),
        f64_value(),
        u64_value(),
        u64_value(),
        0_u64..3,
    );
    run(
        "rail_network::memory",
        strategy,
        |(model, choice, bytes_per_param, b, t, r)| -> Check {
            let (par, _, _) = build_par(&model, &choice);
            let recompute = recompute(r);
            if let Ok(bytes) = layer_activation_bytes(&model, b, t, recompute) {
                positive_finite("layer activation bytes", bytes)?;
            }
            for bpp in [bytes_per_param, 18.0] {
                let memory = memory_per_gpu(&model, &par, recompute, bpp);
                if bpp == bytes_per_param {
                    tally("rail_network::memory", &memory);
                }
                if let Ok(m) = memory {
                    finite_json(&m)?;
                    positive_finite("memory per GPU", m.total_bytes)?;
                    let sum = m.weights_and_optimizer_bytes + m.activation_bytes;
                    if sum != m.total_bytes {
                        return fail(format!("parts {sum} != total {}", m.total_bytes));
                    }
                }
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Iteration time, search and sweeps
// ---------------------------------------------------------------------------------------------

fn check_terms(t: &IterationTerms) -> Check {
    finite_json(t)?;
    positive_finite("iteration time", t.iteration_time_s)?;
    let parts = [
        t.microbatch_compute_s,
        t.bubble_compute_s,
        t.bubble_comm_s,
        t.last_stage_compute_s,
        t.last_stage_tp_comm_s,
        t.last_stage_pp_comm_s,
        t.sync_s,
        t.latency_s,
    ];
    for x in parts {
        non_negative_finite("iteration term", x)?;
    }
    let sum: f64 = parts[1..].iter().sum();
    if (sum - t.iteration_time_s).abs() > 1e-9 * t.iteration_time_s {
        return fail(format!("terms sum to {sum}, total {}", t.iteration_time_s));
    }
    Ok(())
}

#[test]
fn fuzz_iteration_time() {
    let strategy = (model(), system(), compute(), par_choice());
    run(
        "rail_network::iteration",
        strategy,
        |(model, mut system, compute, choice)| -> Check {
            let (par, gpus, k) = build_par(&model, &choice);
            // The system's HB domain is the configuration's, unless an edit changed it.
            if system.hb_domain != 256 || k == 256 {
                system.hb_domain = k;
            }
            let direct = iteration_time(&model, &system, &compute, &par);
            let Ok(im) = IterationModel::new(model, system, compute) else {
                return match direct {
                    Ok(_) => fail("iteration_time Ok on a model IterationModel::new refuses"),
                    Err(_) => Ok(()),
                };
            };
            if (im.model(), im.system(), im.compute()) != (&model, &system, &compute) {
                return fail("accessors do not return the inputs");
            }
            let evaluated = im.evaluate(&par);
            tally("rail_network::iteration", &evaluated);
            if evaluated != direct {
                return fail(format!(
                    "evaluate {evaluated:?} != iteration_time {direct:?}"
                ));
            }
            if let Ok(t) = &evaluated {
                check_terms(t)?;
                check_eq_11_to_18(&par, &model, par.gpus(), system.hb_domain)?;
            }
            if let Ok(c) = RankedConfig::evaluate(&im, gpus, par) {
                check_eq_11_to_18(&c.parallelization, &model, gpus, system.hb_domain)?;
                check_terms(&c.terms)?;
                finite_json(&c.memory)?;
                if Ok(c.terms) != evaluated {
                    return fail("RankedConfig terms differ from evaluate");
                }
                let fits = c.fits_in_memory(&system);
                if fits != (c.memory.total_bytes <= system.memory_bytes) {
                    return fail("fits_in_memory");
                }
            }
            Ok(())
        },
    );
}

/// What a search or sweep returns must satisfy: every configuration passes Eq. 11–18, fits in
/// memory, has a positive finite time equal to a fresh evaluation, and the list is sorted.
fn check_search(
    im: &IterationModel,
    gpus: u64,
    batch: u64,
    keep: usize,
    r: &SearchResult,
) -> Check {
    finite_json(r)?;
    let Some(first) = r.ranked.first() else {
        return fail("Ok search with an empty ranking");
    };
    if *first != r.best || r.ranked.len() > keep.max(1) || r.evaluated < r.ranked.len() as u64 {
        return fail(format!(
            "best/ranked/evaluated inconsistent: {} ranked, keep {keep}, {} evaluated",
            r.ranked.len(),
            r.evaluated
        ));
    }
    let k = im.system().hb_domain;
    for c in &r.ranked {
        c.parallelization
            .validate(im.model(), gpus, k)
            .map_err(|e| format!("ranked {:?} fails Eq. 11-18: {e}", c.parallelization))?;
        check_eq_11_to_18(&c.parallelization, im.model(), gpus, k)?;
        if c.parallelization.global_batch != batch {
            return fail("ranked configuration of another batch");
        }
        check_terms(&c.terms)?;
        if !c.fits_in_memory(im.system()) {
            return fail(format!(
                "ranked configuration needs {} bytes",
                c.memory.total_bytes
            ));
        }
        let again = RankedConfig::evaluate(im, gpus, c.parallelization)
            .map_err(|e| format!("ranked configuration does not evaluate: {e}"))?;
        if again != *c {
            return fail("ranked configuration differs from its evaluation");
        }
    }
    for w in r.ranked.windows(2) {
        if w[0].terms.iteration_time_s > w[1].terms.iteration_time_s {
            return fail("ranking not sorted by time");
        }
    }
    Ok(())
}

fn keep() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 0_usize..12, 1 => Just(usize::MAX)]
}

fn cap() -> impl Strategy<Value = u64> {
    prop_oneof![2 => Just(0_u64), 1 => 1_u64..8, 1 => u64_value()]
}

/// A count for a search: usually `K` times a small factor (so `K` divides it), else hostile.
fn search_count() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![3 => Just(None), 1 => u64_value().prop_map(Some)]
}

#[test]
fn fuzz_search() {
    let strategy = (
        (model(), system(), compute()),
        (1_u64..=8, search_count(), 1_u64..=8, search_count()),
        (keep(), cap(), cap(), any::<bool>()),
    );
    run(
        "rail_network::search",
        strategy,
        |((model, system, compute), (n, gpus, b, batch), (keep, max_b, max_v, progress))| {
            let Ok(im) = IterationModel::new(model, system, compute) else {
                return Ok(());
            };
            let gpus = gpus.unwrap_or(system.hb_domain.saturating_mul(n));
            // A multiple of the GPU count leaves every data-parallel degree a valid batch.
            let batch = batch.unwrap_or(gpus.saturating_mul(b));
            let options = SearchOptions {
                keep,
                max_micro_batch: max_b,
                max_interleave: max_v,
            };
            let calls = AtomicU64::new(0);
            let result = if progress {
                search_with_progress(&im, gpus, batch, &options, &|done, total| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    assert!(done <= total, "progress {done} of {total}");
                })
            } else {
                search(&im, gpus, batch, &options)
            };
            tally("rail_network::search", &result);
            match result {
                Ok(r) => {
                    check_search(&im, gpus, batch, keep, &r)?;
                    if progress && calls.load(Ordering::Relaxed) != r.shapes {
                        return fail("progress not called once per shape");
                    }
                    Ok(())
                }
                Err(_) => Ok(()),
            }
        },
    );
}

fn check_sweep_point(model: &GptModel, p: &SweepPoint) -> Check {
    finite_json(p)?;
    positive_finite("sweep iteration time", p.iteration_time_s)?;
    positive_finite("sweep ideal time", p.ideal_time_s)?;
    non_negative_finite("relative performance", p.relative_performance)?;
    check_eq_11_to_18(&p.best, model, p.gpus, p.hb_domain)
}

fn short_list<S: Strategy>(element: S) -> impl Strategy<Value = Vec<S::Value>> {
    vec_of(element, 2)
}

#[test]
fn fuzz_sweeps() {
    let k = prop_oneof![3 => prop::sample::select(vec![1_u64, 2, 4, 8]), 1 => u64_value()];
    let bandwidth = prop_oneof![2 => 1e9_f64..1e12, 1 => f64_value()];
    let strategy = (
        (model(), system(), compute()),
        (1_u64..=4, 1_u64..=4, 0_u8..5),
        (short_list(k.clone()), short_list(1_u64..=32)),
        (short_list(bandwidth.clone()), short_list(bandwidth)),
        (vec_of(k, 3), u64_value(), f64_value(), f64_value()),
    );
    run(
        "rail_network::sweeps",
        strategy,
        |((model, system, compute), (n, batch, which), (ks, batches), (hbs, nets), a2a)| {
            let gpus = system.hb_domain.saturating_mul(n);
            let batch = gpus.saturating_mul(batch);
            let points = match which {
                0 => sweep_point(&model, &system, &compute, gpus, batch).map(|p| vec![p]),
                1 => hb_domain_sweep(&model, &system, &compute, gpus, batch, &ks),
                2 => bandwidth_sweep(&model, &system, &compute, gpus, batch, &hbs, &nets),
                3 => batch_sweep(&model, &system, &compute, gpus, &ks, &batches),
                _ => {
                    let (xs, domains, hb, net) = a2a;
                    let points = all_to_all_slowdown_sweep(&xs, domains, hb, net);
                    tally("rail_network::sweeps", &points);
                    if let Ok(points) = points {
                        finite_json(&points)?;
                        if points.len() != xs.len() {
                            return fail("one all-to-all point per HB-domain size");
                        }
                    }
                    return Ok(());
                }
            };
            tally("rail_network::sweeps", &points);
            if let Ok(points) = points {
                for p in &points {
                    check_sweep_point(&model, p)?;
                }
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Rank mapping and job traffic
// ---------------------------------------------------------------------------------------------

/// A traffic matrix is square (both GPUs below `N`, never equal), sorted without repeats, with
/// finite non-negative bytes; `validate` agrees; the summary adds up.
fn check_traffic(t: &JobTraffic) -> Check {
    t.validate()
        .map_err(|e| format!("job_traffic output invalid: {e}"))?;
    finite_json(t)?;
    let mut previous = None;
    for e in &t.entries {
        if e.src >= t.gpus || e.dst >= t.gpus || e.src == e.dst {
            return fail(format!(
                "entry {} -> {} outside the {} x {} matrix",
                e.src, e.dst, t.gpus, t.gpus
            ));
        }
        if previous >= Some((e.src, e.dst)) {
            return fail("entries not sorted");
        }
        previous = Some((e.src, e.dst));
        for &b in &e.bytes {
            non_negative_finite("traffic bytes", b)?;
        }
        if t.get(e.src, e.dst) != Some(e) {
            return fail("get does not find an entry");
        }
    }
    let s = t
        .summary()
        .map_err(|e| format!("valid traffic has no summary: {e}"))?;
    check_summary(t, &s)?;
    round_trip(t)
}

fn check_summary(t: &JobTraffic, s: &TrafficSummary) -> Check {
    finite_json(s)?;
    let total = s.hb_bytes + s.network_bytes;
    if (total - s.total_bytes).abs() > 1e-9 * s.total_bytes
        || s.cross_rail_network_bytes > s.network_bytes
        || !(0.0..=1.0).contains(&s.idle_pair_fraction)
        || s.busy_pairs != t.entries.len() as u64
        || s.by_kind.len() != TrafficKind::ALL.len()
    {
        return fail(format!("summary does not add up: {s:?}"));
    }
    let shares: f64 = s.by_kind.iter().map(|k: &KindShare| k.share).sum();
    if s.total_bytes > 0.0 && (shares - 1.0).abs() > 1e-9 {
        return fail(format!("shares sum to {shares}"));
    }
    Ok(())
}

/// Each family of groups covers every GPU of the job exactly once.
fn check_partition(what: &str, groups: &[Vec<u64>], gpus: u64) -> Check {
    let mut seen = BTreeSet::new();
    for &g in groups.iter().flatten() {
        if g >= gpus || !seen.insert(g) {
            return fail(format!("{what} groups repeat or leave the job: GPU {g}"));
        }
    }
    if seen.len() as u64 != gpus {
        return fail(format!("{what} groups cover {} of {gpus} GPUs", seen.len()));
    }
    Ok(())
}

fn check_mapping(map: &RankMapping, probes: &[u64]) -> Check {
    let n = map.gpus();
    let c = *map.parallelization();
    check_partition("tensor", &map.tensor_groups(), n)?;
    check_partition("data", &map.data_groups(), n)?;
    check_partition("pipeline", &map.pipeline_groups(), n)?;
    let mut placed = BTreeSet::new();
    for t in 0..c.tp {
        for d in 0..c.dp {
            for p in 0..c.pp {
                let g = map
                    .gpu(t, d, p)
                    .ok_or_else(|| format!("rank ({t}, {d}, {p}) has no GPU"))?;
                placed.insert(g);
            }
        }
    }
    if placed.len() as u64 != n || placed.last().is_some_and(|&g| g >= n) {
        return fail("ranks do not map one-to-one onto the GPUs");
    }
    for &g in probes {
        let inside = g < n;
        if map.domain_of(g).is_some() != inside || map.rail_of(g).is_some() != inside {
            return fail(format!("domain_of/rail_of of GPU {g} in a job of {n}"));
        }
        if inside && map.domain_of(g) != Some(g / map.hb_domain()) {
            return fail("domain_of");
        }
        let _ = map.gpu(g, g, g);
    }
    if let Some(e) = map.experts() {
        check_partition("expert", &map.expert_groups(), n)?;
        check_partition("esp", &map.esp_groups(), n)?;
        let placement: ExpertPlacement = map
            .expert_placement()
            .ok_or("experts without a placement")?;
        let case = match (
            placement.moe_block_in_one_domain,
            placement.esp_in_one_domain,
            placement.ep_in_one_domain,
        ) {
            (true, _, _) => 1,
            (_, true, _) => 2,
            (_, _, true) => 3,
            _ => 4,
        };
        if placement.case != case || e.ep == 0 {
            return fail(format!("placement {placement:?}"));
        }
    } else if map.expert_placement().is_some() || !map.expert_groups().is_empty() {
        return fail("expert groups without experts");
    }
    round_trip(map)
}

#[test]
fn fuzz_mapping_and_traffic() {
    let strategy = (
        model(),
        par_choice(),
        pokes(),
        1_u64..=4,
        vec_of(u64_value(), 4),
    );
    run(
        "rail_network::mapping+traffic",
        strategy,
        |(model, choice, expert_edits, top_k, probes)| -> Check {
            let (par, gpus, k) = build_par(&model, &choice);
            let map = RankMapping::new(&model, &par, gpus, k);
            tally("rail_network::mapping+traffic", &map);
            let Ok(map) = map else {
                return Ok(());
            };
            check_eq_11_to_18(&par, &model, gpus, k)?;
            if (
                map.gpus(),
                map.hb_domain(),
                map.model(),
                map.parallelization(),
            ) != (gpus, k, &model, &par)
            {
                return fail("mapping accessors");
            }
            check_mapping(&map, &probes)?;
            let mut expert = ExpertParallelism {
                ep: pick_divisor(par.dp, choice.k),
                esp: pick_divisor(par.tp, choice.t),
                moe_every: pick_divisor(model.layers / par.pp, choice.v),
                top_k,
            };
            for e in &expert_edits {
                match e.field % 4 {
                    0 => expert.ep = e.int,
                    1 => expert.esp = e.int,
                    2 => expert.moe_every = e.int,
                    _ => expert.top_k = e.int,
                }
            }
            let maps = match map.clone().with_experts(expert) {
                Ok(with) => {
                    check_mapping(&with, &probes)?;
                    vec![map, with]
                }
                Err(_) => vec![map],
            };
            for m in &maps {
                for algorithm in [CollectiveAlgorithm::Ring, CollectiveAlgorithm::Hierarchical] {
                    check_traffic(&job_traffic(m, algorithm))?;
                }
            }
            Ok(())
        },
    );
}

/// Traffic matrices built by hand: `validate`, `summary`, `get`, `total_bytes` and serde.
#[test]
fn fuzz_traffic_matrices() {
    let entry = (
        prop_oneof![3 => 0_u64..6, 1 => u64_value()],
        prop_oneof![3 => 0_u64..6, 1 => u64_value()],
        prop::array::uniform7(prop_oneof![3 => 0.0_f64..1e6, 1 => f64_value()]),
    );
    let strategy = (
        prop_oneof![3 => 1_u64..=6, 1 => u64_value()],
        prop_oneof![3 => 1_u64..=3, 1 => u64_value()],
        vec_of(entry, 8),
        prop::bool::weighted(0.75),
    );
    run(
        "rail_network::traffic::JobTraffic",
        strategy,
        |(gpus, k, raw, tidy)| -> Check {
            let mut entries: Vec<PairTraffic> = raw
                .into_iter()
                .map(|(src, dst, bytes)| PairTraffic { src, dst, bytes })
                .collect();
            if tidy {
                // Most matrices are well formed, so summaries of hostile bytes are reached:
                // GPUs in range and distinct, K dividing N, entries sorted, some byte positive.
                let n = gpus.max(2);
                for e in &mut entries {
                    e.src %= n;
                    e.dst = (e.src + 1 + e.dst % (n - 1)) % n;
                    e.bytes[0] = e.bytes[0].abs().max(1.0);
                }
                entries.sort_by_key(|e| (e.src, e.dst));
                entries.dedup_by_key(|e| (e.src, e.dst));
            }
            let (gpus, k) = if tidy && gpus >= 2 && gpus % k.max(1) == 0 {
                (gpus, k)
            } else if tidy {
                (gpus.max(2), 1)
            } else {
                (gpus, k)
            };
            for e in &entries {
                if let Ok(total) = e.total_bytes() {
                    check_finite("pair total", total)?;
                }
                let _ = serde_json::from_value::<PairTraffic>(
                    serde_json::to_value(e).unwrap_or_default(),
                );
            }
            let traffic = JobTraffic {
                gpus,
                hb_domain: k,
                entries,
            };
            let valid = traffic.validate();
            tally("rail_network::traffic::JobTraffic", &valid);
            let valid = valid.is_ok();
            match traffic.summary() {
                Ok(s) if valid => check_summary(&traffic, &s)?,
                Ok(_) => return fail("summary Ok on an invalid matrix"),
                Err(_) => {}
            }
            let parsed = serde_json::to_value(&traffic)
                .ok()
                .and_then(|v| serde_json::from_value::<JobTraffic>(v).ok());
            if parsed.is_some() && !valid {
                return fail("an invalid matrix parses");
            }
            if valid {
                check_traffic(&traffic).or_else(|e| {
                    // A hand-built matrix may still overflow its total: a typed error is fine.
                    if traffic.summary().is_err() {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })?;
            }
            for e in &traffic.entries {
                let _ = traffic.get(e.src, e.dst);
            }
            let _ = traffic.get(u64::MAX, 0);
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Fabrics, fabric graphs and failures
// ---------------------------------------------------------------------------------------------

/// A cluster: usually `K` times a small domain count on an even radix, else hostile counts.
fn fabric_params() -> impl Strategy<Value = FabricParams> {
    let k = prop_oneof![3 => prop::sample::select(vec![1_u64, 2, 4, 8, 16]), 1 => u64_value()];
    let domains = prop_oneof![3 => 1_u64..=32, 1 => u64_value()];
    let radix = prop_oneof![
        3 => prop::sample::select(vec![4_u64, 8, 16, 64]),
        1 => Just(2_u64),
        1 => u64_value(),
    ];
    (k, domains, radix)
        .prop_map(|(k, domains, radix)| FabricParams::new(k.saturating_mul(domains), k, radix))
}

fn check_counts(c: &FabricCounts, gpus: u64, radix: u64) -> Check {
    finite_json(c)?;
    non_negative_finite("fabric cost", c.cost_usd)?;
    let t = u64::from(c.tiers);
    let ports = (2 * t).saturating_sub(1).checked_mul(gpus);
    if c.transceivers != 2 * c.links
        || Some(c.switch_ports) != ports
        || c.links != t * gpus
        || c.switches != c.switch_ports.div_ceil(radix)
    {
        return fail(format!("counts do not add up: {c:?}"));
    }
    Ok(())
}

#[test]
fn fuzz_fabrics() {
    let prices = (f64_value(), f64_value()).prop_map(|(t, s)| PriceModel {
        transceiver_usd: t,
        switch_port_usd: s,
    });
    let strategy = (fabric_params(), prices, u64_value(), u64_value());
    run(
        "rail_network::fabric",
        strategy,
        |(params, prices, endpoints, radix)| -> Check {
            if let Ok(tiers) = clos_tiers(endpoints, radix) {
                // 2 (k/2)^T endpoints fit in T tiers, and T - 1 would not suffice.
                let reach = |t: u32| {
                    (0..t).fold(if t == 0 { 1 } else { 2 }, |acc: u64, _| {
                        acc.saturating_mul(radix / 2)
                    })
                };
                let fits = endpoints <= 1 || endpoints <= reach(tiers);
                let minimal = tiers == 0 || endpoints > reach(tiers - 1).max(1);
                if !fits || !minimal {
                    return fail(format!("clos_tiers({endpoints}, {radix}) = {tiers}"));
                }
            }
            let params_ok = params.validate().is_ok();
            let prices_ok = prices.validate().is_ok();
            if params_ok {
                round_trip(&params)?;
                let _ = params.domains();
            }
            if prices_ok {
                round_trip(&prices)?;
            }
            let parsed = serde_json::to_value(params)
                .ok()
                .and_then(|v| serde_json::from_value::<FabricParams>(v).ok());
            if parsed.is_some() != params_ok {
                return fail("FabricParams serde disagrees with validate");
            }
            if let Ok(c) = rail_optimized_fabric(&params, &prices) {
                check_counts(&c, params.gpus, params.radix)?;
            }
            if let Ok(c) = rail_only_fabric(&params, &prices) {
                check_counts(&c, params.gpus, params.radix)?;
            }
            let compared = compare_fabrics(&params, &prices);
            tally("rail_network::fabric", &compared);
            if let Ok(c) = compared {
                let c: FabricComparison = c;
                finite_json(&c)?;
                check_finite("cost reduction", c.cost_reduction)?;
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_fabric_graphs() {
    let small = (
        prop::sample::select(vec![1_u64, 2, 4, 8]),
        1_u64..=16,
        prop::sample::select(vec![2_u64, 4, 8, 16]),
    )
        .prop_map(|(k, d, r)| FabricParams::new(k * d, k, r));
    let params = prop_oneof![4 => small, 1 => fabric_params()];
    let node = (
        prop_oneof![3 => 0_u64..16, 1 => u64_value()],
        prop_oneof![3 => 0_u64..8, 1 => u64_value()],
    );
    let strategy = (params, any::<bool>(), vec_of((node.clone(), node), 3));
    run(
        "rail_network::fabric_graph",
        strategy,
        |(params, rail_only, routes)| -> Check {
            let kind = if rail_only {
                FabricKind::RailOnly
            } else {
                FabricKind::RailOptimized
            };
            let g = FabricGraph::build(kind, params);
            tally("rail_network::fabric_graph", &g);
            let Ok(g) = g else {
                return Ok(());
            };
            if g.kind() != kind || *g.params() != params {
                return fail("graph accessors");
            }
            let prices = PriceModel::default();
            let f = match kind {
                FabricKind::RailOnly => rail_only_fabric(&params, &prices),
                FabricKind::RailOptimized => rail_optimized_fabric(&params, &prices),
            }
            .map_err(|e| format!("graph built but counts fail: {e}"))?;
            if g.network_links() != f.links
                || g.transceivers() != f.transceivers
                || g.network_switches() != f.dedicated_switches
                || g.max_switch_degree() > params.radix
            {
                return fail(format!("graph of {params:?} disagrees with {f:?}"));
            }
            if petgraph::algo::connected_components(g.graph()) != 1 {
                return fail(format!("graph of {params:?} is not connected"));
            }
            let hb_links = g
                .graph()
                .edge_weights()
                .filter(|w| **w == LinkKind::HbDomain)
                .count() as u64;
            if hb_links != params.gpus {
                return fail("one HB link per GPU");
            }
            for (src, dst) in routes {
                let _ = g.gpu(src.0, src.1);
                if let Ok(path) = g.route(src, dst) {
                    let gpu = |(domain, rank): (u64, u64)| FabricNode::Gpu { domain, rank };
                    if path.first() != Some(&gpu(src)) || path.last() != Some(&gpu(dst)) {
                        return fail(format!("route {src:?} -> {dst:?}: {path:?}"));
                    }
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_failures() {
    let tier = prop_oneof![4 => 0_u32..3, 1 => any::<u32>()];
    let failure = prop_oneof![
        tier.clone().prop_map(|tier| Failure::Link { tier }),
        tier.prop_map(|tier| Failure::Switch { tier }),
        any::<bool>().prop_map(|idle_in_domain| Failure::Gpu { idle_in_domain }),
        Just(Failure::Server),
    ];
    let ctx = (
        prop_oneof![3 => 1_u64..=16, 1 => u64_value()],
        any::<bool>(),
    )
        .prop_map(
            |(gpus_per_server, optical_reconfiguration)| FailureContext {
                gpus_per_server,
                optical_reconfiguration,
            },
        );
    let strategy = (fabric_params(), failure, ctx, any::<bool>());
    run(
        "rail_network::failures",
        strategy,
        |(params, failure, ctx, rail_only)| -> Check {
            let kind = if rail_only {
                FabricKind::RailOnly
            } else {
                FabricKind::RailOptimized
            };
            if ctx.validate().is_ok() {
                round_trip(&ctx)?;
            }
            round_trip(&failure)?;
            let impact = failure_impact(kind, &params, failure, &ctx);
            tally("rail_network::failures", &impact);
            if let Ok(i) = impact {
                let i: FailureImpact = i;
                finite_json(&i)?;
                if !(0.0..=1.0).contains(&i.capacity_lost) || i.kind != kind {
                    return fail(format!("impact {i:?}"));
                }
                if i.gpus_cut_off > 0 && i.spare_gpus_needed < i.domains_affected.min(1) {
                    return fail(format!("impact {i:?}"));
                }
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Accuracy and calibration
// ---------------------------------------------------------------------------------------------

fn poke_run(r: &mut PublishedRun, k: Poke) {
    match k.field % 6 {
        0 => r.measured_s = k.float,
        1 => r.paper_computed_s = Some(k.float),
        2 => r.paper_computed_s = None,
        3 => poke_model(&mut r.model, k),
        4 => poke_par(&mut r.parallelization, k),
        _ => r.recompute = recompute(k.int),
    }
}

fn runs() -> &'static [PublishedRun] {
    static RUNS: OnceLock<Vec<PublishedRun>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let mut runs = published_runs().unwrap();
        runs.extend(held_out_runs().unwrap());
        runs
    })
}

fn check_rows(runs: &[PublishedRun], rows: &[AccuracyRow]) -> Check {
    finite_json(&rows)?;
    if rows.len() != runs.len() {
        return fail("one row per run");
    }
    for (r, row) in runs.iter().zip(rows) {
        positive_finite("predicted time", row.predicted_s)?;
        let expected = row.predicted_s / r.measured_s - 1.0;
        if row.error_vs_measured != expected || row.measured_s != r.measured_s {
            return fail(format!("row {row:?} of run {r:?}"));
        }
    }
    let mae = mean_absolute_error(rows).map_err(|e| format!("finite rows, no mean: {e}"))?;
    non_negative_finite("mean absolute error", mae)
}

fn check_fitted(base: &ComputeModel, fitted: &ComputeModel) -> Check {
    fitted
        .validate()
        .map_err(|e| format!("calibrated model invalid: {e}"))?;
    let in_box = (0.3..=1.0).contains(&fitted.gemm_efficiency)
        && (1.0..=4.0).contains(&fitted.attention_slowdown)
        && (0.0..=20000.0).contains(&fitted.half_efficiency_hidden);
    if !in_box || fitted.bytes_per_param != base.bytes_per_param {
        return fail(format!("calibration left its box: {fitted:?}"));
    }
    Ok(())
}

#[test]
fn fuzz_accuracy() {
    let picks = vec_of((0_usize..64, pokes()), 5);
    let rows = vec_of(f64_value(), 4);
    let strategy = (0_u8..8, picks, system(), compute(), rows);
    run(
        "rail_network::accuracy",
        strategy,
        |(which, picks, mut system, compute, errors)| -> Check {
            // The published runs are DGX A100 runs (K = 8), unless an edit says otherwise.
            if system.hb_domain != 256 {
                system.hb_domain = 8;
            }
            let chosen: Vec<PublishedRun> = picks
                .iter()
                .map(|(i, edits)| {
                    let mut r = runs()[i % runs().len()].clone();
                    edits.iter().for_each(|&k| poke_run(&mut r, k));
                    r
                })
                .collect();
            for r in &chosen {
                if r.validate().is_ok() {
                    round_trip(r)?;
                } else if let Ok(v) = serde_json::to_value(r)
                    && let Ok(parsed) = serde_json::from_value::<PublishedRun>(v)
                    && parsed.validate().is_err()
                {
                    // JSON writes an infinite `paper_computed_s` as `null` (None): the parse
                    // may be valid, but never invalid.
                    return fail(format!("an invalid run parses: {parsed:?}"));
                }
            }
            match which {
                0 => {
                    let sets = [
                        table4_runs(),
                        held_out_runs(),
                        megatron_runs(),
                        published_runs(),
                    ];
                    tally("rail_network::accuracy", &sets[0]);
                    for set in sets {
                        for r in set.map_err(|e| format!("published runs: {e}"))? {
                            r.validate().map_err(|e| e.to_string())?;
                            round_trip(&r)?;
                        }
                    }
                }
                1 | 2 => {
                    let first = chosen.first().map(|r| predict(r, &system, &compute));
                    tally(
                        "rail_network::accuracy",
                        &first.unwrap_or(Err(RailNetworkError::UnknownPreset {
                            kind: "run",
                            name: String::new(),
                            known: String::new(),
                        })),
                    );
                    for r in &chosen {
                        if let Ok(t) = predict(r, &system, &compute) {
                            positive_finite("predicted time", t)?;
                        }
                    }
                }
                3 | 4 => {
                    let rows = accuracy_table(&chosen, &system, &compute);
                    tally("rail_network::accuracy", &rows);
                    if let Ok(rows) = rows {
                        check_rows(&chosen, &rows)?;
                    }
                }
                5 => {
                    let rows: Vec<AccuracyRow> = errors
                        .iter()
                        .map(|&e| AccuracyRow {
                            label: String::new(),
                            measured_s: 1.0,
                            paper_computed_s: None,
                            predicted_s: 1.0,
                            error_vs_measured: e,
                            error_vs_paper: None,
                        })
                        .collect();
                    let mae = mean_absolute_error(&rows);
                    tally("rail_network::accuracy", &mae);
                    if let Ok(mae) = mae {
                        non_negative_finite("mean absolute error", mae)?;
                    }
                }
                6 => {
                    let fitted = calibrate(&chosen, &system, &compute);
                    tally("rail_network::accuracy", &fitted);
                    if let Ok(fitted) = fitted {
                        check_fitted(&compute, &fitted)?;
                    }
                }
                _ => {
                    let rows = leave_one_out(&chosen, &system, &compute);
                    tally("rail_network::accuracy", &rows);
                    if let Ok(rows) = rows {
                        let rows: Vec<LeaveOneOutRow> = rows;
                        finite_json(&rows)?;
                        if rows.len() != chosen.len() {
                            return fail("one leave-one-out row per run");
                        }
                        for row in &rows {
                            positive_finite("held-out prediction", row.predicted_s)?;
                            check_fitted(&compute, &row.fitted)?;
                        }
                    }
                }
            }
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Deserialization of every public type
// ---------------------------------------------------------------------------------------------

/// JSON values at the edges (JSON has no NaN or infinities; `null`, a string and an array
/// stand in for wrong types).
fn json_extremes() -> Vec<Value> {
    vec![
        json!(0),
        json!(-0.0),
        json!(1),
        json!(2),
        json!(-1),
        json!(0.5),
        json!(5e-324),
        json!(1e-300),
        json!(1e308),
        json!(f64::MAX),
        json!(-f64::MAX),
        json!(9_007_199_254_740_993_u64),
        json!(1_u64 << 32),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(100_000),
        Value::Null,
        json!("x"),
        json!([]),
    ]
}

/// A valid value of every public `Deserialize` type, as JSON, with the check its parse must pass.
struct Template {
    name: &'static str,
    json: Value,
    parse: fn(Value) -> Check,
}

/// Parses `v` as `T`; an `Ok` must be finite and pass `valid`.
fn parse_as<T: DeserializeOwned + Serialize>(v: Value, valid: fn(&T) -> Check) -> Check {
    let parsed = serde_json::from_value::<T>(v);
    tally("rail_network::serde", &parsed);
    match parsed {
        Ok(x) => {
            finite_json(&x)?;
            valid(&x)
        }
        Err(_) => Ok(()),
    }
}

fn no_check<T>(_: &T) -> Check {
    Ok(())
}

fn templates() -> &'static [Template] {
    static T: OnceLock<Vec<Template>> = OnceLock::new();
    T.get_or_init(build_templates)
}

fn to_json<T: Serialize>(x: &T) -> Value {
    serde_json::to_value(x).unwrap()
}

fn build_templates() -> Vec<Template> {
    let model = GptModel {
        heads: 8,
        hidden: 64,
        layers: 4,
        seq_len: 32,
        vocab: 1000,
    };
    let par = Parallelization::with_default_mapping(2, 2, 2, 1, 4, 2, 4).unwrap();
    let expert = ExpertParallelism {
        ep: 2,
        esp: 2,
        moe_every: 1,
        top_k: 1,
    };
    let map = RankMapping::new(&model, &par, 8, 4)
        .unwrap()
        .with_experts(expert)
        .unwrap();
    let traffic = job_traffic(&map, CollectiveAlgorithm::Hierarchical);
    let system = system_preset("dgx-a100").unwrap();
    let im = IterationModel::new(model, system, ComputeModel::paper()).unwrap();
    let found = search(&im, 8, 8, &SearchOptions::default()).unwrap();
    let params = FabricParams::new(64, 8, 8);
    let ctx = FailureContext {
        gpus_per_server: 8,
        optical_reconfiguration: false,
    };
    let run = table4_runs().unwrap().remove(1);
    let rows = accuracy_table(std::slice::from_ref(&run), &system, &ComputeModel::paper()).unwrap();
    let t = |name, json, parse| Template { name, json, parse };
    vec![
        t("GptModel", to_json(&model), |v| {
            parse_as::<GptModel>(v, |m| m.validate().map_err(|e| e.to_string()))
        }),
        t("ComputeModel", to_json(&ComputeModel::paper()), |v| {
            parse_as::<ComputeModel>(v, |c| c.validate().map_err(|e| e.to_string()))
        }),
        t("SystemSpec", to_json(&system), |v| {
            parse_as::<SystemSpec>(v, |s| s.validate().map_err(|e| e.to_string()))
        }),
        t("Parallelization", to_json(&par), |v| {
            parse_as::<Parallelization>(v, |p| {
                let counts = [p.tp, p.pp, p.dp, p.tp_hb, p.pp_hb, p.dp_hb, p.micro_batch];
                let rest = [p.global_batch, p.interleave];
                let parts = p.tp % p.tp_hb == 0 && p.pp % p.pp_hb == 0 && p.dp % p.dp_hb == 0;
                if counts.iter().chain(&rest).all(|&x| x >= 1) && parts {
                    round_trip(p)
                } else {
                    fail(format!("invalid configuration parses: {p:?}"))
                }
            })
        }),
        t("ExpertParallelism", to_json(&expert), |v| {
            parse_as::<ExpertParallelism>(v, |e| {
                if [e.ep, e.esp, e.moe_every, e.top_k].iter().all(|&x| x >= 1) {
                    Ok(())
                } else {
                    fail(format!("zero count parses: {e:?}"))
                }
            })
        }),
        t("PriceModel", to_json(&PriceModel::default()), |v| {
            parse_as::<PriceModel>(v, |p| p.validate().map_err(|e| e.to_string()))
        }),
        t("FabricParams", to_json(&params), |v| {
            parse_as::<FabricParams>(v, |p| p.validate().map_err(|e| e.to_string()))
        }),
        t("FailureContext", to_json(&ctx), |v| {
            parse_as::<FailureContext>(v, |c| c.validate().map_err(|e| e.to_string()))
        }),
        t("Failure", to_json(&Failure::Link { tier: 1 }), |v| {
            parse_as::<Failure>(v, no_check)
        }),
        t("SearchOptions", to_json(&SearchOptions::default()), |v| {
            parse_as::<SearchOptions>(v, no_check)
        }),
        t("PublishedRun", to_json(&run), |v| {
            parse_as::<PublishedRun>(v, |r| r.validate().map_err(|e| e.to_string()))
        }),
        t("RankMapping", to_json(&map), |v| {
            parse_as::<RankMapping>(v, |m| {
                let again =
                    RankMapping::new(m.model(), m.parallelization(), m.gpus(), m.hb_domain())
                        .and_then(|x| match m.experts() {
                            Some(&e) => x.with_experts(e),
                            None => Ok(x),
                        })
                        .map_err(|e| format!("parsed mapping does not rebuild: {e}"))?;
                if &again == m {
                    Ok(())
                } else {
                    fail("parsed mapping differs when rebuilt")
                }
            })
        }),
        t("JobTraffic", to_json(&traffic), |v| {
            parse_as::<JobTraffic>(v, |t| t.validate().map_err(|e| e.to_string()))
        }),
        t("SearchResult", to_json(&found), |v| {
            parse_as::<SearchResult>(v, no_check)
        }),
        t("IterationTerms", to_json(&found.best.terms), |v| {
            parse_as::<IterationTerms>(v, no_check)
        }),
        t("MemoryBreakdown", to_json(&found.best.memory), |v| {
            parse_as::<MemoryBreakdown>(v, no_check)
        }),
        t(
            "FabricComparison",
            to_json(&compare_fabrics(&params, &PriceModel::default()).unwrap()),
            |v| parse_as::<FabricComparison>(v, no_check),
        ),
        t(
            "FailureImpact",
            to_json(&failure_impact(FabricKind::RailOnly, &params, Failure::Server, &ctx).unwrap()),
            |v| parse_as::<FailureImpact>(v, no_check),
        ),
        t(
            "TrafficSummary",
            to_json(&traffic.summary().unwrap()),
            |v| parse_as::<TrafficSummary>(v, no_check),
        ),
        t("AccuracyRow", to_json(&rows[0]), |v| {
            parse_as::<AccuracyRow>(v, no_check)
        }),
        t(
            "FlopSplit",
            to_json(&flop_split(&model, 1.0, Recompute::Full).unwrap()),
            |v| parse_as::<FlopSplit>(v, no_check),
        ),
        t(
            "SweepPoint+AllToAllPoint",
            json!([
                to_json(&all_to_all_slowdown_sweep(&[8], 4, 900e9, 50e9).unwrap()[0]),
                to_json(&FabricNode::Switch {
                    rail: Some(1),
                    tier: 1,
                    index: 0
                }),
            ]),
            |v| {
                parse_as::<(AllToAllPoint, FabricNode)>(v, no_check)?;
                Ok(())
            },
        ),
    ]
}

/// Every `(path, leaf)` of a JSON document, depth first.
fn leaves(v: &Value, out: &mut Vec<Vec<PathStep>>, at: &mut Vec<PathStep>) {
    match v {
        Value::Array(items) => {
            out.push(at.clone());
            for (i, item) in items.iter().enumerate() {
                at.push(PathStep::Index(i));
                leaves(item, out, at);
                at.pop();
            }
        }
        Value::Object(map) => {
            out.push(at.clone());
            for (k, item) in map {
                at.push(PathStep::Key(k.clone()));
                leaves(item, out, at);
                at.pop();
            }
        }
        _ => out.push(at.clone()),
    }
}

#[derive(Debug, Clone)]
enum PathStep {
    Index(usize),
    Key(String),
}

fn at_mut<'a>(v: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, step| match step {
        PathStep::Index(i) => v.get_mut(*i),
        PathStep::Key(k) => v.get_mut(k.as_str()),
    })
}

/// One edit of a JSON document: replace the `at`-th node by an extreme value, or remove it
/// from its parent (a missing field, a shorter array).
#[derive(Debug, Clone, Copy)]
struct JsonEdit {
    at: usize,
    value: usize,
    remove: bool,
}

#[test]
fn fuzz_deserialization() {
    let edit = (any::<usize>(), any::<usize>(), prop::bool::weighted(0.15))
        .prop_map(|(at, value, remove)| JsonEdit { at, value, remove });
    let strategy = (any::<usize>(), vec_of(edit, 2));
    run("rail_network::serde", strategy, |(which, edits)| -> Check {
        let templates = templates();
        let template = &templates[which % templates.len()];
        let mut doc = template.json.clone();
        let extremes = json_extremes();
        for e in edits {
            let mut paths = Vec::new();
            leaves(&doc, &mut paths, &mut Vec::new());
            let path = &paths[e.at % paths.len()];
            if e.remove && !path.is_empty() {
                let (last, parent) = path.split_last().unwrap_or((&PathStep::Index(0), &[]));
                match (at_mut(&mut doc, parent), last) {
                    (Some(Value::Object(m)), PathStep::Key(k)) => {
                        m.remove(k);
                    }
                    (Some(Value::Array(a)), PathStep::Index(i)) if *i < a.len() => {
                        a.remove(*i);
                    }
                    _ => {}
                }
            } else if let Some(node) = at_mut(&mut doc, path) {
                *node = extremes[e.value % extremes.len()].clone();
            }
        }
        (template.parse)(doc).map_err(|e| format!("{}: {e}", template.name))
    });
}

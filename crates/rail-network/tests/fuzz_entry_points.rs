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

use std::sync::atomic::{AtomicU64, Ordering};

use moe_fuzz::{check_finite, f64_value, u64_value, vec_of};
use proptest::prelude::*;
use rail_network::RailNetworkError;
use rail_network::accuracy::{
    AccuracyRow, LeaveOneOutRow, PublishedRun, accuracy_table, calibrate, held_out_runs,
    leave_one_out, mean_absolute_error, megatron_runs, predict, published_runs, table4_runs,
};
use rail_network::compute::ComputeModel;
use rail_network::fabric::{
    FabricComparison, FabricKind, FabricParams, PriceModel, clos_tiers, compare_fabrics,
    rail_only_fabric, rail_optimized_fabric,
};
use rail_network::fabric_graph::{FabricGraph, FabricNode, LinkKind};
use rail_network::failures::{Failure, FailureContext, FailureImpact, failure_impact};
use rail_network::iteration::{IterationModel, iteration_time};
use rail_network::mapping::RankMapping;
use rail_network::memory::{layer_activation_bytes, memory_per_gpu};
use rail_network::model::{
    FlopSplit, GptModel, MODEL_PRESET_NAMES, flop_split, hardware_flops, model_flops, model_preset,
};
use rail_network::parallel::Parallelization;
use rail_network::search::{RankedConfig, SearchOptions, search, search_with_progress};
use rail_network::sweeps::{
    all_to_all_slowdown_sweep, bandwidth_sweep, batch_sweep, hb_domain_sweep, sweep_point,
};
use rail_network::system::{SystemSpec, system_preset};
use rail_network::traffic::{CollectiveAlgorithm, JobTraffic, PairTraffic, job_traffic};
use serde_json::{Value, json};

/// Inputs, validators and serde documents shared by the properties below.
mod rail_fuzz;
use rail_fuzz::checks::*;
use rail_fuzz::documents::*;
use rail_fuzz::inputs::*;
use rail_fuzz::*;

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
            let expert = build_expert(&model, &par, &choice, choice.b, &expert_edits);
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
            let expert = build_expert(&model, &par, &choice, top_k, &expert_edits);
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

//! Fuzzing every public entry point of comm-cost-model (issue 13): hostile scalars (NaN,
//! infinities, subnormals, `f64::MAX`, `u64::MAX`), vectors of hostile length and content, huge
//! sizes, and struct literals that skip the validating constructors. Every call must return
//! within [`moe_fuzz::TIME_LIMIT`] without panicking; a typed `Err` is a pass; an `Ok` must be
//! finite and pass the crate's own validators (`validate`, a constructor round trip, a serde
//! round trip through the validating `try_from`).
//!
//! `cargo test` runs [`moe_fuzz::DEFAULT_CASES`] cases per property; the long run:
//!
//! ```text
//! MOE_FUZZ_CASES=3000 cargo test --release -p comm-cost-model --test fuzz_entry_points -- --nocapture --test-threads 1
//! ```
//!
//! Each property also prints how many of its cases reached an `Ok` from its main function, so
//! a change that makes the inputs fail the first check is visible.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use comm_cost_model::allgather_bound::{
    Fabric, optimal_all_gather_bound, optimal_all_gather_time_s,
};
use comm_cost_model::collectives::{
    TwoTierGrid, flat_all_to_all_time_s, full_bisection_all_to_all_time_s,
    hierarchical_all_gather_time_s, hierarchical_all_reduce_time_s,
    hierarchical_reduce_scatter_time_s, pairwise_all_to_all_time_s, rail_only_all_to_all_slowdown,
    rail_only_all_to_all_time_s, ring_all_gather_time_s, ring_all_reduce_time_s,
    ring_reduce_scatter_time_s,
};
use comm_cost_model::deepep::{DeepEpCall, DeepEpMode, call_time_s, copies_per_token, sent_bytes};
use comm_cost_model::fit::{AlphaBetaFit, Sample, least_squares, least_squares_clamped, two_point};
use comm_cost_model::gpu_scaling::{Collective, GpuSample, ScalingFit, fit_scaling};
use comm_cost_model::held_out::{error_summary, every_other};
use comm_cost_model::parm::{
    ParmCollectiveCosts, ParmLayer, SaaSpec, Schedule, Testbed, algorithm1_as_printed,
    baseline_times, check_claims, parm_times, s1_times, s2_times, saa_phases, saa_time_s,
    table3_layers,
};
use comm_cost_model::piecewise::{PiecewiseFit, PiecewiseOptions, piecewise_fit};
use comm_cost_model::timeline::{
    ColocatedLayer, Component, ExclusiveLayer, ModelLayerTimes, colocated_gpu_utilization,
    colocated_timeline, exclusive_time, exclusive_time_eq3, ffn_times_s, model_colocated_time_s,
    model_exclusive_time,
};
use comm_cost_model::{
    AlphaBeta, InputError, MAX_MATRIX_SIDE, SquareMatrix, Worker, check_count, check_count_u64,
    check_divides, check_finite_result, check_non_negative, check_positive, checked_product, gcd,
    seeded_rng, units,
};
use moe_fuzz::{check_finite, check_finite_json, count, f64_value, finite_f64, u64_value, vec_of};
use proptest::prelude::*;
use rand::RngExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `Ok(true)`: the main call returned `Ok` and passed every check; `Ok(false)`: a typed error
/// (a pass); `Err`: a broken promise, described.
type Outcome = Result<bool, String>;

/// Runs one property with [`moe_fuzz::fuzz`] and prints how many cases reached `Ok`.
fn run<S, F>(name: &'static str, strategy: S, test: F)
where
    S: Strategy,
    S::Value: Send + Debug + Clone + 'static,
    F: Fn(S::Value) -> Outcome + Send + Sync + Clone + 'static,
{
    let ok = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&ok);
    moe_fuzz::fuzz(name, strategy, move |input| {
        if test(input)? {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    });
    eprintln!(
        "fuzz {name}: {} of {} cases Ok",
        ok.load(Ordering::Relaxed),
        moe_fuzz::cases()
    );
}

/// A time: `Ok` must be finite and non-negative.
fn time(what: &str, r: Result<f64, InputError>) -> Outcome {
    match r {
        Ok(t) => {
            check_finite(what, t)?;
            if t < 0.0 {
                return Err(format!("Ok with negative {what} = {t}"));
            }
            Ok(true)
        }
        Err(_) => Ok(false),
    }
}

/// Serializes `value`, checks its numbers are finite, and deserializes it again: an `Ok` the
/// crate returned must pass the type's validating deserialization. (Not compared for
/// equality: `serde_json`'s default float parsing may be off by an ulp.)
fn round_trip<T: Serialize + DeserializeOwned>(
    what: &str,
    value: &T,
    option_keys: &[&str],
) -> Result<(), String> {
    check_finite_json(value, option_keys).map_err(|e| format!("{what}: {e}"))?;
    let json = serde_json::to_string(value).map_err(|e| format!("{what}: {e}"))?;
    serde_json::from_str::<T>(&json)
        .map(|_| ())
        .map_err(|e| format!("{what} does not deserialize again: {e}: {json}"))
}

/// Deserializes the JSON form of `value` (NaN and infinities become `null`): when serde
/// accepts it, `valid` must accept it too.
fn deserialized<T, V>(what: &str, value: &V, valid: impl Fn(&T) -> bool) -> Result<(), String>
where
    T: DeserializeOwned + Debug,
    V: Serialize,
{
    let json = serde_json::to_string(value).map_err(|e| format!("{what}: {e}"))?;
    match serde_json::from_str::<T>(&json) {
        Ok(parsed) if !valid(&parsed) => Err(format!(
            "{what} deserialized although invalid: {parsed:?} from {json}"
        )),
        _ => Ok(()),
    }
}

/// Mostly a valid non-negative value (so calls get past their checks), sometimes any value.
fn mostly_non_negative() -> impl Strategy<Value = f64> {
    prop_oneof![
        5 => finite_f64().prop_map(f64::abs),
        1 => f64_value(),
    ]
}

/// An alpha-beta cost: mostly valid, sometimes a struct literal with hostile fields.
fn link() -> impl Strategy<Value = AlphaBeta> {
    (mostly_non_negative(), mostly_non_negative()).prop_map(|(alpha_s, beta_s_per_byte)| {
        AlphaBeta {
            alpha_s,
            beta_s_per_byte,
        }
    })
}

fn valid_link(ab: &AlphaBeta) -> bool {
    AlphaBeta::new(ab.alpha_s, ab.beta_s_per_byte).as_ref() == Ok(ab)
}

// ----- alpha-beta, scalar checks, units, counts, workers, the generator -----

#[test]
fn alpha_beta() {
    let input = (f64_value(), f64_value(), f64_value());
    run("comm_cost_model::alpha_beta", input, |(a, b, bytes)| {
        let made = AlphaBeta::new(a, b);
        if let Ok(ab) = &made {
            if !valid_link(ab) {
                return Err(format!("AlphaBeta::new gave an invalid {ab:?}"));
            }
            round_trip("AlphaBeta", ab, &[])?;
            // Plain `f64` primitives: no panic; finite bytes keep the time non-negative.
            let t = ab.time_s(bytes);
            if bytes >= 0.0 && t < 0.0 {
                return Err(format!("time_s({bytes}) = {t}"));
            }
            let _ = ab.bandwidth_bytes_per_s();
        }
        if let Ok(ab) = AlphaBeta::from_latency_bandwidth(a, b)
            && !valid_link(&ab)
        {
            return Err(format!("from_latency_bandwidth gave an invalid {ab:?}"));
        }
        let literal = AlphaBeta {
            alpha_s: a,
            beta_s_per_byte: b,
        };
        deserialized::<AlphaBeta, _>("AlphaBeta", &literal, valid_link)?;
        Ok(made.is_ok())
    });
}

#[test]
fn scalar_checks_units_counts_and_workers() {
    let input = (
        f64_value(),
        count(1000),
        u64_value(),
        u64_value(),
        u64_value(),
    );
    run("comm_cost_model::scalars", input, |(x, c, u, v, w)| {
        if let Ok(y) = check_non_negative("x", x)
            && !(y.is_finite() && y >= 0.0 && y == x)
        {
            return Err(format!("check_non_negative({x}) = Ok({y})"));
        }
        if let Ok(y) = check_positive("x", x)
            && !(y.is_finite() && y > 0.0)
        {
            return Err(format!("check_positive({x}) = Ok({y})"));
        }
        if let Ok(y) = check_finite_result("x", x) {
            check_finite("check_finite_result", y)?;
        }
        let min = usize::try_from(w % 1000).unwrap_or(0);
        if let Ok(k) = check_count("c", c, min)
            && k < min
        {
            return Err(format!("check_count({c}, {min}) = Ok({k})"));
        }
        if let Ok(k) = check_count_u64("u", u, v)
            && k < v
        {
            return Err(format!("check_count_u64({u}, {v}) = Ok({k})"));
        }
        if let Ok(q) = check_divides("v | u", u, v)
            && u128::from(q) * u128::from(v) != u128::from(u)
        {
            return Err(format!("check_divides({u}, {v}) = Ok({q})"));
        }
        let g = gcd(u, v);
        if g != 0 && (u % g != 0 || v % g != 0) {
            return Err(format!("gcd({u}, {v}) = {g}"));
        }
        let exact = (u128::from(u) * u128::from(v)).checked_mul(u128::from(w));
        let fits = exact.and_then(|x| u64::try_from(x).ok());
        match checked_product("u v w", &[u, v, w]) {
            Ok(p) if Some(p) != fits => {
                return Err(format!("checked_product = {p}, not {exact:?}"));
            }
            Err(_) if fits.is_some() => {
                return Err(format!("checked_product refused {exact:?}"));
            }
            _ => {}
        }
        // Conversions are plain scalings: no panic, and they invert each other.
        let bps = units::gbps(x);
        let _ = (units::gb_per_s(x), units::tflop_per_s(x));
        let _ = (units::megabytes(x), units::millis(x));
        if (1e-300..1e300).contains(&x) {
            let back = units::to_gbps(bps);
            if (back - x).abs() > 1e-12 * x {
                return Err(format!("to_gbps(gbps({x})) = {back}"));
            }
        }
        let _: u64 = seeded_rng(u, v).random_range(0..=w);
        let worker = Worker::new(x, c);
        if let Ok(wk) = &worker {
            if Worker::new(wk.flop_per_s, wk.expert_slots).as_ref() != Ok(wk) {
                return Err(format!("Worker::new gave an invalid {wk:?}"));
            }
            round_trip("Worker", wk, &[])?;
        }
        let literal = Worker {
            flop_per_s: x,
            expert_slots: c,
        };
        deserialized::<Worker, _>("Worker", &literal, |wk| {
            Worker::new(wk.flop_per_s, wk.expert_slots).is_ok()
        })?;
        Ok(worker.is_ok())
    });
}

// ----- SquareMatrix -----

#[test]
fn square_matrix() {
    // Square rows mostly, ragged or empty ones sometimes.
    let square = (1usize..5).prop_flat_map(|n| {
        prop::collection::vec(prop::collection::vec(mostly_non_negative(), n), n)
    });
    let rows = prop_oneof![3 => square, 1 => vec_of(vec_of(mostly_non_negative(), 5), 5)];
    let input = (
        count(4),
        rows,
        vec_of(mostly_non_negative(), 20),
        count(6),
        count(6),
    );
    run(
        "comm_cost_model::square_matrix",
        input,
        |(n, rows, flat, i, j)| {
            let made = SquareMatrix::from_rows(&rows);
            if let Ok(m) = &made {
                check_matrix(m, i, j)?;
                if m.to_rows() != rows {
                    return Err("to_rows differs from the rows it was built from".into());
                }
            }
            if let Ok(m) = SquareMatrix::from_flat(n, flat.clone()) {
                check_matrix(&m, i, j)?;
            }
            // `from_fn` up to the limit really allocates `n²` entries (8 GiB at the limit): sides
            // between 64 and the limit are not worth a debug-build case; beyond it, refused first.
            if n <= 64 || n > MAX_MATRIX_SIDE {
                let entry = |a: usize, b: usize| flat.get((a + b) % flat.len().max(1)).copied();
                if let Ok(m) = SquareMatrix::from_fn(n, |a, b| entry(a, b).unwrap_or(0.0)) {
                    check_matrix(&m, i, j)?;
                }
            }
            deserialized::<SquareMatrix, _>("SquareMatrix", &rows, |m| {
                SquareMatrix::from_flat(m.n(), m.as_slice().to_vec()).is_ok()
            })?;
            Ok(made.is_ok())
        },
    );
}

/// The accessors of a valid matrix agree with each other and the constructors.
fn check_matrix(m: &SquareMatrix, i: usize, j: usize) -> Result<(), String> {
    let n = m.n();
    if SquareMatrix::from_flat(n, m.as_slice().to_vec()).as_ref() != Ok(m) {
        return Err(format!("matrix entries do not rebuild it: {m:?}"));
    }
    if m.rows().len() != n || m.as_slice().len() != n * n {
        return Err(format!("shape of {m:?}"));
    }
    let expected = m.row(i).and_then(|r| r.get(j).copied());
    if m.get(i, j) != expected.filter(|_| j < n) {
        return Err(format!("get({i}, {j}) disagrees with row({i})"));
    }
    let z = m.clone().with_zero_diagonal();
    if (0..n).any(|k| z.get(k, k) != Some(0.0)) {
        return Err("with_zero_diagonal left a non-zero diagonal".into());
    }
    let rows: Vec<Vec<f64>> = m.clone().into();
    if SquareMatrix::try_from(rows).as_ref() != Ok(m) {
        return Err("try_from(rows) differs".into());
    }
    round_trip("SquareMatrix", m, &[])
}

// ----- collectives -----

#[test]
fn flat_collectives() {
    let input = (f64_value(), count(64), link());
    run("comm_cost_model::collectives", input, |(bytes, n, link)| {
        let mut reached = false;
        for (what, f) in [
            (
                "ring AllGather",
                ring_all_gather_time_s as fn(f64, usize, &AlphaBeta) -> _,
            ),
            ("ring ReduceScatter", ring_reduce_scatter_time_s),
            ("ring AllReduce", ring_all_reduce_time_s),
            ("pairwise AlltoAll", pairwise_all_to_all_time_s),
            ("flat AlltoAll", flat_all_to_all_time_s),
        ] {
            let r = f(bytes, n, &link);
            if r.is_ok() && !valid_link(&link) {
                return Err(format!("{what} accepted the invalid {link:?}"));
            }
            reached |= time(what, r)?;
        }
        Ok(reached)
    });
}

/// A two-tier grid: through the constructor, or a struct literal with any fields.
fn grid() -> impl Strategy<Value = TwoTierGrid> {
    (
        count(16),
        count(16),
        mostly_non_negative(),
        mostly_non_negative(),
    )
        .prop_map(|(x, y, hb_bytes_per_s, network_bytes_per_s)| TwoTierGrid {
            x,
            y,
            hb_bytes_per_s,
            network_bytes_per_s,
        })
}

fn valid_grid(g: &TwoTierGrid) -> bool {
    TwoTierGrid::new(g.x, g.y, g.hb_bytes_per_s, g.network_bytes_per_s).as_ref() == Ok(g)
}

#[test]
fn two_tier_collectives() {
    run(
        "comm_cost_model::two_tier",
        (f64_value(), grid()),
        |(bytes, grid)| {
            if let Ok(g) = TwoTierGrid::new(
                grid.x,
                grid.y,
                grid.hb_bytes_per_s,
                grid.network_bytes_per_s,
            ) {
                round_trip("TwoTierGrid", &g, &[])?;
            }
            deserialized::<TwoTierGrid, _>("TwoTierGrid", &grid, valid_grid)?;
            let mut reached = false;
            for (what, f) in [
                (
                    "hierarchical AllGather",
                    hierarchical_all_gather_time_s as fn(f64, &TwoTierGrid) -> _,
                ),
                (
                    "hierarchical ReduceScatter",
                    hierarchical_reduce_scatter_time_s,
                ),
                ("hierarchical AllReduce", hierarchical_all_reduce_time_s),
                ("full-bisection AlltoAll", full_bisection_all_to_all_time_s),
                ("rail-only AlltoAll", rail_only_all_to_all_time_s),
                ("rail-only slowdown", rail_only_all_to_all_slowdown),
            ] {
                let r = f(bytes, &grid);
                if r.is_ok() && !valid_grid(&grid) {
                    return Err(format!("{what} accepted the invalid {grid:?}"));
                }
                reached |= time(what, r)?;
            }
            Ok(reached)
        },
    );
}

#[test]
fn all_gather_bound() {
    // Small grids mostly (the enumeration is exponential), extreme counts sometimes.
    let side = || prop_oneof![3 => 0usize..=4, 1 => count(4)];
    let fabric = prop_oneof![Just(Fabric::RailOnly), Just(Fabric::RailOptimized)];
    let input = (
        side(),
        side(),
        mostly_non_negative(),
        mostly_non_negative(),
        fabric,
        f64_value(),
    );
    run(
        "comm_cost_model::allgather_bound",
        input,
        |(x, y, hb, net, fabric, bytes)| {
            let grid = TwoTierGrid {
                x,
                y,
                hb_bytes_per_s: hb,
                network_bytes_per_s: net,
            };
            let bound = match optimal_all_gather_bound(&grid, fabric) {
                Ok(b) => b,
                Err(_) => return Ok(false),
            };
            if !valid_grid(&grid) {
                return Err(format!("the bound accepted the invalid {grid:?}"));
            }
            check_finite("seconds per shard byte", bound.seconds_per_shard_byte)?;
            if bound.seconds_per_shard_byte <= 0.0 || bound.partition.len() != x * y {
                return Err(format!("bound {bound:?}"));
            }
            round_trip("AllGatherBound", &bound, &[])?;
            let t = optimal_all_gather_time_s(bytes, &grid, fabric);
            time("optimal AllGather time", t.clone())?;
            // The bound is a lower bound of the hierarchical algorithm (rail-only, Eq. 1).
            if let (Ok(t), Ok(h)) = (t, hierarchical_all_gather_time_s(bytes, &grid))
                && t > h * (1.0 + 1e-9)
                && h >= f64::MIN_POSITIVE
            {
                return Err(format!("bound {t} above the hierarchical time {h}"));
            }
            Ok(true)
        },
    );
}

// ----- fits -----

/// Samples on a line `alpha + beta x` at sizes `base * 2^i` (so fits reach their deep code),
/// with some entries replaced by hostile values, or samples of any values.
fn samples(max_len: usize) -> impl Strategy<Value = Vec<Sample>> {
    let line = (
        mostly_non_negative(),
        mostly_non_negative(),
        mostly_non_negative(),
        0..=max_len,
        prop_oneof![
            2 => Just(Vec::new()),
            1 => vec_of((0..max_len.max(1), f64_value(), any::<bool>()), 2),
        ],
    )
        .prop_map(|(alpha, beta, base, n, changes)| {
            let mut s: Vec<Sample> = (0..n)
                .map(|i| {
                    let bytes = base * f64::powi(2.0, i32::try_from(i).unwrap_or(0));
                    Sample {
                        bytes,
                        seconds: alpha + beta * bytes,
                    }
                })
                .collect();
            for (i, v, on_bytes) in changes {
                if let Some(x) = s.get_mut(i) {
                    if on_bytes { x.bytes = v } else { x.seconds = v }
                }
            }
            s
        });
    let any = vec_of(
        (f64_value(), f64_value()).prop_map(|(bytes, seconds)| Sample { bytes, seconds }),
        max_len,
    );
    prop_oneof![3 => line, 1 => any]
}

fn valid_sample(s: &Sample) -> bool {
    s.validate().is_ok()
}

/// The checks every least-squares fit must pass.
fn check_fit(what: &str, fit: &AlphaBetaFit, n: usize) -> Result<(), String> {
    fit.validate()
        .map_err(|e| format!("{what} returned an invalid fit ({e}): {fit:?}"))?;
    fit.alpha_beta()
        .map_err(|e| format!("{what}: alpha_beta() failed: {e}"))?;
    check_finite("max |residual|", fit.max_abs_residual_s())?;
    if fit.residuals_s.len() != n || fit.r_squared > 1.0 + 1e-9 {
        return Err(format!("{what}: {fit:?}"));
    }
    round_trip(what, fit, &[])
}

#[test]
fn least_squares_fits() {
    run("comm_cost_model::fit", samples(12), |samples| {
        for s in &samples {
            deserialized::<Sample, _>("Sample", s, valid_sample)?;
        }
        if let Ok(fit) = least_squares(&samples) {
            check_fit("least_squares", &fit, samples.len())?;
        }
        let clamped = least_squares_clamped(&samples);
        if let Ok(fit) = &clamped {
            check_fit("least_squares_clamped", fit, samples.len())?;
        }
        if let [a, b, ..] = samples[..]
            && let Ok(ab) = two_point(a, b)
            && !valid_link(&ab)
        {
            return Err(format!("two_point gave an invalid {ab:?}"));
        }
        Ok(clamped.is_ok())
    });
}

/// Options: mostly the defaults and small values, sometimes extreme counts.
fn options() -> impl Strategy<Value = PiecewiseOptions> {
    prop_oneof![
        4 => Just(PiecewiseOptions::default()),
        1 => (count(4), count(4)).prop_map(|(max_segments, min_points)| PiecewiseOptions {
            max_segments,
            min_points,
        }),
    ]
}

/// Samples for a piecewise fit: a line (or a kinked one) with hostile entries, any samples,
/// or more samples than a fit accepts.
fn piecewise_samples() -> impl Strategy<Value = Vec<Sample>> {
    let kinked = (samples(20), 0usize..20).prop_map(|(mut s, kink)| {
        if let Some(flat) = s.get(kink).map(|x| x.seconds) {
            s.iter_mut().take(kink).for_each(|x| x.seconds = flat);
        }
        s
    });
    let too_many = mostly_non_negative().prop_map(|t| {
        (0..1025)
            .map(|i| Sample {
                bytes: f64::from(i),
                seconds: t,
            })
            .collect()
    });
    prop_oneof![8 => samples(20), 4 => kinked, 1 => too_many]
}

fn check_piecewise(fit: &PiecewiseFit, bytes: f64) -> Result<(), String> {
    fit.validate()
        .map_err(|e| format!("piecewise_fit returned an invalid fit ({e}): {fit:?}"))?;
    for s in &fit.segments {
        s.alpha_beta()
            .map_err(|e| format!("segment alpha_beta: {e}"))?;
    }
    if fit.segment_for(bytes).is_none() || fit.largest().is_none() {
        return Err(format!("no segment for {bytes}"));
    }
    time("piecewise time", fit.time_s(bytes))?;
    round_trip("PiecewiseFit", fit, &[])
}

#[test]
fn piecewise_fits() {
    let input = (piecewise_samples(), options(), f64_value());
    run(
        "comm_cost_model::piecewise",
        input,
        |(samples, options, bytes)| {
            deserialized::<PiecewiseOptions, _>("PiecewiseOptions", &options, |o| {
                o.validate().is_ok()
            })?;
            match piecewise_fit(&samples, options) {
                Ok(fit) => check_piecewise(&fit, bytes).map(|()| true),
                Err(_) => Ok(false),
            }
        },
    );
}

fn gpu_samples() -> impl Strategy<Value = Vec<GpuSample>> {
    let gpus = prop_oneof![12 => prop::sample::select(vec![2u64, 4, 8]), 1 => u64_value()];
    (samples(16), vec_of(gpus, 16)).prop_map(|(samples, gpus)| {
        samples
            .iter()
            .zip(gpus.iter().cycle())
            .map(|(s, &gpus)| GpuSample {
                gpus,
                bytes: s.bytes,
                seconds: s.seconds,
            })
            .collect()
    })
}

fn collective() -> impl Strategy<Value = Collective> {
    prop::sample::select(vec![
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllReduce,
        Collective::AllToAll,
    ])
}

fn check_scaling(fit: &ScalingFit, gpus: u64, bytes: f64) -> Result<(), String> {
    fit.validate()
        .map_err(|e| format!("fit_scaling returned an invalid fit ({e}): {fit:?}"))?;
    time("scaling time", fit.time_s(gpus, bytes))?;
    round_trip("ScalingFit", fit, &[])
}

#[test]
fn gpu_scaling_fits() {
    let names = prop::sample::select(vec![
        "all_gather",
        "AllReduce",
        "alltoall",
        "x",
        "",
        "all-to-all",
    ]);
    let input = (
        collective(),
        gpu_samples(),
        options(),
        u64_value(),
        f64_value(),
        names,
    );
    run(
        "comm_cost_model::gpu_scaling",
        input,
        |(collective, samples, options, gpus, bytes, name)| {
            let _ = Collective::from_name(name);
            // (p - 1) / p rounds to 1 for p near 2^64: the factor reaches 2.
            if let Ok(f) = collective.bus_factor(gpus)
                && !(f > 0.0 && f <= 2.0)
            {
                return Err(format!("bus_factor({gpus}) = {f}"));
            }
            for s in &samples {
                deserialized::<GpuSample, _>("GpuSample", s, |g| g.validate().is_ok())?;
            }
            match fit_scaling(collective, &samples, options) {
                Ok(fit) => check_scaling(&fit, gpus, bytes).map(|()| true),
                Err(_) => Ok(false),
            }
        },
    );
}

#[test]
fn held_out_errors() {
    let near = (mostly_non_negative(), 0.5f64..2.0).prop_map(|(m, r)| (m * r, m));
    let pair = prop_oneof![8 => near, 1 => (f64_value(), f64_value())];
    run("comm_cost_model::held_out", vec_of(pair, 9), |pairs| {
        let (even, odd) = every_other(&pairs);
        if even.len() + odd.len() != pairs.len() {
            return Err("every_other lost items".into());
        }
        match error_summary(&pairs) {
            Ok(s) => {
                check_finite_json(&s, &[])?;
                let ordered = s.median <= s.worst && s.mean <= s.worst * (1.0 + 1e-12);
                if s.count != pairs.len() || s.median < 0.0 || !ordered {
                    return Err(format!("summary {s:?}"));
                }
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    });
}

// ----- DeepEP -----

/// A valid DeepEP call: power-of-two ranks dividing the experts, at least `top_k` experts.
fn valid_deepep_call() -> impl Strategy<Value = DeepEpCall> {
    (
        0u32..5,
        1u64..8,
        1u64..64,
        1u64..8192,
        1u64..9,
        mostly_non_negative(),
    )
        .prop_map(
            |(rank_pow, per_rank, tokens, hidden, top_k, bytes_per_element)| {
                let ranks = 1u64 << rank_pow;
                DeepEpCall {
                    ranks,
                    tokens,
                    hidden,
                    top_k,
                    experts: (ranks * per_rank).max(top_k.next_power_of_two() * ranks),
                    bytes_per_element,
                }
            },
        )
}

fn deepep_call() -> impl Strategy<Value = DeepEpCall> {
    let any = (
        u64_value(),
        u64_value(),
        u64_value(),
        u64_value(),
        u64_value(),
        f64_value(),
    )
        .prop_map(
            |(ranks, tokens, hidden, top_k, experts, bytes_per_element)| DeepEpCall {
                ranks,
                tokens,
                hidden,
                top_k,
                experts,
                bytes_per_element,
            },
        );
    // A valid call with one count made extreme (huge top_k with as many experts, ...).
    let stretched = (valid_deepep_call(), u64_value(), 0usize..5).prop_map(|(mut c, v, field)| {
        match field {
            0 => c.tokens = v,
            1 => c.hidden = v,
            2 => (c.top_k, c.experts) = (v, v),
            3 => (c.ranks, c.experts) = (v, v),
            _ => c.experts = v,
        }
        c
    });
    prop_oneof![3 => valid_deepep_call(), 1 => any, 2 => stretched]
}

#[test]
fn deepep() {
    let mode = prop_oneof![Just(DeepEpMode::Normal), Just(DeepEpMode::LowLatency)];
    let input = (deepep_call(), mode, link());
    run("comm_cost_model::deepep", input, |(call, mode, link)| {
        deserialized::<DeepEpCall, _>("DeepEpCall", &call, |c| c.validate().is_ok())?;
        let copies = match copies_per_token(&call, mode) {
            Ok(c) => c,
            Err(_) => return Ok(false),
        };
        check_finite("copies per token", copies)?;
        let most = match mode {
            DeepEpMode::Normal => call.ranks.min(call.top_k) as f64,
            _ => call.top_k as f64,
        };
        if copies < 1.0 - 1e-9 || copies > most * (1.0 + 1e-9) {
            return Err(format!("{copies} copies per token"));
        }
        time("DeepEP bytes", sent_bytes(&call, mode))?;
        let t = call_time_s(&call, mode, &link);
        if t.is_ok() && !valid_link(&link) {
            return Err(format!("call_time_s accepted the invalid {link:?}"));
        }
        time("DeepEP call time", t)?;
        Ok(true)
    });
}

// ----- Parm -----

/// A Parm layer: consistent groups (so the schedules run), with one field made hostile
/// sometimes.
fn parm_layer() -> impl Strategy<Value = ParmLayer> {
    let consistent = (
        0u32..3,
        0u32..3,
        0u32..3,
        (1usize..5, 1usize..64, 1usize..4096, 1usize..4096),
        1usize..3,
        mostly_non_negative(),
        mostly_non_negative(),
    )
        .prop_map(
            |(ep_pow, esp_pow, mp_pow, (b, l, m, h), k, f, bytes_per_element)| {
                let (n_ep, n_esp) = (1usize << ep_pow, 1usize << esp_pow);
                let p = n_ep * n_esp;
                ParmLayer {
                    p,
                    n_mp: (1usize << mp_pow).min(p),
                    n_ep,
                    n_esp,
                    b,
                    l,
                    m,
                    h,
                    e: n_ep.max(k),
                    k,
                    f,
                    bytes_per_element,
                }
            },
        );
    let change = prop::option::weighted(0.25, (0usize..10, count(64)));
    (consistent, change).prop_map(|(mut layer, change)| {
        if let Some((field, v)) = change {
            *[
                &mut layer.p,
                &mut layer.n_mp,
                &mut layer.n_ep,
                &mut layer.n_esp,
                &mut layer.b,
                &mut layer.l,
                &mut layer.m,
                &mut layer.h,
                &mut layer.e,
                &mut layer.k,
            ][field] = v;
        }
        layer
    })
}

/// Costs: mostly one valid cost for every collective, sometimes mixed and hostile ones.
fn parm_costs() -> impl Strategy<Value = ParmCollectiveCosts> {
    let uniform = (finite_f64(), finite_f64()).prop_map(|(a, b)| {
        ParmCollectiveCosts::uniform(AlphaBeta {
            alpha_s: a.abs(),
            beta_s_per_byte: b.abs(),
        })
    });
    let mixed = (link(), prop::option::of(link()), link()).prop_map(|(cost, saa, other)| {
        let mut c = ParmCollectiveCosts::uniform(cost);
        c.saa = saa;
        c.ag_mp = other;
        c
    });
    prop_oneof![2 => uniform, 1 => mixed]
}

#[test]
fn parm_schedules() {
    let input = (parm_layer(), parm_costs(), f64_value());
    run(
        "comm_cost_model::parm",
        input,
        |(layer, costs, elements)| {
            deserialized::<ParmLayer, _>("ParmLayer", &layer, |l| l.validate().is_ok())?;
            let valid_layer = layer.validate().is_ok();
            let valid_costs = costs.validate().is_ok();
            if let Ok(v) = layer.volumes() {
                check_finite_json(&v, &[]).map_err(|e| format!("volumes: {e}"))?;
            }
            let _ = layer.bytes(elements);
            let accepted = |what: &str, ok: bool| {
                if ok && !(valid_layer && valid_costs) {
                    Err(format!("{what} accepted an invalid layer or costs"))
                } else {
                    Ok(())
                }
            };
            let base = baseline_times(&layer, &costs);
            accepted("baseline_times", base.is_ok())?;
            if let Ok(t) = &base {
                check_finite_json(t, &[])?;
                time("baseline", Ok(t.total_s))?;
            }
            let s1 = s1_times(&layer, &costs);
            accepted("s1_times", s1.is_ok())?;
            if let Ok(t) = &s1 {
                time("S1", Ok(t.total_s))?;
            }
            let s2 = s2_times(&layer, &costs);
            accepted("s2_times", s2.is_ok())?;
            if let Ok(t) = &s2 {
                time("S2", Ok(t.total_s))?;
                time("S2 sequential", Ok(t.sequential_s))?;
            }
            let printed = algorithm1_as_printed(&layer, &costs);
            accepted("algorithm1_as_printed", printed.is_ok())?;
            let all = parm_times(&layer, &costs);
            accepted("parm_times", all.is_ok())?;
            match all {
                Ok(t) => {
                    check_finite_json(&t, &[])?;
                    let chosen = match t.choice {
                        Schedule::S1 => t.s1.total_s,
                        Schedule::S2 => t.s2.total_s,
                    };
                    if chosen != t.parm_s || t.parm_s > t.s1.total_s.min(t.s2.total_s) {
                        return Err(format!("Algorithm 1 chose badly: {t:?}"));
                    }
                    round_trip("ParmCollectiveCosts", &costs, &["saa"])?;
                    Ok(true)
                }
                Err(_) => Ok(false),
            }
        },
    );
}

fn saa_spec() -> impl Strategy<Value = SaaSpec> {
    let consistent = (
        0u32..4,
        1usize..5,
        0u32..3,
        (mostly_non_negative(), mostly_non_negative()),
        (
            mostly_non_negative(),
            mostly_non_negative(),
            mostly_non_negative(),
        ),
    )
        .prop_map(|(g_pow, nodes, mp_pow, (a2a, ag), (intra, inter, alpha))| {
            let g = 1usize << g_pow;
            SaaSpec {
                p: g * nodes,
                n_mp: 1 << mp_pow.min(g_pow),
                gpus_per_node: g,
                a2a_bytes_per_gpu: a2a,
                ag_total_bytes: ag,
                intra_bytes_per_s: intra,
                inter_bytes_per_s: inter,
                alpha_s: alpha,
            }
        });
    (consistent, prop::option::of((0usize..3, count(1 << 13)))).prop_map(|(mut s, change)| {
        if let Some((field, v)) = change {
            *[&mut s.p, &mut s.n_mp, &mut s.gpus_per_node][field] = v;
        }
        s
    })
}

#[test]
fn saa() {
    run("comm_cost_model::saa", saa_spec(), |spec| {
        deserialized::<SaaSpec, _>("SaaSpec", &spec, |s| s.validate().is_ok())?;
        let total = saa_time_s(&spec);
        time("SAA time", total.clone())?;
        if let Ok(phases) = saa_phases(&spec) {
            check_finite_json(&phases, &["a2a_shift", "ag_of_slice"])?;
            if phases.len() != spec.p + 1 {
                return Err(format!("{} phases", phases.len()));
            }
            // The phases leave out `alpha`, so only the time can overflow.
            let sum: f64 = phases.iter().map(|p| p.time_s).sum();
            if let Ok(t) = total
                && (spec.alpha_s + sum - t).abs() > 1e-9 * t
            {
                return Err(format!("phases sum to {sum}, time {t}"));
            }
        }
        Ok(total.is_ok())
    });
}

fn testbed() -> impl Strategy<Value = Testbed> {
    let literal = (
        count(16),
        mostly_non_negative(),
        mostly_non_negative(),
        mostly_non_negative(),
        mostly_non_negative(),
    )
        .prop_map(
            |(
                gpus_per_node,
                alpha_s,
                intra_s_per_element,
                inter_bytes_per_s,
                bytes_per_element,
            )| Testbed {
                name: "fuzz".into(),
                gpus_per_node,
                alpha_s,
                intra_s_per_element,
                inter_bytes_per_s,
                bytes_per_element,
            },
        );
    prop_oneof![
        1 => Just(Testbed::parm_testbed_a()),
        1 => Just(Testbed::parm_testbed_b()),
        2 => literal,
    ]
}

#[test]
fn testbeds_and_claims() {
    let layers = prop::collection::vec(parm_layer(), 1..=3);
    let input = (testbed(), layers, count(40), mostly_non_negative());
    run(
        "comm_cost_model::testbed",
        input,
        |(testbed, layers, p, bytes_per_element)| {
            deserialized::<Testbed, _>("Testbed", &testbed, |t| t.validate().is_ok())?;
            let mut reached = false;
            for layer in &layers {
                if let Ok(costs) = testbed.collective_costs(layer) {
                    costs
                        .validate()
                        .map_err(|e| format!("collective_costs gave invalid costs: {e}"))?;
                }
                if let Ok(t) = testbed.times(layer) {
                    check_finite_json(&t, &[])?;
                    reached = true;
                }
            }
            if let Ok(report) = check_claims(&testbed, &layers) {
                check_finite_json(&report, &[])?;
            }
            // Table III: every configuration for `p` GPUs is a valid layer.
            if p <= 64 || p % 4 == 0 {
                let table = table3_layers(p, bytes_per_element);
                if table.len() > 2916 {
                    return Err(format!("{} Table III layers", table.len()));
                }
                if let Some(bad) = table.iter().find(|l| l.validate().is_err()) {
                    return Err(format!("table3_layers({p}) gave the invalid {bad:?}"));
                }
                if let Ok(report) = check_claims(&testbed, &table[..table.len().min(24)]) {
                    check_finite_json(&report, &[])?;
                }
            }
            Ok(reached)
        },
    );
}

// ----- timelines -----

/// Per-GPU times: mostly `n` GPUs in every vector, sometimes a vector of another length.
fn exclusive_layer() -> impl Strategy<Value = ExclusiveLayer> {
    let same = (0usize..5).prop_flat_map(|n| {
        prop::collection::vec(prop::collection::vec(mostly_non_negative(), n), 5)
    });
    let ragged = prop::collection::vec(vec_of(mostly_non_negative(), 4), 5);
    prop_oneof![4 => same, 1 => ragged].prop_map(|v| ExclusiveLayer {
        gate_s: v[0].clone(),
        dispatch_s: v[1].clone(),
        ffn_s: v[2].clone(),
        combine_s: v[3].clone(),
        aggregation_s: v[4].clone(),
    })
}

fn check_utilization(u: f64) -> Result<(), String> {
    check_finite("GPU utilization", u)?;
    if (0.0..=1.0 + 1e-9).contains(&u) {
        Ok(())
    } else {
        Err(format!("GPU utilization {u} outside [0, 1]"))
    }
}

#[test]
fn exclusive_timelines() {
    let input = (
        exclusive_layer(),
        vec_of(exclusive_layer(), 3),
        (
            vec_of(mostly_non_negative(), 4),
            f64_value(),
            vec_of(mostly_non_negative(), 4),
        ),
    );
    run(
        "comm_cost_model::timeline_exclusive",
        input,
        |(layer, layers, (received, work, rates))| {
            deserialized::<ExclusiveLayer, _>("ExclusiveLayer", &layer, |l| l.validate().is_ok())?;
            if let Ok(t) = ffn_times_s(&received, work, &rates) {
                for x in t {
                    time("FFN time", Ok(x))?;
                }
            }
            let g = |v: &[f64]| v.first().copied().unwrap_or(0.0);
            time(
                "Eq. 3 time",
                exclusive_time_eq3(
                    g(&layer.gate_s),
                    g(&layer.dispatch_s),
                    g(&layer.ffn_s),
                    g(&layer.combine_s),
                    g(&layer.aggregation_s),
                ),
            )?;
            if let Ok(t) = model_exclusive_time(&layers) {
                check_finite_json(&t, &[])?;
                check_utilization(t.gpu_utilization)?;
            }
            match exclusive_time(&layer) {
                Ok(t) => {
                    check_finite_json(&t, &[])?;
                    check_utilization(t.gpu_utilization)?;
                    Ok(true)
                }
                Err(_) => Ok(false),
            }
        },
    );
}

fn model_times() -> impl Strategy<Value = ModelLayerTimes> {
    prop::collection::vec(mostly_non_negative(), 5).prop_map(|v| ModelLayerTimes {
        gate_s: v[0],
        dispatch_s: v[1],
        ffn_s: v[2],
        combine_s: v[3],
        aggregation_s: v[4],
    })
}

fn colocated_layer() -> impl Strategy<Value = ColocatedLayer> {
    (
        model_times(),
        model_times(),
        mostly_non_negative(),
        mostly_non_negative(),
    )
        .prop_map(
            |(a, b, aggregated_dispatch_s, aggregated_combine_s)| ColocatedLayer {
                a,
                b,
                aggregated_dispatch_s,
                aggregated_combine_s,
            },
        )
}

#[test]
fn colocated_timelines() {
    let fractions = || vec_of(0.0f64..=1.0, 4);
    let input = (
        colocated_layer(),
        vec_of(colocated_layer(), 3),
        fractions(),
        fractions(),
    );
    run(
        "comm_cost_model::timeline_colocated",
        input,
        |(layer, layers, fa, fb)| {
            deserialized::<ColocatedLayer, _>("ColocatedLayer", &layer, |l| l.validate().is_ok())?;
            deserialized::<ModelLayerTimes, _>("ModelLayerTimes", &layer.a, |m| {
                m.validate().is_ok()
            })?;
            time("colocated model time", model_colocated_time_s(&layers))?;
            // Per-GPU FFN times at most the model's |F| (fractions of it), so the call gets
            // past its shape checks.
            let ffn_a: Vec<f64> = fa.iter().map(|f| f * layer.a.ffn_s).collect();
            let ffn_b: Vec<f64> = fb.iter().map(|f| f * layer.b.ffn_s).collect();
            if let Ok(u) = colocated_gpu_utilization(&layer, &ffn_a, &ffn_b) {
                check_utilization(u)?;
            }
            match colocated_timeline(&layer) {
                Ok(t) => {
                    check_finite_json(&t, &[])?;
                    if t.components
                        .iter()
                        .any(|c| c.start_s > c.end_s || c.start_s < 0.0)
                    {
                        return Err(format!("timeline {t:?}"));
                    }
                    // The GPU computes one component at a time: G^b, F^a, F^b, A^a, A^b, G^a.
                    let mut compute: Vec<_> = t
                        .components
                        .iter()
                        .filter(|c| c.kind.is_compute())
                        .collect();
                    // By start, then end; `+ 0.0` makes -0 equal to 0 (zero-length components
                    // at time 0 may carry either sign).
                    let key = |c: &&Component| (c.start_s + 0.0, c.end_s + 0.0);
                    compute.sort_by(|x, y| {
                        let (a, b) = (key(x), key(y));
                        a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
                    });
                    if compute.len() != 6 || compute.windows(2).any(|w| w[0].end_s > w[1].start_s) {
                        return Err(format!("overlapping computations in {t:?}"));
                    }
                    Ok(true)
                }
                Err(_) => Ok(false),
            }
        },
    );
}

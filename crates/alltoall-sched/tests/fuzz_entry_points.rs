//! Fuzzing every public entry point of alltoall-sched (issue 13) with hostile values: NaN,
//! infinities, subnormals, `f64::MAX`, `u64::MAX`, empty, ragged and mismatched shapes, and huge
//! sizes. Every call must return within [`moe_fuzz::TIME_LIMIT`] without panicking; an `Ok`
//! must be finite and pass the crate's own checks: a timetable passes [`Timetable::validate`]
//! (or [`validate_simulated`] for the simulated baselines) against its input and never ends
//! before [`lower_bound_s`]; `optimal` ends exactly on it; a matrix rebuilds from its rows.
//!
//! Inputs are mostly valid-looking (small square matrices of small integers or fractions, a
//! bandwidth per GPU) with hostile values mixed in, so the schedulers run on a good share of the
//! cases; every property prints its share of `Ok` cases. `cargo test` runs
//! [`moe_fuzz::DEFAULT_CASES`] cases per property; the long run:
//!
//! ```text
//! MOE_FUZZ_CASES=3000 cargo test --release -p alltoall-sched --test fuzz_entry_points -- --nocapture --test-threads 1
//! ```

use alltoall_sched::baselines::{
    nccl, nccl_order, random, random_order, shift, shift_order, sjf, sjf_order,
};
use alltoall_sched::workload::{
    blend_traffic, router_trace, uniform_traffic, zipf_batch, zipf_traffic,
};
use alltoall_sched::{
    Algorithm, Bandwidth, ExpertDispatch, Flow, LowerBounds, MAX_GPUS, ParetoPoint, Plan, PortSide,
    Replay, ScheduleError, Timetable, TrafficMatrix, Transfer, VALIDATION_TOLERANCE, aurora_greedy,
    dispatch_tokens, latency_aware, latency_pareto, lower_bound_s, lower_bounds, non_preemptive,
    optimal, replay, schedule, simulate, timetable_flows, uniform_sources, validate,
    validate_simulated, with_latency,
};
use comm_cost_model::InputError;
use moe_fuzz::{
    SIZE_EXTREMES, check_finite, check_finite_json, count, f64_value, fuzz_tallied, u64_value,
    vec_of,
};
use ndarray::Array2;
use proptest::collection::vec;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Inputs

/// A traffic entry: mostly small integers (the exact tick path), some fractions (the scaled
/// path), some hostile values.
fn entry() -> impl Strategy<Value = f64> {
    prop_oneof![
        5 => (0_u32..1000).prop_map(f64::from),
        2 => 0.0..1000.0_f64,
        2 => f64_value(),
    ]
}

/// An integer traffic entry: mostly small, some at the edges of `u64`.
fn entry_u64() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0_u64..1000, 1 => u64_value()]
}

/// The rows of a matrix, as the caller would pass them.
#[derive(Debug, Clone)]
enum Rows {
    Real(Vec<Vec<f64>>),
    Int(Vec<Vec<u64>>),
}

impl Rows {
    fn build(&self) -> Result<TrafficMatrix, ScheduleError> {
        match self {
            Self::Real(rows) => TrafficMatrix::from_rows(rows),
            Self::Int(rows) => TrafficMatrix::from_rows_u64(rows),
        }
    }
}

/// `n x n` rows of `element`.
fn square<S: Strategy>(element: S, n: usize) -> impl Strategy<Value = Vec<Vec<S::Value>>> {
    vec(vec(element, n), n)
}

/// Integer rows whose first line sums to exactly `u64::MAX` (the old sentinel bug's input).
fn full_line(n: usize) -> impl Strategy<Value = Vec<Vec<u64>>> {
    square(0_u64..1000, n).prop_map(|mut rows| {
        if let Some(row) = rows.first_mut() {
            let n = row.len();
            if n > 1 {
                let rest: u64 = row[1..n - 1].iter().sum();
                row[0] = 0;
                row[n - 1] = u64::MAX - rest;
            }
        }
        rows
    })
}

/// Rows of side `n`: square of ordinary values with hostile ones mixed in, a full line, or any
/// shape (empty, ragged, non-square) of any values.
fn rows_n(n: usize) -> impl Strategy<Value = Rows> {
    prop_oneof![
        3 => square(entry(), n).prop_map(Rows::Real),
        3 => square(entry_u64(), n).prop_map(Rows::Int),
        1 => full_line(n).prop_map(Rows::Int),
        1 => vec_of(vec_of(f64_value(), n + 1), n + 1).prop_map(Rows::Real),
    ]
}

/// A port bandwidth: ordinary, one, or hostile.
fn rate() -> impl Strategy<Value = f64> {
    prop_oneof![4 => 1.0..1e12_f64, 1 => Just(1.0), 2 => f64_value()]
}

/// A bandwidth model for `n` GPUs, built without its constructor's checks (the variants are
/// public): uniform, one per GPU, or a list of the wrong length.
fn bandwidth_n(n: usize) -> impl Strategy<Value = Bandwidth> {
    prop_oneof![
        3 => rate().prop_map(Bandwidth::Uniform),
        2 => vec(rate(), n).prop_map(Bandwidth::PerGpu),
        1 => vec_of(rate(), n + 1).prop_map(Bandwidth::PerGpu),
    ]
}

/// A GPU index: usually in range or just past it, sometimes at the edges of `usize`.
fn index(n: usize) -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0..=n, 1 => prop::sample::select(SIZE_EXTREMES)]
}

/// A matrix, a bandwidth model for it and a seed.
#[derive(Debug, Clone)]
struct Case {
    rows: Rows,
    bandwidth: Bandwidth,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (1_usize..=5)
        .prop_flat_map(|n| (rows_n(n), bandwidth_n(n), u64_value()))
        .prop_map(|(rows, bandwidth, seed)| Case {
            rows,
            bandwidth,
            seed,
        })
}

/// A time: ordinary or hostile.
fn time() -> impl Strategy<Value = f64> {
    prop_oneof![3 => 0.0..10.0_f64, 1 => f64_value()]
}

/// A transfer of a hostile timetable of `n` GPUs.
fn transfer(n: usize) -> impl Strategy<Value = Transfer> {
    (index(n), index(n), entry(), time(), time()).prop_map(|(src, dst, bytes, start_s, end_s)| {
        Transfer {
            src,
            dst,
            bytes,
            start_s,
            end_s,
        }
    })
}

/// A timetable with hostile fields for about `n` GPUs (its `n` can be huge).
fn hostile_timetable(n: usize) -> impl Strategy<Value = Timetable> {
    (
        prop_oneof![2 => Just(n), 1 => count(5)],
        vec_of(transfer(n), 6),
    )
        .prop_map(|(n, transfers)| Timetable { n, transfers })
}

/// One change to a valid timetable: a field set to a hostile value, a transfer dropped or
/// repeated, or nothing.
#[derive(Debug, Clone)]
struct Mutation {
    at: usize,
    kind: u8,
    float: f64,
    gpu: usize,
}

fn mutation(n: usize) -> impl Strategy<Value = Mutation> {
    (any::<usize>(), 0_u8..8, f64_value(), index(n)).prop_map(|(at, kind, float, gpu)| Mutation {
        at,
        kind,
        float,
        gpu,
    })
}

impl Mutation {
    fn apply(&self, t: &mut Timetable) {
        if t.transfers.is_empty() {
            return;
        }
        let k = self.at % t.transfers.len();
        let x = &mut t.transfers[k];
        match self.kind {
            1 => x.src = self.gpu,
            2 => x.dst = self.gpu,
            3 => x.bytes = self.float,
            4 => x.start_s = self.float,
            5 => x.end_s = self.float,
            6 => {
                t.transfers.remove(k);
            }
            7 => {
                let copy = *x;
                t.transfers.push(copy);
            }
            _ => {}
        }
    }
}

/// A case, a timetable mutation and a hostile timetable of the same size.
fn case_and_timetables() -> impl Strategy<Value = (Case, Mutation, Timetable)> {
    (1_usize..=5).prop_flat_map(|n| {
        (
            (rows_n(n), bandwidth_n(n), u64_value()).prop_map(|(rows, bandwidth, seed)| Case {
                rows,
                bandwidth,
                seed,
            }),
            mutation(n),
            hostile_timetable(n),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Checks of `Ok` results

/// `Ok(())` when the matrix rebuilds from its rows, its totals are finite and its accessors
/// agree.
fn check_matrix(d: &TrafficMatrix) -> Result<(), String> {
    let rows = d.to_rows();
    let again = TrafficMatrix::from_rows(&rows).map_err(|e| format!("rows do not rebuild: {e}"))?;
    // Integers above 2^53 come back rounded, as `f64`: compare what the rows say.
    if again.to_rows() != rows || (!d.is_integer() && again != *d) {
        return Err(format!("rebuilt matrix differs: {again:?} vs {d:?}"));
    }
    if rows.len() != d.n() || rows.iter().any(|r| r.len() != d.n()) {
        return Err("to_rows is not n x n".into());
    }
    for (what, totals) in [("send", d.send_totals()), ("receive", d.receive_totals())] {
        for x in totals {
            check_finite(what, x)?;
        }
    }
    let json = serde_json::to_string(d).map_err(|e| e.to_string())?;
    serde_json::from_str::<TrafficMatrix>(&json).map_err(|e| format!("serde: {e} on {json}"))?;
    let pairs: Vec<_> = d.pairs().collect();
    if pairs.len() != d.nonzeros()
        || pairs
            .iter()
            .any(|&(i, j, b)| i == j || b <= 0.0 || b.is_nan())
    {
        return Err(format!(
            "pairs {pairs:?} disagree with nonzeros {}",
            d.nonzeros()
        ));
    }
    if d.transposed().transposed() != *d {
        return Err("transposing twice changes the matrix".into());
    }
    Ok(())
}

/// How a timetable's times were computed, which says how close to the bound it may end.
#[derive(Clone, Copy, PartialEq)]
enum Timing {
    /// Integer ticks (`optimal`, `non_preemptive`, `aurora_greedy`): never below the bound.
    Ticks,
    /// Re-timed in `f64` (`with_latency`): contention-free, at most an ulp or so early.
    Float,
    /// Simulated in `f64` with shared receivers (`simulate` and the baselines).
    Simulated,
}

/// The lower bound a schedule of `d` must respect: the one-port bound (`lower_bound_s`) for
/// contention-free timetables; for simulated ones, where a fast receiver serves several slow
/// senders at once, the port-capacity bound of [`lower_bounds`]. For a float-timed schedule of
/// an integer matrix whose line sums overflow `u64` (the exact bound refuses it), the bound of
/// the same matrix in `f64`.
fn bound_for(d: &TrafficMatrix, b: &Bandwidth, timing: Timing) -> Result<f64, String> {
    let bound = |d: &TrafficMatrix| {
        lower_bounds(d, b).map(|all| {
            if timing == Timing::Simulated {
                all.port_capacity_s
            } else {
                all.one_port_s
            }
        })
    };
    match bound(d) {
        Err(ScheduleError::Input(InputError::Overflow { .. }))
            if timing != Timing::Ticks && d.is_integer() =>
        {
            let real = TrafficMatrix::from_rows(&d.to_rows()).map_err(|e| e.to_string())?;
            bound(&real).map_err(|e| format!("no bound in f64 either: {e}"))
        }
        other => other.map_err(|e| format!("Ok but no bound: {e}")),
    }
}

/// `Ok(())` when a timetable is finite, delivers `d` without contention (or with shared
/// receivers when simulated) and ends no earlier than the lower bound (less
/// [`VALIDATION_TOLERANCE`] for `f64` timing, the validator's own precision).
fn check_timetable(
    what: &str,
    t: &Timetable,
    d: &TrafficMatrix,
    b: &Bandwidth,
    timing: Timing,
) -> Result<(), String> {
    check_finite_json(t, &[])?;
    let verdict = if timing == Timing::Simulated {
        validate_simulated(t, d, b)
    } else {
        validate(t, d, b)
    };
    verdict.map_err(|e| format!("{what}: timetable fails validation: {e}"))?;
    let bound = bound_for(d, b, timing).map_err(|e| format!("{what}: {e}"))?;
    let slack = if timing == Timing::Ticks {
        0.0
    } else {
        VALIDATION_TOLERANCE
    };
    if t.makespan_s() < bound * (1.0 - slack) {
        return Err(format!(
            "{what}: makespan {} ends before the bound {bound}",
            t.makespan_s()
        ));
    }
    Ok(())
}

/// `Ok(())` when `optimal`'s timetable is valid and ends exactly on the bound.
fn check_optimal(t: &Timetable, d: &TrafficMatrix, b: &Bandwidth) -> Result<(), String> {
    check_timetable("optimal", t, d, b, Timing::Ticks)?;
    let bound = lower_bound_s(d, b).map_err(|e| e.to_string())?;
    if t.makespan_s() != bound {
        return Err(format!(
            "optimal ends at {}, not on the bound {bound}",
            t.makespan_s()
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Properties

/// Constructors (`from_rows`, `from_rows_u64`, `from_array`, `from_array_u64`, `TryFrom`, serde)
/// and the accessors of `TrafficMatrix`, including the ones that take an index.
#[test]
fn traffic_matrix_constructors_and_accessors() {
    let input = (1_usize..=5).prop_flat_map(|n| (rows_n(n), index(n), index(n)));
    fuzz_tallied("alltoall-sched::matrix", input, |t, (rows, i, j)| {
        let built = t.record("from_rows*", &rows.build()).clone();
        // The ndarray constructors, when the rows have one shape.
        let from_array = match &rows {
            Rows::Real(r) => array_of(r).map(|a| TrafficMatrix::from_array(&a)),
            Rows::Int(r) => array_of(r).map(|a| TrafficMatrix::from_array_u64(&a)),
        };
        if let Some(a) = from_array {
            t.record("from_array*", &a);
            if a.is_ok() != built.is_ok() {
                return Err(format!(
                    "from_array* {a:?} disagrees with from_rows* {built:?}"
                ));
            }
        }
        // TryFrom and serde take the f64 rows.
        let real: Vec<Vec<f64>> = match &rows {
            Rows::Real(r) => r.clone(),
            #[allow(clippy::cast_precision_loss)]
            Rows::Int(r) => r
                .iter()
                .map(|row| row.iter().map(|&v| v as f64).collect())
                .collect(),
        };
        let tried = TrafficMatrix::try_from(real.clone());
        t.record("try_from", &tried);
        if let Ok(json) = serde_json::to_string(&real) {
            let parsed = serde_json::from_str::<TrafficMatrix>(&json);
            t.record("deserialize", &parsed);
            if let Ok(m) = parsed {
                check_matrix(&m)?;
            }
        }
        let Ok(d) = built else { return Ok(()) };
        check_matrix(&d)?;
        let n = d.n();
        match d.bytes(i, j) {
            Some(x) if i < n && j < n => check_finite("bytes", x)?,
            None if i >= n || j >= n => {}
            other => return Err(format!("bytes({i}, {j}) = {other:?} with n = {n}")),
        }
        if d.bytes_u64(i, j).is_some() && !(d.is_integer() && i < n && j < n) {
            return Err(format!("bytes_u64({i}, {j}) is Some with n = {n}"));
        }
        Ok(())
    });
}

/// The rows as an `ndarray`, when they are rectangular.
fn array_of<T: Clone>(rows: &[Vec<T>]) -> Option<Array2<T>> {
    let cols = rows.first().map_or(0, Vec::len);
    if rows.iter().any(|r| r.len() != cols) {
        return None;
    }
    Array2::from_shape_vec((rows.len(), cols), rows.concat()).ok()
}

/// `relabel`, `checked_add` and `transposed` on hostile matrices and placements.
#[test]
fn traffic_matrix_operations() {
    let placement = prop_oneof![
        6 => vec_of(vec_of(0_usize..6, 3), 5),
        1 => vec_of(vec_of(index(5), 3), 5),
        // One GPU past the limit: refused before the `g x g` result is allocated.
        1 => Just(vec![Vec::new(); MAX_GPUS + 1]),
    ];
    let input = (1_usize..=5).prop_flat_map(move |n| {
        (
            rows_n(n),
            rows_n(n),
            prop_oneof![3 => partition_of(n), 2 => placement.clone()],
        )
    });
    fuzz_tallied(
        "alltoall-sched::matrix_ops",
        input,
        |t, (a, b, experts_of_gpu)| {
            let (Ok(a), b) = (a.build(), b.build()) else {
                return Ok(());
            };
            let transposed = a.transposed();
            check_matrix(&transposed)?;
            if transposed.send_totals() != a.receive_totals() {
                return Err("transposing does not swap the totals".into());
            }
            if let Ok(b) = b {
                if let Ok(sum) = t.record("checked_add", &a.checked_add(&b)) {
                    check_matrix(sum)?;
                }
            }
            if let Ok(moved) = t.record("relabel", &a.relabel(&experts_of_gpu)) {
                check_matrix(moved)?;
                if moved.n() != experts_of_gpu.len() {
                    return Err(format!("relabel gave {} GPUs", moved.n()));
                }
            }
            Ok(())
        },
    );
}

/// Experts `0..n` spread over 1 to `n + 1` GPUs (some GPUs may hold none).
fn partition_of(n: usize) -> impl Strategy<Value = Vec<Vec<usize>>> {
    (1..=n + 1)
        .prop_flat_map(move |g| vec(0..g, n).prop_map(move |gpu| (g, gpu)))
        .prop_map(|(g, gpu_of)| {
            let mut of_gpu = vec![Vec::new(); g];
            for (x, &gpu) in gpu_of.iter().enumerate() {
                of_gpu[gpu].push(x);
            }
            of_gpu
        })
}

/// `Bandwidth::uniform`, `per_gpu`, `check`, `port`, `rate`, `as_uniform` and serde.
#[test]
fn bandwidth_model() {
    let input = (rate(), vec_of(rate(), 5), index(5), index(5), count(5));
    fuzz_tallied(
        "alltoall-sched::bandwidth",
        input,
        |t, (one, many, i, j, n)| {
            if let Ok(b) = t.record("uniform", &Bandwidth::uniform(one)) {
                check_bandwidth(b, n.max(1), i, j)?;
            }
            let len = many.len();
            if let Ok(b) = t.record("per_gpu", &Bandwidth::per_gpu(many.clone())) {
                check_bandwidth(b, len, i, j)?;
            }
            // The variants are public: `check` must refuse what the constructors refuse.
            for raw in [Bandwidth::Uniform(one), Bandwidth::PerGpu(many)] {
                if t.record("check", &raw.check(n)).is_ok() {
                    check_bandwidth(&raw, n, i, j)?;
                }
                if let Ok(json) = serde_json::to_string(&raw) {
                    if let Ok(back) = serde_json::from_str::<Bandwidth>(&json) {
                        // Deserializing does not validate: every function re-checks.
                        let _ = back.check(n);
                    }
                }
            }
            Ok(())
        },
    );
}

/// Accessors of a bandwidth model that passed `check(n)`: positive and finite for every listed
/// GPU, `None` past the list.
fn check_bandwidth(b: &Bandwidth, n: usize, i: usize, j: usize) -> Result<(), String> {
    b.check(n)
        .map_err(|e| format!("a built model fails check({n}): {e}"))?;
    for g in [i, j, 0] {
        match b.port(g) {
            Some(x) if x > 0.0 && x.is_finite() => {}
            None if matches!(b, Bandwidth::PerGpu(v) if g >= v.len()) => {}
            other => return Err(format!("port({g}) = {other:?} of {b:?}")),
        }
    }
    if let Some(r) = b.rate(i, j) {
        if !(r > 0.0 && r.is_finite()) {
            return Err(format!("rate({i}, {j}) = {r}"));
        }
    }
    if let Some(u) = b.as_uniform() {
        check_finite("as_uniform", u)?;
    }
    Ok(())
}

/// `lower_bound_s` and `lower_bounds`: finite, non-negative, and the relaxed bounds below the
/// tight one.
#[test]
fn lower_bounds_of_hostile_matrices() {
    fuzz_tallied("alltoall-sched::bounds", case(), |t, c| {
        let Ok(d) = c.rows.build() else { return Ok(()) };
        let one = lower_bound_s(&d, &c.bandwidth);
        t.record("lower_bound_s", &one);
        let all = lower_bounds(&d, &c.bandwidth);
        t.record("lower_bounds", &all);
        if one.is_ok() != all.is_ok() {
            return Err(format!("lower_bound_s {one:?} vs lower_bounds {all:?}"));
        }
        if let (Ok(one), Ok(all)) = (one, all) {
            check_finite_json(&all, &[])?;
            let LowerBounds {
                one_port_s,
                port_capacity_s,
                paper_literal_s,
            } = all;
            if one_port_s != one || one < 0.0 {
                return Err(format!("bound {one} vs {all:?}"));
            }
            if port_capacity_s > one_port_s || paper_literal_s > one_port_s {
                return Err(format!("a relaxed bound above the tight one: {all:?}"));
            }
            let json = serde_json::to_string(&all).map_err(|e| e.to_string())?;
            serde_json::from_str::<LowerBounds>(&json).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
}

/// `optimal`, `non_preemptive` and `aurora_greedy`: valid timetables, never below the bound,
/// `optimal` exactly on it.
#[test]
fn tick_schedulers() {
    fuzz_tallied("alltoall-sched::schedulers", case(), |t, c| {
        let Ok(d) = c.rows.build() else { return Ok(()) };
        let b = &c.bandwidth;
        if let Ok(plan) = t.record("optimal", &optimal(&d, b)) {
            check_optimal(plan, &d, b)?;
        }
        if let Ok(plan) = t.record("non_preemptive", &non_preemptive(&d, b)) {
            check_timetable("non_preemptive", plan, &d, b, Timing::Ticks)?;
            if plan.pieces() != d.nonzeros() {
                return Err(format!(
                    "non_preemptive: {} pieces for {} pairs",
                    plan.pieces(),
                    d.nonzeros()
                ));
            }
        }
        if let Ok(plan) = t.record("aurora_greedy", &aurora_greedy(&d, b, c.seed)) {
            check_timetable("aurora_greedy", plan, &d, b, Timing::Ticks)?;
        }
        Ok(())
    });
}

/// `schedule` by every `Algorithm`, `Plan::ratio_to_bound`, and the `Algorithm` names.
#[test]
fn schedule_by_algorithm() {
    let name = prop_oneof![
        3 => prop::sample::select(Algorithm::ALL.map(Algorithm::name).to_vec()).prop_map(String::from),
        1 => "[a-z-]{0,16}",
        1 => any::<String>(),
    ];
    let input = (case(), name);
    fuzz_tallied("alltoall-sched::schedule", input, |t, (c, name)| {
        // Names: parse, print and serde agree.
        if let Ok(a) = t.record("from_str", &name.parse::<Algorithm>()) {
            if a.name() != name || a.to_string() != name {
                return Err(format!("{name} parses to {a}"));
            }
            let json = serde_json::to_string(a).map_err(|e| e.to_string())?;
            if serde_json::from_str::<Algorithm>(&json).ok().as_ref() != Some(a) {
                return Err(format!("{a} does not survive serde"));
            }
        }
        let Ok(d) = c.rows.build() else { return Ok(()) };
        let b = &c.bandwidth;
        for algorithm in Algorithm::ALL {
            let plan = schedule(&d, b, algorithm, c.seed);
            if let Ok(plan) = t.record(algorithm.name(), &plan) {
                check_plan(plan, &d, b)?;
                let json = serde_json::to_string(plan).map_err(|e| e.to_string())?;
                serde_json::from_str::<Plan>(&json).map_err(|e| format!("{e}"))?;
            }
        }
        Ok(())
    });
}

/// A plan's figures agree with its timetable, which is valid for its algorithm.
fn check_plan(plan: &Plan, d: &TrafficMatrix, b: &Bandwidth) -> Result<(), String> {
    let a = plan.algorithm;
    check_finite_json(plan, &[])?;
    check_finite("ratio_to_bound", plan.ratio_to_bound())?;
    if a == Algorithm::Optimal {
        check_optimal(&plan.timetable, d, b)?;
    } else {
        let timing = if a.is_simulated() {
            Timing::Simulated
        } else {
            Timing::Ticks
        };
        check_timetable(a.name(), &plan.timetable, d, b, timing)?;
    }
    let bound = lower_bound_s(d, b).map_err(|e| e.to_string())?;
    if plan.lower_bound_s != bound
        || plan.makespan_s != plan.timetable.makespan_s()
        || plan.pieces != plan.timetable.pieces()
        || plan.nonzero_pairs != d.nonzeros()
    {
        return Err(format!(
            "{a}: the plan's figures disagree with its timetable"
        ));
    }
    Ok(())
}

/// The baseline orders (`sjf_order`, `random_order`, `shift_order`, `nccl_order`) and their
/// simulated timetables (`sjf`, `random`, `shift`, `nccl`).
#[test]
fn baselines() {
    let input = (case(), prop_oneof![3 => 1_usize..=5, 1 => count(5)]);
    fuzz_tallied("alltoall-sched::baselines", input, |t, (c, per_node)| {
        let Ok(d) = c.rows.build() else { return Ok(()) };
        let b = &c.bandwidth;
        for (what, orders) in [
            ("sjf_order", sjf_order(&d)),
            ("random_order", random_order(&d, c.seed)),
            ("shift_order", shift_order(&d)),
        ] {
            check_orders(what, &orders, &d)?;
        }
        if let Ok(orders) = t.record("nccl_order", &nccl_order(&d, per_node)) {
            check_orders("nccl_order", orders, &d)?;
        }
        for (what, timetable) in [
            ("sjf", sjf(&d, b)),
            ("random", random(&d, b, c.seed)),
            ("shift", shift(&d, b)),
            ("nccl", nccl(&d, b, per_node)),
        ] {
            if let Ok(timetable) = t.record(what, &timetable) {
                check_timetable(what, timetable, &d, b, Timing::Simulated)?;
            }
        }
        Ok(())
    });
}

/// Every pair with traffic appears once, with its bytes, in its sender's list.
fn check_orders(what: &str, orders: &[Vec<Flow>], d: &TrafficMatrix) -> Result<(), String> {
    if orders.len() != d.n() {
        return Err(format!("{what}: {} lists for {} GPUs", orders.len(), d.n()));
    }
    let mut seen = 0;
    for (i, list) in orders.iter().enumerate() {
        for f in list {
            if d.bytes(i, f.dst) != Some(f.bytes) || f.release_s != 0.0 || i == f.dst {
                return Err(format!("{what}: flow {f:?} of GPU {i}"));
            }
            seen += 1;
        }
    }
    if seen == d.nonzeros() {
        Ok(())
    } else {
        Err(format!("{what}: {seen} flows for {} pairs", d.nonzeros()))
    }
}

/// `simulate` on hostile flow lists (unknown GPUs, NaN sizes, release times at the edges),
/// `Flow::new`, `timetable_flows` and serde of flows.
#[test]
fn simulator() {
    let flow = |n: usize| {
        let dst = prop_oneof![8 => 0..n.max(1), 1 => index(n)];
        let bytes = prop_oneof![4 => 0.0..1000.0_f64, 1 => entry()];
        (dst, bytes, prop_oneof![6 => Just(0.0), 1 => time()]).prop_map(
            |(dst, bytes, release_s)| Flow {
                dst,
                bytes,
                release_s,
            },
        )
    };
    let input = (0_usize..=5)
        .prop_flat_map(move |n| (vec(vec_of(flow(n), 4), n), bandwidth_n(n), any::<bool>()));
    fuzz_tallied(
        "alltoall-sched::simulate",
        input,
        |t, (orders, b, timed)| {
            let run = simulate(&orders, &b);
            let Ok(timetable) = t.record("simulate", &run) else {
                return Ok(());
            };
            check_finite_json(timetable, &[])?;
            // What the flows deliver, as a matrix: the simulated timetable must carry exactly it.
            if let Some(d) = delivered(&orders) {
                check_timetable("simulate", timetable, &d, &b, Timing::Simulated)?;
            }
            let again = timetable_flows(timetable, timed);
            if let Ok(flows) = t.record("timetable_flows", &again) {
                let rerun = simulate(flows, &b).map_err(|e| format!("re-simulating: {e}"))?;
                check_finite_json(&rerun, &[])?;
                for f in flows.iter().flatten() {
                    let json = serde_json::to_string(f).map_err(|e| e.to_string())?;
                    serde_json::from_str::<Flow>(&json).map_err(|e| e.to_string())?;
                    if Flow::new(f.dst, f.bytes).release_s != 0.0 {
                        return Err("Flow::new has a release time".into());
                    }
                }
            }
            Ok(())
        },
    );
}

/// The matrix of what valid flow lists deliver (flows to oneself and empty flows are skipped).
fn delivered(orders: &[Vec<Flow>]) -> Option<TrafficMatrix> {
    let n = orders.len();
    let mut rows = vec![vec![0.0; n]; n];
    for (i, list) in orders.iter().enumerate() {
        for f in list {
            if f.dst != i && f.bytes > 0.0 {
                *rows.get_mut(i)?.get_mut(f.dst)? += f.bytes;
            }
        }
    }
    TrafficMatrix::from_rows(&rows).ok()
}

/// The accessors and validators of `Timetable` on hostile timetables (huge `n`, out-of-range
/// GPUs, NaN and negative fields) and on valid timetables with one field changed, and serde of
/// timetables, transfers and port sides.
#[test]
fn timetables() {
    fuzz_tallied(
        "alltoall-sched::timetable",
        case_and_timetables(),
        |t, (c, change, hostile)| {
            let d = c.rows.build();
            let b = &c.bandwidth;
            let mut changed = d.as_ref().ok().and_then(|d| optimal(d, b).ok());
            if let Some(valid) = &mut changed {
                change.apply(valid);
            }
            for timetable in std::iter::once(&hostile).chain(&changed) {
                let _ = timetable.makespan_s();
                let _ = timetable.pieces();
                if let Ok(finish) = t.record("port_finish_times", &timetable.port_finish_times()) {
                    if finish.len() != timetable.n {
                        return Err("port_finish_times has the wrong length".into());
                    }
                }
                if let Ok(orders) = t.record("send_orders", &timetable.send_orders()) {
                    if orders.len() != timetable.n || orders.concat().len() > timetable.pieces() {
                        return Err("send_orders has the wrong shape".into());
                    }
                }
                if let Ok(d) = &d {
                    for (what, verdict) in [
                        ("validate", validate(timetable, d, b)),
                        ("Timetable::validate", timetable.validate(d, b)),
                        ("validate_simulated", validate_simulated(timetable, d, b)),
                    ] {
                        // What the validator accepts is finite.
                        if t.record(what, &verdict).is_ok() {
                            check_finite_json(timetable, &[])?;
                        }
                    }
                }
                if let Ok(json) = serde_json::to_string(timetable) {
                    let _ = serde_json::from_str::<Timetable>(&json);
                }
            }
            for side in [PortSide::Send, PortSide::Receive] {
                let json = serde_json::to_string(&side).map_err(|e| e.to_string())?;
                if serde_json::from_str::<PortSide>(&json).ok() != Some(side) {
                    return Err(format!("{side:?} does not survive serde"));
                }
            }
            Ok(())
        },
    );
}

/// `with_latency` (on valid and hostile timetables), `latency_pareto` and `latency_aware`.
#[test]
fn latency() {
    let alpha = prop_oneof![3 => 0.0..1e-3_f64, 1 => f64_value()];
    let input = (case_and_timetables(), alpha);
    fuzz_tallied(
        "alltoall-sched::latency",
        input,
        |t, ((c, _, hostile), alpha_s)| {
            let b = &c.bandwidth;
            if let Ok(out) = t.record(
                "with_latency (hostile)",
                &with_latency(&hostile, b, alpha_s),
            ) {
                check_finite_json(out, &[])?;
            }
            let Ok(d) = c.rows.build() else { return Ok(()) };
            if let Ok(plan) = optimal(&d, b) {
                if let Ok(out) = t.record("with_latency", &with_latency(&plan, b, alpha_s)) {
                    check_timetable("with_latency", out, &d, b, Timing::Float)?;
                }
            }
            let front = latency_pareto(&d, b, alpha_s);
            if let Ok(front) = t.record("latency_pareto", &front) {
                check_front(front, &d, b)?;
            }
            if let Ok(best) = t.record("latency_aware", &latency_aware(&d, b, alpha_s)) {
                check_front(std::slice::from_ref(best), &d, b)?;
            }
            Ok(())
        },
    );
}

/// Every point is valid and consistent; fewer pieces cost more time along the front.
fn check_front(front: &[ParetoPoint], d: &TrafficMatrix, b: &Bandwidth) -> Result<(), String> {
    check_finite_json(&front, &["quantum_fraction"])?;
    for p in front {
        check_timetable("latency_pareto", &p.timetable, d, b, Timing::Float)?;
        if p.pieces != p.timetable.pieces() || p.makespan_s != p.timetable.makespan_s() {
            return Err(format!("a Pareto point's figures disagree: {p:?}"));
        }
        let json = serde_json::to_string(p).map_err(|e| e.to_string())?;
        serde_json::from_str::<ParetoPoint>(&json).map_err(|e| e.to_string())?;
    }
    for w in front.windows(2) {
        if !(w[0].pieces < w[1].pieces && w[0].makespan_s > w[1].makespan_s) {
            return Err("the front is not sorted by pieces with falling makespans".into());
        }
    }
    Ok(())
}

/// `replay` of a valid plan and of a hostile one on another matrix.
#[test]
fn replays() {
    let input = (1_usize..=5)
        .prop_flat_map(|n| (rows_n(n), rows_n(n), bandwidth_n(n), hostile_timetable(n)));
    fuzz_tallied(
        "alltoall-sched::replay",
        input,
        |t, (planned, actual, b, hostile)| {
            let Ok(actual) = actual.build() else {
                return Ok(());
            };
            let plan = planned.build().and_then(|d| optimal(&d, &b));
            if let Ok(plan) = plan {
                if let Ok(r) = t.record("replay", &replay(&plan, &actual, &b)) {
                    check_replay(r, &actual, &b)?;
                }
            }
            if let Ok(r) = t.record("replay (hostile)", &replay(&hostile, &actual, &b)) {
                check_finite_json(r, &[])?;
            }
            Ok(())
        },
    );
}

fn check_replay(r: &Replay, actual: &TrafficMatrix, b: &Bandwidth) -> Result<(), String> {
    check_finite_json(r, &[])?;
    check_timetable("replay", &r.timetable, actual, b, Timing::Simulated)?;
    // The simulation may beat the one-port bound (a fast receiver serves slow senders at
    // once), so the slowdown can be below 1; it must be the ratio it claims to be.
    let bound = lower_bound_s(actual, b).map_err(|e| e.to_string())?;
    let ratio = if bound > 0.0 {
        r.makespan_s / bound
    } else {
        1.0
    };
    if r.makespan_s != r.timetable.makespan_s() || r.lower_bound_s != bound || r.slowdown != ratio {
        return Err(format!("replay figures disagree: {r:?}"));
    }
    let json = serde_json::to_string(r).map_err(|e| e.to_string())?;
    serde_json::from_str::<Replay>(&json).map_err(|e| e.to_string())?;
    Ok(())
}

/// `dispatch_tokens`, `ExpertDispatch::computed_tokens` / `traffic` and `uniform_sources`.
#[test]
fn dispatch() {
    let input = (1_usize..=4, 1_usize..=5).prop_flat_map(|(g, e)| {
        (
            prop_oneof![
                4 => square_of(entry(), g, e),
                1 => vec_of(vec_of(entry(), e + 1), g + 1),
            ],
            prop_oneof![
                // Every expert on one GPU, plus a few extra replicas.
                4 => (vec(0..g, e), vec_of((0..g, 0..e), 3)).prop_map(move |(home, extra)| {
                    let mut of_gpu = vec![Vec::new(); g];
                    for (x, &gpu) in home.iter().enumerate() {
                        of_gpu[gpu].push(x);
                    }
                    for (gpu, x) in extra {
                        of_gpu[gpu].push(x);
                    }
                    of_gpu
                }),
                1 => vec_of(vec_of(index(e), 3), g + 1),
            ],
            prop_oneof![4 => vec(0_usize..2, g), 1 => vec_of(0_usize..2, g + 1)],
            rate(),
            vec_of(entry(), 5),
            count(4),
        )
    });
    fuzz_tallied(
        "alltoall-sched::dispatch",
        input,
        |t, (routed, experts_of_gpu, node_of_gpu, bytes_per_token, tokens, gpus)| {
            let out = dispatch_tokens(&routed, &experts_of_gpu, &node_of_gpu);
            if let Ok(out) = t.record("dispatch_tokens", &out) {
                check_dispatch(out, &routed, &experts_of_gpu)?;
                if let Ok(d) = t.record("traffic", &out.traffic(bytes_per_token)) {
                    check_matrix(d)?;
                }
            }
            if let Ok(rows) = t.record("uniform_sources", &uniform_sources(&tokens, gpus)) {
                if rows.len() != gpus || rows.iter().any(|r| r.len() != tokens.len()) {
                    return Err("uniform_sources has the wrong shape".into());
                }
                check_finite_json(rows, &[])?;
            }
            Ok(())
        },
    );
}

fn square_of<S: Strategy>(
    element: S,
    rows: usize,
    cols: usize,
) -> impl Strategy<Value = Vec<Vec<S::Value>>> {
    vec(vec(element, cols), rows)
}

/// Finite; every source sends what it routed; tokens land only on GPUs holding the expert.
fn check_dispatch(
    out: &ExpertDispatch,
    routed: &[Vec<f64>],
    experts_of_gpu: &[Vec<usize>],
) -> Result<(), String> {
    check_finite_json(out, &[])?;
    for x in out.computed_tokens() {
        check_finite("computed_tokens", x)?;
    }
    for (src, row) in routed.iter().enumerate() {
        let want: f64 = row.iter().sum();
        let sent: f64 = out.gpu_tokens[src].iter().sum();
        if (sent - want).abs() > 1e-9 * want.max(1.0) {
            return Err(format!("source {src} routed {want} but sent {sent}"));
        }
    }
    for (gpu, row) in out.expert_tokens.iter().enumerate() {
        for (x, &tokens) in row.iter().enumerate() {
            if tokens > 0.0 && !experts_of_gpu[gpu].contains(&x) {
                return Err(format!("GPU {gpu} computes expert {x} it does not hold"));
            }
        }
    }
    let json = serde_json::to_string(out).map_err(|e| e.to_string())?;
    let back = serde_json::from_str::<ExpertDispatch>(&json).map_err(|e| e.to_string())?;
    let _ = back.traffic(1.0);
    Ok(())
}

/// The generators: `zipf_traffic`, `zipf_batch`, `uniform_traffic`, `router_trace`,
/// `blend_traffic`, with huge GPU counts, token counts and hostile exponents.
#[test]
fn workloads() {
    let exponent = prop_oneof![3 => 0.0..3.0_f64, 1 => f64_value()];
    let noise = prop_oneof![3 => 0.0..1.0_f64, 1 => f64_value()];
    let input = (
        count(6),
        exponent,
        prop_oneof![3 => 0_u64..10_000, 1 => u64_value()],
        prop_oneof![3 => 1_u64..10_000, 1 => u64_value()],
        (u64_value(), u64_value()),
        (noise.clone(), vec_of(entry(), 5)),
        (1_usize..=5).prop_flat_map(move |n| (rows_n(n), vec_of(rows_n(n), 3), noise.clone())),
    );
    fuzz_tallied(
        "alltoall-sched::workload",
        input,
        |t,
         (
            n,
            exponent,
            tokens,
            bytes,
            (s1, s2),
            (trace_noise, expert_tokens),
            (base, others, blend),
        )| {
            for (what, d) in [
                ("zipf_traffic", zipf_traffic(n, exponent, tokens, bytes, s1)),
                ("zipf_batch", zipf_batch(n, exponent, tokens, bytes, s1, s2)),
                ("uniform_traffic", uniform_traffic(n, tokens, s1)),
            ] {
                if let Ok(d) = t.record(what, &d) {
                    check_matrix(d)?;
                    if d.n() != n {
                        return Err(format!("{what}: {} GPUs, asked {n}", d.n()));
                    }
                }
            }
            let trace = router_trace(&expert_tokens, n, trace_noise, s1);
            if let Ok(rows) = t.record("router_trace", &trace) {
                check_finite_json(rows, &[])?;
                if rows.iter().flatten().any(|&x| x < 0.0) {
                    return Err("router_trace has a negative count".into());
                }
            }
            let Ok(base) = base.build() else {
                return Ok(());
            };
            let others: Vec<TrafficMatrix> = others.iter().filter_map(|r| r.build().ok()).collect();
            if let Ok(d) = t.record("blend_traffic", &blend_traffic(&base, &others, blend)) {
                check_matrix(d)?;
            }
            Ok(())
        },
    );
}

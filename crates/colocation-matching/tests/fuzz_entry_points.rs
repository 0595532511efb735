//! Fuzzing every public entry point of `colocation-matching` (issue 13): hostile values from
//! `moe-fuzz` (NaN, infinities, subnormals, `f64::MAX`, `u64::MAX`, huge sizes, empty, ragged
//! and mismatched shapes) mixed into otherwise valid instances, so that the deep code runs too.
//!
//! Every call runs in [`moe_fuzz::fuzz`]'s guard (no panic, an answer within the time limit). A
//! typed `Err` is a pass; an `Ok` must hold finite numbers only and pass this crate's own
//! checks: placements hold every expert, valid ids, replica counts that match their slots, no
//! expert twice on a GPU (except EPLB's, which are counted), loads that re-evaluate to the same
//! figures and a maximum load no lower than the certified lower bound; matchings are
//! permutations that avoid forbidden pairs and are optimal against brute force on small
//! instances; assignments respect slots and bounds; constructors round-trip through serde.
//!
//! Each property prints its case count and the share of cases whose main call returned `Ok`
//! (`--nocapture`). The long run:
//!
//! ```text
//! MOE_FUZZ_CASES=3000 cargo test --release -p colocation-matching --test fuzz_entry_points -- --nocapture --test-threads 1
//! ```

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use colocation_matching::BipartiteError;
use colocation_matching::{
    BipartiteGraph, BottleneckOptions, COST_TENSOR_MAX_SIDE, ColocationCostModel, CostTensor,
    ExpertDemand, ExpertLoads, ExpertPairing, GpuSpec, HeteroPlacement, HyperedgeCost,
    LocalSearchOptions, LysiAlgorithm, MatchingError, PairingOptions, SolverFailure, SquareMatrix,
    ThresholdSearch, TieBreak, Worker, WorkerAssignment, assign_by_popularity,
    assign_gpus_bottleneck, assignment_lower_bound_s, bottleneck_matching, colocate_decoupled,
    colocate_exact, colocate_local_search, colocate_lower_bound_s, colocate_milp,
    exclusive_time_matrix, hopcroft_karp, lina_pairs, lysi_assign, lysi_assign_milp,
    lysi_assign_refined, lysi_assign_with, min_cost_perfect_matching, pair_bottleneck, pair_sorted,
    placement_loads, random_colocation, random_gpu_assignment, random_placement,
};
use comm_cost_model::InputError;
use expert_placement::PlacementError;
use expert_placement::{
    EplbPolicy, EplbTables, ExpertTransfer, LayerLoads, Placement, PlacementAlgorithm,
    PlacementCluster, RobustObjective, count_moves, drift_loads, eplb, lognormal_loads, place,
    place_layers, place_robust, placement_lower_bound, plan_transfers, random_slot_placement,
    rebalance, rebalance_experts, split_tokens, transfer_counts, zipf_loads,
};
use moe_fuzz::{FLOAT_EXTREMES, SIZE_EXTREMES, check_finite, check_finite_json, f64_value};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Harness: the share of `Ok` cases, and judging a result.

/// How many cases a property ran and how many of their main calls returned `Ok`.
#[derive(Debug, Clone, Default)]
struct Tally(Arc<(AtomicU32, AtomicU32)>);

impl Tally {
    fn count<T, E>(&self, r: &Result<T, E>) {
        self.0.0.fetch_add(1, Ordering::Relaxed);
        if r.is_ok() {
            self.0.1.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn report(&self, name: &str) {
        let (cases, ok) = (
            self.0.0.load(Ordering::Relaxed),
            self.0.1.load(Ordering::Relaxed),
        );
        let share = 100.0 * f64::from(ok) / f64::from(cases.max(1));
        eprintln!("fuzz {name}: {ok} of {cases} main calls Ok ({share:.0}%)");
    }
}

/// Runs `test` on [`moe_fuzz::cases`] values of `strategy` and prints the share of `Ok` cases.
fn property<S>(name: &str, strategy: S, test: fn(S::Value, &Tally) -> Result<(), String>)
where
    S: Strategy,
    S::Value: Send + Debug + Clone + 'static,
{
    let tally = Tally::default();
    let counter = tally.clone();
    moe_fuzz::fuzz(name, strategy, move |input| test(input, &counter));
    tally.report(name);
}

/// A typed error is a pass (its message must render), except a solver reporting an infeasible
/// or unbounded model: the crate's own formulations are always feasible and bounded. An `Ok`
/// goes to `check`.
fn judge<T, E: Into<Judged>>(
    r: Result<T, E>,
    check: impl FnOnce(T) -> Result<(), String>,
) -> Result<(), String> {
    match r.map_err(Into::into) {
        Ok(v) => check(v),
        Err(Judged::Colocation(
            e @ MatchingError::Solver {
                failure: SolverFailure::Infeasible | SolverFailure::Unbounded,
                ..
            },
        )) => Err(format!("the solver says {e}")),
        Err(e) => {
            let _ = e.to_string();
            Ok(())
        }
    }
}

/// The error types of the crates these entry points belong to (colocation, placement, the
/// matching primitives), judged alike.
#[derive(Debug)]
enum Judged {
    Colocation(MatchingError),
    Other(String),
}

impl std::fmt::Display for Judged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Colocation(e) => write!(f, "{e}"),
            Self::Other(e) => f.write_str(e),
        }
    }
}

impl From<MatchingError> for Judged {
    fn from(e: MatchingError) -> Self {
        Self::Colocation(e)
    }
}

impl From<PlacementError> for Judged {
    fn from(e: PlacementError) -> Self {
        Self::Other(e.to_string())
    }
}

impl From<BipartiteError> for Judged {
    fn from(e: BipartiteError) -> Self {
        Self::Other(e.to_string())
    }
}

/// `Err(message)` unless `condition`.
fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

/// `a <= b` up to a relative rounding tolerance (and an absolute one far below any normal
/// number: a load split over replicas can underflow to 0).
fn at_most(a: f64, b: f64) -> bool {
    a <= b + 1e-9 * a.abs().max(b.abs()) + 1e-300
}

/// `a` is not above `b`; true when either is NaN (a solver that returned an error).
fn not_above(a: f64, b: f64) -> bool {
    a.partial_cmp(&b) != Some(std::cmp::Ordering::Greater)
}

/// `a == b` up to a relative rounding tolerance.
fn close(a: f64, b: f64) -> bool {
    at_most(a, b) && at_most(b, a)
}

// ---------------------------------------------------------------------------------------------
// Strategies.

/// Sizes: the edge sizes of `moe-fuzz` except the crate's own limit `2^24` itself, which is
/// valid and would make a debug run slow (every size above it must be refused before any work).
fn huge() -> impl Strategy<Value = usize> {
    select(
        SIZE_EXTREMES
            .iter()
            .copied()
            .filter(|&s| s != 1 << 24)
            .collect::<Vec<_>>(),
    )
}

/// A count: small most of the time, an edge size otherwise.
fn size(small: usize) -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0..=small, 1 => huge()]
}

/// A load or byte count: ordinary values and ties mostly, an edge value a sixth of the time,
/// and finite extremes (whose sums and quotients overflow or underflow) a seventh.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => 0.0..1000.0f64,
        2 => (0u32..6).prop_map(f64::from),
        1 => f64_value(),
        1 => select(&[f64::MAX, 1e308, 1e300, f64::MIN_POSITIVE, 5e-324][..]),
    ]
}

/// A speed, bandwidth or FLOP/s: mostly ordinary and positive.
fn rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => Just(1.0),
        3 => 0.25..4.0f64,
        2 => f64_value(),
    ]
}

/// `n` values, sometimes one more or one less (mismatched shapes).
fn values(n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop_oneof![
        8 => vec(value(), n..=n),
        1 => vec(value(), n.saturating_sub(1)..=n + 1),
    ]
}

/// An expert or slot index near `n`, or an edge size.
fn index(n: usize) -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0..=n, 1 => huge()]
}

/// A square matrix's rows (sometimes ragged) of `n` experts.
fn rows(n: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop_oneof![
        8 => vec(vec(value(), n..=n), n..=n),
        1 => vec(vec(value(), 0..=n + 1), 0..=n + 1),
    ]
}

/// The parts of a placement cluster: slots, speeds and nodes of each GPU.
#[derive(Debug, Clone)]
struct ClusterParts {
    slots: Vec<usize>,
    speeds: Vec<f64>,
    nodes: Vec<usize>,
}

impl ClusterParts {
    fn build(&self) -> Result<PlacementCluster, PlacementError> {
        PlacementCluster::new(self.slots.clone(), self.speeds.clone(), self.nodes.clone())
    }
}

/// A cluster of up to four GPUs, usually valid: a few slots each, ordinary speeds, node ids
/// below the GPU count; sometimes a hostile slot count, speed, node id or length.
fn cluster_parts() -> impl Strategy<Value = ClusterParts> {
    (1usize..=4)
        .prop_flat_map(|g| {
            (
                vec(prop_oneof![12 => 1usize..=3, 1 => huge()], g..=g),
                prop_oneof![6 => vec(Just(1.0), g..=g), 3 => vec(0.5..2.0f64, g..=g), 1 => vec(rate(), g..=g)],
                prop_oneof![
                    3 => vec(Just(0usize), g..=g),
                    3 => vec(0..g, g..=g),
                    1 => vec(index(g), g..=g),
                ],
                0u8..12,
            )
        })
        .prop_map(|(slots, speeds, nodes, shape)| {
            let mut parts = ClusterParts {
                slots,
                speeds,
                nodes,
            };
            // Rarely: a missing or extra entry, or no GPU at all.
            match shape {
                0 => {
                    parts.speeds.pop();
                }
                1 => parts.nodes.push(0),
                2 => parts = ClusterParts {
                    slots: Vec::new(),
                    speeds: Vec::new(),
                    nodes: Vec::new(),
                },
                _ => {}
            }
            parts
        })
}

/// A layer's loads for `slots` physical slots with the largest GPU holding `widest`: usually an
/// expert count that fits (`widest..=slots`), sometimes any.
fn layer_for(slots: usize, widest: usize) -> impl Strategy<Value = Vec<f64>> {
    let fits = widest.max(1)..=slots.max(1);
    prop_oneof![6 => fits, 1 => 0..=9usize].prop_flat_map(|e| vec(value(), e..=e))
}

/// A cluster and one layer's loads that usually fit it.
fn instance() -> impl Strategy<Value = (ClusterParts, Vec<f64>)> {
    cluster_parts().prop_flat_map(|c| {
        let total = c
            .slots
            .iter()
            .fold(0usize, |a, &s| a.saturating_add(s))
            .min(9);
        let widest = c.slots.iter().copied().max().unwrap_or(1).min(9);
        (Just(c), layer_for(total, widest))
    })
}

/// Any placement algorithm, with hostile group counts now and then.
fn algorithm() -> impl Strategy<Value = PlacementAlgorithm> {
    prop_oneof![
        3 => Just(PlacementAlgorithm::Optimal),
        1 => Just(PlacementAlgorithm::Exact),
        1 => index(4).prop_map(|groups| PlacementAlgorithm::OptimalNodeAware { groups }),
        1 => Just(PlacementAlgorithm::Eplb(EplbPolicy::Global)),
        1 => index(4).prop_map(|groups| PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups })),
    ]
}

fn tie_break() -> impl Strategy<Value = TieBreak> {
    prop_oneof![Just(TieBreak::Any), Just(TieBreak::MinTotalWeight)]
}

// ---------------------------------------------------------------------------------------------
// Validators.

/// True if `p` is a permutation of `0..p.len()`.
fn is_permutation(p: &[usize]) -> bool {
    let mut seen = vec![false; p.len()];
    p.iter()
        .all(|&x| x < p.len() && !std::mem::replace(&mut seen[x], true))
}

/// Every permutation of `0..n` (`n <= 5` here).
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..n {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            out.push(p);
        }
    }
    out
}

/// A slot map of `experts` experts on `cluster`: one valid id per slot, every expert placed,
/// `replica_count` its counts, no duplicate on a GPU unless allowed. Returns the duplicates.
fn check_map(
    map: &[usize],
    replica_count: &[usize],
    experts: usize,
    cluster: &PlacementCluster,
    duplicates_allowed: bool,
) -> Result<usize, String> {
    ensure(map.len() == cluster.total_slots(), || {
        format!("{} slots filled of {}", map.len(), cluster.total_slots())
    })?;
    ensure(map.iter().all(|&e| e < experts), || {
        format!("an expert id >= {experts} in {map:?}")
    })?;
    let mut count = vec![0usize; experts];
    map.iter().for_each(|&e| count[e] += 1);
    ensure(count.iter().all(|&c| c > 0), || {
        format!("an expert without a replica: {map:?}")
    })?;
    ensure(replica_count == count, || {
        format!("replica counts {replica_count:?} for the map {map:?}")
    })?;
    let mut duplicates = 0;
    for g in 0..cluster.gpus() {
        let mut on: Vec<usize> = cluster.slot_range(g).map(|s| map[s]).collect();
        on.sort_unstable();
        duplicates += on.windows(2).filter(|x| x[0] == x[1]).count();
    }
    ensure(duplicates_allowed || duplicates == 0, || {
        format!("two replicas of an expert on one GPU: {map:?}")
    })?;
    Ok(duplicates)
}

/// Each GPU's load under the even split of `w` over the replicas of `map`.
fn loads_of(map: &[usize], w: &[f64], cluster: &PlacementCluster) -> Vec<f64> {
    let mut count = vec![0usize; w.len()];
    map.iter().for_each(|&e| count[e] += 1);
    (0..cluster.gpus())
        .map(|g| {
            let raw: f64 = cluster
                .slot_range(g)
                .map(|s| w[map[s]] / count[map[s]] as f64)
                .sum();
            raw / cluster.speed_of_gpu()[g]
        })
        .collect()
}

/// A placement of `loads` on `cluster` that the crate returned as `Ok`.
fn check_placement(
    p: &Placement,
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    duplicates_allowed: bool,
) -> Result<(), String> {
    let (w, map) = (loads.as_slice(), &p.physical_to_logical);
    let duplicates = check_map(map, &p.replica_count, w.len(), cluster, duplicates_allowed)?;
    ensure(duplicates == p.duplicates_on_gpu, || {
        format!("{duplicates} duplicates, {} reported", p.duplicates_on_gpu)
    })?;
    let expected_loads = loads_of(map, w, cluster);
    ensure(p.gpu_loads.len() == cluster.gpus(), || {
        "one load per GPU".into()
    })?;
    for (g, (&got, &want)) in p.gpu_loads.iter().zip(&expected_loads).enumerate() {
        check_finite("GPU load", got)?;
        ensure(close(got, want), || {
            format!("GPU {g} load {got}, expected {want}")
        })?;
    }
    let max = p.gpu_loads.iter().copied().fold(0.0, f64::max);
    ensure(p.max_gpu_load == max, || {
        format!(
            "max_gpu_load {} but the loads peak at {max}",
            p.max_gpu_load
        )
    })?;
    for (what, x) in [
        ("max_gpu_load", p.max_gpu_load),
        ("lower_bound", p.lower_bound),
        ("gap", p.gap()),
        ("mean_gpu_load", p.mean_gpu_load()),
        ("imbalance", p.imbalance()),
    ] {
        check_finite(what, x)?;
    }
    ensure(at_most(p.lower_bound, p.max_gpu_load), || {
        format!(
            "lower bound {} above the maximum {}",
            p.lower_bound, p.max_gpu_load
        )
    })?;
    // The bound holds for the crate's model, without duplicates: replicas of one expert on a
    // GPU split its load unevenly over GPUs, which can beat it on heterogeneous speeds.
    let certified = placement_lower_bound(loads, cluster).map_err(|e| format!("bound: {e}"))?;
    ensure(duplicates > 0 || at_most(certified, p.max_gpu_load), || {
        format!(
            "maximum {} below the certified bound {certified}",
            p.max_gpu_load
        )
    })?;
    if let Some(free) = p.unconstrained_max_gpu_load {
        check_finite("unconstrained_max_gpu_load", free)?;
        ensure(at_most(free, p.max_gpu_load), || {
            "unconstrained plan worse".into()
        })?;
    }
    // The plan re-evaluates to itself (the constructor accepts its parts). One exception:
    // `evaluate` scores against the closed-form bound, which can be so far below a plan's
    // proved bound (speeds spanning `f64`'s range) that the gap overflows: a typed error.
    match Placement::evaluate(loads, cluster, map.clone()) {
        Ok(again) => ensure(again.gpu_loads == p.gpu_loads, || {
            "re-evaluated loads differ".into()
        })?,
        Err(PlacementError::Input(InputError::NonFinite { what, .. }))
            if what.starts_with("gap") || what.starts_with("imbalance") => {}
        Err(e) => return Err(format!("re-evaluating the plan: {e}")),
    }
    let by_gpu = p.experts_of_gpu(cluster);
    ensure(
        by_gpu.iter().map(Vec::len).sum::<usize>() == map.len(),
        || "experts_of_gpu".into(),
    )?;
    let slots = p.logical_to_physical();
    ensure(
        slots.iter().map(Vec::len).collect::<Vec<_>>() == p.replica_count,
        || "logical_to_physical".into(),
    )?;
    check_finite_json(p, &["unconstrained_max_gpu_load"])
}

/// A pairing of `a`'s experts with `b`'s, scored.
fn check_pairing(p: &ExpertPairing, a: &ExpertLoads, b: &ExpertLoads) -> Result<(), String> {
    let b_of_a = p.b_of_a();
    ensure(is_permutation(&b_of_a) && b_of_a.len() == a.len(), || {
        format!("not a pairing: {:?}", p.pairs)
    })?;
    ensure(p.pairs.iter().enumerate().all(|(g, q)| q[0] == g), || {
        "GPU g hosts A's g".into()
    })?;
    let mut peak = 0.0f64;
    for (i, &j) in b_of_a.iter().enumerate() {
        let (send, recv) = (
            a.send_bytes[i] + b.send_bytes[j],
            a.recv_bytes[i] + b.recv_bytes[j],
        );
        ensure(
            p.gpu_send_bytes[i] == send && p.gpu_recv_bytes[i] == recv,
            || format!("GPU {i} bytes"),
        )?;
        peak = peak.max(send).max(recv);
    }
    ensure(p.bottleneck_bytes == peak, || {
        format!("bottleneck {} vs {peak}", p.bottleneck_bytes)
    })?;
    check_finite_json(p, &[])
}

/// The smallest bottleneck of any pairing of `a` with `b` (brute force).
fn best_pairing(a: &ExpertLoads, b: &ExpertLoads) -> f64 {
    permutations(a.len())
        .iter()
        .map(|perm| {
            perm.iter().enumerate().fold(0.0f64, |m, (i, &j)| {
                m.max(a.send_bytes[i] + b.send_bytes[j])
                    .max(a.recv_bytes[i] + b.recv_bytes[j])
            })
        })
        .fold(f64::INFINITY, f64::min)
}

/// A colocating + heterogeneous placement under `cost`.
fn check_hetero(p: &HeteroPlacement, cost: &impl HyperedgeCost) -> Result<(), String> {
    let a: Vec<usize> = p.gpu_experts.iter().map(|q| q[0]).collect();
    let b: Vec<usize> = p.gpu_experts.iter().map(|q| q[1]).collect();
    ensure(
        a.len() == cost.size() && is_permutation(&a) && is_permutation(&b),
        || format!("not a 3-D assignment: {:?}", p.gpu_experts),
    )?;
    let peak = (0..a.len())
        .map(|g| cost.cost_s(a[g], b[g], g))
        .fold(0.0, f64::max);
    ensure(p.bottleneck_s == peak, || {
        format!("bottleneck {} vs {peak}", p.bottleneck_s)
    })?;
    // A user's cost may hold invalid values the solvers never looked at; the bound looks at all.
    if let Ok(bound) = colocate_lower_bound_s(cost) {
        ensure(at_most(bound, p.bottleneck_s), || {
            format!(
                "bottleneck {} below the lower bound {bound}",
                p.bottleneck_s
            )
        })?;
    }
    check_finite_json(p, &[])
}

/// An assignment of `flop` to `workers` within their slots.
fn check_workers(a: &WorkerAssignment, flop: &[f64], workers: &[Worker]) -> Result<(), String> {
    ensure(a.gpu_of_expert.len() == flop.len(), || {
        "one worker per expert".into()
    })?;
    let mut used = vec![0usize; workers.len()];
    let mut load = vec![0.0f64; workers.len()];
    for (x, &j) in a.gpu_of_expert.iter().enumerate() {
        ensure(j < workers.len(), || {
            format!("worker {j} of {}", workers.len())
        })?;
        used[j] += 1;
        load[j] += flop[x];
    }
    ensure(
        used.iter().zip(workers).all(|(&u, w)| u <= w.expert_slots),
        || format!("slots exceeded: {used:?}"),
    )?;
    for (&got, &want) in a.worker_flop.iter().zip(&load) {
        ensure(close(got, want), || format!("worker FLOP {got} vs {want}"))?;
    }
    let makespan = load
        .iter()
        .zip(workers)
        .map(|(&l, w)| l / w.flop_per_s)
        .fold(0.0, f64::max);
    ensure(close(a.makespan_s, makespan), || {
        format!("makespan {} vs {makespan}", a.makespan_s)
    })?;
    ensure(at_most(a.lower_bound_s, a.makespan_s), || {
        format!(
            "makespan {} below the bound {}",
            a.makespan_s, a.lower_bound_s
        )
    })?;
    check_finite_json(a, &[])
}

/// A JSON round trip: what `value` serializes to deserializes back to the same value (up to
/// the last digit of a float: `serde_json` does not parse floats correctly rounded).
fn round_trip<T: Serialize + DeserializeOwned>(value: &T) -> Result<(), String> {
    let text = serde_json::to_string(value).map_err(|e| format!("serialize: {e}"))?;
    let back: T = serde_json::from_str(&text).map_err(|e| format!("deserialize {text}: {e}"))?;
    let (a, b) = (
        serde_json::to_value(value).map_err(|e| e.to_string())?,
        serde_json::to_value(&back).map_err(|e| e.to_string())?,
    );
    ensure(same_json(&a, &b), || {
        format!("round trip of {text} changed it")
    })
}

/// Equal JSON values, numbers equal up to a relative `1e-15`.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.fract() != 0.0 || y.fract() != 0.0 => {
                (x - y).abs() <= 1e-15 * x.abs().max(y.abs())
            }
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

// ---------------------------------------------------------------------------------------------
// Matchings: bottleneck and minimum-cost perfect matchings, Hopcroft-Karp.

/// A weight matrix (maybe ragged), forbidden pairs and the solver options.
#[derive(Debug, Clone)]
struct MatchingCase {
    rows: Vec<Vec<f64>>,
    forbidden: Vec<(usize, usize)>,
    tie_break: TieBreak,
    binary_search: bool,
}

fn matching_case() -> impl Strategy<Value = MatchingCase> {
    (0usize..=5)
        .prop_flat_map(|n| {
            (
                // Now and then every weight near `f64::MAX`, so that any total overflows.
                prop_oneof![4 => rows(n), 1 => vec(vec(1e307..f64::MAX, n..=n), n..=n)],
                prop_oneof![2 => Just(Vec::new()), 1 => vec((index(n), index(n)), 0..=3)],
                tie_break(),
                any::<bool>(),
            )
        })
        .prop_map(|(rows, forbidden, tie_break, binary_search)| MatchingCase {
            rows,
            forbidden,
            tie_break,
            binary_search,
        })
}

/// The allowed permutations of an `n x n` problem.
fn allowed_permutations(n: usize, forbidden: &[(usize, usize)]) -> Vec<Vec<usize>> {
    permutations(n)
        .into_iter()
        .filter(|p| {
            p.iter()
                .enumerate()
                .all(|(i, &j)| !forbidden.contains(&(i, j)))
        })
        .collect()
}

fn chosen(w: &SquareMatrix, p: &[usize]) -> impl Iterator<Item = f64> {
    p.iter()
        .enumerate()
        .map(|(i, &j)| w.get(i, j).unwrap_or(f64::NAN))
}

/// A perfect matching of `w` avoiding `forbidden`, with its figures.
fn check_matching(
    m: &colocation_matching::WeightedMatching,
    w: &SquareMatrix,
    forbidden: &[(usize, usize)],
) -> Result<(), String> {
    let p = &m.assignment;
    ensure(p.len() == w.n() && is_permutation(p), || {
        format!("not a permutation: {p:?}")
    })?;
    ensure(
        p.iter()
            .enumerate()
            .all(|(i, &j)| !forbidden.contains(&(i, j))),
        || format!("a forbidden pair in {p:?}"),
    )?;
    ensure(m.bottleneck == chosen(w, p).fold(0.0, f64::max), || {
        "bottleneck".into()
    })?;
    ensure(m.total_weight == chosen(w, p).sum::<f64>(), || {
        "total weight".into()
    })?;
    check_finite_json(m, &[])
}

#[test]
fn matchings() {
    property(
        "colocation_matching::matching",
        matching_case(),
        |c, tally| {
            let w = match SquareMatrix::from_rows(&c.rows) {
                Ok(w) => w,
                Err(e) => {
                    tally.count(&Err::<(), _>(e));
                    return Ok(());
                }
            };
            let n = w.n();
            let options = BottleneckOptions {
                forbidden: c.forbidden.clone(),
                tie_break: c.tie_break,
                search: if c.binary_search {
                    ThresholdSearch::BinarySearch
                } else {
                    ThresholdSearch::Incremental
                },
            };
            let in_range = c.forbidden.iter().all(|&(i, j)| i < n && j < n);
            let perms = allowed_permutations(n, &c.forbidden);
            let bottleneck = |p: &Vec<usize>| chosen(&w, p).fold(0.0, f64::max);
            let best = perms.iter().map(bottleneck).fold(f64::INFINITY, f64::min);
            let largest = w.as_slice().iter().copied().fold(0.0, f64::max);
            // The least total among `perms` whose bottleneck is at most `cap`.
            let least_total = |cap: f64| {
                perms
                    .iter()
                    .filter(|p| bottleneck(p) <= cap)
                    .map(|p| chosen(&w, p).sum::<f64>())
                    .fold(f64::INFINITY, f64::min)
            };
            // Float rounding of the Hungarian potentials is relative to the largest weight.
            let near = |total: f64, best: f64| total <= best + 1e-9 * (best + largest * n as f64);
            let r = bottleneck_matching(&w, &options);
            tally.count(&r);
            match r {
                Ok(m) => {
                    check_matching(&m, &w, &c.forbidden)?;
                    ensure(m.bottleneck == best, || {
                        format!("bottleneck {} but brute force finds {best}", m.bottleneck)
                    })?;
                    if c.tie_break == TieBreak::MinTotalWeight {
                        let least = least_total(best);
                        ensure(near(m.total_weight, least), || {
                            format!("total {} but {least} is possible", m.total_weight)
                        })?;
                    }
                }
                Err(BipartiteError::NoPerfectMatching { .. }) => {
                    ensure(!in_range || perms.is_empty(), || {
                        format!("no perfect matching, but brute force finds {best}")
                    })?;
                }
                Err(e) => {
                    let _ = e.to_string();
                }
            }
            judge(min_cost_perfect_matching(&w, &c.forbidden), |m| {
                check_matching(&m, &w, &c.forbidden)?;
                let least = least_total(f64::INFINITY);
                ensure(near(m.total_weight, least), || {
                    format!("total {} but {least} is possible", m.total_weight)
                })
            })?;
            judge(assign_gpus_bottleneck(&w), |a| {
                ensure(is_permutation(&a.gpu_of_expert), || "GPU assignment".into())?;
                let unforbidden = permutations(n)
                    .iter()
                    .map(bottleneck)
                    .fold(f64::INFINITY, f64::min);
                ensure(a.bottleneck_s == unforbidden, || {
                    "GPU assignment not optimal".into()
                })?;
                let by_gpu = a.experts_of_gpu();
                ensure(by_gpu.iter().all(|e| e.len() == 1), || {
                    "experts_of_gpu".into()
                })
            })
        },
    );
}

/// Maximum matching size by simple augmenting paths (the oracle).
fn max_matching(n_right: usize, adjacency: &[Vec<usize>]) -> usize {
    fn augment(
        u: usize,
        adj: &[Vec<usize>],
        owner: &mut [Option<usize>],
        seen: &mut [bool],
    ) -> bool {
        for &v in &adj[u] {
            if !std::mem::replace(&mut seen[v], true)
                && owner[v].is_none_or(|w| augment(w, adj, owner, seen))
            {
                owner[v] = Some(u);
                return true;
            }
        }
        false
    }
    let mut owner = vec![None; n_right];
    (0..adjacency.len())
        .filter(|&u| augment(u, adjacency, &mut owner, &mut vec![false; n_right]))
        .count()
}

#[test]
fn bipartite_graphs() {
    let strategy = (size(5), vec(vec(index(5), 0..=4), 0..=5));
    property(
        "colocation_matching::hopcroft_karp",
        strategy,
        |(n_right, adjacency), tally| {
            let r = BipartiteGraph::from_adjacency(n_right, &adjacency);
            tally.count(&r);
            judge(r, |g| {
                ensure(
                    g.n_left() == adjacency.len() && g.n_right() == n_right,
                    || "sizes".into(),
                )?;
                ensure(
                    g.edge_count() == adjacency.iter().map(Vec::len).sum::<usize>(),
                    || "edges".into(),
                )?;
                for u in [0, 1, g.n_left(), g.n_left() + 1, usize::MAX] {
                    let expected = adjacency.get(u).map_or(&[][..], Vec::as_slice);
                    ensure(g.neighbors(u) == expected, || format!("neighbors({u})"))?;
                }
                round_trip(&g)?;
                let m = hopcroft_karp(&g);
                let mut used = vec![false; n_right];
                for (u, v) in m.left_to_right.iter().enumerate() {
                    if let Some(v) = *v {
                        ensure(adjacency[u].contains(&v), || format!("{u}-{v} is no edge"))?;
                        ensure(!std::mem::replace(&mut used[v], true), || {
                            format!("{v} twice")
                        })?;
                    }
                }
                ensure(m.size == m.left_to_right.iter().flatten().count(), || {
                    "size".into()
                })?;
                let best = max_matching(n_right, &adjacency);
                ensure(m.size == best, || {
                    format!("matching of {} but {best} exist", m.size)
                })
            })
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Pairing two models' experts (Aurora §6.2), loads from traffic, Lina and the random baselines.

/// Send and receive bytes of two models, a gate, a tie-break, a seed and a padding size.
#[derive(Debug, Clone)]
struct PairingCase {
    a: (Vec<f64>, Vec<f64>),
    b: (Vec<f64>, Vec<f64>),
    gate: f64,
    tie_break: TieBreak,
    seed: u64,
    pad: usize,
}

fn pairing_case() -> impl Strategy<Value = PairingCase> {
    (0usize..=5)
        .prop_flat_map(|n| {
            (
                (values(n), values(n)),
                (values(n), values(n)),
                prop_oneof![3 => Just(0.0), 1 => value()],
                tie_break(),
                any::<u64>(),
                size(7),
            )
        })
        .prop_map(|(a, b, gate, tie_break, seed, pad)| PairingCase {
            a,
            b,
            gate,
            tie_break,
            seed,
            pad,
        })
}

#[test]
fn pairings() {
    property(
        "colocation_matching::pairing",
        pairing_case(),
        |c, tally| {
            let loads = ExpertLoads::new(c.a.0.clone(), c.a.1.clone())
                .and_then(|a| Ok((a, ExpertLoads::new(c.b.0.clone(), c.b.1.clone())?)));
            let (a, b) = match loads {
                Ok(ab) => ab,
                Err(e) => {
                    tally.count(&Err::<(), _>(e));
                    return Ok(());
                }
            };
            round_trip(&a)?;
            ensure(a.len() == c.a.0.len() && !a.is_empty(), || "len".into())?;
            let options = PairingOptions {
                gate_b_bytes: c.gate,
                tie_break: c.tie_break,
            };
            let r = pair_bottleneck(&a, &b, &options);
            tally.count(&r);
            judge(r, |p| {
                check_pairing(&p, &a, &b)?;
                if c.gate == 0.0 {
                    let best = best_pairing(&a, &b);
                    ensure(p.bottleneck_bytes == best, || {
                        format!(
                            "bottleneck {} but brute force finds {best}",
                            p.bottleneck_bytes
                        )
                    })?;
                    // The other tie-break finds a pairing just as good.
                    let other = PairingOptions {
                        tie_break: match c.tie_break {
                            TieBreak::Any => TieBreak::MinTotalWeight,
                            _ => TieBreak::Any,
                        },
                        ..options
                    };
                    let q = pair_bottleneck(&a, &b, &other)
                        .map_err(|e| format!("other tie-break: {e}"))?;
                    ensure(q.bottleneck_bytes == best, || "other tie-break".into())?;
                }
                Ok(())
            })?;
            judge(pair_sorted(&c.a.0, &c.b.0), |p| {
                let (sa, sb) = (
                    ExpertLoads::symmetric(c.a.0.clone()).map_err(|e| e.to_string())?,
                    ExpertLoads::symmetric(c.b.0.clone()).map_err(|e| e.to_string())?,
                );
                check_pairing(&p, &sa, &sb)?;
                let best = best_pairing(&sa, &sb);
                ensure(p.bottleneck_bytes == best, || {
                    format!(
                        "Case I bottleneck {} but brute force finds {best}",
                        p.bottleneck_bytes
                    )
                })
            })?;
            judge(random_colocation(a.len(), c.seed), |perm| {
                judge(ExpertPairing::evaluate(&a, &b, &perm), |p| {
                    check_pairing(&p, &a, &b)
                })?;
                // A corrupted pairing is refused.
                let mut bad = perm.clone();
                bad[0] = bad.len();
                ensure(ExpertPairing::evaluate(&a, &b, &bad).is_err(), || {
                    "bad pairing accepted".into()
                })
            })?;
            judge(a.padded(c.pad), |p| {
                ensure(
                    p.len() == c.pad && p.send_bytes[..a.len()] == a.send_bytes[..],
                    || "padding".into(),
                )?;
                ensure(p.send_bytes[a.len()..].iter().all(|&x| x == 0.0), || {
                    "padding".into()
                })
            })
        },
    );
}

/// A traffic matrix, a placement of its experts on GPUs, and the FFN FLOP per byte.
#[derive(Debug, Clone)]
struct TrafficCase {
    rows: Vec<Vec<f64>>,
    gpu_of_expert: Vec<usize>,
    gpus: usize,
    flop_per_byte: f64,
}

fn traffic_case() -> impl Strategy<Value = TrafficCase> {
    (1usize..=5)
        .prop_flat_map(|n| {
            (
                rows(n),
                prop_oneof![6 => vec(0..3usize, n..=n), 1 => vec(index(3), 0..=n + 1)],
                prop_oneof![6 => Just(3usize), 1 => size(3)],
                value(),
            )
        })
        .prop_map(|(rows, gpu_of_expert, gpus, flop_per_byte)| TrafficCase {
            rows,
            gpu_of_expert,
            gpus,
            flop_per_byte,
        })
}

#[test]
fn loads_from_traffic() {
    property(
        "colocation_matching::traffic_loads",
        traffic_case(),
        |c, tally| {
            // Lina on raw (maybe hostile) loads.
            if let Some(raw) = c.rows.first() {
                judge(lina_pairs(raw), |gpus| {
                    ensure(
                        gpus.iter().map(Vec::len).sum::<usize>() == raw.len(),
                        || "Lina".into(),
                    )
                })?;
            }
            let Ok(d) = SquareMatrix::from_rows(&c.rows) else {
                tally.count(&Err::<(), ()>(()));
                return Ok(());
            };
            let n = d.n();
            let r = ExpertLoads::from_traffic(&d);
            tally.count(&r);
            judge(r, |loads| {
                for i in 0..n {
                    let send: f64 = (0..n).filter(|&j| j != i).map(|j| c.rows[i][j]).sum();
                    let recv: f64 = (0..n).filter(|&j| j != i).map(|j| c.rows[j][i]).sum();
                    ensure(
                        close(loads.send_bytes[i], send) && close(loads.recv_bytes[i], recv),
                        || format!("row or column {i}"),
                    )?;
                }
                check_finite_json(&loads, &[])?;
                judge(lina_pairs(&loads.recv_bytes), |gpus| {
                    let mut all: Vec<usize> = gpus.concat();
                    all.sort_unstable();
                    ensure(all == (0..n).collect::<Vec<_>>(), || {
                        format!("Lina lost experts: {gpus:?}")
                    })?;
                    ensure(gpus.iter().all(|g| (1..=2).contains(&g.len())), || {
                        "Lina GPU size".into()
                    })
                })?;
                judge(
                    ExpertDemand::from_loads(&loads, c.flop_per_byte),
                    |demand| {
                        ensure(demand.len() == n, || "one demand per expert".into())?;
                        for (e, x) in demand.iter().enumerate() {
                            ensure(x.flop == loads.recv_bytes[e] * c.flop_per_byte, || {
                                "flop".into()
                            })?;
                        }
                        check_finite_json(&demand, &[])
                    },
                )
            })?;
            judge(placement_loads(&d, &c.gpu_of_expert, c.gpus), |per_gpu| {
                ensure(per_gpu.len() == c.gpus, || "one entry per GPU".into())?;
                let mut send = vec![0.0; c.gpus];
                for i in 0..n {
                    for j in 0..n {
                        let (gi, gj) = (c.gpu_of_expert[i], c.gpu_of_expert[j]);
                        if gi != gj {
                            send[gi] += c.rows[i][j];
                        }
                    }
                }
                ensure(per_gpu.send_bytes == send, || "GPU send bytes".into())?;
                check_finite_json(&per_gpu, &[])
            })
        },
    );
}

#[test]
fn random_baselines() {
    let strategy = (size(9), any::<u64>(), any::<bool>());
    property(
        "colocation_matching::random_baselines",
        strategy,
        |(n, seed, colocated), tally| {
            let r = random_colocation(n, seed);
            tally.count(&r);
            judge(r, |rec| {
                ensure(rec.len() == n && is_permutation(&rec), || "REC".into())?;
                ensure(random_colocation(n, seed) == Ok(rec.clone()), || {
                    "REC seeded".into()
                })?;
                let rga = random_gpu_assignment(n, seed).map_err(|e| e.to_string())?;
                ensure(is_permutation(&rga), || "RGA".into())?;
                let placement = random_placement(n, colocated, seed).map_err(|e| e.to_string())?;
                ensure(placement.len() == n, || "one list per GPU".into())?;
                for (g, experts) in placement.iter().enumerate() {
                    let a = experts[0];
                    ensure(rga[a] == g, || "RGA in the placement".into())?;
                    ensure(!colocated || experts == &[a, rec[a]], || {
                        "REC in the placement".into()
                    })?;
                }
                Ok(())
            })?;
            // Huge counts are refused before allocating, by all three.
            ensure(
                random_gpu_assignment(n, seed).is_ok()
                    == (n <= expert_placement::MAX_PLACEMENT_SLOTS),
                || "RGA limit".into(),
            )?;
            judge(random_placement(n, colocated, seed), |_| Ok(()))
        },
    );
}

// ---------------------------------------------------------------------------------------------
// GPU assignment (Aurora §5.1) and colocating + heterogeneous placement (Aurora §7).

fn demand() -> impl Strategy<Value = ExpertDemand> {
    (value(), value(), value()).prop_map(|(send_bytes, recv_bytes, flop)| ExpertDemand {
        send_bytes,
        recv_bytes,
        flop,
    })
}

fn gpu() -> impl Strategy<Value = GpuSpec> {
    (rate(), rate()).prop_map(|(flop_per_s, bandwidth_bytes_per_s)| GpuSpec {
        flop_per_s,
        bandwidth_bytes_per_s,
    })
}

/// `n` items, sometimes one more or one less.
fn items<S: Strategy>(item: fn() -> S, n: usize) -> impl Strategy<Value = Vec<S::Value>> {
    prop_oneof![8 => vec(item(), n..=n), 1 => vec(item(), n.saturating_sub(1)..=n + 1)]
}

#[test]
fn gpu_assignments() {
    let strategy =
        (0usize..=5).prop_flat_map(|n| (items(demand, n), items(gpu, n), values(n), values(n)));
    property(
        "colocation_matching::gpu_assignment",
        strategy,
        |(experts, gpus, tokens, perf), tally| {
            let r = exclusive_time_matrix(&experts, &gpus);
            tally.count(&r);
            judge(r, |t| {
                for (e, x) in experts.iter().enumerate() {
                    for (g, y) in gpus.iter().enumerate() {
                        let want = 2.0 * x.send_bytes.max(x.recv_bytes) / y.bandwidth_bytes_per_s
                            + x.flop / y.flop_per_s;
                        ensure(t.get(e, g) == Some(want), || format!("time ({e}, {g})"))?;
                    }
                }
                judge(assign_gpus_bottleneck(&t), |a| {
                    let best = permutations(t.n())
                        .iter()
                        .map(|p| chosen(&t, p).fold(0.0, f64::max))
                        .fold(f64::INFINITY, f64::min);
                    ensure(
                        a.bottleneck_s == best && is_permutation(&a.gpu_of_expert),
                        || {
                            format!(
                                "assignment {:?} at {} vs {best}",
                                a.gpu_of_expert, a.bottleneck_s
                            )
                        },
                    )
                })
            })?;
            judge(assign_by_popularity(&tokens, &perf), |gpu_of| {
                ensure(
                    is_permutation(&gpu_of) && gpu_of.len() == tokens.len(),
                    || "Thm 5.1".into(),
                )?;
                // A more popular expert never gets a slower GPU.
                for x in 0..tokens.len() {
                    for y in 0..tokens.len() {
                        if tokens[x] > tokens[y] {
                            ensure(perf[gpu_of[x]] >= perf[gpu_of[y]], || {
                                "Thm 5.1 order".into()
                            })?;
                        }
                    }
                }
                Ok(())
            })
        },
    );
}

/// A user's cost function returning hostile values, with a hostile size.
#[derive(Debug, Clone)]
struct HostileCost {
    n: usize,
    values: Vec<f64>,
}

impl HyperedgeCost for HostileCost {
    fn size(&self) -> usize {
        self.n
    }

    fn cost_s(&self, a: usize, b: usize, gpu: usize) -> f64 {
        let k = a
            .wrapping_mul(7)
            .wrapping_add(b.wrapping_mul(3))
            .wrapping_add(gpu);
        self.values[k % self.values.len()]
    }
}

fn local_search_options() -> impl Strategy<Value = LocalSearchOptions> {
    (index(4), index(4), index(4), any::<u64>()).prop_map(
        |(max_rounds, min_total_up_to, restarts, seed)| LocalSearchOptions {
            max_rounds,
            min_total_up_to,
            restarts,
            seed,
        },
    )
}

/// The colocating + heterogeneous instances: a structured model, a tensor and a user's cost.
#[derive(Debug, Clone)]
struct HeteroCase {
    n: usize,
    model_a: Vec<ExpertDemand>,
    model_b: Vec<ExpertDemand>,
    gpus: Vec<GpuSpec>,
    tensor: Vec<f64>,
    hostile: HostileCost,
    options: LocalSearchOptions,
}

fn hetero_case() -> impl Strategy<Value = HeteroCase> {
    // Sizes of the user's cost: small, or above every solver's limit.
    let hostile_n =
        prop_oneof![4 => 0..=3usize, 1 => select(vec![(1 << 15) + 1, 1 << 32, usize::MAX])];
    (0usize..=3)
        .prop_flat_map(move |n| {
            (
                Just(n),
                items(demand, n),
                items(demand, n),
                items(gpu, n),
                vec(value(), n * n * n..=n * n * n),
                (hostile_n.clone(), vec(value(), 1..=4)),
                local_search_options(),
            )
        })
        .prop_map(
            |(n, model_a, model_b, gpus, tensor, (m, values), options)| HeteroCase {
                n,
                model_a,
                model_b,
                gpus,
                tensor,
                hostile: HostileCost { n: m, values },
                options,
            },
        )
}

/// Every colocating + heterogeneous solver on `cost`: valid placements, exact <= local search
/// <= decoupled, exact <= MILP. With `valid` costs (the crate's validated types) every solver
/// must succeed, except for the size limits.
fn solve_hetero(
    cost: &(impl HyperedgeCost + Debug),
    options: &LocalSearchOptions,
    valid: bool,
) -> Result<(), String> {
    let decoupled = colocate_decoupled(cost);
    let local = colocate_local_search(cost, options);
    let exact = colocate_exact(cost);
    let milp = colocate_milp(cost);
    let mut values = [f64::NAN; 4];
    for (k, r) in [decoupled, local, exact, milp].into_iter().enumerate() {
        // The MILP may give up on badly conditioned costs (documented).
        let gave_up = |e: &MatchingError| {
            k == 3
                && matches!(
                    e,
                    MatchingError::Solver {
                        failure: SolverFailure::Internal,
                        ..
                    }
                )
        };
        if let Err(e) = &r {
            ensure(
                !valid
                    || matches!(e, MatchingError::Input(InputError::TooLarge { .. }))
                    || gave_up(e),
                || format!("solver {k} refused valid costs: {e}"),
            )?;
        }
        judge(r, |p| {
            values[k] = p.bottleneck_s;
            check_hetero(&p, cost)
        })?;
    }
    let [decoupled, local, exact, milp] = values;
    ensure(not_above(local, decoupled), || {
        format!("local search {local} > decoupled {decoupled}")
    })?;
    ensure(
        not_above(exact, local) && not_above(exact, milp * (1.0 + 1e-9)),
        || format!("exact {exact} above local search {local} or MILP {milp}"),
    )?;
    // Both are exact: the MILP only up to its solver's tolerance, relative to the decoupled
    // bottleneck it scales by.
    ensure(
        not_above(milp, exact * (1.0 + 1e-6) + 1e-9 * decoupled),
        || format!("MILP {milp} above the optimum {exact}"),
    )
}

#[test]
fn hetero_placements() {
    property("colocation_matching::hetero", hetero_case(), |c, tally| {
        let r = ColocationCostModel::new(c.model_a.clone(), c.model_b.clone(), c.gpus.clone());
        tally.count(&r);
        judge(r, |model| {
            let n = model.size();
            for (a, b, g) in [
                (0, 0, 0),
                (n, 0, 0),
                (0, n, 0),
                (0, 0, n),
                (usize::MAX, 0, 0),
            ] {
                let inside = a < n && b < n && g < n;
                ensure(model.get(a, b, g).is_some() == inside, || {
                    format!("get({a}, {b}, {g})")
                })?;
                ensure(model.cost_s(a, b, g).is_finite() == inside, || {
                    "cost_s".into()
                })?;
                ensure(
                    model.pair_weight(a, b).is_finite() == (a < n && b < n),
                    || "pair".into(),
                )?;
            }
            round_trip(&model)?;
            check_finite(
                "bound",
                colocate_lower_bound_s(&model).map_err(|e| e.to_string())?,
            )?;
            solve_hetero(&model, &c.options, true)
        })?;
        let n = c.n;
        judge(
            CostTensor::from_fn(n, |a, b, g| c.tensor[(a * n + b) * n + g]),
            |t| {
                ensure(t.size() == n && t.get(n, 0, 0).is_none(), || {
                    "tensor".into()
                })?;
                round_trip(&t)?;
                check_finite(
                    "bound",
                    colocate_lower_bound_s(&t).map_err(|e| e.to_string())?,
                )?;
                solve_hetero(&t, &c.options, true)
            },
        )?;
        solve_hetero(&c.hostile, &c.options, false)?;
        judge(colocate_lower_bound_s(&c.hostile), |b| {
            check_finite("bound", b)
        })?;
        // The tensor's size limit is checked before allocating.
        ensure(
            CostTensor::from_fn(COST_TENSOR_MAX_SIDE + 1, |_, _, _| 0.0).is_err(),
            || "tensor limit".into(),
        )
    });
}

// ---------------------------------------------------------------------------------------------
// LysiAssign (Aristos Algorithm 2), its refinement and MILP.

fn worker() -> impl Strategy<Value = Worker> {
    (rate(), prop_oneof![6 => 1usize..=4, 1 => huge()]).prop_map(|(flop_per_s, expert_slots)| {
        Worker {
            flop_per_s,
            expert_slots,
        }
    })
}

#[test]
fn lysi_assignments() {
    let strategy = (vec(value(), 0..=6), vec(worker(), 0..=3));
    property(
        "colocation_matching::lysi_assign",
        strategy,
        |(flop, workers), tally| {
            let r = lysi_assign(&flop, &workers);
            tally.count(&r);
            let paper = r.as_ref().map(|a| a.makespan_s).unwrap_or(f64::NAN);
            // A valid instance is solved by every variant (the MILP within its size limit, and
            // unless microlp gives up on badly conditioned times).
            if r.is_ok() {
                let refined = lysi_assign_refined(&flop, &workers);
                ensure(refined.is_ok(), || {
                    format!("refined refused a valid instance: {refined:?}")
                })?;
                let milp = lysi_assign_milp(&flop, &workers);
                ensure(
                    milp.is_ok()
                        || matches!(
                            milp,
                            Err(MatchingError::Input(InputError::TooLarge { .. })
                                | MatchingError::Solver {
                                    failure: SolverFailure::Internal,
                                    ..
                                })
                        ),
                    || format!("the MILP refused a valid instance: {milp:?}"),
                )?;
            }
            judge(r, |a| check_workers(&a, &flop, &workers))?;
            let mut refined = f64::NAN;
            judge(lysi_assign_refined(&flop, &workers), |a| {
                refined = a.makespan_s;
                check_workers(&a, &flop, &workers)?;
                ensure(not_above(a.makespan_s, paper), || {
                    format!("refined {} > paper {paper}", a.makespan_s)
                })
            })?;
            judge(lysi_assign_milp(&flop, &workers), |a| {
                check_workers(&a, &flop, &workers)?;
                // The refined variant is exact for so few experts, the MILP up to its tolerance.
                ensure(not_above(refined, a.makespan_s * (1.0 + 1e-9)), || {
                    format!("refined {refined} above the MILP's {}", a.makespan_s)
                })?;
                ensure(
                    not_above(a.makespan_s, refined * (1.0 + 1e-6) + 1e-9 * paper),
                    || format!("MILP {} above the optimum {refined}", a.makespan_s),
                )
            })?;
            for algorithm in [
                LysiAlgorithm::Paper,
                LysiAlgorithm::Refined,
                LysiAlgorithm::Milp,
            ] {
                ensure(algorithm.to_string() == algorithm.name(), || "name".into())?;
                round_trip(&algorithm)?;
                judge(lysi_assign_with(&flop, &workers, algorithm), |a| {
                    check_workers(&a, &flop, &workers)
                })?;
            }
            judge(assignment_lower_bound_s(&flop, &workers), |b| {
                check_finite("bound", b)
            })
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Synthetic workloads.

#[test]
fn workloads() {
    let strategy = (
        (size(3), size(9), f64_value(), f64_value(), any::<u64>()),
        (vec(vec(value(), 0..=4), 0..=3), f64_value()),
    );
    property(
        "colocation_matching::workloads",
        strategy,
        |((layers, experts, shape, tokens, seed), (rows, sigma)), tally| {
            let r = lognormal_loads(layers, experts, shape, tokens, seed);
            tally.count(&r);
            let check = |w: Vec<Vec<f64>>| -> Result<(), String> {
                ensure(
                    w.len() == layers && w.iter().all(|l| l.len() == experts),
                    || "shape".into(),
                )?;
                ensure(
                    w.iter().flatten().all(|&x| x.is_finite() && x >= 0.0),
                    || "a load that is not finite and non-negative".into(),
                )?;
                check_finite_json(&w, &[])
            };
            judge(r, check)?;
            judge(zipf_loads(layers, experts, shape, tokens, seed), check)?;
            judge(drift_loads(&rows, sigma, seed), |w| {
                ensure(w.len() == rows.len(), || "layers".into())?;
                for (a, b) in rows.iter().zip(&w) {
                    ensure(a.len() == b.len(), || "experts".into())?;
                    ensure(a.iter().zip(b).all(|(&x, &y)| x != 0.0 || y == 0.0), || {
                        "an idle expert became busy".into()
                    })?;
                }
                check_finite_json(&w, &[])
            })
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Placement inputs: clusters and layer loads.

/// A cluster that passed construction.
fn check_cluster(c: &PlacementCluster) -> Result<(), String> {
    let g = c.gpus();
    ensure(
        c.total_slots() == c.slots_of_gpu().iter().sum::<usize>(),
        || "total slots".into(),
    )?;
    ensure(
        c.speed_of_gpu().len() == g && c.node_of_gpu().len() == g,
        || "lengths".into(),
    )?;
    let mut ids = c.node_of_gpu().to_vec();
    ids.sort_unstable();
    ids.dedup();
    ensure(ids.len() == c.nodes() && ids.iter().all(|&n| n < g), || {
        "nodes".into()
    })?;
    let each = c.gpu_of_each_slot();
    ensure(each.len() == c.total_slots(), || "gpu_of_each_slot".into())?;
    for gpu in 0..g {
        let range = c.slot_range(gpu);
        ensure(range.len() == c.slots_of_gpu()[gpu], || {
            format!("slot_range({gpu})")
        })?;
        for s in [range.start, range.end - 1] {
            ensure(c.gpu_of_slot(s) == Some(gpu) && each[s] == gpu, || {
                format!("slot {s}")
            })?;
        }
    }
    for past in [g, g + 1, usize::MAX] {
        ensure(c.slot_range(past).is_empty(), || {
            format!("slot_range({past})")
        })?;
    }
    for past in [c.total_slots(), usize::MAX] {
        ensure(c.gpu_of_slot(past).is_none(), || {
            format!("gpu_of_slot({past})")
        })?;
    }
    let uniform = c.slots_of_gpu().iter().all(|&s| s == c.slots_of_gpu()[0]);
    ensure(c.uniform_slots().is_some() == uniform, || {
        "uniform_slots".into()
    })?;
    ensure(
        c.is_homogeneous() == c.speed_of_gpu().iter().all(|&v| v == 1.0),
        || "is_homogeneous".into(),
    )?;
    round_trip(c)?;
    check_finite_json(c, &[])
}

#[test]
fn clusters_and_loads() {
    let strategy = (
        cluster_parts(),
        (size(5), size(4), size(3)),
        vec(vec(value(), 0..=4), 0..=3),
    );
    property(
        "colocation_matching::placement_inputs",
        strategy,
        |(parts, (gpus, slots, nodes), rows), tally| {
            let r = parts.build();
            tally.count(&r);
            judge(r, |c| check_cluster(&c))?;
            judge(PlacementCluster::uniform(gpus, slots, nodes), |c| {
                ensure(c.gpus() == gpus && c.uniform_slots() == Some(slots), || {
                    "uniform".into()
                })?;
                ensure(c.nodes() == nodes, || "uniform nodes".into())?;
                let sizes: Vec<usize> = (0..nodes)
                    .map(|n| c.node_of_gpu().iter().filter(|&&x| x == n).count())
                    .collect();
                let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                ensure(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1), || {
                    "uneven nodes".into()
                })?;
                ensure(c.node_of_gpu().windows(2).all(|x| x[0] <= x[1]), || {
                    "contiguous".into()
                })?;
                if gpus <= 64 {
                    check_cluster(&c)?;
                }
                Ok(())
            })?;
            for row in &rows {
                judge(LayerLoads::new(row.clone()), |l| {
                    ensure(
                        l.as_slice() == &row[..] && l.len() == row.len() && !l.is_empty(),
                        || "loads".into(),
                    )?;
                    check_finite("total", l.total())?;
                    round_trip(&l)
                })?;
            }
            judge(LayerLoads::layers(rows.clone()), |layers| {
                ensure(layers.len() == rows.len(), || "layers".into())
            })
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Placement, EPLB, rebalancing, robust plans, token splits, transfers.

#[test]
fn placements() {
    let strategy = (instance(), algorithm(), vec(value(), 0..=9), any::<u64>());
    property(
        "expert_placement::place",
        strategy,
        |((parts, w), algorithm, other, seed), tally| {
            let (Ok(c), Ok(loads)) = (parts.build(), LayerLoads::new(w)) else {
                tally.count(&Err::<(), ()>(()));
                return Ok(());
            };
            ensure(algorithm.to_string() == algorithm.name(), || "name".into())?;
            round_trip(&algorithm)?;
            let duplicates = matches!(algorithm, PlacementAlgorithm::Eplb(_));
            let r = place(&loads, &c, algorithm);
            tally.count(&r);
            judge(r, |p| {
                check_placement(&p, &loads, &c, duplicates)?;
                if algorithm == PlacementAlgorithm::Exact {
                    // Proved optimal up to the search's relative tolerance.
                    ensure(p.gap() <= 1e-9, || {
                        format!("exact plan with gap {}", p.gap())
                    })?;
                }
                // No plan beats the exact one (which may run out of budget, or find a plan
                // with duplicates better than EPLB's unless EPLB's has duplicates).
                if let Ok(exact) = place(&loads, &c, PlacementAlgorithm::Exact) {
                    ensure(
                        at_most(exact.max_gpu_load, p.max_gpu_load) || p.duplicates_on_gpu > 0,
                        || {
                            format!(
                                "{algorithm} plan {} beats the exact {}",
                                p.max_gpu_load, exact.max_gpu_load
                            )
                        },
                    )?;
                }
                if let PlacementAlgorithm::Eplb(policy) = algorithm {
                    let again = eplb(&loads, &c, policy).map_err(|e| e.to_string())?;
                    ensure(again == p, || "eplb differs from place".into())?;
                }
                judge(random_slot_placement(&loads, &c, &p, seed), |q| {
                    check_placement(&q, &loads, &c, true)?;
                    ensure(q.replica_count == p.replica_count, || {
                        "random keeps counts".into()
                    })
                })
            })?;
            judge(placement_lower_bound(&loads, &c), |b| {
                check_finite("bound", b)
            })?;
            // Several layers, the second maybe of another size.
            let Ok(second) = LayerLoads::new(other) else {
                return Ok(());
            };
            let layers = [loads.clone(), second];
            judge(place_layers(&layers, &c, algorithm), |plans| {
                ensure(plans.len() == 2, || "one plan per layer".into())?;
                for (p, l) in plans.iter().zip(&layers) {
                    check_placement(p, l, &c, duplicates)?;
                }
                Ok(())
            })
        },
    );
}

/// A current slot map for `parts`: EPLB's (maybe with duplicates) or any ids.
fn current_map() -> impl Strategy<Value = (ClusterParts, Vec<f64>, Vec<usize>)> {
    instance().prop_flat_map(|(parts, w)| {
        let slots = parts
            .slots
            .iter()
            .fold(0usize, |a, &s| a.saturating_add(s))
            .min(12);
        let experts = w.len();
        (
            Just(parts),
            Just(w),
            prop_oneof![
                4 => Just(Vec::new()), // filled with EPLB's plan
                2 => vec(0..experts.max(1), slots..=slots),
                1 => vec(index(experts), 0..=slots + 1),
            ],
        )
    })
}

/// `map`, or when it is empty EPLB's global plan of `loads` (which may put two replicas of an
/// expert on a GPU), or slot `s` to expert `s mod E` where EPLB refuses the cluster.
fn current_or_eplb(map: Vec<usize>, loads: &LayerLoads, c: &PlacementCluster) -> Vec<usize> {
    if !map.is_empty() {
        return map;
    }
    eplb(loads, c, EplbPolicy::Global).map_or_else(
        |_| (0..c.total_slots()).map(|s| s % loads.len()).collect(),
        |p| p.physical_to_logical,
    )
}

/// Transfers from `current` to `next` on `c`.
fn check_transfers(
    t: &[ExpertTransfer],
    current: &[usize],
    next: &[usize],
    c: &PlacementCluster,
) -> Result<(), String> {
    for x in t {
        let dest = c.gpu_of_slot(x.slot);
        ensure(
            dest == Some(x.destination_gpu) && next[x.slot] == x.expert,
            || format!("transfer {x:?}"),
        )?;
        let holds = |g: usize, e: usize| c.slot_range(g).any(|s| current[s] == e);
        ensure(holds(x.source_gpu, x.expert), || format!("source of {x:?}"))?;
        ensure(!holds(x.destination_gpu, x.expert), || {
            format!("destination of {x:?}")
        })?;
    }
    judge(transfer_counts(t, c.gpus()), |m| {
        ensure(m.iter().flatten().sum::<u64>() == t.len() as u64, || {
            "transfer_counts".into()
        })
    })?;
    check_finite_json(&t, &[])
}

#[test]
fn rebalances() {
    let strategy = (current_map(), vec(value(), 0..=9), f64_value());
    property(
        "expert_placement::rebalance",
        strategy,
        |((parts, old, map), new, tolerance), tally| {
            let (Ok(c), Ok(old)) = (parts.build(), LayerLoads::new(old)) else {
                tally.count(&Err::<(), ()>(()));
                return Ok(());
            };
            let current = current_or_eplb(map, &old, &c);
            // The new loads: another layer, or the old ones changed.
            let new = LayerLoads::new(if new.len() == old.len() {
                new
            } else {
                old.as_slice().to_vec()
            })
            .map_err(|e| e.to_string());
            let Ok(new) = new else {
                tally.count(&Err::<(), ()>(()));
                return Ok(());
            };
            let r = rebalance(&current, &new, &c, tolerance);
            tally.count(&r);
            judge(r, |r| {
                check_placement(&r.placement, &new, &c, false)?;
                let next = &r.placement.physical_to_logical;
                ensure(r.moves == r.transfers.len(), || "moves".into())?;
                let moves =
                    count_moves(&current, next, &c, new.len()).map_err(|e| e.to_string())?;
                ensure(moves == r.moves, || {
                    format!("count_moves {moves} vs {}", r.moves)
                })?;
                check_transfers(&r.transfers, &current, next, &c)?;
                ensure(
                    at_most(r.placement.max_gpu_load, r.target_max_gpu_load),
                    || {
                        format!(
                            "plan {} above its target {}",
                            r.placement.max_gpu_load, r.target_max_gpu_load
                        )
                    },
                )?;
                ensure(
                    r.tradeoff
                        .windows(2)
                        .all(|x| x[0].moves <= x[1].moves && x[1].max_gpu_load < x[0].max_gpu_load),
                    || format!("trade-off not a Pareto front: {:?}", r.tradeoff),
                )?;
                check_finite_json(&r, &["unconstrained_max_gpu_load"])
            })
        },
    );
}

/// How the next map of a transfer is made from the current one.
#[derive(Debug, Clone)]
enum Next {
    /// The current map with slots exchanged (pairs of slot indices, taken modulo the length).
    Swapped(Vec<(usize, usize)>),
    /// The optimal plan for the loads.
    Optimal,
    /// Any ids.
    Any(Vec<usize>),
}

fn next_map() -> impl Strategy<Value = Next> {
    prop_oneof![
        3 => vec((0..12usize, 0..12usize), 0..=4).prop_map(Next::Swapped),
        2 => Just(Next::Optimal),
        1 => vec(index(4), 0..=12).prop_map(Next::Any),
    ]
}

#[test]
fn transfers() {
    let strategy = (
        current_map(),
        next_map(),
        prop_oneof![3 => Just(None), 1 => size(6).prop_map(Some)],
        vec((index(4), index(4), index(4), index(4)), 0..=3),
        size(4),
    );
    property(
        "colocation_matching::transfers",
        strategy,
        |((parts, w, current), next, experts, raw, gpus), tally| {
            let Ok(c) = parts.build() else {
                tally.count(&Err::<(), ()>(()));
                return Ok(());
            };
            let experts = experts.unwrap_or(w.len());
            let loads = LayerLoads::new(w);
            let current = match &loads {
                Ok(l) => current_or_eplb(current, l, &c),
                Err(_) => current,
            };
            let next = match (next, &loads) {
                (Next::Swapped(pairs), _) if !current.is_empty() => {
                    let mut m = current.clone();
                    for (a, b) in pairs {
                        m.swap(a % current.len(), b % current.len());
                    }
                    m
                }
                (Next::Optimal, Ok(l)) => place(l, &c, PlacementAlgorithm::Optimal)
                    .map_or_else(|_| current.clone(), |p| p.physical_to_logical),
                (Next::Any(m), _) => m,
                _ => current.clone(),
            };
            let r = plan_transfers(&current, &next, &c, experts);
            tally.count(&r);
            judge(r, |t| {
                check_transfers(&t, &current, &next, &c)?;
                let moves = count_moves(&current, &next, &c, experts).map_err(|e| e.to_string())?;
                ensure(moves == t.len(), || "count_moves".into())
            })?;
            judge(count_moves(&current, &next, &c, experts), |m| {
                ensure(m <= next.len(), || "more moves than slots".into())
            })?;
            // Scoring any map, and shuffling a scored one.
            if let Ok(l) = &loads {
                for map in [&current, &next] {
                    judge(Placement::evaluate(l, &c, map.clone()), |p| {
                        check_placement(&p, l, &c, true)?;
                        judge(random_slot_placement(l, &c, &p, experts as u64), |q| {
                            check_placement(&q, l, &c, true)
                        })
                    })?;
                }
            }
            let hostile: Vec<ExpertTransfer> = raw
                .into_iter()
                .map(
                    |(expert, source_gpu, destination_gpu, slot)| ExpertTransfer {
                        expert,
                        source_gpu,
                        destination_gpu,
                        slot,
                    },
                )
                .collect();
            judge(transfer_counts(&hostile, gpus), |m| {
                ensure(m.len() == gpus && m.iter().all(|r| r.len() == gpus), || {
                    "shape".into()
                })?;
                ensure(
                    m.iter().flatten().sum::<u64>() == hostile.len() as u64,
                    || "sum".into(),
                )
            })
        },
    );
}

#[test]
fn robust_placements() {
    let windows = vec(
        prop_oneof![6 => Just(None), 1 => vec(value(), 0..=9).prop_map(Some)],
        0..=3,
    );
    let objective = prop_oneof![Just(RobustObjective::Worst), Just(RobustObjective::Mean)];
    let strategy = (instance(), windows, objective);
    property(
        "expert_placement::place_robust",
        strategy,
        |((parts, w), extra, objective), tally| {
            let Ok(c) = parts.build() else {
                tally.count(&Err::<(), ()>(()));
                return Ok(());
            };
            // Windows: the instance's loads, reversed or replaced now and then.
            let rows: Vec<Vec<f64>> = std::iter::once(w.clone())
                .chain(
                    extra
                        .into_iter()
                        .map(|x| x.unwrap_or_else(|| w.iter().rev().copied().collect())),
                )
                .collect();
            let Ok(windows) = rows
                .into_iter()
                .map(LayerLoads::new)
                .collect::<Result<Vec<_>, _>>()
            else {
                tally.count(&Err::<(), ()>(()));
                return Ok(());
            };
            let r = place_robust(&windows, &c, objective);
            tally.count(&r);
            judge(r, |r| {
                ensure(r.window_max_gpu_loads.len() == windows.len(), || {
                    "windows".into()
                })?;
                let map = &r.physical_to_logical;
                check_map(map, &r.replica_count, windows[0].len(), &c, false)?;
                for (k, l) in windows.iter().enumerate() {
                    let peak = loads_of(map, l.as_slice(), &c)
                        .into_iter()
                        .fold(0.0, f64::max);
                    ensure(close(peak, r.window_max_gpu_loads[k]), || {
                        format!("window {k}")
                    })?;
                    let bound = placement_lower_bound(l, &c).map_err(|e| e.to_string())?;
                    ensure(at_most(bound, peak), || {
                        format!("window {k} below its bound")
                    })?;
                }
                ensure(at_most(r.lower_bound, r.objective_value), || {
                    format!(
                        "objective {} below its bound {}",
                        r.objective_value, r.lower_bound
                    )
                })?;
                ensure(
                    at_most(r.objective_value, r.newest_only_objective_value),
                    || "worse than the newest window's plan".into(),
                )?;
                check_finite_json(&r, &[])
            })
        },
    );
}

fn tokens() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0u64..50, 1 => moe_fuzz::u64_value()]
}

#[test]
fn token_splits() {
    let strategy = current_map().prop_flat_map(|(parts, w, map)| {
        let e = w.len();
        (
            Just((parts, w, map)),
            prop_oneof![6 => vec(tokens(), e..=e), 1 => vec(tokens(), 0..=e + 1)],
        )
    });
    property(
        "expert_placement::split_tokens",
        strategy,
        |((parts, w, map), tokens), tally| {
            let Ok(c) = parts.build() else {
                tally.count(&Err::<(), ()>(()));
                return Ok(());
            };
            let map = match LayerLoads::new(w) {
                Ok(l) => current_or_eplb(map, &l, &c),
                Err(_) => map,
            };
            let r = split_tokens(&map, &tokens, &c);
            tally.count(&r);
            judge(r, |s| {
                for (split, per_gpu, max) in [
                    (&s.slot_tokens, &s.gpu_tokens, s.max_gpu_load),
                    (&s.even_slot_tokens, &s.even_gpu_tokens, s.even_max_gpu_load),
                ] {
                    ensure(split.len() == map.len(), || "one entry per slot".into())?;
                    for (e, &t) in tokens.iter().enumerate() {
                        let sum: u64 = map
                            .iter()
                            .zip(split)
                            .filter(|(x, _)| **x == e)
                            .map(|(_, &k)| k)
                            .sum();
                        ensure(sum == t, || format!("expert {e} gets {sum} of {t} tokens"))?;
                    }
                    for (g, &tokens) in per_gpu.iter().enumerate() {
                        let sum: u64 = c.slot_range(g).map(|s| split[s]).sum();
                        ensure(tokens == sum, || format!("GPU {g} tokens"))?;
                    }
                    let peak = per_gpu
                        .iter()
                        .zip(c.speed_of_gpu())
                        .map(|(&t, &v)| t as f64 / v)
                        .fold(0.0, f64::max);
                    ensure(max == peak, || format!("maximum {max} vs {peak}"))?;
                }
                ensure(at_most(s.max_gpu_load, s.even_max_gpu_load), || {
                    "worse than even".into()
                })?;
                check_finite_json(&s, &[])
            })
        },
    );
}

/// A shape for `rebalance_experts`, usually consistent.
fn eplb_shape() -> impl Strategy<Value = (Vec<Vec<f64>>, usize, usize, usize, usize)> {
    let consistent = (1usize..=4, 1usize..=3, 1usize..=2, 1usize..=4).prop_flat_map(
        |(gpus, slots, nodes, groups)| {
            let replicas = gpus * slots;
            (
                (1usize..=replicas).prop_flat_map(|e| vec(vec(value(), e..=e), 1..=3)),
                Just(replicas),
                Just(groups),
                Just(nodes),
                Just(gpus),
            )
        },
    );
    let any = (
        vec(vec(value(), 0..=6), 0..=3),
        size(12),
        size(4),
        size(2),
        size(4),
    );
    prop_oneof![3 => consistent, 1 => any]
}

fn check_tables(t: &EplbTables, weights: &[Vec<f64>], replicas: usize) -> Result<(), String> {
    ensure(t.physical_to_logical.len() == weights.len(), || {
        "layers".into()
    })?;
    for (l, w) in weights.iter().enumerate() {
        let (map, count, l2p) = (
            &t.physical_to_logical[l],
            &t.logical_count[l],
            &t.logical_to_physical[l],
        );
        ensure(
            map.len() == replicas && count.len() == w.len() && l2p.len() == w.len(),
            || format!("layer {l} shapes"),
        )?;
        for (e, slots) in l2p.iter().enumerate() {
            let mine: Vec<i64> = (0..map.len())
                .filter(|&s| map[s] == e)
                .map(|s| s as i64)
                .collect();
            let mut listed: Vec<i64> = slots.iter().copied().filter(|&s| s >= 0).collect();
            listed.sort_unstable();
            ensure(
                listed == mine && count[e] == mine.len() && count[e] > 0,
                || format!("layer {l} expert {e}: {slots:?} vs {mine:?}"),
            )?;
            ensure(slots.iter().all(|&s| s >= -1), || "padding".into())?;
        }
    }
    check_finite_json(t, &[])
}

#[test]
fn eplb_tables() {
    property(
        "expert_placement::rebalance_experts",
        eplb_shape(),
        |(weights, replicas, groups, nodes, gpus), tally| {
            let r = rebalance_experts(&weights, replicas, groups, nodes, gpus);
            tally.count(&r);
            judge(r, |t| {
                check_tables(&t, &weights, replicas)?;
                // Each layer is `eplb` on the same cluster.
                let policy = EplbPolicy::for_shape(groups, nodes);
                ensure(policy == EplbPolicy::for_shape(groups, nodes), || {
                    "for_shape".into()
                })?;
                let node_count = match policy {
                    EplbPolicy::Hierarchical { .. } => nodes,
                    EplbPolicy::Global => 1,
                };
                let c = PlacementCluster::uniform(gpus, replicas / gpus, node_count)
                    .map_err(|e| e.to_string())?;
                for (l, w) in weights.iter().enumerate() {
                    let loads = LayerLoads::new(w.clone()).map_err(|e| e.to_string())?;
                    judge(eplb(&loads, &c, policy), |p| {
                        check_placement(&p, &loads, &c, true)?;
                        ensure(p.physical_to_logical == t.physical_to_logical[l], || {
                            format!("layer {l} differs from eplb")
                        })
                    })?;
                }
                Ok(())
            })?;
            let hierarchical = nodes > 0 && groups % nodes == 0;
            ensure(
                matches!(
                    EplbPolicy::for_shape(groups, nodes),
                    EplbPolicy::Hierarchical { .. }
                ) == hierarchical,
                || "for_shape".into(),
            )
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Serde: every input type deserializes only into a valid value; output types never panic.

/// A JSON number at the edges (JSON has no NaN or infinities).
fn json_number() -> impl Strategy<Value = Value> {
    let finite: Vec<f64> = FLOAT_EXTREMES
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    prop_oneof![
        4 => (0u64..5).prop_map(|x| json!(x)),
        2 => (0.0..4.0f64).prop_map(|x| json!(x)),
        1 => select(finite).prop_map(|x| json!(x)),
        1 => moe_fuzz::u64_value().prop_map(|x| json!(x)),
        1 => Just(json!(-1)),
        1 => Just(json!("x")),
        1 => Just(Value::Null),
    ]
}

/// A JSON array of up to `len` numbers.
fn json_array(len: usize) -> impl Strategy<Value = Value> {
    vec(json_number(), 0..=len).prop_map(Value::Array)
}

/// A JSON array of mostly three counts in `usual`.
fn json_counts(usual: std::ops::RangeInclusive<u64>) -> impl Strategy<Value = Value> {
    let count = prop_oneof![6 => usual.prop_map(|x| json!(x)), 1 => json_number()];
    prop_oneof![4 => vec(count.clone(), 3..=3), 1 => vec(count, 0..=4)].prop_map(Value::Array)
}

/// A JSON array of mostly three positive reals.
fn json_reals() -> impl Strategy<Value = Value> {
    let real = prop_oneof![6 => (0.5..2.0f64).prop_map(|x| json!(x)), 1 => json_number()];
    prop_oneof![4 => vec(real.clone(), 3..=3), 1 => vec(real, 0..=4)].prop_map(Value::Array)
}

/// A JSON array of up to `len` arrays of numbers.
fn json_matrix(len: usize) -> impl Strategy<Value = Value> {
    vec(json_array(len), 0..=len).prop_map(Value::Array)
}

/// An object with the given fields, each maybe left out.
fn json_object(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> impl Strategy<Value = Value> {
    let parts: Vec<_> = fields
        .into_iter()
        .map(|(k, v)| prop_oneof![8 => v.prop_map(Some), 1 => Just(None)].prop_map(move |v| (k, v)))
        .collect();
    parts.prop_map(|kv| {
        Value::Object(
            kv.into_iter()
                .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
                .collect(),
        )
    })
}

/// A JSON array of up to two objects with numeric `fields`.
fn json_list(fields: &[&'static str]) -> BoxedStrategy<Value> {
    let object = json_object(fields.iter().map(|&f| (f, json_number().boxed())).collect());
    vec(object, 0..=2).prop_map(Value::Array).boxed()
}

/// Deserializes `v` as `T`: a refusal passes, a value must round-trip, be finite and pass `check`.
fn from_json<T: Serialize + DeserializeOwned + PartialEq + Debug>(
    v: &Value,
    check: impl FnOnce(&T) -> Result<(), String>,
) -> Result<bool, String> {
    match serde_json::from_value::<T>(v.clone()) {
        Err(_) => Ok(false),
        Ok(t) => {
            check_finite_json(&t, &[])?;
            check(&t)?;
            Ok(true)
        }
    }
}

#[test]
fn serde_inputs() {
    let strategy = (
        json_object(vec![
            ("slots_of_gpu", json_counts(1..=3).boxed()),
            ("speed_of_gpu", json_reals().boxed()),
            ("node_of_gpu", json_counts(0..=1).boxed()),
        ]),
        json_array(5),
        json_object(vec![
            ("send_bytes", json_array(3).boxed()),
            ("recv_bytes", json_array(3).boxed()),
        ]),
        prop_oneof![
            json_object(vec![
                ("n_right", json_number().boxed()),
                ("adjacency", json_matrix(3).boxed())
            ]),
            // The fields of the graph's memory layout, which must not deserialize.
            json_object(vec![
                ("n_right", json_number().boxed()),
                ("offsets", json_array(3).boxed()),
                ("targets", json_array(3).boxed()),
            ]),
        ],
        json_object(vec![
            ("n", json_number().boxed()),
            ("data", json_array(9).boxed()),
        ]),
        json_object(vec![
            ("model_a", json_list(&["send_bytes", "recv_bytes", "flop"])),
            ("model_b", json_list(&["send_bytes", "recv_bytes", "flop"])),
            ("gpus", json_list(&["flop_per_s", "bandwidth_bytes_per_s"])),
        ]),
        json_object(vec![
            ("physical_to_logical", json_array(4).boxed()),
            ("replica_count", json_array(3).boxed()),
            ("gpu_loads", json_array(3).boxed()),
            ("max_gpu_load", json_number().boxed()),
            ("lower_bound", json_number().boxed()),
            ("duplicates_on_gpu", json_number().boxed()),
        ]),
        select(vec![
            json!("optimal"),
            json!("exact"),
            json!({"optimal-node-aware": {"groups": 0}}),
            json!({"optimal-node-aware": {"groups": u64::MAX}}),
            json!({"eplb": "global"}),
            json!({"eplb": {"hierarchical": {"groups": 2}}}),
            json!("paper"),
            json!("refined"),
            json!("min-total-weight"),
            json!("binary-search"),
            json!("mean"),
            json!("nonsense"),
        ]),
    );
    property(
        "colocation_matching::serde",
        strategy,
        |(cluster, layer, loads, graph, tensor, model, placement, name), tally| {
            let ok = from_json::<PlacementCluster>(&cluster, check_cluster)?;
            tally.count(&if ok { Ok(()) } else { Err(()) });
            from_json::<LayerLoads>(&layer, |l| {
                ensure(
                    LayerLoads::new(l.as_slice().to_vec()).as_ref() == Ok(l),
                    || "loads".into(),
                )
            })?;
            from_json::<ExpertLoads>(&loads, |l| {
                ensure(
                    ExpertLoads::new(l.send_bytes.clone(), l.recv_bytes.clone()).as_ref() == Ok(l),
                    || "expert loads".into(),
                )
            })?;
            from_json::<BipartiteGraph>(&graph, |g| {
                let _ = hopcroft_karp(g);
                round_trip(g)
            })?;
            from_json::<CostTensor>(&tensor, |t| {
                let n = t.size();
                ensure(
                    (0..n).all(|a| t.get(a, a, a).is_some_and(f64::is_finite)),
                    || "tensor".into(),
                )?;
                round_trip(t)
            })?;
            from_json::<ColocationCostModel>(&model, |m| {
                let n = m.size();
                ensure(
                    m.get(n - 1, n - 1, n - 1).is_some_and(f64::is_finite),
                    || "model".into(),
                )?;
                round_trip(m)
            })?;
            // An output type built from anything: its methods must not panic.
            if let Ok(p) = serde_json::from_value::<Placement>(placement) {
                let c = PlacementCluster::uniform(2, 2, 1).map_err(|e| e.to_string())?;
                let _ = (p.gap(), p.imbalance(), p.mean_gpu_load());
                let _ = (p.experts_of_gpu(&c), p.logical_to_physical());
            }
            from_json::<PlacementAlgorithm>(&name, |a| {
                ensure(a.to_string() == a.name(), || "name".into())?;
                round_trip(a)
            })?;
            from_json::<LysiAlgorithm>(&name, round_trip)?;
            from_json::<TieBreak>(&name, round_trip)?;
            from_json::<ThresholdSearch>(&name, round_trip)?;
            from_json::<RobustObjective>(&name, round_trip)?;
            Ok(())
        },
    );
}

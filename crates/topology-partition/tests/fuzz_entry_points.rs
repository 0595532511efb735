//! Fuzzing every public entry point of topology-partition (issue 13) with hostile values: NaN,
//! infinities, subnormals, `f64::MAX`, `usize::MAX` counts and slots, empty, ragged and
//! mismatched shapes, malformed CSV, and huge sizes. Every call must return within
//! [`moe_fuzz::TIME_LIMIT`] without panicking; an `Ok` must be finite and pass the crate's own
//! checks: a cluster rebuilds through [`Cluster::new`]; a partition re-evaluates to itself
//! through [`AristosObjective::evaluate`], covers every worker once, and (for LysiGroup, the
//! smallest-fitting baseline and the exhaustive search) gives every group the expert slots
//! for all experts and a finite `T(g)`; the exhaustive optimum is no worse than any other
//! grouping.
//!
//! Inputs are mostly valid-looking (a few workers, ordinary link costs and training constants)
//! with hostile values mixed in; every property prints its share of `Ok` cases. `cargo test`
//! runs [`moe_fuzz::DEFAULT_CASES`] cases per property; the long run:
//!
//! ```text
//! MOE_FUZZ_CASES=3000 cargo test --release -p topology-partition --test fuzz_entry_points -- --nocapture --test-threads 1
//! ```

use comm_cost_model::{AlphaBeta, SquareMatrix};
use moe_fuzz::{SIZE_EXTREMES, check_finite, f64_value, fuzz_tallied};
use proptest::collection::vec;
use proptest::prelude::*;
use topology_partition::{
    AristosObjective, Cluster, EXHAUSTIVE_MAX_WORKERS, GroupCost, MAX_WORKERS, NodeKind, Partition,
    TrainingConstants, Worker, exhaustive_partition, lysi_group, one_group_per_node,
    perlmutter_inter, perlmutter_intra, random_cluster, smallest_fitting_groups, whole_world,
};

// ---------------------------------------------------------------------------------------------
// Inputs

/// A count: mostly small, sometimes at the edges of `usize`.
fn small_or_extreme(small: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = usize> {
    prop_oneof![5 => small, 1 => prop::sample::select(SIZE_EXTREMES)]
}

/// A worker, built as a struct literal (its fields are public): ordinary or hostile FLOP/s and
/// expert slots.
fn worker() -> impl Strategy<Value = Worker> {
    (
        prop_oneof![4 => 1e9..1e15_f64, 1 => f64_value()],
        small_or_extreme(0..=48),
    )
        .prop_map(|(flop_per_s, expert_slots)| Worker {
            flop_per_s,
            expert_slots,
        })
}

/// A link cost: a latency-like or inverse-bandwidth-like value, or a hostile one.
fn cost() -> impl Strategy<Value = f64> {
    prop_oneof![3 => 1e-7..1e-4_f64, 2 => 1e-12..1e-9_f64, 1 => f64_value()]
}

/// An ordinary link cost: a latency-like or an inverse-bandwidth-like value.
fn ordinary_cost() -> impl Strategy<Value = f64> {
    prop_oneof![1e-7..1e-4_f64, 1e-12..1e-9_f64]
}

/// `n x n` rows of ordinary link costs, symmetric half of the time (what `to_graph` needs),
/// with a hostile value put in one entry a third of the time.
fn cost_rows(n: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
    (
        vec(vec(ordinary_cost(), n), n),
        any::<bool>(),
        prop::option::weighted(0.33, (0..n, 0..n, f64_value())),
    )
        .prop_map(move |(mut rows, symmetric, hostile)| {
            if symmetric {
                // The lower triangle mirrors the upper one.
                for (i, j) in (0..n).flat_map(|i| (0..i).map(move |j| (i, j))) {
                    rows[i][j] = rows[j][i];
                }
            }
            if let Some((i, j, x)) = hostile {
                rows[i][j] = x;
            }
            rows
        })
}

/// Workers `0..n` split into groups by a label per worker (always a partition).
fn partition_of(n: usize) -> impl Strategy<Value = Vec<Vec<usize>>> {
    vec(0..n.max(1), n).prop_map(move |label| {
        let mut groups = vec![Vec::new(); n.max(1)];
        for (w, &g) in label.iter().enumerate() {
            groups[g].push(w);
        }
        groups.retain(|g| !g.is_empty());
        groups
    })
}

/// Some of the workers `0..n` in some order, or any ids.
fn ids_of(n: usize) -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        3 => Just((0..n).collect::<Vec<_>>())
            .prop_shuffle()
            .prop_flat_map(move |all| (0..=n).prop_map(move |k| all[..k].to_vec())),
        1 => vec(id(n), 0..=n + 1),
    ]
}

/// The parts of a cluster of about `n` workers; the shapes sometimes disagree.
#[derive(Debug, Clone)]
struct Parts {
    workers: Vec<Worker>,
    nodes: Vec<usize>,
    alpha: Vec<Vec<f64>>,
    beta: Vec<Vec<f64>>,
}

impl Parts {
    fn build(&self) -> Result<Cluster, topology_partition::TopologyError> {
        Cluster::from_rows(
            self.workers.clone(),
            self.nodes.clone(),
            &self.alpha,
            &self.beta,
        )
    }
}

fn parts() -> impl Strategy<Value = Parts> {
    (1_usize..=5).prop_flat_map(parts_n)
}

fn parts_n(n: usize) -> impl Strategy<Value = Parts> {
    {
        (
            prop_oneof![6 => vec(worker(), n), 1 => vec(worker(), 0..=n + 1)],
            prop_oneof![6 => vec(0_usize..3, n), 1 => vec(0_usize..3, 0..=n + 1)],
            prop_oneof![6 => cost_rows(n), 1 => vec(vec(cost(), 0..=n + 1), 0..=n + 1)],
            cost_rows(n),
        )
            .prop_map(|(workers, nodes, alpha, beta)| Parts {
                workers,
                nodes,
                alpha,
                beta,
            })
    }
}

/// Training constants: ordinary, with hostile values mixed in.
fn training() -> impl Strategy<Value = TrainingConstants> {
    (
        prop_oneof![4 => 0.0..2.0_f64, 1 => f64_value()],
        small_or_extreme(1..=96),
        small_or_extreme(1..=4096),
        small_or_extreme(1..=4),
        small_or_extreme(1..=16),
    )
        .prop_map(
            |(recompute, layers, global_batch, moe_every, micro_batch)| TrainingConstants {
                recompute,
                layers,
                global_batch,
                moe_every,
                micro_batch,
            },
        )
}

/// FLOP of an expert: ordinary or hostile.
fn flop() -> impl Strategy<Value = f64> {
    prop_oneof![6 => 1e9..1e13_f64, 1 => f64_value()]
}

/// An objective: a few experts (so that small clusters can hold them) of ordinary or hostile
/// FLOP, hostile message counts and sizes.
fn objective() -> impl Strategy<Value = AristosObjective> {
    (
        training(),
        prop_oneof![
            6 => (1_usize..=40, flop()).prop_map(|(e, f)| vec![f; e]),
            1 => vec(flop(), 0..=8),
        ],
        prop_oneof![4 => 1.0..4.0_f64, 1 => f64_value()],
        prop_oneof![4 => 1e5..1e9_f64, 1 => f64_value()],
        prop_oneof![4 => 1e5..1e9_f64, 1 => f64_value()],
        any::<bool>(),
    )
        .prop_map(
            |(training, expert_flop, messages_per_edge, d, d_ar, inference)| AristosObjective {
                training,
                expert_flop,
                messages_per_edge,
                all_to_all_bytes: d,
                all_reduce_bytes: d_ar,
                inference,
            },
        )
}

/// An alpha-beta link built as a struct literal (unchecked).
fn link() -> impl Strategy<Value = AlphaBeta> {
    (cost(), cost()).prop_map(|(alpha_s, beta_s_per_byte)| AlphaBeta {
        alpha_s,
        beta_s_per_byte,
    })
}

/// A node kind with hostile fields mixed in.
fn node_kind() -> impl Strategy<Value = NodeKind> {
    (
        small_or_extreme(1..=4),
        prop_oneof![4 => 1e12..1e15_f64, 1 => f64_value()],
        small_or_extreme(0..=48),
        link(),
        link(),
    )
        .prop_map(
            |(gpus, flop_per_s, expert_slots, intra, network)| NodeKind {
                gpus,
                flop_per_s,
                expert_slots,
                intra,
                network,
            },
        )
}

/// A worker id of a cluster of about `n`: in range, just past it, or at the edges of `usize`.
fn id(n: usize) -> impl Strategy<Value = usize> {
    prop_oneof![6 => 0..=n, 1 => prop::sample::select(SIZE_EXTREMES)]
}

// ---------------------------------------------------------------------------------------------
// Checks of `Ok` results

/// `Ok(())` when a cluster rebuilds from its parts and its accessors agree with each other.
fn check_cluster(c: &Cluster) -> Result<(), String> {
    let n = c.len();
    let again = Cluster::new(
        c.workers().to_vec(),
        c.node_of_worker().to_vec(),
        c.alpha_s().clone(),
        c.beta_s_per_byte().clone(),
    )
    .map_err(|e| format!("the cluster does not rebuild: {e}"))?;
    if again != *c || c.is_empty() || n > MAX_WORKERS || c.node_of_worker().len() != n {
        return Err(format!("cluster of {n} workers is inconsistent"));
    }
    let json = serde_json::to_string(c).map_err(|e| e.to_string())?;
    let back: Cluster = serde_json::from_str(&json).map_err(|e| format!("serde: {e}"))?;
    if back.len() != n {
        return Err("serde changes the worker count".into());
    }
    let slots = c
        .workers()
        .iter()
        .fold(0_u64, |acc, w| acc.saturating_add(w.expert_slots as u64));
    if c.total_expert_slots() != slots {
        return Err(format!(
            "total_expert_slots {} != {slots}",
            c.total_expert_slots()
        ));
    }
    let mut members: Vec<usize> = c.nodes().concat();
    members.sort_unstable();
    if members != (0..n).collect::<Vec<_>>() {
        return Err("nodes() does not list every worker once".into());
    }
    let worst = c.worst_link();
    check_finite("worst alpha", worst.alpha_s)?;
    check_finite("worst beta", worst.beta_s_per_byte)?;
    for i in 0..n {
        for j in 0..n {
            let link = c.link(i, j).ok_or("link in range is None")?;
            if link.alpha_s > worst.alpha_s || link.beta_s_per_byte > worst.beta_s_per_byte {
                return Err(format!("link ({i}, {j}) is worse than worst_link"));
            }
            if i == j && (link.alpha_s != 0.0 || link.beta_s_per_byte != 0.0) {
                return Err("a diagonal link costs something".into());
            }
        }
    }
    if c.link(n, 0).is_some() || c.link(0, usize::MAX).is_some() {
        return Err("link out of range is Some".into());
    }
    if c.check_symmetric(1e-9).is_ok() {
        let graph = c
            .to_graph()
            .map_err(|e| format!("symmetric but no graph: {e}"))?;
        if graph.node_count() != n || graph.edge_count() != n * (n - 1) / 2 {
            return Err("to_graph has the wrong size".into());
        }
    }
    Ok(())
}

/// The expert slots of a group, saturating like the crate.
fn slots_of(c: &Cluster, group: &[usize]) -> u64 {
    group.iter().fold(0_u64, |acc, &w| {
        acc.saturating_add(c.workers()[w].expert_slots as u64)
    })
}

/// `Ok(())` when a partition covers every worker once, re-evaluates to itself, and has a
/// finite `T(g)` exactly for the groups whose slots hold every expert (all of them when
/// `all_feasible`).
fn check_partition(
    what: &str,
    p: &Partition,
    c: &Cluster,
    o: &AristosObjective,
    all_feasible: bool,
) -> Result<(), String> {
    let again = o
        .evaluate(c, p.groups.clone())
        .map_err(|e| format!("{what}: its own groups do not evaluate: {e}"))?;
    if again != *p {
        return Err(format!(
            "{what}: re-evaluating changes it: {again:?} vs {p:?}"
        ));
    }
    if p.objective_s.len() != p.groups.len() {
        return Err(format!("{what}: one T(g) per group expected"));
    }
    let experts = o.expert_flop.len() as u64;
    for (g, (group, &t)) in p.groups.iter().zip(&p.objective_s).enumerate() {
        let feasible = slots_of(c, group) >= experts;
        if all_feasible && !feasible {
            return Err(format!("{what}: group {g} has too few expert slots"));
        }
        if feasible != t.is_finite() || (feasible && t < 0.0) {
            return Err(format!(
                "{what}: group {g} (feasible {feasible}) has T = {t}"
            ));
        }
    }
    let max = p.max_objective_s();
    if all_feasible {
        check_finite("max_objective_s", max)?;
    }
    let of = p.group_of();
    if of.len() != c.len()
        || p.groups
            .iter()
            .enumerate()
            .any(|(g, m)| m.iter().any(|&w| of[w] != g))
    {
        return Err(format!("{what}: group_of disagrees with the groups"));
    }
    let json = serde_json::to_string(p).map_err(|e| e.to_string())?;
    let back: Partition = serde_json::from_str(&json).map_err(|e| format!("serde: {e}"))?;
    if back.groups != p.groups
        || back
            .objective_s
            .iter()
            .map(|t| t.is_finite())
            .ne(p.objective_s.iter().map(|t| t.is_finite()))
    {
        return Err(format!("{what}: serde changes the partition"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Properties

/// `Cluster::new` / `from_rows` / serde and every accessor: `len`, `is_empty`, `workers`,
/// `node_of_worker`, `alpha_s`, `beta_s_per_byte`, `link`, `total_expert_slots`, `nodes`,
/// `worst_link`, `check_symmetric`, `to_graph`, `restrict`, `relabel_nodes`.
#[test]
fn clusters() {
    let input = (1_usize..=5).prop_flat_map(|n| {
        (
            parts_n(n),
            prop_oneof![4 => 0.0..1e-6_f64, 1 => f64_value()],
            ids_of(n),
            small_or_extreme(0..=8),
        )
    });
    fuzz_tallied(
        "topology-partition::cluster",
        input,
        |t, (p, tol, ids, offset)| {
            // `new` directly, from validated matrices.
            if let (Ok(a), Ok(b)) = (
                SquareMatrix::from_rows(&p.alpha),
                SquareMatrix::from_rows(&p.beta),
            ) {
                let direct = Cluster::new(p.workers.clone(), p.nodes.clone(), a, b);
                if let Ok(c) = t.record("new", &direct) {
                    check_cluster(c)?;
                }
            }
            let built = p.build();
            let Ok(c) = t.record("from_rows", &built) else {
                return Ok(());
            };
            check_cluster(c)?;
            // Serde from hostile parts: the raw fields of a JSON document.
            let raw = serde_json::json!({
                "workers": p.workers, "node_of_worker": p.nodes,
                "alpha_s": p.alpha, "beta_s_per_byte": p.beta,
            });
            if let Ok(c) = t.record("deserialize", &serde_json::from_value::<Cluster>(raw)) {
                check_cluster(c)?;
            }
            let _ = t.record("check_symmetric", &c.check_symmetric(tol));
            let _ = t.record("to_graph", &c.to_graph());
            if let Ok(sub) = t.record("restrict", &c.restrict(&ids)) {
                check_cluster(sub)?;
                for (a, &i) in ids.iter().enumerate() {
                    for (b, &j) in ids.iter().enumerate() {
                        if a != b && sub.link(a, b) != c.link(i, j) {
                            return Err(format!("restrict: link ({a}, {b}) is not ({i}, {j})"));
                        }
                    }
                }
            }
            let relabelled = c.clone().relabel_nodes(offset);
            check_cluster(&relabelled)?;
            let shifted: Vec<usize> = c
                .node_of_worker()
                .iter()
                .map(|&x| x.saturating_add(offset))
                .collect();
            if relabelled.node_of_worker() != shifted {
                return Err("relabel_nodes does not shift every label".into());
            }
            Ok(())
        },
    );
}

/// `Cluster::heterogeneous`, `uniform_nodes`, `perlmutter`, `NodeKind::perlmutter`, the
/// Perlmutter link presets, `random_cluster`, and serde of node kinds.
#[test]
fn builders() {
    let input = (
        vec(node_kind(), 0..=4),
        small_or_extreme(1..=4),
        small_or_extreme(0..=48),
        prop_oneof![4 => 0.0..1.0_f64, 1 => f64_value()],
        any::<u64>(),
    );
    fuzz_tallied(
        "topology-partition::builders",
        input,
        |t, (kinds, nodes, slots, jitter, seed)| {
            for link in [perlmutter_intra(), perlmutter_inter()] {
                AlphaBeta::new(link.alpha_s, link.beta_s_per_byte).map_err(|e| e.to_string())?;
            }
            if let Ok(c) = t.record("heterogeneous", &Cluster::heterogeneous(&kinds)) {
                check_cluster(c)?;
                let gpus: usize = kinds.iter().map(|k| k.gpus).sum();
                if c.len() != gpus || c.nodes().len() != kinds.len() {
                    return Err(format!(
                        "heterogeneous: {} workers for {gpus} GPUs",
                        c.len()
                    ));
                }
            }
            if let Some(kind) = kinds.first() {
                if let Ok(c) = t.record("uniform_nodes", &Cluster::uniform_nodes(nodes, *kind)) {
                    check_cluster(c)?;
                }
                let json = serde_json::to_string(kind).map_err(|e| e.to_string())?;
                let _ = serde_json::from_str::<NodeKind>(&json);
            }
            let preset = NodeKind::perlmutter(slots);
            if preset.expert_slots != slots {
                return Err("NodeKind::perlmutter ignores its slots".into());
            }
            if let Ok(c) = t.record("perlmutter", &Cluster::perlmutter(nodes, slots)) {
                check_cluster(c)?;
                if c.len() != 4 * nodes {
                    return Err("perlmutter: not 4 GPUs per node".into());
                }
            }
            if let Ok(c) = t.record("random_cluster", &random_cluster(nodes, jitter, seed)) {
                check_cluster(c)?;
                c.check_symmetric(0.0)
                    .map_err(|e| format!("random_cluster: {e}"))?;
            }
            Ok(())
        },
    );
}

/// One line of link-cost CSV text.
#[derive(Debug, Clone)]
enum Line {
    /// `src,dst,alpha,beta` with fields as written.
    Data(String, String, String, String),
    /// Anything else: a header, a comment, a blank line, garbage.
    Other(String),
}

fn field_number() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => ordinary_cost().prop_map(|x| x.to_string()),
        4 => f64_value().prop_map(|x| x.to_string()),
        1 => prop::sample::select(vec!["", "x", "1e400", "-0", "NaN", "inf", "-1", " 1e-6 "]).prop_map(String::from),
    ]
}

fn field_id(n: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        8 => id(n).prop_map(|i| i.to_string()),
        1 => prop::sample::select(vec!["", "-1", "1.5", "18446744073709551616", "a"]).prop_map(String::from),
    ]
}

/// A full CSV for `n` workers (every ordered pair once), then some lines dropped, replaced or
/// added.
fn csv(n: usize) -> impl Strategy<Value = Vec<Line>> {
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
        .collect();
    let count = pairs.len();
    (
        vec((field_number(), field_number()), count),
        vec(
            (
                any::<usize>(),
                prop_oneof![
                    (field_id(n), field_id(n), field_number(), field_number())
                        .prop_map(|(a, b, c, d)| Line::Data(a, b, c, d)),
                    prop::sample::select(vec![
                        "src,dst,alpha_s,beta_s_per_byte",
                        "# comment",
                        "",
                        "1,2,3",
                        "1,2,3,4,5",
                        ",,,",
                    ])
                    .prop_map(|s| Line::Other(s.to_string())),
                    any::<String>().prop_map(Line::Other),
                ],
                any::<bool>(),
            ),
            1..=3,
        ),
        // Most texts stay complete and well-formed.
        prop::bool::weighted(0.4),
    )
        .prop_map(move |(values, mut changes, change)| {
            if !change {
                changes.clear();
            }
            let mut lines: Vec<Line> = pairs
                .iter()
                .zip(values)
                .map(|(&(i, j), (a, b))| Line::Data(i.to_string(), j.to_string(), a, b))
                .collect();
            for (at, line, replace) in changes {
                let k = at % (lines.len() + 1);
                if replace && k < lines.len() {
                    lines[k] = line;
                } else {
                    lines.insert(k.min(lines.len()), line);
                }
            }
            lines
        })
}

fn text_of(lines: &[Line]) -> String {
    let mut text = String::new();
    for line in lines {
        match line {
            Line::Data(a, b, c, d) => text.push_str(&format!("{a},{b},{c},{d}\n")),
            Line::Other(s) => {
                text.push_str(s);
                text.push('\n');
            }
        }
    }
    text
}

/// `Cluster::from_csv_str` and `from_csv_reader` (including bytes that are not UTF-8 and
/// worker lists past [`MAX_WORKERS`]).
#[test]
fn csv_clusters() {
    let input = (1_usize..=4).prop_flat_map(|n| {
        (
            prop_oneof![8 => vec(worker(), n), 1 => vec(worker(), 0..=n + 1), 1 => Just(Vec::new())],
            vec(0_usize..2, n),
            csv(n),
            prop_oneof![6 => Just(Vec::new()), 1 => vec(any::<u8>(), 1..4)],
        )
    });
    fuzz_tallied(
        "topology-partition::csv",
        input,
        |t, (mut workers, nodes, lines, junk)| {
            if workers.is_empty() && !lines.is_empty() && junk.len() == 2 {
                // Past the limit: refused before the `n x n` tables are allocated.
                workers = vec![
                    Worker {
                        flop_per_s: 1e12,
                        expert_slots: 1
                    };
                    MAX_WORKERS + 1
                ];
            }
            let text = text_of(&lines);
            let from_str = Cluster::from_csv_str(workers.clone(), nodes.clone(), &text);
            if let Ok(c) = t.record("from_csv_str", &from_str) {
                check_cluster(c)?;
            }
            let mut bytes = text.into_bytes();
            bytes.extend(&junk);
            let from_reader = Cluster::from_csv_reader(workers, nodes, bytes.as_slice());
            if let Ok(c) = t.record("from_csv_reader", &from_reader) {
                check_cluster(c)?;
            }
            Ok(())
        },
    );
}

/// `TrainingConstants::gamma`, `AristosObjective::uniform`, `group_cost`, `evaluate` on hostile
/// groups, and serde of the objective types.
#[test]
fn objectives() {
    let input = (1_usize..=5).prop_flat_map(|n| {
        (
            parts_n(n),
            objective(),
            small_or_extreme(1..=8),
            prop_oneof![4 => partition_of(n), 1 => vec(ids_of(n), 0..=4)],
            (small_or_extreme(0..=64), flop()),
        )
    });
    fuzz_tallied(
        "topology-partition::objective",
        input,
        |t, (p, o, world, groups, (experts, flop))| {
            if let Ok(g) = t.record("gamma", &o.training.gamma(world)) {
                if !(g.is_finite() && *g > 0.0) {
                    return Err(format!("gamma = {g}"));
                }
            }
            let uniform = AristosObjective::uniform(o.training, experts, flop, 2.0, 1e6, 1e6);
            if let Ok(u) = t.record("uniform", &uniform) {
                if u.expert_flop.len() != experts {
                    return Err("uniform lists the wrong number of experts".into());
                }
            }
            // NaN and infinities do not survive JSON (an error); the rest must parse.
            for json in [
                serde_json::to_string(&o),
                serde_json::to_string(&o.training),
            ]
            .into_iter()
            .flatten()
            {
                let _ = serde_json::from_str::<AristosObjective>(&json);
                let _ = serde_json::from_str::<TrainingConstants>(&json);
            }
            let Ok(c) = p.build() else { return Ok(()) };
            let experts = o.expert_flop.len() as u64;
            for (k, group) in groups.iter().enumerate() {
                let cost = o.group_cost(&c, group, k + 1);
                if let Ok(cost) = t.record("group_cost", &cost) {
                    check_group_cost(cost, slots_of(&c, group) >= experts)?;
                }
            }
            if let Ok(p) = t.record("evaluate", &o.evaluate(&c, groups.clone())) {
                check_partition("evaluate", p, &c, &o, false)?;
            }
            // A sure partition: one group per worker.
            let singles: Vec<Vec<usize>> = (0..c.len()).map(|w| vec![w]).collect();
            if let Ok(p) = t.record("evaluate (singles)", &o.evaluate(&c, singles)) {
                check_partition("evaluate", p, &c, &o, false)?;
            }
            Ok(())
        },
    );
}

/// Finite terms; `T` finite exactly when feasible.
fn check_group_cost(cost: &GroupCost, feasible: bool) -> Result<(), String> {
    for (what, x) in [
        ("gamma", cost.gamma),
        ("compute_s", cost.compute_s),
        ("communication_s", cost.communication_s),
        ("all_reduce_s", cost.all_reduce_s),
    ] {
        check_finite(what, x)?;
    }
    if cost.feasible != feasible || feasible != cost.objective_s.is_finite() {
        return Err(format!("group_cost: feasible {feasible} but {cost:?}"));
    }
    let json = serde_json::to_string(cost).map_err(|e| e.to_string())?;
    let _ = serde_json::from_str::<GroupCost>(&json);
    Ok(())
}

/// `lysi_group`, `one_group_per_node`, `whole_world`, `smallest_fitting_groups` and
/// `exhaustive_partition`, on hand-built and random clusters.
#[test]
fn groupings() {
    let cluster = prop_oneof![
        3 => parts().prop_map(|p| p.build()),
        1 => (1_usize..=3, 0.0..0.5_f64, any::<u64>()).prop_map(|(nodes, jitter, seed)| random_cluster(nodes, jitter, seed)),
    ];
    fuzz_tallied(
        "topology-partition::groupings",
        (cluster, objective()),
        |t, (c, o)| {
            let Ok(c) = c else { return Ok(()) };
            let mut best_others = f64::INFINITY;
            for (what, all_feasible, p) in [
                ("lysi_group", true, lysi_group(&c, &o)),
                (
                    "smallest_fitting_groups",
                    true,
                    smallest_fitting_groups(&c, &o),
                ),
                ("one_group_per_node", false, one_group_per_node(&c, &o)),
                ("whole_world", false, whole_world(&c, &o)),
            ] {
                if let Ok(p) = t.record(what, &p) {
                    check_partition(what, p, &c, &o, all_feasible)?;
                    best_others = best_others.min(p.max_objective_s());
                }
            }
            let exact = exhaustive_partition(&c, &o);
            if let Ok(p) = t.record("exhaustive_partition", &exact) {
                check_partition("exhaustive_partition", p, &c, &o, true)?;
                if p.max_objective_s() > best_others {
                    return Err(format!(
                        "the exhaustive optimum {} is worse than a heuristic's {best_others}",
                        p.max_objective_s()
                    ));
                }
            } else if c.len() <= EXHAUSTIVE_MAX_WORKERS && best_others.is_finite() {
                return Err(format!(
                    "exhaustive_partition failed ({exact:?}) where a heuristic found a grouping"
                ));
            }
            Ok(())
        },
    );
}

//! Topology-aware expert-parallel groups (Aristos, Aimuyo, §2.1–2.2).
//!
//! A GPU cluster is modelled as workers (FLOP/s, expert memory) joined by alpha-beta links. This
//! crate cuts such a cluster into expert-parallel groups that minimize the Aristos objective
//! T(g) (LysiGroup, a Kruskal-like merge over a union-find, Aimuyo, Algorithm 1) and compares it
//! with naive groupings. (The traffic of parallel LLM jobs on HB domains and rails, rail-only §3,
//! lives in `rail-network`.)
//!
//! * [`Cluster`]: workers ([`Worker`], from `comm-cost-model`: FLOP/s and expert slots), their
//!   node labels and `n x n` alpha-beta matrices ([`comm_cost_model::SquareMatrix`], serialized
//!   as rows); builders for nodes of GPUs ([`Cluster::heterogeneous`], [`Cluster::perlmutter`]),
//!   measured CSV text ([`Cluster::from_csv_str`]), seeded random mixes ([`random_cluster`]) and
//!   a petgraph view ([`Cluster::to_graph`]).
//! * [`AristosObjective`]: `T(g)` of Aristos Eq. 1–4, every symbol with its unit.
//! * [`lysi_group`] (Algorithm 1 with Proposition 1's merge rule, incremental group costs), the
//!   baselines [`one_group_per_node`], [`whole_world`], [`smallest_fitting_groups`], and the
//!   exact [`exhaustive_partition`] for small clusters.
//!
//! The papers cited here, with full titles and authors: [docs/references.md](https://github.com/moe-planner/moe-planner/blob/main/docs/references.md).
//!
//! # Examples
//!
//! ```
//! use topology_partition::{lysi_group, one_group_per_node, AristosObjective, Cluster, TrainingConstants};
//!
//! // Expert-parallel groups on 4 Perlmutter nodes (16 A100, 32 expert slots each).
//! let cluster = Cluster::perlmutter(4, 32)?;
//! let training = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 256, moe_every: 2, micro_batch: 4 };
//! let objective = AristosObjective::uniform(training, 64, 8.6e9, 2.0, 16.8e6, 67e6)?;
//! let groups = lysi_group(&cluster, &objective)?;
//! let nodes = one_group_per_node(&cluster, &objective)?;
//! assert!(groups.max_objective_s() <= nodes.max_objective_s());
//! # Ok::<(), topology_partition::TopologyError>(())
//! ```

// Issue 13: integer casts that may truncate, lose the sign or wrap are checked (`try_from`) or
// justified with an `allow` where they appear. Set per library crate, not in
// `[workspace.lints]`: the CLI, the Python bindings and the examples still have findings.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

// The README's examples run as doctests, so the crate's front page cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod baselines;
mod builders;
mod cluster;
mod csv_links;
mod error;
mod exhaustive;
mod lysigroup;
mod objective;
mod partition;
mod random;

pub use baselines::{one_group_per_node, smallest_fitting_groups, whole_world};
pub use builders::{NodeKind, perlmutter_inter, perlmutter_intra};
pub use cluster::{Cluster, MAX_WORKERS};
pub use comm_cost_model::Worker;
pub use error::{CsvProblem, TopologyError};
pub use exhaustive::{EXHAUSTIVE_MAX_WORKERS, exhaustive_partition};
pub use lysigroup::lysi_group;
pub use objective::{AristosObjective, GroupCost, MAX_EXPERTS, TrainingConstants};
pub use partition::Partition;
pub use random::random_cluster;

//! Topology-aware expert-parallel groups and the traffic of parallel LLM jobs.
//!
//! A GPU cluster is modelled as workers (FLOP/s, expert memory) joined by alpha-beta links. This
//! crate cuts such a cluster into expert-parallel groups that minimize the Aristos objective
//! T(g) (LysiGroup, a Kruskal-like merge over a union-find, Aimuyo, Algorithm 1), compares it with
//! naive groupings, and maps the parallel groups of a PTD-P (+EP/ESP) training job onto
//! high-bandwidth domains and rails to compute the per-GPU-pair traffic of one iteration (Wang et
//! al., rail-only, §3).
//!
//! * [`Cluster`]: workers ([`Worker`]: FLOP/s, expert slots, node) and an `n x n` alpha-beta
//!   matrix; builders for nodes of GPUs ([`Cluster::heterogeneous`], [`Cluster::perlmutter`]),
//!   measured CSV text ([`Cluster::from_csv_str`]), seeded random mixes ([`random_cluster`]) and
//!   a petgraph view ([`Cluster::to_graph`]).
//! * [`AristosObjective`]: `T(g)` of Aristos Eq. 1–4, every symbol with its unit.
//! * [`lysi_group`] (Algorithm 1 with Proposition 1's merge rule, incremental group costs), the
//!   baselines [`one_group_per_node`], [`whole_world`], [`smallest_fitting_groups`], and the
//!   exact [`exhaustive_partition`] for small clusters.
//! * [`RankMapping`] and [`job_traffic`]: PTD-P (+EP/ESP) ranks on HB domains and rails, and the
//!   sparse per-GPU-pair traffic of one iteration with its [`TrafficSummary`].
//!
//! # Examples
//!
//! ```
//! use topology_partition::{
//!     lysi_group, one_group_per_node, job_traffic, AristosObjective, Cluster, CollectiveAlgorithm,
//!     GptDims, ParallelConfig, RankMapping, Split, TrainingConstants,
//! };
//!
//! // Expert-parallel groups on 4 Perlmutter nodes (16 A100, 32 expert slots each).
//! let cluster = Cluster::perlmutter(4, 32)?;
//! let training = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 256, moe_every: 2, micro_batch: 4 };
//! let objective = AristosObjective::uniform(training, 64, 8.6e9, 2.0, 16.8e6, 67e6);
//! let groups = lysi_group(&cluster, &objective)?;
//! let nodes = one_group_per_node(&cluster, &objective)?;
//! assert!(groups.max_objective_s() <= nodes.max_objective_s());
//!
//! // Traffic of GPT-1T on 16 GH200 (HB domains of 256 GPUs): nothing crosses rails.
//! let config = ParallelConfig {
//!     tensor: Split::new(8, 1), pipeline: Split::new(1, 8), data: Split::new(32, 2),
//!     micro_batch: 1, micro_batches: 64, interleave: 1, expert: None,
//! };
//! let model = GptDims::gpt_1t();
//! let map = RankMapping::new(4096, 256, &config, &model)?;
//! let summary = job_traffic(&map, &model, CollectiveAlgorithm::Hierarchical)?.summary();
//! assert!(summary.idle_pair_fraction > 0.99 && !summary.crosses_rails);
//! # Ok::<(), topology_partition::TopologyError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod baselines;
mod builders;
mod cluster;
mod csv_links;
mod error;
mod exhaustive;
mod job;
mod lysigroup;
mod mapping;
mod objective;
mod partition;
mod random;
mod traffic;

pub use baselines::{one_group_per_node, smallest_fitting_groups, whole_world};
pub use builders::{NodeKind, perlmutter_inter, perlmutter_intra};
pub use cluster::{Cluster, Worker};
pub use error::TopologyError;
pub use exhaustive::{EXHAUSTIVE_MAX_WORKERS, exhaustive_partition};
pub use job::{CollectiveAlgorithm, ExpertConfig, GptDims, ParallelConfig, Split};
pub use lysigroup::lysi_group;
pub use mapping::{ExpertPlacement, RankMapping};
pub use objective::{AristosObjective, GroupCost, TrainingConstants};
pub use partition::Partition;
pub use random::random_cluster;
pub use traffic::{JobTraffic, KindShare, PairTraffic, TrafficKind, TrafficSummary, job_traffic};

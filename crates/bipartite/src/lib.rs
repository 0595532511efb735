//! Bipartite matching primitives shared by the moe-planner crates, one copy each.
//!
//! | problem | function |
//! |---|---|
//! | maximum-cardinality matching | [`hopcroft_karp`], and [`PartialMatching`] to grow a matching in place (warm start) |
//! | min-cost perfect matching | [`min_cost_perfect_matching`] (Hungarian method, `O(n^3)`) |
//! | min-max (bottleneck) perfect matching | [`bottleneck_matching`] (threshold search over Hopcroft–Karp; Aurora Thm 5.1 / 6.2 reduce to it) |
//!
//! A base crate beside `comm-cost-model`: `alltoall-sched` (Birkhoff–von Neumann schedules),
//! `colocation-matching` (expert pairing and GPU assignment) and `expert-placement` (aligning a
//! fresh placement to a running one) all use it.
//!
//! # Example
//!
//! ```
//! use bipartite::{BipartiteGraph, hopcroft_karp};
//!
//! // Left 0 likes right 0 and 1, left 1 only right 0: both can be matched.
//! let g = BipartiteGraph::from_adjacency(2, &[vec![0, 1], vec![0]])?;
//! let m = hopcroft_karp(&g);
//! assert_eq!(m.size, 2);
//! assert_eq!(m.left_to_right, vec![Some(1), Some(0)]);
//! # Ok::<(), bipartite::BipartiteError>(())
//! ```

#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

mod allowed;
mod bottleneck;
mod error;
mod hopcroft_karp;
mod hungarian;
mod matching;
mod matrix;

pub use bottleneck::{
    BottleneckOptions, ThresholdSearch, TieBreak, bottleneck_assignment, bottleneck_matching,
    chosen_max,
};
pub use error::BipartiteError;
pub use hopcroft_karp::{
    BipartiteGraph, BipartiteMatching, PartialMatching, UNMATCHED, hopcroft_karp,
};
pub use hungarian::min_cost_perfect_matching;
pub use matching::WeightedMatching;
pub use matrix::SquareMatrix;

/// Largest number of vertices on either side of a [`BipartiteGraph`], `2^24`: every algorithm
/// keeps a few words per vertex, and index arithmetic stays far from overflow.
pub const MAX_VERTICES: usize = 1 << 24;

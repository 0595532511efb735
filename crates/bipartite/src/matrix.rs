//! The weight matrix of the matching problems: `comm_cost_model`'s validated square matrix.
//!
//! Rows are the left side of a bipartite graph (experts of model A, experts), columns the right
//! side (experts of model B, GPUs).

pub use comm_cost_model::SquareMatrix;

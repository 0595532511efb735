//! Expert colocation and GPU assignment for MoE inference, optimal where the theory allows.
//!
//! Two MoE models served on one cluster can share GPUs: pairing an expert of model A with an
//! expert of model B on each GPU changes how many bytes each GPU sends and receives, and hence the
//! all-to-all lower bound. On heterogeneous GPUs, *which* GPU hosts which expert matters too. This
//! crate solves these placement problems with bottleneck bipartite matching (Aurora, Li et al.,
//! Theorems 5.1, 6.1 and 6.2), gives exact and heuristic solvers for the NP-hard colocating plus
//! heterogeneous case (Aurora §7), implements the baselines Aurora compares against (Lina, random
//! colocation, random GPU assignment), and assigns experts to heterogeneous workers with
//! FLOPS-proportional budgets (LysiAssign, Aristos Algorithm 2).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

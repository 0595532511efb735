//! Plans from the bound: the hosting the Lagrangian ascent of [`crate::bound_flow`] settles on,
//! with node limits and slot counts shrunk a little so that the replicas still pack onto GPUs,
//! then each node packed by `expert-placement` and scored under the exact dispatch.
//!
//! The bound's own hosting is nearly feasible at the node level (node loads and slots within a
//! few percent on DeepSeek-like layers) but leaves no spare slot to split hot experts over GPUs;
//! shrinking the slots by a few percent buys the packing its room at a few percent more cross-node
//! tokens. Which shrink packs best is not monotone, so a small grid is tried, best first.

use std::time::Instant;

use expert_placement::PlacementOptions;

use crate::bound_flow::{ascend, node_loads};
use crate::construct::pack;
use crate::context::{Context, replica_gpus};
use crate::dispatch::{DispatchReport, evaluate};
use crate::error::TrafficError;

/// Node load scales the hosting is planned at (1: the limit itself).
const CAP_SCALES: [f64; 2] = [1.0, 0.993];

/// Slot scales, largest (fewest cross-node tokens) first.
const SLOT_SCALES: [f64; 7] = [1.0, 0.98, 0.97, 0.96, 0.94, 0.92, 0.9];

/// Subgradient iterations of each shrunk hosting.
const PLAN_ITERATIONS: usize = 300;

/// A scored candidate plan.
pub(crate) struct Candidate {
    pub(crate) map: Vec<usize>,
    pub(crate) report: DispatchReport,
}

/// The plans of the grid, each scored under the exact dispatch; stops early once a plan within
/// the limit is within `good_enough` cross-node tokens (e.g. a few percent above the bound), or
/// at the deadline.
pub(crate) fn bound_plans(
    ctx: &Context<'_>,
    limit: f64,
    target: f64,
    good_enough: f64,
    placement: &PlacementOptions,
    deadline: Option<Instant>,
) -> Result<Vec<Candidate>, TrafficError> {
    let mut out: Vec<Candidate> = Vec::new();
    let tol = limit * 1e-9;
    for ss in SLOT_SCALES {
        for cs in CAP_SCALES {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(out);
            }
            let Some(h) = ascend(ctx, limit, (cs, ss), target, PLAN_ITERATIONS, deadline) else {
                return Ok(out);
            };
            let loads = node_loads(ctx, &h.hosts, limit);
            let Some(map) = pack(ctx, &h.hosts, &loads, placement)? else {
                continue;
            };
            let report = evaluate(ctx, &replica_gpus(&map, ctx.cluster, ctx.experts()));
            let done = report.max_gpu_load <= limit + tol && report.cross_node_tokens <= good_enough;
            out.push(Candidate { map, report });
            if done {
                return Ok(out);
            }
        }
    }
    Ok(out)
}

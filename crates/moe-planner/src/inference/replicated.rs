//! Many experts per GPU: `E` logical experts per layer on `G` GPUs through a replica placement.
//!
//! Per layer: the placement ([`expert_placement::place`], optimal), the dispatch matrix that
//! follows from it and the replica choice ([`alltoall_sched::dispatch_tokens`]), then the one
//! timeline evaluator with the expert time of each GPU = tokens of all its replicas x FLOP per
//! token / GPU speed. The baselines run on the same cost model: EPLB with NCCL's peer order,
//! EPLB with the plain `r + k` shift, EPLB with shortest-job-first, and a random slot placement
//! with shortest-job-first.

use alltoall_sched::{MAX_GPUS, dispatch_tokens, uniform_sources};
use comm_cost_model::InputError;
use comm_cost_model::timeline::ffn_times_s;
use comm_cost_model::{check_count, check_non_negative};
use expert_placement::{
    EplbPolicy, LayerLoads, Placement, PlacementAlgorithm, PlacementCluster, place,
    random_slot_placement,
};
use rayon::prelude::*;
use traffic_placement::{RoutedTokens, TrafficOptions, place_traffic_aware};

use super::cluster::Cluster;
use super::evaluate::{
    Baseline, Evaluation, Evaluator, ModelOnGpus, Order, Timed, assemble, total_s,
};
use super::{InferencePlan, ReplicatedModelSpec, ReplicatedSpec, Scenario};
use crate::PlanError;
use comm_cost_model::{check_at_most, check_same_len};

/// The most bytes the traffic matrices of one layer may take while it is planned (2 GiB): a
/// layer holds about 16 `G x G` matrices of `f64` (three placements' dispatch, combine and
/// token matrices, the scheduler's working copies), so 4,096 GPUs fit and 8,192 do not.
pub const MAX_REPLICATED_BYTES: usize = 1 << 31;

/// `G x G` matrices alive while one layer is planned.
const MATRICES_PER_LAYER: usize = 16;

/// Validated, SI-unit view of a replicated spec.
struct Experts<'a> {
    model: &'a ReplicatedModelSpec,
    cluster: Cluster,
    placement: PlacementCluster,
    gpus_per_node: usize,
    /// Per-layer token count of each expert.
    loads: Vec<LayerLoads>,
    bytes_per_token: f64,
    flop_per_token: f64,
    /// Per GPU.
    gate_s: Vec<f64>,
    /// Per GPU.
    aggregation_s: Vec<f64>,
    /// Traffic-aware placement's tolerance, when asked for.
    traffic_tolerance: Option<f64>,
}

/// The baselines, in the order of the plan's `baselines`.
const BASELINES: [(&str, Order); 4] = [
    (
        "EPLB placement (global), NCCL's node-aware peer order under contention",
        Order::Nccl { gpus_per_node: 0 },
    ),
    (
        "EPLB placement (global), shift order (GPU r sends to r + k) under contention",
        Order::Shift,
    ),
    (
        "EPLB placement (global), shortest-job-first order under contention",
        Order::Sjf,
    ),
    (
        "random slot placement (same replicas), shortest-job-first order under contention",
        Order::Sjf,
    ),
];

/// Plans a replicated spec (see [`super::plan_inference`]).
pub(super) fn plan(spec: &ReplicatedSpec) -> Result<InferencePlan, PlanError> {
    let work = Experts::new(spec)?;
    let fixed = work.fixed_maps(&spec.layer_placements)?;
    // Layers are independent: planned in parallel, then summed in layer order (the first
    // failing layer's error wins), so the result does not depend on the thread count.
    let planned: Vec<Result<(Timed, [f64; 4]), PlanError>> = (0..work.loads.len())
        .into_par_iter()
        .map(|l| work.plan_layer(l, fixed.get(l), spec.seed))
        .collect();
    let mut timed = Vec::with_capacity(work.loads.len());
    let mut per_baseline: [Vec<f64>; 4] = Default::default();
    for result in planned {
        let (layer, baselines) = result?;
        timed.push(layer);
        for (times, t) in per_baseline.iter_mut().zip(baselines) {
            times.push(t);
        }
    }
    let baselines = BASELINES
        .iter()
        .zip(per_baseline)
        .map(|((description, _), times)| {
            Ok(Baseline {
                description: (*description).to_owned(),
                experts_of_gpu: Vec::new(),
                total_s: total_s(times.into_iter())?,
            })
        })
        .collect::<Result<Vec<_>, PlanError>>()?;
    let scenario = if work.cluster.homogeneous() {
        Scenario::ExclusiveHomogeneous
    } else {
        Scenario::ExclusiveHeterogeneous
    };
    assemble(scenario, Vec::new(), Evaluation::of(timed)?, baselines)
}

impl<'a> Experts<'a> {
    fn new(spec: &'a ReplicatedSpec) -> Result<Self, PlanError> {
        let cluster = Cluster::new(&spec.gpus, spec.link_fits.as_ref())?;
        let g = cluster.gpus.len();
        if spec.models.len() != 1 {
            check_count("models", spec.models.len(), 1)?;
            return Err(PlanError::Input(InputError::too_large(
                "models given per logical expert (routed_tokens / expert_tokens): one \
                       model may have many experts per GPU; two colocated models need one \
                       expert each per GPU (layers as GPU x GPU byte matrices); models",
                1,
                spec.models.len(),
            )));
        }
        let model = &spec.models[0];
        let (layers, experts) = shape(model, g)?;
        check_memory(g, experts)?;
        let slots = match spec.slots_per_gpu {
            Some(s) => s,
            None => experts.div_ceil(g),
        };
        let gpus_per_node = spec.gpus_per_node.unwrap_or(g);
        check_count("GPUs per node", gpus_per_node, 1)?;
        let node_of_gpu: Vec<usize> = (0..g).map(|i| i / gpus_per_node).collect();
        let flop_per_s = cluster.flop_per_s();
        let fastest = flop_per_s.iter().copied().fold(0.0, f64::max);
        let speeds = flop_per_s.iter().map(|f| f / fastest).collect();
        let placement = PlacementCluster::new(vec![slots; g], speeds, node_of_gpu)?;
        let loads = (0..layers)
            .map(|l| LayerLoads::new(expert_loads(model, l, experts)))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(tolerance) = spec.traffic_tolerance {
            check_non_negative("traffic_tolerance", tolerance)?;
            if model.routed_tokens.is_empty() {
                return Err(PlanError::InvalidField {
                    field: "traffic_tolerance",
                    reason: "needs the model's `routed_tokens` (per-source counts)".into(),
                });
            }
            if spec.gpus_per_node.is_none() {
                return Err(PlanError::InvalidField {
                    field: "traffic_tolerance",
                    reason: "needs `gpus_per_node` (with one node no token crosses nodes)".into(),
                });
            }
        }
        Ok(Self {
            model,
            cluster,
            placement,
            gpus_per_node,
            loads,
            bytes_per_token: check_non_negative("bytes per token", model.bytes_per_token)?,
            flop_per_token: check_non_negative("FLOP per token", model.flop_per_token)?,
            gate_s: model.gate_s.on_gpus("gate time (s), one per GPU", g)?,
            aggregation_s: model
                .aggregation_s
                .on_gpus("aggregation time (s), one per GPU", g)?,
            traffic_tolerance: spec.traffic_tolerance,
        })
    }

    /// The slot maps (`physical_to_logical`) of fixed `[layers][G][slots]` placements (none
    /// when none is given).
    fn fixed_maps(&self, layers: &[Vec<Vec<usize>>]) -> Result<Vec<Vec<usize>>, PlanError> {
        if !layers.is_empty() {
            check_same_len("layers of layer_placements", layers.len(), self.loads.len())?;
        }
        layers
            .iter()
            .map(|rows| {
                check_same_len(
                    "GPUs of a layer placement",
                    rows.len(),
                    self.placement.gpus(),
                )?;
                for (gpu, row) in rows.iter().enumerate() {
                    check_same_len(
                        "experts per GPU of a layer placement (slots per GPU)",
                        row.len(),
                        self.placement.slot_range(gpu).len(),
                    )?;
                }
                Ok(rows.concat())
            })
            .collect()
    }

    /// Layer `l` planned (on the fixed slot map if given), and the inference times of the four
    /// baselines in the order of [`BASELINES`].
    fn plan_layer(
        &self,
        l: usize,
        fixed: Option<&Vec<usize>>,
        seed: u64,
    ) -> Result<(Timed, [f64; 4]), PlanError> {
        let loads = &self.loads[l];
        let ours = match (fixed, self.traffic_tolerance) {
            (Some(map), _) => Placement::evaluate(loads, &self.placement, map.clone())?,
            (None, Some(tolerance)) => {
                let routed = RoutedTokens::new(self.model.routed_tokens[l].clone())?;
                let options = TrafficOptions {
                    tolerance,
                    ..TrafficOptions::default()
                };
                let p = place_traffic_aware(&routed, &self.placement, &options)?;
                Placement::evaluate(loads, &self.placement, p.physical_to_logical)?
            }
            (None, None) => place(loads, &self.placement, PlacementAlgorithm::Optimal)?,
        };
        let eplb = place(
            loads,
            &self.placement,
            PlacementAlgorithm::Eplb(EplbPolicy::Global),
        )?;
        let random = random_slot_placement(loads, &self.placement, &ours, seed ^ l as u64)?;
        let routed = self.routed(l)?;
        let evaluator = Evaluator {
            bandwidth: &self.cluster.bandwidth,
        };
        let (on_gpus, experts_of_gpu) = self.route(&routed, &ours.physical_to_logical)?;
        let timed = evaluator.layer(&[on_gpus], Order::Planned, experts_of_gpu)?;
        // EPLB's traffic is routed once and timed under each of its three orders.
        let eplb = self.route(&routed, &eplb.physical_to_logical)?.0;
        let random = self.route(&routed, &random.physical_to_logical)?.0;
        let mut baselines = [0.0; 4];
        for (k, (t, (_, order))) in baselines.iter_mut().zip(BASELINES).enumerate() {
            let order = match order {
                Order::Nccl { .. } => Order::Nccl {
                    gpus_per_node: self.gpus_per_node,
                },
                other => other,
            };
            let on_gpus = if k < 3 { &eplb } else { &random };
            *t = evaluator
                .layer(std::slice::from_ref(on_gpus), order, Vec::new())?
                .plan
                .inference_time_s;
        }
        Ok((timed, baselines))
    }

    /// Layer `l`'s `[G][E]` routed tokens: the router trace, or equal shares of each expert's
    /// tokens from every GPU.
    fn routed(&self, l: usize) -> Result<Vec<Vec<f64>>, PlanError> {
        if self.model.routed_tokens.is_empty() {
            Ok(uniform_sources(
                &self.model.expert_tokens[l],
                self.cluster.gpus.len(),
            )?)
        } else {
            Ok(self.model.routed_tokens[l].clone())
        }
    }

    /// A layer's traffic and expert times with the slot map `map`, and the placement as
    /// `experts_of_gpu`.
    fn route(
        &self,
        routed: &[Vec<f64>],
        map: &[usize],
    ) -> Result<(ModelOnGpus, Vec<Vec<usize>>), PlanError> {
        let g = self.placement.gpus();
        let experts_of_gpu: Vec<Vec<usize>> = (0..g)
            .map(|gpu| self.placement.slot_range(gpu).map(|s| map[s]).collect())
            .collect();
        let dispatch = dispatch_tokens(routed, &experts_of_gpu, self.placement.node_of_gpu())?;
        let on_gpus = ModelOnGpus {
            ffn_s: ffn_times_s(
                &dispatch.computed_tokens(),
                self.flop_per_token,
                &self.cluster.flop_per_s(),
            )?,
            dispatch: dispatch.traffic(self.bytes_per_token)?,
            gate_s: self.gate_s.clone(),
            aggregation_s: self.aggregation_s.clone(),
        };
        Ok((on_gpus, experts_of_gpu))
    }
}

/// Layers and experts of the model: exactly one of `routed_tokens` (`[layers][G][E]`) and
/// `expert_tokens` (`[layers][E]`), rectangular.
fn shape(model: &ReplicatedModelSpec, g: usize) -> Result<(usize, usize), PlanError> {
    match (
        model.routed_tokens.is_empty(),
        model.expert_tokens.is_empty(),
    ) {
        (false, false) => Err(PlanError::Incompatible {
            field: "routed_tokens",
            other: "expert_tokens",
            reason: "give the router trace or the per-expert loads, not both".into(),
        }),
        (true, true) => Err(PlanError::MissingField {
            field: "routed_tokens or expert_tokens",
            needed_by: "the replicated mode (many experts per GPU)",
        }),
        (false, true) => {
            let routed = &model.routed_tokens;
            let experts = routed[0].first().map_or(0, Vec::len);
            check_count("experts per layer", experts, 1)?;
            for layer in routed {
                check_same_len(
                    "source GPUs of a layer's routed tokens (one per GPU)",
                    layer.len(),
                    g,
                )?;
                for row in layer {
                    check_same_len("experts of a layer's routed tokens", row.len(), experts)?;
                }
            }
            Ok((routed.len(), experts))
        }
        (true, false) => {
            let loads = &model.expert_tokens;
            let experts = check_count("experts per layer", loads[0].len(), 1)?;
            for layer in loads {
                check_same_len("experts of a layer's expert tokens", layer.len(), experts)?;
            }
            Ok((loads.len(), experts))
        }
    }
}

/// Layer `l`'s token count of each expert.
fn expert_loads(model: &ReplicatedModelSpec, l: usize, experts: usize) -> Vec<f64> {
    if model.routed_tokens.is_empty() {
        model.expert_tokens[l].clone()
    } else {
        let layer = &model.routed_tokens[l];
        (0..experts)
            .map(|e| layer.iter().map(|r| r[e]).sum())
            .collect()
    }
}

/// [`PlanError::Input`] (`TooLarge`) when one layer's `G x G` matrices (and its `G x E` routed tokens)
/// would exceed [`MAX_REPLICATED_BYTES`], checked before anything of that size is allocated.
/// Independent of the thread count, so a spec plans or is refused the same on every machine.
fn check_memory(g: usize, experts: usize) -> Result<(), PlanError> {
    check_at_most("GPUs", MAX_GPUS, g)?;
    let bytes = g
        .checked_mul(g)
        .and_then(|x| x.checked_mul(MATRICES_PER_LAYER))
        .and_then(|x| x.checked_add(g.saturating_mul(experts)))
        .and_then(|x| x.checked_mul(size_of::<f64>()))
        .unwrap_or(usize::MAX);
    Ok(check_at_most(
        "estimated bytes of one layer's traffic matrices (G x G each; use fewer GPUs)",
        MAX_REPLICATED_BYTES,
        bytes,
    )?)
}

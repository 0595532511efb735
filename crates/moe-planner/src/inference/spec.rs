//! The inference spec: one mode per planner, and in each mode every field is used.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::fitting::CollectiveFitPlan;

/// A time per MoE layer in seconds: the same on every GPU (a JSON number) or one per GPU, in
/// GPU order (a JSON array; heterogeneous clusters, where a slower GPU takes longer to gate and
/// aggregate).
///
/// # Examples
///
/// ```
/// use moe_planner::inference::PerGpuSeconds;
/// let same: PerGpuSeconds = serde_json::from_str("1e-4")?;
/// let each: PerGpuSeconds = serde_json::from_str("[1e-4, 2e-4]")?;
/// assert_eq!(same, PerGpuSeconds::from(1e-4));
/// assert_eq!(each, PerGpuSeconds::PerGpu(vec![1e-4, 2e-4]));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PerGpuSeconds {
    /// The same time on every GPU.
    Same(f64),
    /// One time per GPU, in GPU order (as many as `gpus`).
    PerGpu(Vec<f64>),
}

impl Default for PerGpuSeconds {
    fn default() -> Self {
        Self::Same(0.0)
    }
}

impl From<f64> for PerGpuSeconds {
    fn from(seconds: f64) -> Self {
        Self::Same(seconds)
    }
}

impl PerGpuSeconds {
    /// One finite non-negative time per GPU of `gpus`, or the error naming `what`.
    pub(crate) fn on_gpus(
        &self,
        what: &'static str,
        gpus: usize,
    ) -> Result<Vec<f64>, crate::PlanError> {
        match self {
            Self::Same(s) => Ok(vec![comm_cost_model::check_non_negative(what, *s)?; gpus]),
            Self::PerGpu(each) => {
                comm_cost_model::check_same_len(what, each.len(), gpus)?;
                each.iter()
                    .map(|&s| Ok(comm_cost_model::check_non_negative(what, s)?))
                    .collect()
            }
        }
    }
}

/// One GPU, in vendor units (converted to SI on entry).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuInput {
    /// Sustained compute throughput, TFLOP/s (`tflops` is accepted as an older spelling).
    #[serde(alias = "tflops")]
    pub tflop_per_s: f64,
    /// Network bandwidth of the GPU's port, Gbps (replaced by `link_fits` when given).
    pub bandwidth_gbps: f64,
}

/// A deployment request in one of the two modes of the planner, tagged by `mode`
/// (`"one-per-gpu"` or `"replicated"`).
///
/// Every field of a mode is used by that mode; a field of the other mode (or a misspelt one)
/// is rejected with its name. A spec without `mode` (the format before the split) is read as
/// `replicated` when a model gives `routed_tokens` or `expert_tokens` and as `one-per-gpu`
/// otherwise; the empty `layers` and zero `ffn_flop_per_byte` such files carry in the
/// replicated mode, and the empty or `null` fields of the other mode, are dropped first.
///
/// # Examples
///
/// ```
/// use moe_planner::inference::InferenceSpec;
/// let spec: InferenceSpec = serde_json::from_str(r#"{
///     "mode": "one-per-gpu",
///     "gpus": [{"tflop_per_s": 100, "bandwidth_gbps": 100}, {"tflop_per_s": 100, "bandwidth_gbps": 100}],
///     "models": [{"name": "a", "layers": [[[0, 1e6], [2e6, 0]]], "gate_s": 1e-4, "aggregation_s": 1e-4}]
/// }"#)?;
/// assert!(matches!(spec, InferenceSpec::OnePerGpu(_)));
/// // A field of the other mode is named, not ignored.
/// let err = serde_json::from_str::<InferenceSpec>(r#"{
///     "mode": "one-per-gpu", "gpus": [], "models": [], "slots_per_gpu": 4
/// }"#).unwrap_err();
/// assert!(err.to_string().contains("unknown field `slots_per_gpu`"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum InferenceSpec {
    /// One expert of each model per GPU (Aurora's setting): one or two models.
    OnePerGpu(OnePerGpuSpec),
    /// One model with many experts per GPU and replicas of the popular ones (EPLB's setting).
    Replicated(ReplicatedSpec),
}

/// One expert of each model per GPU: Aurora §4–7.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnePerGpuSpec {
    /// The GPUs; their count is every model's expert count.
    pub gpus: Vec<GpuInput>,
    /// One model (exclusive) or two (colocated).
    pub models: Vec<InferenceModelSpec>,
    /// Seed of the random baselines (RGA, REC).
    #[serde(default)]
    pub seed: u64,
    /// Measured link fits (`fit --json` output): when given, every GPU's bandwidth is the bus
    /// bandwidth of the fitted AlltoAll on the most GPUs measured up to the GPU count
    /// ([`CollectiveFitPlan::link_for`]), replacing `bandwidth_gbps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_fits: Option<CollectiveFitPlan>,
    /// A fixed deployment to evaluate instead of optimizing one (for example a plan made on
    /// older statistics, evaluated on today's traffic): `placement[g]` lists the experts GPU
    /// `g` hosts, one per model in model order, as in the plan's `experts_of_gpu`. The send
    /// orders are still planned per layer and the baselines computed as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Vec<Vec<usize>>>,
}

/// One model of a [`OnePerGpuSpec`]: its experts' traffic per layer and its computation costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferenceModelSpec {
    /// Name used in reports.
    pub name: String,
    /// One dispatch (first all-to-all) traffic matrix per MoE layer, bytes: entry `[i][j]` is
    /// what expert `i`'s GPU sends to expert `j`'s GPU. The combine is its transpose (§2.2).
    pub layers: Vec<Vec<Vec<f64>>>,
    /// Gate time per layer, seconds: one number for every GPU, or one per GPU.
    pub gate_s: PerGpuSeconds,
    /// Aggregation time per layer, seconds: one number for every GPU, or one per GPU.
    pub aggregation_s: PerGpuSeconds,
    /// FFN work per byte of tokens an expert receives, FLOP/byte.
    #[serde(default)]
    pub ffn_flop_per_byte: f64,
}

/// One model with many experts per GPU: per layer, an optimal replica placement
/// ([`expert_placement::place`]) and the contention-free order of the traffic it leads to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicatedSpec {
    /// The GPUs.
    pub gpus: Vec<GpuInput>,
    /// The model (exactly one: two colocated models need the one-per-GPU mode).
    pub models: Vec<ReplicatedModelSpec>,
    /// Seed of the random slot-placement baseline.
    #[serde(default)]
    pub seed: u64,
    /// Measured link fits, as in [`OnePerGpuSpec::link_fits`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_fits: Option<CollectiveFitPlan>,
    /// Expert replica slots on each GPU (default: `ceil(E / G)`, no replicas beyond filling
    /// the last slots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots_per_gpu: Option<usize>,
    /// GPUs per node, consecutive (default: all GPUs in one node). Used by the replica choice
    /// (same node first) and NCCL's node-aware peer order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_node: Option<usize>,
    /// Fixed per-layer placements to evaluate instead of optimizing:
    /// `layer_placements[l][g]` lists the experts GPU `g` hosts in layer `l`, one per slot, as
    /// in the plan's `layers[l].experts_of_gpu`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_placements: Vec<Vec<Vec<usize>>>,
    /// Place each layer traffic-aware (`traffic_placement::place_traffic_aware`: the fewest
    /// routed tokens across nodes with the busiest GPU within `(1 + traffic_tolerance)` times
    /// the compute-only plan's) instead of compute-only; needs `routed_tokens` (the sources
    /// matter) and `gpus_per_node`. The plan's dispatch and combine times then follow from the
    /// traffic-aware placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_tolerance: Option<f64>,
}

/// The model of a [`ReplicatedSpec`], given per logical expert: exactly one of
/// `routed_tokens` and `expert_tokens`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicatedModelSpec {
    /// Name used in reports.
    pub name: String,
    /// Routed token counts from each source GPU to each logical expert, `[layers][G][E]`
    /// (what a router trace gives).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routed_tokens: Vec<Vec<Vec<f64>>>,
    /// Tokens of each logical expert, `[layers][E]`, every GPU assumed the source of an equal
    /// share (balanced data-parallel batches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expert_tokens: Vec<Vec<f64>>,
    /// Bytes of one routed token (hidden size x bytes per element).
    pub bytes_per_token: f64,
    /// FLOP of one token through one expert.
    pub flop_per_token: f64,
    /// Gate time per layer, seconds: one number for every GPU, or one per GPU.
    pub gate_s: PerGpuSeconds,
    /// Aggregation time per layer, seconds: one number for every GPU, or one per GPU.
    pub aggregation_s: PerGpuSeconds,
}

impl InferenceSpec {
    /// The GPUs of either mode.
    #[must_use]
    pub fn gpus(&self) -> &[GpuInput] {
        match self {
            Self::OnePerGpu(s) => &s.gpus,
            Self::Replicated(s) => &s.gpus,
        }
    }

    /// The seed of the random baselines.
    #[must_use]
    pub fn seed(&self) -> u64 {
        match self {
            Self::OnePerGpu(s) => s.seed,
            Self::Replicated(s) => s.seed,
        }
    }

    /// Replaces the seed of the random baselines.
    pub fn set_seed(&mut self, seed: u64) {
        match self {
            Self::OnePerGpu(s) => s.seed = seed,
            Self::Replicated(s) => s.seed = seed,
        }
    }

    /// The models' names, in model order.
    #[must_use]
    pub fn model_names(&self) -> Vec<&str> {
        match self {
            Self::OnePerGpu(s) => s.models.iter().map(|m| m.name.as_str()).collect(),
            Self::Replicated(s) => s.models.iter().map(|m| m.name.as_str()).collect(),
        }
    }
}

impl From<OnePerGpuSpec> for InferenceSpec {
    fn from(spec: OnePerGpuSpec) -> Self {
        Self::OnePerGpu(spec)
    }
}

impl From<ReplicatedSpec> for InferenceSpec {
    fn from(spec: ReplicatedSpec) -> Self {
        Self::Replicated(spec)
    }
}

/// The modes, by their `mode` name.
const MODES: &[&str] = &["one-per-gpu", "replicated"];

impl<'de> Deserialize<'de> for InferenceSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(deserializer)?;
        let Some(object) = value.as_object_mut() else {
            return Err(D::Error::custom("an inference spec is a JSON object"));
        };
        let replicated = match object.remove("mode") {
            Some(Value::String(mode)) => match mode.as_str() {
                "one-per-gpu" => false,
                "replicated" => true,
                other => return Err(D::Error::unknown_variant(other, MODES)),
            },
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "`mode` must be \"one-per-gpu\" or \"replicated\", got {other}"
                )));
            }
            None => legacy_mode(object),
        };
        let spec = if replicated {
            serde_json::from_value(value).map(Self::Replicated)
        } else {
            serde_json::from_value(value).map(Self::OnePerGpu)
        };
        spec.map_err(D::Error::custom)
    }
}

/// The mode of a spec written before `mode` existed (whether it is `replicated`), with the
/// fields that carried nothing in that mode (empty, zero or `null`) dropped so they do not
/// count as fields of the other mode. A field that did carry a value stays and is rejected.
fn legacy_mode(object: &mut Map<String, Value>) -> bool {
    let non_empty = |m: &Map<String, Value>, key: &str| {
        m.get(key)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    };
    let replicated = object
        .get("models")
        .and_then(Value::as_array)
        .is_some_and(|models| {
            models
                .iter()
                .filter_map(Value::as_object)
                .any(|m| non_empty(m, "routed_tokens") || non_empty(m, "expert_tokens"))
        });
    let (spec_fields, model_fields): (&[&str], &[&str]) = if replicated {
        (&["placement"], &["layers", "ffn_flop_per_byte"])
    } else {
        (
            &["slots_per_gpu", "gpus_per_node", "layer_placements"],
            &[
                "routed_tokens",
                "expert_tokens",
                "bytes_per_token",
                "flop_per_token",
            ],
        )
    };
    drop_blank(object, spec_fields);
    if let Some(models) = object.get_mut("models").and_then(Value::as_array_mut) {
        for model in models.iter_mut().filter_map(Value::as_object_mut) {
            drop_blank(model, model_fields);
        }
    }
    replicated
}

/// Removes the `keys` of `object` whose value is `null`, an empty array or zero.
fn drop_blank(object: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        let blank = match object.get(*key) {
            Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Number(x)) => x.as_f64() == Some(0.0),
            _ => false,
        };
        if blank {
            object.remove(*key);
        }
    }
}

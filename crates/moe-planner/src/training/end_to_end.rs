//! The end-to-end MoE training planner: one model, one cluster, every mapping.
//!
//! The facade resolves presets, turns per-expert loads into an imbalance factor per EP degree
//! ([`expert_imbalance`], the one call into the placement planner), and hands everything to
//! [`rail_network::moe`], which owns the model, the step time and the search.

use serde::{Deserialize, Serialize};

use crate::PlanError;
use crate::training::imbalance::{
    ExpertLayout, expert_imbalance, lognormal_expert_loads, zipf_loads,
};
use comm_cost_model::parm::Schedule;
use rail_network::model::Recompute;
use rail_network::moe::{
    FabricCost, MoeEvaluation, MoeMapping, MoeMemory, MoeModel, MoeSearchOptions, Precision,
    StepModel, StepOptions, StepTerms, TrainingSystem, fabric_cost, moe_model_preset,
    search_mappings_with_progress, training_system_preset,
};

/// A model: a preset name or a full description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MoeModelRef {
    /// A preset of [`rail_network::moe::moe_model_preset`].
    Preset(String),
    /// A description.
    Custom(MoeModel),
}

/// A system: a preset name or a full description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TrainingSystemRef {
    /// A preset of [`rail_network::moe::training_system_preset`].
    Preset(String),
    /// A description.
    Custom(TrainingSystem),
}

/// Where the expert loads come from (for the imbalance factor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ExpertLoads {
    /// Measured per-expert loads of one layer (e.g. a summed `logical_count` row).
    Measured(Vec<f64>),
    /// Zipf loads with this exponent.
    Zipf(f64),
    /// Log-normal loads (mean 1) with this `sigma`, drawn with `seed`.
    Lognormal {
        /// Standard deviation of the log of a load.
        sigma: f64,
        /// Seed of the generator.
        seed: u64,
    },
}

/// An end-to-end training question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoeTrainingSpec {
    /// The model.
    pub model: MoeModelRef,
    /// The system.
    pub system: TrainingSystemRef,
    /// GPUs.
    pub gpus: u64,
    /// Sequences per step.
    pub global_batch: u64,
    /// Sequence length (default: the model's).
    #[serde(default)]
    pub seq_len: Option<u64>,
    /// Precision (default: the model's).
    #[serde(default)]
    pub precision: Option<Precision>,
    /// Evaluate this mapping only (default: search every mapping).
    #[serde(default)]
    pub mapping: Option<MoeMapping>,
    /// Step-model options (imbalance, fabric, overlap, reserve, efficiency).
    #[serde(default)]
    pub options: StepOptions,
    /// Search limits.
    #[serde(default)]
    pub search: MoeSearchOptions,
    /// Expert loads; when given, each EP degree gets its own imbalance factor.
    #[serde(default)]
    pub expert_loads: Option<ExpertLoads>,
    /// How experts are laid out on EP ranks for the imbalance factor.
    #[serde(default)]
    pub expert_layout: ExpertLayout,
    /// Switch radix for the fabric comparison of the winner (default 64).
    #[serde(default = "default_radix")]
    pub switch_radix: u64,
}

fn default_radix() -> u64 {
    64
}

/// One evaluated mapping, flattened for JSON and tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingConfig {
    /// Tensor parallelism.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Virtual stages per GPU.
    pub vp: u64,
    /// Context parallelism.
    pub cp: u64,
    /// Data parallelism.
    pub dp: u64,
    /// Expert parallelism.
    pub ep: u64,
    /// Expert tensor parallelism.
    pub etp: u64,
    /// Expert data parallelism.
    pub edp: u64,
    /// Sequences per micro-batch.
    pub micro_batch: u64,
    /// Recomputation.
    pub recompute: Recompute,
    /// Step time, seconds.
    pub step_time_s: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model TFLOP/s per GPU.
    pub model_tflop_per_s_per_gpu: f64,
    /// Model FLOP/s over the BF16 peak.
    pub mfu: f64,
    /// Memory of the busiest GPU, bytes.
    pub memory_bytes_per_gpu: f64,
    /// Whether it fits.
    pub fits: bool,
    /// Expert imbalance factor used.
    pub expert_imbalance: f64,
    /// Parm's schedule for the MoE layers when `etp > 1`.
    pub etp_schedule: Option<Schedule>,
    /// Every term of the step time.
    pub terms: StepTerms,
    /// The memory breakdown.
    pub memory: MoeMemory,
}

impl TrainingConfig {
    fn from_evaluation(e: &MoeEvaluation, imbalance: f64) -> Self {
        let m = &e.mapping;
        Self {
            tp: m.tp,
            pp: m.pp,
            vp: m.vp,
            cp: m.cp,
            dp: e.degrees.dp,
            ep: m.ep,
            etp: m.etp,
            edp: e.degrees.edp,
            micro_batch: m.micro_batch,
            recompute: m.recompute,
            step_time_s: e.terms.step_time_s,
            tokens_per_s_per_gpu: e.tokens_per_s_per_gpu,
            model_tflop_per_s_per_gpu: e.model_tflop_per_s_per_gpu,
            mfu: e.mfu,
            memory_bytes_per_gpu: e.memory.total_bytes,
            fits: e.fits,
            expert_imbalance: imbalance,
            etp_schedule: e.etp_schedule,
            terms: e.terms,
            memory: e.memory,
        }
    }
}

/// The answer: the ranked mappings, the model's size and the winner's network question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoeTrainingPlan {
    /// The model used (after presets, sequence length and precision).
    pub model: MoeModel,
    /// Total parameters.
    pub parameters: f64,
    /// Parameters one token uses.
    pub active_parameters: f64,
    /// Model FLOPs per trained token.
    pub model_flop_per_token: f64,
    /// Mappings, fastest first (one when a mapping was given).
    pub configs: Vec<TrainingConfig>,
    /// Candidates enumerated (0 when a mapping was given).
    pub candidates: u64,
    /// Valid candidates.
    pub valid: u64,
    /// Valid candidates that fit.
    pub fitting: u64,
    /// The first config on a rail-optimized and a rail-only fabric, with their equipment and
    /// cost (absent when the HB-domain size does not divide the GPU count).
    pub network: Option<FabricCost>,
}

/// Resolves a model reference.
///
/// # Errors
///
/// [`PlanError::Rail`] for an unknown preset or an invalid model.
pub fn resolve_model(model: &MoeModelRef) -> Result<MoeModel, PlanError> {
    let m = match model {
        MoeModelRef::Preset(name) => moe_model_preset(name)?,
        MoeModelRef::Custom(m) => *m,
    };
    m.validate()?;
    Ok(m)
}

/// Resolves a system reference.
///
/// # Errors
///
/// [`PlanError::Rail`] for an unknown preset or an invalid system.
pub fn resolve_system(system: &TrainingSystemRef) -> Result<TrainingSystem, PlanError> {
    let s = match system {
        TrainingSystemRef::Preset(name) => training_system_preset(name)?,
        TrainingSystemRef::Custom(s) => *s,
    };
    s.validate()?;
    Ok(s)
}

/// Plans MoE training end to end: resolves the model and system, computes the expert imbalance
/// for every EP degree from the loads (if any), searches every valid mapping (or evaluates the
/// given one) and compares rail-only with rail-optimized fabrics for the first config.
///
/// # Errors
///
/// [`PlanError::Rail`] naming the field for bad input: an unknown preset, a mapping that does
/// not divide, options out of range, a search over the work limit, or no mapping that fits;
/// [`PlanError::Input`] for bad expert loads (negative, NaN, a count the EP degree cannot
/// divide); the placement planner's errors under a planned layout.
///
/// # Complexity
///
/// The search's (see [`rail_network::moe::search_mappings`]), plus one imbalance computation
/// per EP degree.
///
/// # Examples
///
/// ```
/// use moe_planner::training::{plan_moe_training, MoeModelRef, MoeTrainingSpec, TrainingSystemRef};
/// let spec: MoeTrainingSpec = serde_json::from_str(r#"{"model": "mixtral-8x7b",
///     "system": "h100", "gpus": 64, "global_batch": 256}"#).unwrap();
/// let plan = plan_moe_training(&spec)?;
/// assert!(plan.configs[0].fits && plan.configs[0].mfu > 0.1);
/// assert!((plan.parameters / 46.7e9 - 1.0).abs() < 0.01);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn plan_moe_training(spec: &MoeTrainingSpec) -> Result<MoeTrainingPlan, PlanError> {
    plan_moe_training_with_progress(spec, &|_, _| {})
}

/// [`plan_moe_training`], calling `progress(done, total)` as the search finishes
/// `(tp, cp, pp)` shapes (not called when one mapping is evaluated).
///
/// # Errors
///
/// As [`plan_moe_training`].
///
/// # Complexity
///
/// As [`plan_moe_training`].
///
/// # Examples
///
/// ```
/// use moe_planner::training::{plan_moe_training_with_progress, MoeTrainingSpec};
/// let spec: MoeTrainingSpec = serde_json::from_str(r#"{"model": "mixtral-8x7b",
///     "system": "h100", "gpus": 64, "global_batch": 256}"#).unwrap();
/// let plan = plan_moe_training_with_progress(&spec, &|done, total| assert!(done <= total))?;
/// assert!(!plan.configs.is_empty());
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn plan_moe_training_with_progress(
    spec: &MoeTrainingSpec,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<MoeTrainingPlan, PlanError> {
    let mut model = resolve_model(&spec.model)?;
    if let Some(s) = spec.seq_len {
        model.seq_len = s;
    }
    if let Some(p) = spec.precision {
        model.precision = p;
    }
    model.validate()?;
    let system = resolve_system(&spec.system)?;
    let mut sm = StepModel::new(model, system, spec.options)?;
    if let Some(loads) = &spec.expert_loads {
        sm = sm.with_imbalance_by_ep(imbalance_table(&model, loads, spec.expert_layout)?)?;
    }
    let parameters = model.parameters()?;
    let (evaluations, candidates, valid, fitting) = match &spec.mapping {
        Some(mapping) => (
            vec![sm.evaluate(mapping, spec.gpus, spec.global_batch)?],
            0,
            1,
            0,
        ),
        None => {
            let r = search_mappings_with_progress(
                &sm,
                spec.gpus,
                spec.global_batch,
                &spec.search,
                progress,
            )?;
            (r.ranked, r.candidates, r.valid, r.fitting)
        }
    };
    let configs: Vec<TrainingConfig> = evaluations
        .iter()
        .map(|e| TrainingConfig::from_evaluation(e, sm.expert_imbalance(e.mapping.ep)))
        .collect();
    let fitting = if spec.mapping.is_some() {
        u64::from(configs.iter().any(|c| c.fits))
    } else {
        fitting
    };
    let network = match evaluations.first() {
        Some(e) if spec.gpus % system.system.hb_domain == 0 => Some(fabric_cost(
            &sm,
            &e.mapping,
            spec.gpus,
            spec.global_batch,
            spec.switch_radix,
        )?),
        _ => None,
    };
    Ok(MoeTrainingPlan {
        model,
        parameters: parameters.total,
        active_parameters: parameters.active,
        model_flop_per_token: model.training_flop_per_token()?,
        configs,
        candidates,
        valid,
        fitting,
        network,
    })
}

/// The imbalance factor of every EP degree that divides the experts.
fn imbalance_table(
    model: &MoeModel,
    loads: &ExpertLoads,
    layout: ExpertLayout,
) -> Result<Vec<(u64, f64)>, PlanError> {
    let experts =
        usize::try_from(model.experts).map_err(|_| comm_cost_model::InputError::Overflow {
            what: "experts as usize",
        })?;
    let loads = match loads {
        ExpertLoads::Measured(l) => {
            if l.len() != experts {
                return Err(comm_cost_model::InputError::size_mismatch(
                    "expert_loads length must equal the routed experts",
                    experts,
                    l.len(),
                )
                .into());
            }
            l.clone()
        }
        ExpertLoads::Zipf(s) => zipf_loads(experts, *s)?,
        ExpertLoads::Lognormal { sigma, seed } => lognormal_expert_loads(experts, *sigma, *seed)?,
    };
    let mut table = Vec::new();
    for ep in 1..=experts {
        if experts % ep == 0 {
            table.push((ep as u64, expert_imbalance(&loads, ep, layout)?));
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> MoeTrainingSpec {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn skewed_loads_slow_the_step_and_bad_loads_are_typed_errors() {
        let base = r#"{"model": "mixtral-8x7b", "system": "h100", "gpus": 64, "global_batch": 256,
            "mapping": {"tp": 1, "pp": 4, "vp": 8, "ep": 8, "micro_batch": 1}"#;
        let even = plan_moe_training(&spec(&format!("{base}}}"))).unwrap();
        let skewed = plan_moe_training(&spec(&format!(
            r#"{base}, "expert_loads": {{"zipf": 1.0}}}}"#
        )))
        .unwrap();
        assert_eq!(even.configs[0].expert_imbalance, 1.0);
        // Zipf(1) over 8 experts, one per rank: the hottest expert carries 1 / H_8 = 0.368 of
        // the load, 2.94x the mean.
        let h8: f64 = (1..=8).map(|i| 1.0 / f64::from(i)).sum();
        assert!((skewed.configs[0].expert_imbalance - 8.0 / h8).abs() < 1e-12);
        assert!(skewed.configs[0].step_time_s > even.configs[0].step_time_s);
        let wrong = format!(r#"{base}, "expert_loads": {{"measured": [1.0, 2.0]}}}}"#);
        assert!(matches!(
            plan_moe_training(&spec(&wrong)),
            Err(PlanError::Input(
                comm_cost_model::InputError::SizeMismatch { .. }
            ))
        ));
        let bad_mapping = base.replace(r#""ep": 8"#, r#""ep": 3"#);
        assert!(matches!(
            plan_moe_training(&spec(&format!("{bad_mapping}}}"))),
            Err(PlanError::Rail(_))
        ));
        assert!(
            serde_json::from_str::<MoeTrainingSpec>(&format!(r#"{base}, "gpu": 1}}"#)).is_err()
        );
    }
}

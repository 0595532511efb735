//! Every valid mapping of an MoE training job, ranked by step time, and the network cost of
//! the winner on a rail-only vs a rail-optimized fabric.
//!
//! The search enumerates `tp` (dividing the heads, at most the HB domain), `cp`, `pp`
//! (at most the layers), `vp` (with `pp vp <= layers`), `ep` (dividing the experts), `etp`
//! (dividing the expert FFN, at most the HB domain), the micro-batch (dividing `B / dp`) and
//! the recomputation (`none`, `selective` or `full`), keeps the mappings that pass
//! [`MoeMapping::validate`] and fit in memory, and ranks them by step time, then by the mapping
//! itself (so the ranking does not depend on thread timing). `(tp, cp, pp)` shapes run in
//! parallel on rayon. The work is bounded before anything is evaluated: the product of the
//! candidate counts must stay below [`MoeSearchOptions::max_candidates`].

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::fabric::{FabricComparison, FabricKind, FabricParams, PriceModel, compare_fabrics};
use crate::model::Recompute;
use crate::moe::mapping::MoeMapping;
use crate::moe::step::{MoeEvaluation, StepModel};
use comm_cost_model::{InputError, check_count_u64};

/// Limits of [`search_mappings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MoeSearchOptions {
    /// Mappings kept in the ranked list (at least 1).
    pub keep: usize,
    /// Largest micro-batch tried.
    pub max_micro_batch: u64,
    /// Largest virtual-stage count tried.
    pub max_vp: u64,
    /// Largest context parallelism tried.
    pub max_cp: u64,
    /// Whether selective and full recomputation are tried besides none.
    pub try_full_recompute: bool,
    /// Most candidate mappings (an upper bound counted before the search starts).
    pub max_candidates: u64,
}

/// Default [`MoeSearchOptions::max_candidates`]: about 2 s of a release build on 2 cores.
pub const DEFAULT_MAX_CANDIDATES: u64 = 1 << 24;

impl Default for MoeSearchOptions {
    fn default() -> Self {
        Self {
            keep: 10,
            max_micro_batch: 8,
            max_vp: 8,
            max_cp: 8,
            try_full_recompute: true,
            max_candidates: DEFAULT_MAX_CANDIDATES,
        }
    }
}

/// The outcome of [`search_mappings`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoeSearchResult {
    /// The fastest mappings that fit, fastest first.
    pub ranked: Vec<MoeEvaluation>,
    /// Candidate mappings enumerated.
    pub candidates: u64,
    /// Candidates passing [`MoeMapping::validate`].
    pub valid: u64,
    /// Valid mappings that fit in memory.
    pub fitting: u64,
}

#[derive(Default)]
struct Local {
    top: Vec<MoeEvaluation>,
    candidates: u64,
    valid: u64,
    fitting: u64,
    min_memory: Option<f64>,
    error: Option<RailNetworkError>,
}

fn rank_cmp(a: &MoeEvaluation, b: &MoeEvaluation) -> std::cmp::Ordering {
    a.terms
        .step_time_s
        .total_cmp(&b.terms.step_time_s)
        .then_with(|| a.mapping.cmp(&b.mapping))
}

impl Local {
    fn offer(&mut self, e: MoeEvaluation, keep: usize) {
        if self.top.len() == keep
            && self
                .top
                .last()
                .is_some_and(|w| rank_cmp(&e, w) != std::cmp::Ordering::Less)
        {
            return;
        }
        let at = self
            .top
            .partition_point(|x| rank_cmp(x, &e) == std::cmp::Ordering::Less);
        self.top.insert(at, e);
        self.top.truncate(keep);
    }

    fn merge(mut self, other: Self, keep: usize) -> Self {
        for e in other.top {
            self.offer(e, keep);
        }
        self.candidates += other.candidates;
        self.valid += other.valid;
        self.fitting += other.fitting;
        self.min_memory = match (self.min_memory, other.min_memory) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.error = self.error.or(other.error);
        self
    }
}

/// Divisors of `n` up to `cap`, ascending (`O(sqrt n)`).
fn divisors(n: u64, cap: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut i = 1;
    while i <= n / i {
        if n % i == 0 {
            small.push(i);
            if i != n / i {
                large.push(n / i);
            }
        }
        i += 1;
    }
    small.extend(large.into_iter().rev());
    small.retain(|&d| d <= cap);
    small
}

/// Largest GPU count and global batch [`search_mappings`] accepts (each is factored by trial
/// division up to its square root).
pub const MAX_MOE_SEARCH_COUNT: u64 = 1 << 32;

/// Finds the fastest mappings of the prepared model on `gpus` GPUs at `global_batch`
/// sequences per step.
///
/// # Errors
///
/// [`RailNetworkError::Input`]: `CountTooSmall` for zero GPUs, batch or `keep`; `TooLarge` for
/// a GPU count or batch above [`MAX_MOE_SEARCH_COUNT`] or more candidates than
/// `options.max_candidates` (checked before any evaluation);
/// [`RailNetworkError::NoFeasibleConfiguration`] when no valid mapping fits in memory (with
/// the number of valid mappings and the smallest memory one needs).
///
/// # Complexity
///
/// `O(C)` evaluations of `O(k)` each for `C` candidates (at most `options.max_candidates`),
/// `O(keep)` memory per `(tp, cp, pp)` shape.
///
/// # Examples
///
/// ```
/// use rail_network::moe::*;
/// let sm = StepModel::new(moe_model_preset("mixtral-8x22b")?, training_system_preset("h100")?,
///     StepOptions::default())?;
/// let r = search_mappings(&sm, 128, 256, &MoeSearchOptions::default())?;
/// assert!(r.ranked.windows(2).all(|w| w[0].terms.step_time_s <= w[1].terms.step_time_s));
/// assert!(r.fitting <= r.valid && r.valid <= r.candidates);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn search_mappings(
    sm: &StepModel,
    gpus: u64,
    global_batch: u64,
    options: &MoeSearchOptions,
) -> Result<MoeSearchResult, RailNetworkError> {
    search_mappings_with_progress(sm, gpus, global_batch, options, &|_, _| {})
}

/// [`search_mappings`], calling `progress(done, total)` after each `(tp, cp, pp)` shape (from
/// the rayon workers, in any order; `done` counts up to `total`), for a progress bar.
///
/// # Errors
///
/// As [`search_mappings`].
///
/// # Complexity
///
/// As [`search_mappings`], plus one call of `progress` per shape.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use rail_network::moe::*;
/// let sm = StepModel::new(moe_model_preset("mixtral-8x7b")?, training_system_preset("h100")?,
///     StepOptions::default())?;
/// let last = AtomicU64::new(0);
/// let r = search_mappings_with_progress(&sm, 64, 256, &MoeSearchOptions::default(),
///     &|done, total| { last.fetch_max(done, Ordering::Relaxed); assert!(done <= total); })?;
/// assert!(last.load(Ordering::Relaxed) > 0 && !r.ranked.is_empty());
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn search_mappings_with_progress(
    sm: &StepModel,
    gpus: u64,
    global_batch: u64,
    options: &MoeSearchOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<MoeSearchResult, RailNetworkError> {
    check_count_u64("GPU count", gpus, 1)?;
    check_count_u64("global batch (sequences)", global_batch, 1)?;
    check_count_u64("keep", u64::try_from(options.keep).unwrap_or(u64::MAX), 1)?;
    for (what, value) in [
        ("GPU count", gpus),
        ("global batch (sequences)", global_batch),
    ] {
        if value > MAX_MOE_SEARCH_COUNT {
            return Err(InputError::TooLarge {
                what,
                limit: MAX_MOE_SEARCH_COUNT,
                value,
            }
            .into());
        }
    }
    let model = sm.model();
    let k = sm.system().job_hb_domain(gpus);
    let heads = model.attention.heads();
    let tps: Vec<u64> = divisors(gpus, k)
        .into_iter()
        .filter(|t| heads % t == 0 && model.attention.kv_groups() % t == 0)
        .collect();
    let cps = divisors(gpus, options.max_cp.max(1));
    let pps = divisors(gpus, model.layers);
    let eps: Vec<u64> = if model.is_moe() {
        divisors(model.experts, gpus)
    } else {
        vec![1]
    };
    let etps: Vec<u64> = if model.is_moe() {
        divisors(gpus, k)
            .into_iter()
            .filter(|e| model.expert_ffn % e == 0)
            .collect()
    } else {
        vec![1]
    };
    let recomputes: &[Recompute] = if options.try_full_recompute {
        &[Recompute::None, Recompute::Selective, Recompute::Full]
    } else {
        &[Recompute::None]
    };
    let micro_batches = divisors(global_batch, options.max_micro_batch.max(1));
    let bound = [
        tps.len(),
        cps.len(),
        pps.len(),
        usize::try_from(options.max_vp.max(1)).unwrap_or(usize::MAX),
        eps.len(),
        etps.len(),
        micro_batches.len(),
        recomputes.len(),
    ]
    .iter()
    .fold(1u64, |acc, &n| acc.saturating_mul(n as u64));
    if bound > options.max_candidates {
        return Err(InputError::TooLarge {
            what: "candidate mappings (raise max_candidates or lower max_vp, max_cp, max_micro_batch)",
            limit: options.max_candidates,
            value: bound,
        }
        .into());
    }
    let mut shapes = Vec::new();
    for &tp in &tps {
        for &cp in &cps {
            for &pp in &pps {
                // Degrees are divisors of counts below 2^32, but their products are checked: a
                // product that overflows cannot divide the GPU count anyway.
                let tp_cp = tp.checked_mul(cp);
                let all = tp_cp.and_then(|x| x.checked_mul(pp));
                if all.is_some_and(|a| gpus % a == 0)
                    && tp_cp.is_some_and(|x| model.seq_len % x == 0)
                {
                    shapes.push((tp, cp, pp));
                }
            }
        }
    }
    let keep = options.keep;
    let total = shapes.len() as u64;
    let done = AtomicU64::new(0);
    let local = shapes
        .par_iter()
        .map(|&(tp, cp, pp)| {
            let mut local = Local::default();
            let dp = gpus / (tp * cp * pp);
            let max_vp = if pp == 1 {
                1
            } else {
                options.max_vp.max(1).min(model.layers / pp)
            };
            for vp in 1..=max_vp {
                for &ep in &eps {
                    for &etp in &etps {
                        if ep.checked_mul(etp).is_none_or(|x| (gpus / pp) % x != 0) {
                            continue;
                        }
                        for &mb in &micro_batches {
                            if dp.checked_mul(mb).is_none_or(|x| global_batch % x != 0) {
                                continue;
                            }
                            for &recompute in recomputes {
                                local.candidates += 1;
                                let mapping = MoeMapping {
                                    tp,
                                    cp,
                                    pp,
                                    vp,
                                    ep,
                                    etp,
                                    micro_batch: mb,
                                    recompute,
                                };
                                let Ok(degrees) = mapping.validate(model, gpus, global_batch)
                                else {
                                    continue;
                                };
                                if sm.check_schedule(&mapping, &degrees).is_err() {
                                    continue;
                                }
                                local.valid += 1;
                                match sm.evaluate_valid(&mapping, degrees, gpus, global_batch) {
                                    Ok(e) => {
                                        let need = e.memory.total_bytes;
                                        local.min_memory =
                                            Some(local.min_memory.map_or(need, |m| m.min(need)));
                                        if e.fits {
                                            local.fitting += 1;
                                            local.offer(e, keep);
                                        }
                                    }
                                    Err(err) => {
                                        local.error.get_or_insert(err);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            local
        })
        .reduce(Local::default, |a, b| a.merge(b, keep));
    if local.top.is_empty() {
        if let Some(err) = local
            .error
            .filter(|_| local.valid > 0 && local.min_memory.is_none())
        {
            return Err(err);
        }
        return Err(RailNetworkError::NoFeasibleConfiguration {
            valid_shapes: local.valid,
            min_memory_bytes: local.min_memory.unwrap_or(f64::INFINITY),
            capacity_bytes: sm.system().system.memory_bytes,
        });
    }
    Ok(MoeSearchResult {
        ranked: local.top,
        candidates: local.candidates,
        valid: local.valid,
        fitting: local.fitting,
    })
}

/// The network question for one mapping: its step time on a rail-optimized and on a rail-only
/// fabric, and what each fabric costs (Table 2 counts, §6.5 prices).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FabricCost {
    /// Switches, transceivers and cost of both fabrics.
    pub comparison: FabricComparison,
    /// Step time on the rail-optimized fabric, seconds.
    pub rail_optimized_step_s: f64,
    /// Step time on the rail-only fabric, seconds.
    pub rail_only_step_s: f64,
}

/// Step time of `mapping` on both fabrics and the fabrics' equipment and cost for `gpus` GPUs
/// in the system's HB domains on switches of `radix` ports.
///
/// # Errors
///
/// As [`StepModel::evaluate`] and [`compare_fabrics`] (the HB-domain size must divide the GPU
/// count; the radix must build a Clos).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::model::Recompute;
/// use rail_network::moe::*;
/// let sm = StepModel::new(moe_model_preset("mixtral-8x7b")?, training_system_preset("h100")?,
///     StepOptions::default())?;
/// let m = MoeMapping { tp: 1, cp: 1, pp: 4, vp: 8, ep: 8, etp: 1, micro_batch: 1,
///     recompute: Recompute::None };
/// let f = fabric_cost(&sm, &m, 64, 256, 64)?;
/// assert!(f.rail_only_step_s >= f.rail_optimized_step_s);
/// assert!(f.comparison.rail_only.cost_usd <= f.comparison.rail_optimized.cost_usd);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn fabric_cost(
    sm: &StepModel,
    mapping: &MoeMapping,
    gpus: u64,
    global_batch: u64,
    radix: u64,
) -> Result<FabricCost, RailNetworkError> {
    let mut step = [0.0; 2];
    for (i, fabric) in [FabricKind::RailOptimized, FabricKind::RailOnly]
        .into_iter()
        .enumerate()
    {
        let mut options = *sm.options();
        options.fabric = fabric;
        step[i] = sm
            .with_options(options)?
            .evaluate(mapping, gpus, global_batch)?
            .terms
            .step_time_s;
    }
    let params = FabricParams::new(gpus, sm.system().system.hb_domain, radix);
    Ok(FabricCost {
        comparison: compare_fabrics(&params, &PriceModel::default())?,
        rail_optimized_step_s: step[0],
        rail_only_step_s: step[1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moe::{StepOptions, moe_model_preset, training_system_preset};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// Every ranked mapping is valid, fits, re-evaluates to the same terms and the list is
        /// sorted; the winner is at least as fast as any single mapping we try.
        #[test]
        fn ranked_mappings_are_valid_sorted_and_best(gpu_exp in 4u32..7, batch_mult in 1u64..5) {
            let gpus = 1u64 << gpu_exp;
            let batch = gpus * batch_mult;
            let sm = StepModel::new(
                moe_model_preset("mixtral-8x7b").unwrap(),
                training_system_preset("h100").unwrap(),
                StepOptions::default(),
            ).unwrap();
            let options = MoeSearchOptions { keep: 20, max_vp: 4, ..MoeSearchOptions::default() };
            let r = search_mappings(&sm, gpus, batch, &options).unwrap();
            for w in r.ranked.windows(2) {
                prop_assert!(w[0].terms.step_time_s <= w[1].terms.step_time_s);
            }
            for e in &r.ranked {
                prop_assert!(e.fits);
                let again = sm.evaluate(&e.mapping, gpus, batch).unwrap();
                prop_assert_eq!(again.terms, e.terms);
            }
            let plain = MoeMapping { tp: 1, cp: 1, pp: 1, vp: 1, ep: 8, etp: 1, micro_batch: 1,
                recompute: Recompute::Full };
            if let Ok(e) = sm.evaluate(&plain, gpus, batch) {
                if e.fits {
                    prop_assert!(r.ranked[0].terms.step_time_s <= e.terms.step_time_s);
                }
            }
        }
    }

    #[test]
    fn work_limit_is_a_typed_error() {
        let sm = StepModel::new(
            moe_model_preset("deepseek-v3").unwrap(),
            training_system_preset("h100").unwrap(),
            StepOptions::default(),
        )
        .unwrap();
        let options = MoeSearchOptions {
            max_candidates: 1000,
            ..MoeSearchOptions::default()
        };
        assert!(matches!(
            search_mappings(&sm, 2048, 8192, &options),
            Err(RailNetworkError::Input(InputError::TooLarge { .. }))
        ));
    }
}

#[cfg(test)]
mod extreme_inputs {
    use super::*;
    use crate::moe::{StepOptions, moe_model_preset, training_system_preset};

    /// Sizes at the limits return a result or a typed error, never a panic or a non-finite
    /// time.
    #[test]
    fn huge_counts_do_not_panic() {
        let mut system = training_system_preset("h100").unwrap();
        system.system.hb_domain = u64::MAX;
        let mut model = moe_model_preset("mixtral-8x7b").unwrap();
        model.hidden = 1 << 32;
        model.seq_len = 1 << 32;
        let sm = StepModel::new(model, system, StepOptions::default()).unwrap();
        let options = MoeSearchOptions {
            max_candidates: 1 << 20,
            ..MoeSearchOptions::default()
        };
        for (gpus, batch) in [(1u64 << 32, 1u64 << 32), (4_294_967_291, 1), (1, 1)] {
            if let Ok(r) = search_mappings(&sm, gpus, batch, &options) {
                assert!(r.ranked.iter().all(|e| e.terms.step_time_s.is_finite()));
            }
        }
        assert!(search_mappings(&sm, (1 << 32) + 1, 1, &options).is_err());
        let m = MoeMapping {
            tp: 1 << 31,
            cp: 1 << 31,
            pp: 1 << 31,
            vp: 1,
            ep: 8,
            etp: 1 << 31,
            micro_batch: u64::MAX,
            recompute: Recompute::None,
        };
        assert!(sm.evaluate(&m, u64::MAX, u64::MAX).is_err());
    }
}

//! Exhaustive parallelization search (the rail-only paper's Appendix C, Eq. 11–19).
//!
//! Every `(p, t, d)` with `p t d = N` whose degrees divide the model (`l/p`, `h/t`, `s/t`,
//! heads`/t`) and batch (`B/d`) is a *shape*; for each shape the search enumerates micro-batch
//! sizes `b | B/d`, interleavings `v | l/p` (only `v = 1` without pipelining), drops those that
//! exceed GPU memory (Eq. 19), and evaluates every split `t_h p_h d_h = K` of the HB domain
//! (Eq. 12, 14–16). Shapes run in parallel on rayon; the ranked list is sorted by iteration time
//! and then by the configuration itself, so the result does not depend on thread timing.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::divisors::Factored;
use crate::error::RailNetworkError;
use crate::iteration::{IterationModel, IterationTerms, check_iteration_time};
use crate::memory::{MemoryBreakdown, memory_per_gpu};
use crate::parallel::Parallelization;
use crate::system::SystemSpec;
use comm_cost_model::gcd;
use comm_cost_model::{InputError, check_count_u64, check_divides};

/// Limits of the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchOptions {
    /// Configurations kept in the ranked list (at least 1).
    pub keep: usize,
    /// Largest micro-batch size tried (0 = no limit).
    pub max_micro_batch: u64,
    /// Largest interleaving tried (0 = no limit).
    pub max_interleave: u64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            keep: 10,
            max_micro_batch: 0,
            max_interleave: 0,
        }
    }
}

/// One evaluated configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RankedConfig {
    /// The configuration.
    pub parallelization: Parallelization,
    /// Its iteration time and terms.
    pub terms: IterationTerms,
    /// Its memory per GPU.
    pub memory: MemoryBreakdown,
}

impl RankedConfig {
    /// Evaluates one configuration on `gpus` GPUs: checks Eq. 11–18, then its iteration time
    /// with every term (Eq. 2–7) and its memory per GPU, as the search ranks it.
    ///
    /// # Errors
    ///
    /// The first constraint of Eq. 11–18 that `parallelization` violates for `gpus` GPUs (see
    /// [`Parallelization::validate`]); memory (Eq. 19) is reported by
    /// [`RankedConfig::fits_in_memory`], not checked. [`RailNetworkError::Input`] (`NonFinite`
    /// or `NotPositive`) when the iteration time overflows or underflows `f64`, or the memory
    /// overflows it (extreme sizes, bandwidths or bytes per parameter).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::{compute::ComputeModel, iteration::IterationModel, model::model_preset};
    /// use rail_network::{parallel::Parallelization, search::RankedConfig, system::system_preset};
    /// use rail_network::RailNetworkError;
    /// use comm_cost_model::InputError;
    /// let im = IterationModel::new(model_preset("gpt-1t")?, system_preset("dgx-a100")?, ComputeModel::paper())?;
    /// let par = Parallelization::with_default_mapping(8, 64, 1, 1, 512, 1, 8)?;
    /// let c = RankedConfig::evaluate(&im, 512, par)?;
    /// assert_eq!(c.terms, im.evaluate(&par)?);
    /// assert!(c.fits_in_memory(im.system()));
    /// assert!(matches!( // p t d != N (Eq. 11)
    ///     RankedConfig::evaluate(&im, 1024, par),
    ///     Err(RailNetworkError::Input(InputError::SizeMismatch { actual: 512, expected: 1024, .. }))
    /// ));
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn evaluate(
        im: &IterationModel,
        gpus: u64,
        parallelization: Parallelization,
    ) -> Result<Self, RailNetworkError> {
        parallelization.validate(im.model(), gpus, im.system().hb_domain)?;
        let terms = im.evaluate_unchecked(&parallelization);
        check_iteration_time(terms.iteration_time_s)?;
        let compute = im.compute();
        let memory = memory_per_gpu(
            im.model(),
            &parallelization,
            compute.recompute,
            compute.bytes_per_param,
        )?;
        Ok(Self {
            parallelization,
            terms,
            memory,
        })
    }

    /// Whether the configuration's fullest GPU fits the system's GPU memory (Eq. 19).
    #[must_use]
    pub fn fits_in_memory(&self, system: &SystemSpec) -> bool {
        self.memory.total_bytes <= system.memory_bytes
    }
}

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The fastest configuration.
    pub best: RankedConfig,
    /// The fastest `keep` configurations, fastest first.
    pub ranked: Vec<RankedConfig>,
    /// Configurations evaluated (passing Eq. 11–19).
    pub evaluated: u64,
    /// `(p, t, d)` shapes passing the divisibility constraints.
    pub shapes: u64,
}

#[derive(Default)]
struct Local {
    top: Vec<RankedConfig>,
    evaluated: u64,
    valid: u64,
    min_memory: f64,
    /// Why the first configuration with an unusable time was not ranked.
    rejected: Option<InputError>,
}

fn rank_cmp(a: &RankedConfig, b: &RankedConfig) -> std::cmp::Ordering {
    a.terms
        .iteration_time_s
        .total_cmp(&b.terms.iteration_time_s)
        .then_with(|| a.parallelization.cmp(&b.parallelization))
}

impl Local {
    fn offer(&mut self, c: RankedConfig, keep: usize) {
        if self.top.len() == keep
            && self
                .top
                .last()
                .is_some_and(|w| rank_cmp(&c, w) != std::cmp::Ordering::Less)
        {
            return;
        }
        let at = self
            .top
            .partition_point(|x| rank_cmp(x, &c) == std::cmp::Ordering::Less);
        self.top.insert(at, c);
        self.top.truncate(keep);
    }
}

/// Largest GPU count, global batch and layer count [`search`] accepts: each is factored by
/// trial division up to its square root (2^20 steps at this limit).
pub const MAX_SEARCH_COUNT: u64 = 1 << 40;

/// Most loop steps [`search`] accepts: for every `(p, t, d)` shape, the micro-batch sizes
/// times the interleavings times the HB-domain splits (an upper bound, counted from divisor
/// counts before anything is evaluated). The paper's GPT-1T searches (4,096 to 262,144 GH200
/// GPUs at batch 4096) need at most 30,000; at this limit a release build runs for about a
/// second. [`MAX_SEARCH_COUNT`] alone would let a highly divisible GPU count, batch and layer
/// count ask for 10^12 steps.
pub const MAX_SEARCH_WORK: u64 = 1 << 24;

/// Checks the counts the search factors against [`MAX_SEARCH_COUNT`].
fn check_search_limits(
    im: &IterationModel,
    gpus: u64,
    global_batch: u64,
) -> Result<(), RailNetworkError> {
    let counts = [
        ("GPU count N", gpus),
        ("global batch size B", global_batch),
        ("layers", im.model().layers),
    ];
    for (what, value) in counts {
        if value > MAX_SEARCH_COUNT {
            return Err(InputError::TooLarge {
                what,
                limit: MAX_SEARCH_COUNT,
                value,
            }
            .into());
        }
    }
    Ok(())
}

/// Finds the fastest parallelization of the prepared model on `gpus` GPUs for `global_batch`.
///
/// # Errors
///
/// [`RailNetworkError::Input`] (`CountTooSmall`, `NotDivisible`) for a bad cluster or batch,
/// (`TooLarge`) for a GPU count, global batch or layer count above [`MAX_SEARCH_COUNT`] or an
/// enumeration above [`MAX_SEARCH_WORK`] steps (both checked before any evaluation),
/// (`NonFinite` or `NotPositive`) when every configuration that fits in memory has a time that
/// overflows or underflows `f64`,
/// [`RailNetworkError::NoFeasibleConfiguration`] when no configuration satisfies Eq. 11–19 (it
/// reports how many passed Eq. 11–18 and the smallest memory any needed).
///
/// # Complexity
///
/// `O(sqrt N + sqrt B + sqrt l + sqrt K)` to factor the counts, then
/// `O(Σ over shapes of div(B/d) · div(l/p) · splits(K))` evaluations of `O(1)` each (at most
/// [`MAX_SEARCH_WORK`]), run on all cores; GPT-1T on 65536 GPUs takes milliseconds (see
/// docs/performance.md).
///
/// # Examples
///
/// ```
/// use rail_network::{compute::ComputeModel, iteration::IterationModel, model::model_preset};
/// use rail_network::search::{search, SearchOptions};
/// use rail_network::system::system_preset;
/// let im = IterationModel::new(model_preset("gpt-175b")?, system_preset("dgx-a100")?, ComputeModel::paper())?;
/// let r = search(&im, 64, 64, &SearchOptions::default())?;
/// assert!(r.best.terms.iteration_time_s <= r.ranked.last().unwrap().terms.iteration_time_s);
/// assert!(r.best.memory.total_bytes <= 80e9);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn search(
    im: &IterationModel,
    gpus: u64,
    global_batch: u64,
    options: &SearchOptions,
) -> Result<SearchResult, RailNetworkError> {
    search_with_progress(im, gpus, global_batch, options, &|_, _| {})
}

/// [`search`] that calls `progress(done, total)` after each `(p, t, d)` shape (from any thread).
///
/// # Errors
///
/// As [`search`].
///
/// # Complexity
///
/// As [`search`].
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use rail_network::{compute::ComputeModel, iteration::IterationModel, model::model_preset};
/// use rail_network::search::{search_with_progress, SearchOptions};
/// use rail_network::system::system_preset;
/// let im = IterationModel::new(model_preset("gpt-22b")?, system_preset("dgx-a100")?, ComputeModel::paper())?;
/// let calls = AtomicU64::new(0);
/// search_with_progress(&im, 64, 64, &SearchOptions::default(), &|_, _| {
///     calls.fetch_add(1, Ordering::Relaxed);
/// })?;
/// assert!(calls.load(Ordering::Relaxed) > 0);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn search_with_progress(
    im: &IterationModel,
    gpus: u64,
    global_batch: u64,
    options: &SearchOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<SearchResult, RailNetworkError> {
    check_count_u64("GPU count N", gpus, 1)?;
    check_count_u64("global batch size B", global_batch, 1)?;
    check_search_limits(im, gpus, global_batch)?;
    let k = im.system().hb_domain;
    check_divides("HB-domain size K must divide the GPU count N", gpus, k)?;
    let space = Space::new(im, gpus, global_batch, options);
    let shapes = space.shapes()?;
    let total = shapes.len() as u64;
    let done = AtomicU64::new(0);
    let keep = options.keep.max(1);
    let locals: Vec<Local> = shapes
        .par_iter()
        .map(|shape| {
            let local = space.search_shape(shape, keep);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            local
        })
        .collect();
    let mut all: Vec<RankedConfig> = Vec::new();
    let (mut evaluated, mut valid, mut min_memory) = (0, 0, f64::INFINITY);
    let mut rejected = None;
    for l in locals {
        evaluated += l.evaluated;
        valid += l.valid;
        min_memory = min_memory.min(l.min_memory);
        rejected = rejected.or(l.rejected);
        all.extend(l.top);
    }
    all.sort_by(rank_cmp);
    all.truncate(keep);
    let Some(&best) = all.first() else {
        // Configurations fit in memory but every time overflowed or underflowed.
        return Err(rejected.map_or(
            RailNetworkError::NoFeasibleConfiguration {
                valid_shapes: valid,
                min_memory_bytes: min_memory,
                capacity_bytes: im.system().memory_bytes,
            },
            RailNetworkError::from,
        ));
    };
    Ok(SearchResult {
        best,
        ranked: all,
        evaluated,
        shapes: total,
    })
}

/// One `(p, t, d)` shape passing the divisibility constraints.
struct Shape {
    p: u64,
    t: u64,
    d: u64,
}

/// The counts of one search, factored once, and its options.
struct Space<'a> {
    im: &'a IterationModel,
    gpus: u64,
    global_batch: u64,
    options: &'a SearchOptions,
    gpus_f: Factored,
    batch_f: Factored,
    layers_f: Factored,
    hb_f: Factored,
}

impl<'a> Space<'a> {
    fn new(
        im: &'a IterationModel,
        gpus: u64,
        global_batch: u64,
        options: &'a SearchOptions,
    ) -> Self {
        Self {
            im,
            gpus,
            global_batch,
            options,
            gpus_f: Factored::new(gpus),
            batch_f: Factored::new(global_batch),
            layers_f: Factored::new(im.model().layers),
            hb_f: Factored::new(im.system().hb_domain),
        }
    }

    /// Micro-batch sizes of shape `d`: divisors of `B / d` up to the cap.
    fn micro_batches(&self, d: u64) -> Vec<u64> {
        let cap = self.options.max_micro_batch;
        self.batch_f.divisors(self.global_batch / d, cap)
    }

    /// Interleavings of shape `p`: divisors of `l / p` up to the cap (only 1 without pipelining).
    fn interleavings(&self, p: u64) -> Vec<u64> {
        if p == 1 {
            return vec![1];
        }
        let cap = self.options.max_interleave;
        self.layers_f.divisors(self.im.model().layers / p, cap)
    }

    /// Splits `(t_h, d_h, p_h)` of the HB domain with `t_h | t`, `d_h | d`, `p_h | p` and
    /// `t_h d_h p_h = K` (Eq. 12, 14–16).
    fn splits(&self, shape: &Shape) -> Vec<(u64, u64, u64)> {
        let k = self.im.system().hb_domain;
        let mut out = Vec::new();
        for th in self.hb_f.divisors(gcd(shape.t, k), 0) {
            for dh in self.hb_f.divisors(gcd(shape.d, k / th), 0) {
                let ph = k / (th * dh);
                if shape.p % ph == 0 {
                    out.push((th, dh, ph));
                }
            }
        }
        out
    }

    /// Loop steps of one shape, an upper bound counted without enumerating: split candidates
    /// once, then memory and every split for each micro-batch size and interleaving.
    fn work(&self, shape: &Shape) -> u64 {
        let capped = |count: u64, cap: u64| if cap == 0 { count } else { count.min(cap) };
        let layers = self.im.model().layers;
        let n_b = capped(
            self.batch_f.divisor_count(self.global_batch / shape.d),
            self.options.max_micro_batch,
        );
        let n_v = if shape.p == 1 {
            1
        } else {
            capped(
                self.layers_f.divisor_count(layers / shape.p),
                self.options.max_interleave,
            )
        };
        let k = self.im.system().hb_domain;
        let n_split = self
            .hb_f
            .divisor_count(gcd(shape.t, k))
            .saturating_mul(self.hb_f.divisor_count(gcd(shape.d, k)));
        n_b.saturating_mul(n_v)
            .saturating_mul(n_split.saturating_add(1))
            .saturating_add(n_split)
    }

    /// Shapes `(p, t, N/(p t))` passing the divisibility constraints, once their total work
    /// is known to be within [`MAX_SEARCH_WORK`].
    fn shapes(&self) -> Result<Vec<Shape>, RailNetworkError> {
        let m = self.im.model();
        let t_max = gcd(gcd(m.hidden, m.seq_len), m.heads);
        let mut out = Vec::new();
        let mut work = 0u64;
        for p in self.gpus_f.divisors(gcd(self.gpus, m.layers), 0) {
            for t in self.gpus_f.divisors(gcd(self.gpus / p, t_max), 0) {
                let d = self.gpus / (p * t);
                if self.global_batch % d != 0 {
                    continue;
                }
                let shape = Shape { p, t, d };
                work = work.saturating_add(self.work(&shape));
                if work > MAX_SEARCH_WORK {
                    return Err(InputError::TooLarge {
                        what: "loop steps of the parallelization search (at least)",
                        limit: MAX_SEARCH_WORK,
                        value: work,
                    }
                    .into());
                }
                out.push(shape);
            }
        }
        Ok(out)
    }

    fn search_shape(&self, shape: &Shape, keep: usize) -> Local {
        let im = self.im;
        let mut local = Local {
            min_memory: f64::INFINITY,
            ..Local::default()
        };
        let compute = im.compute();
        let splits = self.splits(shape);
        let vs = self.interleavings(shape.p);
        for b in self.micro_batches(shape.d) {
            for &v in &vs {
                let mut par = Parallelization {
                    tp: shape.t,
                    pp: shape.p,
                    dp: shape.d,
                    tp_hb: 1,
                    pp_hb: 1,
                    dp_hb: 1,
                    micro_batch: b,
                    global_batch: self.global_batch,
                    interleave: v,
                };
                local.valid += 1;
                // A memory that overflows `f64` cannot fit any GPU.
                let Ok(memory) =
                    memory_per_gpu(im.model(), &par, compute.recompute, compute.bytes_per_param)
                else {
                    continue;
                };
                local.min_memory = local.min_memory.min(memory.total_bytes);
                if memory.total_bytes > im.system().memory_bytes {
                    continue;
                }
                for &(th, dh, ph) in &splits {
                    (par.tp_hb, par.dp_hb, par.pp_hb) = (th, dh, ph);
                    let terms = im.evaluate_unchecked(&par);
                    local.evaluated += 1;
                    // Extreme sizes or bandwidths overflow or underflow a time: never rank it.
                    if let Err(e) = check_iteration_time(terms.iteration_time_s) {
                        local.rejected.get_or_insert(e);
                        continue;
                    }
                    local.offer(
                        RankedConfig {
                            parallelization: par,
                            terms,
                            memory,
                        },
                        keep,
                    );
                }
            }
        }
        local
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::ComputeModel;
    use crate::model::model_preset;
    use crate::system::system_preset;

    fn im(model: &str, system: &str) -> IterationModel {
        IterationModel::new(
            model_preset(model).unwrap(),
            system_preset(system).unwrap(),
            ComputeModel::paper(),
        )
        .unwrap()
    }

    #[test]
    fn results_satisfy_every_constraint_and_are_sorted() {
        let im = im("gpt-175b", "dgx-a100");
        let r = search(
            &im,
            256,
            256,
            &SearchOptions {
                keep: 50,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(r.ranked.len() == 50);
        for w in r.ranked.windows(2) {
            assert!(w[0].terms.iteration_time_s <= w[1].terms.iteration_time_s);
        }
        for c in &r.ranked {
            c.parallelization.validate(im.model(), 256, 8).unwrap();
            assert!(c.memory.total_bytes <= 80e9);
            let again = im.evaluate(&c.parallelization).unwrap();
            assert_eq!(again, c.terms);
        }
    }

    #[test]
    fn brute_force_agrees_on_a_small_case() {
        // Evaluate every Parallelization by hand over all degrees and compare the best time.
        let im = im("gpt-22b", "dgx-a100");
        let (n, big_b) = (32u64, 32u64);
        let r = search(&im, n, big_b, &SearchOptions::default()).unwrap();
        let mut best = f64::INFINITY;
        let range = |x: u64| (1..=x).filter(move |y| x % y == 0);
        for tp in range(n) {
            for pp in range(n / tp) {
                let dp = n / (tp * pp);
                for b in 1..=big_b {
                    for v in 1..=48 {
                        for th in range(8) {
                            for dh in range(8 / th) {
                                let par = Parallelization {
                                    tp,
                                    pp,
                                    dp,
                                    tp_hb: th,
                                    dp_hb: dh,
                                    pp_hb: 8 / (th * dh),
                                    micro_batch: b,
                                    global_batch: big_b,
                                    interleave: v,
                                };
                                if (pp == 1 && v > 1) || par.validate(im.model(), n, 8).is_err() {
                                    continue;
                                }
                                let c = im.compute();
                                let mem = memory_per_gpu(
                                    im.model(),
                                    &par,
                                    c.recompute,
                                    c.bytes_per_param,
                                )
                                .unwrap();
                                if mem.total_bytes <= 80e9 {
                                    best = best.min(im.evaluate(&par).unwrap().iteration_time_s);
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(r.best.terms.iteration_time_s, best);
    }

    #[test]
    fn deterministic_across_runs() {
        let im = im("gpt-1t", "gh200");
        let a = search(&im, 4096, 4096, &SearchOptions::default()).unwrap();
        let b = search(&im, 4096, 4096, &SearchOptions::default()).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn infeasible_model_is_a_typed_error() {
        let mut sys = system_preset("dgx-a100").unwrap();
        sys.memory_bytes = 1e9;
        let im = IterationModel::new(model_preset("gpt-1t").unwrap(), sys, ComputeModel::paper())
            .unwrap();
        let e = search(&im, 64, 64, &SearchOptions::default()).unwrap_err();
        assert!(
            matches!(e, RailNetworkError::NoFeasibleConfiguration { valid_shapes, .. } if valid_shapes > 0)
        );
        assert!(search(&im, 60, 64, &SearchOptions::default()).is_err());
    }
}

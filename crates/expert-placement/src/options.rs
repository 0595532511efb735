//! The visible budget of the placement search, and how a search ended.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::PlacementError;

/// Default search steps of the branch and bound behind [`crate::PlacementAlgorithm::Optimal`]
/// (at most about 0.6 s on a shared 2-core machine on the instances that use all of it).
///
/// 500,000 since issue 20's calibration: on the 465 instances of the 500-instance campaign
/// whose first plan is not at its bound, 2,000,000 steps gave the same plans and the same
/// proofs as 500,000 but took up to 1.33 s instead of 0.57 s a layer, so the 1 s wall-clock
/// safety net, not the counted budget, ended some searches (`docs/performance.md`).
pub const DEFAULT_SEARCH_STEPS: u64 = 500_000;

/// Default search steps of the exact count search on GPUs of two slots (`pair_exact`), when no
/// steps are set: it runs only on 2-slot clusters, rare in serving, and its proofs on the
/// campaign's hardest 2-slot layers need 1-3 million steps (0.3-0.5 s on a free core), where
/// [`DEFAULT_SEARCH_STEPS`] left three of them 0.2-0.4% above their optimum
/// (`docs/reproduction.md`). An explicit `search_steps` applies to it as to every search.
pub const DEFAULT_PAIR_SEARCH_STEPS: u64 = 3_000_000;

/// Default search steps of [`crate::PlacementAlgorithm::Exact`] (it errs rather than return an
/// unproved plan, so it may search longer).
pub const DEFAULT_EXACT_SEARCH_STEPS: u64 = 20_000_000;

/// Default wall-clock limit of one layer's branch and bound, seconds.
pub const DEFAULT_TIME_BUDGET_S: f64 = 1.0;

/// The budget of a placement search.
///
/// The branch and bound counts *steps* (each node it opens and each choice of GPUs it tries);
/// steps are deterministic, so the same input and budget give the same plan on every machine.
/// The wall-clock limit is a safety net: when it, rather than a counted limit, ends a search,
/// the plan depends on the machine's speed, and the plan says so: `time-capped`.
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementOptions,
///     Termination, place_with};
///
/// let c = PlacementCluster::uniform(4, 2, 1)?;
/// let w = LayerLoads::new(vec![9.0, 7.0, 3.0, 3.0, 1.0])?;
/// let p = place_with(&w, &c, PlacementAlgorithm::Optimal, &PlacementOptions::default())?;
/// assert!(matches!(p.termination, Termination::ProvedOptimal | Termination::BoundReached));
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementOptions {
    /// Steps the branch and bound may take per layer (per node for the node-aware planner);
    /// `None`: [`DEFAULT_SEARCH_STEPS`], or [`DEFAULT_EXACT_SEARCH_STEPS`] for `Exact`.
    /// `Some(0)` skips the exact search.
    #[serde(default)]
    pub search_steps: Option<u64>,
    /// Wall-clock limit of one branch and bound, seconds ([`DEFAULT_TIME_BUDGET_S`]).
    #[serde(default = "default_time_budget_s")]
    pub time_budget_s: f64,
    /// Stops every search of the call early when raised from another thread (for example by a
    /// Ctrl-C handler); the call then returns [`PlacementError::Cancelled`]. Not serialized.
    #[serde(skip)]
    pub cancel: Option<CancelFlag>,
}

/// A flag another thread raises to stop a placement call (see [`PlacementOptions::cancel`]).
///
/// Clones share the flag. The searches read it wherever they read their clock: at most a few
/// milliseconds pass between [`CancelFlag::cancel`] and the call returning.
///
/// # Examples
///
/// ```
/// use expert_placement::{CancelFlag, LayerLoads, PlacementAlgorithm, PlacementCluster,
///     PlacementError, PlacementOptions, place_with};
///
/// let flag = CancelFlag::new();
/// let options = PlacementOptions { cancel: Some(flag.clone()), ..PlacementOptions::default() };
/// flag.cancel(); // as a signal handler on another thread would
/// let c = PlacementCluster::uniform(4, 2, 1)?;
/// let w = LayerLoads::new(vec![9.0, 7.0, 3.0, 3.0, 1.0])?;
/// let r = place_with(&w, &c, PlacementAlgorithm::Optimal, &options);
/// assert!(matches!(r, Err(PlacementError::Cancelled)));
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag not raised yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the flag: every call holding a clone stops at its next check.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the flag is raised.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for CancelFlag {
    /// Two flags are equal when they are clones of one flag.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

fn default_time_budget_s() -> f64 {
    DEFAULT_TIME_BUDGET_S
}

impl Default for PlacementOptions {
    fn default() -> Self {
        Self {
            search_steps: None,
            time_budget_s: DEFAULT_TIME_BUDGET_S,
            cancel: None,
        }
    }
}

impl PlacementOptions {
    /// Checks the time budget: a finite, non-negative number of seconds.
    ///
    /// # Errors
    ///
    /// [`PlacementError::Input`] (`NonFinite` or `Negative`) naming `time_budget_s`.
    pub fn validate(&self) -> Result<(), PlacementError> {
        comm_cost_model::check_non_negative("time_budget_s", self.time_budget_s)?;
        Ok(())
    }

    /// Whether [`PlacementOptions::cancel`] is raised.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancelFlag::is_cancelled)
    }

    /// `Err(Cancelled)` when the flag is raised: checked after each search, so that a plan
    /// cut short by a cancellation is never returned as if its budget had ended it.
    pub(crate) fn check_cancelled(&self) -> Result<(), PlacementError> {
        if self.is_cancelled() {
            Err(PlacementError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// The step and time budget with `default_steps` when none is set (and at least
    /// [`DEFAULT_PAIR_SEARCH_STEPS`] for the 2-slot search then).
    pub(crate) fn budget(&self, default_steps: u64) -> Budget {
        Budget {
            steps: self.search_steps.unwrap_or(default_steps),
            pair_steps: self
                .search_steps
                .unwrap_or(default_steps.max(DEFAULT_PAIR_SEARCH_STEPS)),
            time: Duration::try_from_secs_f64(self.time_budget_s).unwrap_or(Duration::MAX),
            cancel: self.cancel.clone(),
            clock_hit: Arc::default(),
        }
    }
}

/// A resolved budget: steps, wall-clock time and the caller's cancel flag.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pub(crate) steps: u64,
    /// The steps of the exact 2-slot count search (`steps` when the caller set them).
    pub(crate) pair_steps: u64,
    pub(crate) time: Duration,
    pub(crate) cancel: Option<CancelFlag>,
    /// Set when a deadline of this budget passed its instant (a search was cut by the clock,
    /// so its plan may differ on another machine or under another load).
    pub(crate) clock_hit: Arc<AtomicBool>,
}

/// When a search must stop: a wall-clock instant, the caller's cancel flag, or both.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    cancel: Option<CancelFlag>,
    /// The budget's [`Budget::clock_hit`], set when the instant is found passed.
    hit: Option<Arc<AtomicBool>>,
}

impl Deadline {
    /// No deadline: the search ends on its own limits only.
    pub(crate) fn never() -> Self {
        Self::default()
    }

    /// Whether the instant has passed or the flag is raised (reads the clock: nanoseconds).
    pub(crate) fn passed(&self) -> bool {
        if self.at.is_some_and(|d| Instant::now() >= d) {
            if let Some(hit) = &self.hit {
                hit.store(true, Ordering::Relaxed);
            }
            return true;
        }
        self.cancel.as_ref().is_some_and(CancelFlag::is_cancelled)
    }
}

impl Budget {
    /// The default budget of the optimal planner.
    pub(crate) fn default_optimal() -> Self {
        PlacementOptions::default().budget(DEFAULT_SEARCH_STEPS)
    }

    /// The deadline of a search starting now (no instant when it does not fit in an
    /// `Instant`).
    pub(crate) fn deadline(&self) -> Deadline {
        self.deadline_after(self.time)
    }

    /// The deadline `time` from now, with this budget's cancel flag.
    pub(crate) fn deadline_after(&self, time: Duration) -> Deadline {
        self.deadline_at(Instant::now().checked_add(time))
    }

    /// The deadline at `at`, with this budget's cancel flag.
    pub(crate) fn deadline_at(&self, at: Option<Instant>) -> Deadline {
        Deadline {
            at,
            cancel: self.cancel.clone(),
            hit: Some(Arc::clone(&self.clock_hit)),
        }
    }

    /// Whether a deadline of this budget passed its instant: a search was cut by the clock.
    pub(crate) fn clock_hit(&self) -> bool {
        self.clock_hit.load(Ordering::Relaxed)
    }
}

/// How the search behind a plan ended.
///
/// Serialized in kebab case (`"proved-optimal"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Termination {
    /// The branch and bound finished (on GPUs of two slots and one speed, the exact count
    /// search proved the plan within a relative `1e-9`): the plan is optimal and its
    /// `lower_bound` equals its maximum load.
    ProvedOptimal,
    /// The plan's maximum load equals its certified lower bound, within a relative `1e-9` (the
    /// width at which the bisected bounds stop): optimal, no search needed.
    BoundReached,
    /// The branch and bound (or the exact 2-slot count search) ran out of steps: the plan is
    /// the best found, its gap to `lower_bound` is what is certified.
    BudgetExhausted,
    /// The instance is above the exact search's limits (or the step budget is 0): the plan is
    /// the heuristic's, its gap to `lower_bound` is what is certified.
    #[default]
    Heuristic,
    /// The wall-clock limit (`time_budget_s`), not a counted limit, ended a search: the plan is
    /// the best found, its gap to `lower_bound` is what is certified, and it may differ on
    /// another machine or under another load (every other termination is reproducible).
    TimeCapped,
    /// A baseline (EPLB) or an evaluated map: nothing was searched.
    NotSearched,
}

impl Termination {
    /// The kebab-case name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::ProvedOptimal => "proved-optimal",
            Self::BoundReached => "bound-reached",
            Self::BudgetExhausted => "budget-exhausted",
            Self::Heuristic => "heuristic",
            Self::TimeCapped => "time-capped",
            Self::NotSearched => "not-searched",
        }
    }

    /// Whether the plan is proved optimal (searched to the end or at its bound).
    #[must_use]
    pub fn is_optimal(self) -> bool {
        matches!(self, Self::ProvedOptimal | Self::BoundReached)
    }

    /// The weaker of two terminations (the one a plan made of several searches reports):
    /// time capped before budget exhausted before heuristic before bound reached before proved
    /// optimal.
    #[must_use]
    pub(crate) fn weakest(self, other: Self) -> Self {
        let rank = |t: Self| match t {
            Self::TimeCapped => -1,
            Self::BudgetExhausted => 0,
            Self::Heuristic => 1,
            Self::NotSearched => 2,
            Self::BoundReached => 3,
            Self::ProvedOptimal => 4,
        };
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

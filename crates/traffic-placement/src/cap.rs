//! The wall-clock safety cap of one layer's plan.
//!
//! Every search of the planner stops on counted work (rounds, iterations, grid points, steps,
//! `expert-placement`'s starts and perturbations), so a plan is the same on any machine at any
//! load. The clock is only a safety net against a pathological instance: whichever search finds
//! it passed stops there and the cap records the hit, which the plan reports
//! ([`crate::TrafficTermination::TimeCapped`]). Only a plan that hit the cap can depend on the
//! machine.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Seconds handed to `expert-placement` when there is no cap: long enough never to bind.
const NO_CAP_S: f64 = 1e6;

/// A deadline that remembers whether anything stopped on it.
#[derive(Debug)]
pub(crate) struct Cap {
    at: Option<Instant>,
    hit: Cell<bool>,
}

impl Cap {
    /// A cap `seconds` from now (none when the instant is not representable).
    pub(crate) fn new(seconds: f64) -> Self {
        let at = Duration::try_from_secs_f64(seconds)
            .ok()
            .and_then(|d| Instant::now().checked_add(d));
        Self {
            at,
            hit: Cell::new(false),
        }
    }

    /// No cap (the certified bound on its own).
    pub(crate) fn never() -> Self {
        Self {
            at: None,
            hit: Cell::new(false),
        }
    }

    /// Whether the cap has passed (or was hit before); a `true` is recorded as a hit, so the
    /// caller must stop the work it guards.
    pub(crate) fn passed(&self) -> bool {
        if self.hit.get() {
            return true;
        }
        if self.at.is_some_and(|d| Instant::now() >= d) {
            self.hit.set(true);
        }
        self.hit.get()
    }

    /// Records a hit found elsewhere (a search of `expert-placement` that may have stopped on
    /// its clock).
    pub(crate) fn record(&self) {
        self.hit.set(true);
    }

    /// Whether any search stopped on the cap.
    pub(crate) fn hit(&self) -> bool {
        self.hit.get()
    }

    /// Seconds left, for `expert-placement`'s time budget (which it checks at half and at all of
    /// it); [`NO_CAP_S`] without a cap, 0 once passed.
    pub(crate) fn left_s(&self) -> f64 {
        match self.at {
            None => NO_CAP_S,
            Some(d) => d.saturating_duration_since(Instant::now()).as_secs_f64(),
        }
    }

    /// Runs an `expert-placement` search given `budget_s` seconds and records a hit when it
    /// ran for half of them or more: its heuristic's extra starts stop at half its time budget,
    /// so a shorter run did all its counted work and is the same on any machine.
    pub(crate) fn watch<T>(&self, budget_s: f64, search: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = search();
        if start.elapsed().as_secs_f64() >= budget_s / 2.0 {
            self.record();
        }
        out
    }
}

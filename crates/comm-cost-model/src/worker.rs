//! A worker (GPU) as the expert-placement algorithms see it: its compute rate and expert slots.

use serde::{Deserialize, Serialize};

use crate::units::FlopPerSecond;
use crate::{InputError, check_positive};

/// One worker (GPU): the FLOP/s it sustains and how many experts its memory holds.
///
/// `flop_per_s` is `F_j` of Aristos Table 1 (the *actual* FLOP/s the worker sustains) and
/// `expert_slots` is `m_j` (expert memory capacity, in experts). Used by topology-aware grouping
/// (`topology-partition`) and by expert assignment (`colocation-matching`), so a cluster's workers
/// feed LysiAssign unchanged. Fields are public; [`Worker::new`] validates, deserializing goes
/// through [`Worker::validate`], and every algorithm taking workers validates them again.
///
/// # Examples
///
/// ```
/// use comm_cost_model::Worker;
/// let a100 = Worker::new(312e12, 32)?;
/// assert_eq!(a100.expert_slots, 32);
/// assert!(Worker::new(0.0, 32).is_err());
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WorkerFields")]
pub struct Worker {
    /// Sustained compute rate `F_j`, FLOP/s (positive).
    pub flop_per_s: FlopPerSecond,
    /// Expert memory capacity `m_j`: how many experts fit in the worker's memory.
    pub expert_slots: usize,
}

impl Worker {
    /// A validated worker.
    ///
    /// # Errors
    ///
    /// [`InputError::NonFinite`] or [`InputError::NotPositive`] for a bad `flop_per_s`.
    pub fn new(flop_per_s: FlopPerSecond, expert_slots: usize) -> Result<Self, InputError> {
        let worker = Self {
            flop_per_s,
            expert_slots,
        };
        worker.validate()?;
        Ok(worker)
    }

    /// Checks the worker (the fields are public, so a struct literal may be invalid).
    ///
    /// # Errors
    ///
    /// [`InputError::NonFinite`] or [`InputError::NotPositive`] for a bad `flop_per_s`.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::Worker;
    /// assert!(Worker { flop_per_s: -1.0, expert_slots: 4 }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        check_positive("worker FLOP/s", self.flop_per_s).map(|_| ())
    }
}

deserialize_validated!(
    Worker,
    WorkerFields {
        flop_per_s: FlopPerSecond,
        expert_slots: usize,
    }
);

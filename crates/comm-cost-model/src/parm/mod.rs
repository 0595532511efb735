//! Parm's dedicated schedules for MP + EP + ESP MoE training (Pan et al., §III–V).
//!
//! * [`ParmLayer`] and [`ParmVolumes`]: the layer shape (Table I) and the tensor sizes the
//!   schedules move, with an explicit element size.
//! * [`baseline_times`], [`s1_times`], [`s2_times`], [`parm_times`]: Eq. 1, Eq. 11/13 and
//!   Eq. 7/14 term by term, and Algorithm 1's choice; [`algorithm1_as_printed`] keeps the
//!   paper's literal algorithm for comparison.
//! * [`saa_phases`], [`saa_time_s`]: the simultaneous AlltoAll + AllGather of Fig. 5, phase by
//!   phase; [`saa_pipelined_time_s`]: the same without phase barriers (the testbed model).
//! * [`Testbed`], [`table3_layers`], [`check_claims`]: the two testbeds of §VI as two-tier
//!   models and a check of the paper's claims over every Table III configuration.
//!
//! `T` is the number of *tokens* per expert, `k f B L / E` (§II); Algorithm 1's
//! `T = k f B L M / E` would put `M²` into `y = E T M N_ESP`. See `docs/algorithms.md`.
//!
//! # Examples
//!
//! ```
//! use comm_cost_model::parm::{ParmLayer, Testbed, Schedule};
//! let layer = ParmLayer { p: 32, n_mp: 4, n_ep: 8, n_esp: 4, b: 8, l: 2048, m: 8192,
//!     h: 16384, e: 8, k: 2, f: 2.4, bytes_per_element: 4.0 };
//! let t = Testbed::parm_testbed_b().times(&layer)?;
//! assert!(t.baseline.total_s / t.parm_s > 1.0);
//! assert!(matches!(t.choice, Schedule::S1 | Schedule::S2));
//! # Ok::<(), comm_cost_model::InputError>(())
//! ```

mod layer;
mod saa;
mod schedules;
mod testbed;

pub use layer::{ParmLayer, ParmVolumes};
pub use saa::{
    MAX_SAA_PHASE_GPUS, SaaPhase, SaaSpec, saa_phases, saa_pipelined_time_s, saa_time_s,
};
pub use schedules::{
    BaselineTimes, ParmCollectiveCosts, ParmTimes, S1Times, S2Times, Schedule,
    algorithm1_as_printed, baseline_times, parm_times, s1_times, s2_times,
};
pub use testbed::{ClaimReport, Counterexample, Testbed, check_claims, table3_layers};

//! MoE-layer inference timelines (Aurora, Li et al., §4.1, §6.1, §8.1).
//!
//! * [`exclusive_time`]: one model per GPU, Eq. 1 (and its reduction [`exclusive_time_eq3`]),
//!   with GPU utilization; [`model_exclusive_time`] for a sequence of layers.
//! * [`colocated_timeline`]: two models sharing every GPU, Table 2 with every component's
//!   start and end and the inference time of Eq. 4; [`model_colocated_time_s`] for a sequence;
//!   [`colocated_gpu_utilization`], per GPU as for exclusive layers.
//! * [`ffn_times_s`]: each GPU's FFN time `|F_i|` from the tokens it receives.
//!
//! # Examples
//!
//! ```
//! use comm_cost_model::timeline::exclusive_time_eq3;
//! // Gate 1 ms, slowest dispatch 4 ms, FFN 5 ms, combine 4 ms, aggregation 1 ms.
//! assert_eq!(exclusive_time_eq3(1e-3, 4e-3, 5e-3, 4e-3, 1e-3)?, 15e-3);
//! # Ok::<(), comm_cost_model::InputError>(())
//! ```

mod colocated;
mod exclusive;
mod ffn;

pub use colocated::{
    ColocatedLayer, ColocatedTimeline, Component, ComponentKind, ModelId, ModelLayerTimes,
    colocated_gpu_utilization, colocated_timeline, model_colocated_time_s,
};
pub use exclusive::{
    ExclusiveLayer, ExclusiveTime, exclusive_time, exclusive_time_eq3, model_exclusive_time,
};
pub use ffn::ffn_times_s;

/// Mean over `n` GPUs of `busy_i / t` (GPU utilization, Aurora §8.1), given `total = Σ busy_i`:
/// `total / n / t`, or, when the sum overflowed (busy times near `f64::MAX`), the mean of the
/// ratios one by one, each at most 1 because no GPU is busy longer than the layer.
fn mean_ratio(total: f64, busy: impl Iterator<Item = f64>, n: usize, t: f64) -> f64 {
    let n = n as f64;
    if total.is_finite() {
        total / n / t
    } else {
        busy.map(|b| b / t).sum::<f64>() / n
    }
}

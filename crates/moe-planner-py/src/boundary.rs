//! The boundary with Python: planner errors and panics become exceptions, never a crash, and
//! Ctrl-C interrupts a call.

use moe_planner::comm_cost_model::InputError;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use moe_planner::PlanError;
use moe_planner::expert_placement::CancelFlag;
use numpy::PyReadonlyArray2;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde::Deserialize;
use serde::de::value::{Error as ValueError, StrDeserializer};

create_exception!(
    _native,
    TooLargeError,
    PyValueError,
    "The input would need more memory or work than the planners allow (the message names the \
     quantity and its limit); raised before anything that large is allocated."
);

/// How often the calling thread wakes up to run Python's signal handlers (Ctrl-C) while the
/// planner works: at most this long between a signal and `KeyboardInterrupt`.
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Why a call failed, sorted into the Python exception it raises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Bad input: `ValueError`.
    Invalid(String),
    /// Refused for its size: [`TooLargeError`] (a `ValueError`).
    TooLarge(String),
    /// A bug (a panic caught at the boundary): `RuntimeError`.
    Internal(String),
}

impl Failure {
    fn into_py(self) -> PyErr {
        match self {
            Self::Invalid(m) => PyValueError::new_err(m),
            Self::TooLarge(m) => TooLargeError::new_err(m),
            Self::Internal(m) => PyRuntimeError::new_err(m),
        }
    }
}

/// Runs `plan` on a worker thread, without the GIL, and waits for it while answering Ctrl-C.
///
/// The calling thread wakes every [`SIGNAL_POLL`] to run Python's signal handlers; when one
/// raises (`KeyboardInterrupt` for Ctrl-C), the call returns that exception at once. Planners
/// that cannot be cancelled (training, schedules) then finish in the background and their
/// result is dropped; see [`run_cancellable`] for those that can. A planner error becomes
/// `ValueError` ([`TooLargeError`] for a size refused before allocation); a panic becomes
/// `RuntimeError`, never an aborted interpreter.
///
/// # Errors
///
/// As above, or `RuntimeError` when no thread can be started.
pub(crate) fn run<T: Send + 'static>(
    py: Python<'_>,
    plan: impl FnOnce() -> Result<T, PlanError> + Send + 'static,
) -> PyResult<T> {
    run_cancellable(py, move |_| plan())
}

/// [`run`] for a planner that takes a [`CancelFlag`]: when a signal handler raises, the flag
/// is raised too, so that an interrupted placement stops within milliseconds instead of
/// keeping a core busy after `KeyboardInterrupt`.
///
/// # Errors
///
/// Those of [`run`].
pub(crate) fn run_cancellable<T: Send + 'static>(
    py: Python<'_>,
    plan: impl FnOnce(CancelFlag) -> Result<T, PlanError> + Send + 'static,
) -> PyResult<T> {
    let cancel = CancelFlag::new();
    let flag = cancel.clone();
    let (send, receive) = mpsc::channel();
    let worker = thread::Builder::new()
        .name("moe-planner".into())
        .spawn(move || {
            // The receiver is gone when the caller was interrupted: nothing to do then.
            let _ = send.send(guarded(move || plan(flag)));
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a planner thread: {e}")))?;
    let mut receive: Receiver<Result<T, Failure>> = receive;
    loop {
        let (back, got) = py.detach(move || {
            let got = receive.recv_timeout(SIGNAL_POLL);
            (receive, got)
        });
        receive = back;
        match got {
            Ok(result) => {
                // The worker has sent its result and ends; joining cannot block for long.
                let _ = worker.join();
                return result.map_err(Failure::into_py);
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    // The worker stops at its next check (milliseconds) and its result, most
                    // likely `Cancelled`, is dropped: the interrupt is raised at once.
                    cancel.cancel();
                    return Err(interrupt);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Failure::Internal(
                    "internal error in moe_planner (please report it): the planner thread \
                     ended without a result"
                        .into(),
                )
                .into_py());
            }
        }
    }
}

/// `plan`'s value, or its error or panic sorted into a [`Failure`].
fn guarded<T>(plan: impl FnOnce() -> Result<T, PlanError>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(plan)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(failure(err)),
        Err(payload) => Err(Failure::Internal(format!(
            "internal error in moe_planner (please report it): {}",
            panic_message(payload.as_ref())
        ))),
    }
}

/// A planner error in Python's vocabulary: the argument names of the Python functions.
fn failure(err: PlanError) -> Failure {
    match err {
        // A size refused before allocation, by the facade or by any algorithm crate: all of
        // them say so with the one `InputError::TooLarge`.
        _ if matches!(err.input(), Some(InputError::TooLarge { .. })) => {
            Failure::TooLarge(err.to_string())
        }
        PlanError::InvalidField { field, reason } => {
            Failure::Invalid(format!("{}: {reason}", argument(field)))
        }
        PlanError::Incompatible {
            field,
            other,
            reason,
        } => Failure::Invalid(format!(
            "{} cannot be combined with {}: {reason}",
            argument(field),
            argument(other)
        )),
        PlanError::MissingField { field, needed_by } => {
            Failure::Invalid(format!("{needed_by} needs {}", argument(field)))
        }
        other => Failure::Invalid(other.to_string()),
    }
}

/// The Python argument of a spec field (`moe_planner.place`'s keywords).
fn argument(field: &str) -> &str {
    match field {
        "gpus" => "num_gpus",
        "transfer_peer_limit" => "peer_limit",
        other => other,
    }
}

/// Sleeps `seconds` through [`run`], so tests can interrupt a call that is surely running
/// (`moe_planner._native._sleep_for_tests`; not part of the API).
#[pyfunction]
#[pyo3(name = "_sleep_for_tests")]
pub(crate) fn py_sleep_for_tests(py: Python<'_>, seconds: f64) -> PyResult<()> {
    let duration = Duration::try_from_secs_f64(seconds)
        .map_err(|e| PyValueError::new_err(format!("seconds: {e}")))?;
    run(py, move || {
        thread::sleep(duration);
        Ok(())
    })
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "unknown panic"
    }
}

/// A kebab-case option (`"optimal"`, `"aurora-greedy"`, ...) read with the type's own serde
/// names, so the error lists the accepted values.
pub(crate) fn parse_option<'de, T: Deserialize<'de>>(what: &str, value: &'de str) -> PyResult<T> {
    T::deserialize(StrDeserializer::<ValueError>::new(value))
        .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// A 2-D array as owned rows (the planners take `Vec<Vec<_>>`).
pub(crate) fn rows<T: numpy::Element + Copy>(array: &PyReadonlyArray2<'_, T>) -> Vec<Vec<T>> {
    array
        .as_array()
        .outer_iter()
        .map(|row| row.iter().copied().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_panics_become_messages() {
        assert_eq!(guarded(|| Ok(3)), Ok(3));
        let err = PlanError::MissingField {
            field: "groups",
            needed_by: "policy optimal-node-aware",
        };
        assert_eq!(
            guarded::<()>(|| Err(err)),
            Err(Failure::Invalid(
                "policy optimal-node-aware needs groups".to_string()
            ))
        );
        let err = PlanError::InvalidField {
            field: "gpus",
            reason: "there must be at least one GPU".into(),
        };
        assert_eq!(
            guarded::<()>(|| Err(err)),
            Err(Failure::Invalid(
                "num_gpus: there must be at least one GPU".to_string()
            ))
        );
        let err = PlanError::Input(InputError::too_large(
            "logical_to_physical_map entries",
            4,
            5,
        ));
        assert!(matches!(
            guarded::<()>(|| Err(err)),
            Err(Failure::TooLarge(_))
        ));
        // An algorithm crate's size limit is the same `TooLargeError` as the facade's.
        let err = PlanError::Placement(moe_planner::expert_placement::PlacementError::from(
            InputError::too_large("experts", 4, 5),
        ));
        assert!(matches!(
            guarded::<()>(|| Err(err)),
            Err(Failure::TooLarge(_))
        ));
        let panicked = guarded::<()>(|| panic!("slot {} out of range", 9)).unwrap_err();
        assert_eq!(
            panicked,
            Failure::Internal(
                "internal error in moe_planner (please report it): slot 9 out of range".into()
            )
        );
    }

    #[test]
    fn panic_payloads_keep_their_text() {
        let literal = catch_unwind(|| panic!("boom")).unwrap_err();
        assert_eq!(panic_message(literal.as_ref()), "boom");
        let formatted = catch_unwind(|| panic!("layer {}", 3)).unwrap_err();
        assert_eq!(panic_message(formatted.as_ref()), "layer 3");
        let other = catch_unwind(|| std::panic::panic_any(7_u8)).unwrap_err();
        assert_eq!(panic_message(other.as_ref()), "unknown panic");
    }
}

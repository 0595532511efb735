//! The boundary with Python: planner errors and panics become `ValueError`, never a crash.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use moe_planner::PlanError;
use numpy::PyReadonlyArray2;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::Deserialize;
use serde::de::value::{Error as ValueError, StrDeserializer};

/// Runs `plan` without the GIL and turns its error, or a panic, into a `ValueError`.
///
/// The libraries return typed errors for every bad input and should never panic; the guard is
/// there so a bug shows up as an exception with a message instead of `PanicException` (which
/// `except Exception` does not catch) or an aborted interpreter.
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    plan: impl FnOnce() -> Result<T, PlanError> + Send,
) -> PyResult<T> {
    py.detach(|| guarded(plan)).map_err(PyValueError::new_err)
}

/// `plan`'s value, or the message of its error or of its panic.
fn guarded<T>(plan: impl FnOnce() -> Result<T, PlanError>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(plan)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(err.to_string()),
        Err(payload) => Err(format!(
            "internal error in moe_planner (please report it): {}",
            panic_message(payload.as_ref())
        )),
    }
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
            Err("policy optimal-node-aware needs `groups`".to_string())
        );
        let panicked = guarded::<()>(|| panic!("slot {} out of range", 9)).unwrap_err();
        assert_eq!(
            panicked,
            "internal error in moe_planner (please report it): slot 9 out of range"
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

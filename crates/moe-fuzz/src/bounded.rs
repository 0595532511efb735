//! Running one call with a time limit and a panic guard.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Longest a single fuzzed call may take (a debug build on a shared 2-core machine).
pub const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Runs `f` in its own thread: `Err` says it panicked (with the message) or gave no answer
/// within [`TIME_LIMIT`] (the thread is then abandoned).
///
/// # Errors
///
/// A description of the panic or the timeout.
pub fn within<T, F>(f: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let outcome = catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
            let message = payload
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            format!("panicked: {message}")
        });
        // The receiver may have given up on a slow call already.
        let _ = tx.send(outcome);
    });
    rx.recv_timeout(TIME_LIMIT)
        .map_err(|_| format!("no answer within {TIME_LIMIT:?}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_reported_with_its_message() {
        let r: Result<(), String> = within(|| panic!("boom {}", 7));
        assert_eq!(r, Err("panicked: boom 7".to_string()));
    }

    #[test]
    fn a_value_comes_back() {
        assert_eq!(within(|| 41 + 1), Ok(42));
    }
}

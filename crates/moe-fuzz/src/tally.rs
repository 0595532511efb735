//! Counting, per entry point, how many fuzz cases got past validation to an `Ok`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Per-entry-point counts of calls and `Ok` results, shared by the cases of one property.
///
/// A property whose cases almost all fail the first input check tests nothing deep; printing
/// the share of `Ok` cases after each run keeps that visible. Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct Tally(Arc<Mutex<BTreeMap<&'static str, (u64, u64)>>>);

impl Tally {
    /// Records one call of `what` and whether it returned `Ok`; returns `result` unchanged.
    pub fn record<'r, T, E>(
        &self,
        what: &'static str,
        result: &'r Result<T, E>,
    ) -> &'r Result<T, E> {
        let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = counts.entry(what).or_default();
        entry.0 += u64::from(result.is_ok());
        entry.1 += 1;
        result
    }

    /// `(ok, calls)` of `what` so far.
    #[must_use]
    pub fn counts(&self, what: &str) -> (u64, u64) {
        let counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        counts.get(what).copied().unwrap_or_default()
    }

    /// Prints `fuzz NAME: Ok what1 40/64, what2 12/64, ...` to stderr.
    pub fn print(&self, name: &str) {
        let counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let parts: Vec<String> = counts
            .iter()
            .map(|(what, (ok, calls))| format!("{what} {ok}/{calls}"))
            .collect();
        eprintln!("fuzz {name}: Ok {}", parts.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_ok_and_calls_per_name() {
        let tally = Tally::default();
        let copy = tally.clone();
        copy.record("f", &Ok::<(), ()>(()));
        copy.record("f", &Err::<(), ()>(()));
        tally.record("g", &Err::<(), ()>(()));
        assert_eq!(tally.counts("f"), (1, 2));
        assert_eq!(tally.counts("g"), (0, 1));
        assert_eq!(tally.counts("h"), (0, 0));
    }
}

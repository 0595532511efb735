//! Hostile-input fuzzing shared by the tests of every moe-planner crate (issue 13).
//!
//! Each crate has a `tests/fuzz_entry_points.rs` that feeds the values of this crate (NaN,
//! infinities, subnormals, `f64::MAX`, `u64::MAX`, huge sizes, empty and mismatched shapes) to
//! its public functions and asserts the promise of `docs/reliability.md`: no panic, an answer
//! within [`TIME_LIMIT`], and an `Ok` whose numbers are finite and pass the crate's validators.
//!
//! `cargo test` runs [`DEFAULT_CASES`] cases per property; `MOE_FUZZ_CASES=N` runs `N` (the
//! documented long run). Every property prints how many cases it ran, so a long run's total
//! can be added up from its `--nocapture` output.
//!
//! This crate is a dev-dependency only and is not published.

#![forbid(unsafe_code)]

mod bounded;
mod finite;
mod json;
mod tally;
mod values;

pub use bounded::{TIME_LIMIT, within};
pub use finite::{check_finite, check_finite_json};
pub use json::{JsonMutation, json_extremes, json_mutation, mutate_json};
pub use tally::Tally;
pub use values::{
    FLOAT_EXTREMES, SIZE_EXTREMES, U64_EXTREMES, count, f64_value, finite_f64, u64_value, vec_of,
};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// Cases per property in `cargo test`.
pub const DEFAULT_CASES: u32 = 64;

/// Cases per property: `MOE_FUZZ_CASES` when set to a number, else [`DEFAULT_CASES`].
#[must_use]
pub fn cases() -> u32 {
    std::env::var("MOE_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// Runs `test` on [`cases()`] values of `strategy` from a fixed random stream (CI runs the same
/// cases every time; a longer run sees more of the same stream), each inside [`within`], and
/// panics with the first failure and its input. Prints `fuzz NAME: N cases, no failure`.
///
/// `test` returns `Err` with a description when the call broke the promise (a non-finite `Ok`,
/// an `Ok` that fails a validator); a typed `Err` from the library is a pass and should map to
/// `Ok(())`.
///
/// # Panics
///
/// On the first failing case (this is a test helper).
pub fn fuzz<S, F>(name: &str, strategy: S, test: F)
where
    S: Strategy,
    S::Value: Send + std::fmt::Debug + Clone + 'static,
    F: Fn(S::Value) -> Result<(), String> + Send + Sync + Clone + 'static,
{
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        // Shrinking re-runs slow cases many times; the first failure is shown as found.
        max_shrink_iters: 0,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    // proptest appends the failing input to the message.
    let result = runner.run(&strategy, |value| {
        let test = test.clone();
        within(move || test(value))
            .and_then(|r| r)
            .map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => eprintln!("fuzz {name}: {} cases, no failure", cases()),
        Err(e) => panic!("fuzz {name}: {e}"),
    }
}

/// [`fuzz`] with a fresh [`Tally`] handed to every case, printed after the run: the test
/// records each entry point it calls (`tally.record("name", &result)`), so the output shows
/// which share of the cases reached `Ok`.
///
/// # Panics
///
/// On the first failing case, as [`fuzz`].
pub fn fuzz_tallied<S, F>(name: &str, strategy: S, test: F)
where
    S: Strategy,
    S::Value: Send + std::fmt::Debug + Clone + 'static,
    F: Fn(&Tally, S::Value) -> Result<(), String> + Send + Sync + Clone + 'static,
{
    let tally = Tally::default();
    let shared = tally.clone();
    fuzz(name, strategy, move |value| test(&shared, value));
    tally.print(name);
}

//! Shared pieces of `fuzz_entry_points.rs`: hostile inputs, the validators of every
//! result, and the serde documents.

pub(crate) mod checks;
pub(crate) mod documents;
pub(crate) mod inputs;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, OnceLock};

use comm_cost_model::gcd;
use moe_fuzz::{check_finite, check_finite_json, f64_value, fuzz, u64_value, vec_of};
use proptest::prelude::*;
use rail_network::accuracy::{
    AccuracyRow, LeaveOneOutRow, PublishedRun, accuracy_table, held_out_runs, mean_absolute_error,
    published_runs, table4_runs,
};
use rail_network::compute::{AttentionScope, ComputeModel};
use rail_network::fabric::{
    FabricComparison, FabricCounts, FabricKind, FabricParams, PriceModel, compare_fabrics,
};
use rail_network::fabric_graph::{FabricNode, LinkKind};
use rail_network::failures::{Failure, FailureContext, FailureImpact, failure_impact};
use rail_network::iteration::{IterationModel, IterationTerms};
use rail_network::mapping::{ExpertPlacement, RankMapping};
use rail_network::memory::MemoryBreakdown;
use rail_network::model::{FlopSplit, GptModel, Recompute, flop_split};
use rail_network::parallel::{ExpertParallelism, Parallelization};
use rail_network::search::{RankedConfig, SearchOptions, SearchResult, search};
use rail_network::sweeps::{AllToAllPoint, SweepPoint, all_to_all_slowdown_sweep, sweep_point};
use rail_network::system::{SYSTEM_PRESET_NAMES, SystemSpec, system_preset};
use rail_network::traffic::{
    CollectiveAlgorithm, JobTraffic, KindShare, TrafficKind, TrafficSummary, job_traffic,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Keys of `Option` fields in this crate's types: `null` there is `None`, not a NaN.
pub(crate) const OPTION_KEYS: &[&str] = &["paper_computed_s", "error_vs_paper", "expert", "rail"];

pub(crate) type Check = Result<(), String>;

/// Cases per property whose main call returned `Ok` (printed after each property, so a run
/// shows how much of the deep code the cases reached).
pub(crate) static OK_CASES: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

/// Counts one `Ok` of the main call of `property`.
pub(crate) fn tally<T, E>(property: &'static str, r: &Result<T, E>) {
    if r.is_ok() {
        *OK_CASES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(property)
            .or_default() += 1;
    }
}

/// [`moe_fuzz::fuzz`], then the share of `Ok` cases.
pub(crate) fn run<S, F>(name: &'static str, strategy: S, test: F)
where
    S: Strategy,
    S::Value: Send + std::fmt::Debug + Clone + 'static,
    F: Fn(S::Value) -> Check + Send + Sync + Clone + 'static,
{
    fuzz(name, strategy, test);
    let ok = OK_CASES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(name)
        .copied()
        .unwrap_or(0);
    eprintln!("fuzz {name}: {ok} of {} cases Ok", moe_fuzz::cases());
}

pub(crate) fn fail<T>(what: impl std::fmt::Display) -> Result<T, String> {
    Err(what.to_string())
}

pub(crate) fn finite_json<T: Serialize>(value: &T) -> Check {
    check_finite_json(value, OPTION_KEYS)
}

/// A time that a model may report: positive and finite.
pub(crate) fn positive_finite(what: &str, x: f64) -> Check {
    check_finite(what, x)?;
    if x > 0.0 {
        Ok(())
    } else {
        fail(format!("Ok with non-positive {what} = {x}"))
    }
}

pub(crate) fn non_negative_finite(what: &str, x: f64) -> Check {
    check_finite(what, x)?;
    if x >= 0.0 {
        Ok(())
    } else {
        fail(format!("Ok with negative {what} = {x}"))
    }
}

/// Serializing and parsing again gives the same value (the parse runs the type's validation).
/// `serde_json`'s default float parser may land one ulp off, so numbers compare to 1e-15.
pub(crate) fn round_trip<T: Serialize + DeserializeOwned + std::fmt::Debug>(x: &T) -> Check {
    let json = serde_json::to_string(x).map_err(|e| format!("serialize: {e}"))?;
    let back: T =
        serde_json::from_str(&json).map_err(|e| format!("valid {x:?} does not parse: {e}"))?;
    let (a, b) = (to_json(x), to_json(&back));
    if json_close(&a, &b) {
        Ok(())
    } else {
        fail(format!("round trip changed {x:?} into {back:?}"))
    }
}

pub(crate) fn json_close(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_u64(), y.as_u64()) {
            (Some(x), Some(y)) => x == y,
            _ => {
                let (x, y) = (
                    x.as_f64().unwrap_or(f64::NAN),
                    y.as_f64().unwrap_or(f64::NAN),
                );
                x == y || (x - y).abs() <= 1e-15 * x.abs().max(y.abs())
            }
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_close(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_close(v, w)))
        }
        _ => a == b,
    }
}

pub(crate) fn to_json<T: Serialize>(x: &T) -> Value {
    serde_json::to_value(x).unwrap()
}

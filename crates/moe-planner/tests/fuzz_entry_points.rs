//! Fuzzing the facade's public functions other than the `plan_*` of `fuzz_planners.rs`
//! (issue 13): the readers of measured files (nccl-tests output, collective and DeepEP tables)
//! on mutated text, the consumers of a `fit --json` document, preset lookups, custom systems,
//! bandwidth specs and the serving-engine formats. Every call must return within
//! [`moe_fuzz::TIME_LIMIT`] without panicking, and an `Ok` must hold finite numbers only.
//!
//! `MOE_FUZZ_CASES=N` runs `N` cases per property (64 by default):
//!
//! ```text
//! MOE_FUZZ_CASES=100000 cargo test --release -p moe-planner --test fuzz_entry_points -- --nocapture
//! ```

use moe_fuzz::{
    JsonMutation, check_finite_json, count, f64_value, fuzz, json_mutation, mutate_json, vec_of,
};
use moe_planner::comm_cost_model::gpu_scaling::Collective;
use moe_planner::fitting::{CollectiveFitPlan, CollectiveFitSpec, plan_collective_fits};
use moe_planner::measured::{
    link_fit, parse_collective_csv, parse_deepep_csv, plan_deepep_validation, plan_nccl_validation,
};
use moe_planner::nccl_tests::parse_nccl_tests;
use moe_planner::network::{
    SystemFile, SystemRef, compute_by_name, model_by_name, system_by_name, system_with_fits,
};
use moe_planner::placement::formats::{LogicalCount, pad_logical_to_physical};
use moe_planner::schedule::GbpsSpec;
use moe_planner::training::parm_costs_from_fits;
use proptest::prelude::*;
use serde_json::Value;

const NCCL_CSV: &str = include_str!("../../../examples/data/measured/nccl_h100_sxm.csv");
const DEEPEP_CSV: &str = include_str!("../../../examples/data/measured/deepep_h100_sxm.csv");
const NCCL_TESTS: &str =
    include_str!("../../../examples/data/measured/nccl_tests_all_gather_h100x8.txt");
const FITS: &str = include_str!("../../../examples/data/measured/h100_fits.json");

/// Tokens a hand-edited or truncated file can hold where a number belongs.
const HOSTILE_TOKENS: &[&str] = &[
    "",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "infinity",
    "1e308",
    "1e309",
    "-1",
    "0",
    "-0",
    "5e-324",
    "1e-400",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "0x10",
    "1,5",
    "abc",
    "\u{feff}",
    "#",
    "all_gather",
    "low-latency",
    "normal",
    "\"",
    "  ",
];

/// One change to a text file.
#[derive(Debug, Clone)]
enum TextMutation {
    /// Replaces the `at`-th token (split on commas and whitespace) with a hostile one.
    Token { at: usize, token: usize },
    /// Deletes the `at`-th line.
    DeleteLine { at: usize },
    /// Repeats the `at`-th line.
    DuplicateLine { at: usize },
    /// Cuts the text at byte `at` (on a character boundary).
    Truncate { at: usize },
}

fn text_mutation() -> impl Strategy<Value = TextMutation> {
    prop_oneof![
        4 => (any::<usize>(), 0..HOSTILE_TOKENS.len())
            .prop_map(|(at, token)| TextMutation::Token { at, token }),
        1 => any::<usize>().prop_map(|at| TextMutation::DeleteLine { at }),
        1 => any::<usize>().prop_map(|at| TextMutation::DuplicateLine { at }),
        1 => any::<usize>().prop_map(|at| TextMutation::Truncate { at }),
    ]
}

/// The first `lines` lines of `text` (a shorter file keeps the fits cheap in debug builds).
fn head(text: &str, lines: usize) -> String {
    text.lines().take(lines).map(|l| format!("{l}\n")).collect()
}

fn mutate_text(text: &str, mutations: &[TextMutation]) -> String {
    let mut text = text.to_string();
    for m in mutations {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        match *m {
            TextMutation::Token { at, token } => {
                let spans: Vec<(usize, usize)> = token_spans(&text);
                if let Some(&(start, end)) = spans.get(at % spans.len().max(1)) {
                    text.replace_range(start..end, HOSTILE_TOKENS[token]);
                }
                continue;
            }
            TextMutation::DeleteLine { at } if !lines.is_empty() => {
                lines.remove(at % lines.len());
            }
            TextMutation::DuplicateLine { at } if !lines.is_empty() => {
                let i = at % lines.len();
                lines.insert(i, lines[i].clone());
            }
            TextMutation::Truncate { at } => {
                let mut cut = at % (text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                continue;
            }
            _ => continue,
        }
        text = lines.join("\n");
    }
    text
}

/// Byte ranges of the tokens of `text`: runs of characters other than commas and whitespace.
fn token_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let sep = c == ',' || c.is_whitespace();
        match (start, sep) {
            (None, false) => start = Some(i),
            (Some(s), true) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, text.len()));
    }
    spans
}

fn text_case(base: &'static str, lines: usize) -> impl Strategy<Value = String> {
    let base = head(base, lines);
    vec_of(text_mutation(), 4).prop_map(move |m| mutate_text(&base, &m))
}

#[test]
fn collective_table_reader_and_fits() {
    fuzz(
        "moe-planner::parse_collective_csv",
        text_case(NCCL_CSV, 40),
        |text| {
            let Ok(measurements) = parse_collective_csv(&text) else {
                return Ok(());
            };
            check_finite_json(&measurements, &[])?;
            let spec = CollectiveFitSpec {
                measurements: measurements.clone(),
                options: None,
            };
            if let Ok(fits) = plan_collective_fits(&spec) {
                check_finite_json(&fits, &["bus_bandwidth_bytes_per_s"])?;
            }
            if let Ok(rows) = plan_nccl_validation(&measurements) {
                check_finite_json(&rows, &[])?;
            }
            if let Some(first) = measurements.first()
                && let Ok(fit) = link_fit(&measurements, first.collective, first.gpus)
            {
                check_finite_json(&fit, &[])?;
            }
            Ok(())
        },
    );
}

#[test]
fn deepep_table_reader_and_validation() {
    let nccl = parse_collective_csv(NCCL_CSV).expect("the example table reads");
    let link = link_fit(&nccl, Collective::AllToAll, 8).expect("the example table fits");
    fuzz(
        "moe-planner::parse_deepep_csv",
        text_case(DEEPEP_CSV, 40),
        move |text| {
            let Ok(measured) = parse_deepep_csv(&text) else {
                return Ok(());
            };
            check_finite_json(&measured, &[])?;
            if let Ok(rows) = plan_deepep_validation(&measured, &link) {
                check_finite_json(&rows, &[])?;
            }
            Ok(())
        },
    );
}

#[test]
fn nccl_tests_reader() {
    fuzz(
        "moe-planner::parse_nccl_tests",
        text_case(NCCL_TESTS, 200),
        |text| {
            let Ok(run) = parse_nccl_tests(&text) else {
                return Ok(());
            };
            check_finite_json(&run, &[])?;
            check_finite_json(&run.measurements(Collective::AllGather), &[])
        },
    );
}

/// What a `fit --json` document can be asked, after mutation.
#[test]
fn fit_documents_feed_systems_and_parm_costs() {
    let seed: Value = serde_json::from_str(FITS).expect("the example fits are JSON");
    let strategy = (vec_of(json_mutation(), 4), count(64), 0..3_usize);
    fuzz(
        "moe-planner::CollectiveFitPlan consumers",
        strategy,
        move |(m, gpus, c)| {
            let m: Vec<JsonMutation> = m;
            let (value, _) = mutate_json(&seed, &m);
            let Ok(fits) = serde_json::from_value::<CollectiveFitPlan>(value) else {
                return Ok(());
            };
            let collective = [
                Collective::AllGather,
                Collective::AllReduce,
                Collective::AllToAll,
            ][c];
            let gpus = gpus as u64;
            for fit in [fits.get(collective, gpus), fits.link_for(collective, gpus)]
                .into_iter()
                .flatten()
            {
                if let Ok(ab) = fit.largest() {
                    check_finite_json(&ab, &[])?;
                }
                if let Ok(b) = fit.bus_bandwidth_bytes_per_s() {
                    moe_fuzz::check_finite("bus bandwidth", b)?;
                }
            }
            for name in ["dgx-a100", "dgx-h100", "gh200"] {
                let system = system_by_name(name).map_err(|e| e.to_string())?;
                if let Ok(fitted) = system_with_fits(system, &fits) {
                    check_finite_json(&fitted, &[])?;
                    fitted
                        .validate()
                        .map_err(|e| format!("Ok system fails validate: {e}"))?;
                }
            }
            let layer: moe_planner::comm_cost_model::parm::ParmLayer = serde_json::from_str(
                r#"{"p": 8, "n_mp": 2, "n_ep": 4, "n_esp": 2, "b": 4, "l": 1024, "m": 2048,
                "h": 4096, "e": 4, "k": 2, "f": 1.2, "bytes_per_element": 2.0}"#,
            )
            .map_err(|e| e.to_string())?;
            if let Ok(costs) = parm_costs_from_fits(&fits, &layer) {
                check_finite_json(&costs, &["saa"])?;
            }
            Ok(())
        },
    );
}

#[test]
fn preset_names() {
    let names = prop_oneof![
        any::<String>(),
        prop::sample::select(vec![
            "gpt-1t",
            "GPT-175B",
            "dgx-a100",
            "gh200",
            "paper",
            "calibrated"
        ])
        .prop_map(str::to_string),
    ];
    fuzz("moe-planner::*_by_name", names, |name| {
        if let Ok(m) = model_by_name(&name) {
            check_finite_json(&m, &[])?;
        }
        if let Ok(s) = system_by_name(&name) {
            s.validate()
                .map_err(|e| format!("preset {name} invalid: {e}"))?;
        }
        if let Ok(c) = compute_by_name(&name) {
            check_finite_json(&c, &[])?;
        }
        Ok(())
    });
}

#[test]
fn custom_systems() {
    let strategy = (
        count(16),
        [
            f64_value(),
            f64_value(),
            f64_value(),
            f64_value(),
            f64_value(),
        ],
    );
    fuzz("moe-planner::SystemRef::resolve", strategy, |(hb, f)| {
        let file = SystemFile {
            hb_domain: hb as u64,
            peak_tflop_per_s: f[0],
            hb_gb_per_s: f[1],
            network_gbps: f[2],
            memory_gb: f[3],
            latency_us: f[4],
        };
        if let Ok(system) = SystemRef::Custom(file).resolve() {
            check_finite_json(&system, &[])?;
            system
                .validate()
                .map_err(|e| format!("Ok system fails validate: {e}"))?;
        }
        Ok(())
    });
}

#[test]
fn bandwidth_specs() {
    let strategy = prop_oneof![
        f64_value().prop_map(GbpsSpec::Uniform),
        vec_of(f64_value(), 6).prop_map(GbpsSpec::PerGpu),
    ];
    fuzz("moe-planner::GbpsSpec::to_bandwidth", strategy, |spec| {
        if let Ok(b) = spec.to_bandwidth() {
            for gpu in 0..6 {
                if let Some(r) = b.port(gpu) {
                    if !(r.is_finite() && r > 0.0) {
                        return Err(format!("Ok bandwidth {r} for GPU {gpu}"));
                    }
                }
            }
        }
        Ok(())
    });
}

#[test]
fn engine_formats() {
    let counts = prop_oneof![
        vec_of(vec_of(f64_value(), 4), 3).prop_map(LogicalCount::Layers),
        vec_of(vec_of(vec_of(f64_value(), 4), 3), 3).prop_map(LogicalCount::Windows),
    ];
    let slots = vec_of(vec_of(count(8), 3), 4);
    fuzz(
        "moe-planner::placement::formats",
        (counts, slots, count(8)),
        |(c, s, w)| {
            if let Ok(sum) = c.summed() {
                check_finite_json(&sum, &[])?;
            }
            if let Ok(padded) = pad_logical_to_physical(s.clone(), w) {
                for (row, slots) in padded.iter().zip(&s) {
                    if row.len() != w.max(slots.len()) {
                        return Err(format!("row of {} for width {w}", row.len()));
                    }
                }
            }
            Ok(())
        },
    );
}

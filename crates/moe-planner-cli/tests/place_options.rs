//! Issue 20, item 5 at the command line: `place` options that mean what they say, errors that
//! name the user's flag, plan documents that feed back as `--current`.

mod common;

use common::{data, run, scratch};

use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = run(&all);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// Runs a failing command: exit code 1, one line on stderr, returned.
fn error_line(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    stderr
}

/// The EPLB README loads with 8 GPUs x 2 slots, then `extra`.
fn readme<'a>(loads: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "place",
        "--loads",
        loads,
        "--gpus",
        "8",
        "--slots-per-gpu",
        "2",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn window_with_node_aware_policy_is_refused_naming_both_flags() {
    let loads = data("placement/eplb_readme_loads.csv");
    let err = error_line(&readme(
        &loads,
        &[
            "--nodes",
            "2",
            "--groups",
            "4",
            "--policy",
            "optimal-node-aware",
            "--window",
            &loads,
        ],
    ));
    assert!(
        err.contains("--window") && err.contains("--policy"),
        "{err}"
    );
    assert!(err.contains("optimal-node-aware"), "{err}");
}

#[test]
fn the_output_names_the_policy_that_ran() {
    let loads = data("placement/eplb_readme_loads.csv");
    let v = json(&readme(&loads, &["--window", &loads]));
    assert_eq!(v["policy"], "optimal-robust-worst");
    assert_eq!(v["baseline_policy"], "eplb-global-summed-windows");
    let v = json(&readme(
        &loads,
        &[
            "--nodes", "2", "--groups", "4", "--policy", "eplb", "--window", &loads,
        ],
    ));
    assert_eq!(v["policy"], "eplb-hierarchical-summed-windows");
    let out = run(&readme(&loads, &["--window", &loads]));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("planner optimal-robust-worst"), "{table}");
}

#[test]
fn a_place_json_document_is_accepted_as_current() {
    let loads = data("placement/eplb_readme_loads.csv");
    let out = run(&readme(&loads, &["--json"]));
    assert!(out.status.success());
    let plan = scratch("plan.json", &String::from_utf8_lossy(&out.stdout));
    let v = json(&readme(&loads, &["--current", &plan]));
    assert_eq!(v["policy"], "optimal-rebalance");
    assert_eq!(v["totals"]["moves"], 0);
    let _ = std::fs::remove_file(&plan);
}

#[test]
fn errors_name_the_users_flag() {
    let loads = data("placement/eplb_readme_loads.csv");
    for (extra, flag) in [
        (
            vec!["--gpus", "8", "--slots-per-gpu", "0"],
            "--slots-per-gpu",
        ),
        (
            vec!["--gpus", "4", "--slots-per-gpu", "2"],
            "--slots-per-gpu",
        ),
        (vec!["--gpus", "0", "--slots-per-gpu", "2"], "--gpus"),
        (
            vec!["--gpus", "8", "--slots-per-gpu", "2", "--groups", "5"],
            "--groups",
        ),
        (
            vec![
                "--gpus",
                "8",
                "--slots-per-gpu",
                "2",
                "--groups",
                "5",
                "--nodes",
                "2",
            ],
            "--groups",
        ),
        (
            vec!["--gpus", "8", "--slots-per-gpu", "2", "--nodes", "9"],
            "--nodes",
        ),
        (
            vec!["--gpus", "8", "--slots-per-gpu", "2", "--tolerance=-1"],
            "--tolerance",
        ),
        (
            vec![
                "--gpus",
                "8",
                "--slots-per-gpu",
                "2",
                "--policy",
                "optimal-node-aware",
            ],
            "--groups",
        ),
    ] {
        let mut args = vec!["place", "--loads", &loads];
        args.extend_from_slice(&extra);
        let err = error_line(&args);
        assert!(err.contains(flag), "{extra:?}: {err}");
        assert!(!err.contains("slots_of_gpu"), "{err}");
        assert!(!err.contains("layer 0:"), "{err}");
    }
}

#[test]
fn negative_counts_in_a_3d_logical_count_are_refused() {
    let file = scratch(
        "negative.json",
        r#"{"logical_count": [[[1, 2, 3, -4]], [[1, 2, 3, 4]]]}"#,
    );
    let err = error_line(&[
        "place",
        "--loads",
        &file,
        "--gpus",
        "2",
        "--slots-per-gpu",
        "2",
    ]);
    assert!(err.contains("--loads"), "{err}");
    assert!(err.contains("logical_count[0][0][3] = -4"), "{err}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn transfer_totals_are_finite_or_an_error() {
    let loads = data("placement/vllm_pr37656_loads.csv");
    // A current placement that must move: experts in id order, hot experts together.
    let current = scratch(
        "current.json",
        r#"{"physical_to_logical_map": [[0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7]]}"#,
    );
    let args = |bytes: &'static str| {
        vec![
            "place".to_string(),
            "--loads".into(),
            loads.clone(),
            "--gpus".into(),
            "8".into(),
            "--slots-per-gpu".into(),
            "2".into(),
            "--current".into(),
            current.clone(),
            "--expert-bytes".into(),
            bytes.into(),
            "--json".into(),
        ]
    };
    let ok = args("1e9");
    let out = run(&ok.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["totals"]["transfer_bytes"].as_f64().unwrap().is_finite());
    assert!(v["totals"]["transfer_time_s"].as_f64().unwrap().is_finite());
    // 1e308 bytes per expert: the sum overflows; an error, never `null`.
    let huge = args("1e308");
    let out = run(&huge.iter().map(String::as_str).collect::<Vec<_>>());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("null"), "{stdout}");
    assert_eq!(out.status.code(), Some(1));
    let _ = std::fs::remove_file(&current);
}

#[test]
fn every_layer_says_how_its_search_ended() {
    let loads = data("placement/eplb_readme_loads.csv");
    let v = json(&readme(&loads, &[]));
    for layer in v["layers"].as_array().unwrap() {
        assert_eq!(layer["termination"], "proved-optimal");
    }
    let v = json(&readme(
        &loads,
        &[
            "--nodes",
            "2",
            "--groups",
            "4",
            "--policy",
            "optimal-node-aware",
        ],
    ));
    assert_eq!(v["lower_bound_kind"], "groups-in-nodes");
    let v = json(&readme(&loads, &["--policy", "eplb"]));
    assert_eq!(v["layers"][0]["termination"], "not-searched");
}

/// Issue 20: the search budget is a visible option; a bad one names its flag.
#[test]
fn the_search_budget_is_an_option_and_checked() {
    let loads = data("placement/eplb_readme_loads.csv");
    let out = run(&[
        "place",
        "--loads",
        &loads,
        "--gpus",
        "8",
        "--slots-per-gpu",
        "2",
        "--search-steps",
        "0",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    for layer in plan["layers"].as_array().unwrap() {
        let t = layer["termination"].as_str().unwrap();
        assert!(t == "heuristic" || t == "bound-reached", "{t}");
    }
    let bad = run(&[
        "place",
        "--loads",
        &loads,
        "--gpus",
        "8",
        "--slots-per-gpu",
        "2",
        "--time-budget-s",
        "NaN",
    ]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--time-budget-s"), "{stderr}");
}

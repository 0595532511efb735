//! Issue 23 at the command line: `place --routed-tokens` plans traffic-aware placements, prints
//! the baselines beside them, writes the engine file and the trade-off curve, and names the
//! user's flag in errors.

mod common;

use common::{data, run, scratch};

use serde_json::Value;

/// A small two-node instance: node 0 sends to experts 0-3, node 1 to 4-7.
fn small() -> String {
    let layer: Vec<Vec<f64>> = (0..4)
        .map(|g| {
            (0..8)
                .map(|e| if (g < 2) == (e < 4) { 10.0 } else { 1.0 })
                .collect()
        })
        .collect();
    scratch(
        "small.json",
        &serde_json::json!({ "routed_tokens": [layer] }).to_string(),
    )
}

#[test]
fn json_plan_has_the_documented_keys() {
    let file = small();
    let out = run(&[
        "--json",
        "place",
        "--routed-tokens",
        &file,
        "--gpus",
        "4",
        "--slots-per-gpu",
        "2",
        "--nodes",
        "2",
        "--groups",
        "2",
        "--bytes-per-token",
        "100",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let layer = &plan["layers"][0];
    for key in [
        "physical_to_logical_map",
        "traffic_aware",
        "compute_only",
        "eplb_hierarchical",
        "eplb_global",
        "max_gpu_load_limit",
        "balance_met",
        "compute_lower_bound",
        "traffic_lower_bound",
        "termination",
    ] {
        assert!(!layer[key].is_null(), "missing {key}: {layer}");
    }
    for key in [
        "cross_node_tokens",
        "cross_node_ratio",
        "cross_node_bytes",
        "max_gpu_load",
        "max_over_mean",
    ] {
        assert!(layer["traffic_aware"][key].is_number(), "missing {key}");
    }
    assert!(
        (layer["traffic_aware"]["cross_node_tokens"]
            .as_f64()
            .unwrap()
            - 16.0)
            .abs()
            < 1e-9
    );
    assert!((layer["traffic_aware"]["cross_node_bytes"].as_f64().unwrap() - 1600.0).abs() < 1e-6);
    assert_eq!(layer["termination"], "bound-reached");
    assert!(plan["totals"]["traffic_aware_ratio"].is_number());
}

#[test]
fn report_svg_and_engine_file() {
    let file = small();
    let svg = std::env::temp_dir().join(format!("moe-planner-traffic-{}.svg", std::process::id()));
    let engine =
        std::env::temp_dir().join(format!("moe-planner-traffic-{}.json", std::process::id()));
    let out = run(&[
        "place",
        "--routed-tokens",
        &file,
        "--gpus",
        "4",
        "--slots-per-gpu",
        "2",
        "--nodes",
        "2",
        "--svg",
        svg.to_str().unwrap(),
        "--out",
        engine.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cross-node ratio"), "{text}");
    assert!(text.contains("search ended: "), "{text}");
    assert!(
        text.contains("trade-off curve search ended: eps 0 "),
        "{text}"
    );
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let map: Value = serde_json::from_str(&std::fs::read_to_string(&engine).unwrap()).unwrap();
    assert_eq!(
        map["physical_to_logical_map"][0].as_array().unwrap().len(),
        8
    );
}

#[test]
fn errors_name_the_flag() {
    let file = small();
    let out = run(&[
        "place",
        "--routed-tokens",
        &file,
        "--gpus",
        "8",
        "--slots-per-gpu",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--gpus 8"));
    let bad = scratch("bad.json", r#"{"routed_tokens": [[[1, -2], [0, 1]]]}"#);
    let out = run(&[
        "place",
        "--routed-tokens",
        &bad,
        "--gpus",
        "2",
        "--slots-per-gpu",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("routed_tokens"));
    // --groups-in-nodes needs --groups; --routed-tokens excludes --loads: usage errors.
    let out = run(&[
        "place",
        "--routed-tokens",
        &file,
        "--gpus",
        "4",
        "--slots-per-gpu",
        "2",
        "--groups-in-nodes",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "place",
        "--routed-tokens",
        &file,
        "--loads",
        &data("placement/eplb_readme_loads.csv"),
        "--gpus",
        "4",
        "--slots-per-gpu",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn move_budget_from_the_current_placement() {
    let file = small();
    // Every expert in the other node: all 80 own-node tokens of each node cross.
    let current = scratch(
        "current.json",
        r#"{"physical_to_logical_map": [[4, 5, 6, 7, 0, 1, 2, 3]]}"#,
    );
    let base = [
        "place",
        "--routed-tokens",
        file.as_str(),
        "--gpus",
        "4",
        "--slots-per-gpu",
        "2",
        "--nodes",
        "2",
        "--current",
        current.as_str(),
    ];
    let mut args = vec!["--json"];
    args.extend(base);
    args.extend(["--max-moves", "2"]);
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let layer = &plan["layers"][0];
    assert!(layer["moves"].as_u64().unwrap() <= 2);
    assert!(layer["current"]["cross_node_tokens"].as_f64().is_some());
    // Without a budget: the traffic-aware plan, aligned to the current one.
    let out = run(&base);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("slot changes"));
    // --max-moves needs --current (usage error); a current map of another shape names --current.
    let out = run(&[
        "place",
        "--routed-tokens",
        &file,
        "--gpus",
        "4",
        "--slots-per-gpu",
        "2",
        "--max-moves",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let short = scratch("short.json", r#"{"physical_to_logical_map": [[0, 1, 2]]}"#);
    let out = run(&[
        "place",
        "--routed-tokens",
        &file,
        "--gpus",
        "4",
        "--slots-per-gpu",
        "2",
        "--current",
        &short,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--current"));
}

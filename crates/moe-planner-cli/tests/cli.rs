//! End-to-end tests of the `moe-planner` binary: every subcommand on the example files, the
//! JSON keys docs/cli.md promises, and one-line errors with the documented exit codes.

mod common;

use common::{data, run};

mod svg_check;

use serde_json::Value;

/// Runs with `--json`, checks success and parses stdout.
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

fn assert_keys(v: &Value, keys: &[&str]) {
    for k in keys {
        assert!(v.get(k).is_some(), "missing key `{k}` in {v}");
    }
}

/// Checks a failing run: the expected exit code and exactly one line on stderr.
fn assert_fails(args: &[&str], code: i32) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(code), "{args:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("moe-planner: error:"), "{stderr}");
}

#[test]
fn help_lists_every_subcommand() {
    let out = run(&["--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for cmd in [
        "demo",
        "place",
        "advise",
        "schedule",
        "colocate",
        "infer",
        "train",
        "group",
        "network",
        "iteration",
        "fit",
    ] {
        assert!(text.contains(cmd), "--help misses {cmd}");
    }
}

#[test]
fn demo_runs_every_planner() {
    let out = svg_check::scratch_dir("demo");
    let v = json(&["demo", "--out", &out.to_string_lossy()]);
    for (file, label) in [
        ("alltoall-timetable.svg", "lower bound"),
        ("traffic-matrix.svg", "MB sent"),
        ("expert-placement.svg", "eplb"),
        ("inference-time.svg", "inference time (ms)"),
        ("hb-domain-sweep.svg", "iteration time (s)"),
        ("network-cost.svg", "million USD"),
    ] {
        svg_check::assert_svg_labels(&out.join(file), &[label]);
    }
    assert_keys(
        &v,
        &[
            "exclusive_inference",
            "colocated_inference",
            "training",
            "grouping",
            "fabric",
            "parallelization",
            "expert_placement",
            "expert_placement_node_aware",
            "expert_rebalance",
        ],
    );
    // Issue 20 item 7: like with like, the unconstrained plan against EPLB's global policy,
    // the node-aware plan against its hierarchical one, each with the bound it is measured by.
    let fresh = &v["expert_placement"];
    assert_eq!(fresh["policy"], "optimal");
    assert_eq!(fresh["baseline_policy"], "eplb-global");
    let node_aware = &v["expert_placement_node_aware"];
    assert_eq!(node_aware["policy"], "optimal-node-aware");
    assert_eq!(node_aware["baseline_policy"], "eplb-hierarchical");
    assert!(node_aware["lower_bound_kind"].is_string());
    assert_eq!(v["expert_rebalance"]["baseline_policy"], "eplb-global");
    let rebalance = &v["expert_rebalance"]["totals"];
    assert!(rebalance["moves"].as_u64().unwrap() < rebalance["baseline_moves"].as_u64().unwrap());
    assert_eq!(
        v["expert_placement"]["totals"]["layers_worse_than_baseline"],
        0
    );
    let speedup = v["colocated_inference"]["speedup_over_baseline"]
        .as_f64()
        .unwrap();
    assert!(speedup >= 1.0);
    assert_eq!(
        v["colocated_inference"]["scenario"],
        "colocating-homogeneous"
    );
}

#[test]
fn schedule_reaches_the_bound_on_the_example() {
    let v = json(&["schedule", "--traffic", &data("traffic_zipf8.csv")]);
    assert_keys(&v, &["lower_bound_s", "makespan_s", "pieces", "transfers"]);
    let (lb, ms) = (
        v["lower_bound_s"].as_f64().unwrap(),
        v["makespan_s"].as_f64().unwrap(),
    );
    assert!((ms - lb).abs() <= 1e-9 * lb);
    assert_keys(
        &v["transfers"][0],
        &["src", "dst", "bytes", "start_s", "end_s"],
    );
    let sjf = json(&[
        "schedule",
        "--traffic",
        &data("traffic_zipf8.json"),
        "--algorithm",
        "sjf",
    ]);
    assert!(sjf["makespan_s"].as_f64().unwrap() >= lb * (1.0 - 1e-9));
}

#[test]
fn colocate_reports_pairs_and_bottleneck() {
    let v = json(&[
        "colocate",
        "--model-a",
        &data("model_a_traffic.csv"),
        "--model-b",
        &data("model_b_traffic.csv"),
        "--seed",
        "3",
    ]);
    assert_keys(
        &v,
        &["pairs", "bottleneck_bytes", "random_bottleneck_bytes"],
    );
    assert_eq!(v["pairs"].as_array().unwrap().len(), 8);
    assert!(
        v["bottleneck_bytes"].as_f64().unwrap()
            <= v["random_bottleneck_bytes"].as_f64().unwrap() + 1e-6
    );
}

#[test]
fn infer_plans_the_colocated_example() {
    let v = json(&["infer", "--spec", &data("inference_colocated.json")]);
    assert_keys(
        &v,
        &[
            "scenario",
            "experts_of_gpu",
            "layers",
            "inference_time_s",
            "baseline",
        ],
    );
    assert_eq!(v["layers"].as_array().unwrap().len(), 2);
}

#[test]
fn train_and_fit_report_documented_keys() {
    let t = json(&["train", "--spec", &data("parm_layer.json")]);
    assert_keys(&t, &["choice", "baseline_s", "s1_s", "s2_s"]);
    assert!(t["choice"] == "s1" || t["choice"] == "s2");
    let f = json(&["fit", "--measurements", &data("allgather_measurements.csv")]);
    assert_keys(&f, &["alpha_s", "beta_s_per_byte", "r_squared"]);
    assert!(f["r_squared"].as_f64().unwrap() > 0.9);
}

#[test]
fn group_reports_groups_and_assignment() {
    let v = json(&["group", "--spec", &data("perlmutter_group.json")]);
    assert_keys(
        &v,
        &[
            "groups",
            "objective_s",
            "experts_of_gpu",
            "paper_assignment_compute_s",
        ],
    );
    assert_eq!(v["assign"], "refined");
    let hosted: usize = v["experts_of_gpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_array().unwrap().len())
        .sum();
    // Every group hosts all 128 experts.
    assert_eq!(hosted, 128 * v["groups"].as_array().unwrap().len());
}

#[test]
fn network_reproduces_the_table2_reduction() {
    let v = json(&[
        "network",
        "--gpus",
        "65536",
        "--hb-domain",
        "256",
        "--radix",
        "64",
    ]);
    assert_keys(&v, &["rail_optimized", "rail_only", "cost_reduction"]);
    assert_keys(
        &v["rail_only"],
        &["tiers", "switches", "transceivers", "cost_usd"],
    );
    assert!((v["cost_reduction"].as_f64().unwrap() - 0.375).abs() < 1e-12);
}

#[test]
fn iteration_evaluates_and_searches() {
    let v = json(&[
        "iteration",
        "--model",
        "gpt-22b",
        "--system",
        "dgx-a100",
        "--gpus",
        "8",
        "--tp",
        "8",
        "--pp",
        "1",
        "--dp",
        "1",
        "--microbatch",
        "4",
        "--global-batch",
        "4",
    ]);
    let t = v["iteration_time_s"].as_f64().unwrap();
    assert!(t > 0.5 && t < 1.5, "GPT-22B on one DGX A100: {t} s");
    let s = json(&[
        "iteration",
        "--model",
        "gpt-22b",
        "--system",
        "dgx-a100",
        "--gpus",
        "64",
        "--global-batch",
        "64",
        "--search",
    ]);
    assert_keys(&s, &["best"]);
}

#[test]
fn bad_input_is_one_line_and_exit_code_1() {
    assert_fails(&["fit", "--measurements", "/nonexistent/file.csv"], 1);
    assert_fails(
        &[
            "network",
            "--gpus",
            "100",
            "--hb-domain",
            "8",
            "--radix",
            "64",
        ],
        1,
    );
    assert_fails(&["schedule", "--traffic", &data("parm_layer.json")], 1);
    assert_fails(
        &[
            "iteration",
            "--model",
            "gpt-2",
            "--system",
            "dgx-a100",
            "--gpus",
            "8",
        ],
        1,
    );
}

#[test]
fn usage_errors_exit_2() {
    let out = run(&["schedule"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["no-such-command"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn place_beats_eplb_and_writes_an_sglang_file() {
    let loads = data("placement/eplb_readme_loads.csv");
    let out = std::env::temp_dir().join(format!("moe-planner-place-{}.json", std::process::id()));
    let out_path = out.to_string_lossy().into_owned();
    let v = json(&[
        "place",
        "--loads",
        &loads,
        "--gpus",
        "8",
        "--slots-per-gpu",
        "2",
        "--out",
        &out_path,
    ]);
    assert_keys(&v, &["layers", "totals", "policy", "baseline_policy"]);
    let layer = &v["layers"][0];
    assert_keys(
        layer,
        &[
            "physical_to_logical_map",
            "logical_to_physical_map",
            "replica_count",
            "gpu_loads",
            "max_gpu_load",
            "lower_bound",
            "duplicates_on_gpu",
            "baseline_max_gpu_load",
            "baseline_duplicates_on_gpu",
        ],
    );
    assert_eq!(layer["max_gpu_load"], 136.0);
    assert_eq!(layer["baseline_max_gpu_load"], 138.5);
    // The engine file holds exactly SGLang's key, and feeds back as --current: nothing moves.
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(file.as_object().unwrap().len(), 1);
    assert_eq!(
        file["physical_to_logical_map"][0].as_array().unwrap().len(),
        16
    );
    let again = json(&[
        "place",
        "--loads",
        &loads,
        "--gpus",
        "8",
        "--slots-per-gpu",
        "2",
        "--current",
        &out_path,
    ]);
    assert_eq!(again["totals"]["moves"], 0);
    assert!(again["totals"]["baseline_moves"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_file(&out);
}

#[test]
fn place_reads_sglang_dumps_and_rejects_bad_input() {
    let v = json(&[
        "place",
        "--loads",
        concat!(env!("CARGO_MANIFEST_DIR"), "/data/deepseek_like_loads.json"),
        "--gpus",
        "32",
        "--slots-per-gpu",
        "9",
        "--nodes",
        "4",
        "--groups",
        "8",
    ]);
    assert_eq!(v["layers"].as_array().unwrap().len(), 58);
    assert_eq!(v["totals"]["layers_worse_than_baseline"], 0);
    assert!(v["totals"]["max_gap"].as_f64().unwrap() < 0.002);
    let loads = data("placement/vllm_pr37656_loads.csv");
    // 8 experts cannot fill 8 GPUs x 9 slots without duplicates; 3 slots cannot hold 8 experts.
    assert_fails(
        &[
            "place",
            "--loads",
            &loads,
            "--gpus",
            "1",
            "--slots-per-gpu",
            "9",
        ],
        1,
    );
    assert_fails(
        &[
            "place",
            "--loads",
            &loads,
            "--gpus",
            "3",
            "--slots-per-gpu",
            "1",
        ],
        1,
    );
    // A missing flag is a usage error (clap, exit 2).
    assert_eq!(
        run(&["place", "--loads", &loads, "--gpus", "8"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn infer_gives_timetables_for_many_experts_per_gpu() {
    let dir = std::env::temp_dir().join(format!("moe-planner-infer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("timetable.csv");
    let v = json(&[
        "infer",
        "--spec",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/inference_deepseek_like.json"
        ),
        "--timetable-out",
        csv.to_str().unwrap(),
    ]);
    let layer = &v["layers"][0];
    assert_keys(
        &layer["dispatch"],
        &["timetable", "pieces", "nonzero_pairs"],
    );
    let first = &layer["dispatch"]["timetable"][0];
    assert_keys(first, &["src", "dst", "bytes", "start_s", "end_s"]);
    assert_eq!(v["baselines"].as_array().unwrap().len(), 4);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("layer,phase,src,dst,bytes,start_s,end_s")
    );
    let rows = lines.count() as u64;
    let pieces: u64 = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            l["dispatch"]["pieces"].as_u64().unwrap() + l["combine"]["pieces"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(rows, pieces);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fit_reads_nccl_tests_output_and_measured_tables() {
    let v = json(&[
        "fit",
        "--measurements",
        &data("measured/nccl_tests_all_gather_h100x8.txt"),
        "--collective",
        "all_gather",
    ]);
    let fit = &v["fits"][0];
    assert_eq!(fit["collective"], "all-gather");
    assert_eq!(fit["gpus"], 8);
    let segments = fit["segments"].as_array().unwrap();
    assert!(segments.len() >= 2);
    for s in segments {
        assert_keys(
            s,
            &[
                "min_bytes",
                "max_bytes",
                "alpha_s",
                "beta_s_per_byte",
                "r_squared",
                "regime",
                "bus_bandwidth_bytes_per_s",
            ],
        );
    }
    assert_eq!(segments.last().unwrap()["regime"], "bandwidth-bound");
    let table = json(&["fit", "--measurements", &data("measured/nccl_h100_sxm.csv")]);
    assert_eq!(table["fits"].as_array().unwrap().len(), 12);
    let single = json(&["fit", "--measurements", &data("allgather_measurements.csv")]);
    assert!(!single["segments"].as_array().unwrap().is_empty());
    assert_fails(
        &[
            "fit",
            "--measurements",
            &data("measured/nccl_tests_all_gather_h100x8.txt"),
        ],
        1,
    );
}

#[test]
fn train_and_iteration_accept_fitted_links() {
    let fits = data("measured/h100_fits.json");
    let t = json(&[
        "train",
        "--spec",
        &data("measured/parm_layer_8gpu.json"),
        "--fit",
        &fits,
    ]);
    assert_keys(&t, &["choice", "baseline_s", "s1_s", "s2_s"]);
    let args = [
        "iteration",
        "--model",
        "gpt-22b",
        "--system",
        "dgx-h100",
        "--gpus",
        "64",
        "--tp",
        "8",
        "--pp",
        "1",
    ];
    let preset = json(&args);
    let mut with_fit = args.to_vec();
    with_fit.extend(["--fit", &fits]);
    let fitted = json(&with_fit);
    // Measured NVLink AllGather reaches ~320 GB/s of the preset's 450 GB/s: TP comm is slower.
    assert!(
        fitted["terms"]["last_stage_tp_comm_s"].as_f64().unwrap()
            > preset["terms"]["last_stage_tp_comm_s"].as_f64().unwrap()
    );
    // A layer needing a GPU count the fits lack is an error, not a guess.
    assert_fails(
        &["train", "--spec", &data("parm_layer.json"), "--fit", &fits],
        1,
    );
}

#[test]
fn iteration_chooses_recomputation_and_compute_model() {
    // MT-NLG 530B on 2240 GPUs (Smith et al. 2022: 60.1 s measured), full recomputation.
    let base = [
        "iteration",
        "--model",
        "gpt-529.6b",
        "--system",
        "dgx-a100",
        "--gpus",
        "2240",
        "--tp",
        "8",
        "--pp",
        "35",
        "--global-batch",
        "1920",
    ];
    let time = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        json(&args)["iteration_time_s"].as_f64().unwrap()
    };
    let selective = time(&[]);
    let full = time(&["--recompute", "full"]);
    let calibrated = time(&["--recompute", "full", "--compute", "calibrated"]);
    assert!(full > selective);
    assert!((calibrated - 46.83).abs() < 0.1, "{calibrated}");
    let mut bad = base.to_vec();
    bad.extend(["--compute", "measured"]);
    assert_fails(&bad, 1);
}

#[test]
fn train_plans_moe_models_end_to_end() {
    let base = [
        "train",
        "--model",
        "mixtral-8x7b",
        "--gpus",
        "64",
        "--system",
        "h100",
        "--global-batch",
        "256",
    ];
    let mut search = base.to_vec();
    search.extend(["--search", "--top", "3"]);
    let v = json(&search);
    assert_keys(&v, &["configs", "parameters", "active_parameters"]);
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 3);
    for c in configs {
        assert_keys(
            c,
            &[
                "tp",
                "pp",
                "vp",
                "cp",
                "dp",
                "ep",
                "etp",
                "micro_batch",
                "step_time_s",
                "tokens_per_s_per_gpu",
                "model_tflop_per_s_per_gpu",
                "mfu",
                "memory_bytes_per_gpu",
                "fits",
                "terms",
            ],
        );
        assert_eq!(c["fits"], true);
    }
    let step = |c: &Value| c["step_time_s"].as_f64().unwrap();
    assert!(step(&configs[0]) <= step(&configs[2]));
    // Megatron-Core's reference mapping: TP1 EP8 PP4 VP8, evaluated alone.
    let mut one = base.to_vec();
    one.extend(["--tp", "1", "--pp", "4", "--vp", "8", "--ep", "8"]);
    let e = json(&one);
    let c = &e["configs"][0];
    assert_eq!((c["dp"].as_u64(), c["ep"].as_u64()), (Some(16), Some(8)));
    assert!(step(c) >= step(&configs[0]));
    assert!(e["network"]["rail_only_step_s"].as_f64().unwrap() > 0.0);
    // Skewed loads slow it down.
    let mut skewed = one.clone();
    skewed.extend(["--zipf", "1.0"]);
    assert!(step(&json(&skewed)["configs"][0]) > step(c));
    // A mapping that does not divide, a model that cannot fit, NaN: one line, exit 1.
    let mut bad = base.to_vec();
    bad.extend(["--ep", "3"]);
    assert_fails(&bad, 1);
    assert_fails(
        &[
            "train",
            "--model",
            "deepseek-v3",
            "--gpus",
            "8",
            "--global-batch",
            "8",
        ],
        1,
    );
    let mut nan = base.to_vec();
    nan.extend(["--imbalance", "NaN"]);
    assert_fails(&nan, 1);
    // --search with a mapping flag, or no --model and no --spec: usage errors.
    let mut both = search.clone();
    both.extend(["--tp", "2"]);
    assert_eq!(run(&both).status.code(), Some(2));
    assert_eq!(run(&["train", "--gpus", "8"]).status.code(), Some(2));
    // Strategy flags: FSDP shrinks the weights, offloading the optimizer state, DualPipe
    // rejects interleaving (naming vp), fractions above 1 are refused.
    let fsdp_args = [
        "--param-sharding",
        "fsdp",
        "--optimizer-offload",
        "1",
        "--bf16-moments",
        "--comm-sms",
        "20",
    ];
    let mut fsdp = one.clone();
    fsdp.extend(fsdp_args);
    let f = json(&fsdp);
    let mem = |v: &Value, k: &str| v["configs"][0]["memory"][k].as_f64().unwrap();
    assert!(mem(&f, "weights_and_gradients_bytes") < mem(&e, "weights_and_gradients_bytes"));
    assert_eq!(mem(&f, "optimizer_bytes"), 0.0);
    assert!(f["configs"][0]["terms"]["offload_s"].as_f64().is_some());
    let mut dual = one.clone();
    dual.extend(["--pipeline", "dualpipe"]);
    assert_fails(&dual, 1);
    let mut dual_ok = base.to_vec();
    dual_ok.extend([
        "--tp",
        "1",
        "--pp",
        "4",
        "--ep",
        "8",
        "--pipeline",
        "dualpipe",
    ]);
    assert!(step(&json(&dual_ok)["configs"][0]) > 0.0);
    let mut over = one.clone();
    over.extend(["--activation-offload", "1.5"]);
    assert_fails(&over, 1);
}

#[test]
fn advise_sweeps_redundancy_and_judges_a_rebalance() {
    let loads = data("placement/eplb_readme_loads.csv");
    let v = json(&[
        "advise",
        "--loads",
        &loads,
        "--gpus",
        "4",
        "--max-redundant",
        "12",
    ]);
    assert_keys(
        &v,
        &["points", "policy", "baseline_policy", "target_imbalance"],
    );
    let redundant: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["redundant"].as_u64().unwrap())
        .collect();
    assert_eq!(redundant, vec![0, 4, 8, 12]);
    let current = data("placement/eplb_readme_placement.json");
    let svg = std::env::temp_dir().join(format!("moe-planner-advise-{}.svg", std::process::id()));
    let v = json(&[
        "advise",
        "--loads",
        &loads,
        "--gpus",
        "8",
        "--current",
        &current,
        "--expert-bytes",
        "1e9",
        "--svg",
        &svg.to_string_lossy(),
    ]);
    let r = &v["rebalance"];
    assert_keys(
        r,
        &[
            "current_imbalance",
            "rebalanced_imbalance",
            "gain",
            "moves",
            "transfer_rounds",
            "transfer_time_s",
            "min_gain",
            "recommend",
        ],
    );
    assert_eq!(r["recommend"], true);
    svg_check::assert_svg_labels(&svg, &["redundant experts per layer", "target 1.050"]);
    let _ = std::fs::remove_file(&svg);
    assert_fails(&["advise", "--loads", &loads, "--gpus", "0"], 1);
    assert_fails(
        &[
            "advise",
            "--loads",
            &loads,
            "--gpus",
            "4",
            "--target-imbalance",
            "0.5",
        ],
        1,
    );
}

//! `--svg` of every subcommand that draws: the file is well-formed SVG with its title, axis
//! names and units.

mod common;

use common::data;

mod svg_check;

use std::process::Command;

use svg_check::{assert_svg_labels, scratch_dir};

fn run_ok(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_moe-planner"))
        .args(args)
        .output()
        .expect("the moe-planner binary runs");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn schedule_svg_is_a_gantt_chart_next_to_sjf() {
    let svg = scratch_dir("schedule").join("s.svg");
    let path = svg.to_string_lossy();
    run_ok(&[
        "schedule",
        "--traffic",
        &data("traffic_zipf8.csv"),
        "--svg",
        &path,
    ]);
    assert_svg_labels(
        &svg,
        &[
            "All-to-all timetable per GPU",
            "optimal: makespan",
            "sjf",
            "lower bound",
            "time (ms)",
            "sending GPU",
            "GPU 0",
        ],
    );
}

#[test]
fn place_svg_shows_ours_eplb_and_the_bound() {
    let svg = scratch_dir("place").join("p.svg");
    let path = svg.to_string_lossy();
    run_ok(&[
        "place",
        "--loads",
        &data("placement/eplb_readme_loads.csv"),
        "--gpus",
        "8",
        "--slots-per-gpu",
        "2",
        "--svg",
        &path,
    ]);
    assert_svg_labels(
        &svg,
        &[
            "Expert placement",
            "ours (solid bars)",
            "(hollow bars)",
            "lower bound",
            "max / mean GPU load",
            "MoE layer",
            "GPU",
        ],
    );
}

#[test]
fn infer_svg_names_every_baseline() {
    let svg = scratch_dir("infer").join("i.svg");
    let path = svg.to_string_lossy();
    run_ok(&[
        "infer",
        "--spec",
        &data("inference_colocated.json"),
        "--svg",
        &path,
    ]);
    assert_svg_labels(
        &svg,
        &[
            "MoE inference time",
            "our plan",
            "random",
            "inference time (ms)",
        ],
    );
}

#[test]
fn network_svg_has_real_k_values() {
    let svg = scratch_dir("network").join("n.svg");
    let path = svg.to_string_lossy();
    run_ok(&[
        "network",
        "--gpus",
        "4096",
        "--hb-domain",
        "8",
        "--radix",
        "64",
        "--svg",
        &path,
    ]);
    assert_svg_labels(
        &svg,
        &[
            "Network cost vs HB-domain size",
            "rail-only",
            "rail-optimized",
            "million USD",
            "HB-domain size K",
            "\n1\n",
            "\n2\n",
            "\n4\n",
            "\n1024\n",
        ],
    );
}

#[test]
fn train_svg_breaks_the_step_down_by_term() {
    let svg = scratch_dir("train").join("t.svg");
    let path = svg.to_string_lossy();
    run_ok(&[
        "train",
        "--model",
        "mixtral-8x7b",
        "--gpus",
        "64",
        "--global-batch",
        "256",
        "--top",
        "3",
        "--svg",
        &path,
    ]);
    assert_svg_labels(
        &svg,
        &[
            "MoE training step time by term",
            "step time (s)",
            "compute",
            "EP all-to-all",
            "tok/s/GPU",
        ],
    );
}

//! Snapshot tests of the human-readable reports: each subcommand runs on the repository's
//! example files and its stdout must equal `tests/snapshots/<name>.txt`, so any change to a
//! report's wording, units or layout shows up in review as a diff of that file.
//!
//! Reports that `docs/cli.md` already shows in full (`place`, `network`, `train` on
//! `parm_layer.json`, `fit` on nccl-tests output) are compared by `docs_cli.rs`; the rest are
//! here. After an intended change, rewrite the files with
//! `UPDATE_SNAPSHOTS=1 cargo test -p moe-planner-cli --test snapshots` and review the diff.
#![cfg(unix)]

mod shell;

use std::path::Path;

/// Runs `line` from a scratch copy of the repository root and compares its stdout with the
/// snapshot `name` (or writes the snapshot under `UPDATE_SNAPSHOTS`).
fn snapshot(name: &str, line: &str) {
    let dir = shell::sandbox(&format!("snapshot-{name}"));
    let actual = shell::run_ok(line, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &actual).expect("snapshot written");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; write it with UPDATE_SNAPSHOTS=1", path.display()));
    if actual != expected {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "`{line}` no longer prints {} (first difference at line {}):\n--- expected\n{expected}\
             --- actual\n{actual}\nIf the change is intended: UPDATE_SNAPSHOTS=1 cargo test -p \
             moe-planner-cli --test snapshots",
            path.display(),
            first + 1
        );
    }
}

#[test]
fn demo() {
    snapshot("demo", "moe-planner demo --out demo-plots");
}

#[test]
fn schedule_optimal() {
    snapshot(
        "schedule-optimal",
        "moe-planner schedule --traffic examples/data/traffic_zipf8.csv",
    );
}

#[test]
fn schedule_sjf() {
    snapshot(
        "schedule-sjf",
        "moe-planner schedule --traffic examples/data/traffic_zipf8.csv --algorithm sjf",
    );
}

#[test]
fn colocate() {
    snapshot(
        "colocate",
        "moe-planner colocate --model-a examples/data/model_a_traffic.csv \
         --model-b examples/data/model_b_traffic.csv --seed 3",
    );
}

#[test]
fn infer() {
    snapshot(
        "infer",
        "moe-planner infer --spec examples/data/inference_colocated.json",
    );
}

#[test]
fn group() {
    snapshot(
        "group",
        "moe-planner group --spec examples/data/perlmutter_group.json",
    );
}

#[test]
fn train_with_fits() {
    snapshot(
        "train-fit",
        "moe-planner fit --measurements examples/data/measured/nccl_h100_sxm.csv --json \
         > fits.json && moe-planner train --spec examples/data/measured/parm_layer_8gpu.json \
         --fit fits.json",
    );
}

#[test]
fn iteration() {
    snapshot(
        "iteration",
        "moe-planner iteration --model gpt-1t --system dgx-a100 --gpus 512 --tp 8 --pp 64 \
         --global-batch 512",
    );
}

#[test]
fn iteration_search() {
    snapshot(
        "iteration-search",
        "moe-planner iteration --model gpt-175b --system dgx-a100 --gpus 64 --search --top 3",
    );
}

#[test]
fn fit_bytes_seconds() {
    snapshot(
        "fit-bytes-seconds",
        "moe-planner fit --measurements examples/data/allgather_measurements.csv",
    );
}

#[test]
fn fit_measured_table() {
    snapshot(
        "fit-measured-table",
        "moe-planner fit --measurements examples/data/measured/nccl_h100_sxm.csv",
    );
}

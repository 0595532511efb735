//! `docs/reproduction.md`'s CLI output on the embedded workload (section "The CLI on the
//! embedded workload"): the `demo` block must be lines of the demo's snapshot
//! (`tests/snapshots/demo.txt`, which `snapshots.rs` pins to the binary's output), and the
//! `place` block must be lines of what the binary prints now. Regenerate the blocks from those
//! outputs (issue 24 item 6).
#![cfg(unix)]

use std::path::Path;
use std::process::Command;

const DOC: &str = include_str!("../../../docs/reproduction.md");
const DEMO: &str = include_str!("snapshots/demo.txt");

/// The `n`-th fenced `text` block after `anchor`.
fn text_block(anchor: &str, n: usize) -> Vec<&'static str> {
    let start = DOC
        .find(anchor)
        .unwrap_or_else(|| panic!("docs/reproduction.md no longer contains `{anchor}`"));
    DOC[start..]
        .split("```text\n")
        .nth(n + 1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| panic!("no text block {n} after `{anchor}`"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect()
}

fn require_lines(what: &str, documented: &[&str], output: &str) {
    let missing: Vec<&&str> = documented
        .iter()
        .filter(|l| !output.lines().any(|o| o.trim_end() == l.trim_end()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reproduction.md, {what}: these documented lines are not in the output any more \
         (regenerate the block from the output below):\n{}\n--- output\n{output}",
        missing
            .iter()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_documented_demo_lines_are_the_demo_output() {
    let block = text_block("### The CLI on the embedded workload", 0);
    require_lines("the `demo` block", &block, DEMO);
}

#[test]
fn the_documented_place_totals_are_the_binary_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_moe-planner"))
        .args([
            "place",
            "--loads",
            "crates/moe-planner-cli/data/deepseek_like_loads.json",
            "--gpus",
            "32",
            "--slots-per-gpu",
            "9",
        ])
        .current_dir(root)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let block = text_block("### The CLI on the embedded workload", 1);
    require_lines("the `place` totals", &block, &stdout);
}

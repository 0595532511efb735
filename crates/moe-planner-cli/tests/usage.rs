//! Conflicting or meaningless flags are usage errors (exit 2), and a default that produces a
//! degenerate case says so on stderr.

mod common;

use common::run;

const GPT175_ON_64: [&str; 8] = [
    "iteration",
    "--model",
    "gpt-175b",
    "--system",
    "dgx-a100",
    "--gpus",
    "64",
    "--json",
];

fn with(extra: &[&'static str]) -> Vec<&'static str> {
    GPT175_ON_64.iter().chain(extra).copied().collect()
}

#[test]
fn search_with_a_fixed_parallelization_is_a_usage_error() {
    for flag in [
        ["--tp", "8"],
        ["--pp", "8"],
        ["--dp", "1"],
        ["--microbatch", "2"],
        ["--interleave", "2"],
    ] {
        let out = run(&with(&["--search", flag[0], flag[1]]));
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("cannot be used with") && stderr.contains(flag[0]),
            "{stderr}"
        );
    }
}

#[test]
fn top_zero_is_a_usage_error() {
    let out = run(&with(&["--search", "--top", "0"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be at least 1"));
    let out = run(&with(&["--search", "--top", "1"]));
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["ranked"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_defaulted_batch_of_one_micro_batch_warns() {
    // B = d x b = 1 x 1 with p = 8: one micro-batch, the bubble is most of the iteration.
    let out = run(&with(&["--tp", "8", "--pp", "8"]));
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("moe-planner: warning: --global-batch defaulted to d x b = 1"),
        "{stderr}"
    );
    assert!(stderr.contains("87%"), "{stderr}");
    // stdout stays one JSON document.
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON");
    // An explicit batch, or a pipeline of one stage, is not degenerate.
    for extra in [
        ["--tp", "8", "--pp", "8", "--global-batch", "512"],
        ["--tp", "8", "--pp", "1", "--dp", "8"],
    ] {
        let out = run(&with(&extra[..]));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

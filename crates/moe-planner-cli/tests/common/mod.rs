//! What the CLI integration tests share: the example data, running the binary, scratch files.
// Each test binary uses its own subset of these.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The path of `examples/data/<file>`.
pub(crate) fn data(file: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/data");
    root.join(file).to_string_lossy().into_owned()
}

/// Runs `moe-planner` with `args`.
pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_moe-planner"))
        .args(args)
        .output()
        .expect("the moe-planner binary runs")
}

/// Writes `text` to a scratch file unique to this call and returns its path (tests of one
/// process run in parallel: a name shared by two calls let one test read the other's file while
/// it was being rewritten, empty).
pub(crate) fn scratch(name: &str, text: &str) -> String {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "moe-planner-test-{}-{call}-{name}",
        std::process::id()
    ));
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

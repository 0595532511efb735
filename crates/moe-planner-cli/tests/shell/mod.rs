//! Runs documented command lines (`moe-planner ...`, with `\` continuations and `>` redirects)
//! through `sh` against the built binary, as a reader would from the repository root.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (two levels above this crate).
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch directory that looks like the repository root to relative paths: `examples/` and
/// `crates/` link to the real ones, and files the commands write (`> fits.json`, `--out`,
/// `--svg`) land here instead of in the checkout. Later commands see earlier commands' files.
pub(crate) fn sandbox(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moe-planner-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    for entry in ["examples", "crates"] {
        std::os::unix::fs::symlink(repo_root().join(entry), dir.join(entry)).expect("symlink");
    }
    dir
}

/// Runs one command line with `sh -c` in `dir`, the built `moe-planner` first on `PATH`.
pub(crate) fn run_line(line: &str, dir: &Path) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_moe-planner"));
    let bin_dir = bin.parent().expect("the binary has a directory");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH joins");
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("sh runs")
}

/// Runs `line` and panics with its stderr unless it succeeds; returns stdout.
// Every test file compiles this module on its own, and not all of them use every helper.
#[allow(dead_code)]
pub(crate) fn run_ok(line: &str, dir: &Path) -> String {
    let out = run_line(line, dir);
    assert!(
        out.status.success(),
        "`{line}` failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

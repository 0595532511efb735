//! The binary on adversarial input (issue 13): overflow-sized numbers, holes in CSV files, a
//! full stdout, byte-order marks, stdin. Every run must end within [`TIME_LIMIT`] with exit 0
//! or with exit 1 and one line on stderr: never a panic (101), an abort (134) or a hang.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a run may take before the test kills it and fails.
const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Address-space cap of every child (KiB), so an allocation bug fails the test instead of
/// swapping the machine.
const MEMORY_LIMIT_KIB: u64 = 4 << 20;

/// What a finished run left behind.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Where the child's stdin and stdout go.
enum Io<'a> {
    /// Stdin empty, stdout captured.
    Plain,
    /// Stdin fed with these bytes, stdout captured.
    Stdin(&'a [u8]),
    /// Stdout is `/dev/full`: every write fails with "no space left on device".
    FullStdout,
}

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/data")
        .join(file)
}

/// Writes `contents` to a fresh file of this test binary's temporary directory.
fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moe-planner-garbage-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temporary directory");
    let path = dir.join(name);
    fs::write(&path, contents).expect("temporary file");
    path
}

fn spawn(args: &[&str], io: &Io<'_>) -> Child {
    // `ulimit -v` through the shell: the test crate may not use unsafe code for setrlimit.
    let script = format!("ulimit -v {MEMORY_LIMIT_KIB}; exec \"$0\" \"$@\"");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_moe-planner"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stderr(Stdio::piped());
    match io {
        Io::Plain => cmd.stdin(Stdio::null()).stdout(Stdio::piped()),
        Io::Stdin(_) => cmd.stdin(Stdio::piped()).stdout(Stdio::piped()),
        Io::FullStdout => {
            let full = fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full exists on Linux");
            cmd.stdin(Stdio::null()).stdout(full)
        }
    };
    let mut child = cmd.spawn().expect("sh runs");
    if let (Io::Stdin(bytes), Some(mut stdin)) = (io, child.stdin.take()) {
        stdin.write_all(bytes).expect("child reads stdin");
    }
    child
}

/// Runs the binary, killing it and failing the test after [`TIME_LIMIT`].
fn run(args: &[&str], io: &Io<'_>) -> Run {
    let mut child = spawn(args, io);
    let start = Instant::now();
    while child.try_wait().expect("child status").is_none() {
        if start.elapsed() > TIME_LIMIT {
            child.kill().expect("kill the child");
            child.wait().expect("reap the child");
            panic!("{args:?} ran longer than {TIME_LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("child output");
    Run {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Exit code 1 and exactly one `moe-planner: error:` line on stderr; returns that line.
fn assert_one_line_error(args: &[&str], io: &Io<'_>) -> String {
    let r = run(args, io);
    assert_eq!(
        r.status.code(),
        Some(1),
        "{args:?}: {:?}, stderr: {}",
        r.status,
        r.stderr
    );
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.starts_with("moe-planner: error:"), "{}", r.stderr);
    r.stderr
}

/// Exit code 0, and stdout parsed as the JSON document `--json` prints.
fn assert_json_ok(args: &[&str], io: &Io<'_>) -> Value {
    let r = run(args, io);
    assert!(r.status.success(), "{args:?}: {:?}: {}", r.status, r.stderr);
    serde_json::from_str(&r.stdout).expect("stdout is one JSON document")
}

/// `group` on the example spec with `nodes` Perlmutter nodes fails in one line.
fn assert_group_refused(nodes: &str) {
    let spec = perlmutter_nodes(nodes);
    assert_one_line_error(
        &["group", "--spec", spec.to_str().expect("utf-8")],
        &Io::Plain,
    );
}

/// The example group spec with `nodes` Perlmutter nodes.
fn perlmutter_nodes(nodes: &str) -> PathBuf {
    let text = fs::read_to_string(data("perlmutter_group.json")).expect("example spec");
    let mut spec: Value = serde_json::from_str(&text).expect("example spec is JSON");
    spec["cluster"]["nodes"] = serde_json::from_str(nodes).expect("a JSON number");
    temp_file(
        &format!("perlmutter_{nodes}.json"),
        spec.to_string().as_bytes(),
    )
}

#[test]
fn full_stdout_is_one_error_line() {
    let network = [
        "network",
        "--gpus",
        "1024",
        "--hb-domain",
        "8",
        "--radix",
        "64",
    ];
    let line = assert_one_line_error(&network, &Io::FullStdout);
    assert!(line.contains("cannot write to stdout"), "{line}");
    let mut json = network.to_vec();
    json.push("--json");
    assert_one_line_error(&json, &Io::FullStdout);
    let traffic = data("traffic_zipf8.csv");
    let schedule = ["schedule", "--traffic", traffic.to_str().expect("utf-8")];
    assert_one_line_error(&schedule, &Io::FullStdout);
}

#[test]
fn empty_csv_field_names_line_and_column() {
    let holes = temp_file("holes.csv", b"0,1,2\n0,,5\n1,1,0\n");
    let line = assert_one_line_error(
        &["schedule", "--traffic", holes.to_str().expect("utf-8")],
        &Io::Plain,
    );
    assert!(line.contains("line 2, column 2: empty field"), "{line}");
    let trailing = temp_file("trailing.csv", b"0,1\n1,0,\n");
    let line = assert_one_line_error(
        &["schedule", "--traffic", trailing.to_str().expect("utf-8")],
        &Io::Plain,
    );
    assert!(line.contains("line 2, column 3: empty field"), "{line}");
}

#[test]
fn byte_order_mark_is_accepted_in_csv_and_json() {
    let csv = temp_file("bom.csv", b"\xef\xbb\xbf0,3\n1,0\n");
    let json = temp_file("bom.json", b"\xef\xbb\xbf{\"traffic\": [[0, 3], [1, 0]]}");
    for path in [csv, json] {
        let plan = assert_json_ok(
            &[
                "schedule",
                "--traffic",
                path.to_str().expect("utf-8"),
                "--json",
            ],
            &Io::Plain,
        );
        assert_eq!(plan["nonzero_pairs"], 2, "{plan}");
    }
    let spec = fs::read(data("perlmutter_group.json")).expect("example spec");
    let bom_spec = temp_file(
        "bom_group.json",
        &[b"\xef\xbb\xbf".as_slice(), &spec].concat(),
    );
    assert_json_ok(
        &[
            "group",
            "--spec",
            bom_spec.to_str().expect("utf-8"),
            "--json",
        ],
        &Io::Plain,
    );
}

#[test]
fn dash_reads_stdin() {
    let plan = assert_json_ok(
        &["schedule", "--traffic", "-", "--json"],
        &Io::Stdin(b"0,3\n1,0\n"),
    );
    assert_eq!(plan["nonzero_pairs"], 2, "{plan}");
    let spec = fs::read(data("perlmutter_group.json")).expect("example spec");
    assert_json_ok(&["group", "--spec", "-", "--json"], &Io::Stdin(&spec));
    let line = assert_one_line_error(&["group", "--spec", "-"], &Io::Stdin(b"{\"cluster\": 3}"));
    assert!(line.contains("<stdin> at cluster"), "{line}");
}

#[test]
fn json_errors_name_the_path_line_and_column() {
    let bad = temp_file("bad_traffic.json", b"{\"traffic\": [[0, 1], [1, \"x\"]]}");
    let line = assert_one_line_error(
        &["schedule", "--traffic", bad.to_str().expect("utf-8")],
        &Io::Plain,
    );
    assert!(line.contains("at traffic[1][1]"), "{line}");
    assert!(line.contains("line 1 column"), "{line}");
}

/// A line sum of exactly 2^64 - 1 bytes (2^64 - 2048 and 2047, both exact in f64): either
/// refused in one line, or a timetable that delivers every pair exactly and is no shorter than
/// its own lower bound (the finish-time tree once used `u64::MAX` as "no run").
#[test]
fn line_sum_of_u64_max_is_scheduled_exactly_or_refused() {
    let big = 18_446_744_073_709_549_568.0_f64;
    let traffic = [[0.0, big, 2047.0], [2047.0, 0.0, big], [big, 2047.0, 0.0]];
    let text: String = traffic
        .iter()
        .map(|row| format!("{:.0},{:.0},{:.0}\n", row[0], row[1], row[2]))
        .collect();
    let path = temp_file("line_sum_max.csv", text.as_bytes());
    let args = [
        "schedule",
        "--traffic",
        path.to_str().expect("utf-8"),
        "--json",
    ];
    let r = run(&args, &Io::Plain);
    if r.status.code() == Some(1) {
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
        return;
    }
    assert!(r.status.success(), "{:?}: {}", r.status, r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).expect("JSON plan");
    let mut delivered = [[0.0_f64; 3]; 3];
    for t in plan["transfers"].as_array().expect("transfers") {
        let (i, j) = (
            t["src"].as_u64().expect("src"),
            t["dst"].as_u64().expect("dst"),
        );
        let (i, j) = (
            usize::try_from(i).expect("src"),
            usize::try_from(j).expect("dst"),
        );
        delivered[i][j] += t["bytes"].as_f64().expect("bytes");
    }
    for (i, row) in traffic.iter().enumerate() {
        for (j, &want) in row.iter().enumerate() {
            let got = delivered[i][j];
            assert!(
                (got - want).abs() <= want * 1e-12,
                "pair ({i}, {j}): {got} of {want}"
            );
        }
    }
    let makespan = plan["makespan_s"].as_f64().expect("makespan");
    let bound = plan["lower_bound_s"].as_f64().expect("bound");
    assert!(makespan >= bound * (1.0 - 1e-12), "{makespan} < {bound}");
}

#[test]
fn group_with_10_pow_18_perlmutter_nodes_is_refused() {
    assert_group_refused("1000000000000000000");
}

#[test]
fn group_with_100000_perlmutter_nodes_is_refused() {
    assert_group_refused("100000");
}

#[test]
fn iteration_search_with_u64_max_global_batch_is_refused() {
    let args = [
        "iteration",
        "--model",
        "gpt-1t",
        "--system",
        "gh200",
        "--gpus",
        "4096",
        "--search",
        "--global-batch",
        "18446744073709551615",
    ];
    assert_one_line_error(&args, &Io::Plain);
}

#[test]
fn bandwidth_errors_show_the_value_in_gbps() {
    let traffic = data("traffic_zipf8.csv");
    let traffic = traffic.to_str().expect("utf-8");
    let zero = assert_one_line_error(
        &["schedule", "--traffic", traffic, "--bandwidth-gbps", "0"],
        &Io::Plain,
    );
    assert!(zero.contains("(Gbps) must be positive, got 0"), "{zero}");
    let huge = assert_one_line_error(
        &[
            "schedule",
            "--traffic",
            traffic,
            "--bandwidth-gbps",
            "1e308",
        ],
        &Io::Plain,
    );
    assert!(huge.contains("(Gbps) must be at most"), "{huge}");
    let per_gpu = temp_file("bandwidths.csv", b"100\n100\n-3\n100\n100\n100\n100\n100\n");
    let per_gpu = assert_one_line_error(
        &[
            "schedule",
            "--traffic",
            traffic,
            "--bandwidths",
            per_gpu.to_str().expect("utf-8"),
        ],
        &Io::Plain,
    );
    assert!(
        per_gpu.contains("GPU 2: bandwidth (Gbps) must be positive, got -3"),
        "{per_gpu}"
    );
    let system = temp_file(
        "system.json",
        br#"{"hb_domain": 8, "peak_tflop_per_s": 312, "hb_gb_per_s": 300, "network_gbps": -200, "memory_gb": 80}"#,
    );
    let system = assert_one_line_error(
        &[
            "iteration",
            "--model",
            "gpt-1t",
            "--system",
            system.to_str().expect("utf-8"),
            "--gpus",
            "512",
            "--tp",
            "8",
            "--pp",
            "64",
        ],
        &Io::Plain,
    );
    assert!(
        system.contains("network_gbps must be positive, got -200"),
        "{system}"
    );
}

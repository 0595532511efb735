//! Every subcommand's `--help` ends with examples that run, and points to the online docs rather
//! than to files an installed binary does not have.
#![cfg(unix)]

mod shell;

const DOCS_URL: &str = "https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md";

/// The subcommands `moe-planner --help` lists (all but `help`), so a new one is checked too.
fn subcommands(dir: &std::path::Path) -> Vec<String> {
    let help = shell::run_ok("moe-planner --help", dir);
    let list = help.split_once("Commands:").map_or("", |(_, rest)| rest);
    let names: Vec<String> = list
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() >= 10, "{help}");
    names
}

/// The example command lines of a help text: the lines after `Examples`, joined over `\`.
fn examples(help: &str) -> Vec<String> {
    let after = help.split_once("Examples").map_or("", |(_, rest)| rest);
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in after.lines().skip(1) {
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        current.push_str(line.trim_end_matches('\\'));
        current.push(' ');
        if !line.ends_with('\\') {
            lines.push(current.trim().to_owned());
            current.clear();
        }
    }
    lines
}

#[test]
fn every_help_ends_with_examples_and_the_docs_url() {
    let dir = shell::sandbox("help-text");
    for sub in subcommands(&dir) {
        for flag in ["-h", "--help"] {
            let help = shell::run_ok(&format!("moe-planner {sub} {flag}"), &dir);
            let found = examples(&help);
            assert!(!found.is_empty(), "{sub} {flag} has no examples:\n{help}");
            assert!(
                found
                    .iter()
                    .all(|l| l.starts_with(&format!("moe-planner {sub} ")))
            );
            let last = help.trim_end().lines().last().unwrap_or_default();
            assert_eq!(
                last,
                format!("Every option and file format: {DOCS_URL}#{sub}")
            );
            // Every path the help names must exist in a checkout, and docs are only online.
            for word in help.split_whitespace() {
                let word = word.trim_matches(['`', '(', ')', ';', ',', '.', ':']);
                if word.contains("docs/") {
                    assert!(word.starts_with("https://"), "{sub}: relative `{word}`");
                }
                if let Some(path) = word.strip_prefix("examples/") {
                    assert!(
                        shell::repo_root().join("examples").join(path).exists(),
                        "{word}"
                    );
                }
            }
        }
    }
}

#[test]
fn help_examples_run() {
    let dir = shell::sandbox("help-run");
    for sub in subcommands(&dir) {
        // The demo runs every planner (seconds in debug builds); tests/cli.rs covers it.
        if sub == "demo" {
            continue;
        }
        let help = shell::run_ok(&format!("moe-planner {sub} --help"), &dir);
        for line in examples(&help) {
            shell::run_ok(&line, &dir);
        }
    }
}

//! Runs every command of `docs/cli.md` against the built binary and compares the output the doc
//! shows, so a format change or a renamed flag fails here instead of misleading a reader.
//!
//! The rules, for writers of `docs/cli.md`:
//! * a fenced block tagged `sh` (or untagged) whose first line starts with `moe-planner ` is run,
//!   one command per line (a trailing `\` continues it), in order, through `sh` from a scratch
//!   copy of the repository root (`examples/` and `crates/` linked), so files one command writes
//!   (`> fits.json`) are read by the next; synopses are tagged `text` and not run;
//! * `# ` lines right after a command are its expected stdout, and an untagged block right after
//!   a command block is the expected stdout of the block's last command; trailing whitespace is
//!   ignored and a line `...` stands for any number of lines;
//! * `<!-- docs-test: skip (reason) -->` on the line before a block skips it.
#![cfg(unix)]

mod shell;

/// One fenced block of the document.
struct Block {
    lang: String,
    lines: Vec<String>,
    /// 1-based line of the opening fence, for messages.
    line: usize,
    skip: bool,
    /// Only blank lines separate it from the previous block.
    follows_block: bool,
}

fn blocks(doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    let mut last_text_line = String::new();
    let mut since_block_only_blank = false;
    for (i, raw) in doc.lines().enumerate() {
        let trimmed = raw.trim();
        if let Some(block) = open.as_mut() {
            if trimmed == "```" {
                out.push(open.take().expect("a block is open"));
                since_block_only_blank = true;
            } else {
                block.lines.push(raw.trim_end().to_owned());
            }
        } else if let Some(lang) = trimmed.strip_prefix("```") {
            open = Some(Block {
                lang: lang.to_owned(),
                lines: Vec::new(),
                line: i + 1,
                skip: last_text_line.starts_with("<!-- docs-test: skip"),
                follows_block: since_block_only_blank,
            });
        } else if !trimmed.is_empty() {
            last_text_line = trimmed.to_owned();
            since_block_only_blank = false;
        }
    }
    assert!(open.is_none(), "unclosed fence");
    out
}

/// A command and the stdout lines the doc shows for it (empty: not compared).
struct Command {
    line: String,
    expected: Vec<String>,
}

fn commands(block: &Block) -> Vec<Command> {
    let mut out: Vec<Command> = Vec::new();
    let mut pending = String::new();
    for line in &block.lines {
        if !pending.is_empty() || line.starts_with("moe-planner ") {
            pending.push_str(line.trim().trim_end_matches('\\'));
            pending.push(' ');
            if !line.ends_with('\\') {
                out.push(Command {
                    line: pending.trim().to_owned(),
                    expected: Vec::new(),
                });
                pending.clear();
            }
        } else if let Some(last) = out.last_mut() {
            let shown = line.strip_prefix("# ").or(line.strip_prefix('#'));
            last.expected.push(
                shown
                    .unwrap_or_else(|| panic!("line {}: `{line}`", block.line))
                    .to_owned(),
            );
        }
    }
    out
}

fn is_command_block(b: &Block) -> bool {
    matches!(b.lang.as_str(), "" | "sh")
        && b.lines
            .first()
            .is_some_and(|l| l.starts_with("moe-planner "))
}

/// Whether `actual` matches `expected`, where an expected `...` line matches any lines.
fn matches_elided(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skip| matches_elided(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual.split_first().is_some_and(|(a, more)| {
            a.trim_end() == first.trim_end() && matches_elided(rest, more)
        }),
    }
}

/// Runs `cmd` in `dir`; the failure message, if it fails or prints what the doc does not show.
fn check(cmd: &Command, dir: &std::path::Path, at: usize) -> Option<String> {
    let out = shell::run_line(&cmd.line, dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Some(format!("line {at}: `{}` failed: {stderr}", cmd.line));
    }
    let actual: Vec<&str> = stdout.trim_end().lines().collect();
    (!cmd.expected.is_empty() && !matches_elided(&cmd.expected, &actual)).then(|| {
        format!(
            "line {at}: `{}` printed\n{}\nbut the doc shows\n{}",
            cmd.line,
            stdout.trim_end(),
            cmd.expected.join("\n")
        )
    })
}

#[test]
fn every_command_in_the_cli_docs_runs_and_prints_what_the_doc_shows() {
    let doc = std::fs::read_to_string(shell::repo_root().join("docs/cli.md")).expect("docs/cli.md");
    let all = blocks(&doc);
    let dir = shell::sandbox("docs-cli");
    let mut ran = 0;
    let mut failures = Vec::new();
    for (i, block) in all.iter().enumerate() {
        if !is_command_block(block) || block.skip {
            continue;
        }
        let mut cmds = commands(block);
        if let Some(next) = all
            .get(i + 1)
            .filter(|n| n.follows_block && n.lang.is_empty())
        {
            if !is_command_block(next) {
                let last = cmds.last_mut().expect("a command block has a command");
                assert!(
                    last.expected.is_empty(),
                    "line {}: output twice",
                    block.line
                );
                last.expected.clone_from(&next.lines);
            }
        }
        for cmd in &cmds {
            failures.extend(check(cmd, &dir, block.line));
            ran += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "docs/cli.md drifted:\n\n{}",
        failures.join("\n\n")
    );
    assert!(
        ran >= 15,
        "only {ran} commands found: did the fence rules change?"
    );
}

#[test]
fn elision_matches_any_number_of_lines() {
    let exp = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(matches_elided(
        &exp(&["a", "...", "d"]),
        &["a", "b", "c", "d"]
    ));
    assert!(matches_elided(&exp(&["a", "...", "b"]), &["a", "b"]));
    assert!(matches_elided(&exp(&["a  "]), &["a"]));
    assert!(!matches_elided(&exp(&["a", "...", "d"]), &["a", "b", "c"]));
    assert!(!matches_elided(&exp(&["a", "b"]), &["a", "b", "c"]));
}

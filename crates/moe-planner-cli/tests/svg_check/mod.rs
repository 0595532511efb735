//! A dependency-free check that a file is well-formed SVG: every tag closes in order, the root
//! is `<svg>`, and the text elements can be read back for label checks.

use std::path::Path;

/// Parses `path` as XML (tags balanced, root `svg`) and returns the content of its `<text>`
/// elements with the five predefined entities decoded.
pub(crate) fn svg_texts(path: &Path) -> Vec<String> {
    let xml = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut stack: Vec<String> = Vec::new();
    let mut texts = Vec::new();
    let mut root = None;
    let mut rest = xml.as_str();
    while let Some(open) = rest.find('<') {
        let content = &rest[..open];
        if stack.last().is_some_and(|t| t == "text") && !content.trim().is_empty() {
            texts.push(decode(content));
        }
        let close = rest[open..]
            .find('>')
            .unwrap_or_else(|| panic!("{}: unterminated tag", path.display()))
            + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack.pop();
            assert_eq!(
                top.as_deref(),
                Some(name.trim()),
                "{}: mismatched </{name}>",
                path.display()
            );
            continue;
        }
        let name = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or_default()
            .to_string();
        assert!(!name.is_empty(), "{}: empty tag", path.display());
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "{}: unbalanced quotes in <{tag}>",
            path.display()
        );
        root.get_or_insert_with(|| name.clone());
        if !tag.ends_with('/') {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "{}: unclosed {stack:?}", path.display());
    assert_eq!(
        root.as_deref(),
        Some("svg"),
        "{}: root is not <svg>",
        path.display()
    );
    texts
}

fn decode(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Asserts that `path` is well-formed SVG whose text contains every one of `labels`.
pub(crate) fn assert_svg_labels(path: &Path, labels: &[&str]) {
    let texts = svg_texts(path).join("\n");
    for label in labels {
        assert!(
            texts.contains(label),
            "{} misses the label {label:?}:\n{texts}",
            path.display()
        );
    }
}

/// A fresh scratch directory for one test.
pub(crate) fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("moe-planner-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

//! Tables of `docs/reproduction.md`, parsed, and the comparison of a documented row with the
//! row the code computes.
//!
//! The doc is the single source: a test finds a table by a line of text just above it (its
//! anchor) and its header, recomputes the rows, and compares them cell by cell as the doc
//! prints them (same rounding), so a mismatch names the table, the row and the column. Every
//! computed row is printed, in the doc's own Markdown, so `--nocapture` regenerates the table.

/// `docs/reproduction.md`, read at compile time.
pub(crate) const DOC: &str = include_str!("../../../docs/reproduction.md");

/// One Markdown table: its body rows (cells trimmed).
pub(crate) struct Table {
    name: String,
    rows: Vec<Vec<String>>,
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    // `\|` inside a cell is an escaped bar, not a separator.
    inner
        .replace("\\|", "\u{1}")
        .split('|')
        .map(|c| c.trim().replace('\u{1}', "|"))
        .collect()
}

impl Table {
    /// The first table whose header line is `header` after the first line containing `anchor`.
    ///
    /// # Panics
    ///
    /// If the anchor or the table is missing: the doc lost the table the test checks.
    pub(crate) fn after(anchor: &str, header: &str) -> Table {
        let start = DOC
            .find(anchor)
            .unwrap_or_else(|| panic!("docs/reproduction.md no longer contains `{anchor}`"));
        let rest = &DOC[start..];
        let at = rest
            .lines()
            .position(|l| l.trim() == header)
            .unwrap_or_else(|| {
                panic!("no table `{header}` after `{anchor}` in docs/reproduction.md")
            });
        let mut lines = rest.lines().skip(at + 2);
        let mut rows = Vec::new();
        for line in lines.by_ref() {
            if !line.trim_start().starts_with('|') {
                break;
            }
            rows.push(cells(line));
        }
        Table {
            name: format!("`{header}` (after `{anchor}`)"),
            rows,
        }
    }

    /// The body row whose leading cells are `key`.
    ///
    /// # Panics
    ///
    /// If there is no such row.
    pub(crate) fn row(&self, key: &[&str]) -> &[String] {
        self.rows
            .iter()
            .find(|r| r.len() >= key.len() && r.iter().zip(key).all(|(c, k)| c == k))
            .unwrap_or_else(|| panic!("no row {key:?} in the table {}", self.name))
    }

    /// The first body row for which `pick` holds.
    pub(crate) fn rows_matching(&self, pick: impl Fn(&[String]) -> bool) -> Option<&[String]> {
        self.rows.iter().map(Vec::as_slice).find(|r| pick(r))
    }

    /// The number of body rows.
    pub(crate) fn rows_len(&self) -> usize {
        self.rows.len()
    }

    /// Body row `i` (0-based).
    ///
    /// # Panics
    ///
    /// If the table has fewer rows.
    pub(crate) fn row_at(&self, i: usize) -> &[String] {
        self.rows
            .get(i)
            .unwrap_or_else(|| panic!("no row {i} in the table {}", self.name))
    }

    /// The body row whose first cell starts with `prefix`.
    ///
    /// # Panics
    ///
    /// If there is no such row.
    pub(crate) fn row_starting(&self, prefix: &str) -> &[String] {
        self.rows
            .iter()
            .find(|r| r.first().is_some_and(|c| c.starts_with(prefix)))
            .unwrap_or_else(|| panic!("no row starting `{prefix}` in the table {}", self.name))
    }
}

/// How a message names a row: its first cell, or its first cells while they are empty (the
/// continuation rows of a grouped table).
fn row_name(row: &[String]) -> String {
    let mut name = Vec::new();
    for cell in row {
        name.push(cell.as_str());
        if !cell.is_empty() {
            break;
        }
    }
    name.join(" | ")
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Collects the differences between documented and computed cells of one table and fails
/// once, listing all of them, when the table is done.
pub(crate) struct Drift {
    table: String,
    failures: Vec<String>,
}

impl Drift {
    pub(crate) fn new(table: &str) -> Drift {
        println!("\n{table}");
        Drift {
            table: table.to_owned(),
            failures: Vec::new(),
        }
    }

    /// Compares the documented cells `documented[i]` of row `row` at `columns[i]` with the
    /// computed strings and prints the computed row.
    pub(crate) fn cells(&mut self, row: &[String], columns: &[usize], computed: &[String]) {
        assert_eq!(
            columns.len(),
            computed.len(),
            "one computed value per column"
        );
        let mut printed = row.to_vec();
        for (&c, value) in columns.iter().zip(computed) {
            // Emphasis is not part of the number.
            let documented = row.get(c).map_or(String::new(), |d| d.replace("**", ""));
            if documented != *value {
                self.failures.push(format!(
                    "row `{}`, column {c}: the doc says `{documented}`, the code gives `{value}`",
                    row_name(row)
                ));
            }
            if let Some(cell) = printed.get_mut(c) {
                cell.clone_from(value);
            }
        }
        println!("| {} |", printed.join(" | "));
    }

    /// Like [`Drift::cells`] for one cell whose documented text goes on after the number
    /// (`1.12× (1.09–1.15) inference time`): the cell must start with `computed`.
    pub(crate) fn cell_start(&mut self, row: &[String], column: usize, computed: &str) {
        let documented = row
            .get(column)
            .map_or(String::new(), |d| d.replace("**", ""));
        println!("| {} | … {computed} … |", row_name(row));
        if !documented.starts_with(computed) {
            self.failures.push(format!(
                "row `{}`, column {column}: the doc says `{documented}`, the code gives `{computed}`",
                row_name(row)
            ));
        }
    }

    /// Compares one documented value (found in prose or a cell) with the computed one.
    pub(crate) fn value(&mut self, what: &str, documented: &str, computed: &str) {
        println!("{what}: {computed}");
        if documented != computed {
            self.failures.push(format!(
                "{what}: the doc says `{documented}`, the code gives `{computed}`"
            ));
        }
    }

    /// Requires the doc to contain `text` (a sentence with computed numbers in it), where any
    /// run of whitespace matches any other (the doc wraps its lines).
    pub(crate) fn text(&mut self, text: &str) {
        println!("{text}");
        if !words(DOC).contains(&words(text)) {
            self.failures.push(format!(
                "the doc no longer contains the computed text `{text}`"
            ));
        }
    }

    /// Fails with every difference found.
    ///
    /// # Panics
    ///
    /// If a documented number differs from the computed one.
    pub(crate) fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "docs/reproduction.md, {}: {} documented number(s) no longer match the code \
             (regenerate the rows printed above with --nocapture):\n{}",
            self.table,
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

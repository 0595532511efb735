//! Reading the files the CLI accepts: JSON specs and numeric matrices (CSV or JSON).
//!
//! Every file argument may be `-` for stdin; a UTF-8 byte-order mark is skipped; errors name
//! the file and the line, column or JSON path (`models[1].layers[0]`) of the first problem.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::CliError;

/// The file argument that means stdin.
const STDIN: &str = "-";

/// The UTF-8 byte-order mark some Windows editors write at the start of a text file.
const BOM: char = '\u{feff}';

/// How errors name a file argument: its path, or `<stdin>` for `-`.
pub(crate) fn display_name(path: &Path) -> String {
    if path == Path::new(STDIN) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// Reads a whole file (stdin for `-`) without its byte-order mark, naming it in the error.
pub(crate) fn read_text(path: &Path) -> Result<String, CliError> {
    let read = if path == Path::new(STDIN) {
        let mut text = String::new();
        io::stdin().read_to_string(&mut text).map(|_| text)
    } else {
        fs::read_to_string(path)
    };
    let text =
        read.map_err(|e| CliError::input(format!("cannot read {}: {e}", display_name(path))))?;
    Ok(match text.strip_prefix(BOM) {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Reads and deserializes a JSON file (stdin for `-`), naming it in the error.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, CliError> {
    parse_json(&read_text(path)?, path)
}

/// Deserializes JSON text read from `path`; the error names the file, the JSON path of the
/// value that failed (`.` for the document itself), and `serde_json`'s line and column.
pub(crate) fn parse_json<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, CliError> {
    let fail = |at: &str, e: serde_json::Error| {
        CliError::input(format!(
            "invalid JSON in {} at {at}: {e}",
            display_name(path)
        ))
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| fail(&e.path().to_string(), e.into_inner()))?;
    // Trailing characters after the document are an error, as in `serde_json::from_str`.
    de.end().map_err(|e| fail(".", e))?;
    Ok(value)
}

#[derive(Deserialize)]
struct TrafficFile {
    traffic: Vec<Vec<f64>>,
}

/// Whether a matrix or loads file is JSON: it ends in `.json` or starts with `{`.
pub(crate) fn looks_like_json_object(path: &Path, text: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || text.trim_start().starts_with('{')
}

/// Reads a square numeric matrix: JSON `{"traffic": [[...], ...]}` (when the file ends in
/// `.json` or starts with `{`) or CSV with one row per line and no header.
///
/// Shape and value checks belong to the library; this only parses numbers.
pub(crate) fn read_matrix(path: &Path) -> Result<Vec<Vec<f64>>, CliError> {
    let text = read_text(path)?;
    if looks_like_json_object(path, &text) {
        return Ok(parse_json::<TrafficFile>(&text, path)?.traffic);
    }
    parse_csv_rows(&text, path)
}

/// Reads a CSV file of numbers with no header: one `Vec` per non-empty line.
///
/// An empty field (`0,,5`, or a trailing comma) is an error naming its line and column rather
/// than being dropped, which would shift every later value of the row.
pub(crate) fn parse_csv_rows(text: &str, path: &Path) -> Result<Vec<Vec<f64>>, CliError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| CliError::input(format!("{}: {e}", display_name(path))))?;
        let line = record.position().map_or(0, csv::Position::line);
        // A line of blanks only (`   `) is no row; any other empty field is a hole.
        if record.iter().all(str::is_empty) && record.len() <= 1 {
            continue;
        }
        let row = record
            .iter()
            .enumerate()
            .map(|(column, field)| parse_field(field, path, line, column + 1))
            .collect::<Result<Vec<f64>, CliError>>()?;
        rows.push(row);
    }
    Ok(rows)
}

/// Parses one CSV field as a number; the error names the file, line and column.
fn parse_field(field: &str, path: &Path, line: u64, column: usize) -> Result<f64, CliError> {
    let at = format!("{}: line {line}, column {column}", display_name(path));
    if field.is_empty() {
        return Err(CliError::input(format!("{at}: empty field")));
    }
    field
        .parse::<f64>()
        .map_err(|_| CliError::input(format!("{at}: `{field}` is not a number")))
}

//! Reading the files the CLI accepts: JSON specs and numeric matrices (CSV or JSON).

use std::fs;
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::CliError;

/// Reads a whole file, naming it in the error.
pub(crate) fn read_text(path: &Path) -> Result<String, CliError> {
    fs::read_to_string(path)
        .map_err(|e| CliError::input(format!("cannot read {}: {e}", path.display())))
}

/// Reads and deserializes a JSON file, naming it in the error.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, CliError> {
    let text = read_text(path)?;
    serde_json::from_str(&text)
        .map_err(|e| CliError::input(format!("invalid JSON in {}: {e}", path.display())))
}

#[derive(Deserialize)]
struct TrafficFile {
    traffic: Vec<Vec<f64>>,
}

/// Reads a square numeric matrix: JSON `{"traffic": [[...], ...]}` (when the file ends in
/// `.json` or starts with `{`) or CSV with one row per line and no header.
///
/// Shape and value checks belong to the library; this only parses numbers.
pub(crate) fn read_matrix(path: &Path) -> Result<Vec<Vec<f64>>, CliError> {
    let text = read_text(path)?;
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || text.trim_start().starts_with('{');
    if is_json {
        let file: TrafficFile = serde_json::from_str(&text)
            .map_err(|e| CliError::input(format!("invalid JSON in {}: {e}", path.display())))?;
        return Ok(file.traffic);
    }
    parse_csv_rows(&text, path)
}

/// Reads a CSV file of numbers with no header: one `Vec` per non-empty line.
pub(crate) fn parse_csv_rows(text: &str, path: &Path) -> Result<Vec<Vec<f64>>, CliError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for (line, record) in reader.records().enumerate() {
        let record = record?;
        let row = record
            .iter()
            .filter(|field| !field.is_empty())
            .map(|field| {
                field.parse::<f64>().map_err(|_| {
                    CliError::input(format!(
                        "{}: row {}: `{field}` is not a number",
                        path.display(),
                        line + 1
                    ))
                })
            })
            .collect::<Result<Vec<f64>, CliError>>()?;
        if !row.is_empty() {
            rows.push(row);
        }
    }
    Ok(rows)
}

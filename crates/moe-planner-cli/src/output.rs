//! How results reach stdout: a JSON document or a human-readable report.

use serde::Serialize;

use crate::error::CliError;

/// Flags every subcommand sees.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// Print one JSON document instead of a report.
    pub json: bool,
}

/// Prints `value` as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value)?;
    println!("{text}");
    Ok(())
}

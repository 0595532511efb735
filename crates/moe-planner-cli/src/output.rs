//! How results reach stdout: a JSON document or a human-readable report.

use std::io::Write;

use serde::Serialize;

use crate::error::CliError;

/// Flags every subcommand sees.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    /// Print one JSON document instead of a report.
    pub json: bool,
}

/// Prints `value` as pretty JSON on stdout.
///
/// A reader that closes the pipe early (`| head`) is not an error: the output is simply cut.
pub(crate) fn print_json<T: Serialize>(value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value)?;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

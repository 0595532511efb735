//! How results reach stdout: a JSON document or a human-readable report.
//!
//! Every byte the CLI prints goes through [`write_stdout`], so a full or broken stdout
//! (`> /dev/full`) is one error line and exit code 1, never the panic `println!` gives.

use std::fmt;
use std::io::{self, Write};

use serde::Serialize;

use crate::error::CliError;

/// Flags every subcommand sees.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    /// Print one JSON document instead of a report.
    pub json: bool,
}

/// Writes one line of a human-readable report on stdout, like `println!`, but returns
/// `Result<(), CliError>` instead of panicking when stdout cannot be written.
macro_rules! report {
    () => {
        $crate::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Like [`report!`] without the line break, as `print!`.
macro_rules! report_part {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))
    };
}

pub(crate) use {report, report_part};

/// Writes and flushes `args` on a locked stdout.
///
/// A reader that closes the pipe early (`| head`) is not an error: the output is simply cut
/// (with SIGPIPE restored in `main` the process usually ends before it sees `BrokenPipe`).
pub(crate) fn write_stdout(args: fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(CliError::input(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json<T: Serialize>(value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value)?;
    report!("{text}")
}

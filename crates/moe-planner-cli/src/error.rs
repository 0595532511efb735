//! The one error type of the CLI: a message and an exit code.

use std::fmt;

/// A failure to report on one line of stderr.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    code: u8,
}

impl CliError {
    /// Bad input or an infeasible request: exit code 1.
    pub(crate) fn input(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 1,
        }
    }

    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> u8 {
        self.code
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the source error printed.
        f.write_str(&self.message.replace('\n', " "))
    }
}

/// Any library, I/O or parse error becomes an input error carrying its own message.
impl<E: std::error::Error> From<E> for CliError {
    fn from(err: E) -> Self {
        Self::input(err.to_string())
    }
}

//! `moe-planner train`: not built yet; the crate issue that owns it replaces this module.

use crate::error::CliError;
use crate::output::Context;

/// Arguments of `moe-planner train` (none until the capability is built).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Reports that the subcommand is not built yet (exit code 2).
pub fn run(_args: &Args, _ctx: &Context) -> Result<(), CliError> {
    Err(CliError::not_built("train"))
}

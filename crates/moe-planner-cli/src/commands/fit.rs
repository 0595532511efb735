//! `moe-planner fit`: least-squares alpha-beta fit of collective measurements (Parm §V-A).

use std::path::{Path, PathBuf};

use moe_planner::comm_cost_model::fit::Sample;
use moe_planner::fitting::{FitSpec, plan_fit};

use crate::error::CliError;
use crate::input::read_text;
use crate::output::{Context, print_json};

/// Arguments of `moe-planner fit`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// CSV file with header `bytes,seconds`, one measurement per line.
    #[arg(long)]
    pub measurements: PathBuf,
}

/// Reads the samples of a `bytes,seconds` CSV file.
fn read_samples(path: &Path) -> Result<Vec<Sample>, CliError> {
    let text = read_text(path)?;
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let headers = reader.headers()?.clone();
    if headers.iter().collect::<Vec<_>>() != ["bytes", "seconds"] {
        return Err(CliError::input(format!(
            "{}: expected the header `bytes,seconds`",
            path.display()
        )));
    }
    reader
        .deserialize::<Sample>()
        .enumerate()
        .map(|(i, row)| {
            row.map_err(|e| CliError::input(format!("{}: row {}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// Fits `t = alpha + beta * bytes` and prints it.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let samples = read_samples(&args.measurements)?;
    let report = plan_fit(&FitSpec { samples })?;
    if ctx.json {
        return print_json(&report);
    }
    println!("samples            {}", report.samples);
    println!("alpha              {:.3} us", report.alpha_s * 1e6);
    println!("beta               {:.4e} s/byte", report.beta_s_per_byte);
    println!(
        "bandwidth          {:.2} GB/s",
        report.bandwidth_bytes_per_s / 1e9
    );
    println!("R^2                {:.6}", report.r_squared);
    println!(
        "max |residual|     {:.3} us",
        report.max_abs_residual_s * 1e6
    );
    Ok(())
}

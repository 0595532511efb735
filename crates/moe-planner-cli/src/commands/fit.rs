//! `moe-planner fit`: alpha-beta fits of collective measurements (Parm §V-A), piecewise by
//! message-size regime with breakpoints found from the data.
//!
//! Three input formats: a `bytes,seconds` CSV (one collective, as before), a measured table with
//! `collective,gpus,bytes,seconds` columns (examples/data/measured/), or nccl-tests' standard
//! output (`all_gather_perf` and friends; `--collective` names what it ran).

use std::path::{Path, PathBuf};

use moe_planner::comm_cost_model::fit::Sample;
use moe_planner::comm_cost_model::gpu_scaling::Collective;
use moe_planner::comm_cost_model::piecewise::PiecewiseOptions;
use moe_planner::fitting::{
    CollectiveFitPlan, CollectiveFitSpec, FitSpec, SegmentPlan, plan_collective_fits, plan_fit,
};
use moe_planner::measured::parse_collective_csv;
use moe_planner::nccl_tests::parse_nccl_tests;

use crate::error::CliError;
use crate::format;
use crate::input::{display_name, read_text};
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner fit --measurements examples/data/allgather_measurements.csv
  moe-planner fit --measurements examples/data/measured/nccl_h100_sxm.csv --json > h100_fits.json

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#fit";

/// Arguments of `moe-planner fit`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// A `bytes,seconds` CSV, a `collective,gpus,bytes,seconds` CSV, or nccl-tests output.
    #[arg(long)]
    pub measurements: PathBuf,
    /// The collective an nccl-tests file measured (`all_gather`, `all_reduce`,
    /// `reduce_scatter`, `alltoall`); required for nccl-tests output.
    #[arg(long)]
    pub collective: Option<String>,
    /// GPUs of an nccl-tests run (default: the `#  Rank` lines of the file).
    #[arg(long)]
    pub gpus: Option<u64>,
    /// Most segments per piecewise fit (1 = one line).
    #[arg(long, default_value_t = 3)]
    pub max_segments: usize,
}

/// Reads the samples of a `bytes,seconds` CSV file.
fn read_samples(text: &str, path: &Path) -> Result<Vec<Sample>, CliError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    reader
        .deserialize::<Sample>()
        .enumerate()
        .map(|(i, row)| {
            row.map_err(|e| CliError::input(format!("{}: row {}: {e}", display_name(path), i + 1)))
        })
        .collect()
}

/// The first non-comment line of a text, trimmed.
fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("")
}

/// Whether the text is nccl-tests output: a comment header naming `size` and `time`.
fn is_nccl_tests(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('#') && l.contains("size") && l.contains("time") && l.contains("busbw")
    })
}

fn fit_table(args: &Args, text: &str, ctx: &Context) -> Result<(), CliError> {
    let measurements = if is_nccl_tests(text) {
        let name = args
            .collective
            .as_deref()
            .ok_or_else(|| CliError::input("nccl-tests output needs --collective"))?;
        let collective = Collective::from_name(name).ok_or_else(|| {
            CliError::input(format!(
                "unknown collective `{name}` (all_gather, all_reduce, reduce_scatter, alltoall)"
            ))
        })?;
        let mut run = parse_nccl_tests(text)?;
        run.ranks = args.gpus.unwrap_or(run.ranks);
        run.measurements(collective)
    } else {
        parse_collective_csv(text)?
    };
    let options = PiecewiseOptions {
        max_segments: args.max_segments,
        ..PiecewiseOptions::default()
    };
    let plan = plan_collective_fits(&CollectiveFitSpec {
        measurements,
        options: Some(options),
    })?;
    if ctx.json {
        return print_json(&plan);
    }
    print_fits(&plan)?;
    Ok(())
}

fn print_segment(s: &SegmentPlan) -> Result<(), CliError> {
    let bus = s
        .bus_bandwidth_bytes_per_s
        .map_or_else(|| "-".to_string(), |b| format!("{}/s", format::bytes(b)));
    report!(
        "  {:>11} - {:<11} {:<15} alpha {:>11}  bus {:>12}  R^2 {:.4}  worst {:.1}%",
        format::bytes(s.min_bytes),
        format::bytes(s.max_bytes),
        format::json_name(&s.regime),
        format::duration(s.alpha_s),
        bus,
        s.r_squared,
        100.0 * s.max_relative_error
    )?;
    Ok(())
}

fn print_fits(plan: &CollectiveFitPlan) -> Result<(), CliError> {
    for fit in &plan.fits {
        report!(
            "{} on {} GPUs ({} samples)",
            format::json_name(&fit.collective),
            fit.gpus,
            fit.samples
        )?;
        fit.segments.iter().try_for_each(print_segment)?;
    }
    Ok(())
}

/// Fits the measurements and prints the fits.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let text = read_text(&args.measurements)?;
    let header: Vec<&str> = first_line(&text).split(',').map(str::trim).collect();
    if is_nccl_tests(&text) || header.contains(&"collective") {
        return fit_table(args, &text, ctx);
    }
    if header != ["bytes", "seconds"] {
        return Err(CliError::input(format!(
            "{}: expected a `bytes,seconds` or `collective,gpus,bytes,seconds` CSV header, or \
             nccl-tests output",
            display_name(&args.measurements)
        )));
    }
    let samples = read_samples(&text, &args.measurements)?;
    let report = plan_fit(&FitSpec { samples })?;
    if ctx.json {
        return print_json(&report);
    }
    report!("samples            {}", report.samples)?;
    report!("alpha              {}", format::duration(report.alpha_s))?;
    report!("beta               {:.4e} s/byte", report.beta_s_per_byte)?;
    match report.bandwidth_bytes_per_s {
        Some(b) => report!("bandwidth          {}/s", format::bytes(b))?,
        None => report!("bandwidth          not determined (fitted beta = 0)")?,
    }
    report!("R^2                {:.6}", report.r_squared)?;
    report!(
        "max |residual|     {}",
        format::duration(report.max_abs_residual_s)
    )?;
    report!("segments:")?;
    report.segments.iter().try_for_each(print_segment)?;
    Ok(())
}

//! `moe-planner schedule`: a contention-free all-to-all schedule for a traffic matrix
//! (Aurora §4.2 and §5.2), or a baseline order evaluated in the contention simulator.

use std::path::{Path, PathBuf};

use moe_planner::alltoall_sched::Algorithm;
use moe_planner::schedule::{GbpsSpec, SchedulePlan, ScheduleSpec, plan_schedule};

use crate::error::CliError;
use crate::format;
use crate::input::{parse_csv_rows, parse_json, read_matrix, read_text};
use crate::output::{Context, print_json, report};

/// Transfers listed in the human-readable report (all of them are in `--json`).
const REPORT_ROWS: usize = 40;

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner schedule --traffic examples/data/traffic_zipf8.csv
  moe-planner schedule --traffic examples/data/traffic_zipf8.csv --algorithm sjf --svg sjf.svg

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#schedule";

/// Arguments of `moe-planner schedule`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Traffic matrix in bytes: CSV (n rows of n numbers) or JSON `{"traffic": [[...]]}`.
    #[arg(long)]
    pub traffic: PathBuf,
    /// Bandwidth of every GPU in Gbps.
    #[arg(long, default_value_t = 100.0, conflicts_with = "bandwidths")]
    pub bandwidth_gbps: f64,
    /// File with one bandwidth per GPU in Gbps (CSV/whitespace numbers or a JSON array).
    #[arg(long)]
    pub bandwidths: Option<PathBuf>,
    /// Algorithm: optimal, aurora-greedy, non-preemptive, sjf, random, shift or nccl.
    #[arg(long, default_value = "optimal", value_parser = parse_algorithm)]
    pub algorithm: Algorithm,
    /// Seed of the randomized algorithms (aurora-greedy, random).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write a plot to this SVG file: the timetable per GPU as a Gantt chart, next to SJF on the same axis.
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    s.parse::<Algorithm>().map_err(|e| e.to_string())
}

/// Schedules the matrix and prints the plan.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let bandwidth_gbps = match &args.bandwidths {
        Some(path) => GbpsSpec::PerGpu(read_numbers(path)?),
        None => GbpsSpec::Uniform(args.bandwidth_gbps),
    };
    let spec = ScheduleSpec {
        traffic: read_matrix(&args.traffic)?,
        bandwidth_gbps,
        algorithm: args.algorithm,
        seed: args.seed,
    };
    let plan = plan_schedule(&spec)?;
    if let Some(path) = &args.svg {
        crate::plot::gantt::write_with_sjf(path, "All-to-all timetable per GPU", &spec, &plan)?;
    }
    if ctx.json {
        return print_json(&plan);
    }
    print_report(&plan)?;
    Ok(())
}

/// Reads a list of numbers: a JSON array, or CSV / whitespace-separated values.
fn read_numbers(path: &Path) -> Result<Vec<f64>, CliError> {
    let text = read_text(path)?;
    if text.trim_start().starts_with('[') {
        return parse_json(&text, path);
    }
    let commas = text.split_whitespace().collect::<Vec<_>>().join(",");
    Ok(parse_csv_rows(&commas, path)?.concat())
}

fn print_report(plan: &SchedulePlan) -> Result<(), CliError> {
    report!("algorithm:    {}", plan.algorithm)?;
    report!("lower bound:  {}", format::duration(plan.lower_bound_s))?;
    report!(
        "makespan:     {} ({:.4}x the bound)",
        format::duration(plan.makespan_s),
        plan.ratio_to_bound
    )?;
    report!(
        "pieces:       {} ({} non-zero pairs, the fewest possible)",
        plan.pieces,
        plan.nonzero_pairs
    )?;
    if plan.transfers.is_empty() {
        return Ok(());
    }
    report!("\n  src   dst         bytes         start           end")?;
    for t in plan.transfers.iter().take(REPORT_ROWS) {
        report!(
            "{:>5} {:>5} {:>13} {:>13} {:>13}",
            t.src,
            t.dst,
            format::bytes(t.bytes),
            format::duration(t.start_s),
            format::duration(t.end_s)
        )?;
    }
    if plan.transfers.len() > REPORT_ROWS {
        report!(
            "  ... {} more (use --json for all)",
            plan.transfers.len() - REPORT_ROWS
        )?;
    }
    Ok(())
}

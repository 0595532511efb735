//! `moe-planner`: plan MoE and LLM jobs on GPU clusters from the command line.
//!
//! Every subcommand reads plain files (JSON specs, CSV matrices), prints a human-readable report,
//! or with the global `--json` flag one JSON document on stdout. Errors print one line on stderr
//! and exit non-zero: 1 for bad input or an infeasible plan, 2 for a usage error (clap).
//! See `docs/cli.md` for every subcommand and file format.

// Issue 13: integer casts that may truncate, lose the sign or wrap are checked or justified
// where they appear, as in the library crates.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

mod commands;
mod error;
mod format;
mod input;
mod output;
mod plot;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Plan how Mixture-of-Experts and LLM jobs use GPU clusters.
#[derive(Debug, Parser)]
#[command(name = "moe-planner", version, about, long_about = None)]
struct Cli {
    /// Print one JSON document on stdout instead of a human-readable report.
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the end-to-end planners on the embedded default workload.
    Demo(commands::demo::Args),
    /// Contention-free all-to-all schedule for a traffic matrix (Aurora §4-5).
    Schedule(commands::schedule::Args),
    /// Replicate and place experts on GPUs (EPLB's job), with fewest-move rebalancing.
    Place(commands::place::Args),
    /// Is EPLB worth it: balance per number of redundant experts, and whether rebalancing the
    /// current placement now pays for its weight transfers.
    Advise(commands::advise::Args),
    /// Pair the experts of two models on shared GPUs (Aurora §6).
    Colocate(commands::colocate::Args),
    /// Plan an MoE inference deployment: colocation, GPU assignment and all-to-all order.
    Infer(commands::infer::Args),
    /// Plan MoE training: the best mapping and its step time, or one Parm layer's schedule.
    Train(commands::train::Args),
    /// Cut a heterogeneous cluster into expert-parallel groups (Aristos LysiGroup).
    Group(commands::group::Args),
    /// Count switches, transceivers and cost of rail-only vs rail-optimized fabrics.
    Network(commands::network::Args),
    /// Predict (or search for the best) LLM training iteration time on a cluster.
    Iteration(commands::iteration::Args),
    /// Fit an alpha-beta cost model to (bytes, seconds) measurements.
    Fit(commands::fit::Args),
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`| head`) would panic; let the
    // signal end the process quietly instead, as Unix filters do.
    sigpipe::reset();
    let cli = Cli::parse();
    let ctx = output::Context { json: cli.json };
    let result = match &cli.command {
        Command::Demo(args) => commands::demo::run(args, &ctx),
        Command::Schedule(args) => commands::schedule::run(args, &ctx),
        Command::Place(args) => commands::place::run(args, &ctx),
        Command::Advise(args) => commands::advise::run(args, &ctx),
        Command::Colocate(args) => commands::colocate::run(args, &ctx),
        Command::Infer(args) => commands::infer::run(args, &ctx),
        Command::Train(args) => commands::train::run(args, &ctx),
        Command::Group(args) => commands::group::run(args, &ctx),
        Command::Network(args) => commands::network::run(args, &ctx),
        Command::Iteration(args) => commands::iteration::run(args, &ctx),
        Command::Fit(args) => commands::fit::run(args, &ctx),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("moe-planner: error: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

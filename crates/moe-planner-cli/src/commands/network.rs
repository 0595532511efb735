//! `moe-planner network`: switches, transceivers and cost of rail-optimized vs rail-only fabrics
//! (rail-only paper §6.5, Table 2).

use std::path::PathBuf;

use moe_planner::network::{FabricSpec, plan_fabrics};
use moe_planner::rail_network::fabric::FabricCounts;

use crate::error::CliError;
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples:
  moe-planner network --gpus 32768 --hb-domain 256 --radix 64
  moe-planner network --gpus 32768 --hb-domain 256 --radix 64 --svg network.svg

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#network";

/// Arguments of `moe-planner network`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Total GPUs N.
    #[arg(long)]
    pub gpus: u64,
    /// GPUs per HB domain K (also the number of rails); must divide N.
    #[arg(long)]
    pub hb_domain: u64,
    /// Switch radix k (even).
    #[arg(long)]
    pub radix: u64,
    /// USD per transceiver.
    #[arg(long, default_value_t = 374.0)]
    pub transceiver_usd: f64,
    /// USD per switch port.
    #[arg(long, default_value_t = 748.0)]
    pub switch_port_usd: f64,
    /// Write a plot to this SVG file: both fabrics' cost against the HB-domain size K = 1, 2, 4, ....
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

fn row(name: &str, f: &FabricCounts) -> Result<(), CliError> {
    report!(
        "{name:<16} {:>5} {:>10} {:>13} {:>10}",
        f.tiers,
        f.switches,
        f.transceivers,
        crate::format::usd(f.cost_usd)
    )?;
    Ok(())
}

/// Counts both fabrics and prints them.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let spec = FabricSpec {
        transceiver_usd: args.transceiver_usd,
        switch_port_usd: args.switch_port_usd,
        ..FabricSpec::new(args.gpus, args.hb_domain, args.radix)
    };
    let cmp = plan_fabrics(&spec)?;
    if let Some(path) = &args.svg {
        crate::plot::sweep::write_cost_sweep(path, &spec)?;
    }
    if ctx.json {
        return print_json(&cmp);
    }
    report!(
        "N = {}, K = {}, radix = {}",
        args.gpus,
        args.hb_domain,
        args.radix
    )?;
    report!(
        "{:<16} {:>5} {:>10} {:>13} {:>10}",
        "fabric",
        "tiers",
        "switches",
        "transceivers",
        "cost"
    )?;
    row("rail-optimized", &cmp.rail_optimized)?;
    row("rail-only", &cmp.rail_only)?;
    report!("cost reduction   {:.1}%", cmp.cost_reduction * 100.0)?;
    Ok(())
}

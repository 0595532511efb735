//! `moe-planner group`: cut a heterogeneous cluster into expert-parallel groups (Aristos
//! LysiGroup) and compare the naive groupings on the same objective.

use std::path::PathBuf;

use moe_planner::grouping::{GroupSpec, plan_groups};
use moe_planner::topology_partition::Partition;

use crate::error::CliError;
use crate::format;
use crate::input::read_json;
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner group --spec examples/data/perlmutter_group.json

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#group";

/// Arguments of `moe-planner group`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// JSON group spec: cluster, experts, training constants (see the docs linked below).
    #[arg(long)]
    pub spec: PathBuf,
}

fn seconds(t: f64) -> String {
    if t.is_finite() {
        format::duration(t)
    } else {
        "infeasible".to_string()
    }
}

/// How a baseline's largest T(g) compares with LysiGroup's, in words.
pub(crate) fn ratio_words(ratio: f64) -> String {
    if (ratio - 1.0).abs() < 5e-4 {
        format!("{ratio:.3}x LysiGroup's (equal)")
    } else if ratio > 1.0 {
        format!(
            "{ratio:.3}x LysiGroup's ({:.0}% slower)",
            (ratio - 1.0) * 100.0
        )
    } else {
        format!(
            "{ratio:.3}x LysiGroup's ({:.0}% faster)",
            (1.0 - ratio) * 100.0
        )
    }
}

/// `1 group`, `4 groups`.
fn groups(n: usize) -> String {
    if n == 1 {
        String::from("1 group")
    } else {
        format!("{n} groups")
    }
}

fn print_groups(p: &Partition) -> Result<(), CliError> {
    for (g, (members, t)) in p.groups.iter().zip(&p.objective_s).enumerate() {
        report!("  group {g:<3} T = {:<12} workers {members:?}", seconds(*t))?;
    }
    Ok(())
}

/// Reads the spec, runs LysiGroup and the baselines, and prints the plan.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let spec: GroupSpec = read_json(&args.spec)?;
    let plan = plan_groups(&spec)?;
    if ctx.json {
        return print_json(&plan);
    }
    report!(
        "LysiGroup: {}, iteration objective max T(g) = {} (T(g): a group's time per step, \
         compute plus communication of its slowest member)",
        groups(plan.partition.groups.len()),
        seconds(plan.max_objective_s)
    )?;
    print_groups(&plan.partition)?;
    report!("baselines on the same objective:")?;
    for b in &plan.baselines {
        let ratio = b
            .ratio_to_lysigroup
            .map_or("infeasible".to_string(), ratio_words);
        report!(
            "  {:<17} {:<10} max T = {:<12} {ratio}",
            b.name,
            groups(b.partition.groups.len()),
            seconds(b.partition.max_objective_s())
        )?;
    }
    report!(
        "LysiAssign ({}) inside each group: expert compute time vs the FLOPS-proportional bound \
         and Algorithm 2 as written (paper):",
        plan.assign.name()
    )?;
    for (g, members) in plan.partition.groups.iter().enumerate() {
        let counts: Vec<String> = members
            .iter()
            .map(|&w| format!("{w}:{}", plan.experts_of_gpu[w].len()))
            .collect();
        report!(
            "  group {g:<3} {} vs bound {}, paper {}   experts per worker {}",
            seconds(plan.assignment_compute_s[g]),
            seconds(plan.assignment_lower_bound_s[g]),
            seconds(plan.paper_assignment_compute_s[g]),
            counts.join(" ")
        )?;
    }
    Ok(())
}

//! The cost models against real NCCL and DeepEP measurements: prints the tables of
//! docs/reproduction.md "Measured hardware".
//!
//! Data: `examples/data/measured/` (NVIDIA aiconfigurator-core 0.12.0, Apache-2.0; see the README
//! there). Run with `cargo run -p moe-planner-examples --example measured_hardware`.

use moe_planner::comm_cost_model::gpu_scaling::Collective;
use moe_planner::fitting::{CollectiveFitSpec, plan_collective_fits};
use moe_planner::measured::{
    link_fit, parse_collective_csv, parse_deepep_csv, plan_deepep_validation, plan_nccl_validation,
};

const TABLES: [(&str, &str); 2] = [
    (
        "H100 SXM (NCCL 2.29.2)",
        include_str!("../data/measured/nccl_h100_sxm.csv"),
    ),
    (
        "A100 SXM (NCCL 2.27.3)",
        include_str!("../data/measured/nccl_a100_sxm.csv"),
    ),
];
const DEEPEP: &str = include_str!("../data/measured/deepep_h100_sxm.csv");

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn main() -> Result<(), moe_planner::PlanError> {
    for (name, text) in TABLES {
        let measurements = parse_collective_csv(text)?;
        println!("\n### {name}: piecewise fits on 8 GPUs\n");
        println!(
            "| collective | segment (bytes) | regime | alpha (us) | bus bandwidth (GB/s) | R^2 | worst residual |"
        );
        println!("|---|---|---|---|---|---|---|");
        let plan = plan_collective_fits(&CollectiveFitSpec {
            measurements: measurements.clone(),
            options: None,
        })?;
        for fit in plan.fits.iter().filter(|f| f.gpus == 8) {
            for s in &fit.segments {
                println!(
                    "| {:?} | {:.0} - {:.0} | {:?} | {:.1} | {:.0} | {:.3} | {} |",
                    fit.collective,
                    s.min_bytes,
                    s.max_bytes,
                    s.regime,
                    s.alpha_s * 1e6,
                    s.bus_bandwidth_bytes_per_s.unwrap_or(f64::INFINITY) / 1e9,
                    s.r_squared,
                    pct(s.max_relative_error)
                );
            }
        }
        println!("\n### {name}: held-out error\n");
        println!("| collective | split | samples fitted | held out | median | worst |");
        println!("|---|---|---|---|---|---|");
        for r in plan_nccl_validation(&measurements)? {
            println!(
                "| {:?} | {} | {} | {} | {} | {} |",
                r.collective,
                r.split,
                r.fitted,
                r.held_out.count,
                pct(r.held_out.median),
                pct(r.held_out.worst)
            );
        }
    }
    let h100 = parse_collective_csv(TABLES[0].1)?;
    let link = link_fit(&h100, Collective::AllToAll, 8)?;
    println!("\n### DeepEP on one 8-GPU H100 node (SGLang 0.5.12)\n");
    println!(
        "| kernels | phase | NCCL link only: median / worst | overhead + link: median / worst | own fit, held-out shapes: median / worst | fitted overhead (us), bandwidth (GB/s) by segment |"
    );
    println!("|---|---|---|---|---|---|");
    for r in plan_deepep_validation(&parse_deepep_csv(DEEPEP)?, &link)? {
        let segments: Vec<String> = r
            .fit
            .segments
            .iter()
            .map(|s| format!("{:.1}, {:.0}", s.alpha_s * 1e6, 1e-9 / s.beta_s_per_byte))
            .collect();
        println!(
            "| {:?} | {} | {} / {} | {} / {} (overhead {:.1} us) | {} / {} | {} |",
            r.mode,
            r.phase,
            pct(r.link_only.median),
            pct(r.link_only.worst),
            pct(r.overhead_plus_link.median),
            pct(r.overhead_plus_link.worst),
            r.overhead_s * 1e6,
            pct(r.held_out.median),
            pct(r.held_out.worst),
            segments.join("; ")
        );
    }
    Ok(())
}

//! The iteration-time model against published measurements: the rail-only paper's Table 4
//! (computed column and Korthikanti et al.'s measurements), the Megatron-LM runs of Narayanan
//! et al. Table 1, then the calibrated model with its leave-one-out errors.
//!
//! Run: `cargo run --release -p moe-planner-examples --example llm_iteration_time`

use rail_network::RailNetworkError;
use rail_network::accuracy::{
    AccuracyRow, accuracy_table, calibrate, leave_one_out, mean_absolute_error, published_runs,
};
use rail_network::compute::ComputeModel;
use rail_network::system::system_preset;

fn print_rows(title: &str, rows: &[AccuracyRow]) -> Result<(), RailNetworkError> {
    println!("{title}");
    println!("run            measured   paper    ours   vs measured   vs paper");
    for r in rows {
        let paper = r
            .paper_computed_s
            .map_or("     -".to_string(), |p| format!("{p:6.2}"));
        let vs_paper = r
            .error_vs_paper
            .map_or("     -".to_string(), |e| format!("{:+6.1}%", e * 100.0));
        println!(
            "{:<13} {:8.2} {paper} {:7.2}      {:+6.1}%    {vs_paper}",
            r.label,
            r.measured_s,
            r.predicted_s,
            r.error_vs_measured * 100.0
        );
    }
    println!(
        "mean |error| vs measured: {:.1}%\n",
        mean_absolute_error(rows)? * 100.0
    );
    Ok(())
}

fn main() -> Result<(), RailNetworkError> {
    let sys = system_preset("dgx-a100")?;
    let runs = published_runs()?;
    let paper = ComputeModel::paper();
    print_rows(
        "One assumption set for every row (ComputeModel::paper on dgx-a100):",
        &accuracy_table(&runs, &sys, &paper)?,
    )?;

    let fitted = calibrate(&runs, &sys, &paper)?;
    println!(
        "calibrated on all 9 runs: GEMM efficiency {:.3}, half-efficiency hidden {:.0}, attention slowdown {:.3}",
        fitted.gemm_efficiency, fitted.half_efficiency_hidden, fitted.attention_slowdown
    );
    print_rows(
        "Calibrated (in-sample):",
        &accuracy_table(&runs, &sys, &fitted)?,
    )?;

    println!("Leave-one-out (fit on the other 8, predict the held-out run):");
    println!("run            measured  predicted   error   eff   half   gamma");
    let loo = leave_one_out(&runs, &sys, &paper)?;
    for r in &loo {
        println!(
            "{:<13} {:8.2} {:9.2} {:+7.1}%  {:.3} {:6.0} {:6.3}",
            r.label,
            r.measured_s,
            r.predicted_s,
            r.error * 100.0,
            r.fitted.gemm_efficiency,
            r.fitted.half_efficiency_hidden,
            r.fitted.attention_slowdown
        );
    }
    let mae = loo.iter().map(|r| r.error.abs()).sum::<f64>() / loo.len() as f64;
    println!(
        "leave-one-out mean |error|: {:.1}% (target <= 8%)",
        mae * 100.0
    );
    Ok(())
}

//! The iteration-time model's accuracy in-sample and on held-out published runs: prints the
//! tables of docs/reproduction.md "Iteration model: in-sample and held-out accuracy".
//!
//! Run with `cargo run --release -p moe-planner-examples --example iteration_held_out`.

use rail_network::accuracy::{
    accuracy_table, held_out_runs, leave_one_out, mean_absolute_error, published_runs,
};
use rail_network::compute::ComputeModel;
use rail_network::model::Recompute;
use rail_network::system::system_preset;

fn main() -> Result<(), rail_network::RailNetworkError> {
    let sys = system_preset("dgx-a100")?;
    let calibrated = ComputeModel::calibrated();
    let in_sample = accuracy_table(&published_runs()?, &sys, &calibrated)?;
    println!(
        "in-sample (the 9 calibration runs): mean |error| {:.1}%",
        100.0 * mean_absolute_error(&in_sample)?
    );
    let loo = leave_one_out(&published_runs()?, &sys, &ComputeModel::paper())?;
    let loo_mae = loo.iter().map(|r| r.error.abs()).sum::<f64>() / loo.len() as f64;
    println!(
        "leave-one-out over the same 9 runs: mean |error| {:.1}%",
        100.0 * loo_mae
    );
    let paper = ComputeModel {
        recompute: Recompute::Full,
        ..ComputeModel::paper()
    };
    let held = held_out_runs()?;
    let p = accuracy_table(&held, &sys, &paper)?;
    let c = accuracy_table(&held, &sys, &calibrated)?;
    println!("\n| run | measured (s) | paper model (s) | error | calibrated (s) | error |");
    println!("|---|---|---|---|---|---|");
    for (a, b) in p.iter().zip(&c) {
        println!(
            "| {} | {:.2} | {:.2} | {:+.1}% | {:.2} | {:+.1}% |",
            a.label,
            a.measured_s,
            a.predicted_s,
            100.0 * a.error_vs_measured,
            b.predicted_s,
            100.0 * b.error_vs_measured
        );
    }
    println!(
        "\nheld-out mean |error|: paper {:.1}%, calibrated {:.1}%",
        100.0 * mean_absolute_error(&p)?,
        100.0 * mean_absolute_error(&c)?
    );
    Ok(())
}

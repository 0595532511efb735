//! MoE training end to end (issue 21): the presets' parameter counts and the predictions of
//! the published runs (`rail_network::moe`); the ranks among our mappings need the search and
//! are printed by `cargo test -p rail-network --release moe::validation -- --ignored
//! --nocapture`.

use crate::tables::{Drift, Table};
use rail_network::moe::validation::{held_out_errors, published_runs};
use rail_network::moe::{ComputeEfficiency, moe_model_preset};

/// `1,002`: an integer with thousands separators, as the doc prints them.
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

/// `46.703B` or `1.026T`.
fn billions(x: f64) -> String {
    if x >= 1e12 {
        format!("{:.3}T", x / 1e12)
    } else {
        format!("{:.3}B", x / 1e9)
    }
}

#[test]
fn preset_parameter_counts_match_the_code() {
    let t = Table::after(
        "### Parameter counts of the presets",
        "| preset | published total / active | ours (total / active counted as published) | error (total / active) |",
    );
    let mut drift = Drift::new("MoE training, parameter counts of the presets");
    // DeepSeek counts activated parameters without the input embedding; the others with it.
    for (name, without_embedding) in [
        ("mixtral-8x7b", false),
        ("mixtral-8x22b", false),
        ("deepseek-v3", true),
        ("qwen3-235b-a22b", false),
        ("qwen2-57b-a14b", false),
        ("qwen3-30b-a3b", false),
        ("kimi-k2", false),
        ("llama4-scout", false),
    ] {
        let p = moe_model_preset(name)
            .and_then(|m| m.parameters())
            .expect("preset");
        let active = if without_embedding {
            p.active_without_embedding
        } else {
            p.active
        };
        let row = t.row_starting(&format!("`{name}`"));
        drift.cell_start(
            row,
            2,
            &format!("{} / {}", billions(p.total), billions(active)),
        );
        if name == "kimi-k2" {
            drift.cell_start(
                row,
                2,
                &format!(
                    "{} / {} ({} without embedding)",
                    billions(p.total),
                    billions(p.active),
                    billions(p.active_without_embedding)
                ),
            );
        }
    }
    drift.finish();
}

#[test]
fn published_run_predictions_match_the_code() {
    let c = ComputeEfficiency::calibrated();
    let (rows, median, worst) =
        held_out_errors(&published_runs(), &c).expect("the published runs evaluate");
    let t = Table::after(
        "### Held-out validation on published runs",
        "| run | source | mapping (TP CP PP VP EP, mb) and strategy | published tok/s/GPU | ours | error | rank of its time among our fitting mappings | our best mapping (tok/s/GPU) | memory (ours) |",
    );
    let mut drift = Drift::new("MoE training, held-out validation on published runs");
    // The doc lists the runs in `published_runs()` order; the published column checks that.
    assert_eq!(t.rows_len(), rows.len(), "one doc row per published run");
    for (i, r) in rows.iter().enumerate() {
        let row = t.row_at(i);
        let error = format!("{:+.1}%", 100.0 * r.relative_error);
        let error = if r.calibration {
            format!("{error} (fit)")
        } else {
            error
        };
        drift.cells(
            row,
            &[3, 4, 5, 8],
            &[
                thousands(r.published_tokens_per_s_per_gpu),
                thousands(r.predicted_tokens_per_s_per_gpu),
                error,
                format!("{:.1} GB", r.evaluation.memory.total_bytes / 1e9),
            ],
        );
    }
    drift.text(&format!(
        "median absolute error {:.1}%, worst {:.1}%",
        100.0 * median,
        100.0 * worst
    ));
    drift.text(&format!(
        "BF16 GEMMs at **{:.1}%** of the BF16 peak",
        100.0 * c.gemm_efficiency
    ));
    drift.text(&format!(
        "FP8 GEMMs at **{:.1}%** of the FP8 peak",
        100.0 * c.fp8_gemm_efficiency
    ));
    drift.finish();
}

//! MoE training end to end (issue 21): the presets' parameter counts and the predictions of
//! the published runs (`rail_network::moe`); the ranks among our mappings need the search and
//! are printed by `cargo test -p rail-network --release moe::validation -- --ignored
//! --nocapture`.

use crate::tables::{Drift, Table};
use rail_network::moe::validation::{held_out_errors, published_runs, step_model};
use rail_network::moe::{ComputeEfficiency, MoeSearchOptions, moe_model_preset, search_mappings};

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

/// Each run's rank among our fitting mappings and our best mapping's throughput need a search
/// per run (about a minute in release, far longer in debug): run with
/// `cargo test --release -p moe-planner-examples --test docs_reproduction -- --ignored`.
/// (`rail_network`'s `print_reproduction_table` prints the same rows with every term.)
#[test]
#[ignore = "a mapping search per run; scripts/check-docs --release runs it"]
fn published_run_ranks_match_the_code() {
    let c = ComputeEfficiency::calibrated();
    let runs = published_runs();
    let (rows, _, _) = held_out_errors(&runs, &c).expect("the published runs evaluate");
    let t = Table::after(
        "### Held-out validation on published runs",
        "| run | source | mapping (TP CP PP VP EP, mb) and strategy | published tok/s/GPU | ours | error | rank of its time among our fitting mappings | our best mapping (tok/s/GPU) | memory (ours) |",
    );
    let mut drift = Drift::new("MoE training, ranks among our mappings");
    for (i, (run, row)) in runs.iter().zip(&rows).enumerate() {
        let sm = step_model(run, &c).expect("step model");
        let options = MoeSearchOptions {
            keep: 100_000,
            ..MoeSearchOptions::default()
        };
        let result = search_mappings(&sm, run.gpus, run.global_batch, &options).expect("search");
        let step = row.evaluation.terms.step_time_s;
        let rank = 1 + result
            .ranked
            .iter()
            .filter(|e| e.terms.step_time_s < step)
            .count();
        let doc = t.row_at(i);
        drift.cells(
            doc,
            &[6],
            &[format!(
                "{} of {}",
                thousands(rank as f64),
                thousands(result.fitting as f64)
            )],
        );
        // "our best mapping" ends with its throughput, or says the published one is the best.
        let best = result
            .ranked
            .first()
            .map_or(0.0, |e| e.tokens_per_s_per_gpu);
        let cell = doc.get(7).map_or("", String::as_str);
        let computed = format!("({})", thousands(best));
        if rank == 1 {
            drift.value(
                &format!("{}: our best mapping", row.name),
                cell,
                "the published one",
            );
        } else {
            drift.value(
                &format!("{}: our best mapping's tok/s/GPU", row.name),
                cell.rsplit(' ').next().unwrap_or(""),
                &computed,
            );
        }
    }
    drift.finish();
}

//! Writes the embedded DeepSeek-like expert-load workload to `examples/data/placement/`.
//!
//! 58 MoE layers x 256 routed experts (DeepSeek-V3's shape); each layer's loads are log-normal
//! with sigma = 1.0 (DeepEP PR 393 reports that a log-normal fits DeepSeek-V3's per-rank loads
//! best; sigma = 1.0 is our assumption, not a fitted value), scaled to 131,072 routed tokens per
//! layer (a window of 16,384 tokens, top-8 routing) and rounded; seed 2026. The file is SGLang's
//! expert-distribution format, `{"logical_count": [[...]]}`.
//!
//! Run: `cargo run --release -p moe-planner-examples --example deepseek_like_workload`
use expert_placement::lognormal_loads;

/// Layers of the workload (DeepSeek-V3's MoE layers).
const LAYERS: usize = 58;
/// Routed experts per layer.
const EXPERTS: usize = 256;
/// Log-normal shape parameter.
const SIGMA: f64 = 1.0;
/// Routed tokens per layer in the window.
const TOKENS: f64 = 131_072.0;
/// Seed of the portable generator.
const SEED: u64 = 2026;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let loads = lognormal_loads(LAYERS, EXPERTS, SIGMA, TOKENS, SEED)?;
    let rows: Vec<String> = loads
        .iter()
        .map(|row| {
            let cells: Vec<String> = row.iter().map(|w| format!("{w:.0}")).collect();
            format!("[{}]", cells.join(","))
        })
        .collect();
    let text = format!("{{\"logical_count\": [\n{}\n]}}\n", rows.join(",\n"));
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/moe-planner-cli/data/deepseek_like_loads.json"
    );
    std::fs::write(path, text)?;
    println!("wrote {LAYERS} x {EXPERTS} loads to {path}");
    Ok(())
}

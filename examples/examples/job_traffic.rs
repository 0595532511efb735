//! Per-GPU-pair traffic of GPT-1T training (rail-only, Wang et al., §3, Fig. 3–5): idle pairs,
//! bytes by type, and whether any network byte leaves its rail.
//!
//! Run with `cargo run --release -p moe-planner-examples --example job_traffic`.

use rail_network::RailNetworkError;
use rail_network::mapping::RankMapping;
use rail_network::model::model_preset;
use rail_network::parallel::Parallelization;
use rail_network::traffic::{CollectiveAlgorithm, TrafficSummary, job_traffic};

fn print(title: &str, s: &TrafficSummary) {
    println!("{title}");
    println!(
        "  GPU pairs carrying nothing       {:.4}% of {} ordered pairs",
        100.0 * s.idle_pair_fraction,
        s.ordered_pairs
    );
    for k in s.by_kind.iter().filter(|k| k.bytes > 0.0) {
        println!(
            "  {:<18} {:>6.2}% of bytes, {:>6.2}% inside HB domains, {:.5}% of pairs",
            format!("{:?}", k.kind),
            100.0 * k.share,
            100.0 * k.hb_bytes / k.bytes,
            100.0 * k.pairs as f64 / s.ordered_pairs as f64
        );
    }
    println!(
        "  total {:.1} TB: {:.2}% inside HB domains; network bytes crossing rails: {} ({:.0} B)\n",
        s.total_bytes / 1e12,
        100.0 * s.hb_bytes / s.total_bytes,
        s.crosses_rails,
        s.cross_rail_network_bytes
    );
}

fn run(
    title: &str,
    gpus: u64,
    k: u64,
    par: Parallelization,
    algorithm: CollectiveAlgorithm,
) -> Result<(), RailNetworkError> {
    let map = RankMapping::new(&model_preset("gpt-1t")?, &par, gpus, k)?;
    print(title, &job_traffic(&map, algorithm).summary()?);
    Ok(())
}

fn main() -> Result<(), RailNetworkError> {
    // MegatronLM Table 1: GPT-1T on 3072 A100 (DGX, K = 8), t = 8, p = 64, batch 3072.
    let dgx = Parallelization::with_default_mapping(8, 64, 6, 1, 3072, 1, 8)?;
    run(
        "GPT-1T, 3072 GPUs in DGX A100 (K = 8), ring collectives (rail-only Fig. 3-4)",
        3072,
        8,
        dgx,
        CollectiveAlgorithm::Ring,
    )?;
    // Rail-only §3.2: 16 GH200 (K = 256), batch 4096, d = 64 = 32 in-domain x 2 domains.
    let gh200 = Parallelization::with_default_mapping(8, 8, 64, 1, 4096, 1, 256)?;
    for (name, algorithm) in [
        ("hierarchical", CollectiveAlgorithm::Hierarchical),
        ("flat ring", CollectiveAlgorithm::Ring),
    ] {
        run(
            &format!("GPT-1T, 4096 GPUs in 16 GH200 (K = 256), {name} collectives (Fig. 5)"),
            4096,
            256,
            gh200,
            algorithm,
        )?;
    }
    Ok(())
}

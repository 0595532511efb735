//! Time of the EPLB drop-in's Rust core on the DeepSeek-shaped input (58 layers x 256 experts,
//! 288 replicas on 32 GPUs), to compare with `bench/bench_rebalance.py`, which times the Python
//! call on the same loads.
//!
//! `cargo run --release -p moe-planner-py --example drop_in_timing`

use std::time::Instant;

use _native::eplb::rebalance_experts;

/// Zipf-shaped loads (exponent 1), permuted differently in every layer; integers, so the Python
/// bench builds exactly the same array.
fn loads() -> Vec<Vec<f64>> {
    (0..58u64)
        .map(|l| {
            (0..256u64)
                .map(|e| (25_600 / (1 + (e * 37 + l * 11) % 256)) as f64)
                .collect()
        })
        .collect()
}

fn main() -> Result<(), moe_planner::PlanError> {
    let w = loads();
    for (name, groups, nodes) in [
        ("global (1 node)", 1, 1),
        ("node-aware (8 groups, 4 nodes)", 8, 4),
    ] {
        rebalance_experts(w.clone(), 288, groups, nodes, 32)?; // warm-up
        let mut times: Vec<f64> = (0..11)
            .map(|_| {
                let start = Instant::now();
                let t = rebalance_experts(w.clone(), 288, groups, nodes, 32);
                let elapsed = start.elapsed().as_secs_f64();
                assert!(t.is_ok());
                elapsed
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!("{name}: median {:.2} ms over 11 runs", times[5] * 1e3);
    }
    Ok(())
}

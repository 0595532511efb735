//! Expert replication and placement (the job of DeepSeek's EPLB) at DeepSeek-V3 scale.
//!
//! Part 1 reproduces the published examples (vLLM PR 37656, deepseek-ai/EPLB's README). Part 2
//! compares the optimal planner with EPLB's two policies on 58 layers x 256 experts placed on 32
//! GPUs x 9 slots in 4 nodes, with log-normal (sigma = 1) and Zipf(1.0) loads: busiest GPU over
//! the mean, gap to the certified lower bound, duplicates, time. Part 3 drifts every load by 20%
//! (log-normal noise) and compares fewest-move rebalancing with EPLB's fresh plan. Part 4 plans
//! against four windows at once, part 5 splits one batch's tokens over the replicas, part 6
//! places one layer of 4096 experts on 1024 GPUs. Run with
//! `cargo run --release -p moe-planner-examples --example expert_placement`.

use std::time::Instant;

use comm_cost_model::seeded_rng;
use expert_placement::{
    EplbPolicy, LayerLoads, Placement, PlacementAlgorithm, PlacementCluster, RobustObjective,
    count_moves, drift_loads, eplb, lognormal_loads, place, place_layers, place_robust, rebalance,
    rebalance_experts, split_tokens, zipf_loads,
};
use rand::RngExt;

type Error = Box<dyn std::error::Error>;

/// Mean load per expert of every synthetic layer, in tokens.
const TOKENS_PER_EXPERT: f64 = 1000.0;

/// `layers` x `experts` log-normal loads (shared generator, 1000 tokens per expert on average).
fn log_normal(
    layers: usize,
    experts: usize,
    sigma: f64,
    seed: u64,
) -> Result<Vec<Vec<f64>>, Error> {
    Ok(lognormal_loads(
        layers,
        experts,
        sigma,
        TOKENS_PER_EXPERT * experts as f64,
        seed,
    )?)
}

fn published() -> Result<(), Error> {
    println!("Part 1: published examples (maximum GPU load; bound; gap)");
    let c = PlacementCluster::uniform(8, 2, 1)?;
    let w = LayerLoads::new(vec![600., 560., 120., 120., 20., 10., 10., 10.])?;
    let o = place(&w, &c, PlacementAlgorithm::Optimal)?;
    let e = eplb(&w, &c, EplbPolicy::Global)?;
    println!(
        "  vLLM PR 37656, 8 GPUs x 2 slots: optimal {:.4} (590/3 = {:.4}; bound {:.4}), EPLB {} (PR: 232; improved heuristic 205)",
        o.max_gpu_load,
        590.0 / 3.0,
        o.lower_bound,
        e.max_gpu_load
    );
    let readme = vec![
        vec![
            90., 132., 40., 61., 104., 165., 39., 4., 73., 56., 183., 86.,
        ],
        vec![
            20., 107., 104., 64., 19., 197., 187., 157., 172., 86., 16., 27.,
        ],
    ];
    let t = rebalance_experts(&readme, 16, 4, 2, 8)?;
    println!(
        "  EPLB README layer 0 physical_to_logical: {:?}",
        t.physical_to_logical[0]
    );
    let c = PlacementCluster::uniform(8, 2, 2)?;
    for (l, w) in LayerLoads::layers(readme)?.iter().enumerate() {
        let o = place(w, &c, PlacementAlgorithm::Optimal)?;
        let g = eplb(w, &c, EplbPolicy::Global)?;
        let h = eplb(w, &c, EplbPolicy::Hierarchical { groups: 4 })?;
        println!(
            "  EPLB README layer {l}: optimal {} (bound {}), EPLB global {} ({} dup), hierarchical {} ({} dup)",
            o.max_gpu_load,
            o.lower_bound,
            g.max_gpu_load,
            g.duplicates_on_gpu,
            h.max_gpu_load,
            h.duplicates_on_gpu
        );
    }
    Ok(())
}

struct Summary {
    mean_ratio: f64,
    worst_ratio: f64,
    mean_gap: f64,
    worst_gap: f64,
    duplicates: usize,
}

fn summarize(plans: &[Placement]) -> Summary {
    let n = plans.len() as f64;
    Summary {
        mean_ratio: plans.iter().map(Placement::imbalance).sum::<f64>() / n,
        worst_ratio: plans.iter().map(Placement::imbalance).fold(0.0, f64::max),
        mean_gap: plans.iter().map(Placement::gap).sum::<f64>() / n,
        worst_gap: plans.iter().map(Placement::gap).fold(0.0, f64::max),
        duplicates: plans.iter().map(|p| p.duplicates_on_gpu).sum(),
    }
}

fn compare(name: &str, layers: &[LayerLoads], cluster: &PlacementCluster) -> Result<(), Error> {
    println!(
        "\nPart 2, {name}: {} layers x {} experts, {} slots on {} GPUs in {} nodes, 8 groups",
        layers.len(),
        layers[0].len(),
        cluster.total_slots(),
        cluster.gpus(),
        cluster.nodes()
    );
    println!(
        "  {:<20} {:>9} {:>9} {:>9} {:>9} {:>5} {:>10}",
        "algorithm", "max/mean", "worst", "gap", "worst gap", "dups", "time"
    );
    let algorithms = [
        PlacementAlgorithm::Optimal,
        PlacementAlgorithm::OptimalNodeAware { groups: 8 },
        PlacementAlgorithm::Eplb(EplbPolicy::Global),
        PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups: 8 }),
    ];
    let mut all = Vec::new();
    for a in algorithms {
        let t = Instant::now();
        let plans = place_layers(layers, cluster, a)?;
        let dt = t.elapsed();
        let s = summarize(&plans);
        println!(
            "  {:<20} {:>9.4} {:>9.4} {:>8.3}% {:>8.3}% {:>5} {:>8.1}ms",
            a.name(),
            s.mean_ratio,
            s.worst_ratio,
            100.0 * s.mean_gap,
            100.0 * s.worst_gap,
            s.duplicates,
            dt.as_secs_f64() * 1e3
        );
        all.push(plans);
    }
    let worse = |ours: usize, theirs: usize| {
        (0..layers.len())
            .filter(|&l| all[ours][l].max_gpu_load > all[theirs][l].max_gpu_load * (1.0 + 1e-12))
            .count()
    };
    let clean_worse = (0..layers.len())
        .filter(|&l| {
            all[3][l].duplicates_on_gpu == 0
                && all[1][l].max_gpu_load > all[3][l].max_gpu_load * (1.0 + 1e-12)
        })
        .count();
    println!(
        "  layers where optimal is worse than EPLB global: {}, hierarchical: {}; node-aware worse than hierarchical: {} ({} of them without EPLB duplicates)",
        worse(0, 2),
        worse(0, 3),
        worse(1, 3),
        clean_worse
    );
    Ok(())
}

fn rebalancing(old: &[Vec<f64>], cluster: &PlacementCluster) -> Result<(), Error> {
    let new = LayerLoads::layers(drift_loads(old, 0.2, 7)?)?;
    let old = LayerLoads::layers(old.to_vec())?;
    let experts = old[0].len();
    let n = old.len() as f64;
    let (mut stay, mut ours, mut ours_moves, mut fresh_moves) = (0.0, 0.0, 0, 0);
    let (mut at_eplb_moves, mut eplb, mut eplb_moves, mut worse) = (0, 0.0, 0, 0);
    let t = Instant::now();
    for (o, w) in old.iter().zip(&new) {
        let current = place(o, cluster, PlacementAlgorithm::Optimal)?;
        let r = rebalance(&current.physical_to_logical, w, cluster, 0.0)?;
        let e_old = self::eplb(o, cluster, EplbPolicy::Global)?;
        let e_new = self::eplb(w, cluster, EplbPolicy::Global)?;
        // Fewest moves at a maximum load no higher than EPLB's fresh plan.
        let eps = (e_new.max_gpu_load / r.best_max_gpu_load - 1.0).max(0.0);
        let at_eplb = rebalance(&current.physical_to_logical, w, cluster, eps)?;
        stay += r.tradeoff[0].max_gpu_load / r.placement.mean_gpu_load();
        ours += r.placement.imbalance();
        ours_moves += r.moves;
        fresh_moves += r.fresh_moves;
        at_eplb_moves += at_eplb.moves;
        eplb += e_new.imbalance();
        eplb_moves += count_moves(
            &e_old.physical_to_logical,
            &e_new.physical_to_logical,
            cluster,
            experts,
        )?;
        worse += usize::from(at_eplb.placement.max_gpu_load > e_new.max_gpu_load);
    }
    println!(
        "\nPart 3, rebalance after 20% log-normal drift ({} layers, log-normal loads), {:.0} ms",
        old.len(),
        t.elapsed().as_secs_f64() * 1e3
    );
    println!(
        "  no move:                         max/mean {:.4}",
        stay / n
    );
    println!(
        "  ours, tolerance 0:               max/mean {:.4}, {:.1} moves/layer (fresh optimal, GPUs relabeled: {:.1})",
        ours / n,
        ours_moves as f64 / n,
        fresh_moves as f64 / n
    );
    println!(
        "  ours, at EPLB's max load:        {:.1} moves/layer ({worse} layers above EPLB)",
        at_eplb_moves as f64 / n
    );
    println!(
        "  EPLB global, fresh plan:         max/mean {:.4}, {:.1} moves/layer; ratio {:.1}x",
        eplb / n,
        eplb_moves as f64 / n,
        eplb_moves as f64 / at_eplb_moves.max(1) as f64
    );
    Ok(())
}

fn robust(base: &[Vec<f64>], cluster: &PlacementCluster) -> Result<(), Error> {
    println!("\nPart 4, four windows (20% drift each), first 8 layers: worst window max/mean");
    for (l, layer) in base.iter().take(8).enumerate() {
        let windows = LayerLoads::layers(
            (0..4)
                .map(|k| Ok(drift_loads(std::slice::from_ref(layer), 0.2, 100 + k)?.remove(0)))
                .collect::<Result<Vec<_>, Error>>()?,
        )?;
        let mean = windows.iter().map(LayerLoads::total).sum::<f64>()
            / windows.len() as f64
            / cluster.gpus() as f64;
        let r = place_robust(&windows, cluster, RobustObjective::Worst)?;
        println!(
            "  layer {l}: robust {:.4}, newest window only {:.4}, bound {:.4}",
            r.objective_value / mean,
            r.newest_only_objective_value / mean,
            r.lower_bound / mean
        );
    }
    Ok(())
}

fn token_split(layers: &[LayerLoads], cluster: &PlacementCluster) -> Result<(), Error> {
    let mut rng = seeded_rng(9, 0);
    let (mut even, mut balanced) = (0.0, 0.0);
    for w in layers {
        let p = place(w, cluster, PlacementAlgorithm::Optimal)?;
        // One batch: 16384 tokens x 8 experts routed in proportion to the window's loads.
        let total = w.total();
        let tokens: Vec<u64> = w
            .as_slice()
            .iter()
            .map(|&x| (x / total * 131_072.0 * (0.7 + 0.6 * rng.random::<f64>())).round() as u64)
            .collect();
        let s = split_tokens(&p.physical_to_logical, &tokens, cluster)?;
        let mean = tokens.iter().sum::<u64>() as f64 / cluster.gpus() as f64;
        even += s.even_max_gpu_load / mean;
        balanced += s.max_gpu_load / mean;
    }
    let n = layers.len() as f64;
    println!(
        "\nPart 5, one batch per layer (+-30% noise around the window): max/mean even split {:.4}, balanced split {:.4}",
        even / n,
        balanced / n
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    published()?;
    let cluster = PlacementCluster::uniform(32, 9, 4)?;
    let ln = log_normal(58, 256, 1.0, 1)?;
    let ln_layers = LayerLoads::layers(ln.clone())?;
    compare("log-normal(sigma = 1)", &ln_layers, &cluster)?;
    compare(
        "Zipf(1.0)",
        &LayerLoads::layers(zipf_loads(58, 256, 1.0, TOKENS_PER_EXPERT * 256.0, 2)?)?,
        &cluster,
    )?;
    rebalancing(&ln, &cluster)?;
    robust(&ln, &cluster)?;
    token_split(&ln_layers, &cluster)?;
    let big = PlacementCluster::uniform(1024, 5, 128)?;
    let one = LayerLoads::layers(log_normal(1, 4096, 1.0, 3)?)?;
    let t = Instant::now();
    let p = place(&one[0], &big, PlacementAlgorithm::Optimal)?;
    let dt = t.elapsed();
    let e = eplb(&one[0], &big, EplbPolicy::Global)?;
    println!(
        "\nPart 6, 4096 experts on 1024 GPUs x 5 slots: optimal max/mean {:.4} (gap {:.3}%) in {:.0} ms; EPLB global {:.4} (gap {:.3}%)",
        p.imbalance(),
        100.0 * p.gap(),
        dt.as_secs_f64() * 1e3,
        e.imbalance(),
        100.0 * e.gap()
    );
    Ok(())
}

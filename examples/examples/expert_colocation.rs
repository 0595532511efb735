//! Expert colocation (Aurora §6–§8): two 8-expert models with Zipf popularity.
//!
//! Part 1 prints the aggregated communication bound (largest per-GPU send or receive of the
//! first all-to-all) for Aurora's optimal pairing, Lina (each model alone, hot expert with cold
//! expert on one GPU) and random colocation (REC). Part 2 measures the colocating +
//! heterogeneous gap to the exact optimum of Aurora's decoupled method and of this crate's local
//! search on 1000 random instances with 4 to 8 GPUs. Part 3 compares Theorem 5.1, the exact GPU
//! assignment and the colocated placements with the random baselines RGA and RGA + REC. Run with
//! `cargo run --release -p moe-planner-examples --example expert_colocation`.

use std::time::Instant;

use colocation_matching::{
    ColocationCostModel, ExpertDemand, ExpertLoads, ExpertPairing, GpuSpec, HyperedgeCost,
    LocalSearchOptions, PairingOptions, SquareMatrix, TieBreak, assign_by_popularity,
    assign_gpus_bottleneck, colocate_decoupled, colocate_exact, colocate_local_search,
    colocate_lower_bound_s, exclusive_time_matrix, lina_pairs, pair_bottleneck, placement_loads,
    random_colocation, random_gpu_assignment,
};
use comm_cost_model::units::{gbps, tflop_per_s};
use comm_cost_model::{SeededRng, seeded_rng};
use rand::RngExt;
use rand::seq::SliceRandom;

type Error = Box<dyn std::error::Error>;

/// Zipf popularity `p_k ∝ 1 / k^s` over `n` experts, shuffled so the hot expert is anywhere.
fn zipf_popularity(n: usize, s: f64, rng: &mut SeededRng) -> Vec<f64> {
    let mut p: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(s)).collect();
    let total: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= total);
    p.shuffle(rng);
    p
}

/// Traffic `d[i][j]` of one all-to-all: GPU `i` holds a random share of the batch and sends each
/// token to expert `j` with probability `popularity[j]`; tokens for its own expert stay local.
fn zipf_traffic(n: usize, s: f64, bytes: f64, rng: &mut SeededRng) -> Result<SquareMatrix, Error> {
    let popularity = zipf_popularity(n, s, rng);
    let share: Vec<f64> = (0..n).map(|_| rng.random_range(0.5..1.5)).collect();
    let total: f64 = share.iter().sum();
    Ok(SquareMatrix::from_fn(n, |i, j| {
        if i == j {
            0.0
        } else {
            bytes * share[i] / total * popularity[j]
        }
    })?)
}

fn gpu_of(groups: &[Vec<usize>], n: usize) -> Vec<usize> {
    let mut gpu = vec![0; n];
    for (g, experts) in groups.iter().enumerate() {
        experts.iter().for_each(|&e| gpu[e] = g);
    }
    gpu
}

/// Lina: each model alone, its experts packed two per GPU (hot with cold); the bound is the
/// busiest GPU of either model.
fn lina_bound(traffic: &SquareMatrix) -> Result<f64, Error> {
    let recv = ExpertLoads::from_traffic(traffic)?.recv_bytes;
    let groups = lina_pairs(&recv)?;
    let loads = placement_loads(traffic, &gpu_of(&groups, traffic.n()), groups.len())?;
    Ok(loads
        .send_bytes
        .iter()
        .chain(&loads.recv_bytes)
        .fold(0.0, |m, &x| f64::max(m, x)))
}

fn part_one() -> Result<(), Error> {
    let mut rng = seeded_rng(2024, 0);
    let bytes = 512e6;
    let a = zipf_traffic(8, 1.0, bytes, &mut rng)?;
    let b = zipf_traffic(8, 1.2, bytes, &mut rng)?;
    let (la, lb) = (
        ExpertLoads::from_traffic(&a)?,
        ExpertLoads::from_traffic(&b)?,
    );
    let least_total = PairingOptions {
        tie_break: TieBreak::MinTotalWeight,
        ..PairingOptions::default()
    };
    let aurora = pair_bottleneck(&la, &lb, &least_total)?;
    let rec: Vec<f64> = (0..1000)
        .map(|seed| {
            ExpertPairing::evaluate(&la, &lb, &random_colocation(8, seed)?)
                .map(|p| p.bottleneck_bytes)
        })
        .collect::<Result<_, _>>()?;
    let rec_mean = rec.iter().sum::<f64>() / rec.len() as f64;
    let lina = lina_bound(&a)?.max(lina_bound(&b)?);
    println!("Part 1: two 8-expert Zipf models (s = 1.0 and 1.2), 512 MB per all-to-all each");
    println!(
        "  Aurora pairing (bottleneck matching): {:>8.2} MB  pairs {:?}",
        aurora.bottleneck_bytes / 1e6,
        aurora.pairs
    );
    println!(
        "  Lina (same-model hot+cold, 4 GPUs each): {:>5.2} MB  ({:.2}x Aurora)",
        lina / 1e6,
        lina / aurora.bottleneck_bytes
    );
    println!(
        "  REC (1000 seeds): mean {:.2} MB ({:.2}x), best {:.2} MB, worst {:.2} MB",
        rec_mean / 1e6,
        rec_mean / aurora.bottleneck_bytes,
        rec.iter().copied().fold(f64::INFINITY, f64::min) / 1e6,
        rec.iter().copied().fold(0.0, f64::max) / 1e6
    );
    Ok(())
}

/// Demands of two Zipf models and Aurora §8.1's four GPU types (100, 80, 50 and 40 Gbps, equal
/// counts; compute scaled alike).
type Parts = (Vec<ExpertDemand>, Vec<ExpertDemand>, Vec<GpuSpec>);

fn hetero_parts(n: usize, rng: &mut SeededRng) -> Result<Parts, Error> {
    let types = [(100.0, 312.0), (80.0, 250.0), (50.0, 156.0), (40.0, 125.0)];
    let gpus: Vec<GpuSpec> = (0..n)
        .map(|g| GpuSpec {
            bandwidth_bytes_per_s: gbps(types[g % 4].0),
            flop_per_s: tflop_per_s(types[g % 4].1),
        })
        .collect();
    let model = |rng: &mut SeededRng| -> Result<Vec<ExpertDemand>, Error> {
        let s = rng.random_range(0.6..1.6);
        let loads = ExpertLoads::from_traffic(&zipf_traffic(n, s, 64e6 * n as f64, rng)?)?;
        // FFN work proportional to received tokens: ~4 kFLOP per byte (fp16, d_ff = 4 d_model).
        Ok((0..n)
            .map(|e| ExpertDemand {
                send_bytes: loads.send_bytes[e],
                recv_bytes: loads.recv_bytes[e],
                flop: 4096.0 * loads.recv_bytes[e],
            })
            .collect())
    };
    let a = model(rng)?;
    let b = model(rng)?;
    Ok((a, b, gpus))
}

/// A random colocating + heterogeneous instance built from [`hetero_parts`].
fn hetero_instance(n: usize, rng: &mut SeededRng) -> Result<ColocationCostModel, Error> {
    let (a, b, gpus) = hetero_parts(n, rng)?;
    Ok(ColocationCostModel::new(a, b, gpus)?)
}

fn summary(name: &str, ratios: &mut [f64]) {
    ratios.sort_by(f64::total_cmp);
    let pct = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let optimal = ratios.iter().filter(|&&r| r <= 1.0 + 1e-9).count() as f64 / ratios.len() as f64;
    println!(
        "  {name:<22} mean {mean:.4}  p50 {:.4}  p90 {:.4}  p99 {:.4}  max {:.4}  optimal {:.1}%",
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0),
        100.0 * optimal
    );
}

fn part_two() -> Result<(), Error> {
    let mut rng = seeded_rng(7, 0);
    let (mut paper, mut ours) = (Vec::new(), Vec::new());
    let mut ours_n8_us = Vec::new();
    let options = LocalSearchOptions::default();
    for n in 4..=8 {
        for _ in 0..200 {
            let inst = hetero_instance(n, &mut rng)?;
            let exact = colocate_exact(&inst)?.bottleneck_s;
            paper.push(colocate_decoupled(&inst)?.bottleneck_s / exact);
            let start = Instant::now();
            let value = colocate_local_search(&inst, &options)?.bottleneck_s;
            if n == 8 {
                ours_n8_us.push(start.elapsed().as_secs_f64() * 1e6);
            }
            ours.push(value / exact);
        }
    }
    println!(
        "Part 2: colocating + heterogeneous, {} instances (n = 4..8, 200 each), ratio to exact",
        paper.len()
    );
    summary("Aurora decoupled (§7.2)", &mut paper);
    summary("local search (ours)", &mut ours);
    ours_n8_us.sort_by(f64::total_cmp);
    let at = |q: f64| ours_n8_us[((ours_n8_us.len() - 1) as f64 * q).round() as usize];
    println!(
        "  local search time at n = 8: median {:.0} µs, p90 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    let big = hetero_instance(256, &mut rng)?;
    let start = Instant::now();
    let p = colocate_decoupled(&big)?.bottleneck_s;
    let paper_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    let o = colocate_local_search(&big, &options)?.bottleneck_s;
    let lower = colocate_lower_bound_s(&big)?;
    println!(
        "  n = 256: decoupled {:.3} ms in {paper_ms:.1} ms; local search {:.3} ms in {:.1} ms ({:.4}x of decoupled); lower bound {:.3} ms",
        p * 1e3,
        o * 1e3,
        start.elapsed().as_secs_f64() * 1e3,
        o / p,
        lower * 1e3
    );
    Ok(())
}

/// Slowest GPU when expert `e` runs on GPU `gpu_of[e]`.
fn exclusive_bottleneck(times: &SquareMatrix, gpu_of: &[usize]) -> f64 {
    gpu_of
        .iter()
        .enumerate()
        .filter_map(|(e, &g)| times.get(e, g))
        .fold(0.0, f64::max)
}

/// Part 3: Aurora's GPU assignment against random assignment (RGA, Fig. 11b) and the colocated
/// placement against RGA + REC (Fig. 11d), on one 8-GPU instance of Part 2's kind.
fn part_three() -> Result<(), Error> {
    let mut rng = seeded_rng(11, 0);
    let (a, b, gpus) = hetero_parts(8, &mut rng)?;
    let n = gpus.len();
    // Exclusive: model A alone on the 8 GPUs.
    let times = exclusive_time_matrix(&a, &gpus)?;
    let tokens: Vec<f64> = a.iter().map(|e| e.recv_bytes).collect();
    let speed: Vec<f64> = gpus.iter().map(|g| g.flop_per_s).collect();
    let thm = exclusive_bottleneck(&times, &assign_by_popularity(&tokens, &speed)?);
    let exact = assign_gpus_bottleneck(&times)?.bottleneck_s;
    let rga: Vec<f64> = (0..1000)
        .map(|seed| {
            Ok(exclusive_bottleneck(
                &times,
                &random_gpu_assignment(n, seed)?,
            ))
        })
        .collect::<Result<_, Error>>()?;
    let rga_mean = rga.iter().sum::<f64>() / rga.len() as f64;
    let inst = ColocationCostModel::new(a, b, gpus)?;
    println!("Part 3: one 8-GPU heterogeneous instance (seed 11)");
    println!(
        "  exclusive: Theorem 5.1 {:.3} ms, exact {:.3} ms, RGA mean of 1000 seeds {:.3} ms ({:.2}x slower)",
        thm * 1e3,
        exact * 1e3,
        rga_mean * 1e3,
        rga_mean / exact
    );
    let random: Vec<f64> = (0..1000)
        .map(|seed| {
            let b_of_a = random_colocation(n, seed)?;
            let gpu_of = random_gpu_assignment(n, seed)?;
            Ok((0..n)
                .map(|a| inst.cost_s(a, b_of_a[a], gpu_of[a]))
                .fold(0.0, f64::max))
        })
        .collect::<Result<_, Error>>()?;
    let random_mean = random.iter().sum::<f64>() / random.len() as f64;
    let ours = colocate_local_search(&inst, &LocalSearchOptions::default())?.bottleneck_s;
    let optimum = colocate_exact(&inst)?.bottleneck_s;
    println!(
        "  colocated: decoupled {:.3} ms, local search {:.3} ms, exact {:.3} ms, RGA + REC mean {:.3} ms ({:.2}x slower than exact)",
        colocate_decoupled(&inst)?.bottleneck_s * 1e3,
        ours * 1e3,
        optimum * 1e3,
        random_mean * 1e3,
        random_mean / optimum
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    part_one()?;
    println!();
    part_two()?;
    println!();
    part_three()
}

//! The seeded colocation instances of `examples/examples/expert_colocation.rs` (Aurora §6-7) and
//! the figures it prints, shared with the drift test of its tables
//! (`examples/tests/docs_reproduction`). Timings stay in the example.

use colocation_matching::{
    ColocationCostModel, ExpertDemand, ExpertLoads, ExpertPairing, GpuSpec, HyperedgeCost,
    LocalSearchOptions, PairingOptions, SquareMatrix, TieBreak, assign_by_popularity,
    assign_gpus_bottleneck, colocate_decoupled, colocate_exact, colocate_local_search,
    exclusive_time_matrix, lina_pairs, pair_bottleneck, placement_loads, random_colocation,
    random_gpu_assignment,
};
use comm_cost_model::units::{gbps, tflop_per_s};
use comm_cost_model::{SeededRng, seeded_rng};
use rand::RngExt;
use rand::seq::SliceRandom;

/// Any error of the planners.
pub type Error = Box<dyn std::error::Error>;

fn zipf_popularity(n: usize, s: f64, rng: &mut SeededRng) -> Vec<f64> {
    let mut p: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(s)).collect();
    let total: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= total);
    p.shuffle(rng);
    p
}

/// An `n`-expert all-to-all of `bytes` with Zipf(`s`) popularity (shuffled) and each source
/// GPU holding a random share of the batch; traffic to a GPU's own expert stays local.
///
/// # Errors
///
/// As `SquareMatrix::from_fn`.
pub fn zipf_traffic(
    n: usize,
    s: f64,
    bytes: f64,
    rng: &mut SeededRng,
) -> Result<SquareMatrix, Error> {
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

/// Bytes of the busiest GPU (the aggregated communication bound) of two 8-expert models.
pub struct PairingBounds {
    /// Aurora's pairing (Case II bottleneck matching).
    pub aurora: f64,
    /// Its pairs.
    pub pairs: Vec<[usize; 2]>,
    /// Lina: each model alone on 4 GPUs, hot + cold expert per GPU.
    pub lina: f64,
    /// REC over 1000 seeds: mean, best, worst.
    pub rec: (f64, f64, f64),
}

/// Part 1 of the example: two Zipf models (s = 1.0 and 1.2, seed 2024), 512 MB per all-to-all.
///
/// # Errors
///
/// As the planners.
pub fn pairing_bounds() -> Result<PairingBounds, Error> {
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
    Ok(PairingBounds {
        aurora: aurora.bottleneck_bytes,
        pairs: aurora.pairs,
        lina: lina_bound(&a)?.max(lina_bound(&b)?),
        rec: (
            rec.iter().sum::<f64>() / rec.len() as f64,
            rec.iter().copied().fold(f64::INFINITY, f64::min),
            rec.iter().copied().fold(0.0, f64::max),
        ),
    })
}

/// Two models' expert demands and the GPUs of one heterogeneous instance.
pub type Parts = (Vec<ExpertDemand>, Vec<ExpertDemand>, Vec<GpuSpec>);

/// `n` GPUs of §8.1's four types and two Zipf models with FFN work of 4096 FLOP per byte.
///
/// # Errors
///
/// As the planners.
pub fn hetero_parts(n: usize, rng: &mut SeededRng) -> Result<Parts, Error> {
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

/// The cost model of one colocating + heterogeneous instance of `n` GPUs.
///
/// # Errors
///
/// As the planners.
pub fn hetero_instance(n: usize, rng: &mut SeededRng) -> Result<ColocationCostModel, Error> {
    let (a, b, gpus) = hetero_parts(n, rng)?;
    Ok(ColocationCostModel::new(a, b, gpus)?)
}

/// Mean, p50, p90, p99, max and the fraction at 1 of ratios to an optimum (sorted in place).
#[must_use]
pub fn summarize(ratios: &mut [f64]) -> [f64; 6] {
    ratios.sort_by(f64::total_cmp);
    let pct = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let optimal = ratios.iter().filter(|&&r| r <= 1.0 + 1e-9).count() as f64 / ratios.len() as f64;
    [mean, pct(0.5), pct(0.9), pct(0.99), pct(1.0), optimal]
}

/// One instance of the gap study: decoupled / exact and local search / exact, with the GPU
/// count; `visit` may time the local search (the example does).
///
/// # Errors
///
/// As the planners.
pub fn gap_study(
    rng: &mut SeededRng,
    mut visit: impl FnMut(usize, &ColocationCostModel, &LocalSearchOptions) -> Result<f64, Error>,
) -> Result<(Vec<f64>, Vec<f64>), Error> {
    let (mut paper, mut ours) = (Vec::new(), Vec::new());
    let options = LocalSearchOptions::default();
    for n in 4..=8 {
        for _ in 0..200 {
            let inst = hetero_instance(n, rng)?;
            let exact = colocate_exact(&inst)?.bottleneck_s;
            paper.push(colocate_decoupled(&inst)?.bottleneck_s / exact);
            ours.push(visit(n, &inst, &options)? / exact);
        }
    }
    Ok((paper, ours))
}

/// The local search's slowest-GPU time, the visitor of [`gap_study`] without timing.
///
/// # Errors
///
/// As the planner.
pub fn local_search_s(
    _n: usize,
    inst: &ColocationCostModel,
    options: &LocalSearchOptions,
) -> Result<f64, Error> {
    Ok(colocate_local_search(inst, options)?.bottleneck_s)
}

fn exclusive_bottleneck(times: &SquareMatrix, gpu_of: &[usize]) -> f64 {
    gpu_of
        .iter()
        .enumerate()
        .filter_map(|(e, &g)| times.get(e, g))
        .fold(0.0, f64::max)
}

/// Slowest-GPU layer times (seconds) of the seed-11 instance against the random baselines.
pub struct RandomBaselines {
    /// Exclusive: Theorem 5.1's assignment by popularity.
    pub theorem_5_1: f64,
    /// Exclusive: the exact bottleneck assignment.
    pub exclusive_exact: f64,
    /// Exclusive: RGA, mean of 1000 seeds.
    pub rga_mean: f64,
    /// Colocated: Aurora's decoupled two-stage.
    pub decoupled: f64,
    /// Colocated: our local search.
    pub local_search: f64,
    /// Colocated: the exact optimum.
    pub colocated_exact: f64,
    /// Colocated: RGA + REC, mean of 1000 seeds.
    pub random_mean: f64,
}

/// Part 3 of the example: one 8-GPU heterogeneous instance (seed 11).
///
/// # Errors
///
/// As the planners.
pub fn random_baselines() -> Result<RandomBaselines, Error> {
    let mut rng = seeded_rng(11, 0);
    let (a, b, gpus) = hetero_parts(8, &mut rng)?;
    let n = gpus.len();
    // Exclusive: model A alone on the 8 GPUs.
    let times = exclusive_time_matrix(&a, &gpus)?;
    let tokens: Vec<f64> = a.iter().map(|e| e.recv_bytes).collect();
    let speed: Vec<f64> = gpus.iter().map(|g| g.flop_per_s).collect();
    let theorem_5_1 = exclusive_bottleneck(&times, &assign_by_popularity(&tokens, &speed)?);
    let exclusive_exact = assign_gpus_bottleneck(&times)?.bottleneck_s;
    let rga: Vec<f64> = (0..1000)
        .map(|seed| {
            Ok(exclusive_bottleneck(
                &times,
                &random_gpu_assignment(n, seed)?,
            ))
        })
        .collect::<Result<_, Error>>()?;
    let inst = ColocationCostModel::new(a, b, gpus)?;
    let random: Vec<f64> = (0..1000)
        .map(|seed| {
            let b_of_a = random_colocation(n, seed)?;
            let gpu_of = random_gpu_assignment(n, seed)?;
            Ok((0..n)
                .map(|a| inst.cost_s(a, b_of_a[a], gpu_of[a]))
                .fold(0.0, f64::max))
        })
        .collect::<Result<_, Error>>()?;
    Ok(RandomBaselines {
        theorem_5_1,
        exclusive_exact,
        rga_mean: rga.iter().sum::<f64>() / rga.len() as f64,
        decoupled: colocate_decoupled(&inst)?.bottleneck_s,
        local_search: colocate_local_search(&inst, &LocalSearchOptions::default())?.bottleneck_s,
        colocated_exact: colocate_exact(&inst)?.bottleneck_s,
        random_mean: random.iter().sum::<f64>() / random.len() as f64,
    })
}

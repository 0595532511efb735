//! Aurora Q4 / Fig. 14 (imprecise statistics) and planning against several windows on the
//! DeepSeek-like loads: the sweeps of `examples/examples/inference_robustness.rs`, shared with
//! the drift test of their tables (`examples/tests/docs_reproduction`, release only).

use alltoall_sched::TrafficMatrix;
use alltoall_sched::workload::{blend_traffic, zipf_traffic};
use expert_placement::{
    EplbPolicy, LayerLoads, Placement, PlacementAlgorithm, PlacementCluster, RobustObjective,
    drift_loads, place, place_robust, placement_lower_bound,
};
use moe_planner::inference::{
    GpuInput, InferenceModelSpec, InferenceSpec, OnePerGpuSpec, plan_inference,
};
use moe_planner::placement::formats::LogicalCountFile;

/// A result with any error of the planners.
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

const GPUS: usize = 8;
/// MoE layers per model (and noise levels: 0, 25, 50, 75%).
pub const LAYERS: u64 = 4;
/// Seeds of the Aurora sweep.
pub const SEEDS: u64 = 20;
const TOKENS: u64 = 4096;
const BYTES_PER_TOKEN: u64 = 8192;
const FFN_FLOP_PER_BYTE: f64 = 8.0 * 4096.0;
/// Aurora §8.1: four GPU types in equal numbers; (Gbps, TFLOP/s).
const TYPES: [(f64, f64); 4] = [(100.0, 312.0), (80.0, 250.0), (50.0, 156.0), (40.0, 125.0)];

fn gpus() -> Vec<GpuInput> {
    (0..GPUS)
        .map(|g| {
            let (gbps, tflop_per_s) = TYPES[g * TYPES.len() / GPUS];
            GpuInput {
                tflop_per_s,
                bandwidth_gbps: gbps,
            }
        })
        .collect()
}

fn model(name: &str, layers: &[TrafficMatrix]) -> InferenceModelSpec {
    InferenceModelSpec {
        name: name.into(),
        layers: layers.iter().map(TrafficMatrix::to_rows).collect(),
        gate_s: (2e-4).into(),
        aggregation_s: (1e-4).into(),
        ffn_flop_per_byte: FFN_FLOP_PER_BYTE,
    }
}

fn spec(
    models: Vec<InferenceModelSpec>,
    seed: u64,
    placement: Option<Vec<Vec<usize>>>,
) -> InferenceSpec {
    OnePerGpuSpec {
        gpus: gpus(),
        models,
        seed,
        placement,
        ..Default::default()
    }
    .into()
}

/// Speedups over the baseline at one noise level, summed over seeds.
/// Speedups over the random baseline at one noise level.
#[derive(Debug, Default, Clone, Copy)]
pub struct Row {
    /// The deployment planned on layer 1 alone.
    pub stale: f64,
    /// A fresh plan on the noisy traffic.
    pub fresh: f64,
    /// The deployment planned against the four layers as windows.
    pub windows: f64,
}

/// One seed of one scenario: `[noise level]` speedups over RGA (+ REC).
fn sweep_seed(two_models: bool, seed: u64) -> Res<Vec<Row>> {
    let exponents: &[f64] = if two_models { &[1.0, 1.2] } else { &[1.0] };
    let layers: Vec<Vec<TrafficMatrix>> = exponents
        .iter()
        .enumerate()
        .map(|(m, &s)| {
            (0..LAYERS)
                .map(|l| {
                    zipf_traffic(
                        GPUS,
                        s,
                        TOKENS,
                        BYTES_PER_TOKEN,
                        seed * 100 + m as u64 * 10 + l,
                    )
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<_, _>>()?;
    let models = |pick: &dyn Fn(&[TrafficMatrix]) -> Res<Vec<TrafficMatrix>>| -> Res<Vec<InferenceModelSpec>> {
        layers
            .iter()
            .enumerate()
            .map(|(m, l)| Ok(model(&format!("m{m}"), &pick(l)?)))
            .collect()
    };
    let stale =
        plan_inference(&spec(models(&|l| Ok(l[..1].to_vec()))?, seed, None))?.experts_of_gpu;
    let windows = if two_models {
        plan_inference(&spec(models(&|l| Ok(l.to_vec()))?, seed, None))?.experts_of_gpu
    } else {
        robust_assignment(&layers[0])?
    };
    (0..LAYERS as usize)
        .map(|k| {
            let noise = k as f64 / LAYERS as f64;
            let blended = models(&|l| Ok(vec![blend_traffic(&l[0], &l[1..=k], noise)?]))?;
            let at = |placement| plan_inference(&spec(blended.clone(), seed, placement));
            let (s, f, w) = (
                at(Some(stale.clone()))?,
                at(None)?,
                at(Some(windows.clone()))?,
            );
            let base = f.baseline.inference_time_s;
            Ok(Row {
                stale: base / s.inference_time_s,
                fresh: base / f.inference_time_s,
                windows: base / w.inference_time_s,
            })
        })
        .collect()
}

/// One expert per GPU planned against every layer as a window (worst window's busiest GPU),
/// GPU speed proportional to its compute (and, in §8.1, to its bandwidth).
fn robust_assignment(layers: &[TrafficMatrix]) -> Res<Vec<Vec<usize>>> {
    let speeds: Vec<f64> = gpus().iter().map(|g| g.tflop_per_s / TYPES[0].1).collect();
    let cluster = PlacementCluster::new(vec![1; GPUS], speeds, vec![0; GPUS])?;
    let windows: Vec<LayerLoads> = layers
        .iter()
        .map(|l| LayerLoads::new(l.receive_totals()))
        .collect::<Result<_, _>>()?;
    let plan = place_robust(&windows, &cluster, RobustObjective::Worst)?;
    Ok(plan.physical_to_logical.iter().map(|&e| vec![e]).collect())
}

/// The Aurora sweep's rows (noise 0, 25, 50, 75%), means over [`SEEDS`] seeds, for one model
/// (exclusive) or two (colocating), on §8.1's heterogeneous GPUs.
///
/// # Errors
///
/// As the planners.
pub fn aurora_rows(two_models: bool) -> Res<Vec<Row>> {
    let mut rows = vec![Row::default(); LAYERS as usize];
    for seed in 0..SEEDS {
        for (acc, r) in rows.iter_mut().zip(sweep_seed(two_models, seed)?) {
            acc.stale += r.stale / SEEDS as f64;
            acc.fresh += r.fresh / SEEDS as f64;
            acc.windows += r.windows / SEEDS as f64;
        }
    }
    Ok(rows)
}

const DS_GPUS: usize = 32;
const DS_SLOTS: usize = 9;
const DS_NODES: usize = 4;
/// Windows of the drift.
const DS_WINDOWS: usize = 10;
/// Windows planned on and scored on.
pub const DS_AHEAD: usize = 3;

/// Max GPU load over the bound of each later window, for a slot map; (mean, worst).
fn ahead(map: &[usize], later: &[LayerLoads], cluster: &PlacementCluster) -> Res<(f64, f64)> {
    let mut ratios = Vec::new();
    for w in later {
        let p = Placement::evaluate(w, cluster, map.to_vec())?;
        ratios.push(p.max_gpu_load / placement_lower_bound(w, cluster)?);
    }
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    Ok((mean, ratios.iter().copied().fold(0.0, f64::max)))
}

/// The drifts of the DeepSeek-like table: random walk or stationary, and sigma.
pub const DRIFTS: [(bool, f64); 5] = [
    (true, 0.1),
    (true, 0.2),
    (true, 0.4),
    (false, 0.2),
    (false, 0.4),
];

/// Per drift of [`DRIFTS`]: (mean, worst) of max GPU load over the bound on the next
/// [`DS_AHEAD`] windows, for window t alone (optimal), EPLB on t, and `place_robust` worst and
/// mean on windows t-2..=t.
///
/// # Errors
///
/// As the planners.
pub fn deepseek_window_rows() -> Res<Vec<[(f64, f64); 4]>> {
    let file: LogicalCountFile = serde_json::from_str(include_str!(
        "../../crates/moe-planner-cli/data/deepseek_like_loads.json"
    ))?;
    let start = file.logical_count.summed()?;
    let cluster = PlacementCluster::uniform(DS_GPUS, DS_SLOTS, DS_NODES)?;
    let mut out = Vec::new();
    for (walk, sigma) in DRIFTS {
        // windows[w][layer]: a lognormal random walk from the measured loads, or independent
        // draws around them (stationary popularity, noisy windows).
        let mut windows = vec![start.clone()];
        for w in 1..DS_WINDOWS {
            let from = if walk { &windows[w - 1] } else { &start };
            let next = drift_loads(from, sigma, 7000 + w as u64)?;
            windows.push(next);
        }
        let mut sums = [(0.0, 0.0); 4];
        let mut count = 0.0;
        #[allow(clippy::needless_range_loop)] // `layer` indexes every window, not one slice
        for t in DS_AHEAD - 1..DS_WINDOWS - DS_AHEAD {
            for layer in 0..start.len() {
                let at = |w: usize| LayerLoads::new(windows[w][layer].clone());
                let now = at(t)?;
                let history: Vec<LayerLoads> =
                    (t + 1 - DS_AHEAD..=t).map(at).collect::<Result<_, _>>()?;
                let later: Vec<LayerLoads> =
                    (t + 1..=t + DS_AHEAD).map(at).collect::<Result<_, _>>()?;
                let maps = [
                    place(&now, &cluster, PlacementAlgorithm::Optimal)?.physical_to_logical,
                    place(&now, &cluster, PlacementAlgorithm::Eplb(EplbPolicy::Global))?
                        .physical_to_logical,
                    place_robust(&history, &cluster, RobustObjective::Worst)?.physical_to_logical,
                    place_robust(&history, &cluster, RobustObjective::Mean)?.physical_to_logical,
                ];
                for (sum, map) in sums.iter_mut().zip(&maps) {
                    let (mean, worst) = ahead(map, &later, &cluster)?;
                    sum.0 += mean;
                    sum.1 = f64::max(sum.1, worst);
                }
                count += 1.0;
            }
        }
        out.push(sums.map(|(mean, worst)| (mean / count, worst)));
    }
    Ok(out)
}

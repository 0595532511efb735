//! One `optimal` (or `non_preemptive`) call on a bench input, for instruction counts and peak
//! memory (the numbers of `docs/performance.md`, issue 24):
//!
//! ```text
//! cargo build --release -p moe-planner-benches --example alltoall_probe
//! valgrind --tool=callgrind --toggle-collect='alltoall_sched::optimal::optimal' \
//!     target/release/examples/alltoall_probe zipf0.8 64 1
//! /usr/bin/time -v target/release/examples/alltoall_probe deepseek 2048 1
//! ```
//!
//! Arguments: traffic (`zipf0.8`, `zipf1.2`, `uniform`, `deepseek`), GPUs, seed, and optionally
//! the scheduler (`optimal`, the default, or `non-preemptive`) and a repeat count (the call is
//! timed; the median is printed). It also prints the mean time at which a GPU is done with the
//! all-to-all (its last send or receive, as a fraction of the makespan), and with
//! `PROBE_VALIDATE=1` checks the timetable (release builds of `optimal` do not).

use std::time::Instant;

use alltoall_sched::workload::{router_trace, uniform_traffic, zipf_traffic};
use alltoall_sched::{
    Bandwidth, TrafficMatrix, dispatch_tokens, lower_bound_s, non_preemptive, optimal,
};
use expert_placement::lognormal_loads;

/// 100 Gbps in bytes per second, as the bench.
const BANDWIDTH: f64 = 12.5e9;

/// The bench's inputs (`benches/benches/alltoall.rs`), with a seed.
fn workload(kind: &str, n: usize, seed: u64) -> Result<TrafficMatrix, String> {
    let tokens = 8192 * 8;
    let d = match kind {
        "zipf0.8" => zipf_traffic(n, 0.8, tokens, 8192, seed),
        "zipf1.2" => zipf_traffic(n, 1.2, tokens, 8192, seed),
        "uniform" => uniform_traffic(n, 1 << 24, seed),
        "deepseek" => {
            let experts = n.max(256);
            let loads = lognormal_loads(1, experts, 1.0, 8.0 * 8192.0 * n as f64, seed)
                .map_err(|e| e.to_string())?;
            let routed = router_trace(&loads[0], n, 0.25, seed).map_err(|e| e.to_string())?;
            let slots = experts.div_ceil(n);
            let experts_of_gpu: Vec<Vec<usize>> = (0..n)
                .map(|g| (0..slots).map(|s| (g * slots + s) % experts).collect())
                .collect();
            let node_of_gpu: Vec<usize> = (0..n).map(|g| g / 8).collect();
            dispatch_tokens(&routed, &experts_of_gpu, &node_of_gpu).and_then(|d| d.traffic(7168.0))
        }
        other => return Err(format!("unknown traffic {other}")),
    };
    d.map_err(|e| e.to_string())
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.first().map_or("zipf0.8", String::as_str);
    let parse = |k: usize, default: u64| {
        args.get(k)
            .map_or(Ok(default), |s| s.parse::<u64>().map_err(|e| e.to_string()))
    };
    let n = usize::try_from(parse(1, 64)?).map_err(|e| e.to_string())?;
    let seed = parse(2, 1)?;
    let scheduler = args.get(3).map_or("optimal", String::as_str);
    if scheduler == "analyze" {
        let d = workload(kind, n, seed)?;
        let rows = d.send_totals();
        let cols = d.receive_totals();
        let l = rows.iter().chain(&cols).fold(0.0f64, |a, &b| a.max(b));
        let mut lines: Vec<f64> = rows.iter().chain(&cols).map(|x| x / l).collect();
        lines.sort_by(|a, b| b.total_cmp(a));
        let avg = lines.iter().sum::<f64>() / lines.len() as f64;
        let mut viol = 0;
        let mut viol_lines = std::collections::BTreeSet::new();
        let mut nnz = 0;
        for (i, j, v) in d.pairs() {
            nnz += 1;
            if rows[i] + cols[j] - v > l * (1.0 + 1e-12) {
                viol += 1;
                viol_lines.insert(if rows[i] > cols[j] {
                    format!("r{i}")
                } else {
                    format!("c{j}")
                });
            }
        }
        println!(
            "{kind} n={n}: avg load {avg:.3}, top lines {:?}, violating pairs {viol}/{nnz}, lines {}",
            &lines[..8.min(lines.len())],
            viol_lines.len()
        );
        return Ok(());
    }
    let repeat = parse(4, 1)?.max(1);
    let d = workload(kind, n, seed)?;
    let b = Bandwidth::uniform(BANDWIDTH).map_err(|e| e.to_string())?;
    let bound = lower_bound_s(&d, &b).map_err(|e| e.to_string())?;
    let mut times = Vec::new();
    let mut plan = None;
    for _ in 0..repeat {
        let t0 = Instant::now();
        let p = match scheduler {
            "optimal" => optimal(&d, &b),
            "non-preemptive" => non_preemptive(&d, &b),
            other => return Err(format!("unknown scheduler {other}")),
        }
        .map_err(|e| e.to_string())?;
        times.push(t0.elapsed().as_secs_f64());
        plan = Some(p);
    }
    let Some(plan) = plan else {
        return Err("no run".into());
    };
    // `PROBE_VALIDATE=1`: check the timetable (release builds skip `optimal`'s own check).
    if std::env::var_os("PROBE_VALIDATE").is_some() {
        plan.validate(&d, &b)
            .map_err(|e| format!("invalid timetable: {e}"))?;
    }
    times.sort_by(f64::total_cmp);
    // FNV-1a over every field of every transfer: equal hashes, equal timetables.
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for t in &plan.transfers {
        for word in [
            t.src as u64,
            t.dst as u64,
            t.bytes.to_bits(),
            t.start_s.to_bits(),
            t.end_s.to_bits(),
        ] {
            hash = (hash ^ word).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let median = times[times.len() / 2];
    // When each GPU is done with the all-to-all (its last send or receive), on average, as a
    // fraction of the makespan: what the facade's per-GPU timeline reads beyond the makespan.
    let finish = plan.port_finish_times().map_err(|e| e.to_string())?;
    let mean_finish = finish.iter().sum::<f64>() / finish.len().max(1) as f64 / plan.makespan_s();
    println!(
        "{kind} n={n} seed={seed} {scheduler}: pieces {} nnz {} ({:.3}), makespan/bound - 1 = {:e}, mean GPU finish {mean_finish:.3}, median {:.1} us of {repeat}, hash {hash:016x}",
        plan.pieces(),
        d.nonzeros(),
        plan.pieces() as f64 / d.nonzeros().max(1) as f64,
        plan.makespan_s() / bound - 1.0,
        median * 1e6,
    );
    Ok(())
}

//! LysiAssign (Aristos Algorithm 2) against the optimum on random small instances.
//!
//! 300 seeded instances: 2-4 workers with integer FLOP/s in 1..=4 and 1..=8 expert slots
//! (redrawn until they hold every expert), 3-8 experts with integer costs in 1..=10. The optimum
//! comes from brute force over every slot-respecting assignment. Prints, for the paper's
//! algorithm and the refined variant, the mean and worst ratio to the optimum and how often each
//! is optimal. Then 300 larger instances (16-48 experts, 3-8 workers, up to 16 slots each), where
//! only the lower bound `max(Σf/ΣF, max f / max F)` is known, and the refined variant's time.
//!
//! Run: `cargo run --release -p moe-planner-examples --example lysi_assign_quality`

use colocation_matching::{LysiAlgorithm, lysi_assign_with};
use moe_planner_examples::lysi_assign::{LARGE, SMALL, brute_force, instance};

type Error = Box<dyn std::error::Error>;

struct Tally {
    name: &'static str,
    ratios: Vec<f64>,
}

impl Tally {
    fn print(&self) {
        let n = self.ratios.len() as f64;
        let mean = self.ratios.iter().sum::<f64>() / n;
        let worst = self.ratios.iter().copied().fold(0.0, f64::max);
        let optimal = self.ratios.iter().filter(|&&r| r <= 1.0 + 1e-9).count();
        println!(
            "  {:<28} mean {mean:.4}x  worst {worst:.4}x  optimal in {optimal} of {}",
            self.name,
            self.ratios.len()
        );
    }
}

fn tally(name: &'static str) -> Tally {
    Tally {
        name,
        ratios: Vec::new(),
    }
}

fn main() -> Result<(), Error> {
    let (mut paper, mut refined) = (
        tally("lysi_assign (Algorithm 2)"),
        tally("lysi_assign_refined"),
    );
    for seed in 0..300 {
        let inst = instance(&SMALL, seed);
        let optimum = brute_force(&inst);
        for (t, algorithm) in [
            (&mut paper, LysiAlgorithm::Paper),
            (&mut refined, LysiAlgorithm::Refined),
        ] {
            let a = lysi_assign_with(&inst.costs, &inst.workers, algorithm)?;
            t.ratios.push(a.makespan_s / optimum);
        }
    }
    println!("300 random instances (2-4 workers, 3-8 experts), makespan / brute-force optimum:");
    paper.print();
    refined.print();

    let (mut paper, mut refined) = (
        tally("lysi_assign (Algorithm 2)"),
        tally("lysi_assign_refined"),
    );
    let mut micros = Vec::new();
    for seed in 0..300 {
        let inst = instance(&LARGE, seed);
        let bound = lysi_assign_with(&inst.costs, &inst.workers, LysiAlgorithm::Paper)?;
        paper.ratios.push(bound.makespan_s / bound.lower_bound_s);
        let start = std::time::Instant::now();
        let a = lysi_assign_with(&inst.costs, &inst.workers, LysiAlgorithm::Refined)?;
        micros.push(start.elapsed().as_secs_f64() * 1e6);
        refined.ratios.push(a.makespan_s / a.lower_bound_s);
    }
    println!("300 larger instances (3-8 workers, 16-48 experts), makespan / lower bound:");
    paper.print();
    refined.print();
    micros.sort_by(f64::total_cmp);
    println!(
        "  refined time: median {:.0} us, max {:.0} us",
        micros[micros.len() / 2],
        micros[micros.len() - 1]
    );
    Ok(())
}

//! Rail-only vs rail-optimized fabric cost (Wang et al. §6.5, Table 2), then a sweep over switch
//! radix, cluster size and HB-domain size. Prints Table 2 next to the paper's numbers and the
//! sweep as CSV on stdout.
//!
//! Run: `cargo run --release -p moe-planner-examples --example rail_only_cost`

use rail_network::RailNetworkError;
use rail_network::fabric::{FabricParams, PAPER_TABLE2, PriceModel, compare_fabrics};

fn main() -> Result<(), RailNetworkError> {
    let prices = PriceModel::default();
    println!("Table 2 (K = 256 GH200 domains), paper / ours:");
    println!("    N  radix   SOTA #SW   rail-only #SW     SOTA #TR      rail-only #TR   reduction");
    for (n, k, sw, ro_sw, tr, ro_tr, pct) in PAPER_TABLE2 {
        let p = FabricParams::new(n, 256, k);
        let c = compare_fabrics(&p, &prices)?;
        println!(
            "{n:>6} {k:>5} {sw:>5}/{:<5} {ro_sw:>6}/{:<6} {tr:>7}/{:<7} {ro_tr:>7}/{:<7} {pct}%/{:.1}%",
            c.rail_optimized.switches,
            c.rail_only.switches,
            c.rail_optimized.transceivers,
            c.rail_only.transceivers,
            c.cost_reduction * 100.0
        );
    }
    println!();
    println!(
        "gpus,hb_domain,radix,opt_tiers,opt_switches,opt_transceivers,opt_cost_usd,ro_tiers,ro_switches,ro_transceivers,ro_cost_usd,cost_reduction"
    );
    for gpus in [4096u64, 16384, 32768, 65536, 131_072] {
        for hb_domain in [8u64, 256] {
            for radix in [32u64, 64, 128, 256, 512] {
                let p = FabricParams {
                    gpus,
                    hb_domain,
                    radix,
                };
                let c = compare_fabrics(&p, &prices)?;
                let (o, r) = (&c.rail_optimized, &c.rail_only);
                println!(
                    "{gpus},{hb_domain},{radix},{},{},{},{:.0},{},{},{},{:.0},{:.4}",
                    o.tiers,
                    o.switches,
                    o.transceivers,
                    o.cost_usd,
                    r.tiers,
                    r.switches,
                    r.transceivers,
                    r.cost_usd,
                    c.cost_reduction
                );
            }
        }
    }
    Ok(())
}

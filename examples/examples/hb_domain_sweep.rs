//! The rail-only paper's sweeps on GH200-class hardware: iteration time against HB-domain size
//! (Fig. 9), HB and network bandwidth (Fig. 10) and global batch (Fig. 11), each at the best
//! parallelization found by the exhaustive search, plus the all-to-all slowdown (Appendix D).
//! Writes CSV files and `fig9.svg` to `examples/out/` and prints the headline numbers.
//!
//! Run: `cargo run --release -p moe-planner-examples --example hb_domain_sweep`

use std::error::Error;
use std::fs;
use std::io::Write;
use std::path::Path;

use plotters::prelude::*;
use rail_network::compute::ComputeModel;
use rail_network::model::model_preset;
use rail_network::sweeps::{
    SweepPoint, all_to_all_slowdown_sweep, bandwidth_sweep, batch_sweep, hb_domain_sweep,
};
use rail_network::system::system_preset;

const HEADER: &str = "model,gpus,hb_domain,global_batch,hb_gb_per_s,network_gbps,iteration_time_s,ideal_time_s,relative_performance,tp,pp,dp,tp_hb,pp_hb,dp_hb,micro_batch,interleave";

fn csv_line(model: &str, p: &SweepPoint) -> String {
    let b = &p.best;
    format!(
        "{model},{},{},{},{:.0},{:.0},{:.4},{:.4},{:.4},{},{},{},{},{},{},{},{}",
        p.gpus,
        p.hb_domain,
        p.global_batch,
        p.hb_bytes_per_s / 1e9,
        p.network_bytes_per_s * 8.0 / 1e9,
        p.iteration_time_s,
        p.ideal_time_s,
        p.relative_performance,
        b.tp,
        b.pp,
        b.dp,
        b.tp_hb,
        b.pp_hb,
        b.dp_hb,
        b.micro_batch,
        b.interleave
    )
}

fn write_csv(path: &Path, rows: &[(String, SweepPoint)]) -> Result<(), Box<dyn Error>> {
    let mut f = fs::File::create(path)?;
    writeln!(f, "{HEADER}")?;
    for (model, p) in rows {
        writeln!(f, "{}", csv_line(model, p))?;
    }
    Ok(())
}

type Series = Vec<(String, Vec<(f64, f64)>)>;

fn plot_fig9(path: &Path, series: &Series) -> Result<(), Box<dyn Error>> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let y_max = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        * 1.05;
    let x_max = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Iteration time relative to the ideal vs HB-domain size (Fig. 9)",
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 1f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("log2(HB-domain size K)")
        .y_desc("iteration time / any-to-any ideal")
        .draw()?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("out");
    fs::create_dir_all(&out)?;
    let gh200 = system_preset("gh200")?;
    let compute = ComputeModel::paper();
    let hb_sizes: Vec<u64> = (0..=10).map(|e| 1u64 << e).collect();

    // Fig. 9: GPT-1T at B = 4096 and GPT-146B at B = 1024.
    let mut rows = Vec::new();
    let mut series: Series = Vec::new();
    for (name, batch) in [("gpt-1t", 4096u64), ("gpt-145.6b", 1024)] {
        let model = model_preset(name)?;
        for gpus in [16384u64, 32768, 65536] {
            let pts = hb_domain_sweep(&model, &gh200, &compute, gpus, batch, &hb_sizes)?;
            let (k8, k256) = (&pts[3], &pts[8]);
            println!(
                "Fig. 9 {name:<11} N = {gpus:>5}: K=1 {:7.2} s, K=8 {:7.2} s, K=256 {:7.2} s, ideal {:7.2} s; K=256 is {:.1}% slower than ideal (K 1->8 gain {:.1}%, 8->256 gain {:.1}%)",
                pts[0].iteration_time_s,
                k8.iteration_time_s,
                k256.iteration_time_s,
                k256.ideal_time_s,
                (k256.iteration_time_s / k256.ideal_time_s - 1.0) * 100.0,
                (1.0 - k8.iteration_time_s / pts[0].iteration_time_s) * 100.0,
                (1.0 - k256.iteration_time_s / k8.iteration_time_s) * 100.0,
            );
            let line = pts
                .iter()
                .map(|p| {
                    (
                        (p.hb_domain as f64).log2(),
                        p.iteration_time_s / p.ideal_time_s,
                    )
                })
                .collect();
            series.push((format!("{name} N={gpus}"), line));
            rows.extend(pts.into_iter().map(|p| (name.to_string(), p)));
        }
    }
    write_csv(&out.join("fig9_hb_domain.csv"), &rows)?;
    plot_fig9(&out.join("fig9.svg"), &series)?;

    // Fig. 10: GPT-1T on 32768 GPUs, K = 8 and 256, HB 2.4-9.6 Tbps, network 100-800 Gbps.
    let model = model_preset("gpt-1t")?;
    let hb_bw = [300e9, 600e9, 900e9, 1200e9];
    let net_bw = [12.5e9, 25e9, 50e9, 100e9];
    let mut rows = Vec::new();
    for k in [8u64, 256] {
        let sys = rail_network::system::SystemSpec {
            hb_domain: k,
            ..gh200
        };
        let pts = bandwidth_sweep(&model, &sys, &compute, 32768, 4096, &hb_bw, &net_bw)?;
        let at = |hb: usize, net: usize| pts[net * hb_bw.len() + hb].iteration_time_s;
        println!(
            "Fig. 10 K = {k:>3}: HB 2.4->9.6 Tbps at 400 Gbps saves {:.1}%; network 100->400 Gbps at 7.2 Tbps saves {:.1}%",
            (1.0 - at(3, 2) / at(0, 2)) * 100.0,
            (1.0 - at(2, 2) / at(2, 0)) * 100.0
        );
        rows.extend(pts.into_iter().map(|p| ("gpt-1t".to_string(), p)));
    }
    write_csv(&out.join("fig10_bandwidth.csv"), &rows)?;

    // Fig. 11: GPT-1T on 32768 GPUs, B = 256..4096, several K.
    let batches = [256u64, 512, 1024, 2048, 4096];
    let pts = batch_sweep(
        &model,
        &gh200,
        &compute,
        32768,
        &[8, 64, 256, 1024],
        &batches,
    )?;
    for p in pts
        .iter()
        .filter(|p| p.global_batch == 256 || p.global_batch == 4096)
    {
        println!(
            "Fig. 11 K = {:>4} B = {:>4}: {:7.2} s, relative performance {:.1}%",
            p.hb_domain,
            p.global_batch,
            p.iteration_time_s,
            p.relative_performance * 100.0
        );
    }
    let rows: Vec<_> = pts.into_iter().map(|p| ("gpt-1t".to_string(), p)).collect();
    write_csv(&out.join("fig11_batch.csv"), &rows)?;

    // Appendix D: all-to-all slowdown of rail-only, 128 domains, GH200 bandwidths.
    let mut f = fs::File::create(out.join("appendix_d_alltoall.csv"))?;
    writeln!(f, "hb_domain,domains,bandwidth_ratio,slowdown")?;
    for p in all_to_all_slowdown_sweep(&[2, 8, 32, 128, 256], 128, 900e9, 50e9)? {
        writeln!(
            f,
            "{},{},{:.1},{:.5}",
            p.hb_domain, p.domains, p.bandwidth_ratio, p.slowdown
        )?;
        println!(
            "App. D K = {:>3}: rail-only all-to-all {:.2}% slower (C_S/C_F = {:.2}%)",
            p.hb_domain,
            p.slowdown * 100.0,
            100.0 / p.bandwidth_ratio
        );
    }
    println!("wrote CSV files and fig9.svg to {}", out.display());
    Ok(())
}

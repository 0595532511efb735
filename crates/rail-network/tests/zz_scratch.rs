//! scratch
use rail_network::{compute::ComputeModel, iteration::IterationModel, model::GptModel, system::system_preset};
use rail_network::search::{search, SearchOptions};
#[test]
fn work() {
    let n: u64 = 963761198400;
    for (k, l, b, dims) in [(1u64, n, n, n), (n, n, n, n), (8, 1<<40, 1<<40, 1<<40), (1<<20, 1<<40, 1<<40, 1<<40), (1, 720720, 720720, 720720), (720720, 720720, 720720, 720720)] {
        let nn = if k == 720720 || l == 720720 { 720720 } else if l == 1<<40 { 1<<40 } else { n };
        let mut sys = system_preset("gh200").unwrap();
        sys.hb_domain = k; sys.memory_bytes = f64::MAX;
        let m = GptModel { heads: dims, hidden: dims, layers: l, seq_len: dims, vocab: 5 };
        let im = IterationModel::new(m, sys, ComputeModel::paper()).unwrap();
        let t = std::time::Instant::now();
        let r = search(&im, nn, b, &SearchOptions::default());
        eprintln!("k={k} n={nn}: {:?} in {:?}", r.map(|r| r.evaluated), t.elapsed());
    }
}

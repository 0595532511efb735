//! Rank mapping and job traffic: small grids worked by hand and the rail-only §3 claims.

use comm_cost_model::InputError;
use proptest::prelude::*;
use rail_network::RailNetworkError;
use rail_network::mapping::RankMapping;
use rail_network::model::{GptModel, model_preset};
use rail_network::parallel::{ExpertParallelism, Parallelization};
use rail_network::traffic::{CollectiveAlgorithm, JobTraffic, TrafficKind, job_traffic};

fn small_model() -> GptModel {
    GptModel {
        heads: 8,
        hidden: 64,
        layers: 8,
        seq_len: 32,
        vocab: 1000,
    }
}

/// `(t_h, t_l)`, `(p_h, p_l)`, `(d_h, d_l)` with `b = 1`, `v = 1` and `m = 4` micro-batches.
fn config(t: (u64, u64), p: (u64, u64), d: (u64, u64)) -> Parallelization {
    Parallelization {
        tp: t.0 * t.1,
        pp: p.0 * p.1,
        dp: d.0 * d.1,
        tp_hb: t.0,
        pp_hb: p.0,
        dp_hb: d.0,
        micro_batch: 1,
        global_batch: 4 * d.0 * d.1,
        interleave: 1,
    }
}

fn map(par: &Parallelization, model: &GptModel, gpus: u64, k: u64) -> RankMapping {
    RankMapping::new(model, par, gpus, k).unwrap()
}

/// GPT-1T on DGX A100 as MegatronLM Table 1 runs it: t = 8, p = 64, 3072 GPUs, batch 3072.
fn gpt_1t_dgx() -> RankMapping {
    let par = Parallelization::with_default_mapping(8, 64, 6, 1, 3072, 1, 8).unwrap();
    map(&par, &model_preset("gpt-1t").unwrap(), 3072, 8)
}

/// GPT-1T on 16 GH200 (rail-only §3.2): K = 256, d = 64 = 32 in-domain x 2 domains,
/// t = 8 in-domain, p = 8 across domains, batch 4096.
fn gpt_1t_gh200() -> RankMapping {
    let par = Parallelization::with_default_mapping(8, 8, 64, 1, 4096, 1, 256).unwrap();
    assert_eq!((par.tp_hb, par.dp_hb, par.pp_hb), (8, 32, 1));
    map(&par, &model_preset("gpt-1t").unwrap(), 4096, 256)
}

#[test]
fn gpt_1t_dgx_a100_reproduces_rail_only_fig3() {
    let map = gpt_1t_dgx();
    let tr = job_traffic(&map, CollectiveAlgorithm::Ring);
    let s = tr.summary().unwrap();
    assert!(s.idle_pair_fraction > 0.99, "{}", s.idle_pair_fraction);
    let tp = s.by_kind[0].share + s.by_kind[1].share;
    assert!(tp > 0.75, "TP share {tp}");
    // < 0.04% of ordered pairs carry TP traffic (3072 ring edges of 3072 * 3071 pairs).
    let tp_pairs = s.by_kind[0].pairs as f64 / s.ordered_pairs as f64;
    assert!(tp_pairs < 0.0004, "{tp_pairs}");
    assert!(!s.crosses_rails);
    // Per pair: TP AllGather 7/8 · 2 b s h · 4 · (l / p) · m = 7/8 · 104.8576 MB · 4096.
    let tp = tr.get(0, 1).unwrap().bytes[TrafficKind::TpAllGather as usize];
    assert!((tp - 0.875 * 104_857_600.0 * 4096.0).abs() < 1.0);
    // PP: 2 b s h / t · m = 13.1072 MB · 512 from stage 0 (GPU 0) to stage 1 (domain 6).
    let pp = tr.get(0, 48).unwrap().bytes[TrafficKind::PpSendRecv as usize];
    assert!((pp - 13_107_200.0 * 512.0).abs() < 1.0);
}

#[test]
fn gpt_1t_gh200_reproduces_rail_only_fig5() {
    let s = job_traffic(&gpt_1t_gh200(), CollectiveAlgorithm::Hierarchical)
        .summary()
        .unwrap();
    assert!(s.idle_pair_fraction > 0.99);
    assert!(s.by_kind[0].share + s.by_kind[1].share > 0.5);
    assert!(!s.crosses_rails);
    // Hierarchical AllReduce keeps (31/32) / (31/32 + 1/64) = 98.4% of DP bytes in the domain.
    let dp = &s.by_kind[TrafficKind::DpAllReduce as usize];
    assert!((dp.hb_bytes / dp.bytes - (31.0 / 32.0) / (31.0 / 32.0 + 1.0 / 64.0)).abs() < 1e-9);
}

#[test]
fn ring_dp_across_a_domain_grid_crosses_rails_but_hierarchical_does_not() {
    // d = 2 in-domain x 2 domains: the flat ring 0 -> 1 -> 2... hops between rails.
    let model = small_model();
    let c = config((2, 1), (1, 1), (2, 2));
    let map = map(&c, &model, 8, 4);
    let ring = job_traffic(&map, CollectiveAlgorithm::Ring);
    let hier = job_traffic(&map, CollectiveAlgorithm::Hierarchical);
    assert!(ring.summary().unwrap().crosses_rails);
    assert!(!hier.summary().unwrap().crosses_rails);
}

#[test]
fn pipeline_and_dp_bytes_match_hand_arithmetic() {
    // t = 2 in 2-GPU domains, p = 2 and d = 2 across 4 domains.
    let model = small_model();
    let c = config((2, 1), (1, 2), (1, 2));
    let map = map(&c, &model, 8, 2);
    let tr = job_traffic(&map, CollectiveAlgorithm::Ring);
    // Stage 0 of (t 0, d 0) is GPU 0; stage 1 is domain 2 (t_l d_l = 2 domains per stage).
    assert_eq!(map.pipeline_groups()[0], vec![0, 4]);
    // PP: e b s h / t = 2 * 1 * 32 * 64 / 2 = 2048 bytes per micro-batch, m = 4.
    let pp = tr.get(0, 4).unwrap().bytes[TrafficKind::PpSendRecv as usize];
    assert_eq!(pp, 2048.0 * 4.0);
    // DP ring of 2: 2 (n-1)/n D with D = 2 bytes * (8 / 2 layers) * S_T / 2 and
    // S_T = 12 h² + 13 h (the one parameter formula of GptModel).
    assert_eq!(map.data_groups()[0], vec![0, 2]);
    let dp = tr.get(0, 2).unwrap().bytes[TrafficKind::DpAllReduce as usize];
    let s_t = 12.0 * 4096.0 + 13.0 * 64.0;
    assert_eq!(dp, 2.0 * 0.5 * (2.0 * 4.0 * s_t / 2.0));
}

#[test]
fn interleaving_adds_the_wraparound_link() {
    let model = small_model();
    let mut c = config((1, 1), (1, 4), (1, 1));
    c.interleave = 2;
    let map = map(&c, &model, 4, 1);
    let tr = job_traffic(&map, CollectiveAlgorithm::Ring);
    let per_boundary = 2.0 * 32.0 * 64.0 * 4.0; // e s h m
    assert_eq!(tr.get(0, 1).unwrap().bytes[2], 2.0 * per_boundary);
    assert_eq!(tr.get(3, 0).unwrap().bytes[2], per_boundary);
}

#[test]
fn expert_all_to_all_hierarchical_stays_in_rails() {
    let model = small_model();
    let c = config((2, 1), (1, 1), (2, 2));
    let expert = ExpertParallelism {
        ep: 4,
        esp: 2,
        moe_every: 2,
        top_k: 1,
    };
    let map = map(&c, &model, 8, 4).with_experts(expert).unwrap();
    let placement = map.expert_placement().unwrap();
    assert!(placement.esp_in_one_domain && !placement.ep_in_one_domain);
    assert_eq!(placement.case, 2);
    let flat = job_traffic(&map, CollectiveAlgorithm::Ring);
    let hier = job_traffic(&map, CollectiveAlgorithm::Hierarchical);
    assert!(flat.summary().unwrap().crosses_rails);
    assert!(!hier.summary().unwrap().crosses_rails);
    // Both deliver AlltoAll bytes; the two-hop algorithm forwards, so it moves more.
    let ep = |t: &JobTraffic| t.summary().unwrap().by_kind[4].bytes;
    assert!(ep(&hier) > ep(&flat) && ep(&flat) > 0.0);
}

#[test]
fn configurations_that_do_not_tile_are_rejected() {
    let model = small_model();
    let c = config((2, 1), (1, 1), (1, 2));
    // t_h d_h p_h = 2 != K = 4.
    assert!(matches!(
        RankMapping::new(&model, &c, 4, 4),
        Err(RailNetworkError::Input(InputError::SizeMismatch { .. }))
    ));
    // K does not divide N.
    assert!(matches!(
        RankMapping::new(&model, &c, 6, 4),
        Err(RailNetworkError::Input(InputError::NotDivisible { .. }))
    ));
    assert!(matches!(
        RankMapping::new(&model, &c, 0, 4),
        Err(RailNetworkError::Input(InputError::CountTooSmall { .. }))
    ));
    // t = 3 does not divide h = 64.
    let c3 = config((3, 1), (1, 1), (1, 1));
    assert!(matches!(
        RankMapping::new(&model, &c3, 3, 3),
        Err(RailNetworkError::Input(InputError::NotDivisible { .. }))
    ));
    // A zero split part.
    let c0 = config((0, 1), (1, 1), (1, 1));
    assert!(matches!(
        RankMapping::new(&model, &c0, 1, 1),
        Err(RailNetworkError::Input(InputError::CountTooSmall { .. }))
    ));
    // ep must divide d.
    let expert = ExpertParallelism {
        ep: 3,
        esp: 1,
        moe_every: 1,
        top_k: 1,
    };
    let ok = RankMapping::new(&model, &config((2, 1), (1, 1), (1, 2)), 4, 2).unwrap();
    assert!(matches!(
        ok.with_experts(expert),
        Err(RailNetworkError::Input(InputError::NotDivisible { .. }))
    ));
}

#[test]
fn out_of_range_indices_are_none() {
    let model = small_model();
    let m = map(&config((2, 1), (1, 2), (1, 2)), &model, 8, 2);
    assert_eq!(m.gpu(1, 1, 1), Some(7));
    assert_eq!(m.gpu(2, 0, 0), None);
    assert_eq!(m.domain_of(8), None);
    assert_eq!(m.rail_of(7), Some(1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every rank gets its own GPU; TP groups with t_l = 1 stay in one domain; members of any
    /// group that differ in domain share a rail when they differ only in network parts.
    #[test]
    fn mapping_is_a_bijection_and_respects_domains(
        th in 1u64..3, tl in 1u64..3, dh in 1u64..3, dl in 1u64..3,
        ph in 1u64..3, pl in 1u64..3,
    ) {
        let model = GptModel { heads: 12, hidden: 48, layers: 24, seq_len: 48, vocab: 1000 };
        let c = config((th, tl), (ph, pl), (dh, dl));
        let k = th * dh * ph;
        let n = k * tl * dl * pl;
        let map = map(&c, &model, n, k);
        let mut seen = vec![false; n as usize];
        for g in map.tensor_groups() {
            for &x in &g {
                prop_assert!(!seen[x as usize]);
                seen[x as usize] = true;
            }
            if tl == 1 {
                prop_assert!(g.iter().all(|&x| map.domain_of(x) == map.domain_of(g[0])));
            }
        }
        prop_assert!(seen.iter().all(|&s| s));
        let hier = job_traffic(&map, CollectiveAlgorithm::Hierarchical);
        prop_assert!(!hier.summary().unwrap().crosses_rails);
        // Pipeline and DP groups with no in-domain part run entirely along rails.
        if ph == 1 {
            for g in map.pipeline_groups() {
                prop_assert!(g.iter().all(|&x| map.rail_of(x) == map.rail_of(g[0])));
            }
        }
    }
}

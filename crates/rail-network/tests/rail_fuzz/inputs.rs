//! Valid models, systems, parallelizations, clusters and runs, with hostile edits.

use super::*;

/// One field of a struct (by index, modulo its field count) set to a hostile integer or float,
/// whichever the field holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Poke {
    pub field: usize,
    pub int: u64,
    pub float: f64,
}

pub(crate) fn poke() -> impl Strategy<Value = Poke> {
    (0_usize..64, u64_value(), f64_value()).prop_map(|(field, int, float)| Poke {
        field,
        int,
        float,
    })
}

/// No edit three times in four, else one or two.
pub(crate) fn pokes() -> impl Strategy<Value = Vec<Poke>> {
    prop_oneof![
        3 => Just(Vec::new()),
        1 => prop::collection::vec(poke(), 1..=2),
    ]
}

pub(crate) fn poke_model(m: &mut GptModel, k: Poke) {
    match k.field % 5 {
        0 => m.heads = k.int,
        1 => m.hidden = k.int,
        2 => m.layers = k.int,
        3 => m.seq_len = k.int,
        _ => m.vocab = k.int,
    }
}

pub(crate) fn poke_system(s: &mut SystemSpec, k: Poke) {
    match k.field % 6 {
        0 => s.hb_domain = k.int,
        1 => s.peak_flop_per_s = k.float,
        2 => s.hb_bytes_per_s = k.float,
        3 => s.network_bytes_per_s = k.float,
        4 => s.memory_bytes = k.float,
        _ => s.latency_s = k.float,
    }
}

pub(crate) fn poke_compute(c: &mut ComputeModel, k: Poke) {
    match k.field % 6 {
        0 => c.attention_slowdown = k.float,
        1 => c.gemm_efficiency = k.float,
        2 => c.half_efficiency_hidden = k.float,
        3 => c.bytes_per_param = k.float,
        4 => c.recompute = recompute(k.int),
        _ => {
            c.attention_scope = if k.int % 2 == 0 {
                AttentionScope::Block
            } else {
                AttentionScope::Scores
            }
        }
    }
}

pub(crate) fn poke_par(p: &mut Parallelization, k: Poke) {
    match k.field % 9 {
        0 => p.tp = k.int,
        1 => p.pp = k.int,
        2 => p.dp = k.int,
        3 => p.tp_hb = k.int,
        4 => p.pp_hb = k.int,
        5 => p.dp_hb = k.int,
        6 => p.micro_batch = k.int,
        7 => p.global_batch = k.int,
        _ => p.interleave = k.int,
    }
}

pub(crate) fn recompute(i: u64) -> Recompute {
    [Recompute::None, Recompute::Selective, Recompute::Full][(i % 3) as usize]
}

/// A small valid GPT model (heads divide hidden), then the edits.
pub(crate) fn model() -> impl Strategy<Value = GptModel> {
    (
        0_u32..4,
        0_u32..5,
        1_u64..=12,
        2_u32..7,
        1_u64..2000,
        pokes(),
    )
        .prop_map(|(a, h, layers, s, vocab, edits)| {
            let heads = 1 << a;
            let mut m = GptModel {
                heads,
                hidden: heads << h,
                layers,
                seq_len: 1 << s,
                vocab,
            };
            edits.into_iter().for_each(|k| poke_model(&mut m, k));
            m
        })
}

/// A preset system with HB domains of 1, 2, 4, 8 or 256 GPUs, then the edits.
pub(crate) fn system() -> impl Strategy<Value = SystemSpec> {
    (
        0_usize..SYSTEM_PRESET_NAMES.len(),
        prop::sample::select(vec![1_u64, 2, 4, 8, 8, 256]),
        pokes(),
    )
        .prop_map(|(i, k, edits)| {
            let mut s = system_preset(SYSTEM_PRESET_NAMES[i]).unwrap();
            s.hb_domain = k;
            edits.into_iter().for_each(|e| poke_system(&mut s, e));
            s
        })
}

pub(crate) fn compute() -> impl Strategy<Value = ComputeModel> {
    (any::<bool>(), pokes()).prop_map(|(calibrated, edits)| {
        let mut c = if calibrated {
            ComputeModel::calibrated()
        } else {
            ComputeModel::paper()
        };
        edits.into_iter().for_each(|e| poke_compute(&mut c, e));
        c
    })
}

/// A divisor of `n` up to 64, picked by `index` (never enumerates a huge `n`).
pub(crate) fn pick_divisor(n: u64, index: usize) -> u64 {
    let ds: Vec<u64> = (1..=64).filter(|&x| n % x == 0).collect();
    ds.get(index % ds.len().max(1)).copied().unwrap_or(1)
}

/// Choices that build a parallelization satisfying Eq. 11–18 for a (valid) model, then edits
/// of its fields, the GPU count (field 9) and the HB-domain size (field 10).
#[derive(Debug, Clone)]
pub(crate) struct ParChoice {
    pub t: usize,
    pub p: usize,
    pub d: u64,
    pub b: u64,
    pub m: u64,
    pub v: usize,
    pub k: usize,
    pub edits: Vec<Poke>,
}

pub(crate) fn par_choice() -> impl Strategy<Value = ParChoice> {
    (
        (0_usize..8, 0_usize..8, 1_u64..=4),
        (1_u64..=4, 1_u64..=4, 0_usize..8, 0_usize..8),
        pokes(),
    )
        .prop_map(|((t, p, d), (b, m, v, k), edits)| ParChoice {
            t,
            p,
            d,
            b,
            m,
            v,
            k,
            edits,
        })
}

/// The configuration, its GPU count and HB-domain size.
pub(crate) fn build_par(model: &GptModel, c: &ParChoice) -> (Parallelization, u64, u64) {
    let t_max = gcd(gcd(model.hidden, model.seq_len), model.heads);
    let t = pick_divisor(t_max, c.t);
    let p = pick_divisor(model.layers, c.p);
    let v = if p > 1 {
        pick_divisor(model.layers / p.max(1), c.v)
    } else {
        1
    };
    let batch = c.d * c.b * c.m;
    let gpus = t.saturating_mul(p).saturating_mul(c.d);
    let k = pick_divisor(gpus, c.k);
    let mut par = Parallelization::with_default_mapping(t, p, c.d, c.b, batch, v, k).unwrap_or(
        Parallelization {
            tp: t,
            pp: p,
            dp: c.d,
            tp_hb: 1,
            pp_hb: 1,
            dp_hb: 1,
            micro_batch: c.b,
            global_batch: batch,
            interleave: v,
        },
    );
    let (mut gpus, mut k) = (gpus, k);
    for e in &c.edits {
        match e.field % 11 {
            9 => gpus = e.int,
            10 => k = e.int,
            _ => poke_par(&mut par, *e),
        }
    }
    (par, gpus, k)
}

/// Expert parallelism whose degrees divide those of `par` (picked by the same choices), then the
/// edits.
pub(crate) fn build_expert(
    model: &GptModel,
    par: &Parallelization,
    choice: &ParChoice,
    top_k: u64,
    edits: &[Poke],
) -> ExpertParallelism {
    let mut expert = ExpertParallelism {
        ep: pick_divisor(par.dp, choice.k),
        esp: pick_divisor(par.tp, choice.t),
        moe_every: pick_divisor(model.layers / par.pp.max(1), choice.v),
        top_k,
    };
    for e in edits {
        match e.field % 4 {
            0 => expert.ep = e.int,
            1 => expert.esp = e.int,
            2 => expert.moe_every = e.int,
            _ => expert.top_k = e.int,
        }
    }
    expert
}

pub(crate) fn keep() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 0_usize..12, 1 => Just(usize::MAX)]
}

pub(crate) fn cap() -> impl Strategy<Value = u64> {
    prop_oneof![2 => Just(0_u64), 1 => 1_u64..8, 1 => u64_value()]
}

/// A count for a search: usually `K` times a small factor (so `K` divides it), else hostile.
pub(crate) fn search_count() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![3 => Just(None), 1 => u64_value().prop_map(Some)]
}

pub(crate) fn short_list<S: Strategy>(element: S) -> impl Strategy<Value = Vec<S::Value>> {
    vec_of(element, 2)
}

/// A cluster: usually `K` times a small domain count on an even radix, else hostile counts.
pub(crate) fn fabric_params() -> impl Strategy<Value = FabricParams> {
    let k = prop_oneof![3 => prop::sample::select(vec![1_u64, 2, 4, 8, 16]), 1 => u64_value()];
    let domains = prop_oneof![3 => 1_u64..=32, 1 => u64_value()];
    let radix = prop_oneof![
        3 => prop::sample::select(vec![4_u64, 8, 16, 64]),
        1 => Just(2_u64),
        1 => u64_value(),
    ];
    (k, domains, radix)
        .prop_map(|(k, domains, radix)| FabricParams::new(k.saturating_mul(domains), k, radix))
}

pub(crate) fn poke_run(r: &mut PublishedRun, k: Poke) {
    match k.field % 6 {
        0 => r.measured_s = k.float,
        1 => r.paper_computed_s = Some(k.float),
        2 => r.paper_computed_s = None,
        3 => poke_model(&mut r.model, k),
        4 => poke_par(&mut r.parallelization, k),
        _ => r.recompute = recompute(k.int),
    }
}

pub(crate) fn runs() -> &'static [PublishedRun] {
    static RUNS: OnceLock<Vec<PublishedRun>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let mut runs = published_runs().unwrap();
        runs.extend(held_out_runs().unwrap());
        runs
    })
}

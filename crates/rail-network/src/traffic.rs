//! Per-GPU-pair traffic of one training iteration (rail-only, Wang et al., §3, Fig. 3–5).
//!
//! Moved here from `topology-partition` so rail-only §3 has one home: the job is a
//! [`GptModel`](crate::model::GptModel) under a validated
//! [`Parallelization`](crate::parallel::Parallelization) placed by a [`RankMapping`].

use std::collections::{BTreeMap, HashMap};

use comm_cost_model::units::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::mapping::RankMapping;
use comm_cost_model::{InputError, check_count_u64, check_divides, check_finite_result};

/// Bytes per activation, gradient and parameter element: 16-bit (FP16/BF16), as the
/// iteration-time model of rail-only §5 assumes (`D = 2 b h s`, `D^d = 2 l S_T / (p t)`).
pub const BYTES_PER_ELEMENT: f64 = 2.0;

/// Which collective algorithm carries TP, DP and ESP collectives and EP AlltoAll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollectiveAlgorithm {
    /// NCCL's ring over the group in rank order; AlltoAll sends directly to every peer.
    Ring,
    /// Two-tier algorithms (rail-only Eq. 1, Appendix D): rings along rails and inside HB
    /// domains; AlltoAll forwards inside the domain, then along the rail. Groups that do not
    /// form a grid over HB domains fall back to the ring.
    Hierarchical,
}

/// The kinds of traffic of a PTD-P (+EP/ESP) iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrafficKind {
    /// Tensor-parallel AllGather (sequence parallelism).
    TpAllGather,
    /// Tensor-parallel ReduceScatter (sequence parallelism).
    TpReduceScatter,
    /// Pipeline point-to-point activations and gradients.
    PpSendRecv,
    /// Data-parallel gradient AllReduce.
    DpAllReduce,
    /// Expert-parallel AlltoAll (dispatch and combine).
    EpAllToAll,
    /// Expert-sharding AllGather (Parm's ESP-AllGather).
    EspAllGather,
    /// Expert-sharding ReduceScatter.
    EspReduceScatter,
}

impl TrafficKind {
    /// Every kind, in the order of [`PairTraffic::bytes`].
    pub const ALL: [TrafficKind; 7] = [
        TrafficKind::TpAllGather,
        TrafficKind::TpReduceScatter,
        TrafficKind::PpSendRecv,
        TrafficKind::DpAllReduce,
        TrafficKind::EpAllToAll,
        TrafficKind::EspAllGather,
        TrafficKind::EspReduceScatter,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// Bytes one GPU sends another in one iteration, by kind (indexed as [`TrafficKind::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairTraffic {
    /// Sending GPU.
    pub src: u64,
    /// Receiving GPU.
    pub dst: u64,
    /// Bytes per kind.
    pub bytes: [Bytes; 7],
}

impl PairTraffic {
    /// All bytes of the pair.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`NonFinite`) when the sum is not finite (bytes near
    /// `f64::MAX` or NaN built by hand; [`job_traffic`] never makes one).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::traffic::PairTraffic;
    /// let p = PairTraffic { src: 0, dst: 1, bytes: [1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.5] };
    /// assert_eq!(p.total_bytes()?, 3.5);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn total_bytes(&self) -> Result<Bytes, RailNetworkError> {
        Ok(check_finite_result(
            "bytes of a GPU pair",
            self.bytes.iter().sum(),
        )?)
    }
}

/// The sparse `N x N` traffic matrix of one iteration: only pairs that carry bytes, sorted by
/// `(src, dst)`.
///
/// Deserializing runs [`JobTraffic::validate`], so a parsed matrix is valid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "JobTrafficFields")]
pub struct JobTraffic {
    /// Number of GPUs `N`.
    pub gpus: u64,
    /// HB domain size `K`.
    pub hb_domain: u64,
    /// Non-zero entries, sorted by `(src, dst)`.
    pub entries: Vec<PairTraffic>,
}

/// Bytes and GPU pairs of one traffic kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KindShare {
    /// The kind.
    pub kind: TrafficKind,
    /// Bytes of this kind in the iteration.
    pub bytes: Bytes,
    /// Fraction of all bytes (0 to 1).
    pub share: f64,
    /// Bytes of this kind that stay inside an HB domain.
    pub hb_bytes: Bytes,
    /// Ordered GPU pairs carrying this kind.
    pub pairs: u64,
}

/// What the traffic matrix says about the network (rail-only Fig. 3–5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficSummary {
    /// Number of GPUs.
    pub gpus: u64,
    /// Ordered pairs of distinct GPUs, `N (N - 1)`.
    pub ordered_pairs: u64,
    /// Ordered pairs carrying any byte.
    pub busy_pairs: u64,
    /// Fraction of ordered pairs carrying nothing.
    pub idle_pair_fraction: f64,
    /// All bytes of the iteration.
    pub total_bytes: Bytes,
    /// Bytes inside HB domains.
    pub hb_bytes: Bytes,
    /// Bytes between HB domains (the network domain).
    pub network_bytes: Bytes,
    /// Network bytes between GPUs of different rails (would need spine switches).
    pub cross_rail_network_bytes: Bytes,
    /// Whether any network byte crosses rails.
    pub crosses_rails: bool,
    /// Per-kind breakdown, in [`TrafficKind::ALL`] order.
    pub by_kind: Vec<KindShare>,
}

/// The serialized form of [`JobTraffic`], validated on the way in.
#[derive(Deserialize)]
struct JobTrafficFields {
    gpus: u64,
    hb_domain: u64,
    entries: Vec<PairTraffic>,
}

impl TryFrom<JobTrafficFields> for JobTraffic {
    type Error = RailNetworkError;

    fn try_from(f: JobTrafficFields) -> Result<Self, Self::Error> {
        let traffic = Self {
            gpus: f.gpus,
            hb_domain: f.hb_domain,
            entries: f.entries,
        };
        traffic.validate()?;
        Ok(traffic)
    }
}

impl JobTraffic {
    /// Checks the matrix: `N >= 1` GPUs in HB domains of `K` dividing `N`; every entry a pair of
    /// distinct GPUs below `N`, entries strictly increasing in `(src, dst)` (no repeats), bytes
    /// finite and non-negative with at least one positive.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] for the counts (`CountTooSmall`, `NotDivisible`) and the bytes
    /// (`BadEntry`: row = entry index, column = kind index), [`RailNetworkError::Input`] (`IndexOutOfRange`) for
    /// a GPU index, [`RailNetworkError::BadTrafficEntry`] for a self pair, an entry out of order
    /// or repeated, or one without bytes.
    ///
    /// # Complexity
    ///
    /// `O(entries)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::traffic::{JobTraffic, PairTraffic};
    /// let pair = |src, dst| PairTraffic { src, dst, bytes: [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0] };
    /// let mut t = JobTraffic { gpus: 2, hb_domain: 2, entries: vec![pair(0, 1), pair(1, 0)] };
    /// t.validate()?;
    /// t.entries.reverse();
    /// assert!(t.validate().is_err());
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_count_u64("GPU count N", self.gpus, 1)?;
        check_count_u64("HB-domain size K", self.hb_domain, 1)?;
        check_divides(
            "HB-domain size K must divide the GPU count N",
            self.gpus,
            self.hb_domain,
        )?;
        let mut previous: Option<(u64, u64)> = None;
        for (index, e) in self.entries.iter().enumerate() {
            let bad = |problem| RailNetworkError::BadTrafficEntry {
                index: index as u64,
                src: e.src,
                dst: e.dst,
                problem,
            };
            for gpu in [e.src, e.dst] {
                if gpu >= self.gpus {
                    return Err(RailNetworkError::Input(InputError::IndexOutOfRange {
                        what: "GPU of a traffic entry",
                        index: gpu,
                        size: self.gpus,
                    }));
                }
            }
            if e.src == e.dst {
                return Err(bad("is a GPU sending to itself"));
            }
            if previous.is_some_and(|p| p >= (e.src, e.dst)) {
                return Err(bad("is not after the previous entry in (src, dst) order"));
            }
            previous = Some((e.src, e.dst));
            for (kind, &value) in e.bytes.iter().enumerate() {
                if !value.is_finite() || value < 0.0 {
                    return Err(InputError::BadEntry {
                        what: "job traffic bytes (row = entry, column = kind)",
                        row: index,
                        col: kind,
                        value,
                    }
                    .into());
                }
            }
            if e.bytes.iter().all(|&b| b == 0.0) {
                return Err(bad("carries no bytes"));
            }
        }
        Ok(())
    }

    /// Bytes from `src` to `dst` by kind, if the pair carries any.
    #[must_use]
    pub fn get(&self, src: u64, dst: u64) -> Option<&PairTraffic> {
        self.entries
            .binary_search_by(|e| (e.src, e.dst).cmp(&(src, dst)))
            .ok()
            .and_then(|i| self.entries.get(i))
    }

    /// Idle pairs, bytes by kind, HB vs network bytes and the cross-rail check.
    ///
    /// # Errors
    ///
    /// As [`JobTraffic::validate`]; [`RailNetworkError::Input`] (`NonFinite`) when the total
    /// overflows `f64` (entries near `f64::MAX` built by hand; [`job_traffic`] never makes one).
    ///
    /// # Complexity
    ///
    /// `O(entries)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::traffic::{JobTraffic, PairTraffic};
    /// let pair = |src, dst| PairTraffic { src, dst, bytes: [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0] };
    /// let t = JobTraffic { gpus: 4, hb_domain: 2, entries: vec![pair(0, 1), pair(0, 2)] };
    /// let s = t.summary()?;
    /// assert_eq!((s.hb_bytes, s.network_bytes, s.busy_pairs), (1.0, 1.0, 2));
    /// assert_eq!(s.idle_pair_fraction, 1.0 - 2.0 / 12.0);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn summary(&self) -> Result<TrafficSummary, RailNetworkError> {
        self.validate()?;
        let k = self.hb_domain;
        let mut by_kind: Vec<KindShare> = TrafficKind::ALL
            .iter()
            .map(|&kind| KindShare {
                kind,
                bytes: 0.0,
                share: 0.0,
                hb_bytes: 0.0,
                pairs: 0,
            })
            .collect();
        let (mut hb, mut network, mut cross) = (0.0, 0.0, 0.0);
        for e in &self.entries {
            let same_domain = e.src / k == e.dst / k;
            let total = e.total_bytes()?;
            if same_domain {
                hb += total;
            } else {
                network += total;
                if e.src % k != e.dst % k {
                    cross += total;
                }
            }
            for (share, &bytes) in by_kind.iter_mut().zip(&e.bytes) {
                if bytes > 0.0 {
                    share.bytes += bytes;
                    share.pairs += 1;
                    if same_domain {
                        share.hb_bytes += bytes;
                    }
                }
            }
        }
        // Every byte count is non-negative: a finite total means finite parts.
        let total = check_finite_result("bytes of the iteration", hb + network)?;
        for s in &mut by_kind {
            s.share = if total > 0.0 { s.bytes / total } else { 0.0 };
        }
        let n = self.gpus;
        let ordered_pairs = n.saturating_mul(n.saturating_sub(1));
        let busy = self.entries.len() as u64;
        Ok(TrafficSummary {
            gpus: self.gpus,
            ordered_pairs,
            busy_pairs: busy,
            idle_pair_fraction: if ordered_pairs == 0 {
                1.0
            } else {
                1.0 - busy as f64 / ordered_pairs as f64
            },
            total_bytes: total,
            hb_bytes: hb,
            network_bytes: network,
            cross_rail_network_bytes: cross,
            crosses_rails: cross > 0.0,
            by_kind,
        })
    }
}

/// The per-GPU-pair traffic of one training iteration of the mapped job.
///
/// Message sizes follow rail-only §5.2 with sequence parallelism (`e` =
/// [`BYTES_PER_ELEMENT`] bytes per element):
///
/// * TP: per micro-batch and layer, 4 AllGather and 4 ReduceScatter of `e b s h` bytes, for the
///   `l / p` layers of a stage and `m` micro-batches;
/// * PP: `e b s h / t` bytes per micro-batch across each stage boundary, forward and backward,
///   `v` times with `v` interleaved stages (plus `v - 1` times last-to-first);
/// * DP: one AllReduce of the stage's gradients, `e (l / p) S_T / t` bytes with the model's one
///   parameter formula `S_T = 12 h² + 13 h` ([`GptModel::params_per_layer`](crate::model::GptModel::params_per_layer));
/// * EP (if configured): per MoE layer and micro-batch, 4 AlltoAll (dispatch and combine,
///   forward and backward); each GPU sends `k e b (s / t) h / ep` bytes to each EP peer;
/// * ESP: per MoE layer and micro-batch, 2 AllGather and 2 ReduceScatter of
///   `esp k e b (s / t) h` bytes (Parm's ESP-AllGather / ESP-ReduceScatter).
///
/// Ring collectives send `(n - 1) D / n` per AllGather (twice for AllReduce) to the next member;
/// hierarchical ones run the rail phase and the domain phase of rail-only Eq. 1 (and the
/// two-hop AlltoAll of Appendix D). The mapping was validated on construction, so this cannot
/// fail.
///
/// # Complexity
///
/// `O(N · (1 + ep))` time and space: the output is sparse, and the mapping's limits
/// ([`crate::mapping::MAX_MAPPED_GPUS`], [`crate::mapping::MAX_EXPERT_PAIRS`]) bound it.
///
/// # Examples
///
/// ```
/// use rail_network::mapping::RankMapping;
/// use rail_network::traffic::{job_traffic, CollectiveAlgorithm, TrafficKind};
/// use rail_network::{model::GptModel, parallel::Parallelization};
/// let model = GptModel { heads: 8, hidden: 64, layers: 4, seq_len: 32, vocab: 1000 };
/// // t = 4 inside domains of 4; p = 2 and d = 2 across domains; m = B / (d b) = 4.
/// let par = Parallelization::with_default_mapping(4, 2, 2, 1, 8, 1, 4)?;
/// let map = RankMapping::new(&model, &par, 16, 4)?;
/// let traffic = job_traffic(&map, CollectiveAlgorithm::Ring);
/// assert!(!traffic.summary()?.crosses_rails);
/// // TP ring inside domain 0: GPU 0 sends 3/4 of 2·1·32·64 bytes per AllGather to GPU 1,
/// // 4 AllGathers per layer, 2 layers per stage, 4 micro-batches.
/// let tp = traffic.get(0, 1).unwrap().bytes[TrafficKind::TpAllGather as usize];
/// assert_eq!(tp, 0.75 * 4096.0 * 4.0 * 2.0 * 4.0);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
#[must_use]
pub fn job_traffic(mapping: &RankMapping, algorithm: CollectiveAlgorithm) -> JobTraffic {
    let c = *mapping.parallelization();
    let model = *mapping.model();
    let (t, p) = (c.tp as f64, c.pp as f64);
    let (b, m, v) = (
        c.micro_batch as f64,
        c.micro_batches() as f64,
        c.interleave as f64,
    );
    let (h, s, e) = (model.hidden as f64, model.seq_len as f64, BYTES_PER_ELEMENT);
    let layers_per_stage = model.layers as f64 / p;
    let mut acc = Accumulator::new(mapping, algorithm);

    let tp_bytes = e * b * s * h;
    let tp_times = 4.0 * layers_per_stage * m;
    for g in mapping.tensor_groups() {
        acc.all_gather(&g, tp_bytes, tp_times, TrafficKind::TpAllGather);
        acc.all_gather(&g, tp_bytes, tp_times, TrafficKind::TpReduceScatter);
    }
    let pp_bytes = e * b * s * h / t;
    for g in mapping.pipeline_groups() {
        acc.pipeline(&g, pp_bytes * m, v);
    }
    let dp_bytes = e * layers_per_stage * model.params_per_layer() / t;
    for g in mapping.data_groups() {
        acc.all_reduce(&g, dp_bytes, TrafficKind::DpAllReduce);
    }
    if let Some(x) = mapping.experts() {
        let tokens_bytes = x.top_k as f64 * e * b * (s / t) * h;
        let moe_runs = layers_per_stage / x.moe_every as f64 * m;
        for g in mapping.expert_groups() {
            let shard = tokens_bytes / x.ep as f64;
            acc.all_to_all(&g, shard, 4.0 * moe_runs, TrafficKind::EpAllToAll);
        }
        for g in mapping.esp_groups() {
            let total = x.esp as f64 * tokens_bytes;
            acc.all_gather(&g, total, 2.0 * moe_runs, TrafficKind::EspAllGather);
            acc.all_gather(&g, total, 2.0 * moe_runs, TrafficKind::EspReduceScatter);
        }
    }
    acc.finish()
}

/// A group seen as `x` rails by `y` HB domains: its members per rail and per domain.
struct Grid {
    rails: Vec<Vec<u64>>,
    domains: Vec<Vec<u64>>,
}

/// Sums bytes per ordered pair and kind while collectives are laid out.
struct Accumulator<'a> {
    mapping: &'a RankMapping,
    algorithm: CollectiveAlgorithm,
    pairs: HashMap<(u64, u64), [Bytes; 7]>,
}

impl<'a> Accumulator<'a> {
    fn new(mapping: &'a RankMapping, algorithm: CollectiveAlgorithm) -> Self {
        Self {
            mapping,
            algorithm,
            pairs: HashMap::new(),
        }
    }

    fn add(&mut self, src: u64, dst: u64, kind: TrafficKind, bytes: Bytes) {
        if src != dst && bytes > 0.0 {
            self.pairs.entry((src, dst)).or_insert([0.0; 7])[kind.index()] += bytes;
        }
    }

    /// Every member sends `bytes` to the next member of the ring.
    fn ring(&mut self, ring: &[u64], bytes: Bytes, kind: TrafficKind) {
        if ring.len() < 2 {
            return;
        }
        for (&src, &dst) in ring.iter().zip(ring.iter().cycle().skip(1)) {
            self.add(src, dst, kind, bytes);
        }
    }

    /// The rail rings and domain rings of a group, when it forms a grid over HB domains.
    fn grid(&self, group: &[u64]) -> Option<Grid> {
        if self.algorithm == CollectiveAlgorithm::Ring {
            return None;
        }
        let mut domains: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        let mut rails: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for &g in group {
            domains.entry(self.mapping.domain(g)).or_default().push(g);
            rails.entry(self.mapping.rail(g)).or_default().push(g);
        }
        let x = rails.len();
        let is_grid = domains.values().all(|d| d.len() == x)
            && rails.values().all(|r| r.len() == domains.len());
        is_grid.then(|| Grid {
            rails: rails.into_values().collect(),
            domains: domains.into_values().collect(),
        })
    }

    /// AllGather (or ReduceScatter: the same bytes reversed in time) of `total` bytes, `times`.
    fn all_gather(&mut self, group: &[u64], total: Bytes, times: f64, kind: TrafficKind) {
        let n = group.len() as f64;
        match self.grid(group) {
            Some(Grid { rails, domains }) => {
                let (x, y) = (rails.len() as f64, domains.len() as f64);
                let rail_bytes = (y - 1.0) * total / (x * y) * times;
                let domain_bytes = (x - 1.0) * total / x * times;
                rails.iter().for_each(|r| self.ring(r, rail_bytes, kind));
                domains
                    .iter()
                    .for_each(|d| self.ring(d, domain_bytes, kind));
            }
            None => self.ring(group, (n - 1.0) * total / n * times, kind),
        }
    }

    /// AllReduce = ReduceScatter + AllGather.
    fn all_reduce(&mut self, group: &[u64], total: Bytes, kind: TrafficKind) {
        self.all_gather(group, total, 2.0, kind);
    }

    /// AlltoAll sending `shard` bytes to every peer, `times` times.
    fn all_to_all(&mut self, group: &[u64], shard: Bytes, times: f64, kind: TrafficKind) {
        match self.grid(group) {
            Some(Grid { rails, domains }) => {
                let (x, y) = (rails.len() as f64, domains.len() as f64);
                domains
                    .iter()
                    .for_each(|d| self.mesh(d, y * shard * times, kind));
                rails
                    .iter()
                    .for_each(|r| self.mesh(r, x * shard * times, kind));
            }
            None => self.mesh(group, shard * times, kind),
        }
    }

    fn mesh(&mut self, group: &[u64], bytes: Bytes, kind: TrafficKind) {
        for &src in group {
            for &dst in group {
                self.add(src, dst, kind, bytes);
            }
        }
    }

    /// Stage-to-stage sends of a pipeline, `per_boundary` bytes each way, `v` rounds.
    fn pipeline(&mut self, stages: &[u64], per_boundary: Bytes, v: f64) {
        let kind = TrafficKind::PpSendRecv;
        for w in stages.windows(2) {
            self.add(w[0], w[1], kind, v * per_boundary);
            self.add(w[1], w[0], kind, v * per_boundary);
        }
        if let (Some(&first), Some(&last)) = (stages.first(), stages.last()) {
            self.add(last, first, kind, (v - 1.0) * per_boundary);
            self.add(first, last, kind, (v - 1.0) * per_boundary);
        }
    }

    fn finish(self) -> JobTraffic {
        let mut entries: Vec<PairTraffic> = self
            .pairs
            .into_iter()
            .map(|((src, dst), bytes)| PairTraffic { src, dst, bytes })
            .collect();
        entries.sort_unstable_by_key(|e| (e.src, e.dst));
        JobTraffic {
            gpus: self.mapping.gpus(),
            hb_domain: self.mapping.hb_domain(),
            entries,
        }
    }
}

//! Where each rank of a PTD-P (+EP/ESP) job runs: GPUs in HB domains and rails (rail-only §2.1,
//! §3.2; Parm §IV-B placement cases).

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::model::GptModel;
use crate::parallel::{ExpertParallelism, Parallelization};
use comm_cost_model::InputError;

/// Largest GPU count [`RankMapping::new`] accepts: its groups list every GPU.
pub const MAX_MAPPED_GPUS: u64 = 1 << 22;

/// Largest `N · ep` [`RankMapping::with_experts`] accepts: the EP AlltoAll of
/// [`crate::traffic::job_traffic`] joins every GPU to each of its `ep` peers, one traffic
/// entry per pair (EP 256 on 65,536 GPUs is exactly this limit).
pub const MAX_EXPERT_PAIRS: u64 = 1 << 24;

/// The three axes of a PTD-P rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axis {
    Tensor,
    Data,
    Pipeline,
}

/// Where each rank `(t, d, p)` of a parallel job runs, for `N` GPUs in HB domains of `K`.
///
/// GPU `g` sits in HB domain `g / K` at local rank (rail) `g % K`. A rank's index along each
/// axis is split into an HB part (fastest) and a network part (`t = t_h t_l`, Eq. 14–16 of the
/// [`Parallelization`]): the local rank is `t_hb + t_h (d_hb + d_h p_hb)` and the domain is
/// `t_net + t_l (d_net + d_l p_net)`. Two ranks that differ only in network parts therefore
/// share a local rank, i.e. a rail, so every group's traffic across domains can stay within
/// rails (rail-only §3.2), and a TP group with `t_l = 1` stays in one HB domain. Pipeline stages
/// snake through their in-domain part (reversed on odd network steps), so consecutive stages
/// differ either in domain or in local rank, never both, and point-to-point traffic never leaves
/// a rail.
///
/// # Examples
///
/// ```
/// use rail_network::mapping::RankMapping;
/// use rail_network::{model::GptModel, parallel::Parallelization};
/// // 16 GPUs in domains of 4: TP 4 inside, PP 2 and DP 2 across domains.
/// let model = GptModel { heads: 8, hidden: 64, layers: 4, seq_len: 32, vocab: 1000 };
/// let par = Parallelization::with_default_mapping(4, 2, 2, 1, 8, 1, 4)?;
/// let map = RankMapping::new(&model, &par, 16, 4)?;
/// assert_eq!(map.tensor_groups()[0], vec![0, 1, 2, 3]);
/// // DP peers: same rail (local rank 0), different domains.
/// assert_eq!(map.data_groups()[0], vec![0, 4]);
/// assert_eq!((map.domain_of(5), map.rail_of(5), map.rail_of(16)), (Some(1), Some(1), None));
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
///
/// Deserializing runs [`RankMapping::new`] and [`RankMapping::with_experts`], so a parsed
/// mapping is valid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RankMappingFields")]
pub struct RankMapping {
    model: GptModel,
    parallelization: Parallelization,
    expert: Option<ExpertParallelism>,
    gpus: u64,
    hb_domain: u64,
}

/// Parm §IV-B: where the EP and ESP groups of the MoE layers sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpertPlacement {
    /// Every EP x ESP block (the GPUs of one MoE layer) is inside one HB domain (Case 1).
    pub moe_block_in_one_domain: bool,
    /// Every ESP group is inside one HB domain (Case 2).
    pub esp_in_one_domain: bool,
    /// Every EP group is inside one HB domain (Case 3).
    pub ep_in_one_domain: bool,
    /// Parm's case number: 1 single node, 2 ESP in node, 3 EP in node, 4 others.
    pub case: u8,
}

/// The serialized form of [`RankMapping`], validated on the way in.
#[derive(Deserialize)]
struct RankMappingFields {
    model: GptModel,
    parallelization: Parallelization,
    expert: Option<ExpertParallelism>,
    gpus: u64,
    hb_domain: u64,
}

impl TryFrom<RankMappingFields> for RankMapping {
    type Error = RailNetworkError;

    fn try_from(f: RankMappingFields) -> Result<Self, Self::Error> {
        let mapping = Self::new(&f.model, &f.parallelization, f.gpus, f.hb_domain)?;
        match f.expert {
            Some(expert) => mapping.with_experts(expert),
            None => Ok(mapping),
        }
    }
}

impl RankMapping {
    /// Validates `parallelization` of `model` on `gpus` GPUs in HB domains of `hb_domain`
    /// ([`Parallelization::validate`], rail-only Eq. 11–18) and builds the mapping.
    ///
    /// # Errors
    ///
    /// The first violated constraint of [`Parallelization::validate`];
    /// `TooLarge` ([`RailNetworkError::Input`]) above [`MAX_MAPPED_GPUS`].
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::mapping::RankMapping;
    /// use rail_network::{model::GptModel, parallel::Parallelization};
    /// let model = GptModel { heads: 8, hidden: 64, layers: 4, seq_len: 32, vocab: 1000 };
    /// let par = Parallelization::with_default_mapping(8, 2, 1, 1, 1, 1, 8)?;
    /// assert!(RankMapping::new(&model, &par, 16, 8).is_ok());
    /// assert!(RankMapping::new(&model, &par, 24, 8).is_err()); // t p d = 16 != 24
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn new(
        model: &GptModel,
        parallelization: &Parallelization,
        gpus: u64,
        hb_domain: u64,
    ) -> Result<Self, RailNetworkError> {
        parallelization.validate(model, gpus, hb_domain)?;
        if gpus > MAX_MAPPED_GPUS {
            return Err(InputError::TooLarge {
                what: "GPUs of a rank mapping",
                limit: MAX_MAPPED_GPUS,
                value: gpus,
            }
            .into());
        }
        Ok(Self {
            model: *model,
            parallelization: *parallelization,
            expert: None,
            gpus,
            hb_domain,
        })
    }

    /// The same mapping with expert parallelism on its MoE layers.
    ///
    /// # Errors
    ///
    /// As [`ExpertParallelism::validate`]; `TooLarge` ([`RailNetworkError::Input`]) when
    /// `N · ep` exceeds [`MAX_EXPERT_PAIRS`].
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::mapping::RankMapping;
    /// use rail_network::{model::GptModel, parallel::{ExpertParallelism, Parallelization}};
    /// let model = GptModel { heads: 8, hidden: 64, layers: 4, seq_len: 32, vocab: 1000 };
    /// let par = Parallelization::with_default_mapping(2, 1, 4, 1, 4, 1, 4)?;
    /// let map = RankMapping::new(&model, &par, 8, 4)?;
    /// let moe = ExpertParallelism { ep: 4, esp: 1, moe_every: 1, top_k: 2 };
    /// assert_eq!(map.clone().with_experts(moe)?.expert_groups().len(), 2);
    /// assert!(map.with_experts(ExpertParallelism { ep: 3, ..moe }).is_err()); // 3 does not divide d = 4
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn with_experts(mut self, expert: ExpertParallelism) -> Result<Self, RailNetworkError> {
        expert.validate(&self.parallelization, &self.model)?;
        let pairs = self.gpus.saturating_mul(expert.ep);
        if pairs > MAX_EXPERT_PAIRS {
            return Err(InputError::TooLarge {
                what: "GPU pairs of the EP AlltoAll (N ep)",
                limit: MAX_EXPERT_PAIRS,
                value: pairs,
            }
            .into());
        }
        self.expert = Some(expert);
        Ok(self)
    }

    /// Number of GPUs `N`.
    #[must_use]
    pub fn gpus(&self) -> u64 {
        self.gpus
    }

    /// HB domain size `K`.
    #[must_use]
    pub fn hb_domain(&self) -> u64 {
        self.hb_domain
    }

    /// The model whose ranks are mapped.
    #[must_use]
    pub fn model(&self) -> &GptModel {
        &self.model
    }

    /// The parallelization mapped.
    #[must_use]
    pub fn parallelization(&self) -> &Parallelization {
        &self.parallelization
    }

    /// The expert parallelism, if the job has MoE layers.
    #[must_use]
    pub fn experts(&self) -> Option<&ExpertParallelism> {
        self.expert.as_ref()
    }

    /// HB domain of a GPU; `None` for a GPU outside the job.
    #[must_use]
    pub fn domain_of(&self, gpu: u64) -> Option<u64> {
        (gpu < self.gpus).then(|| self.domain(gpu))
    }

    /// Rail (local rank inside its HB domain) of a GPU; `None` for a GPU outside the job.
    #[must_use]
    pub fn rail_of(&self, gpu: u64) -> Option<u64> {
        (gpu < self.gpus).then(|| self.rail(gpu))
    }

    /// The GPU running rank `(t, d, p)`; `None` when an index is not below its degree.
    #[must_use]
    pub fn gpu(&self, t: u64, d: u64, p: u64) -> Option<u64> {
        let c = &self.parallelization;
        (t < c.tp && d < c.dp && p < c.pp).then(|| self.place(t, d, p))
    }

    pub(crate) fn domain(&self, gpu: u64) -> u64 {
        gpu / self.hb_domain
    }

    pub(crate) fn rail(&self, gpu: u64) -> u64 {
        gpu % self.hb_domain
    }

    /// The GPU of rank `(t, d, p)`, each index below its degree.
    fn place(&self, t: u64, d: u64, p: u64) -> u64 {
        let c = &self.parallelization;
        let (tl, _, dl) = c.network_parts();
        let (th, dh, ph) = (t % c.tp_hb, d % c.dp_hb, p % c.pp_hb);
        let (tn, dn, pn) = (t / c.tp_hb, d / c.dp_hb, p / c.pp_hb);
        // Snake through the in-domain stages so each stage boundary changes either the domain
        // (same rail) or the local rank (same domain), never both.
        let ph = if pn % 2 == 1 { c.pp_hb - 1 - ph } else { ph };
        let local = th + c.tp_hb * (dh + c.dp_hb * ph);
        let domain = tn + tl * (dn + dl * pn);
        domain * self.hb_domain + local
    }

    /// Tensor-parallel groups, each in TP-rank order.
    #[must_use]
    pub fn tensor_groups(&self) -> Vec<Vec<u64>> {
        self.groups_along(Axis::Tensor, self.parallelization.tp)
    }

    /// Data-parallel groups, each in DP-rank order.
    #[must_use]
    pub fn data_groups(&self) -> Vec<Vec<u64>> {
        self.groups_along(Axis::Data, self.parallelization.dp)
    }

    /// Pipeline groups, each in stage order.
    #[must_use]
    pub fn pipeline_groups(&self) -> Vec<Vec<u64>> {
        self.groups_along(Axis::Pipeline, self.parallelization.pp)
    }

    /// Expert-parallel groups (`ep` consecutive DP ranks); empty without experts.
    pub fn expert_groups(&self) -> Vec<Vec<u64>> {
        self.expert
            .map_or_else(Vec::new, |e| self.groups_along(Axis::Data, e.ep))
    }

    /// Expert-sharding groups (`esp` consecutive TP ranks); empty without experts.
    pub fn esp_groups(&self) -> Vec<Vec<u64>> {
        self.expert
            .map_or_else(Vec::new, |e| self.groups_along(Axis::Tensor, e.esp))
    }

    /// Where the EP and ESP groups sit (Parm §IV-B); `None` without experts.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::mapping::RankMapping;
    /// use rail_network::{model::GptModel, parallel::{ExpertParallelism, Parallelization}};
    /// let model = GptModel { heads: 8, hidden: 64, layers: 4, seq_len: 32, vocab: 1000 };
    /// let par = Parallelization::with_default_mapping(2, 1, 2, 1, 2, 1, 2)?;
    /// let expert = ExpertParallelism { ep: 2, esp: 2, moe_every: 1, top_k: 1 };
    /// // Parm Fig. 2: two nodes of two GPUs; ESP inside a node, EP across nodes (Case 2).
    /// let map = RankMapping::new(&model, &par, 4, 2)?.with_experts(expert)?;
    /// let placement = map.expert_placement().unwrap();
    /// assert!(placement.esp_in_one_domain && !placement.ep_in_one_domain);
    /// assert_eq!(placement.case, 2);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    #[must_use]
    pub fn expert_placement(&self) -> Option<ExpertPlacement> {
        let e = self.expert?;
        let in_one = |groups: Vec<Vec<u64>>| {
            groups.iter().all(|g| {
                g.iter()
                    .all(|&x| g.first().is_some_and(|&f| self.domain(x) == self.domain(f)))
            })
        };
        let esp = in_one(self.esp_groups());
        let ep = in_one(self.expert_groups());
        let block = in_one(self.blocks(e.esp, e.ep));
        let case = match (block, esp, ep) {
            (true, _, _) => 1,
            (_, true, _) => 2,
            (_, _, true) => 3,
            _ => 4,
        };
        Some(ExpertPlacement {
            moe_block_in_one_domain: block,
            esp_in_one_domain: esp,
            ep_in_one_domain: ep,
            case,
        })
    }

    /// Groups of `block` consecutive ranks along `axis`, for every value of the other axes.
    fn groups_along(&self, axis: Axis, block: u64) -> Vec<Vec<u64>> {
        let c = &self.parallelization;
        let len = match axis {
            Axis::Tensor => c.tp,
            Axis::Data => c.dp,
            Axis::Pipeline => c.pp,
        };
        let block = block.max(1);
        let mut groups = Vec::with_capacity(usize::try_from(self.gpus / block).unwrap_or(0));
        for pi in 0..c.pp {
            for di in 0..c.dp {
                for ti in 0..c.tp {
                    let index = match axis {
                        Axis::Tensor => ti,
                        Axis::Data => di,
                        Axis::Pipeline => pi,
                    };
                    if index % block != 0 {
                        continue;
                    }
                    let members = (index..(index + block).min(len))
                        .map(|k| match axis {
                            Axis::Tensor => self.place(k, di, pi),
                            Axis::Data => self.place(ti, k, pi),
                            Axis::Pipeline => self.place(ti, di, k),
                        })
                        .collect();
                    groups.push(members);
                }
            }
        }
        groups
    }

    /// The `esp x ep` blocks of GPUs that run one MoE layer together.
    fn blocks(&self, esp: u64, ep: u64) -> Vec<Vec<u64>> {
        let c = &self.parallelization;
        let (esp, ep) = (esp.max(1), ep.max(1));
        let mut blocks = Vec::new();
        for pi in 0..c.pp {
            for d0 in (0..c.dp).step_by(usize::try_from(ep).unwrap_or(usize::MAX)) {
                for t0 in (0..c.tp).step_by(usize::try_from(esp).unwrap_or(usize::MAX)) {
                    let block = (d0..(d0 + ep).min(c.dp))
                        .flat_map(|di| (t0..(t0 + esp).min(c.tp)).map(move |ti| (ti, di)))
                        .map(|(ti, di)| self.place(ti, di, pi))
                        .collect();
                    blocks.push(block);
                }
            }
        }
        blocks
    }
}

//! Mapping the ranks of a PTD-P (+EP/ESP) job onto GPUs in HB domains and rails
//! (rail-only, Wang et al., §2.1, §3.2; Parm §IV-B placement cases).

use serde::{Deserialize, Serialize};

use crate::TopologyError;
use crate::job::{GptDims, ParallelConfig, Split};
use comm_cost_model::check_count;

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
/// axis is split into an HB part (fastest) and a network part: the local rank is
/// `t_hb + t_h (d_hb + d_h p_hb)` and the domain is `t_net + t_l (d_net + d_l p_net)`. Two ranks
/// that differ only in network parts therefore share a local rank, i.e. a rail, so every
/// group's traffic across domains can stay within rails (rail-only §3.2), and a TP group with
/// `t_l = 1` stays in one HB domain. Pipeline stages snake through their in-domain part
/// (reversed on odd network steps), so consecutive stages differ either in domain or in local
/// rank, never both, and point-to-point traffic never leaves a rail.
///
/// # Examples
///
/// ```
/// use topology_partition::{GptDims, ParallelConfig, RankMapping, Split};
/// // 16 GPUs in domains of 4: TP 4 inside, PP 2 and DP 2 across domains.
/// let config = ParallelConfig {
///     tensor: Split::new(4, 1), pipeline: Split::new(1, 2), data: Split::new(1, 2),
///     micro_batch: 1, micro_batches: 4, interleave: 1, expert: None,
/// };
/// let model = GptDims { hidden: 64, layers: 4, seq_len: 32, bytes_per_element: 2.0 };
/// let map = RankMapping::new(16, 4, &config, &model)?;
/// assert_eq!(map.tensor_groups()[0], vec![0, 1, 2, 3]);
/// // DP peers: same rail (local rank 0), different domains.
/// assert_eq!(map.data_groups()[0], vec![0, 4]);
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankMapping {
    gpus: usize,
    hb_domain_size: usize,
    config: ParallelConfig,
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

impl RankMapping {
    /// Validates `config` for `gpus` GPUs in HB domains of `hb_domain_size` (rail-only
    /// Eq. 11–18) and builds the mapping.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Value`] (`CountTooSmall`) for zero GPUs or domain size, or zero counts in the
    /// configuration; [`TopologyError::Config`] if `K` does not divide `N`, the configuration
    /// does not tile the cluster or breaks a divisibility rule; [`TopologyError::Overflow`].
    ///
    /// # Complexity
    ///
    /// O(1).
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::{GptDims, ParallelConfig, RankMapping, Split};
    /// let config = ParallelConfig {
    ///     tensor: Split::new(8, 1), pipeline: Split::new(1, 2), data: Split::new(1, 1),
    ///     micro_batch: 1, micro_batches: 1, interleave: 1, expert: None,
    /// };
    /// let model = GptDims { hidden: 64, layers: 4, seq_len: 32, bytes_per_element: 2.0 };
    /// assert!(RankMapping::new(16, 8, &config, &model).is_ok());
    /// assert!(RankMapping::new(24, 8, &config, &model).is_err()); // t p d = 16 != 24
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn new(
        gpus: usize,
        hb_domain_size: usize,
        config: &ParallelConfig,
        model: &GptDims,
    ) -> Result<Self, TopologyError> {
        check_count("GPUs N", gpus, 1)?;
        check_count("HB domain size K", hb_domain_size, 1)?;
        if gpus % hb_domain_size != 0 {
            return Err(TopologyError::Config(format!(
                "the HB domain size K = {hb_domain_size} must divide N = {gpus}"
            )));
        }
        config.check(gpus, hb_domain_size, &model.validated()?)?;
        Ok(Self {
            gpus,
            hb_domain_size,
            config: *config,
        })
    }

    /// Number of GPUs `N`.
    pub fn gpus(&self) -> usize {
        self.gpus
    }

    /// HB domain size `K`.
    pub fn hb_domain_size(&self) -> usize {
        self.hb_domain_size
    }

    /// The configuration mapped.
    pub fn config(&self) -> &ParallelConfig {
        &self.config
    }

    /// HB domain of a GPU.
    pub fn domain_of(&self, gpu: usize) -> usize {
        gpu / self.hb_domain_size
    }

    /// Rail (local rank inside its HB domain) of a GPU.
    pub fn rail_of(&self, gpu: usize) -> usize {
        gpu % self.hb_domain_size
    }

    /// The GPU running rank `(t, d, p)`; indices are taken modulo their degrees.
    pub fn gpu(&self, t: usize, d: usize, p: usize) -> usize {
        let c = &self.config;
        let part = |i: usize, s: Split| ((i % s.degree()) % s.hb, (i % s.degree()) / s.hb);
        let (th, tl) = part(t, c.tensor);
        let (dh, dl) = part(d, c.data);
        let (ph, pl) = part(p, c.pipeline);
        // Snake through the in-domain stages so each stage boundary changes either the domain
        // (same rail) or the local rank (same domain), never both.
        let ph = if pl % 2 == 1 {
            c.pipeline.hb - 1 - ph
        } else {
            ph
        };
        let local = th + c.tensor.hb * (dh + c.data.hb * ph);
        let domain = tl + c.tensor.network * (dl + c.data.network * pl);
        domain * self.hb_domain_size + local
    }

    /// Tensor-parallel groups, each in TP-rank order.
    pub fn tensor_groups(&self) -> Vec<Vec<usize>> {
        self.groups_along(Axis::Tensor, self.config.tensor.degree())
    }

    /// Data-parallel groups, each in DP-rank order.
    pub fn data_groups(&self) -> Vec<Vec<usize>> {
        self.groups_along(Axis::Data, self.config.data.degree())
    }

    /// Pipeline groups, each in stage order.
    pub fn pipeline_groups(&self) -> Vec<Vec<usize>> {
        self.groups_along(Axis::Pipeline, self.config.pipeline.degree())
    }

    /// Expert-parallel groups (`ep` consecutive DP ranks); empty without experts.
    pub fn expert_groups(&self) -> Vec<Vec<usize>> {
        self.config
            .expert
            .map_or_else(Vec::new, |e| self.groups_along(Axis::Data, e.ep))
    }

    /// Expert-sharding groups (`esp` consecutive TP ranks); empty without experts.
    pub fn esp_groups(&self) -> Vec<Vec<usize>> {
        self.config
            .expert
            .map_or_else(Vec::new, |e| self.groups_along(Axis::Tensor, e.esp))
    }

    /// Where the EP and ESP groups sit (Parm §IV-B); `None` without experts.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::{ExpertConfig, GptDims, ParallelConfig, RankMapping, Split};
    /// let expert = ExpertConfig { ep: 2, esp: 2, moe_every: 1, top_k: 1 };
    /// let config = ParallelConfig {
    ///     tensor: Split::new(2, 1), pipeline: Split::new(1, 1), data: Split::new(1, 2),
    ///     micro_batch: 1, micro_batches: 1, interleave: 1, expert: Some(expert),
    /// };
    /// let model = GptDims { hidden: 64, layers: 4, seq_len: 32, bytes_per_element: 2.0 };
    /// // Parm Fig. 2: two nodes of two GPUs; ESP inside a node, EP across nodes (Case 2).
    /// let placement = RankMapping::new(4, 2, &config, &model)?.expert_placement().unwrap();
    /// assert!(placement.esp_in_one_domain && !placement.ep_in_one_domain);
    /// assert_eq!(placement.case, 2);
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn expert_placement(&self) -> Option<ExpertPlacement> {
        let e = self.config.expert?;
        let in_one = |groups: Vec<Vec<usize>>| {
            groups
                .iter()
                .all(|g| g.iter().all(|&x| self.domain_of(x) == self.domain_of(g[0])))
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
    fn groups_along(&self, axis: Axis, block: usize) -> Vec<Vec<usize>> {
        let c = &self.config;
        let (t, d, p) = (c.tensor.degree(), c.data.degree(), c.pipeline.degree());
        let len = match axis {
            Axis::Tensor => t,
            Axis::Data => d,
            Axis::Pipeline => p,
        };
        let block = block.max(1);
        let mut groups = Vec::with_capacity(self.gpus / block);
        for pi in 0..p {
            for di in 0..d {
                for ti in 0..t {
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
                            Axis::Tensor => self.gpu(k, di, pi),
                            Axis::Data => self.gpu(ti, k, pi),
                            Axis::Pipeline => self.gpu(ti, di, k),
                        })
                        .collect();
                    groups.push(members);
                }
            }
        }
        groups
    }

    /// The `esp x ep` blocks of GPUs that run one MoE layer together.
    fn blocks(&self, esp: usize, ep: usize) -> Vec<Vec<usize>> {
        let c = &self.config;
        let (t, d, p) = (c.tensor.degree(), c.data.degree(), c.pipeline.degree());
        let mut blocks = Vec::new();
        for pi in 0..p {
            for d0 in (0..d).step_by(ep.max(1)) {
                for t0 in (0..t).step_by(esp.max(1)) {
                    let block = (d0..d0 + ep)
                        .flat_map(|di| (t0..t0 + esp).map(move |ti| (ti, di)))
                        .map(|(ti, di)| self.gpu(ti, di, pi))
                        .collect();
                    blocks.push(block);
                }
            }
        }
        blocks
    }
}

//! Small fabrics built as explicit petgraph graphs: counts checked on real wiring, and routes.
//!
//! Every GPU hangs off its HB domain's switch (NVSwitch class) and off a leaf of the network.
//! Each Clos is wired as a folded butterfly: a switch of tier `L` sends its up-link `j` to the
//! tier-`L+1` switch whose label differs from its own only in base-`k/2` digit `L-1`, and the top
//! tier folds label pairs into full radix-`k` switches. In a rail-only fabric a message between
//! different rails of different domains is forwarded through the source HB domain to the GPU of
//! the destination's rank, then crosses that rail (Wang et al. §4).

use petgraph::algo::astar;
use petgraph::graph::{NodeIndex, UnGraph};
use petgraph::visit::NodeFiltered;
use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::fabric::{FabricKind, FabricParams, clos_tiers};
use comm_cost_model::InputError;

/// The largest GPU count [`FabricGraph::build`] accepts.
pub const MAX_GRAPH_GPUS: u64 = 1 << 16;

/// A vertex of a fabric graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FabricNode {
    /// GPU `rank` of HB domain `domain`.
    Gpu {
        /// HB domain index.
        domain: u64,
        /// Rank inside the domain (= rail).
        rank: u64,
    },
    /// The HB-domain interconnect (NVSwitch) of a domain.
    HbSwitch {
        /// HB domain index.
        domain: u64,
    },
    /// A network switch.
    Switch {
        /// The rail this switch belongs to (rail-only), or `None` (rail-optimized).
        rail: Option<u64>,
        /// Tier, 1 = leaf.
        tier: u32,
        /// Index within its tier (and rail).
        index: u64,
    },
}

/// A cable of a fabric graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// GPU to its HB-domain switch.
    HbDomain,
    /// A network cable (two transceivers).
    Network,
}

/// A fabric as an undirected petgraph graph.
///
/// The fields are private (read them with [`FabricGraph::kind`], [`FabricGraph::params`] and
/// [`FabricGraph::graph`]): the GPU node list must match the parameters and the wiring.
#[derive(Debug, Clone)]
pub struct FabricGraph {
    kind: FabricKind,
    params: FabricParams,
    graph: UnGraph<FabricNode, LinkKind>,
    gpus: Vec<NodeIndex>,
}

impl FabricGraph {
    /// Builds the fabric graph of `kind` for a small cluster.
    ///
    /// # Errors
    ///
    /// Invalid [`FabricParams`], a radix too small, or more than [`MAX_GRAPH_GPUS`] GPUs.
    ///
    /// # Complexity
    ///
    /// `O(N T)` nodes and edges for `T` tiers.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::fabric::{FabricKind, FabricParams};
    /// use rail_network::fabric_graph::FabricGraph;
    /// let p = FabricParams::new(32, 4, 4);
    /// let g = FabricGraph::build(FabricKind::RailOnly, p)?;
    /// assert_eq!(g.network_links(), 4 * 8 * 2); // 4 rails of 8 GPUs, 2 tiers each
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn build(kind: FabricKind, params: FabricParams) -> Result<Self, RailNetworkError> {
        params.validate()?;
        if params.gpus > MAX_GRAPH_GPUS {
            return Err(InputError::TooLarge {
                what: "GPUs of a fabric built as a graph",
                limit: MAX_GRAPH_GPUS,
                value: params.gpus,
            }
            .into());
        }
        let mut graph = UnGraph::new_undirected();
        let (k_dom, domains) = (params.hb_domain, params.domains());
        let mut gpus = Vec::with_capacity(index(params.gpus));
        for domain in 0..domains {
            let hb = graph.add_node(FabricNode::HbSwitch { domain });
            for rank in 0..k_dom {
                let g = graph.add_node(FabricNode::Gpu { domain, rank });
                graph.add_edge(g, hb, LinkKind::HbDomain);
                gpus.push(g);
            }
        }
        let mut fabric = Self {
            kind,
            params,
            graph,
            gpus,
        };
        match kind {
            FabricKind::RailOptimized => {
                // Rail-major endpoint order, so leaves are rail switches where rails are large.
                let eps: Vec<_> = (0..k_dom)
                    .flat_map(|r| (0..domains).map(move |d| (d, r)))
                    .map(|(d, r)| fabric.gpus[index(d * k_dom + r)])
                    .collect();
                fabric.add_clos(&eps, None)?;
            }
            FabricKind::RailOnly => {
                for rail in 0..k_dom {
                    let eps: Vec<_> = (0..domains)
                        .map(|d| fabric.gpus[index(d * k_dom + rail)])
                        .collect();
                    fabric.add_clos(&eps, Some(rail))?;
                }
            }
        }
        Ok(fabric)
    }

    /// Which fabric.
    #[must_use]
    pub fn kind(&self) -> FabricKind {
        self.kind
    }

    /// The cluster.
    #[must_use]
    pub fn params(&self) -> &FabricParams {
        &self.params
    }

    /// The wiring.
    #[must_use]
    pub fn graph(&self) -> &UnGraph<FabricNode, LinkKind> {
        &self.graph
    }

    /// Adds one folded Clos over `eps`.
    fn add_clos(&mut self, eps: &[NodeIndex], rail: Option<u64>) -> Result<(), RailNetworkError> {
        let n = eps.len() as u64;
        let k = self.params.radix;
        let tiers = clos_tiers(n, k)?;
        if tiers == 0 {
            return Ok(());
        }
        let half = k / 2;
        let count = |tier: u32| {
            if tier == tiers {
                n.div_ceil(k)
            } else {
                n.div_ceil(half)
            }
        };
        let mut below: Vec<Vec<NodeIndex>> = Vec::new();
        let mut level = self.add_tier(rail, 1, count(1));
        // Tier 1: endpoint e goes to leaf e / (k/2) (or the single switch of a one-tier Clos).
        let per_leaf = if tiers == 1 { k } else { half };
        for (e, &gpu) in eps.iter().enumerate() {
            let leaf = level[index(e as u64 / per_leaf)];
            self.graph.add_edge(gpu, leaf, LinkKind::Network);
        }
        let mut stride = 1u64;
        for tier in 2..=tiers {
            let upper = self.add_tier(rail, tier, count(tier));
            // Down ports of each upper switch: half of them below the top, all at the top.
            let ports = if tier == tiers { k } else { half };
            let mut used = vec![0u64; upper.len()];
            for (s, &sw) in level.iter().enumerate() {
                let s = s as u64;
                let ups = self.down_degree(sw);
                let digit = (s / stride) % half;
                for j in 0..ups {
                    let label = s - digit * stride + (j % half) * stride;
                    let target = free_port(&used, index(label % upper.len() as u64), ports);
                    used[target] += 1;
                    self.graph.add_edge(sw, upper[target], LinkKind::Network);
                }
            }
            below.push(std::mem::replace(&mut level, upper));
            stride = stride.saturating_mul(half);
        }
        Ok(())
    }

    fn add_tier(&mut self, rail: Option<u64>, tier: u32, count: u64) -> Vec<NodeIndex> {
        (0..count)
            .map(|index| {
                self.graph
                    .add_node(FabricNode::Switch { rail, tier, index })
            })
            .collect()
    }

    /// Links already attached to a switch (all of them point down while its tier is the top).
    fn down_degree(&self, sw: NodeIndex) -> u64 {
        self.graph.neighbors(sw).count() as u64
    }

    /// The graph node of GPU `rank` in domain `domain`.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`IndexOutOfRange`) for an index outside the fabric.
    pub fn gpu(&self, domain: u64, rank: u64) -> Result<NodeIndex, RailNetworkError> {
        let (k, domains) = (self.params.hb_domain, self.params.domains());
        if domain >= domains {
            return Err(RailNetworkError::Input(InputError::IndexOutOfRange {
                what: "HB domain",
                index: domain,
                size: domains,
            }));
        }
        if rank >= k {
            return Err(RailNetworkError::Input(InputError::IndexOutOfRange {
                what: "GPU rank",
                index: rank,
                size: k,
            }));
        }
        Ok(self.gpus[index(domain * k + rank)])
    }

    /// Network switches in the graph.
    #[must_use]
    pub fn network_switches(&self) -> u64 {
        let is_switch = |w: &FabricNode| matches!(w, FabricNode::Switch { .. });
        self.graph.node_weights().filter(|w| is_switch(w)).count() as u64
    }

    /// Network cables in the graph.
    #[must_use]
    pub fn network_links(&self) -> u64 {
        let net = |w: &LinkKind| *w == LinkKind::Network;
        self.graph.edge_weights().filter(|w| net(w)).count() as u64
    }

    /// Transceivers: two per network cable.
    #[must_use]
    pub fn transceivers(&self) -> u64 {
        2 * self.network_links()
    }

    /// The most network ports used on any switch (must not exceed the radix).
    #[must_use]
    pub fn max_switch_degree(&self) -> u64 {
        self.graph
            .node_indices()
            .filter(|&i| matches!(self.graph[i], FabricNode::Switch { .. }))
            .map(|i| self.graph.neighbors(i).count() as u64)
            .max()
            .unwrap_or(0)
    }

    /// A shortest route between two GPUs, `(domain, rank)` each, as the list of nodes visited.
    ///
    /// Inside a domain the route crosses the HB switch. Across domains it uses only network
    /// switches as transit, except that rail-only forwards a cross-rail message through the
    /// source HB domain to the GPU of the destination's rank first (§4).
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`IndexOutOfRange`) for a GPU outside the fabric.
    ///
    /// # Complexity
    ///
    /// `O(V + E)` time (A* with a zero heuristic over the switches).
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::fabric::{FabricKind, FabricParams};
    /// use rail_network::fabric_graph::{FabricGraph, FabricNode};
    /// let p = FabricParams::new(16, 4, 8);
    /// let g = FabricGraph::build(FabricKind::RailOnly, p)?;
    /// let path = g.route((0, 0), (1, 2))?;
    /// // GPU(0,0) -> NVSwitch(0) -> GPU(0,2) -> rail-2 switch -> GPU(1,2)
    /// assert_eq!(path[1], FabricNode::HbSwitch { domain: 0 });
    /// assert_eq!(path[2], FabricNode::Gpu { domain: 0, rank: 2 });
    /// assert_eq!(path.len(), 5);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn route(
        &self,
        src: (u64, u64),
        dst: (u64, u64),
    ) -> Result<Vec<FabricNode>, RailNetworkError> {
        let (s, d) = (self.gpu(src.0, src.1)?, self.gpu(dst.0, dst.1)?);
        if s == d {
            return Ok(vec![self.graph[s]]);
        }
        if src.0 == dst.0 {
            let hb = FabricNode::HbSwitch { domain: src.0 };
            return Ok(vec![self.graph[s], hb, self.graph[d]]);
        }
        let mut path = Vec::new();
        let mut start = s;
        if self.kind == FabricKind::RailOnly && src.1 != dst.1 {
            path.push(self.graph[s]);
            path.push(FabricNode::HbSwitch { domain: src.0 });
            start = self.gpu(src.0, dst.1)?;
        }
        path.extend(self.network_path(start, d));
        Ok(path)
    }

    /// Shortest path from `a` to `b` using only network switches as transit.
    fn network_path(&self, a: NodeIndex, b: NodeIndex) -> Vec<FabricNode> {
        let g = &self.graph;
        let transit = |n: NodeIndex| n == a || n == b || matches!(g[n], FabricNode::Switch { .. });
        let filtered = NodeFiltered::from_fn(g, transit);
        astar(&filtered, a, |n| n == b, |_| 1u32, |_| 0)
            .map(|(_, nodes)| nodes.into_iter().map(|n| g[n]).collect())
            .unwrap_or_default()
    }
}

/// The butterfly's choice `preferred` if it has a free down port, else the next switch that
/// has one. A tier that is not full (an endpoint count that is not a power of `k/2`) folds
/// several labels onto one switch, which overran its radix before (issue 13). Every tier has
/// ports for all `n` links (`ceil(n / (k/2))` switches of `k/2` down ports, or `ceil(n / k)` of
/// `k` at the top), so one is always found.
fn free_port(used: &[u64], preferred: usize, ports: u64) -> usize {
    (0..used.len())
        .map(|i| (preferred + i) % used.len())
        .find(|&i| used[i] < ports)
        .unwrap_or(preferred)
}

/// A position in the graph's node lists. Every such count is below the graph's node count,
/// at most [`MAX_GRAPH_GPUS`] GPUs plus their switches (checked when the graph is built), so it
/// fits any `usize`.
#[allow(clippy::cast_possible_truncation)]
fn index(value: u64) -> usize {
    value as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{PriceModel, rail_only_fabric, rail_optimized_fabric};
    use petgraph::algo::connected_components;

    fn check_counts(kind: FabricKind, p: FabricParams) {
        let g = FabricGraph::build(kind, p).unwrap();
        let f = match kind {
            FabricKind::RailOnly => rail_only_fabric(&p, &PriceModel::default()).unwrap(),
            FabricKind::RailOptimized => rail_optimized_fabric(&p, &PriceModel::default()).unwrap(),
        };
        assert_eq!(g.network_links(), f.links, "{kind:?} {p:?}");
        assert_eq!(g.transceivers(), f.transceivers, "{kind:?} {p:?}");
        assert_eq!(g.network_switches(), f.dedicated_switches, "{kind:?} {p:?}");
        assert!(g.max_switch_degree() <= p.radix, "{kind:?} {p:?}");
        assert_eq!(connected_components(g.graph()), 1, "{kind:?} {p:?}");
    }

    #[test]
    fn graph_counts_match_formulas() {
        for (n, k_dom, radix) in [
            (16, 4, 8),
            (32, 4, 4),
            (64, 8, 8),
            (128, 8, 4),
            (256, 16, 8),
            (512, 8, 16),
            (4096, 256, 16),
            (1024, 8, 32),
        ] {
            let p = FabricParams {
                gpus: n,
                hb_domain: k_dom,
                radix,
            };
            check_counts(FabricKind::RailOnly, p);
            check_counts(FabricKind::RailOptimized, p);
        }
    }

    #[test]
    fn every_pair_is_reachable_and_rail_only_forwards_once() {
        let p = FabricParams::new(64, 4, 4);
        let ro = FabricGraph::build(FabricKind::RailOnly, p).unwrap();
        let opt = FabricGraph::build(FabricKind::RailOptimized, p).unwrap();
        for a in 0..16 {
            for r in 0..4 {
                let path = ro.route((0, 1), (a, r)).unwrap();
                assert_eq!(
                    *path.last().unwrap(),
                    FabricNode::Gpu { domain: a, rank: r }
                );
                // Rail-only never uses a switch of another rail than the destination's.
                for node in &path {
                    if let FabricNode::Switch { rail, .. } = node {
                        assert_eq!(*rail, Some(r));
                    }
                }
                let direct = opt.route((0, 1), (a, r)).unwrap();
                assert_eq!(
                    *direct.last().unwrap(),
                    FabricNode::Gpu { domain: a, rank: r }
                );
            }
        }
    }

    #[test]
    fn rejects_out_of_range_and_huge() {
        let p = FabricParams::new(16, 4, 8);
        let g = FabricGraph::build(FabricKind::RailOnly, p).unwrap();
        assert!(g.route((4, 0), (0, 0)).is_err());
        assert!(g.route((0, 4), (0, 0)).is_err());
        let big = FabricParams::new(1 << 20, 8, 64);
        assert!(matches!(
            FabricGraph::build(FabricKind::RailOnly, big),
            Err(RailNetworkError::Input(InputError::TooLarge { .. }))
        ));
    }
}

//! Switch, transceiver and cost counts of rail-optimized and rail-only fabrics (§2.1, §4, §6.5,
//! Table 2).
//!
//! Both fabrics are built from folded Clos networks of radix-`k` switches. A `T`-tier folded Clos
//! connects up to `2 (k/2)^T` endpoints: every tier below the top splits its ports half down and
//! half up, and the top tier points all `k` ports down. Over `n` endpoints it therefore uses
//! `(2T - 1) n` switch ports and `T n` links (one GPU link per endpoint plus `n` links between each
//! pair of adjacent tiers), and every link has a transceiver at each end.
//!
//! * The **rail-optimized** fabric (the state of the art, Fig. 1) is one Clos over all `N` GPUs.
//! * The **rail-only** fabric (Fig. 6) keeps one Clos per rail: `K` Clos networks over `N / K`
//!   GPUs each, with no spine joining them.
//!
//! Switch counts pool ports the way Table 2 does: a physical switch may host the ports of
//! several rails (partitioned by configuration), so `switches = ceil(ports / k)`. The count of
//! switches when every rail owns its own switches is reported as `dedicated_switches`.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use comm_cost_model::InputError;
use comm_cost_model::check_non_negative;
use comm_cost_model::{check_count_u64, check_divides};

/// The most Clos tiers considered before a radix is declared too small.
pub const MAX_TIERS: u32 = 8;

/// Table 2 of the rail-only paper as published (K = 256): `(N, radix, rail-optimized switches,
/// rail-only switches, rail-optimized transceivers, rail-only transceivers, cost reduction in
/// whole percent, truncated)`. Test data for [`compare_fabrics`].
pub const PAPER_TABLE2: [(u64, u64, u64, u64, u64, u64, u64); 6] = [
    (32768, 64, 2560, 1536, 196_608, 131_072, 37),
    (32768, 128, 1280, 256, 196_608, 65_536, 75),
    (32768, 256, 384, 128, 131_072, 65_536, 60),
    (65536, 64, 5120, 3072, 393_216, 262_144, 37),
    (65536, 128, 2560, 1536, 393_216, 262_144, 37),
    (65536, 256, 1280, 256, 393_216, 131_072, 75),
];

/// Equipment prices; the defaults are the paper's (§6.5 footnote, from TopoOpt): $374 per
/// 400 Gbps transceiver and $748 per 400 Gbps switch port.
///
/// Deserializing runs [`PriceModel::validate`], so parsed prices are valid.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PriceModelFields")]
pub struct PriceModel {
    /// Price of one transceiver, USD.
    pub transceiver_usd: f64,
    /// Price of one switch port, USD.
    pub switch_port_usd: f64,
}

impl Default for PriceModel {
    fn default() -> Self {
        Self {
            transceiver_usd: 374.0,
            switch_port_usd: 748.0,
        }
    }
}

/// The serialized form of [`PriceModel`], validated on the way in.
#[derive(Deserialize)]
struct PriceModelFields {
    transceiver_usd: f64,
    switch_port_usd: f64,
}

impl TryFrom<PriceModelFields> for PriceModel {
    type Error = RailNetworkError;

    fn try_from(f: PriceModelFields) -> Result<Self, Self::Error> {
        let prices = Self {
            transceiver_usd: f.transceiver_usd,
            switch_port_usd: f.switch_port_usd,
        };
        prices.validate()?;
        Ok(prices)
    }
}

impl PriceModel {
    /// Checks that both prices are finite and non-negative.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`NonFinite` or `Negative`) naming the price.
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::fabric::PriceModel;
    /// PriceModel::default().validate()?;
    /// assert!(PriceModel { transceiver_usd: -1.0, ..PriceModel::default() }.validate().is_err());
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_non_negative("transceiver price (USD)", self.transceiver_usd)?;
        check_non_negative("switch port price (USD)", self.switch_port_usd)?;
        Ok(())
    }
}

/// The shape of a cluster: `N` GPUs in HB domains of `K`, joined by radix-`k` switches.
///
/// Deserializing runs [`FabricParams::validate`], so parsed parameters are valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "FabricParamsFields")]
pub struct FabricParams {
    /// Total GPUs `N`.
    pub gpus: u64,
    /// GPUs per HB domain `K` (also the number of rails).
    pub hb_domain: u64,
    /// Ports per network switch `k`.
    pub radix: u64,
}

/// The serialized form of [`FabricParams`], validated on the way in.
#[derive(Deserialize)]
struct FabricParamsFields {
    gpus: u64,
    hb_domain: u64,
    radix: u64,
}

impl TryFrom<FabricParamsFields> for FabricParams {
    type Error = RailNetworkError;

    fn try_from(f: FabricParamsFields) -> Result<Self, Self::Error> {
        let params = Self::new(f.gpus, f.hb_domain, f.radix);
        params.validate()?;
        Ok(params)
    }
}

impl FabricParams {
    /// A cluster of `gpus` GPUs in HB domains of `hb_domain`, switches of radix `radix`.
    #[must_use]
    pub const fn new(gpus: u64, hb_domain: u64, radix: u64) -> Self {
        Self {
            gpus,
            hb_domain,
            radix,
        }
    }

    /// Validates the shape: all counts positive and `K` dividing `N`.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`CountTooSmall` or `NotDivisible`).
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_count_u64("GPU count N", self.gpus, 1)?;
        check_count_u64("HB-domain size K", self.hb_domain, 1)?;
        check_count_u64("switch radix k", self.radix, 1)?;
        check_divides(
            "HB-domain size K must divide the GPU count N",
            self.gpus,
            self.hb_domain,
        )?;
        Ok(())
    }

    /// HB domains in the cluster, `N / K` (the size of each rail).
    #[must_use]
    pub fn domains(&self) -> u64 {
        self.gpus / self.hb_domain.max(1)
    }
}

/// Which fabric joins the HB domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FabricKind {
    /// One full-bisection Clos over every GPU (rail switches plus spine).
    RailOptimized,
    /// One Clos per rail and no spine (Wang et al. §4).
    RailOnly,
}

/// Equipment of one fabric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FabricCounts {
    /// Which fabric.
    pub kind: FabricKind,
    /// Switch tiers of each Clos (0 when no network is needed).
    pub tiers: u32,
    /// Physical switches with ports pooled across rails, `ceil(ports / k)` (Table 2's count).
    pub switches: u64,
    /// Switches when every rail owns its switches (per-tier ceilings, summed over rails).
    pub dedicated_switches: u64,
    /// Switch ports in use, `(2T - 1)` per endpoint.
    pub switch_ports: u64,
    /// Cables, `T` per endpoint.
    pub links: u64,
    /// Transceivers, two per link.
    pub transceivers: u64,
    /// `transceivers * transceiver_usd + switches * k * switch_port_usd`.
    pub cost_usd: f64,
}

/// Both fabrics for one cluster and the cost saved by rail-only.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FabricComparison {
    /// The cluster.
    pub params: FabricParams,
    /// The rail-optimized (any-to-any) fabric.
    pub rail_optimized: FabricCounts,
    /// The rail-only fabric.
    pub rail_only: FabricCounts,
    /// `1 - cost(rail-only) / cost(rail-optimized)`, a fraction (0 when both cost nothing).
    pub cost_reduction: f64,
}

/// Fewest folded-Clos tiers that connect `endpoints` with radix-`radix` switches.
///
/// A `T`-tier folded Clos reaches `2 (k/2)^T` endpoints; one endpoint (or none) needs no switch
/// (0 tiers). This is the counting behind Table 2 (Wang et al. §6.5).
///
/// # Errors
///
/// [`RailNetworkError::RadixTooSmall`] if the radix is odd, below 2, or needs more than
/// [`MAX_TIERS`] tiers.
///
/// # Complexity
///
/// `O(MAX_TIERS)` time ([`MAX_TIERS`]).
///
/// # Examples
///
/// ```
/// use rail_network::fabric::clos_tiers;
/// assert_eq!(clos_tiers(128, 128)?, 1);   // one switch
/// assert_eq!(clos_tiers(8192, 128)?, 2);  // 2 * 64^2 endpoints fit in two tiers
/// assert_eq!(clos_tiers(8193, 128)?, 3);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn clos_tiers(endpoints: u64, radix: u64) -> Result<u32, RailNetworkError> {
    if endpoints <= 1 {
        return Ok(0);
    }
    let too_small = RailNetworkError::RadixTooSmall {
        radix,
        endpoints,
        max_tiers: MAX_TIERS,
    };
    if radix < 2 || radix % 2 != 0 {
        return Err(too_small);
    }
    let half = radix / 2;
    let mut capacity = radix; // 2 * half^1
    for tiers in 1..=MAX_TIERS {
        if endpoints <= capacity {
            return Ok(tiers);
        }
        capacity = capacity.saturating_mul(half);
    }
    Err(too_small)
}

/// Per-tier switch counts of one Clos over `n` endpoints with `tiers` tiers.
fn tier_switches(n: u64, radix: u64, tiers: u32) -> u64 {
    match tiers {
        0 => 0,
        _ => {
            let lower = u64::from(tiers - 1) * n.div_ceil(radix / 2);
            lower + n.div_ceil(radix)
        }
    }
}

/// Counts one fabric made of `clos_count` identical Clos networks over `endpoints` each.
fn count(
    kind: FabricKind,
    clos_count: u64,
    endpoints: u64,
    radix: u64,
    prices: &PriceModel,
) -> Result<FabricCounts, RailNetworkError> {
    let tiers = clos_tiers(endpoints, radix)?;
    let overflow = |what| RailNetworkError::Input(InputError::Overflow { what });
    let gpus = clos_count
        .checked_mul(endpoints)
        .ok_or(overflow("GPU count"))?;
    let t = u64::from(tiers);
    let switch_ports = (2 * t).saturating_sub(1).checked_mul(gpus);
    let switch_ports = switch_ports.ok_or(overflow("switch ports"))?;
    let links = t.checked_mul(gpus).ok_or(overflow("links"))?;
    let transceivers = links.checked_mul(2).ok_or(overflow("transceivers"))?;
    let switches = switch_ports.div_ceil(radix);
    let dedicated = tier_switches(endpoints, radix, tiers).checked_mul(clos_count);
    let cost_usd = comm_cost_model::check_finite_result(
        "fabric cost (USD)",
        transceivers as f64 * prices.transceiver_usd
            + (switches as f64) * (radix as f64) * prices.switch_port_usd,
    )?;
    Ok(FabricCounts {
        kind,
        tiers,
        switches,
        dedicated_switches: dedicated.ok_or(overflow("dedicated switches"))?,
        switch_ports,
        links,
        transceivers,
        cost_usd,
    })
}

/// Equipment of the rail-optimized full-bisection Clos over all `N` GPUs (§2.1, Fig. 1).
///
/// # Errors
///
/// Invalid [`FabricParams`], a negative or non-finite price, or a radix too small
/// ([`RailNetworkError::RadixTooSmall`]).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::fabric::{rail_optimized_fabric, FabricParams, PriceModel};
/// // Table 2, first row: 32768 GPUs, radix 64 -> three tiers, 2560 switches, 196608 transceivers.
/// let p = FabricParams::new(32768, 256, 64);
/// let f = rail_optimized_fabric(&p, &PriceModel::default())?;
/// assert_eq!((f.tiers, f.switches, f.transceivers), (3, 2560, 196_608));
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn rail_optimized_fabric(
    params: &FabricParams,
    prices: &PriceModel,
) -> Result<FabricCounts, RailNetworkError> {
    params.validate()?;
    prices.validate()?;
    count(
        FabricKind::RailOptimized,
        1,
        params.gpus,
        params.radix,
        prices,
    )
}

/// Equipment of the rail-only fabric: `K` separate Clos networks, one per rail of `N / K` GPUs
/// (§4, Fig. 6).
///
/// # Errors
///
/// As [`rail_optimized_fabric`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::fabric::{rail_only_fabric, FabricParams, PriceModel};
/// // Table 2: 32768 GPUs in GH200 domains of 256 -> rails of 128 GPUs; radix 128 -> one tier.
/// let p = FabricParams::new(32768, 256, 128);
/// let f = rail_only_fabric(&p, &PriceModel::default())?;
/// assert_eq!((f.tiers, f.switches, f.transceivers), (1, 256, 65_536));
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn rail_only_fabric(
    params: &FabricParams,
    prices: &PriceModel,
) -> Result<FabricCounts, RailNetworkError> {
    params.validate()?;
    prices.validate()?;
    count(
        FabricKind::RailOnly,
        params.hb_domain,
        params.domains(),
        params.radix,
        prices,
    )
}

/// Both fabrics and the fraction of cost rail-only saves (Table 2's last column).
///
/// # Errors
///
/// As [`rail_optimized_fabric`]; [`RailNetworkError::Input`] (`NonFinite`) if the cost ratio
/// is not finite (a guard: both costs are finite and the divisor positive).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::fabric::{compare_fabrics, FabricParams, PriceModel};
/// let p = FabricParams::new(65536, 256, 256);
/// let c = compare_fabrics(&p, &PriceModel::default())?;
/// assert_eq!(c.cost_reduction, 0.75); // 3 tiers -> 1 tier: (6*3-2) N vs (6*1-2) N port-prices
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn compare_fabrics(
    params: &FabricParams,
    prices: &PriceModel,
) -> Result<FabricComparison, RailNetworkError> {
    let rail_optimized = rail_optimized_fabric(params, prices)?;
    let rail_only = rail_only_fabric(params, prices)?;
    let cost_reduction = if rail_optimized.cost_usd > 0.0 {
        // Both costs are finite and the divisor positive: a guard, not an expected error.
        comm_cost_model::check_finite_result(
            "cost reduction (fraction)",
            1.0 - rail_only.cost_usd / rail_optimized.cost_usd,
        )?
    } else {
        0.0
    };
    Ok(FabricComparison {
        params: *params,
        rail_optimized,
        rail_only,
        cost_reduction,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table2_rows_exactly() {
        for (n, k, sw, ro_sw, tr, ro_tr, pct) in PAPER_TABLE2 {
            // The paper's clusters are GH200 HB domains of K = 256.
            let p = FabricParams::new(n, 256, k);
            let c = compare_fabrics(&p, &PriceModel::default()).unwrap();
            assert_eq!(c.rail_optimized.switches, sw, "N={n} k={k}");
            assert_eq!(c.rail_only.switches, ro_sw, "N={n} k={k}");
            assert_eq!(c.rail_optimized.transceivers, tr, "N={n} k={k}");
            assert_eq!(c.rail_only.transceivers, ro_tr, "N={n} k={k}");
            // The paper truncates: 37.5% is printed as 37%.
            assert_eq!(
                (c.cost_reduction * 100.0).floor(),
                pct as f64,
                "N={n} k={k}"
            );
        }
    }

    #[test]
    fn reductions_are_exact_fractions() {
        // Cost per GPU is 748 (2T-1) + 374 * 2T = 374 (6T - 2): T=3 -> 16, T=2 -> 10, T=1 -> 4.
        let r = |n, k| {
            let p = FabricParams::new(n, 256, k);
            compare_fabrics(&p, &PriceModel::default())
                .unwrap()
                .cost_reduction
        };
        assert_eq!(r(32768, 64), 1.0 - 10.0 / 16.0);
        assert_eq!(r(32768, 128), 1.0 - 4.0 / 16.0);
        assert_eq!(r(32768, 256), 1.0 - 4.0 / 10.0);
    }

    #[test]
    fn tiers_and_errors() {
        assert_eq!(clos_tiers(1, 64).unwrap(), 0);
        assert_eq!(clos_tiers(2048, 64).unwrap(), 2);
        assert_eq!(clos_tiers(2049, 64).unwrap(), 3);
        assert!(matches!(
            clos_tiers(10, 2),
            Err(RailNetworkError::RadixTooSmall { .. })
        ));
        assert!(clos_tiers(10, 7).is_err());
        let bad = FabricParams::new(100, 8, 64);
        assert!(matches!(
            rail_only_fabric(&bad, &PriceModel::default()),
            Err(RailNetworkError::Input(InputError::NotDivisible { .. }))
        ));
    }

    #[test]
    fn dedicated_switches_exceed_pooled_when_rails_are_small() {
        // Rails of 128 GPUs on radix-256 switches: each rail alone half-fills one switch.
        let p = FabricParams::new(32768, 256, 256);
        let f = rail_only_fabric(&p, &PriceModel::default()).unwrap();
        assert_eq!((f.switches, f.dedicated_switches), (128, 256));
    }

    #[test]
    fn single_domain_needs_no_network() {
        let p = FabricParams::new(256, 256, 64);
        let f = rail_only_fabric(&p, &PriceModel::default()).unwrap();
        assert_eq!((f.tiers, f.switches, f.transceivers), (0, 0, 0));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn rail_only_never_costs_more(exp_n in 4u32..18, exp_k in 0u32..9, exp_r in 2u32..9) {
                let p = FabricParams::new(1 << exp_n, 1 << exp_k.min(exp_n), 1 << exp_r);
                if let Ok(c) = compare_fabrics(&p, &PriceModel::default()) {
                    prop_assert!(c.rail_only.cost_usd <= c.rail_optimized.cost_usd);
                    prop_assert!(c.rail_only.tiers <= c.rail_optimized.tiers);
                    prop_assert!((0.0..=1.0).contains(&c.cost_reduction));
                }
            }
        }
    }
}

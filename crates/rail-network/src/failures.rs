//! What a failed link, switch, GPU or server costs each fabric (Wang et al. §4.1).
//!
//! The paper argues qualitatively; this module makes the argument countable. For every failure it
//! reports the GPUs that lose the network, the HB domains touched, whether the job can be
//! remapped while keeping every HB domain whole, the idle GPUs the recovery consumes, and the
//! recovery used:
//!
//! * rail switches and links behave identically in both fabrics (a leaf takes its GPUs down);
//! * a failed upper-tier switch or link only removes capacity, never connectivity;
//! * a failed GPU with an idle GPU in its domain is swapped directly in rail-optimized; rail-only
//!   needs the optical reconfigurable switches the paper proposes to bring the idle GPU onto the
//!   rail, else the whole domain migrates;
//! * a failed GPU in a full domain migrates the domain (sensible for K = 8) or, with optical
//!   switches inside a large HB domain (GH200), swaps a small set of GPUs;
//! * a DGX-like server is an HB domain and migrates as one; a GH200-like server is one GPU.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::fabric::{FabricKind, FabricParams, clos_tiers};
use comm_cost_model::{InputError, check_count_u64};

/// A component failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// A network cable whose lower end is at `tier` (0 = GPU to leaf, 1 = leaf to tier 2, ...).
    Link {
        /// Tier of the lower end.
        tier: u32,
    },
    /// A network switch of `tier` (1 = leaf / rail switch).
    Switch {
        /// Tier of the switch.
        tier: u32,
    },
    /// One GPU.
    Gpu {
        /// Whether an idle GPU is available in the same HB domain.
        idle_in_domain: bool,
    },
    /// One server (its `gpus_per_server` GPUs).
    Server,
}

/// Facts about the cluster the recovery may use.
///
/// Deserializing runs [`FailureContext::validate`], so a parsed context is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "FailureContextFields")]
pub struct FailureContext {
    /// GPUs per server: the HB-domain size for DGX-like servers, 1 for GH200 superchips.
    pub gpus_per_server: u64,
    /// Whether optical reconfigurable switches sit between GPUs and rail switches (and inside
    /// large HB domains), as §4.1 proposes.
    pub optical_reconfiguration: bool,
}

/// The serialized form of [`FailureContext`], validated on the way in.
#[derive(Deserialize)]
struct FailureContextFields {
    gpus_per_server: u64,
    optical_reconfiguration: bool,
}

impl TryFrom<FailureContextFields> for FailureContext {
    type Error = RailNetworkError;

    fn try_from(f: FailureContextFields) -> Result<Self, Self::Error> {
        let ctx = Self {
            gpus_per_server: f.gpus_per_server,
            optical_reconfiguration: f.optical_reconfiguration,
        };
        ctx.validate()?;
        Ok(ctx)
    }
}

impl FailureContext {
    /// Checks that a server has at least one GPU.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`CountTooSmall`).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::failures::FailureContext;
    /// let ctx = FailureContext { gpus_per_server: 8, optical_reconfiguration: false };
    /// ctx.validate()?;
    /// assert!(FailureContext { gpus_per_server: 0, ..ctx }.validate().is_err());
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_count_u64("GPUs per server", self.gpus_per_server, 1)?;
        Ok(())
    }
}

/// How the job recovers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// Nothing is cut off; the fabric runs with less capacity.
    ReducedCapacity,
    /// Idle GPUs of the same HB domain take over.
    SwapInDomain,
    /// Optical switches bring healthy GPUs onto the rail (or into the domain).
    OpticalSwap,
    /// Every affected HB domain moves to an idle one.
    MigrateDomain,
}

/// The effect of one failure on one fabric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FailureImpact {
    /// The fabric.
    pub kind: FabricKind,
    /// GPUs that lose their network (or are dead).
    pub gpus_cut_off: u64,
    /// HB domains containing those GPUs.
    pub domains_affected: u64,
    /// Whether the job can continue on a remapping that keeps every HB domain whole.
    pub remappable: bool,
    /// Idle GPUs the recovery consumes.
    pub spare_gpus_needed: u64,
    /// The recovery used.
    pub recovery: Recovery,
    /// Fraction of the top-tier capacity lost (0 when GPUs are cut off instead).
    pub capacity_lost: f64,
}

/// The effect of `failure` on fabric `kind` of cluster `params` (§4.1).
///
/// # Errors
///
/// Invalid [`FabricParams`] or context, a radix too small, or a tier the fabric does not have
/// ([`RailNetworkError::Input`] (`IndexOutOfRange`)); [`InputError::Overflow`] (wrapped) if the spare
/// GPUs of a server's whole domains exceed `u64`.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::fabric::{FabricKind, FabricParams};
/// use rail_network::failures::{failure_impact, Failure, FailureContext, Recovery};
/// let p = FabricParams::new(1024, 8, 64);
/// let ctx = FailureContext { gpus_per_server: 8, optical_reconfiguration: false };
/// let gpu = Failure::Gpu { idle_in_domain: true };
/// let opt = failure_impact(FabricKind::RailOptimized, &p, gpu, &ctx)?;
/// let ro = failure_impact(FabricKind::RailOnly, &p, gpu, &ctx)?;
/// assert_eq!((opt.recovery, opt.spare_gpus_needed), (Recovery::SwapInDomain, 1));
/// assert_eq!((ro.recovery, ro.spare_gpus_needed), (Recovery::MigrateDomain, 8));
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn failure_impact(
    kind: FabricKind,
    params: &FabricParams,
    failure: Failure,
    ctx: &FailureContext,
) -> Result<FailureImpact, RailNetworkError> {
    params.validate()?;
    ctx.validate()?;
    let endpoints = match kind {
        FabricKind::RailOptimized => params.gpus,
        FabricKind::RailOnly => params.domains(),
    };
    let tiers = clos_tiers(endpoints, params.radix)?;
    let out_of_range = |tier: u32| {
        RailNetworkError::Input(InputError::IndexOutOfRange {
            what: "tier",
            index: u64::from(tier),
            size: u64::from(tiers),
        })
    };
    let k = params.hb_domain;
    match failure {
        Failure::Link { tier } if tier >= tiers => Err(out_of_range(tier)),
        Failure::Switch { tier } if tier == 0 || tier > tiers => Err(out_of_range(tier)),
        Failure::Link { tier: 0 } => Ok(lost_gpus(kind, params, 1, false, ctx)),
        Failure::Switch { tier: 1 } => {
            let per_leaf = if tiers == 1 {
                params.radix
            } else {
                params.radix / 2
            };
            Ok(lost_gpus(kind, params, per_leaf.min(endpoints), false, ctx))
        }
        Failure::Link { .. } | Failure::Switch { .. } => {
            Ok(capacity_only(kind, endpoints, params.radix, tiers))
        }
        Failure::Gpu { idle_in_domain } => Ok(lost_gpus(kind, params, 1, idle_in_domain, ctx)),
        Failure::Server if ctx.gpus_per_server >= k => {
            let domains = ctx.gpus_per_server.div_ceil(k);
            // Whole domains round the server up: can exceed `u64` for absurd server sizes.
            let spare = domains.checked_mul(k).ok_or(InputError::Overflow {
                what: "spare GPUs for the migrated domains",
            })?;
            Ok(FailureImpact {
                kind,
                gpus_cut_off: ctx.gpus_per_server,
                domains_affected: domains,
                remappable: true,
                spare_gpus_needed: spare,
                recovery: Recovery::MigrateDomain,
                capacity_lost: 0.0,
            })
        }
        Failure::Server => Ok(lost_gpus(kind, params, ctx.gpus_per_server, false, ctx)),
    }
}

/// An upper-tier switch or link: path diversity keeps every GPU connected.
fn capacity_only(kind: FabricKind, endpoints: u64, radix: u64, tiers: u32) -> FailureImpact {
    let top_switches = endpoints.div_ceil(radix).max(1);
    FailureImpact {
        kind,
        gpus_cut_off: 0,
        domains_affected: 0,
        remappable: true,
        spare_gpus_needed: 0,
        recovery: Recovery::ReducedCapacity,
        capacity_lost: if tiers > 1 {
            1.0 / top_switches as f64
        } else {
            0.0
        },
    }
}

/// `gpus` GPUs, each in its own HB domain (a leaf serves one rail), lose the network.
fn lost_gpus(
    kind: FabricKind,
    params: &FabricParams,
    gpus: u64,
    idle_in_domain: bool,
    ctx: &FailureContext,
) -> FailureImpact {
    let k = params.hb_domain;
    let domains = gpus.min(params.domains());
    let swap_directly = idle_in_domain && kind == FabricKind::RailOptimized;
    // Rail-only brings an idle GPU onto the rail optically; inside a large, full domain the
    // optical core of the HB domain swaps a small set of GPUs (§4.1).
    let optical = ctx.optical_reconfiguration && (idle_in_domain || k > 8);
    let (recovery, spare) = if swap_directly {
        (Recovery::SwapInDomain, gpus)
    } else if optical {
        (Recovery::OpticalSwap, gpus)
    } else {
        // `domains <= gpus / k` of the fabric, so this is at most its GPU count.
        (Recovery::MigrateDomain, domains * k)
    };
    FailureImpact {
        kind,
        gpus_cut_off: gpus,
        domains_affected: domains,
        remappable: true,
        spare_gpus_needed: spare,
        recovery,
        capacity_lost: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DGX: FailureContext = FailureContext {
        gpus_per_server: 8,
        optical_reconfiguration: false,
    };

    fn both(p: &FabricParams, f: Failure, ctx: &FailureContext) -> (FailureImpact, FailureImpact) {
        (
            failure_impact(FabricKind::RailOptimized, p, f, ctx).unwrap(),
            failure_impact(FabricKind::RailOnly, p, f, ctx).unwrap(),
        )
    }

    #[test]
    fn leaf_switch_and_gpu_link_are_identical_in_both_fabrics() {
        // 4096 GPUs, K = 8 -> rails of 512; radix 64 -> a leaf serves 32 GPUs in both fabrics.
        let p = FabricParams::new(4096, 8, 64);
        let (opt, ro) = both(&p, Failure::Switch { tier: 1 }, &DGX);
        assert_eq!(opt.gpus_cut_off, 32);
        assert_eq!(opt.gpus_cut_off, ro.gpus_cut_off);
        assert_eq!(opt.spare_gpus_needed, ro.spare_gpus_needed);
        let (opt, ro) = both(&p, Failure::Link { tier: 0 }, &DGX);
        assert_eq!((opt.gpus_cut_off, ro.gpus_cut_off), (1, 1));
    }

    #[test]
    fn spine_failure_only_costs_capacity() {
        let p = FabricParams::new(4096, 8, 64);
        let opt = failure_impact(
            FabricKind::RailOptimized,
            &p,
            Failure::Switch { tier: 2 },
            &DGX,
        )
        .unwrap();
        assert_eq!(opt.gpus_cut_off, 0);
        assert_eq!(opt.recovery, Recovery::ReducedCapacity);
        // 4096 GPUs need 2 tiers of radix 64? 2 * 32^2 = 2048 < 4096 -> 3 tiers; top has 64.
        assert_eq!(opt.capacity_lost, 1.0 / 64.0);
    }

    #[test]
    fn gpu_failures_follow_section_4_1() {
        let gh200 = FabricParams::new(4096, 256, 64);
        let optical = FailureContext {
            gpus_per_server: 1,
            optical_reconfiguration: true,
        };
        // Full GH200 domain with optical switches: swap a small set, not 256 GPUs.
        let (_, ro) = both(
            &gh200,
            Failure::Gpu {
                idle_in_domain: false,
            },
            &optical,
        );
        assert_eq!(
            (ro.recovery, ro.spare_gpus_needed),
            (Recovery::OpticalSwap, 1)
        );
        // Without optics a full domain migrates in both fabrics.
        let plain = FailureContext {
            optical_reconfiguration: false,
            ..optical
        };
        let (opt, ro) = both(&gh200, Failure::Server, &plain);
        assert_eq!(opt.spare_gpus_needed, 256);
        assert_eq!(ro.spare_gpus_needed, 256);
        // A DGX server is an HB domain: both migrate 8 GPUs.
        let dgx = FabricParams::new(1024, 8, 64);
        let (opt, ro) = both(&dgx, Failure::Server, &DGX);
        assert_eq!((opt.spare_gpus_needed, ro.spare_gpus_needed), (8, 8));
    }

    #[test]
    fn rejects_missing_tiers() {
        let p = FabricParams::new(1024, 8, 256);
        // Rails of 128 on radix 256: one tier, so no tier-2 switch and no tier-1 link.
        let e = failure_impact(FabricKind::RailOnly, &p, Failure::Switch { tier: 2 }, &DGX);
        assert!(matches!(
            e,
            Err(RailNetworkError::Input(InputError::IndexOutOfRange { .. }))
        ));
        let e = failure_impact(FabricKind::RailOnly, &p, Failure::Link { tier: 1 }, &DGX);
        assert!(e.is_err());
    }
}

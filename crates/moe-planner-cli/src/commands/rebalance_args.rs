//! The rebalance options `place` and `advise` share: how far above the best balance a
//! rebalance may stay to copy fewer experts, and what a copy costs.

/// Rebalance options of `place --current` and `advise --current`.
#[derive(Debug, clap::Args)]
pub(crate) struct RebalanceArgs {
    /// Allowed relative excess of the rebalance's maximum GPU load over the best found, traded
    /// for fewer expert copies.
    #[arg(long, default_value_t = 0.0)]
    pub tolerance: f64,
    /// Bytes of one expert's weights (gives transfer bytes and times).
    #[arg(long)]
    pub expert_bytes: Option<f64>,
    /// Per-GPU bandwidth for weight transfers, Gbps.
    #[arg(long, default_value_t = 400.0)]
    pub bandwidth_gbps: f64,
    /// Expert copies one GPU may send, and receive, per migration round (1: one peer at a
    /// time).
    #[arg(long, default_value_t = 1)]
    pub transfer_peer_limit: usize,
}

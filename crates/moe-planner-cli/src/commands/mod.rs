//! One module per subcommand: its clap arguments and its `run` function.

pub(crate) mod advise;
pub(crate) mod colocate;
pub(crate) mod demo;
pub(crate) mod fit;
pub(crate) mod group;
pub(crate) mod infer;
pub(crate) mod iteration;
pub(crate) mod network;
pub(crate) mod place;
pub(crate) mod place_traffic;
pub(crate) mod rebalance_args;
pub(crate) mod schedule;
pub(crate) mod train;

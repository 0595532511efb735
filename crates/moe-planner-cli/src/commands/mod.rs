//! One module per subcommand: its clap arguments and its `run` function.

pub mod colocate;
pub mod demo;
pub mod fit;
pub mod group;
pub mod infer;
pub mod iteration;
pub mod network;
pub mod place;
pub mod schedule;
pub mod train;

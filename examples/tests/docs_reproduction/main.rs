//! Drift tests of `docs/reproduction.md` (issue 24 item 6): every deterministic table the
//! examples produce is recomputed here and compared, cell by cell, with the table parsed from
//! the doc, so a change that moves a documented number fails until the doc is regenerated.
//! `--nocapture` prints the regenerated rows. Run every drift test of the workspace with
//! `scripts/check-docs` (documented at the top of `docs/reproduction.md`).

mod alltoall;
mod aristos;
mod colocation;
mod inference;
mod lysi_assign;
mod measured;
mod parm;
mod placement;
mod rail;
mod robustness;
mod tables;
mod training;

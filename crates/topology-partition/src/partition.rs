//! A partition of the workers into expert-parallel groups, with each group's `T(g)`.

use comm_cost_model::InputError;
use comm_cost_model::units::Seconds;
use serde::{Deserialize, Serialize};

use crate::TopologyError;

/// Groups of worker ids (each sorted) and the Aristos objective `T(g)` of each, in seconds.
///
/// An infeasible group (too few expert slots) has `T = inf`, serialized as JSON `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partition {
    /// Worker ids of each group, ascending; groups ordered by their smallest id.
    pub groups: Vec<Vec<usize>>,
    /// `T(g)` of each group, seconds (same order as `groups`).
    #[serde(with = "inf_as_null")]
    pub objective_s: Vec<Seconds>,
}

impl Partition {
    /// The iteration time the partition implies: the largest `T(g)` (groups synchronize in
    /// the data-parallel AllReduce, so the slowest group sets the pace), seconds.
    pub fn max_objective_s(&self) -> Seconds {
        self.objective_s.iter().copied().fold(0.0, f64::max)
    }

    /// Group index of every worker (`result[w]` is the group holding worker `w`).
    pub fn group_of(&self) -> Vec<usize> {
        let n = self.groups.iter().map(Vec::len).sum();
        let mut of = vec![0; n];
        for (g, members) in self.groups.iter().enumerate() {
            for &w in members {
                if let Some(slot) = of.get_mut(w) {
                    *slot = g;
                }
            }
        }
        of
    }

    /// Puts groups in canonical order (members ascending, groups by first member).
    pub(crate) fn canonical(mut groups: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
        for g in &mut groups {
            g.sort_unstable();
        }
        groups.sort_unstable_by_key(|g| g.first().copied().unwrap_or(usize::MAX));
        groups
    }
}

/// Checks that groups are non-empty, in range and pairwise disjoint.
pub(crate) fn check_disjoint<'a>(
    n: usize,
    groups: impl Iterator<Item = &'a [usize]>,
) -> Result<(), TopologyError> {
    let mut seen = vec![false; n];
    for group in groups {
        if group.is_empty() {
            return Err(TopologyError::Input(InputError::Empty { what: "group" }));
        }
        for &w in group {
            match seen.get_mut(w) {
                None => {
                    return Err(TopologyError::BadWorker {
                        worker: w,
                        problem: "out of range",
                    });
                }
                Some(true) => {
                    return Err(TopologyError::BadWorker {
                        worker: w,
                        problem: "listed twice",
                    });
                }
                Some(s) => *s = true,
            }
        }
    }
    Ok(())
}

/// Serializes infinite (or NaN) seconds as `null` and reads `null` back as infinity.
mod inf_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(values: &[f64], s: S) -> Result<S::Ok, S::Error> {
        let finite: Vec<Option<f64>> = values.iter().map(|&v| v.is_finite().then_some(v)).collect();
        serde::Serialize::serialize(&finite, s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        let raw: Vec<Option<f64>> = Vec::deserialize(d)?;
        Ok(raw
            .into_iter()
            .map(|v| v.unwrap_or(f64::INFINITY))
            .collect())
    }
}

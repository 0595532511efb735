//! Which (row, column) pairs a matching may use.

use crate::error::BipartiteError;
use comm_cost_model::check_index;

/// The pairs of an `n × n` problem that are not forbidden, as a dense mask.
#[derive(Debug, Clone)]
pub(crate) struct Allowed {
    n: usize,
    /// `None` when every pair is allowed (the common case costs no memory).
    forbidden: Option<Vec<bool>>,
}

impl Allowed {
    /// Everything allowed except `forbidden` pairs `(row, column)`.
    pub(crate) fn new(n: usize, forbidden: &[(usize, usize)]) -> Result<Self, BipartiteError> {
        if forbidden.is_empty() {
            return Ok(Self { n, forbidden: None });
        }
        let mut mask = vec![false; n * n];
        for &(i, j) in forbidden {
            for index in [i, j] {
                check_index("forbidden pair", index, n)?;
            }
            mask[i * n + j] = true;
        }
        Ok(Self {
            n,
            forbidden: Some(mask),
        })
    }

    /// True if pair `(i, j)` may be used.
    #[inline]
    pub(crate) fn allows(&self, i: usize, j: usize) -> bool {
        self.forbidden
            .as_ref()
            .is_none_or(|mask| !mask[i * self.n + j])
    }
}

//! A Parm MoE layer (Parm, Pan et al., Table I) and its communication volumes.

use serde::{Deserialize, Serialize};

use crate::units::Bytes;
use crate::validate::check_count;
use crate::{InputError, check_finite_result, check_positive};

/// The shape of one MoE layer trained with MP + EP + ESP (Parm Table I notation).
///
/// `bytes_per_element` makes the element size explicit: the paper's volumes and fitted `beta`s
/// count tensor *elements*; every time in this crate is computed on bytes.
///
/// Deserializes through [`ParmLayer::validate`]; the fields are public, so every function
/// taking a layer checks it again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ParmLayerFields")]
pub struct ParmLayer {
    /// GPUs in the cluster (`P`).
    pub p: usize,
    /// Model-parallel group size (`N_MP`); divides `P`.
    pub n_mp: usize,
    /// Expert-parallel group size (`N_EP`); `N_EP * N_ESP = P`.
    pub n_ep: usize,
    /// Expert-sharding group size (`N_ESP`).
    pub n_esp: usize,
    /// Samples per GPU (`B`).
    pub b: usize,
    /// Tokens per sample (`L`).
    pub l: usize,
    /// Embedding size of a token (`M`).
    pub m: usize,
    /// Hidden size of an expert's FFN (`H`; enters computation only).
    pub h: usize,
    /// Number of experts (`E`).
    pub e: usize,
    /// Experts chosen per token (`k`).
    pub k: usize,
    /// Capacity factor (`f`).
    pub f: f64,
    /// Bytes of one tensor element (4 for fp32, 2 for fp16/bf16).
    pub bytes_per_element: f64,
}

deserialize_validated!(
    ParmLayer,
    ParmLayerFields {
        p: usize,
        n_mp: usize,
        n_ep: usize,
        n_esp: usize,
        b: usize,
        l: usize,
        m: usize,
        h: usize,
        e: usize,
        k: usize,
        f: f64,
        bytes_per_element: f64,
    }
);

/// The tensor sizes the Parm schedules move, in elements (and bytes via the layer).
///
/// `T = k f B L / E` tokens per expert (§II); so `E T M = k f B L M` elements do not depend
/// on `E`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ParmVolumes {
    /// `T`, tokens per expert (real-valued: the capacity before rounding).
    pub tokens_per_expert: f64,
    /// `x = B L M`, the layer input per GPU, in elements.
    pub blm_elements: f64,
    /// `E T M`, the dispatched tensor per GPU, in elements.
    pub etm_elements: f64,
    /// `y = E T M N_ESP`, the EP-AlltoAll buffer per GPU after ESP-AllGather, in elements.
    pub y_elements: f64,
}

impl ParmLayer {
    /// Checks every field and the group arithmetic.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] for a zero count; `NotPositive`/`NonFinite` for `f` or
    /// `bytes_per_element`; [`InputError::SizeMismatch`] when `N_EP * N_ESP != P`, `N_MP`
    /// does not divide `P`, or `k > E`.
    pub fn validate(&self) -> Result<(), InputError> {
        // Hot path (every layer of a sweep): one branch when all counts are set; the named
        // per-field check runs only to report the zero one.
        let counts = [
            self.p, self.n_mp, self.n_ep, self.n_esp, self.b, self.l, self.m, self.h, self.e,
            self.k,
        ];
        if counts.contains(&0) {
            self.check_counts()?;
        }
        check_positive("f (capacity factor)", self.f)?;
        check_positive("bytes per element", self.bytes_per_element)?;
        let mismatch = |what, expected: usize, actual: usize| InputError::SizeMismatch {
            what,
            expected: expected as u64,
            actual: actual as u64,
        };
        if self.n_ep.checked_mul(self.n_esp) != Some(self.p) {
            return Err(mismatch(
                "N_EP * N_ESP must equal P",
                self.p,
                // Saturating: the product may be what overflowed.
                self.n_ep.saturating_mul(self.n_esp),
            ));
        }
        if self.p % self.n_mp != 0 {
            return Err(mismatch(
                "N_MP must divide P (P mod N_MP)",
                0,
                self.p % self.n_mp,
            ));
        }
        if self.k > self.e {
            return Err(mismatch("k must not exceed E", self.e, self.k));
        }
        Ok(())
    }

    /// `CountTooSmall` for the first zero count, in field order.
    #[cold]
    fn check_counts(&self) -> Result<(), InputError> {
        for (what, v) in [
            ("P (GPUs)", self.p),
            ("N_MP", self.n_mp),
            ("N_EP", self.n_ep),
            ("N_ESP", self.n_esp),
            ("B (samples per GPU)", self.b),
            ("L (tokens per sample)", self.l),
            ("M (embedding size)", self.m),
            ("H (hidden size)", self.h),
            ("E (experts)", self.e),
            ("k (experts per token)", self.k),
        ] {
            check_count(what, v, 1)?;
        }
        Ok(())
    }

    /// The communication volumes of the layer, validated.
    ///
    /// # Errors
    ///
    /// As [`ParmLayer::validate`]; [`InputError::NonFinite`] when a volume overflows
    /// `f64` (a capacity factor near `f64::MAX`).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::parm::ParmLayer;
    /// let layer = ParmLayer { p: 8, n_mp: 2, n_ep: 4, n_esp: 2, b: 4, l: 1024, m: 2048,
    ///     h: 4096, e: 4, k: 2, f: 1.2, bytes_per_element: 4.0 };
    /// let v = layer.volumes()?;
    /// // T = 2 * 1.2 * 4 * 1024 / 4 = 2457.6 tokens; E T M = 2 * 1.2 * 4 * 1024 * 2048.
    /// assert!((v.tokens_per_expert - 2457.6).abs() < 1e-9);
    /// assert!((v.etm_elements - 2.0 * 1.2 * 4.0 * 1024.0 * 2048.0).abs() < 1e-3);
    /// assert_eq!(v.y_elements, 2.0 * v.etm_elements);
    /// # Ok::<(), comm_cost_model::InputError>(())
    /// ```
    pub fn volumes(&self) -> Result<ParmVolumes, InputError> {
        self.validate()?;
        let (b, l, m, e, k) = (
            self.b as f64,
            self.l as f64,
            self.m as f64,
            self.e as f64,
            self.k as f64,
        );
        let tokens_per_expert = k * self.f * b * l / e;
        let etm_elements = e * tokens_per_expert * m;
        // `y >= E T M >= T` (all factors are at least 1), and `B L M` of three counts is finite.
        let y_elements = check_finite_result(
            "EP-AlltoAll elements y = E T M N_ESP",
            etm_elements * self.n_esp as f64,
        )?;
        Ok(ParmVolumes {
            tokens_per_expert,
            blm_elements: b * l * m,
            etm_elements,
            y_elements,
        })
    }

    /// Bytes of `elements` tensor elements: a plain product (infinite beyond `f64`); the
    /// schedule functions check the times they compute from it.
    #[must_use]
    pub fn bytes(&self, elements: f64) -> Bytes {
        elements * self.bytes_per_element
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflowing_group_product_is_an_error_not_a_panic() {
        let layer = ParmLayer {
            p: 8,
            n_mp: 1,
            n_ep: usize::MAX,
            n_esp: 2,
            b: 1,
            l: 1,
            m: 1,
            h: 1,
            e: 1,
            k: 1,
            f: 1.0,
            bytes_per_element: 4.0,
        };
        assert!(matches!(
            layer.validate(),
            Err(InputError::SizeMismatch {
                actual: u64::MAX,
                ..
            })
        ));
        // A zero count is still named.
        let zero = ParmLayer {
            b: 0,
            n_ep: 8,
            n_esp: 1,
            ..layer
        };
        assert!(matches!(
            zero.validate(),
            Err(InputError::CountTooSmall {
                what: "B (samples per GPU)",
                ..
            })
        ));
    }
}

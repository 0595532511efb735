use serde::{Deserialize, Serialize};

use crate::units::{Bytes, BytesPerSecond, Seconds};
use crate::{InputError, check_non_negative, check_positive};

/// The alpha-beta (Hockney) cost of one message: `t(x) = alpha + beta * x`.
///
/// `alpha_s` is the start-up latency in seconds paid once per message; `beta_s_per_byte` is the
/// inverse bandwidth in seconds per byte. A pair `(alpha, beta)` describes one link, or one
/// (collective, group) pair when fitted from measurements (Parm, Pan et al., §V-A).
///
/// Values are validated on construction (finite, non-negative), so every method is total.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{AlphaBeta, units};
/// let nvlink = AlphaBeta::new(9e-6, 0.014e-3 / 1e6)?; // Aristos' Perlmutter intra-node fit
/// assert!((nvlink.time_s(1e6) - (9e-6 + 0.014e-3)).abs() < 1e-15);
/// let ib = AlphaBeta::from_latency_bandwidth(0.0, units::gb_per_s(25.0))?;
/// assert_eq!(ib.bandwidth_bytes_per_s(), 25e9);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AlphaBetaFields")]
pub struct AlphaBeta {
    /// Start-up latency per message, in seconds.
    pub alpha_s: Seconds,
    /// Transfer time per byte, in seconds per byte (the inverse bandwidth).
    pub beta_s_per_byte: f64,
}

/// The serialized form of [`AlphaBeta`]: deserializing goes through [`AlphaBeta::new`], so a
/// parsed cost (and every type holding one, such as the Parm collective costs) is valid.
#[derive(Deserialize)]
struct AlphaBetaFields {
    alpha_s: Seconds,
    beta_s_per_byte: f64,
}

impl TryFrom<AlphaBetaFields> for AlphaBeta {
    type Error = InputError;

    fn try_from(f: AlphaBetaFields) -> Result<Self, Self::Error> {
        Self::new(f.alpha_s, f.beta_s_per_byte)
    }
}

impl AlphaBeta {
    /// Builds a cost from its latency (s) and inverse bandwidth (s/byte).
    ///
    /// # Errors
    ///
    /// [`InputError::NonFinite`] or [`InputError::Negative`] if either is NaN, infinite or
    /// negative.
    pub fn new(alpha_s: Seconds, beta_s_per_byte: f64) -> Result<Self, InputError> {
        Ok(Self {
            alpha_s: check_non_negative("alpha (s)", alpha_s)?,
            beta_s_per_byte: check_non_negative("beta (s/byte)", beta_s_per_byte)?,
        })
    }

    /// Builds a cost from a latency (s) and a bandwidth (bytes/s).
    ///
    /// # Errors
    ///
    /// As [`AlphaBeta::new`] for the latency; [`InputError::NotPositive`] (or `NonFinite`) if
    /// the bandwidth is not a positive finite number.
    pub fn from_latency_bandwidth(
        alpha_s: Seconds,
        bandwidth_bytes_per_s: BytesPerSecond,
    ) -> Result<Self, InputError> {
        let bw = check_positive("bandwidth (bytes/s)", bandwidth_bytes_per_s)?;
        Self::new(alpha_s, 1.0 / bw)
    }

    /// The cost checked again: the fields are public, so a struct literal may be invalid.
    pub(crate) fn validated(&self) -> Result<Self, InputError> {
        Self::new(self.alpha_s, self.beta_s_per_byte)
    }

    /// Time in seconds to move one message of `bytes` bytes: `alpha + beta * bytes`.
    ///
    /// A zero-byte message still pays `alpha`; callers that skip empty messages should not call
    /// this for them. A plain `f64` primitive of every cost formula: it overflows to infinity
    /// for sizes or costs near `f64::MAX` (and is NaN for a NaN size), so the crate's functions
    /// check what they compute from it and return [`InputError::NonFinite`] instead.
    #[must_use]
    pub fn time_s(&self, bytes: Bytes) -> Seconds {
        self.alpha_s + self.beta_s_per_byte * bytes
    }

    /// Bandwidth in bytes per second (`1 / beta`); infinite when `beta` is zero.
    #[must_use]
    pub fn bandwidth_bytes_per_s(&self) -> BytesPerSecond {
        1.0 / self.beta_s_per_byte
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parm::ParmCollectiveCosts;

    /// Issue 13: a negative or non-finite cost used to deserialize as-is.
    #[test]
    fn deserializing_validates() {
        let ok: AlphaBeta =
            serde_json::from_str(r#"{"alpha_s": 1e-6, "beta_s_per_byte": 1e-9}"#).unwrap();
        assert_eq!(ok, AlphaBeta::new(1e-6, 1e-9).unwrap());
        for bad in [
            r#"{"alpha_s": -1.0, "beta_s_per_byte": 1e-9}"#,
            r#"{"alpha_s": 0.0, "beta_s_per_byte": -1e-9}"#,
        ] {
            let err = serde_json::from_str::<AlphaBeta>(bad).unwrap_err();
            assert!(err.to_string().contains("alpha") || err.to_string().contains("beta"));
        }
        let good = r#"{"alpha_s": 0.0, "beta_s_per_byte": 1e-9}"#;
        let costs = |bad: &str| {
            format!(
                r#"{{"ag_esp": {good}, "ar_esp": {good}, "a2a_ep": {good}, "a2a_ep_esp": {good}, "ag_mp": {bad}}}"#
            )
        };
        assert!(serde_json::from_str::<ParmCollectiveCosts>(&costs(good)).is_ok());
        let bad = r#"{"alpha_s": -1.0, "beta_s_per_byte": 0.0}"#;
        assert!(serde_json::from_str::<ParmCollectiveCosts>(&costs(bad)).is_err());
    }

    #[test]
    fn time_is_alpha_plus_beta_x() {
        let ab = AlphaBeta::new(2e-6, 1e-9).unwrap();
        // 2 us + 1000 bytes * 1 ns/byte = 3 us.
        assert!((ab.time_s(1000.0) - 3e-6).abs() < 1e-18);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(AlphaBeta::new(-1.0, 1.0).is_err());
        assert!(AlphaBeta::new(0.0, f64::NAN).is_err());
        assert!(AlphaBeta::from_latency_bandwidth(0.0, 0.0).is_err());
        assert!(AlphaBeta::from_latency_bandwidth(0.0, f64::INFINITY).is_err());
    }
}

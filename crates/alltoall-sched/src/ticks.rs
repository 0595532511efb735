//! Integer time: every pair's transfer time as a whole number of ticks.
//!
//! All schedulers of this crate work on an integer matrix of durations so that subtraction is
//! exact and every loop terminates. With integer bytes and one bandwidth a tick is one byte time
//! (`1 / B`), which makes the schedule exact. Otherwise the time `d_ij / min(B_i, B_j)` of every
//! pair is scaled so that the bound is about 2^48 ticks and rounded *up*: a pair never gets less
//! time than its link needs, and each line sum grows by at most `n` ticks (relative error below
//! `n / 2^48`, about 4e-12 for 1024 GPUs). Ticks are then mapped back so the bound lands exactly
//! on [`crate::lower_bound_s`].

use std::borrow::Cow;

use crate::bounds::line_sums_u64;
use crate::{Bandwidth, ScheduleError, TrafficMatrix, lower_bound_s};
use comm_cost_model::InputError;

/// Ticks of the largest line of a scaled (non-exact) model.
const SCALED_LINE_TICKS: f64 = (1u64 << 48) as f64;

/// `2^-900` s: below it a scaled model counts time in a power-of-two unit near the bound.
const TINY_BOUND_S: f64 = f64::from_bits((1023 - 900) << 52);

/// The largest power of two at most `x`, for a normal positive `x` (its exponent alone).
fn power_of_two_at_most(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & 0x7FF0_0000_0000_0000)
}

/// The largest entry of two line-sum vectors (0 when both are empty).
fn max_of(rows: &[u64], cols: &[u64]) -> u64 {
    rows.iter().chain(cols).copied().max().unwrap_or(0)
}

/// The durations of a traffic matrix in integer ticks, and how to turn ticks into seconds.
#[derive(Debug, Clone)]
pub(crate) struct Ticks<'m> {
    pub n: usize,
    /// Duration of each pair in ticks, row-major, zero diagonal: the matrix's own entries when
    /// `exact` (no copy: 34 MB at 2048 GPUs, and its page faults), else a scaled copy.
    pub q: Cow<'m, [u64]>,
    /// Bytes of each pair, row-major (as given); empty when `exact` (then they are `q`,
    /// which saves `n^2` words and their conversion).
    bytes: Vec<f64>,
    /// Row and column sums of `q` (original labels).
    pub rows: Vec<u64>,
    pub cols: Vec<u64>,
    /// Largest row or column sum of `q`.
    pub line_ticks: u64,
    /// The lower bound in seconds; `time_s(line_ticks) == bound_s` exactly.
    pub bound_s: f64,
    /// Whether one tick is one byte (integer bytes, one bandwidth).
    pub exact: bool,
    /// Exact model: the bandwidth (ticks per second). Scaled model: `unit`s per tick.
    tick_factor: f64,
    /// Scaled model: the unit of time of `tick_factor`, a power of two (1 unless the bound is
    /// below [`TINY_BOUND_S`]).
    unit: f64,
}

impl<'m> Ticks<'m> {
    /// Validates and converts; see the module documentation.
    pub(crate) fn new(
        matrix: &'m TrafficMatrix,
        bandwidth: &Bandwidth,
    ) -> Result<Self, ScheduleError> {
        bandwidth.check(matrix.n())?;
        let n = matrix.n();
        if let (Some(entries), Some(b)) = (matrix.integer_entries(), bandwidth.as_uniform()) {
            let (rows, cols) = line_sums_u64(entries, n)?;
            let line_ticks = max_of(&rows, &cols);
            // As `lower_bound_s`: a bandwidth like 5e-324 B/s puts the bound beyond `f64`
            // (found by fuzzing: `optimal` returned infinite times).
            let bound_s = line_ticks as f64 / b;
            if !bound_s.is_finite() {
                return Err(ScheduleError::Input(InputError::Overflow {
                    what: "a port's busy time in seconds",
                }));
            }
            return Ok(Self {
                n,
                q: Cow::Borrowed(entries),
                rows,
                cols,
                bytes: Vec::new(),
                line_ticks,
                bound_s,
                exact: true,
                tick_factor: b,
                unit: 1.0,
            });
        }
        let bytes: Vec<f64> = (0..n)
            .flat_map(|i| (0..n).map(move |j| matrix.at(i, j)))
            .collect();
        let rate = |i: usize, j: usize| bandwidth.rate_at(i, j);
        let bound_s = lower_bound_s(matrix, bandwidth)?;
        // A subnormal (or underflowed) bound has too few significant bits to scale ticks by
        // (issue 13: bandwidth 1e308 with tiny byte counts).
        if bound_s < f64::MIN_POSITIVE && bytes.iter().any(|&b| b > 0.0) {
            return Err(ScheduleError::Underflow {
                what: "the lower bound in seconds (bytes / bandwidth)",
            });
        }
        // Below 2^-900 s the tick length `bound / 2^48` nears the subnormal range, where times
        // lose their precision (and `2^48 / bound` overflows below 1.6e-294 s; every pair then
        // saturated at `u64::MAX` ticks, an `Overflow` as soon as a line had two pairs). Such a
        // bound is measured in a power-of-two unit of time instead, which scales exactly;
        // above it the unit is 1 and nothing changes.
        let unit = if bound_s > 0.0 && bound_s < TINY_BOUND_S {
            power_of_two_at_most(bound_s)
        } else {
            1.0
        };
        let scaled_bound = bound_s / unit;
        let scale = if scaled_bound > 0.0 {
            SCALED_LINE_TICKS / scaled_bound
        } else {
            0.0
        };
        let q: Vec<u64> = bytes
            .iter()
            .enumerate()
            .map(|(k, &b)| {
                let t = b / rate(k / n, k % n);
                // Ceil (and at least one tick): never less time than the link needs.
                if b > 0.0 {
                    // `t <= bound_s`, so this is at most about 2^48; a saturated value would
                    // be caught as a line-sum overflow.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let ticks = (t / unit * scale).ceil().max(1.0) as u64;
                    ticks
                } else {
                    0
                }
            })
            .collect();
        let (rows, cols) = line_sums_u64(&q, n)?;
        let line_ticks = max_of(&rows, &cols);
        let tick_factor = if line_ticks > 0 {
            scaled_bound / line_ticks as f64
        } else {
            0.0
        };
        Ok(Self {
            n,
            q: Cow::Owned(q),
            rows,
            cols,
            bytes,
            line_ticks,
            bound_s,
            exact: false,
            tick_factor,
            unit,
        })
    }

    /// Checks that twice the bound fits in ticks: greedy (non-preemptive) schedules end by
    /// then, since a pair starts at the latest when both its ports have done all their other
    /// work.
    pub(crate) fn check_greedy_fits(&self) -> Result<(), ScheduleError> {
        let limit = u64::MAX / 2;
        if self.line_ticks > limit {
            return Err(ScheduleError::Input(InputError::TooLarge {
                what: "the largest line sum in ticks (twice it must fit in 64 bits)",
                limit,
                value: self.line_ticks,
            }));
        }
        Ok(())
    }

    /// Whether ports are busy for at least `percent` % of the bound on average (all pairs'
    /// ticks against `n` times the bound).
    pub(crate) fn mean_load_at_least(&self, percent: u64) -> bool {
        let total: u128 = self.rows.iter().map(|&r| u128::from(r)).sum();
        total * 100 >= u128::from(self.line_ticks) * (self.n as u128) * u128::from(percent)
    }

    /// The bandwidth when one tick is one byte (then `time_s(t) == t as f64 / bandwidth` and a
    /// pair's bytes are its ticks), so a caller converting many ticks can test `exact` once.
    pub(crate) fn exact_bandwidth(&self) -> Option<f64> {
        self.exact.then_some(self.tick_factor)
    }

    /// Seconds at tick `tick`; `time_s(line_ticks) == bound_s`.
    pub(crate) fn time_s(&self, tick: u64) -> f64 {
        if self.exact {
            // Same expression as the bound: bit-identical at `line_ticks`.
            tick as f64 / self.tick_factor
        } else if tick == self.line_ticks {
            self.bound_s
        } else {
            tick as f64 * self.tick_factor * self.unit
        }
    }

    /// Bytes of the pair at row-major index `k` (exact on both paths).
    pub(crate) fn pair_bytes(&self, k: usize) -> f64 {
        if self.exact {
            self.q[k] as f64
        } else {
            self.bytes[k]
        }
    }

    /// Bytes of pair `(i, j)` carried between tick offsets `from` and `to` of its own duration.
    ///
    /// Exact when one tick is one byte; otherwise proportional to time, and `0..q` gives the
    /// pair's bytes exactly.
    pub(crate) fn bytes_between(&self, i: usize, j: usize, from: u64, to: u64) -> f64 {
        let k = i * self.n + j;
        if self.exact {
            return (to - from) as f64;
        }
        let q = self.q[k] as f64;
        let at = |c: u64| {
            if c >= self.q[k] {
                self.bytes[k]
            } else {
                self.bytes[k] * (c as f64 / q)
            }
        };
        at(to) - at(from)
    }
}

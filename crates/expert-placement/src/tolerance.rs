//! The relative tolerance of load comparisons, shared by the searches (its own file so that
//! the exact search and the local search do not import each other).

/// Relative tolerance below which two objective values are treated as equal (floating-point
/// noise of incremental load updates is far smaller).
pub(crate) const REL_EPS: f64 = 1e-12;

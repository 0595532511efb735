//! Reading nccl-tests' standard output (`all_gather_perf`, `all_reduce_perf`,
//! `reduce_scatter_perf`, `alltoall_perf`): the `size count type redop root time algbw busbw
//! #wrong ...` table, and the ranks that ran it.
//!
//! nccl-tests is NVIDIA's benchmark of NCCL collectives; its output is the most common
//! measurement a user has. The parser finds the column header (the comment line naming `size`
//! and `time`), so versions with or without the `root` column both parse; it reads the
//! out-of-place time (the first `time` column) and rejects rows whose `#wrong` count is not zero
//! (a wrong result is not a timing; older versions' floating `error` column is not checked). The rank count is the number of `#  Rank` lines, or
//! `nGpus x nThread` when the run printed none.
//!
//! # Examples
//!
//! ```
//! use moe_planner::comm_cost_model::gpu_scaling::Collective;
//! use moe_planner::nccl_tests::parse_nccl_tests;
//! let text = "\
//! ## nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 2(factor)
//! ##       size         count      type   redop    root     time   algbw   busbw #wrong
//!            8             2     float    none      -1    10.00    0.00    0.00      0
//!           64            16     float    none      -1    11.00    0.01    0.00      0
//! ";
//! let run = parse_nccl_tests(text)?;
//! assert_eq!(run.ranks, 2);
//! let m = run.measurements(Collective::AllGather);
//! assert_eq!((m[1].bytes, m[1].seconds), (64.0, 11e-6));
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::PlanError;
use crate::fitting::Measurement;
use comm_cost_model::gpu_scaling::Collective;

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcclTestsRow {
    /// Size, bytes (nccl-tests' `size`).
    pub bytes: f64,
    /// Data type (`float`, `half`, ...).
    pub dtype: String,
    /// Out-of-place time, seconds.
    pub seconds: f64,
    /// Out-of-place algorithm bandwidth, bytes/s (`None` when the table has no `algbw` column).
    pub algbw_bytes_per_s: Option<f64>,
    /// Out-of-place bus bandwidth, bytes/s (`None` when the table has no `busbw` column).
    pub busbw_bytes_per_s: Option<f64>,
}

/// A parsed nccl-tests run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcclTestsRun {
    /// Ranks (GPUs) that ran the collective.
    pub ranks: u64,
    /// The table, in file order.
    pub rows: Vec<NcclTestsRow>,
}

impl NcclTestsRun {
    /// The rows as measurements of `collective` on [`NcclTestsRun::ranks`] GPUs (nccl-tests
    /// does not print which collective it ran).
    #[must_use]
    pub fn measurements(&self, collective: Collective) -> Vec<Measurement> {
        self.rows
            .iter()
            .map(|r| Measurement {
                collective,
                gpus: self.ranks,
                bytes: r.bytes,
                seconds: r.seconds,
            })
            .collect()
    }
}

/// Column positions of the table.
struct Columns {
    size: usize,
    dtype: Option<usize>,
    time: usize,
    algbw: Option<usize>,
    busbw: Option<usize>,
    wrong: Option<usize>,
}

fn columns(tokens: &[&str]) -> Option<Columns> {
    let find = |name: &str| tokens.iter().position(|t| *t == name);
    Some(Columns {
        size: find("size")?,
        dtype: find("type"),
        time: find("time")?,
        algbw: find("algbw"),
        busbw: find("busbw"),
        // Old versions print a floating `error` (the largest deviation) instead: not a count.
        wrong: find("#wrong"),
    })
}

fn format_error(line: usize, message: impl Into<String>) -> PlanError {
    PlanError::Format {
        line,
        message: message.into(),
    }
}

fn number(tokens: &[&str], at: usize, line: usize, what: &str) -> Result<f64, PlanError> {
    let token = tokens
        .get(at)
        .ok_or_else(|| format_error(line, format!("missing the {what} column")))?;
    token
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| {
            format_error(
                line,
                format!("{what} `{token}` is not a finite non-negative number"),
            )
        })
}

fn header_count(tokens: &[&str], key: &str) -> Option<u64> {
    let at = tokens.iter().position(|t| *t == key)?;
    tokens.get(at + 1)?.parse().ok()
}

/// Parses nccl-tests' standard output (see the module docs).
///
/// # Errors
///
/// [`PlanError::Format`] naming the line for a row that is not numbers where the header says
/// numbers, a non-zero `#wrong`, a table without a header, or no rows;
/// [`PlanError::MissingField`] when neither `#  Rank` lines nor `nGpus` give the rank count.
///
/// # Complexity
///
/// O(length of the text).
pub fn parse_nccl_tests(text: &str) -> Result<NcclTestsRun, PlanError> {
    let (mut cols, mut rank_lines, mut n_gpus, mut rows) = (None, 0u64, None, Vec::new());
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let tokens: Vec<&str> = raw.split_whitespace().collect();
        if let Some(rest) = raw.trim_start().strip_prefix('#') {
            let t: Vec<&str> = rest.split_whitespace().collect();
            if t.first() == Some(&"Rank") {
                rank_lines += 1;
            } else if t.contains(&"nGpus") {
                let threads = header_count(&t, "nThread").unwrap_or(1);
                n_gpus = header_count(&t, "nGpus").map(|g| g.saturating_mul(threads));
            } else if cols.is_none() && t.contains(&"size") && t.contains(&"time") {
                cols = columns(&t);
            }
            continue;
        }
        if tokens.is_empty() {
            continue;
        }
        let c = cols
            .as_ref()
            .ok_or_else(|| format_error(line, "a table row before the column header"))?;
        if let Some(w) = c.wrong {
            let wrong = tokens.get(w).copied().unwrap_or("0");
            if wrong.parse::<f64>().is_ok_and(|v| v != 0.0) {
                return Err(format_error(
                    line,
                    format!("#wrong = {wrong}: results were wrong"),
                ));
            }
        }
        // GB/s in the file; a value near f64::MAX would overflow in bytes/s.
        let bw = |at: Option<usize>, what| {
            at.map(|i| {
                let bytes_per_s = number(&tokens, i, line, what)? * 1e9;
                if bytes_per_s.is_finite() {
                    Ok(bytes_per_s)
                } else {
                    Err(format_error(line, format!("{what} is too large")))
                }
            })
            .transpose()
        };
        rows.push(NcclTestsRow {
            bytes: number(&tokens, c.size, line, "size")?,
            dtype: c
                .dtype
                .and_then(|i| tokens.get(i))
                .map_or_else(String::new, |s| (*s).to_string()),
            seconds: number(&tokens, c.time, line, "time")? * 1e-6,
            algbw_bytes_per_s: bw(c.algbw, "algbw")?,
            busbw_bytes_per_s: bw(c.busbw, "busbw")?,
        });
    }
    if rows.is_empty() {
        return Err(format_error(0, "no table rows"));
    }
    let ranks = match (rank_lines, n_gpus) {
        (0, Some(g)) => g,
        (0, None) => {
            return Err(PlanError::MissingField {
                field: "`#  Rank` lines or `nGpus`",
                needed_by: "an nccl-tests file",
            });
        }
        (r, _) => r,
    };
    Ok(NcclTestsRun { ranks, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str =
        include_str!("../../../examples/data/measured/nccl_tests_all_gather_h100x8.txt");

    #[test]
    fn parses_the_fixture_written_from_measured_data() {
        let run = parse_nccl_tests(SAMPLE).unwrap();
        assert_eq!(run.ranks, 8);
        assert_eq!(run.rows.len(), 21);
        let first = &run.rows[0];
        assert_eq!((first.bytes, first.dtype.as_str()), (512.0, "half"));
        assert!((first.seconds - 10.14e-6).abs() < 1e-12);
        // busbw = algbw (p-1)/p for AllGather.
        let last = &run.rows[20];
        let (bus, alg) = (
            last.busbw_bytes_per_s.unwrap(),
            last.algbw_bytes_per_s.unwrap(),
        );
        assert!((bus / alg - 0.875).abs() < 1e-3);
    }

    #[test]
    fn old_layout_without_root_parses() {
        let text = "# nThread 2 nGpus 4\n#  size count type redop time algbw busbw error\n\
                    1024 256 float sum 20.5 0.05 0.09 0e+00\n";
        let run = parse_nccl_tests(text).unwrap();
        assert_eq!(run.ranks, 8);
        assert!((run.rows[0].seconds - 20.5e-6).abs() < 1e-15);
    }

    #[test]
    fn bad_files_are_format_errors() {
        let wrong = "#  Rank 0\n# size count type redop root time algbw busbw #wrong\n\
                     8 2 float none -1 10.0 0.0 0.0 3\n";
        assert!(matches!(
            parse_nccl_tests(wrong),
            Err(PlanError::Format { line: 3, .. })
        ));
        let text = "#  Rank 0\n# size count type redop root time algbw busbw #wrong\n\
                    8 2 float none -1 fast 0.0 0.0 0\n";
        assert!(matches!(
            parse_nccl_tests(text),
            Err(PlanError::Format { line: 3, .. })
        ));
        assert!(matches!(
            parse_nccl_tests("8 2 float\n"),
            Err(PlanError::Format { line: 1, .. })
        ));
        assert!(matches!(
            parse_nccl_tests("# nothing\n"),
            Err(PlanError::Format { .. })
        ));
        let no_ranks = "# size count type redop root time algbw busbw #wrong\n\
                        8 2 float none -1 10.0 0.0 0.0 0\n";
        assert!(matches!(
            parse_nccl_tests(no_ranks),
            Err(PlanError::MissingField { .. })
        ));
    }

    #[test]
    fn bandwidths_are_finite_or_absent() {
        // Found by fuzzing: 1e308 GB/s overflowed to an infinite bytes/s, and a table without
        // the bandwidth columns carried NaN.
        let huge = "#  Rank 0\n# size count type redop root time algbw busbw #wrong\n\
                    8 2 float none -1 10.0 1e308 0.0 0\n";
        assert!(matches!(
            parse_nccl_tests(huge),
            Err(PlanError::Format { line: 3, .. })
        ));
        let negative = "#  Rank 0\n# size count type redop root time algbw busbw #wrong\n\
                        8 2 float none -1 -10.0 0.0 0.0 0\n";
        assert!(matches!(
            parse_nccl_tests(negative),
            Err(PlanError::Format { line: 3, .. })
        ));
        let bare =
            "#  Rank 0\n# size count type redop root time #wrong\n8 2 float none -1 10.0 0\n";
        let run = parse_nccl_tests(bare).unwrap();
        assert_eq!(run.rows[0].algbw_bytes_per_s, None);
    }
}

//! Building a cluster from measured alpha-beta pairs given as CSV text.

use comm_cost_model::InputError;
use std::io::Read;

use comm_cost_model::{SquareMatrix, Worker};

use crate::{Cluster, CsvProblem, TopologyError};

impl Cluster {
    /// Builds a cluster from `workers`, their node labels and CSV text of measured link costs.
    ///
    /// Each data line is `src,dst,alpha_s,beta_s_per_byte`: worker ids (0-based), the start-up
    /// latency in seconds and the inverse bandwidth in seconds per byte of messages from `src` to
    /// `dst` (as fitted from NCCL-tests or NVSHMEM sweeps, Aristos §3.2). Blank lines and lines
    /// starting with `#` are skipped, and so is a first line whose first field is not a number
    /// (a header). When only one direction of a pair is listed, the other gets the same cost.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Csv`] for a malformed line, an id out of range, a self-pair, a pair
    /// listed twice or a pair missing in both directions; [`TopologyError::Input`] (`BadEntry`)
    /// for a negative or non-finite cost, (`TooLarge`) for more than
    /// [`crate::MAX_WORKERS`] workers; as [`Cluster::new`] otherwise.
    ///
    /// # Complexity
    ///
    /// `O(n^2 + text length)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::Worker;
    /// use topology_partition::Cluster;
    /// let workers = vec![Worker::new(1e14, 8)?, Worker::new(1e14, 8)?, Worker::new(5e13, 4)?];
    /// let text = "src,dst,alpha_s,beta_s_per_byte\n\
    ///             0,1,9e-6,1.4e-11\n\
    ///             0,2,3e-5,5.4e-11\n\
    ///             1,2,3e-5,5.4e-11\n";
    /// let cluster = Cluster::from_csv_str(workers, vec![0, 0, 1], text)?;
    /// assert_eq!(cluster.link(2, 0).map(|l| l.alpha_s), Some(3e-5)); // mirrored
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_csv_str(
        workers: Vec<Worker>,
        node_of_worker: Vec<usize>,
        text: &str,
    ) -> Result<Self, TopologyError> {
        let n = workers.len();
        if n == 0 {
            return Err(TopologyError::Input(InputError::Empty { what: "cluster" }));
        }
        // Before allocating three `n x n` tables from the caller's worker count.
        crate::cluster::check_workers(n)?;
        let cells = n * n;
        let mut alpha = vec![f64::NAN; cells];
        let mut beta = vec![f64::NAN; cells];
        let mut listed = vec![false; cells];
        let mut first_data_line = true;
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let is_header = first_data_line && !starts_with_number(line);
            first_data_line = false;
            if is_header {
                continue;
            }
            let (src, dst, a, b) = parse_line(line, index + 1, n)?;
            let cell = src * n + dst;
            if listed[cell] {
                return Err(csv_error(index + 1, CsvProblem::Duplicate { src, dst }));
            }
            listed[cell] = true;
            alpha[cell] = a;
            beta[cell] = b;
        }
        fill_missing_directions(n, &mut alpha, &mut beta, &listed)?;
        let alpha = SquareMatrix::from_flat(n, alpha)?;
        let beta = SquareMatrix::from_flat(n, beta)?;
        Cluster::new(workers, node_of_worker, alpha, beta)
    }

    /// As [`Cluster::from_csv_str`], reading the text from `reader`.
    ///
    /// # Errors
    ///
    /// As [`Cluster::from_csv_str`]; [`TopologyError::Csv`] (line 0) if reading fails or the text
    /// is not UTF-8.
    ///
    /// # Complexity
    ///
    /// `O(n^2 + text length)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::Worker;
    /// use topology_partition::Cluster;
    /// let workers = vec![Worker::new(1e14, 8)?; 2];
    /// let cluster = Cluster::from_csv_reader(workers, vec![0, 0], "0,1,1e-5,1e-11\n".as_bytes())?;
    /// assert_eq!(cluster.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_csv_reader<R: Read>(
        workers: Vec<Worker>,
        node_of_worker: Vec<usize>,
        mut reader: R,
    ) -> Result<Self, TopologyError> {
        let mut text = String::new();
        reader.read_to_string(&mut text).map_err(|e| {
            csv_error(
                0,
                CsvProblem::Read {
                    message: e.to_string(),
                },
            )
        })?;
        Self::from_csv_str(workers, node_of_worker, &text)
    }
}

fn csv_error(line: usize, problem: CsvProblem) -> TopologyError {
    TopologyError::Csv { line, problem }
}

fn starts_with_number(line: &str) -> bool {
    line.split(',')
        .next()
        .is_some_and(|f| f.trim().parse::<f64>().is_ok())
}

fn parse_line(
    line: &str,
    number: usize,
    n: usize,
) -> Result<(usize, usize, f64, f64), TopologyError> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != 4 {
        let fields = fields.len();
        return Err(csv_error(number, CsvProblem::FieldCount { fields }));
    }
    let id = |f: &str| -> Result<usize, TopologyError> {
        let id: usize = f
            .parse()
            .map_err(|_| csv_error(number, CsvProblem::NotAnId { field: f.into() }))?;
        if id >= n {
            let problem = CsvProblem::WorkerOutOfRange {
                worker: id,
                workers: n,
            };
            return Err(csv_error(number, problem));
        }
        Ok(id)
    };
    let value = |f: &str| -> Result<f64, TopologyError> {
        f.parse()
            .map_err(|_| csv_error(number, CsvProblem::NotANumber { field: f.into() }))
    };
    let (src, dst) = (id(fields[0])?, id(fields[1])?);
    if src == dst {
        return Err(csv_error(number, CsvProblem::SelfPair { worker: src }));
    }
    Ok((src, dst, value(fields[2])?, value(fields[3])?))
}

/// Mirrors each pair listed in one direction only; zeros the diagonal (`n x n`, row-major).
fn fill_missing_directions(
    n: usize,
    alpha: &mut [f64],
    beta: &mut [f64],
    listed: &[bool],
) -> Result<(), TopologyError> {
    for i in 0..n {
        alpha[i * n + i] = 0.0;
        beta[i * n + i] = 0.0;
        for j in 0..n {
            if i == j || listed[i * n + j] {
                continue;
            }
            if !listed[j * n + i] {
                return Err(csv_error(0, CsvProblem::Missing { src: i, dst: j }));
            }
            alpha[i * n + j] = alpha[j * n + i];
            beta[i * n + j] = beta[j * n + i];
        }
    }
    Ok(())
}

//! Flow-level contention simulator: max-min fair sharing of each receiver's ingress.
//!
//! Input is only what a real all-to-all implementation decides: each GPU's ordered list of
//! flows (optionally with a release time, "do not start before"). Each sender sends its list one
//! flow after the other, so its egress carries one flow at a time at up to `B_src`; flows that
//! meet at a receiver share its ingress `B_dst` max-min fairly (water-filling with each flow
//! capped by its sender's bandwidth). This is the model behind Aurora Fig. 4: two senders
//! hitting one receiver each get half its bandwidth.

use comm_cost_model::InputError;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use comm_cost_model::check_non_negative;

use crate::min_tree::MinTree;
use crate::{Bandwidth, ScheduleError, Timetable, Transfer};

/// Relative time within which a flow's end and another flow's release count as simultaneous.
const SNAP: f64 = 1e-9;

/// One flow in a sender's ordered list.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// Receiving GPU.
    pub dst: usize,
    /// Bytes to send.
    pub bytes: f64,
    /// Earliest start time in seconds (0 for "as soon as the previous flow ends").
    pub release_s: f64,
}

impl Flow {
    /// A flow with no release time.
    #[must_use]
    pub fn new(dst: usize, bytes: f64) -> Self {
        Self {
            dst,
            bytes,
            release_s: 0.0,
        }
    }
}

/// Per-sender ordered flow lists of a timetable: send order, sizes and (if `timed`) start
/// times as release times.
///
/// With `timed`, simulating the result reproduces a contention-free timetable exactly (each
/// flow ends `bytes / min(B_src, B_dst)` after its start); without, it replays only the order.
///
/// # Errors
///
/// [`ScheduleError::Input`] (`TooLarge`) if the timetable's `n` exceeds [`crate::MAX_GPUS`].
///
/// # Complexity
///
/// `O(n + P log P)` time for `P` transfers.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{optimal, simulate, timetable_flows, Bandwidth, TrafficMatrix};
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let plan = optimal(&d, &b)?;
/// let again = simulate(&timetable_flows(&plan, true)?, &b)?;
/// assert_eq!(again.makespan_s(), plan.makespan_s());
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn timetable_flows(
    timetable: &Timetable,
    timed: bool,
) -> Result<Vec<Vec<Flow>>, ScheduleError> {
    Ok(timetable
        .send_orders()?
        .into_iter()
        .map(|list| {
            list.into_iter()
                .map(|t| Flow {
                    dst: t.dst,
                    bytes: t.bytes,
                    release_s: if timed { t.start_s } else { 0.0 },
                })
                .collect()
        })
        .collect())
}

/// Simulates per-sender ordered flow lists under max-min fair sharing; returns when every flow
/// ran.
///
/// This is how the baselines (SJF, random, pairwise shift) and replayed plans are evaluated:
/// Aurora §8 compares transmission orders the same way. Each flow becomes one [`Transfer`] with
/// its simulated start and end (its average rate may be below the link rate when it shared a
/// receiver). Zero-byte flows and flows to the sender itself are skipped.
///
/// # Errors
///
/// [`ScheduleError::Input`] (`Empty`) for no senders, [`ScheduleError::UnknownGpu`] for a destination
/// out of range, [`ScheduleError::Input`] for a negative or non-finite size or release
/// time, the bandwidth errors of [`Bandwidth::check`], and [`ScheduleError::Input`] (`Overflow`) if a
/// flow would end beyond the `f64` range (many bytes over a tiny bandwidth).
///
/// # Complexity
///
/// `O(F (k log k + log F))` time for `F` flows and at most `k` flows meeting at one receiver: every
/// event (a flow ending or being released) re-shares only the receivers it touches.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{simulate, Bandwidth, Flow};
/// // Aurora Fig. 4(b): GPU 1 sends to 2 then 3, GPU 2 sends to 1 then 3 (0-based below):
/// // both reach GPU 3 at t = 1 and share it, so the all-to-all takes 3 units.
/// let b = Bandwidth::uniform(1.0)?;
/// let fig4b = vec![vec![Flow::new(1, 1.0), Flow::new(2, 1.0)], vec![Flow::new(0, 1.0), Flow::new(2, 1.0)], vec![]];
/// assert_eq!(simulate(&fig4b, &b)?.makespan_s(), 3.0);
/// // Fig. 4(c): GPU 2 sends to GPU 3 first: 2 units.
/// let fig4c = vec![vec![Flow::new(1, 1.0), Flow::new(2, 1.0)], vec![Flow::new(2, 1.0), Flow::new(0, 1.0)], vec![]];
/// assert_eq!(simulate(&fig4c, &b)?.makespan_s(), 2.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn simulate(orders: &[Vec<Flow>], bandwidth: &Bandwidth) -> Result<Timetable, ScheduleError> {
    let n = orders.len();
    if n == 0 {
        return Err(ScheduleError::EMPTY);
    }
    bandwidth.check(n)?;
    check_flows(orders)?;
    let mut sim = Simulation::new(orders, bandwidth);
    sim.run();
    let transfers = sim.transfers();
    // Found by fuzzing: 600 bytes over 2.2e-308 B/s end at infinity. Flows start when others
    // end, so checking every end covers the starts.
    if transfers.iter().any(|t| !t.end_s.is_finite()) {
        return Err(ScheduleError::Input(InputError::Overflow {
            what: "a simulated transfer's end time (s)",
        }));
    }
    Ok(Timetable { n, transfers })
}

fn check_flows(orders: &[Vec<Flow>]) -> Result<(), ScheduleError> {
    let n = orders.len();
    for (src, list) in orders.iter().enumerate() {
        for f in list {
            if f.dst >= n {
                return Err(ScheduleError::UnknownGpu { src, dst: f.dst, n });
            }
            check_non_negative("flow size (bytes)", f.bytes)?;
            check_non_negative("release time (s)", f.release_s)?;
        }
    }
    Ok(())
}

/// A time for the event heaps (finite by construction, ordered by `total_cmp`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Time(f64);

impl Eq for Time {}
impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Time {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

struct Active {
    src: usize,
    dst: usize,
    bytes: f64,
    start_s: f64,
    end_s: f64,
    remaining: f64,
    rate: f64,
    updated_s: f64,
    /// `finish_s.to_bits() << 64 | id` since the last re-share (`u128::MAX` before the first
    /// or once ended): finish times are non-negative, so their bits order like the times.
    finish: u128,
}

struct Simulation<'a> {
    orders: &'a [Vec<Flow>],
    bandwidth: &'a Bandwidth,
    next: Vec<usize>,
    flows: Vec<Active>,
    at_receiver: Vec<Vec<usize>>,
    /// Per receiver, the earliest `finish` of its flows: one live event per receiver, updated
    /// in place, so no stale events pile up when a busy receiver is re-shared again and again.
    finishes: MinTree,
    releases: BinaryHeap<Reverse<(Time, usize)>>,
    dirty: Vec<usize>,
}

impl<'a> Simulation<'a> {
    fn new(orders: &'a [Vec<Flow>], bandwidth: &'a Bandwidth) -> Self {
        let n = orders.len();
        Self {
            orders,
            bandwidth,
            next: vec![0; n],
            flows: Vec::with_capacity(orders.iter().map(Vec::len).sum()),
            at_receiver: vec![Vec::new(); n],
            finishes: MinTree::new(n),
            releases: BinaryHeap::new(),
            dirty: Vec::new(),
        }
    }

    /// The flows as transfers sorted like [`Timetable::sort`]: flows start in time order (the
    /// clock never goes back), so only runs of equal start times need sorting, by sender then
    /// receiver. A sender's flows run one after the other, so ties on all three keep the order
    /// a stable sort of the completion order would give.
    fn transfers(&self) -> Vec<Transfer> {
        let mut transfers: Vec<Transfer> = self
            .flows
            .iter()
            .map(|f| Transfer {
                src: f.src,
                dst: f.dst,
                bytes: f.bytes,
                start_s: f.start_s,
                end_s: f.end_s,
            })
            .collect();
        for run in transfers.chunk_by_mut(|a, b| a.start_s.total_cmp(&b.start_s).is_eq()) {
            run.sort_by(|a, b| a.src.cmp(&b.src).then(a.dst.cmp(&b.dst)));
        }
        transfers
    }

    fn run(&mut self) {
        for src in 0..self.orders.len() {
            self.start_next(src, 0.0);
        }
        let mut now = 0.0;
        let mut senders = Vec::new();
        loop {
            self.reshare(now);
            let finish = self.next_finish();
            let release = self.releases.peek().map(|Reverse((t, _))| t.0);
            // A flow ending within rounding noise of an event counts as ended at it: otherwise
            // two flows would share a port for an instant, and fair sharing doubles such noise
            // at every hop of a back-to-back timetable.
            let finish_first = match (finish, release) {
                (None, None) => break,
                (Some((t, _)), Some(r)) => t <= r + SNAP * r.abs().max(t.abs()),
                (f, _) => f.is_some(),
            };
            senders.clear();
            if let (true, Some((t, id))) = (finish_first, finish) {
                now = t.max(now);
                senders.push(self.complete(id, now));
            } else if let Some(Reverse((t, src))) = self.releases.pop() {
                now = t.0.max(now);
                senders.push(src);
            }
            while let Some((t, id)) = self.next_finish() {
                if t > now + SNAP * now.abs() {
                    break;
                }
                senders.push(self.complete(id, now));
            }
            for &src in &senders {
                self.start_next(src, now);
            }
        }
    }

    /// The earliest finish (lowest flow id on ties).
    fn next_finish(&self) -> Option<(f64, usize)> {
        // Finish times are finite, so their bits never reach the tree's `u128::MAX` "no key".
        let packed = self.finishes.min_packed()?;
        let time = (packed >> 64) as u64;
        // The low 64 bits hold a flow id, a `usize` index into `flows`.
        #[allow(clippy::cast_possible_truncation)]
        let id = (packed as u64) as usize;
        Some((f64::from_bits(time), id))
    }

    /// Re-keys receiver `dst` with the earliest finish of its flows.
    fn rekey(&mut self, dst: usize) {
        let first = self.at_receiver[dst]
            .iter()
            .map(|&id| self.flows[id].finish)
            .min()
            .unwrap_or(u128::MAX);
        self.finishes.set_packed(dst, first);
    }

    /// Starts the next non-empty flow of `src`, or schedules its release.
    fn start_next(&mut self, src: usize, now: f64) {
        while let Some(f) = self.orders[src].get(self.next[src]) {
            if f.bytes <= 0.0 || f.dst == src {
                self.next[src] += 1;
                continue;
            }
            if f.release_s > now {
                self.releases.push(Reverse((Time(f.release_s), src)));
                return;
            }
            self.next[src] += 1;
            let id = self.flows.len();
            self.flows.push(Active {
                src,
                dst: f.dst,
                bytes: f.bytes,
                start_s: now,
                end_s: now,
                remaining: f.bytes,
                rate: 0.0,
                updated_s: now,
                finish: u128::MAX,
            });
            self.at_receiver[f.dst].push(id);
            self.dirty.push(f.dst);
            return;
        }
    }

    /// Ends flow `id` at `now`; returns its sender.
    fn complete(&mut self, id: usize, now: f64) -> usize {
        let (src, dst) = (self.flows[id].src, self.flows[id].dst);
        let f = &mut self.flows[id];
        f.remaining = 0.0;
        f.finish = u128::MAX;
        f.end_s = now;
        self.at_receiver[dst].retain(|&k| k != id);
        self.rekey(dst);
        self.dirty.push(dst);
        src
    }

    /// Brings the flows of every touched receiver up to `now` and water-fills its ingress.
    fn reshare(&mut self, now: f64) {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        for &dst in &dirty {
            let mut ids = std::mem::take(&mut self.at_receiver[dst]);
            for &id in &ids {
                let f = &mut self.flows[id];
                f.remaining = (f.remaining - f.rate * (now - f.updated_s)).max(0.0);
                f.updated_s = now;
            }
            // Water-filling: the flows with the smallest caps are settled first.
            ids.sort_by(|&a, &b| {
                let cap = |k: usize| self.bandwidth.port_at(self.flows[k].src);
                cap(a).total_cmp(&cap(b))
            });
            let mut capacity = self.bandwidth.port_at(dst);
            let mut left = ids.len();
            let mut first = u128::MAX;
            for &id in &ids {
                let f = &mut self.flows[id];
                let rate = self.bandwidth.port_at(f.src).min(capacity / left as f64);
                capacity -= rate;
                left -= 1;
                f.rate = rate;
                let finish = now + f.remaining / rate;
                f.finish = u128::from(finish.to_bits()) << 64 | id as u128;
                first = first.min(f.finish);
            }
            self.finishes.set_packed(dst, first);
            self.at_receiver[dst] = ids;
        }
        dirty.clear();
        self.dirty = dirty;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::InputError;

    #[test]
    fn aurora_fig4_three_units_reordered_to_two() {
        // Fig. 4(b): GPU 1 -> 2 then 3; GPU 2 -> 1 then 3. During [0, 1) the two flows use
        // different receivers; from t = 1 both target GPU 3 at half rate: 1 unit each takes 2
        // more units, ending at 1 + 2 = 3.
        let b = Bandwidth::uniform(1.0).unwrap();
        let slow = vec![
            vec![Flow::new(1, 1.0), Flow::new(2, 1.0)],
            vec![Flow::new(0, 1.0), Flow::new(2, 1.0)],
            vec![],
        ];
        let t = simulate(&slow, &b).unwrap();
        assert_eq!(t.makespan_s(), 3.0);
        // Fig. 4(c): GPU 2 sends to GPU 3 first, so no receiver is ever shared: 1 + 1 = 2.
        let fast = vec![
            vec![Flow::new(1, 1.0), Flow::new(2, 1.0)],
            vec![Flow::new(2, 1.0), Flow::new(0, 1.0)],
            vec![],
        ];
        assert_eq!(simulate(&fast, &b).unwrap().makespan_s(), 2.0);
    }

    #[test]
    fn sender_caps_are_respected_in_water_filling() {
        // Receiver 2 (10 B/s) is shared by a 2 B/s sender and a 10 B/s sender: the slow one
        // gets its cap 2, the fast one the other 8. 8 bytes at 8 B/s -> 1 s; 4 bytes at 2 B/s
        // -> 2 s.
        let b = Bandwidth::per_gpu(vec![2.0, 10.0, 10.0]).unwrap();
        let orders = vec![vec![Flow::new(2, 4.0)], vec![Flow::new(2, 8.0)], vec![]];
        let t = simulate(&orders, &b).unwrap();
        let end = |src: usize| t.transfers.iter().find(|x| x.src == src).unwrap().end_s;
        assert_eq!(end(1), 1.0);
        assert_eq!(end(0), 2.0);
    }

    #[test]
    fn release_times_delay_starts() {
        let b = Bandwidth::uniform(1.0).unwrap();
        let orders = vec![
            vec![Flow {
                dst: 1,
                bytes: 1.0,
                release_s: 5.0,
            }],
            vec![],
        ];
        let t = simulate(&orders, &b).unwrap();
        assert_eq!((t.transfers[0].start_s, t.transfers[0].end_s), (5.0, 6.0));
    }

    #[test]
    fn rejects_bad_flows() {
        let b = Bandwidth::uniform(1.0).unwrap();
        assert!(matches!(
            simulate(&[vec![Flow::new(3, 1.0)]], &b),
            Err(ScheduleError::UnknownGpu { .. })
        ));
        assert!(matches!(
            simulate(&[vec![Flow::new(0, f64::NAN)]], &b),
            Err(ScheduleError::Input(InputError::NonFinite { .. }))
        ));
        assert_eq!(simulate(&[], &b), Err(ScheduleError::EMPTY));
    }
}

//! Brute-force oracle on 3-GPU instances: the best one-piece-per-pair schedule over every
//! combination of port orders, against the lower bound, `optimal` and `non_preemptive`.

use alltoall_sched::{Bandwidth, TrafficMatrix, lower_bound_s, non_preemptive, optimal};
use proptest::prelude::*;

/// Every ordering of `items`.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for k in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(k);
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            out.push(tail);
        }
    }
    out
}

/// Every way to pick one item of each list.
fn product<T: Clone>(lists: &[Vec<T>]) -> Vec<Vec<T>> {
    lists.iter().fold(vec![Vec::new()], |acc, list| {
        acc.iter()
            .flat_map(|prefix| {
                list.iter().map(move |x| {
                    let mut p = prefix.clone();
                    p.push(x.clone());
                    p
                })
            })
            .collect()
    })
}

/// Earliest-start makespan of the pairs `(i, j, duration)` when each send port follows
/// `send[i]` (receivers in order) and each receive port `recv[j]` (senders in order); `None` if
/// the orders are cyclic.
fn asap(pairs: &[(usize, usize, f64)], send: &[Vec<usize>], recv: &[Vec<usize>]) -> Option<f64> {
    let pos = |list: &[usize], x: usize| list.iter().position(|&y| y == x);
    let mut end = vec![f64::NAN; pairs.len()];
    for _ in 0..pairs.len() {
        for (k, &(i, j, dur)) in pairs.iter().enumerate() {
            let before = |p: &(usize, usize, f64)| {
                (p.0 == i && pos(&send[i], p.1) < pos(&send[i], j))
                    || (p.1 == j && pos(&recv[j], p.0) < pos(&recv[j], i))
            };
            let preds: Vec<f64> = pairs
                .iter()
                .enumerate()
                .filter(|(_, p)| before(p))
                .map(|(q, _)| end[q])
                .collect();
            if preds.iter().all(|e| !e.is_nan()) {
                end[k] = preds.iter().fold(0.0, |a: f64, &b| a.max(b)) + dur;
            }
        }
    }
    end.iter()
        .all(|e| !e.is_nan())
        .then(|| end.iter().fold(0.0, |a: f64, &b| a.max(b)))
}

/// The best non-preemptive makespan by brute force over all port orders.
fn brute_force(d: &TrafficMatrix, rate: f64) -> f64 {
    let n = d.n();
    let pairs: Vec<(usize, usize, f64)> = d.pairs().map(|(i, j, b)| (i, j, b / rate)).collect();
    let partners = |g: usize, sending: bool| -> Vec<usize> {
        pairs
            .iter()
            .filter(|p| if sending { p.0 == g } else { p.1 == g })
            .map(|p| if sending { p.1 } else { p.0 })
            .collect()
    };
    let send_choices: Vec<Vec<Vec<usize>>> =
        (0..n).map(|g| permutations(&partners(g, true))).collect();
    let recv_choices: Vec<Vec<Vec<usize>>> =
        (0..n).map(|g| permutations(&partners(g, false))).collect();
    let mut best = f64::INFINITY;
    for send in product(&send_choices) {
        for recv in product(&recv_choices) {
            if let Some(m) = asap(&pairs, &send, &recv) {
                best = best.min(m);
            }
        }
    }
    if pairs.is_empty() { 0.0 } else { best }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bound_optimal_and_greedy_against_brute_force(v in prop::collection::vec(0u64..10, 9)) {
        let rows: Vec<Vec<u64>> = v.chunks(3).map(<[u64]>::to_vec).collect();
        let d = TrafficMatrix::from_rows_u64(&rows).unwrap();
        let b = Bandwidth::uniform(1.0).unwrap();
        let bound = lower_bound_s(&d, &b).unwrap();
        let best_one_piece = brute_force(&d, 1.0);
        // Lemma 1 checked independently: no schedule beats the bound.
        prop_assert!(best_one_piece >= bound);
        // Preemption never hurts: optimal reaches the bound, at or below the best one-piece plan.
        prop_assert_eq!(optimal(&d, &b).unwrap().makespan_s(), bound);
        // The greedy is a one-piece schedule (never better than brute force) within 2x the bound.
        let greedy = non_preemptive(&d, &b).unwrap().makespan_s();
        prop_assert!(greedy >= best_one_piece - 1e-9);
        prop_assert!(greedy <= 2.0 * bound);
    }
}

#[test]
fn three_gpus_never_need_preemption_for_small_counts() {
    // All 4^6 matrices with off-diagonal entries 0..=3: some one-piece schedule always reaches
    // the bound (and `non_preemptive` finds one whenever the brute force says so, or is within
    // 2x). Preemption starts to matter from 4 GPUs on (see the aurora_greedy counterexample).
    let b = Bandwidth::uniform(1.0).unwrap();
    let mut greedy_optimal = 0;
    for code in 0..4u32.pow(6) {
        let mut v = [0u64; 9];
        for (k, &c) in [1, 2, 3, 5, 6, 7].iter().enumerate() {
            v[c] = u64::from((code / 4u32.pow(k as u32)) % 4);
        }
        let rows: Vec<Vec<u64>> = v.chunks(3).map(<[u64]>::to_vec).collect();
        let d = TrafficMatrix::from_rows_u64(&rows).unwrap();
        let bound = lower_bound_s(&d, &b).unwrap();
        assert_eq!(brute_force(&d, 1.0), bound, "{rows:?}");
        if non_preemptive(&d, &b).unwrap().makespan_s() == bound {
            greedy_optimal += 1;
        }
    }
    // Regression value, not a paper number: the count this implementation measured when the
    // test was written (3758 of 4096, 91.7%). A change to `non_preemptive`'s tie-breaking may
    // move it; re-measure and record why. The property is the 90% floor.
    assert_eq!(greedy_optimal, 3758, "regression value moved");
    assert!(greedy_optimal >= 4096 * 9 / 10);
}

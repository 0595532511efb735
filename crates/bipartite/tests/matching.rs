//! Hopcroft–Karp, bottleneck matching and Hungarian against brute force.

mod common;

use bipartite::{
    BipartiteError, BipartiteGraph, BottleneckOptions, SquareMatrix, ThresholdSearch, TieBreak,
    bottleneck_matching, hopcroft_karp, min_cost_perfect_matching,
};
use comm_cost_model::InputError;
use common::{brute_bottleneck, brute_min_total, is_permutation, permutations};
use proptest::prelude::*;

fn small_matrix() -> impl Strategy<Value = Vec<Vec<f64>>> {
    (1usize..=6).prop_flat_map(|n| {
        prop::collection::vec(prop::collection::vec((0u8..12).prop_map(f64::from), n), n)
    })
}

fn options(
    forbidden: Vec<(usize, usize)>,
    tie_break: TieBreak,
    search: ThresholdSearch,
) -> BottleneckOptions {
    BottleneckOptions {
        forbidden,
        tie_break,
        search,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn bottleneck_matches_brute_force(w in small_matrix(), mask in prop::collection::vec(0u8..5, 36)) {
        let n = w.len();
        // About one pair in five forbidden.
        let forbidden: Vec<(usize, usize)> =
            (0..n * n).filter(|&k| mask[k] == 0).map(|k| (k / n, k % n)).collect();
        let m = SquareMatrix::from_rows(&w).unwrap();
        let expected = brute_bottleneck(&w, &forbidden);
        for search in [ThresholdSearch::Incremental, ThresholdSearch::BinarySearch] {
            for tie in [TieBreak::Any, TieBreak::MinTotalWeight] {
                let got = bottleneck_matching(&m, &options(forbidden.clone(), tie, search));
                match (expected, got) {
                    (None, Err(BipartiteError::NoPerfectMatching { .. })) => {}
                    (Some(b), Ok(r)) => {
                        prop_assert!(is_permutation(&r.assignment));
                        prop_assert!(r.assignment.iter().enumerate().all(|(i, &j)| !forbidden.contains(&(i, j))));
                        prop_assert_eq!(r.bottleneck, b);
                        if tie == TieBreak::MinTotalWeight {
                            prop_assert_eq!(Some(r.total_weight), brute_min_total(&w, &forbidden, b));
                        }
                    }
                    (e, g) => prop_assert!(false, "expected {:?}, got {:?}", e, g),
                }
            }
        }
    }

    #[test]
    fn hungarian_matches_brute_force(w in small_matrix()) {
        let m = SquareMatrix::from_rows(&w).unwrap();
        let r = min_cost_perfect_matching(&m, &[]).unwrap();
        prop_assert!(is_permutation(&r.assignment));
        prop_assert_eq!(Some(r.total_weight), brute_min_total(&w, &[], f64::INFINITY));
    }

    #[test]
    fn hopcroft_karp_is_maximum(adj in prop::collection::vec(prop::collection::vec(0usize..6, 0..4), 0..7)) {
        let g = BipartiteGraph::from_adjacency(6, &adj).unwrap();
        let m = hopcroft_karp(&g);
        // Valid: edges of the graph, right vertices used once.
        let mut used = [false; 6];
        for (u, v) in m.left_to_right.iter().enumerate() {
            if let Some(v) = *v {
                prop_assert!(adj[u].contains(&v));
                prop_assert!(!used[v]);
                used[v] = true;
            }
        }
        // Maximum: no injective choice over any subset does better (brute force over all maps).
        prop_assert_eq!(m.size, brute_max_matching(&adj, 0, &mut [false; 6]));
    }
}

fn brute_max_matching(adj: &[Vec<usize>], u: usize, used: &mut [bool; 6]) -> usize {
    if u == adj.len() {
        return 0;
    }
    let mut best = brute_max_matching(adj, u + 1, used);
    for &v in &adj[u] {
        if !used[v] {
            used[v] = true;
            best = best.max(1 + brute_max_matching(adj, u + 1, used));
            used[v] = false;
        }
    }
    best
}

#[test]
fn paper_case_two_weights_worked_example() {
    // Aurora §6.2 Case II on two 3-expert models, weights max(a_i + b_j, a_{n+i} + b_{n+j}):
    // a = [(send, recv)] = (6,1), (2,5), (3,3); b = (1,6), (5,2), (3,3).
    let a = [(6.0, 1.0), (2.0, 5.0), (3.0, 3.0)];
    let b = [(1.0, 6.0), (5.0, 2.0), (3.0, 3.0)];
    let w = SquareMatrix::from_fn(3, |i, j| f64::max(a[i].0 + b[j].0, a[i].1 + b[j].1)).unwrap();
    // Row 0: max(7,7)=7, max(11,3)=11, max(9,4)=9; row 1: max(3,11)=11, max(7,7)=7, max(5,8)=8;
    // row 2: max(4,9)=9, max(8,5)=8, max(6,6)=6.
    assert_eq!(
        w.to_rows(),
        vec![
            vec![7.0, 11.0, 9.0],
            vec![11.0, 7.0, 8.0],
            vec![9.0, 8.0, 6.0]
        ]
    );
    let m = bottleneck_matching(&w, &BottleneckOptions::default()).unwrap();
    // The diagonal 7, 7, 6 is the only matching below 8.
    assert_eq!(m.assignment, vec![0, 1, 2]);
    assert_eq!(m.bottleneck, 7.0);
}

#[test]
fn forbidding_everything_in_a_row_is_an_error() {
    let w = SquareMatrix::from_rows(&[vec![1.0, 2.0], vec![3.0, 4.0]]).unwrap();
    let opts = BottleneckOptions {
        forbidden: vec![(0, 0), (0, 1)],
        ..Default::default()
    };
    assert!(matches!(
        bottleneck_matching(&w, &opts),
        Err(BipartiteError::NoPerfectMatching { .. })
    ));
    assert!(matches!(
        min_cost_perfect_matching(&w, &[(0, 0), (1, 0)]),
        Err(BipartiteError::NoPerfectMatching { .. })
    ));
    let out_of_range = BottleneckOptions {
        forbidden: vec![(0, 2)],
        ..Default::default()
    };
    assert!(matches!(
        bottleneck_matching(&w, &out_of_range),
        Err(BipartiteError::Input(InputError::IndexOutOfRange { .. }))
    ));
}

#[test]
fn bad_matrices_are_typed_errors() {
    // The matrix is comm-cost-model's: its checks (and their unit tests) live there.
    assert!(matches!(
        SquareMatrix::from_rows(&[vec![1.0, 2.0], vec![3.0]]),
        Err(InputError::SizeMismatch { .. })
    ));
    assert!(matches!(
        SquareMatrix::from_rows(&[vec![1.0, f64::NAN], vec![3.0, 4.0]]),
        Err(InputError::BadEntry { row: 0, col: 1, .. })
    ));
    assert!(serde_json_like_roundtrip());
    assert!(matches!(
        BipartiteGraph::from_adjacency(2, &[vec![2]]),
        Err(BipartiteError::Input(InputError::IndexOutOfRange {
            index: 2,
            ..
        }))
    ));
}

/// `SquareMatrix` deserializes through its validating constructor.
fn serde_json_like_roundtrip() -> bool {
    let m = SquareMatrix::from_rows(&[vec![1.0]]).unwrap();
    let rows: Vec<Vec<f64>> = m.clone().into();
    SquareMatrix::try_from(rows).unwrap() == m
}

#[test]
fn larger_random_instances_agree_between_searches() {
    // Deterministic pseudo-random weights; both exact searches must agree.
    let mut state = 12345u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as f64 / (1u64 << 31) as f64
    };
    for n in [10, 50, 200] {
        searches_agree(&SquareMatrix::from_fn(n, |_, _| next()).unwrap());
    }
    // Case II weights leave many rows unmatched at the lower bound (exercises the fallback).
    let n = 60;
    let loads: Vec<[f64; 4]> = (0..n).map(|_| [next(), next(), next(), next()]).collect();
    searches_agree(
        &SquareMatrix::from_fn(n, |i, j| {
            f64::max(loads[i][0] + loads[j][2], loads[i][1] + loads[j][3])
        })
        .unwrap(),
    );
    assert_eq!(permutations(3).len(), 6);
}

fn searches_agree(m: &SquareMatrix) {
    let inc = bottleneck_matching(m, &BottleneckOptions::default()).unwrap();
    let bin = bottleneck_matching(
        m,
        &options(Vec::new(), TieBreak::Any, ThresholdSearch::BinarySearch),
    )
    .unwrap();
    assert_eq!(inc.bottleneck, bin.bottleneck);
    assert!(is_permutation(&inc.assignment));
}

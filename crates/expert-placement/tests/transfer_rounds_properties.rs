//! Properties of `transfer_rounds`: every copy in exactly one round, every GPU within the peer
//! limit in every round, and exactly the König bound `ceil(Δ / peer_limit)` rounds.

use expert_placement::{ExpertTransfer, transfer_rounds};
use proptest::prelude::*;

fn copies() -> impl Strategy<Value = (usize, Vec<ExpertTransfer>)> {
    (1usize..12).prop_flat_map(|gpus| {
        let copy = (0..gpus, 0..gpus, 0usize..50).prop_map(|(s, d, e)| ExpertTransfer {
            expert: e,
            source_gpu: s,
            destination_gpu: d,
            slot: 0,
        });
        (Just(gpus), prop::collection::vec(copy, 0..80))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn rounds_are_valid_and_meet_the_bound((gpus, t) in copies(), limit in 1usize..5) {
        let r = transfer_rounds(&t, gpus, limit).unwrap();
        let (mut out, mut into) = (vec![0usize; gpus], vec![0usize; gpus]);
        for c in &t {
            out[c.source_gpu] += 1;
            into[c.destination_gpu] += 1;
        }
        let degree = out.iter().chain(&into).copied().max().unwrap_or(0);
        prop_assert_eq!(r.max_copies_per_gpu, degree);
        prop_assert_eq!(r.lower_bound, degree.div_ceil(limit));
        prop_assert_eq!(r.rounds.len(), r.lower_bound);
        let mut seen = vec![0usize; t.len()];
        for round in &r.rounds {
            prop_assert!(!round.is_empty());
            let (mut o, mut i) = (vec![0usize; gpus], vec![0usize; gpus]);
            for &k in round {
                seen[k] += 1;
                o[t[k].source_gpu] += 1;
                i[t[k].destination_gpu] += 1;
            }
            prop_assert!(o.iter().chain(&i).all(|&c| c <= limit));
        }
        prop_assert!(seen.iter().all(|&s| s == 1));
    }
}

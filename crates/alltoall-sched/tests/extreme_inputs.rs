//! Regression tests for issue 13: extreme but valid inputs give a valid schedule or a typed
//! error, never a silently wrong one.

use alltoall_sched::{
    Algorithm, Bandwidth, ScheduleError, TrafficMatrix, lower_bound_s, optimal, schedule,
};

/// A line summing to exactly `2^64 - 1` ticks: the pair finishing on the last tick used to be
/// dropped (the finish-time tree used `u64::MAX` as "no finish time").
#[test]
fn a_line_sum_of_u64_max_is_scheduled_completely() {
    let max = u64::MAX;
    let cases = [
        vec![vec![0, max], vec![0, 0]],
        vec![vec![0, max - 5, 5], vec![5, 0, 0], vec![0, 5, 0]],
        vec![
            vec![0, max - 7, 7],
            vec![7, 0, max - 7],
            vec![max - 7, 7, 0],
        ],
    ];
    let b = Bandwidth::uniform(1.0).unwrap();
    for rows in cases {
        let d = TrafficMatrix::from_rows_u64(&rows).unwrap();
        let plan = optimal(&d, &b).unwrap();
        assert_eq!(plan.validate(&d, &b), Ok(()), "{rows:?}");
        assert_eq!(plan.makespan_s(), lower_bound_s(&d, &b).unwrap());
        let via_enum = schedule(&d, &b, Algorithm::Optimal, 0).unwrap();
        assert_eq!(via_enum.timetable.validate(&d, &b), Ok(()));
    }
}

/// Bandwidth 1e308: a valid timetable with every pair, or a typed underflow error when the
/// bound is below the smallest normal `f64` (it used to return 0 pieces).
#[test]
fn huge_bandwidths_give_valid_timetables_or_underflow() {
    let ints = TrafficMatrix::from_rows_u64(&[vec![0, 1], vec![2, 0]]).unwrap();
    let floats = TrafficMatrix::from_rows(&[vec![0.0, 1.5], vec![2.0, 0.0]]).unwrap();
    for bw in [1e308, f64::MAX] {
        // One tick per byte: exact whatever the bandwidth.
        let b = Bandwidth::uniform(bw).unwrap();
        let plan = optimal(&ints, &b).unwrap();
        assert_eq!(plan.validate(&ints, &b), Ok(()));
        assert_eq!(plan.transfers.len(), 2);
        // Scaled ticks: 2 / 1e308 is subnormal.
        let per_gpu = Bandwidth::per_gpu(vec![bw, bw]).unwrap();
        assert!(matches!(
            optimal(&floats, &per_gpu),
            Err(ScheduleError::Underflow { .. })
        ));
    }
    for b in [
        Bandwidth::uniform(1e300).unwrap(),
        Bandwidth::per_gpu(vec![1e300, 1e307]).unwrap(),
    ] {
        let plan = optimal(&floats, &b).unwrap();
        assert_eq!(plan.validate(&floats, &b), Ok(()));
        assert_eq!(plan.transfers.len(), 2);
    }
}

/// Generators and relabelings that allocate `n x n` from an input size check it first (they
/// used to panic with "capacity overflow" or abort out of memory).
#[test]
fn huge_gpu_counts_are_too_large_before_allocating() {
    use alltoall_sched::workload::{uniform_traffic, zipf_batch, zipf_traffic};
    use alltoall_sched::{MAX_GPUS, dispatch_tokens, uniform_sources};
    let too_large =
        |r: Result<TrafficMatrix, ScheduleError>| matches!(r, Err(ScheduleError::TooLarge { .. }));
    for n in [usize::MAX, 1 << 20, MAX_GPUS + 1] {
        assert!(too_large(zipf_traffic(n, 1.0, 10, 1, 0)));
        assert!(too_large(zipf_batch(n, 1.0, 10, 1, 0, 1)));
        assert!(too_large(uniform_traffic(n, 10, 0)));
        assert!(matches!(
            uniform_sources(&[1.0], n),
            Err(ScheduleError::TooLarge { .. })
        ));
    }
    // 2^15 GPUs is fine alone, but not times 2^16 experts.
    assert!(matches!(
        uniform_sources(&vec![1.0; 1 << 16], MAX_GPUS),
        Err(ScheduleError::TooLarge { .. })
    ));
    let d = TrafficMatrix::from_rows_u64(&[vec![0, 1], vec![1, 0]]).unwrap();
    let many: Vec<Vec<usize>> = vec![Vec::new(); MAX_GPUS + 1];
    assert!(too_large(d.relabel(&many)));
    let routed: Vec<Vec<f64>> = vec![Vec::new(); MAX_GPUS + 1];
    let nodes = vec![0; MAX_GPUS + 1];
    assert!(matches!(
        dispatch_tokens(&routed, &many, &nodes),
        Err(ScheduleError::TooLarge { .. })
    ));
}

/// Zipf token counts up to 1.5x `tokens_per_gpu` used to clamp silently at `u64::MAX`.
#[test]
fn zipf_token_counts_above_u64_are_an_overflow() {
    use alltoall_sched::workload::zipf_traffic;
    let outcomes: Vec<bool> = (0..16)
        .map(|seed| match zipf_traffic(2, 60.0, u64::MAX, 1, seed) {
            Ok(_) => false,
            Err(ScheduleError::Overflow { .. }) => true,
            Err(e) => panic!("unexpected {e}"),
        })
        .collect();
    // Noise above 1 on the pair into the popular expert overflows; below 1 fits.
    assert!(outcomes.contains(&true));
}

//! Regression tests for issue 13: extreme but valid inputs give a valid schedule or a typed
//! error, never a silently wrong one.

use alltoall_sched::{
    Algorithm, Bandwidth, ScheduleError, TrafficMatrix, lower_bound_s, optimal, schedule,
};
use comm_cost_model::InputError;

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
    let too_large = |r: Result<TrafficMatrix, ScheduleError>| {
        matches!(r, Err(ScheduleError::Input(InputError::TooLarge { .. })))
    };
    for n in [usize::MAX, 1 << 20, MAX_GPUS + 1] {
        assert!(too_large(zipf_traffic(n, 1.0, 10, 1, 0)));
        assert!(too_large(zipf_batch(n, 1.0, 10, 1, 0, 1)));
        assert!(too_large(uniform_traffic(n, 10, 0)));
        assert!(matches!(
            uniform_sources(&[1.0], n),
            Err(ScheduleError::Input(InputError::TooLarge { .. }))
        ));
    }
    // 2^15 GPUs is fine alone, but not times 2^16 experts.
    assert!(matches!(
        uniform_sources(&vec![1.0; 1 << 16], MAX_GPUS),
        Err(ScheduleError::Input(InputError::TooLarge { .. }))
    ));
    let d = TrafficMatrix::from_rows_u64(&[vec![0, 1], vec![1, 0]]).unwrap();
    let many: Vec<Vec<usize>> = vec![Vec::new(); MAX_GPUS + 1];
    assert!(too_large(d.relabel(&many)));
    let routed: Vec<Vec<f64>> = vec![Vec::new(); MAX_GPUS + 1];
    let nodes = vec![0; MAX_GPUS + 1];
    assert!(matches!(
        dispatch_tokens(&routed, &many, &nodes),
        Err(ScheduleError::Input(InputError::TooLarge { .. }))
    ));
}

/// Zipf token counts up to 1.5x `tokens_per_gpu` used to clamp silently at `u64::MAX`.
#[test]
fn zipf_token_counts_above_u64_are_an_overflow() {
    use alltoall_sched::workload::zipf_traffic;
    let outcomes: Vec<bool> = (0..16)
        .map(|seed| match zipf_traffic(2, 60.0, u64::MAX, 1, seed) {
            Ok(_) => false,
            Err(ScheduleError::Input(InputError::Overflow { .. })) => true,
            Err(e) => panic!("unexpected {e}"),
        })
        .collect();
    // Noise above 1 on the pair into the popular expert overflows; below 1 fits.
    assert!(outcomes.contains(&true));
}

// Found by `tests/fuzz_entry_points.rs` (issue 13, requirement 5).

fn is_overflow<T>(r: Result<T, ScheduleError>) -> bool {
    matches!(r, Err(ScheduleError::Input(InputError::Overflow { .. })))
}

fn is_too_large<T>(r: Result<T, ScheduleError>) -> bool {
    matches!(r, Err(ScheduleError::Input(InputError::TooLarge { .. })))
}

/// Integer bytes over a uniform bandwidth of 5e-324 B/s: the exact tick path divided by it
/// unchecked, so `optimal` returned infinite times (a failed `debug_assert` in debug builds).
#[test]
fn a_subnormal_bandwidth_on_integer_traffic_is_an_overflow() {
    use alltoall_sched::{aurora_greedy, non_preemptive};
    let d = TrafficMatrix::from_rows_u64(&[vec![0, 953, 684], vec![367, 0, 91], vec![258, 936, 0]])
        .unwrap();
    for bw in [5e-324, f64::MIN_POSITIVE] {
        let b = Bandwidth::uniform(bw).unwrap();
        assert!(is_overflow(optimal(&d, &b)), "{bw}");
        assert!(is_overflow(non_preemptive(&d, &b)), "{bw}");
        assert!(is_overflow(aurora_greedy(&d, &b, 0)), "{bw}");
        assert!(is_overflow(lower_bound_s(&d, &b)), "{bw}");
    }
}

/// Two entries near `f64::MAX` in one row: each is finite but the row's total is not, and
/// `checked_add` built such a matrix (its `send_totals` were infinite).
#[test]
fn a_line_sum_beyond_f64_is_an_overflow() {
    let rows = vec![
        vec![0.0, f64::MAX, 1e308],
        vec![0.5, 0.0, 0.0],
        vec![0.0, 0.0, 0.0],
    ];
    assert!(matches!(
        TrafficMatrix::from_rows(&rows),
        Err(ScheduleError::Input(InputError::Overflow { .. }))
    ));
    let a =
        TrafficMatrix::from_rows(&[vec![0.0, f64::MAX, 0.0], vec![0.0; 3], vec![0.0; 3]]).unwrap();
    let b = TrafficMatrix::from_rows(&[vec![0.0, 0.0, 1e308], vec![0.0; 3], vec![0.0; 3]]).unwrap();
    assert!(matches!(
        a.checked_add(&b),
        Err(ScheduleError::Input(InputError::Overflow { .. }))
    ));
}

/// `lower_bounds` computed the relaxed bounds in `f64` and the tight one from exact integer
/// sums, so a relaxed bound came out one ulp above the tight one.
#[test]
fn relaxed_bounds_never_exceed_the_tight_one() {
    use alltoall_sched::lower_bounds;
    let d = TrafficMatrix::from_rows_u64(&[
        vec![234, 135, 308, 818],
        vec![175, 802, 889, 813],
        vec![95, 248, 442, 478],
        vec![711, 835, 858, 301],
    ])
    .unwrap();
    let b = Bandwidth::uniform(308_462_311_638.294_8).unwrap();
    let all = lower_bounds(&d, &b).unwrap();
    assert!(all.port_capacity_s <= all.one_port_s, "{all:?}");
    assert!(all.paper_literal_s <= all.one_port_s, "{all:?}");
    // The two relaxed bounds are not ordered (the old documentation said they were): two
    // 1 B/s senders into a 10 B/s receiver.
    let d = TrafficMatrix::from_rows_u64(&[vec![0, 0, 1], vec![0, 0, 1], vec![0, 0, 0]]).unwrap();
    let all = lower_bounds(&d, &Bandwidth::per_gpu(vec![1.0, 1.0, 10.0]).unwrap()).unwrap();
    assert_eq!(
        (all.paper_literal_s, all.port_capacity_s, all.one_port_s),
        (2.0, 1.0, 2.0)
    );
}

/// 600 bytes over a 2.2e-308 B/s port: the simulator returned infinite end times.
#[test]
fn a_simulation_ending_beyond_f64_is_an_overflow() {
    use alltoall_sched::{Flow, simulate};
    let orders = vec![vec![Flow::new(1, 674.5)], vec![Flow::new(0, 49.3)]];
    let b = Bandwidth::per_gpu(vec![f64::MIN_POSITIVE, 473_715.39]).unwrap();
    assert!(matches!(
        simulate(&orders, &b),
        Err(ScheduleError::Input(InputError::Overflow { .. }))
    ));
}

/// A timetable's `n` is a public field: `with_latency` on `n = 2^63 - 1` panicked with
/// "capacity overflow", and the per-GPU accessors allocated `n` entries unchecked.
#[test]
fn a_timetable_with_a_huge_n_is_too_large() {
    use alltoall_sched::{MAX_GPUS, Timetable, timetable_flows, with_latency};
    let b = Bandwidth::uniform(1.0).unwrap();
    for n in [usize::MAX / 2, usize::MAX, MAX_GPUS + 1] {
        let t = Timetable {
            n,
            transfers: Vec::new(),
        };
        assert!(is_too_large(with_latency(&t, &b, 0.0)), "{n}");
        assert!(is_too_large(t.port_finish_times()), "{n}");
        assert!(is_too_large(t.send_orders()), "{n}");
        assert!(is_too_large(timetable_flows(&t, true)), "{n}");
    }
}

/// A start-up cost near `f64::MAX`, or a transfer of NaN bytes, made `with_latency` return
/// infinite or NaN times.
#[test]
fn with_latency_checks_its_times() {
    use alltoall_sched::{Timetable, Transfer, with_latency};
    let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]]).unwrap();
    let b = Bandwidth::uniform(1.0).unwrap();
    let plan = optimal(&d, &b).unwrap();
    assert!(matches!(
        with_latency(&plan, &b, f64::MAX),
        Err(ScheduleError::Input(InputError::Overflow { .. }))
    ));
    let nan = Timetable {
        n: 2,
        transfers: vec![Transfer {
            src: 0,
            dst: 1,
            bytes: f64::NAN,
            start_s: 0.0,
            end_s: 1.0,
        }],
    };
    assert!(matches!(
        with_latency(&nan, &b, 0.0),
        Err(ScheduleError::Input(_))
    ));
}

/// A router trace of an expert with `f64::MAX` tokens: noise above 1 made it infinite.
#[test]
fn a_router_trace_beyond_f64_is_an_overflow() {
    use alltoall_sched::workload::router_trace;
    let outcomes: Vec<bool> = (0..16)
        .map(
            |seed| match router_trace(&[f64::MAX, 440.0], 1, 0.16, seed) {
                Ok(trace) => {
                    assert!(trace.iter().flatten().all(|t| t.is_finite()));
                    false
                }
                Err(ScheduleError::Input(InputError::Overflow { .. })) => true,
                Err(e) => panic!("unexpected {e}"),
            },
        )
        .collect();
    assert!(outcomes.contains(&true));
}

/// Generators at the old limit (2^15 GPUs) needed 16 GiB and minutes; the limit is now 2^13.
#[test]
fn generators_at_the_old_limit_are_too_large() {
    use alltoall_sched::workload::{uniform_traffic, zipf_traffic};
    assert!(matches!(
        zipf_traffic(1 << 15, 1.0, 10, 1, 0),
        Err(ScheduleError::Input(InputError::TooLarge {
            limit: 8192,
            ..
        }))
    ));
    assert!(matches!(
        uniform_traffic(1 << 14, 10, 0),
        Err(ScheduleError::Input(InputError::TooLarge { .. }))
    ));
}

/// A bound between 2.2e-308 and 1.6e-294 s (1.5 bytes over 1e300 B/s) is normal, but
/// `2^48 / bound` overflowed: every pair saturated at `u64::MAX` ticks, an `Overflow` as soon
/// as a line had two pairs. Such bounds are now counted in a power-of-two unit of time and
/// scheduled on the bound (a first fix that only avoided the overflow left the tick length
/// `bound / 2^48` subnormal, and the 3,000-case fuzz run found timetables with transfers of
/// zero duration).
#[test]
fn a_bound_too_small_for_the_tick_scale_is_scheduled() {
    use alltoall_sched::{latency_pareto, non_preemptive};
    let d = TrafficMatrix::from_rows(&[
        vec![0.0, 1.5, 3.0],
        vec![2.0, 0.0, 0.5],
        vec![1.0, 1.0, 0.0],
    ])
    .unwrap();
    for b in [
        Bandwidth::per_gpu(vec![1e300, 1e300, 1e300]).unwrap(),
        Bandwidth::uniform(1e300).unwrap(),
        Bandwidth::per_gpu(vec![1e300, 1e307, 1e305]).unwrap(),
        // About 3e-294 s: the scale fits, the tick length is just below the normal range.
        Bandwidth::uniform(1.5e294).unwrap(),
        Bandwidth::per_gpu(vec![1.5e294, 2e294, 3e294]).unwrap(),
    ] {
        let bound = lower_bound_s(&d, &b).unwrap();
        assert!(bound > f64::MIN_POSITIVE && bound < 1e-293);
        let plan = optimal(&d, &b).unwrap();
        assert_eq!(plan.validate(&d, &b), Ok(()), "{b:?}");
        assert_eq!(plan.makespan_s(), bound);
        let greedy = non_preemptive(&d, &b).unwrap();
        assert_eq!(greedy.validate(&d, &b), Ok(()), "{b:?}");
        for point in latency_pareto(&d, &b, 0.0).unwrap() {
            assert_eq!(point.timetable.validate(&d, &b), Ok(()), "{b:?}");
        }
    }
}

/// Two routed counts of `f64::MAX` for experts on one GPU: the tokens it computes (and the
/// tokens GPU 0 sends it) added up to infinity.
#[test]
fn a_dispatch_beyond_f64_is_an_overflow() {
    use alltoall_sched::dispatch_tokens;
    let routed = vec![vec![f64::MAX, f64::MAX]];
    let r = dispatch_tokens(&routed, &[vec![0, 1]], &[0]);
    assert!(is_overflow(r));
    let routed = vec![vec![f64::MAX, f64::MAX], vec![0.0, 0.0]];
    let r = dispatch_tokens(&routed, &[vec![], vec![0, 1]], &[0, 1]);
    assert!(is_overflow(r));
}

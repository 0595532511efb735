//! Properties of every algorithm on random matrices (integer and float, uniform and per-GPU
//! bandwidths, zero rows and columns, one hot entry).

use alltoall_sched::{
    Algorithm, Bandwidth, Timetable, TrafficMatrix, latency_pareto, lower_bound_s, lower_bounds,
    optimal, replay, schedule, simulate, timetable_flows, validate_simulated, with_latency,
};
use proptest::prelude::*;

/// A random square integer matrix with some rows and columns zeroed and an optional hot entry.
fn integer_matrix() -> impl Strategy<Value = TrafficMatrix> {
    (1usize..=40)
        .prop_flat_map(|n| {
            (
                Just(n),
                prop::collection::vec(0u64..1000, n * n),
                prop::collection::vec(any::<bool>(), n),
                prop::option::of((0..n, 0..n, 1u64..1_000_000)),
            )
        })
        .prop_map(|(n, mut v, zero, hot)| {
            for (g, &z) in zero.iter().enumerate() {
                if z && g % 3 == 0 {
                    (0..n).for_each(|k| v[g * n + k] = 0); // zero row
                }
                if z && g % 3 == 1 {
                    (0..n).for_each(|k| v[k * n + g] = 0); // zero column
                }
            }
            if let Some((i, j, x)) = hot {
                v[i * n + j] = x;
            }
            let rows: Vec<Vec<u64>> = v.chunks(n).map(<[u64]>::to_vec).collect();
            TrafficMatrix::from_rows_u64(&rows).unwrap()
        })
}

/// A random square matrix of non-integral floats spanning several orders of magnitude.
fn float_matrix() -> impl Strategy<Value = TrafficMatrix> {
    (1usize..=40)
        .prop_flat_map(|n| {
            (
                Just(n),
                prop::collection::vec((0.0f64..1.0, 0i32..6), n * n),
            )
        })
        .prop_map(|(n, v)| {
            let rows: Vec<Vec<f64>> = v
                .chunks(n)
                .map(|row| row.iter().map(|&(m, e)| m * 10f64.powi(e) + 0.25).collect())
                .collect();
            TrafficMatrix::from_rows(&rows).unwrap()
        })
}

fn bandwidth(n: usize, per_gpu: bool) -> impl Strategy<Value = Bandwidth> {
    prop::collection::vec(1.0f64..100.0, n).prop_map(move |v| {
        if per_gpu {
            Bandwidth::per_gpu(v).unwrap()
        } else {
            Bandwidth::uniform(v[0]).unwrap()
        }
    })
}

fn with_bandwidth(
    m: impl Strategy<Value = TrafficMatrix>,
) -> impl Strategy<Value = (TrafficMatrix, Bandwidth)> {
    (m, any::<bool>()).prop_flat_map(|(m, per_gpu)| {
        let n = m.n();
        (Just(m), bandwidth(n, per_gpu))
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

fn check_all_algorithms(d: &TrafficMatrix, b: &Bandwidth) -> Result<(), TestCaseError> {
    let bounds = lower_bounds(d, b).unwrap();
    for algorithm in Algorithm::ALL {
        let plan = schedule(d, b, algorithm, 7).unwrap();
        // The simulator lets a fast receiver take several slow senders at once, so only the
        // port-capacity bound binds there; contention-free timetables obey the one-port bound.
        let bound = if algorithm.is_simulated() {
            prop_assert!(
                validate_simulated(&plan.timetable, d, b).is_ok(),
                "{algorithm}"
            );
            bounds.port_capacity_s
        } else {
            prop_assert!(
                plan.timetable.validate(d, b).is_ok(),
                "{algorithm}: {:?}",
                plan.timetable.validate(d, b)
            );
            bounds.one_port_s
        };
        prop_assert!(
            plan.makespan_s >= bound * (1.0 - 1e-9),
            "{algorithm} beats the bound"
        );
    }
    Ok(())
}

/// Simulating a contention-free timetable's order with its start times reproduces it.
fn check_simulator_agrees(t: &Timetable, b: &Bandwidth) -> Result<(), TestCaseError> {
    let sim = simulate(&timetable_flows(t, true).unwrap(), b).unwrap();
    prop_assert_eq!(sim.pieces(), t.pieces());
    let tol = 1e-9 * t.makespan_s().max(f64::MIN_POSITIVE);
    // Compare each sender's sequence of transfers.
    let planned = t.send_orders().unwrap().concat();
    let simulated = sim.send_orders().unwrap().concat();
    for (a, s) in planned.iter().zip(&simulated) {
        prop_assert_eq!((a.src, a.dst), (s.src, s.dst));
        prop_assert!((a.start_s - s.start_s).abs() <= tol);
        // Every piece runs at its full link rate.
        prop_assert!(
            (s.end_s - (s.start_s + a.bytes / b.rate(a.src, a.dst).unwrap())).abs() <= tol,
            "{:?} {:?}",
            a,
            s
        );
        prop_assert!(s.end_s <= a.end_s + tol);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn optimal_reaches_the_bound_exactly_on_integers(d in integer_matrix(), b in 1.0f64..1e3) {
        let b = Bandwidth::uniform(b).unwrap();
        let plan = optimal(&d, &b).unwrap();
        prop_assert!(plan.validate(&d, &b).is_ok());
        prop_assert_eq!(plan.makespan_s(), lower_bound_s(&d, &b).unwrap());
        // Pieces of an integer matrix are whole bytes.
        prop_assert!(plan.transfers.iter().all(|t| t.bytes.fract() == 0.0));
    }

    #[test]
    fn optimal_reaches_the_bound_on_any_input((d, b) in with_bandwidth(prop_oneof![integer_matrix(), float_matrix()])) {
        let plan = optimal(&d, &b).unwrap();
        prop_assert!(plan.validate(&d, &b).is_ok(), "{:?}", plan.validate(&d, &b));
        prop_assert!(close(plan.makespan_s(), lower_bound_s(&d, &b).unwrap()));
    }

    #[test]
    fn every_algorithm_is_valid((d, b) in with_bandwidth(prop_oneof![integer_matrix(), float_matrix()])) {
        check_all_algorithms(&d, &b)?;
    }

    #[test]
    fn simulator_agrees_with_contention_free_timetables((d, b) in with_bandwidth(prop_oneof![integer_matrix(), float_matrix()])) {
        check_simulator_agrees(&optimal(&d, &b).unwrap(), &b)?;
        check_simulator_agrees(&schedule(&d, &b, Algorithm::NonPreemptive, 0).unwrap().timetable, &b)?;
        check_simulator_agrees(&schedule(&d, &b, Algorithm::AuroraGreedy, 3).unwrap().timetable, &b)?;
    }

    #[test]
    fn latency_front_is_valid_and_monotone((d, b) in with_bandwidth(integer_matrix()), alpha in 0.0f64..5.0) {
        let front = latency_pareto(&d, &b, alpha).unwrap();
        prop_assert!(!front.is_empty());
        for p in &front {
            prop_assert!(p.timetable.validate(&d, &b).is_ok());
        }
        prop_assert!(front.windows(2).all(|w| w[0].pieces < w[1].pieces && w[0].makespan_s > w[1].makespan_s));
        // Without start-up cost, re-timing never slows a schedule down.
        let exact = optimal(&d, &b).unwrap();
        prop_assert!(with_latency(&exact, &b, 0.0).unwrap().makespan_s() <= exact.makespan_s() * (1.0 + 1e-12));
    }

    #[test]
    fn replay_is_valid_and_never_beats_the_bound((d, b) in with_bandwidth(integer_matrix()), seed in 0u64..100) {
        let plan = optimal(&d, &b).unwrap();
        let other = alltoall_sched::workload::uniform_traffic(d.n(), 500, seed).unwrap();
        let r = replay(&plan, &other, &b).unwrap();
        prop_assert!(validate_simulated(&r.timetable, &other, &b).is_ok());
        // Fluid sharing may beat the one-port bound with per-GPU bandwidths, never the port
        // capacities.
        let capacity = lower_bounds(&other, &b).unwrap().port_capacity_s;
        prop_assert!(r.makespan_s >= capacity * (1.0 - 1e-9));
        if b.as_uniform().is_some() {
            prop_assert!(r.slowdown >= 1.0 - 1e-9);
        }
    }
}

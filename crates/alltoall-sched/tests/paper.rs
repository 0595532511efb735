//! Aurora's worked examples and the edge cases of the issue.

use comm_cost_model::InputError;

use alltoall_sched::baselines::sjf;
use alltoall_sched::{
    Algorithm, Bandwidth, ScheduleError, TrafficMatrix, lower_bound_s, lower_bounds, optimal,
    schedule,
};

fn fig4() -> TrafficMatrix {
    // GPU 1 (row 0) and GPU 2 (row 1) send one unit to each other GPU; GPU 3 sends nothing.
    TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]]).unwrap()
}

#[test]
fn fig4_optimal_takes_two_units_sjf_three() {
    let b = Bandwidth::uniform(1.0).unwrap();
    // Column 3 sums to 1 + 1 = 2, every other line to 2 or less: b_max = 2 / 1.
    assert_eq!(lower_bound_s(&fig4(), &b).unwrap(), 2.0);
    let plan = optimal(&fig4(), &b).unwrap();
    plan.validate(&fig4(), &b).unwrap();
    assert_eq!(plan.makespan_s(), 2.0);
    // SJF with ties by index is Fig. 4(b): 1 unit alone, then 2 units sharing GPU 3.
    assert_eq!(sjf(&fig4(), &b).unwrap().makespan_s(), 3.0);
}

#[test]
fn heterogeneous_bound_is_reached_and_paper_formula_is_weaker() {
    // GPU 0 has 4 B/s, GPUs 1 and 2 have 1 B/s. GPU 0 sends 4 bytes to each of them.
    let d = TrafficMatrix::from_rows_u64(&[vec![0, 4, 4], vec![0, 0, 0], vec![0, 0, 0]]).unwrap();
    let b = Bandwidth::per_gpu(vec![4.0, 1.0, 1.0]).unwrap();
    let bounds = lower_bounds(&d, &b).unwrap();
    // One transfer at a time at min(4, 1) = 1 B/s: 4 + 4 = 8 s on GPU 0's send port.
    assert_eq!(bounds.one_port_s, 8.0);
    // Theorem 5.2 as printed divides by B_0 = 4: 8 / 4 = 2 s, not reachable here.
    assert_eq!(bounds.paper_literal_s, 2.0);
    let plan = optimal(&d, &b).unwrap();
    plan.validate(&d, &b).unwrap();
    assert_eq!(plan.makespan_s(), 8.0);
}

#[test]
fn one_gpu_and_all_zero_give_empty_schedules() {
    let b = Bandwidth::uniform(1.0).unwrap();
    for d in [
        TrafficMatrix::from_rows(&[vec![5.0]]).unwrap(),
        TrafficMatrix::from_rows_u64(&[vec![0, 0], vec![0, 0]]).unwrap(),
    ] {
        for algorithm in Algorithm::ALL {
            let plan = schedule(&d, &b, algorithm, 1).unwrap();
            assert_eq!(plan.makespan_s, 0.0);
            assert_eq!(plan.pieces, 0);
        }
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let d = fig4();
    assert!(matches!(
        optimal(&d, &Bandwidth::PerGpu(vec![1.0, 1.0])),
        Err(ScheduleError::Input(InputError::SizeMismatch {
            expected: 3,
            actual: 2,
            ..
        }))
    ));
    assert!(matches!(
        optimal(&d, &Bandwidth::Uniform(0.0)),
        Err(ScheduleError::InvalidBandwidth {
            gpu: 0,
            source: InputError::NotPositive { .. }
        })
    ));
    assert!(matches!(
        optimal(&d, &Bandwidth::PerGpu(vec![1.0, f64::NAN, 1.0])),
        Err(ScheduleError::InvalidBandwidth { gpu: 1, .. })
    ));
    assert!(matches!(
        TrafficMatrix::from_rows(&[vec![0.0, 1.0, 2.0]]),
        Err(ScheduleError::NotSquare { .. })
    ));
    // Line sums beyond u64 are reported, not wrapped.
    let big = TrafficMatrix::from_rows_u64(&[vec![0, u64::MAX], vec![u64::MAX, 0]]).unwrap();
    assert!(optimal(&big, &Bandwidth::Uniform(1.0)).is_ok());
    let over = TrafficMatrix::from_rows_u64(&[vec![0, u64::MAX, 1], vec![0, 0, 0], vec![0, 0, 0]])
        .unwrap();
    assert!(matches!(
        optimal(&over, &Bandwidth::Uniform(1.0)),
        Err(ScheduleError::Input(InputError::Overflow { .. }))
    ));
}

#[test]
fn serde_round_trip_of_a_plan() {
    let b = Bandwidth::uniform(1.0).unwrap();
    let plan = schedule(&fig4(), &b, Algorithm::Optimal, 0).unwrap();
    let json = serde_json::to_string(&plan).unwrap();
    assert!(json.contains("\"algorithm\":\"optimal\""));
    let back: alltoall_sched::Plan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan);
    let m: TrafficMatrix = serde_json::from_str("[[0, 2], [1.5, 0]]").unwrap();
    assert!(!m.is_integer());
    // Deserialization validates like from_rows: the error names the entry.
    let err = serde_json::from_str::<TrafficMatrix>("[[0, -2], [1, 0]]").unwrap_err();
    let expected = TrafficMatrix::from_rows(&[vec![0.0, -2.0], vec![1.0, 0.0]]).unwrap_err();
    assert!(matches!(
        expected,
        ScheduleError::InvalidTraffic { src: 0, dst: 1, .. }
    ));
    assert!(err.to_string().contains(&expected.to_string()), "{err}");
}

#[test]
fn nccl_by_name_is_the_one_node_nccl_order() {
    let d = fig4();
    let b = Bandwidth::uniform(1.0).unwrap();
    let algorithm: Algorithm = "nccl".parse().unwrap();
    assert_eq!(algorithm, Algorithm::Nccl);
    assert!(algorithm.is_simulated());
    let plan = schedule(&d, &b, algorithm, 0).unwrap();
    let direct = alltoall_sched::baselines::nccl(&d, &b, d.n()).unwrap();
    assert_eq!(plan.timetable, direct);
    assert_eq!(serde_json::to_string(&Algorithm::Nccl).unwrap(), "\"nccl\"");
}

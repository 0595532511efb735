//! Regression tests for issue 13: extreme magnitudes give a finite assignment or a typed error,
//! never a panic inside the MILP solver or an infinite makespan.

use colocation_matching::{MatchingError, Worker, lysi_assign_milp};
use comm_cost_model::CostModelError;

/// `flop_per_s = 1e-320` made every time infinite and microlp panicked.
#[test]
fn a_subnormal_worker_is_a_typed_error() {
    let slow = [Worker {
        flop_per_s: 1e-320,
        expert_slots: 1,
    }];
    assert!(matches!(
        lysi_assign_milp(&[1.0], &slow),
        Err(MatchingError::Cost(CostModelError::NonFinite { .. }))
    ));
    assert!(matches!(
        colocation_matching::lysi_assign(&[1.0], &slow),
        Err(MatchingError::Cost(CostModelError::NonFinite { .. }))
    ));
}

/// Huge but finite times are scaled before the solver and give the exact optimum.
#[test]
fn extreme_but_finite_magnitudes_are_solved() {
    let workers = [
        Worker {
            flop_per_s: 1e-300,
            expert_slots: 2,
        },
        Worker {
            flop_per_s: 2e-300,
            expert_slots: 2,
        },
    ];
    let a = lysi_assign_milp(&[1e5, 1e5, 1e5], &workers).unwrap();
    // Best: one expert on the slow worker (1e305 s), two on the fast one (1e305 s).
    assert!(a.makespan_s.is_finite());
    assert!(
        (a.makespan_s / 1e305 - 1.0).abs() < 1e-9,
        "{}",
        a.makespan_s
    );
    let tiny = [Worker {
        flop_per_s: 1e308,
        expert_slots: 3,
    }];
    let b = lysi_assign_milp(&[5e-324, 1.0, 2.0], &tiny).unwrap();
    assert!(b.makespan_s.is_finite());
}

/// Expert loads cannot be deserialized invalid (negative, ragged or empty).
#[test]
fn expert_loads_deserialize_validated() {
    use colocation_matching::ExpertLoads;
    let ok: ExpertLoads =
        serde_json::from_str(r#"{"send_bytes": [1.0, 2.0], "recv_bytes": [2.0, 1.0]}"#).unwrap();
    assert_eq!(
        ok,
        ExpertLoads::new(vec![1.0, 2.0], vec![2.0, 1.0]).unwrap()
    );
    for bad in [
        r#"{"send_bytes": [-1.0, 2.0], "recv_bytes": [2.0, 1.0]}"#,
        r#"{"send_bytes": [1.0], "recv_bytes": [2.0, 1.0]}"#,
        r#"{"send_bytes": [], "recv_bytes": []}"#,
    ] {
        assert!(serde_json::from_str::<ExpertLoads>(bad).is_err(), "{bad}");
    }
}

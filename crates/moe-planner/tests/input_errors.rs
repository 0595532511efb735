//! One input-error vocabulary (issue 24): every crate's error embeds comm-cost-model's
//! `InputError` the same way, with the same message, and the facade finds it wherever it is.

use std::fmt::Display;

use moe_planner::PlanError;
use moe_planner::alltoall_sched::ScheduleError;
use moe_planner::colocation_matching::{BipartiteError, MatchingError};
use moe_planner::comm_cost_model::InputError;
use moe_planner::expert_placement::PlacementError;
use moe_planner::rail_network::RailNetworkError;
use moe_planner::topology_partition::TopologyError;
use moe_planner::traffic_placement::TrafficError;

/// The input errors a test wraps: one of each kind of check.
fn samples() -> Vec<InputError> {
    vec![
        InputError::too_large("GPUs", 8192, 8193),
        InputError::size_mismatch("bandwidth_gbps", 2, 1),
        InputError::index_out_of_range("expert id", 9, 8),
        InputError::InvalidEntry {
            what: "loads",
            index: 3,
            value: -1.0,
        },
        InputError::Empty { what: "layers" },
    ]
}

/// `E::from(input)` prints exactly the input error's message.
fn embeds<E: From<InputError> + Display>() {
    for input in samples() {
        assert_eq!(E::from(input.clone()).to_string(), input.to_string());
    }
}

#[test]
fn every_crate_embeds_the_input_error_with_its_message() {
    embeds::<ScheduleError>();
    embeds::<BipartiteError>();
    embeds::<MatchingError>();
    embeds::<PlacementError>();
    embeds::<TrafficError>();
    embeds::<TopologyError>();
    embeds::<RailNetworkError>();
    embeds::<PlanError>();
}

#[test]
fn messages_name_the_quantity_the_value_and_the_limit() {
    let shown: Vec<String> = samples().iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "GPUs = 8193 exceeds the limit 8192",
            "bandwidth_gbps: expected 2, got 1",
            "expert id: index 9 is out of range for size 8",
            "loads[3] = -1 is not a finite non-negative number",
            "layers is empty",
        ]
    );
}

#[test]
fn the_facade_finds_the_input_error_in_any_crate() {
    for input in samples() {
        let nested = [
            PlanError::from(ScheduleError::from(input.clone())),
            PlanError::from(MatchingError::from(BipartiteError::from(input.clone()))),
            PlanError::from(PlacementError::from(input.clone())),
            PlanError::from(TrafficError::from(PlacementError::from(input.clone()))),
            PlanError::from(TrafficError::from(input.clone())),
            PlanError::from(TopologyError::from(input.clone())),
            PlanError::from(RailNetworkError::from(input.clone())),
            PlanError::Layer {
                layer: 2,
                source: PlacementError::from(input.clone()),
            },
            PlanError::from(input.clone()),
        ];
        for err in nested {
            assert_eq!(err.input(), Some(&input), "{err:?}");
        }
    }
    let not_input = PlanError::MissingField {
        field: "gpus",
        needed_by: "mode",
    };
    assert_eq!(not_input.input(), None);
}

//! Plans are reproducible: every search stops on counted work, and the wall clock is only a
//! safety cap whose hit the plan reports.

use expert_placement::PlacementCluster;
use traffic_placement::{
    LocalityTrace, TrafficOptions, TrafficTermination, locality_trace, place_traffic_aware,
    tradeoff_curve,
};

/// The same layer planned under two generous caps (600 s and 6000 s: generous for a debug build
/// on a busy machine too) gives the same plan, bit for bit, on 2 and on 4 nodes, with and without groups-in-nodes.
#[test]
fn generous_caps_give_identical_plans() {
    for (gpus, nodes, slots, groups) in [(16, 2, 18, None), (32, 4, 9, None), (16, 2, 18, Some(8))]
    {
        let cluster = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
        let t = &locality_trace(&LocalityTrace::deepseek_like(1, gpus, nodes, 0.5), 3).unwrap()[0];
        let plan = |cap: f64| {
            let options = TrafficOptions {
                time_budget_s: cap,
                groups,
                ..TrafficOptions::default()
            };
            place_traffic_aware(t, &cluster, &options).unwrap()
        };
        let (a, b) = (plan(600.0), plan(6000.0));
        assert_ne!(a.termination, TrafficTermination::TimeCapped);
        assert_eq!(a, b, "G={gpus} K={nodes} slots={slots} groups={groups:?}");
    }
}

/// The trade-off curve is reproducible too.
#[test]
fn generous_caps_give_identical_curves() {
    let cluster = PlacementCluster::uniform(16, 18, 2).unwrap();
    let t = &locality_trace(&LocalityTrace::deepseek_like(1, 16, 2, 0.3), 4).unwrap()[0];
    let curve = |cap: f64| {
        let options = TrafficOptions {
            time_budget_s: cap,
            ..TrafficOptions::default()
        };
        tradeoff_curve(t, &cluster, &[0.005, 0.02], &options).unwrap()
    };
    let (a, b) = (curve(600.0), curve(6000.0));
    assert_eq!(a, b);
    // Each point says how its search ended; counted work only, so never the clock.
    assert!(
        a.iter()
            .all(|p| p.termination != TrafficTermination::TimeCapped)
    );
    let tiny = TrafficOptions {
        time_budget_s: 0.0,
        ..TrafficOptions::default()
    };
    let capped = tradeoff_curve(t, &cluster, &[0.005, 0.02], &tiny).unwrap();
    assert!(
        capped
            .iter()
            .all(|p| p.termination == TrafficTermination::TimeCapped)
    );
}

/// A cap too small for any search is reported as such, and the plan is still a valid one.
#[test]
fn tiny_cap_is_reported() {
    let cluster = PlacementCluster::uniform(16, 18, 2).unwrap();
    let t = &locality_trace(&LocalityTrace::deepseek_like(1, 16, 2, 0.5), 3).unwrap()[0];
    for cap in [0.0, 1e-6] {
        let options = TrafficOptions {
            time_budget_s: cap,
            ..TrafficOptions::default()
        };
        let p = place_traffic_aware(t, &cluster, &options).unwrap();
        assert_eq!(p.termination, TrafficTermination::TimeCapped, "cap {cap}");
        assert_eq!(p.termination.name(), "time-capped");
        assert_eq!(p.physical_to_logical.len(), cluster.total_slots());
        assert!(p.replica_count.iter().all(|&c| c >= 1));
        assert!(p.dispatch.cross_node_tokens + 1e-6 >= p.bound.cross_node_tokens || !p.balance_met);
    }
}

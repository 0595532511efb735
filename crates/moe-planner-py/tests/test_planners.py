"""place, schedule and iteration_search: results as arrays, the library's errors as ValueError."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from conftest import README_WEIGHT, check_tables

import moe_planner
from moe_planner import _advise, _placement, _schedule, _search, eplb


@pytest.mark.parametrize("module", [moe_planner, eplb, _advise, _placement, _schedule, _search])
def test_docstring_examples_run(module):
    failed, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0


def test_place_fresh_matches_the_published_numbers():
    r = moe_planner.place(README_WEIGHT, 8, 2)
    assert r.policy == "optimal" and r.baseline_policy == "eplb-global"
    assert r.max_gpu_load.tolist() == [136.0, 172.0]
    assert r.baseline_max_gpu_load.tolist() == [138.5, 172.0]
    assert (r.lower_bound <= r.max_gpu_load).all()
    assert r.gpu_loads.shape == (2, 8)
    assert np.allclose(r.gpu_loads.max(axis=1), r.max_gpu_load)
    assert r.moves is None and r.transfers.shape == (0, 4) and r.window_max_gpu_load is None
    check_tables(r.physical_to_logical_map, _eplb_width(r), r.expert_count, 8)


def _eplb_width(r):
    """Our ``logical_to_physical_map`` padded to EPLB's width, for ``check_tables``."""
    layers, experts, width = r.logical_to_physical_map.shape
    replicas = r.physical_to_logical_map.shape[1]
    pad = np.full((layers, experts, replicas - experts + 1 - width), -1, dtype=np.int64)
    return np.concatenate([r.logical_to_physical_map, pad], axis=2)


def test_place_rebalance_reports_moves_transfers_and_time():
    fresh = moe_planner.place(README_WEIGHT, 8, 2)
    drifted = np.array(README_WEIGHT, dtype=float)
    drifted[:, 7] += 150.0
    r = moe_planner.place(
        drifted, 8, 2, current=fresh.physical_to_logical_map, tolerance=0.0, expert_bytes=1e9, bandwidth_gbps=8.0
    )
    assert r.moves is not None and r.transfer_time_s is not None
    assert r.moves.sum() == len(r.transfers)
    assert (r.transfers[:, 0] < 2).all() and (r.transfers[:, 2] != r.transfers[:, 3]).all()
    # One expert copy of 1e9 bytes at 1e9 bytes/s takes a second; a layer moves at least one.
    assert (r.transfer_time_s >= 1.0).all()
    assert all(t[0][0] == 0 for t in r.tradeoff)
    same = moe_planner.place(README_WEIGHT, 8, 2, current=fresh.physical_to_logical_map)
    assert same.moves.tolist() == [0, 0]


def test_place_windows_and_policies():
    r = moe_planner.place([[8, 4, 2, 2]], 2, 3, windows=[[[2, 2, 4, 8]]])
    assert r.window_max_gpu_load.shape == (1, 2)
    assert r.window_max_gpu_load.max() <= r.window_newest_only_max_gpu_load.max() + 1e-12
    eplb_plan = moe_planner.place(README_WEIGHT, 8, 2, nodes=2, groups=4, policy="eplb")
    assert eplb_plan.policy == "eplb-hierarchical"
    node_aware = moe_planner.place(README_WEIGHT, 8, 2, nodes=2, groups=4, policy="optimal-node-aware")
    assert (node_aware.max_gpu_load <= eplb_plan.max_gpu_load).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(loads=[[1.0, float("nan")]]), "loads: layer 0, expert 1: load NaN"),
        (dict(loads=[1.0, 2.0]), "2-D"),
        (dict(policy="fastest"), "unknown variant `fastest`"),
        (dict(policy="optimal-node-aware"), "groups"),
        (dict(current=[[0, -1]]), "current: layer 0, slot 1: expert id -1"),
        (dict(current=[[0, 0.5]]), "integer ids"),
        (dict(tolerance=-1.0), "tolerance"),
        (dict(robust_objective="best"), "unknown variant"),
        (dict(num_gpus=0), "num_gpus: there must be at least one GPU"),
        (dict(gpu_speed=[1.0, 1.0, 1.0]), "gpu_speed: 3 speeds for 2 GPUs"),
        (dict(slots_per_gpu=0), "slots_per_gpu"),
        (dict(groups=3), "groups: 2 experts cannot be split into 3 groups"),
        (dict(groups=2, nodes=2, policy="optimal-node-aware", windows=[[[1.0, 2.0]]]), "windows cannot be combined with policy"),
    ],
)
def test_place_errors_are_value_errors(kwargs, message):
    args = dict(loads=[[1.0, 2.0]], num_gpus=2, slots_per_gpu=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        moe_planner.place(**args)


def test_place_names_what_ran_and_compares_like_with_like():
    r = moe_planner.place(README_WEIGHT, 8, 2, nodes=2, groups=4)
    assert r.policy == "optimal" and r.baseline_policy == "eplb-global"
    node_aware = moe_planner.place(README_WEIGHT, 8, 2, nodes=2, groups=4, policy="optimal-node-aware")
    assert node_aware.baseline_policy == "eplb-hierarchical"
    assert node_aware.lower_bound_kind == "groups-in-nodes"
    assert r.lower_bound_kind == "unconstrained"
    assert r.termination == ["proved-optimal", "proved-optimal"]
    assert len(node_aware.termination) == 2
    robust = moe_planner.place(README_WEIGHT, 8, 2, windows=[README_WEIGHT])
    assert robust.policy == "optimal-robust-worst"
    assert robust.baseline_policy == "eplb-global-summed-windows"
    again = moe_planner.place(README_WEIGHT, 8, 2, current=r.physical_to_logical_map)
    assert again.policy == "optimal-rebalance"


def test_schedule_meets_the_bound_and_returns_columns():
    rng = np.random.default_rng(1)
    traffic = rng.integers(0, 1000, size=(5, 5)).astype(float) * 1e6
    s = moe_planner.schedule(traffic, bandwidth_gbps=[100, 200, 100, 400, 100])
    assert s.algorithm == "optimal"
    assert np.isclose(s.makespan_s, s.lower_bound_s)
    assert len(s.src) == len(s.dst) == len(s.bytes) == len(s.start_s) == len(s.end_s)
    assert s.src.dtype == np.int64 and s.start_s.dtype == np.float64
    np.fill_diagonal(traffic, 0)
    delivered = np.zeros_like(traffic)
    np.add.at(delivered, (s.src, s.dst), s.bytes)
    assert np.allclose(delivered, traffic)
    sjf = moe_planner.schedule(traffic, 100.0, algorithm="sjf")
    assert sjf.makespan_s >= sjf.lower_bound_s


@pytest.mark.parametrize(
    "traffic, kwargs, message",
    [
        ([[0, -1], [0, 0]], {}, "traffic"),
        ([[0, float("nan")], [0, 0]], {}, "finite, got NaN"),
        ([[0, 1, 2], [0, 0, 0]], {}, "has 3 entries, expected 2"),
        ([[0, 1], [1, 0]], dict(bandwidth_gbps=0.0), "bandwidth"),
        ([[0, 1], [1, 0]], dict(bandwidth_gbps=[100.0]), "expected 2, got 1"),
        ([[0, 1], [1, 0]], dict(algorithm="fifo"), "unknown variant `fifo`"),
    ],
)
def test_schedule_errors_are_value_errors(traffic, kwargs, message):
    with pytest.raises(ValueError, match=message):
        moe_planner.schedule(traffic, **kwargs)


def test_iteration_search_presets_and_errors():
    plan = moe_planner.iteration_search("gpt-22b", "dgx-a100", 64, 64, keep=2)
    assert len(plan["ranked"]) <= 2
    times = [c["iteration_time_s"] for c in plan["ranked"]]
    assert plan["best"]["iteration_time_s"] == min(times)
    with pytest.raises(ValueError, match="gpt-9000"):
        moe_planner.iteration_search("gpt-9000", "dgx-a100", 64, 64)
    with pytest.raises(ValueError, match="configurations to keep"):
        moe_planner.iteration_search("gpt-22b", "dgx-a100", 64, 64, keep=0)
    with pytest.raises(ValueError, match="search spec"):
        moe_planner.iteration_search("gpt-22b", {"hb_domain": 8}, 64, 64)


def test_place_search_budget_is_an_argument_and_checked():
    """Issue 20: the search budget is visible; how each layer's search ended is reported."""
    loads = [[0, 1, 5, 0, 1, 1000, 20, 0, 0, 5, 20, 0, 1000, 5, 5, 20, 1, 5]]
    r = moe_planner.place(loads, 9, 3, search_steps=0, time_budget_s=600.0)
    assert r.termination[0] in ("heuristic", "bound-reached")
    # A clock too short for any search says so (the plan may differ on another machine).
    assert moe_planner.place(loads, 9, 3, time_budget_s=1e-9).termination[0] == "time-capped"
    assert float(r.max_gpu_load[0]) <= 251.0
    with pytest.raises(ValueError, match="time_budget_s"):
        moe_planner.place(loads, 9, 3, time_budget_s=float("nan"))

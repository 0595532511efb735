"""``moe_planner.advise``: is EPLB worth it, how many redundant experts, rebalance now or not."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from . import _native
from ._arrays import count, floats, ids, number

__all__ = ["advise"]


def advise(
    loads: Any,
    num_gpus: int,
    *,
    nodes: int = 1,
    groups: Optional[int] = None,
    max_redundant: Optional[int] = None,
    target_imbalance: float = 1.05,
    current: Any = None,
    min_gain: float = 0.05,
    tolerance: float = 0.0,
    expert_bytes: Optional[float] = None,
    bandwidth_gbps: float = 400.0,
    peer_limit: int = 1,
    search_steps: Optional[int] = None,
) -> Dict[str, Any]:
    """Advise on expert-parallel load balancing from the actual load statistics.

    For every feasible number of redundant experts from the fewest up to ``max_redundant``
    (``experts + redundant`` a multiple of ``num_gpus``), the busiest GPU's load over the mean
    (averaged over layers, and the worst layer) of our plan and of EPLB's; the fewest that
    reach ``target_imbalance``; and with ``current``, the gain of a fewest-move rebalance now
    against its copies, bytes and migration time, with a yes/no recommendation
    (``gain >= min_gain``).

    Args:
        loads: ``[layers, experts]`` load of each logical expert (array-like or torch).
        num_gpus: GPUs (expert-parallel ranks).
        nodes: nodes; with ``groups`` and more than one node, groups stay inside nodes.
        groups: expert groups.
        max_redundant: largest number of redundant experts to try (default: the fewest feasible
            plus ``num_gpus``).
        target_imbalance: the balance to reach (busiest over mean, default 1.05).
        current: ``[layers, slots]`` placement serving now.
        min_gain: rebalance when it cuts the busiest GPU's load by at least this fraction.
        tolerance: allowed excess of the rebalance's maximum load, traded for fewer copies.
        expert_bytes: bytes of one expert's weights (gives transfer bytes and time).
        bandwidth_gbps: per-GPU bandwidth for weight transfers.
        peer_limit: copies one GPU may send, and receive, per migration round.
        search_steps: each layer's exact search budget (small instances; default 2,000,000;
            deterministic, no wall-clock limit).

    Returns:
        A dict: ``points`` (``redundant``, ``slots_per_gpu``, ``imbalance``,
        ``worst_layer_imbalance``, ``baseline_imbalance``, ``baseline_worst_layer_imbalance``),
        ``recommended_redundant`` and ``baseline_recommended_redundant`` (absent when the target
        is not reached), ``policy``, ``baseline_policy`` and, with ``current``, ``rebalance``
        (``current_imbalance``, ``rebalanced_imbalance``, ``gain``, ``moves``,
        ``transfer_bytes``, ``transfer_rounds``, ``transfer_time_s``, ``min_gain``,
        ``recommend``).

    Raises:
        ValueError: naming the argument, for bad loads, zero GPUs, a target below 1, a negative
            ``min_gain`` or a malformed ``current``.
        TypeError: for non-numeric arrays or counts that are not integers.
        KeyboardInterrupt: on Ctrl-C, within 50 ms.

    Example:
        >>> import moe_planner
        >>> a = moe_planner.advise([[80, 10, 10, 10, 10, 10, 10, 10]], 4, max_redundant=8)
        >>> [p["redundant"] for p in a["points"]]
        [0, 4, 8]
        >>> a["points"][0]["imbalance"] > a["points"][-1]["imbalance"]
        True
    """
    text = _native.advise(
        floats(loads, "loads", 2, "[layers, experts]"),
        count(num_gpus, "num_gpus"),
        count(nodes, "nodes"),
        None if groups is None else count(groups, "groups"),
        None if max_redundant is None else count(max_redundant, "max_redundant"),
        number(target_imbalance, "target_imbalance"),
        None if current is None else ids(current, "current", 2, "[layers, slots]"),
        number(min_gain, "min_gain"),
        number(tolerance, "tolerance"),
        None if expert_bytes is None else number(expert_bytes, "expert_bytes"),
        number(bandwidth_gbps, "bandwidth_gbps"),
        count(peer_limit, "peer_limit"),
        None if search_steps is None else count(search_steps, "search_steps"),
    )
    result: Dict[str, Any] = json.loads(text)
    return result

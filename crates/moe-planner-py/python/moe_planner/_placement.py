"""``moe_planner.place``: expert replication and placement, fresh or as a fewest-move rebalance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _native
from ._arrays import count, floats, ids, number

__all__ = ["PlacementResult", "place"]


@dataclass(frozen=True)
class PlacementResult:
    """A placement of every layer, with EPLB's plan on the same input as the baseline.

    Per-layer arrays have the layer as their first axis. Loads are in the unit of the input
    loads per unit of GPU speed.
    """

    policy: str
    """What actually planned: ``optimal``, ``optimal-rebalance`` (with ``current``),
    ``optimal-robust-worst`` / ``optimal-robust-mean`` (with ``windows``),
    ``optimal-node-aware``, ``exact``, ``eplb-hierarchical`` or ``eplb-global`` (with
    ``windows``: ``...-summed-windows``, EPLB on the sum of the windows)."""
    baseline_policy: str
    """The EPLB policy compared with, like for like: ``eplb-global`` for ``optimal`` and
    ``exact``, EPLB's choice for the shape (``eplb-hierarchical`` when ``groups`` is a multiple
    of ``nodes``) for ``optimal-node-aware`` and ``eplb``; ``...-summed-windows`` with
    ``windows``."""
    lower_bound_kind: str
    """What ``lower_bound`` is valid for: ``groups-in-nodes`` (``optimal-node-aware`` with at
    most 12 groups: a bound under the node constraint) or ``unconstrained`` (every other case;
    for a node-aware plan with more groups valid but loose)."""
    termination: List[str]
    """Per layer, how the search behind the plan ended: ``proved-optimal``, ``bound-reached``,
    ``budget-exhausted`` (out of steps), ``time-capped`` (the wall clock cut a search: the plan
    may differ on another machine or load), ``heuristic`` or ``not-searched`` (EPLB's plan)."""
    physical_to_logical_map: np.ndarray
    """``int64 [layers, gpus * slots_per_gpu]``: logical expert of each slot (slot ``s`` on GPU
    ``s // slots_per_gpu``), SGLang's ``physical_to_logical_map``."""
    logical_to_physical_map: np.ndarray
    """``int64 [layers, experts, max replicas]``: slots of each expert, ``-1`` padded."""
    expert_count: np.ndarray
    """``int64 [layers, experts]``: replicas of each expert."""
    gpu_loads: np.ndarray
    """``float64 [layers, gpus]``: load of each GPU."""
    max_gpu_load: np.ndarray
    """``float64 [layers]``: the busiest GPU's load, the objective."""
    mean_gpu_load: np.ndarray
    """``float64 [layers]``: total load over total speed."""
    lower_bound: np.ndarray
    """``float64 [layers]``: certified lower bound on any valid placement's maximum load."""
    gap: np.ndarray
    """``float64 [layers]``: ``max_gpu_load / lower_bound - 1`` (0 when proved optimal)."""
    baseline_max_gpu_load: np.ndarray
    """``float64 [layers]``: EPLB's maximum GPU load on the same input."""
    baseline_duplicates_on_gpu: np.ndarray
    """``int64 [layers]``: replicas EPLB puts on a GPU that already holds that expert."""
    mean_imbalance: float
    """Mean over layers of ``max_gpu_load / mean_gpu_load``."""
    baseline_mean_imbalance: float
    """The same for EPLB."""
    moves: Optional[np.ndarray]
    """With ``current``: ``int64 [layers]`` expert copies to transfer; else ``None``."""
    baseline_moves: Optional[np.ndarray]
    """With ``current``: what EPLB's fresh plan would transfer; else ``None``."""
    transfer_time_s: Optional[np.ndarray]
    """With ``current`` and ``expert_bytes``: ``float64 [layers]`` makespan of each layer's
    transfers run as a contention-free all-to-all, seconds; else ``None``."""
    transfers: np.ndarray
    """``int64 [transfers, 4]``: ``(layer, expert, src_gpu, dst_gpu)`` of every weight copy
    (no rows without ``current``)."""
    tradeoff: List[List[Tuple[int, float]]]
    """With ``current`` and policy ``optimal``: per layer, ``(moves, max_gpu_load)`` from zero
    moves up, each the lowest load found with at most that many moves."""
    window_max_gpu_load: Optional[np.ndarray]
    """With ``windows``: ``float64 [layers, windows + 1]`` our maximum load under each window
    (oldest first, the last is ``loads``); else ``None``."""
    window_newest_only_max_gpu_load: Optional[np.ndarray]
    """With ``windows``: the same for a plan made on ``loads`` alone."""


def place(
    loads: Any,
    num_gpus: int,
    slots_per_gpu: int,
    *,
    nodes: int = 1,
    groups: Optional[int] = None,
    policy: str = "optimal",
    current: Any = None,
    tolerance: float = 0.0,
    windows: Any = None,
    robust_objective: str = "worst",
    gpu_speed: Any = None,
    expert_bytes: Optional[float] = None,
    bandwidth_gbps: float = 400.0,
    search_steps: Optional[int] = None,
    time_budget_s: Optional[float] = None,
) -> PlacementResult:
    """Place every layer's experts on ``num_gpus * slots_per_gpu`` slots, EPLB beside it.

    Minimizes the busiest GPU's load (a replica of expert ``e`` carries ``loads[e] /
    replicas(e)``, a GPU's load is the sum over its replicas divided by its speed), never two
    replicas of one expert on a GPU. With ``current`` it becomes a rebalance: the plan with the
    fewest expert-weight transfers whose maximum load is within ``tolerance`` of the best found.
    With ``windows`` every layer is planned against all windows at once (robust to drift).

    Args:
        loads: ``[layers, experts]`` load of each logical expert in the newest window (SGLang's
            ``logical_count`` summed over a window); array-like or a torch tensor.
        num_gpus: GPUs ``G``.
        slots_per_gpu: expert slots per GPU ``S`` (``G * S >= experts``).
        nodes: nodes; GPUs are numbered node by node.
        groups: expert groups, for ``policy="optimal-node-aware"`` and EPLB's hierarchical
            baseline.
        policy: ``"optimal"`` (default), ``"optimal-node-aware"``, ``"exact"`` (small
            instances) or ``"eplb"``.
        current: ``[layers, G * S]`` the placement serving now (``physical_to_logical_map``).
        tolerance: allowed relative excess of the maximum load, traded for fewer moves.
        windows: ``[windows, layers, experts]`` older load windows, oldest first.
        robust_objective: how windows combine: ``"worst"`` (default) or ``"mean"``.
        gpu_speed: ``[G]`` relative speed of each GPU (default all 1).
        expert_bytes: bytes of one expert's weights; gives transfer times.
        bandwidth_gbps: per-GPU bandwidth for weight transfers, Gbps.
        search_steps: steps the exact search of one layer may take (default 500,000, and
            3,000,000 for the 2-slot count search, or 20,000,000 for ``"exact"``; 0 skips
            it). Deterministic.
        time_budget_s: wall-clock limit of one layer's search in seconds (default 1); each
            layer's ``termination`` says how its search ended.

    Returns:
        A :class:`PlacementResult`.

    Raises:
        ValueError: with the planner's message, naming the argument, for NaN, infinite or
            negative loads, ragged or mis-shaped arrays, too few slots, ``groups`` that do not
            divide the experts, an unknown policy, a malformed ``current``, a negative
            tolerance, or ``windows`` with ``policy="optimal-node-aware"`` or ``"exact"``
            (neither has a multi-window planner).
        moe_planner.TooLargeError: (a ``ValueError``) when the padded
            ``logical_to_physical_map`` (layers x experts x most replicas) would exceed 2**26
            entries or ``layers x num_gpus x slots_per_gpu`` 2**28, before it is allocated.
        KeyboardInterrupt: on Ctrl-C, within 50 ms.

    Example:
        vLLM PR 37656: one layer, 8 GPUs with 2 slots each; EPLB reaches 232, the optimum is
        590 / 3.

        >>> import moe_planner
        >>> r = moe_planner.place([[600, 560, 120, 120, 20, 10, 10, 10]], 8, 2)
        >>> round(float(r.max_gpu_load[0]), 3), float(r.baseline_max_gpu_load[0])
        (196.667, 232.0)
        >>> float(r.gap[0])  # proved optimal
        0.0
        >>> again = moe_planner.place([[600, 560, 120, 120, 20, 10, 10, 50]], 8, 2,
        ...                           current=r.physical_to_logical_map, tolerance=0.05)
        >>> again.transfers.shape[1], int(again.moves[0]) == len(again.transfers)
        (4, True)
    """
    native = _native.place(
        floats(loads, "loads", 2, "[layers, experts]"),
        count(num_gpus, "num_gpus"),
        count(slots_per_gpu, "slots_per_gpu"),
        count(nodes, "nodes"),
        None if groups is None else count(groups, "groups"),
        str(policy),
        None if current is None else ids(current, "current", 2, "[layers, slots]"),
        number(tolerance, "tolerance"),
        None if windows is None else floats(windows, "windows", 3, "[windows, layers, experts]"),
        str(robust_objective),
        None if gpu_speed is None else floats(gpu_speed, "gpu_speed", 1, "[gpus]"),
        None if expert_bytes is None else number(expert_bytes, "expert_bytes"),
        number(bandwidth_gbps, "bandwidth_gbps"),
        None if search_steps is None else count(search_steps, "search_steps"),
        None if time_budget_s is None else number(time_budget_s, "time_budget_s"),
    )
    return PlacementResult(**native)

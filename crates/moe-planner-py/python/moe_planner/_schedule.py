"""``moe_planner.schedule``: contention-free all-to-all schedules (Aurora, Thm 4.2 and 5.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Union

import numpy as np

from . import _native
from ._arrays import count, floats

__all__ = ["Schedule", "schedule"]


@dataclass(frozen=True)
class Schedule:
    """A timetable of one all-to-all, one row per transfer piece, sorted by start time."""

    algorithm: str
    """The algorithm that made it."""
    src: np.ndarray
    """``int64 [pieces]``: sending GPU."""
    dst: np.ndarray
    """``int64 [pieces]``: receiving GPU."""
    bytes: np.ndarray
    """``float64 [pieces]``: bytes of the piece."""
    start_s: np.ndarray
    """``float64 [pieces]``: start, seconds from the start of the all-to-all."""
    end_s: np.ndarray
    """``float64 [pieces]``: end, seconds."""
    lower_bound_s: float
    """Busy time of the busiest port: no schedule finishes sooner, seconds."""
    makespan_s: float
    """Completion time of this schedule (simulated for the baselines), seconds."""
    ratio_to_bound: float
    """``makespan_s / lower_bound_s`` (1 for an empty matrix)."""


def schedule(
    traffic: Any,
    bandwidth_gbps: Union[float, Sequence[float]] = 100.0,
    *,
    algorithm: str = "optimal",
    seed: int = 0,
) -> Schedule:
    """Order an all-to-all so no GPU port is contended, and time every transfer.

    ``"optimal"`` finishes at the lower bound (the busiest port's bytes over its bandwidth,
    with ``min(B_i, B_j)`` for a pair), Aurora Thm 4.2 (uniform) and 5.2 (per-GPU bandwidth).

    Args:
        traffic: ``[gpus, gpus]`` bytes GPU ``i`` sends to GPU ``j`` (diagonal ignored).
        bandwidth_gbps: port bandwidth in Gbps, one number for every GPU or one per GPU.
        algorithm: ``"optimal"`` (default), ``"aurora-greedy"``, ``"non-preemptive"``,
            ``"sjf"``, ``"random"`` or ``"shift"``.
        seed: seed of the randomized algorithms.

    Returns:
        A :class:`Schedule`.

    Raises:
        ValueError: with the scheduler's message for a matrix that is not square, NaN, infinite
            or negative bytes, a bandwidth that is not positive or has the wrong length, or an
            unknown algorithm.

    Example:
        Aurora Fig. 4: 1 MB per transfer at 8 Gbps (1e9 bytes/s), 1 ms each.

        >>> import moe_planner
        >>> s = moe_planner.schedule([[0, 1e6, 1e6], [1e6, 0, 1e6], [0, 0, 0]], 8.0)
        >>> s.lower_bound_s, s.makespan_s
        (0.002, 0.002)
        >>> [int(x) for x in s.src], len(s.end_s)
        ([0, 1, 0, 1], 4)
    """
    if np.ndim(bandwidth_gbps) == 0:
        bandwidth: Any = float(bandwidth_gbps)  # type: ignore[arg-type]
    else:
        bandwidth = floats(bandwidth_gbps, "bandwidth_gbps", 1, "[gpus]").tolist()
    native = _native.schedule(
        floats(traffic, "traffic", 2, "[gpus, gpus]"),
        bandwidth,
        str(algorithm),
        count(seed, "seed"),
    )
    return Schedule(**native)

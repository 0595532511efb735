"""A drop-in for DeepSeek's EPLB (``deepseek-ai/EPLB``, ``eplb.rebalance_experts``).

Change one import and keep the call::

    # from eplb import rebalance_experts
    from moe_planner.eplb import rebalance_experts

The replicas are placed by moe-planner's optimal planner instead of EPLB's greedy heuristic: the
busiest GPU carries the least load the planner can find (proved optimal on small instances, and
never above EPLB on the published examples), and no GPU ever holds two replicas of one expert
(EPLB can, deepseek-ai/EPLB issue 22). Given the placement serving now
(``old_global_expert_indices``), it rebalances with the fewest expert-weight copies instead of
re-planning from scratch. Torch in, torch out (CPU); numpy in, numpy out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _native
from ._arrays import count, floats, ids, number
from ._tensors import integer_dtype, is_torch, output

__all__ = ["Diagnostics", "Rebalanced", "rebalance_experts", "rebalance_with_diagnostics"]


@dataclass(frozen=True)
class Diagnostics:
    """What a rebalance did, per layer (numpy arrays, whatever the input was)."""

    policy: List[str]
    """What planned each layer: ``optimal``, ``optimal-node-aware``, ``optimal-rebalance``
    (fewest moves from the current placement), ``optimal-node-aware-rebalance`` (groups kept in
    nodes: each node rebalanced in place, or the node-aware plan relabeled onto the current
    placement, whichever moves less within the tolerance) or ``optimal-node-aware-aligned``
    (the node-aware plan relabeled onto a current placement the node rebalance could not use)."""
    max_gpu_load: np.ndarray
    """``float64 [layers]``: the busiest GPU's load of the new plan."""
    mean_gpu_load: np.ndarray
    """``float64 [layers]``: total load over GPUs (``max_gpu_load / mean_gpu_load`` is the
    imbalance)."""
    current_max_gpu_load: Optional[np.ndarray]
    """With a current placement: ``float64 [layers]`` its busiest GPU's load under these loads."""
    moves: Optional[np.ndarray]
    """With a current placement: ``int64 [layers]`` expert copies to make."""
    transfers: np.ndarray
    """``int64 [copies, 5]``: ``(layer, expert, src_gpu, dst_gpu, round)``; within a layer every
    GPU sends and receives at most ``peer_limit`` copies per round."""
    rounds: np.ndarray
    """``int64 [layers]``: migration rounds of each layer (the fewest possible: the most copies
    one GPU sends or receives, over ``peer_limit``, rounded up). Empty without a current
    placement."""


@dataclass(frozen=True)
class Rebalanced:
    """EPLB's three tables (in the input's array type) and the :class:`Diagnostics`."""

    physical_to_logical_map: Any
    logical_to_physical_map: Any
    expert_count: Any
    diagnostics: Diagnostics


def rebalance_with_diagnostics(
    weight: Any,
    num_replicas: int,
    num_groups: int,
    num_nodes: int,
    num_gpus: int,
    old_global_expert_indices: Any = None,
    *,
    tolerance: float = 0.0,
    max_moves: Optional[int] = None,
    peer_limit: int = 1,
) -> Rebalanced:
    """:func:`rebalance_experts` with what it did: moves, loads and the migration rounds.

    Args:
        weight, num_replicas, num_groups, num_nodes, num_gpus, old_global_expert_indices: as
            :func:`rebalance_experts`.
        tolerance: allowed relative excess of the busiest GPU's load over the best found,
            traded for fewer copies (global rule with a current placement).
        max_moves: at most this many copies per layer (global rule with a current placement).
        peer_limit: copies one GPU may send, and receive, per migration round (default 1: one
            peer at a time).

    Returns:
        A :class:`Rebalanced`.

    Raises:
        As :func:`rebalance_experts`; ``ValueError`` naming ``tolerance`` (negative, NaN) or
        ``peer_limit`` (zero).
    """
    torch_in = is_torch(weight)
    w = floats(weight, "weight", 2, "[layers, experts]")
    current = None
    if old_global_expert_indices is not None:
        current = ids(old_global_expert_indices, "old_global_expert_indices", 2, "[layers, num_replicas]")
    p2l, l2p, cnt, info = _native.rebalance_experts(
        w,
        count(num_replicas, "num_replicas"),
        count(num_groups, "num_groups"),
        count(num_nodes, "num_nodes"),
        count(num_gpus, "num_gpus"),
        current,
        number(tolerance, "tolerance"),
        None if max_moves is None else count(max_moves, "max_moves"),
        count(peer_limit, "peer_limit"),
    )
    diagnostics = Diagnostics(
        policy=list(info["policy"]),
        max_gpu_load=np.asarray(info["max_gpu_load"], dtype=np.float64),
        mean_gpu_load=np.asarray(info["mean_gpu_load"], dtype=np.float64),
        current_max_gpu_load=None
        if info["current_max_gpu_load"] is None
        else np.asarray(info["current_max_gpu_load"], dtype=np.float64),
        moves=None if info["moves"] is None else np.asarray(info["moves"], dtype=np.int64),
        transfers=info["transfers"],
        rounds=np.asarray(info["rounds"], dtype=np.int64),
    )
    map_dtype = integer_dtype(old_global_expert_indices)
    return Rebalanced(
        physical_to_logical_map=output(p2l, torch_in, map_dtype),
        logical_to_physical_map=output(l2p, torch_in, map_dtype),
        expert_count=output(cnt, torch_in, map_dtype),
        diagnostics=diagnostics,
    )


def rebalance_experts(
    weight: Any,
    num_replicas: int,
    num_groups: int,
    num_nodes: int,
    num_gpus: int,
    old_global_expert_indices: Any = None,
) -> Tuple[Any, Any, Any]:
    """Replicate and place every layer's experts; EPLB's arguments and return shapes.

    Args:
        weight: ``[layers, experts]`` load of each logical expert (token counts or any
            non-negative unit): a numpy array, a nested list, anything with ``__array__``, or a
            torch tensor (any device or dtype; it is copied to the CPU).
        num_replicas: physical expert slots in the cluster, a multiple of ``num_gpus`` and at
            least ``experts``; slot ``s`` lives on GPU ``s // (num_replicas // num_gpus)``.
        num_groups: expert groups (contiguous experts, DeepSeek-V3 group-limited routing).
        num_nodes: server nodes; GPUs are numbered node by node.
        num_gpus: GPUs in the cluster.
        old_global_expert_indices: optional ``[layers, num_replicas]`` logical expert of each
            slot now (vLLM's name for the current ``physical_to_logical_map``). Given, the plan
            moves as few expert copies as it can: under the global rule the fewest-move
            rebalance at the best balance found, under the hierarchical rule each node
            rebalanced in place (groups stay in their nodes) or the node-aware plan relabeled
            onto the current placement, whichever moves less. Unchanged loads move nothing.

    Returns:
        ``(physical_to_logical_map, logical_to_physical_map, expert_count)``, ``int64`` numpy
        arrays, or CPU torch tensors when ``weight`` is a torch tensor (in the dtype of a torch
        ``old_global_expert_indices`` when one is given):

        * ``physical_to_logical_map[layers, num_replicas]``: the logical expert of each slot;
        * ``logical_to_physical_map[layers, experts, num_replicas - experts + 1]``: the slots
          of each expert, padded with ``-1`` (EPLB's width);
        * ``expert_count[layers, experts]``: replicas of each expert.

    Policy:
        When ``num_nodes > 1`` divides both ``num_groups`` and ``num_gpus`` and ``num_groups``
        divides the expert count, every replica of a group stays inside one node (the
        node-aware optimal planner), as EPLB's hierarchical policy keeps groups on nodes. In
        every other case, including shapes EPLB asserts on such as a GPU count that is not a
        multiple of the node count, and for a layer whose groups cannot be kept inside nodes,
        the layer is placed over the whole cluster (the global policy). Either way no GPU
        holds two replicas of one expert, so ``num_replicas // num_gpus`` must not exceed the
        expert count.

    Raises:
        ValueError: with the planner's message, naming the argument, for NaN, infinite or
            negative loads, an empty or ragged ``weight``, zero GPUs, groups or nodes,
            ``num_replicas`` not a multiple of ``num_gpus``, fewer replicas than experts, more
            slots per GPU than experts, counts beyond 2**63 - 1, or an
            ``old_global_expert_indices`` of the wrong shape, with an id out of range or
            missing an expert.
        TypeError: for complex, string, date/time or masked arrays, and counts that are not
            integers.
        moe_planner.TooLargeError: (a ``ValueError``) when the returned
            ``logical_to_physical_map`` (``layers x experts x (num_replicas - experts + 1)``)
            would exceed 2**26 entries, checked before anything is planned or allocated.
        KeyboardInterrupt: on Ctrl-C, within 50 ms.

    Example:
        The example of EPLB's README (2 layers, 12 experts, 16 replicas on 8 GPUs in 2 nodes):

        >>> import numpy as np
        >>> from moe_planner.eplb import rebalance_experts
        >>> weight = [[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
        ...           [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27]]
        >>> phy2log, log2phy, logcnt = rebalance_experts(weight, 16, 4, 2, 8)
        >>> phy2log.shape, log2phy.shape, logcnt.shape
        ((2, 16), (2, 12, 5), (2, 12))
        >>> bool((logcnt.sum(axis=1) == 16).all())
        True
        >>> gpus = phy2log.reshape(2, 8, 2)  # two slots per GPU
        >>> bool((gpus[..., 0] != gpus[..., 1]).all())  # never one expert twice on a GPU
        True
        >>> again, _, _ = rebalance_experts(weight, 16, 4, 2, 8, phy2log)  # same loads
        >>> bool((again == phy2log).all())  # nothing moves
        True
    """
    r = rebalance_with_diagnostics(weight, num_replicas, num_groups, num_nodes, num_gpus, old_global_expert_indices)
    return r.physical_to_logical_map, r.logical_to_physical_map, r.expert_count

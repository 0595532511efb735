"""A drop-in for DeepSeek's EPLB (``deepseek-ai/EPLB``, ``eplb.rebalance_experts``).

Change one import and keep the call::

    # from eplb import rebalance_experts
    from moe_planner.eplb import rebalance_experts

The replicas are placed by moe-planner's optimal planner instead of EPLB's greedy heuristic: the
busiest GPU carries the least load the planner can find (proved optimal on small instances, and
never above EPLB on the published examples), and no GPU ever holds two replicas of one expert
(EPLB can, deepseek-ai/EPLB issue 22).
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from . import _native
from ._arrays import count, floats

__all__ = ["rebalance_experts"]


def rebalance_experts(
    weight: Any,
    num_replicas: int,
    num_groups: int,
    num_nodes: int,
    num_gpus: int,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replicate and place every layer's experts; EPLB's arguments and return shapes.

    Args:
        weight: ``[layers, experts]`` load of each logical expert (token counts or any
            non-negative unit): a numpy array, a nested list, or anything with ``__array__``.
            A torch tensor is detached and copied to the CPU first (any device or dtype).
        num_replicas: physical expert slots in the cluster, a multiple of ``num_gpus`` and at
            least ``experts``; slot ``s`` lives on GPU ``s // (num_replicas // num_gpus)``.
        num_groups: expert groups (contiguous experts, DeepSeek-V3 group-limited routing).
        num_nodes: server nodes; GPUs are numbered node by node.
        num_gpus: GPUs in the cluster.

    Returns:
        ``(physical_to_logical_map, logical_to_physical_map, expert_count)``, numpy ``int64``:

        * ``physical_to_logical_map[layers, num_replicas]``: the logical expert of each slot;
        * ``logical_to_physical_map[layers, experts, num_replicas - experts + 1]``: the slots
          of each expert, padded with ``-1`` (EPLB's width);
        * ``expert_count[layers, experts]``: replicas of each expert.

        Convert with ``torch.from_numpy`` where a tensor is needed.

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
        ValueError: with the planner's message for NaN, infinite or negative loads, an empty or
            ragged ``weight``, zero GPUs, groups or nodes, ``num_replicas`` not a multiple of
            ``num_gpus``, fewer replicas than experts, or more slots per GPU than experts.
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
    """
    w = floats(weight, "weight", 2, "[layers, experts]")
    return _native.rebalance_experts(
        w,
        count(num_replicas, "num_replicas"),
        count(num_groups, "num_groups"),
        count(num_nodes, "num_nodes"),
        count(num_gpus, "num_gpus"),
    )

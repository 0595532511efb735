"""moe-planner as SGLang's EPLB algorithm.

SGLang computes expert placements in ``sglang.srt.eplb.eplb_algorithms.rebalance_experts(
tokens_per_expert, num_physical_experts, num_local_physical_experts, num_groups, num_nodes,
algorithm)``, with ``tokens_per_expert`` ``[buffer, layers, logical experts]`` summed over the
buffer, and expects ``(physical_to_logical_map, logical_to_all_physical_map, expert_count)``
back (the middle one ``-1`` padded to ``num_physical_experts - experts + 1``). There is no
registry, so there are two ways in:

* **Static**: ``moe-planner place --loads dump.json --out DIR`` writes the plan in SGLang's
  format; start SGLang with ``--init-expert-location DIR/expert_location.json`` (no code runs
  inside SGLang).
* **Dynamic**: call :func:`install` at start-up in every SGLang process, before the first
  rebalance, for example from a ``sitecustomize.py`` on ``PYTHONPATH``::

      # sitecustomize.py
      import moe_planner.sglang
      moe_planner.sglang.install()

  SGLang's dispatcher is then this module's :func:`rebalance_experts`. With
  ``use_current=True`` (the default) each rebalance starts from the placement serving now
  (``get_global_expert_location_metadata().physical_to_logical_map``), so it moves as few expert
  copies as it can; :func:`uninstall` restores SGLang's function.

``algorithm`` chooses the rule as SGLang's enum does: a name containing ``hierarchical``
(``deepseek_hierarchical``, ``deepseek_vec_hierarchical``) keeps each expert group inside one
node; any other (``deepseek``, ``deepseek_vec``, ``None``) places over the whole cluster.
SGLang's ``elasticity_aware`` algorithms place only on the ranks that are alive
(``ElasticEPStateManager``'s ``active_ranks``, which are not among the arguments): after
:func:`install` those calls, and calls with arguments this adapter does not model, go to SGLang's
own function; called directly, :func:`rebalance_experts` refuses them. SGLang's ``deepseek_vec``
algorithms score each step of the buffer (``make_redundant_experts_chunkwise`` adds up every step's
busiest replica); this adapter plans every algorithm on the buffer's sum, as SGLang's
``deepseek`` does.

Checked against SGLang 0.5.23 (``docs/reproduction.md``, issue 22): the dispatcher is looked up
as ``eplb_algorithms.rebalance_experts`` at every call (``ExpertLocationMetadata.init_by_eplb``),
so :func:`install` takes effect for the start-up plan from ``logical_count`` and for every
rebalance; ``--init-expert-location FILE.json`` passes every key of the file to
``init_by_mapping``, so the file holds ``physical_to_logical_map`` and nothing else (what
``place --out`` writes).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np

from ._arrays import count, floats
from ._tensors import is_torch, output
from .eplb import Diagnostics, rebalance_with_diagnostics

__all__ = ["install", "last_diagnostics", "rebalance_experts", "uninstall"]

#: The :class:`moe_planner.eplb.Diagnostics` of the latest call.
last_diagnostics: Optional[Diagnostics] = None

_original: Optional[Callable[..., Any]] = None


def _algorithm_name(algorithm: Any) -> str:
    if algorithm is None:
        return ""
    return str(getattr(algorithm, "name", algorithm))


def rebalance_experts(
    tokens_per_expert: Any,
    num_physical_experts: int,
    num_local_physical_experts: int,
    num_groups: Optional[int],
    num_nodes: int,
    algorithm: Any = None,
    *,
    current: Any = None,
    tolerance: float = 0.0,
    max_moves: Optional[int] = None,
    peer_limit: int = 1,
) -> Tuple[Any, Any, Any]:
    """SGLang's dispatcher signature and return triple, moe-planner's planners.

    Args:
        tokens_per_expert: ``[buffer, layers, experts]`` token counts (summed over the buffer,
            as SGLang does) or ``[layers, experts]``; torch (any device) or array-like.
        num_physical_experts: expert slots in the cluster.
        num_local_physical_experts: slots per GPU (the GPU count is the quotient).
        num_groups: expert groups, or ``None`` for a model without groups.
        num_nodes: server nodes.
        algorithm: SGLang's ``EplbAlgorithm`` member or its name; ``hierarchical`` in the name
            keeps groups inside nodes.
        current: optional ``[layers, num_physical_experts]`` placement serving now; given, the
            plan moves as few expert copies as it can.
        tolerance, max_moves, peer_limit: as :func:`moe_planner.eplb.rebalance_with_diagnostics`.

    Returns:
        ``(physical_to_logical_map [layers, R], logical_to_all_physical_map [layers, E,
        R - E + 1] (-1 padded), expert_count [layers, E])``: CPU ``int64`` torch tensors for a
        torch input, numpy arrays otherwise.

    Raises:
        ValueError, TypeError: naming the argument, as :func:`moe_planner.eplb.rebalance_experts`;
            ``ValueError`` when ``num_local_physical_experts`` does not divide
            ``num_physical_experts``, and naming ``algorithm`` for SGLang's
            ``elasticity_aware`` algorithms (they need the live ranks).
    """
    global last_diagnostics
    torch_in = is_torch(tokens_per_expert)
    ndim = len(getattr(tokens_per_expert, "shape", np.shape(tokens_per_expert)))
    if ndim == 3:
        w = floats(tokens_per_expert, "tokens_per_expert", 3, "[buffer, layers, experts]").sum(axis=0)
    else:
        w = floats(tokens_per_expert, "tokens_per_expert", 2, "[layers, experts] or [buffer, layers, experts]")
    physical = count(num_physical_experts, "num_physical_experts")
    local = count(num_local_physical_experts, "num_local_physical_experts")
    if local == 0 or physical % local != 0:
        raise ValueError(
            f"num_local_physical_experts ({local}) must divide num_physical_experts ({physical})"
        )
    name = _algorithm_name(algorithm)
    if name.startswith("elasticity_aware"):
        raise ValueError(
            f"algorithm: {name} places on SGLang's active ranks, which this adapter does not see; "
            "use SGLang's own function (install() hands these calls to it)"
        )
    hierarchical = "hierarchical" in name
    groups = 1 if num_groups is None else max(count(num_groups, "num_groups"), 1)
    nodes = count(num_nodes, "num_nodes") if hierarchical else 1
    r = rebalance_with_diagnostics(
        w,
        physical,
        groups,
        nodes,
        physical // local,
        current,
        tolerance=tolerance,
        max_moves=max_moves,
        peer_limit=peer_limit,
    )
    last_diagnostics = r.diagnostics
    return tuple(output(np.asarray(a), torch_in) for a in (r.physical_to_logical_map, r.logical_to_physical_map, r.expert_count))  # type: ignore[return-value]


def _current_map(shape: Tuple[int, int]) -> Any:
    """SGLang's placement serving now, when it has one of that shape."""
    try:
        from sglang.srt.eplb.expert_location import get_global_expert_location_metadata  # type: ignore

        metadata = get_global_expert_location_metadata()
        current = getattr(metadata, "physical_to_logical_map", None)
        if current is not None and tuple(current.shape) == tuple(shape):
            current = current.detach().cpu() if is_torch(current) else current
            # A slot without an expert (-1) is no placement to move from: plan afresh.
            return None if bool((np.asarray(current) < 0).any()) else current
    except Exception:
        pass
    return None


def install(use_current: bool = True, **settings: Any) -> None:
    """Replaces ``sglang.srt.eplb.eplb_algorithms.rebalance_experts`` with this module's.

    Args:
        use_current: start every rebalance from SGLang's placement serving now (fewest moves).
        settings: ``tolerance``, ``max_moves`` or ``peer_limit`` for every call.

    Raises:
        ImportError: when SGLang is not installed.
        TypeError: for a setting other than those three.
    """
    global _original
    from sglang.srt.eplb import eplb_algorithms  # type: ignore

    unknown = set(settings) - {"tolerance", "max_moves", "peer_limit"}
    if unknown:
        raise TypeError(f"install() got unknown settings: {sorted(unknown)}")

    def dispatcher(
        tokens_per_expert: Any,
        num_physical_experts: int,
        num_local_physical_experts: int,
        num_groups: Optional[int],
        num_nodes: int,
        algorithm: Any = None,
        **extra: Any,
    ) -> Tuple[Any, Any, Any]:
        if (extra or _algorithm_name(algorithm).startswith("elasticity_aware")) and _original is not None:
            # Arguments or state this adapter does not model (elastic EP's active or broken
            # ranks): SGLang's own algorithm decides, rather than a plan that ignores them.
            return _original(
                tokens_per_expert=tokens_per_expert,
                num_physical_experts=num_physical_experts,
                num_local_physical_experts=num_local_physical_experts,
                num_groups=num_groups,
                num_nodes=num_nodes,
                algorithm=algorithm,
                **extra,
            )
        shape = getattr(tokens_per_expert, "shape", np.shape(tokens_per_expert))
        current = _current_map((shape[-2], num_physical_experts)) if use_current else None
        return rebalance_experts(
            tokens_per_expert,
            num_physical_experts,
            num_local_physical_experts,
            num_groups,
            num_nodes,
            algorithm,
            current=current,
            **settings,
        )

    if _original is None:
        _original = eplb_algorithms.rebalance_experts
    eplb_algorithms.rebalance_experts = dispatcher


def uninstall() -> None:
    """Restores SGLang's own ``rebalance_experts`` after :func:`install`."""
    global _original
    if _original is None:
        return
    from sglang.srt.eplb import eplb_algorithms  # type: ignore

    eplb_algorithms.rebalance_experts = _original
    _original = None

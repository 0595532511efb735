"""moe-planner as a vLLM expert-parallel load-balancing (EPLB) policy.

vLLM looks its EPLB policy up by name (``EPLB_POLICIES[eplb_config.policy]`` in
``vllm/distributed/eplb/policy/__init__.py``, used by ``eplb_state.py``) and calls the class
method ``rebalance_experts(weight, num_replicas, num_groups, num_nodes, num_ranks,
old_global_expert_indices=None)`` with CPU torch tensors; it expects the new
``physical_to_logical_map`` ``[layers, num_replicas]`` back as a CPU tensor (older vLLM
releases, whose abstract policy has no ``old_global_expert_indices``, expect EPLB's three
tables; :class:`MoePlannerEplbPolicy` answers in whichever form the installed vLLM declares).

Installed with pip, the package declares a ``vllm.general_plugins`` entry point
(:func:`vllm_plugin`), so every vLLM process registers the policy as ``moe_planner`` at start-up.
vLLM (0.33.0, checked against the installed package) validates ``--eplb-config``'s ``policy``
against a fixed list (``EPLBPolicyOption = Literal["default"]``) and refuses ``moe_planner``
there, so the way in is to install the policy under ``default``::

    pip install moe-planner
    MOE_PLANNER_VLLM_REPLACE_DEFAULT=1 vllm serve ... --enable-expert-parallel --enable-eplb

(``--eplb-config '{"policy": "moe_planner"}'`` works only with a vLLM whose config accepts
registered names.) In code: ``moe_planner.vllm.register(replace_default=True)``.

During an elastic-EP resize vLLM hands over the map of the old cluster (another width, or ``-1``
in the slots of ranks that just joined); the policy then plans afresh (``last_diagnostics.moves``
is ``None``), as vLLM's default does.

Differences from vLLM's default policy, which re-plans with DeepSeek's EPLB and keeps an
expert's slot only when the expert stays on the same GPU: the busiest GPU's load is minimized
(not greedily balanced), no GPU holds two replicas of one expert, and given the current map the
plan is a fewest-move rebalance, so unchanged loads move nothing and drifted loads move a
fraction of what a fresh plan moves. :func:`vllm_default_baseline` reproduces the default
policy's published behaviour for side-by-side comparisons.

Settings (class attributes, each read from an environment variable at import):

* ``tolerance`` (``MOE_PLANNER_TOLERANCE``, default 0): allowed relative excess of the busiest
  GPU's load over the best found, traded for fewer copies;
* ``max_moves`` (``MOE_PLANNER_MAX_MOVES``, default none): at most this many copies per layer;
* ``peer_limit`` (``MOE_PLANNER_PEER_LIMIT``, default 1): copies one GPU sends and receives per
  migration round in the diagnostics;
* ``return_tables`` (``MOE_PLANNER_VLLM_RETURN_TABLES``: ``1`` or ``0``; default: what the
  installed vLLM's abstract policy declares, the map alone without vLLM).

Determinism: vLLM computes the policy on every expert-parallel rank and the ranks must agree, so
the plans and rebalances here run without a wall-clock budget that could decide (an hour per
layer; the deterministic step budget and the searches' own limits bound the work), and the same
inputs give the same map on every rank.

After each call ``MoePlannerEplbPolicy.last_diagnostics`` holds the
:class:`moe_planner.eplb.Diagnostics` (moves, loads, migration rounds) of that call.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Optional

import numpy as np

from ._arrays import count, floats, ids
from ._tensors import integer_dtype, is_torch, output
from .eplb import Diagnostics, rebalance_with_diagnostics

__all__ = [
    "POLICY_NAME",
    "MoePlannerEplbPolicy",
    "register",
    "vllm_default_baseline",
    "vllm_plugin",
]

#: The name the policy is registered under in vLLM's ``EPLB_POLICIES``.
POLICY_NAME = "moe_planner"

try:  # vLLM is optional: the class is a plain class without it.
    from vllm.distributed.eplb.policy.abstract import AbstractEplbPolicy as _Base  # type: ignore
except Exception:  # ImportError, or a vLLM that fails to import on this machine
    _Base = object


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as e:
        raise ValueError(f"environment variable {name}={raw!r} is not a number") from e


def _env_int(name: str, default: Optional[int]) -> Optional[int]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return count(int(raw), name)
    except (TypeError, ValueError) as e:
        raise ValueError(f"environment variable {name}={raw!r} is not a non-negative integer") from e


def _env_flag(name: str) -> Optional[bool]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    return raw.strip().lower() in ("1", "true", "yes", "on")


def _vllm_wants_tables() -> bool:
    """Whether the installed vLLM's abstract policy returns three tables (older releases)."""
    if _Base is object:
        return False
    method = getattr(_Base, "rebalance_experts", None)
    if method is None:
        return False
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return False
    if "old_global_expert_indices" not in sig.parameters:
        return True
    ret = sig.return_annotation
    text = ret if isinstance(ret, str) else repr(ret)
    return text.lower().startswith("tuple") or "tuple[" in text.lower()


class MoePlannerEplbPolicy(_Base):  # type: ignore[misc, valid-type]
    """vLLM's EPLB policy contract, moe-planner's planners (see the module documentation)."""

    tolerance: float = _env_float("MOE_PLANNER_TOLERANCE", 0.0)
    max_moves: Optional[int] = _env_int("MOE_PLANNER_MAX_MOVES", None)
    peer_limit: int = _env_int("MOE_PLANNER_PEER_LIMIT", 1)  # type: ignore[assignment]
    return_tables: Optional[bool] = _env_flag("MOE_PLANNER_VLLM_RETURN_TABLES")
    last_diagnostics: Optional[Diagnostics] = None

    @classmethod
    def rebalance_experts(
        cls,
        weight: Any,
        num_replicas: int,
        num_groups: int,
        num_nodes: int,
        num_ranks: int,
        old_global_expert_indices: Any = None,
    ) -> Any:
        """vLLM's entry point: the new ``physical_to_logical_map`` ``[layers, num_replicas]``.

        Args:
            weight: ``[layers, logical experts]`` load statistics (a ``[windows, layers,
                experts]`` window is summed over its first axis).
            num_replicas: physical experts, a multiple of ``num_ranks``.
            num_groups: expert groups (0, as vLLM passes for models without groups, means one).
            num_nodes: server nodes; with ``num_groups`` a multiple of it, groups stay inside
                nodes.
            num_ranks: expert-parallel ranks (GPUs).
            old_global_expert_indices: the current ``physical_to_logical_map``; given, the
                plan moves as few expert copies as it can.

        Returns:
            A CPU tensor (torch in) or numpy array, in the dtype of
            ``old_global_expert_indices`` when it is a torch integer tensor, else ``int64``;
            EPLB's three tables when :attr:`return_tables` (or the installed vLLM) asks.

        Raises:
            ValueError, TypeError: as :func:`moe_planner.eplb.rebalance_experts`, naming the
                argument.
        """
        torch_in = is_torch(weight)
        w = floats(weight, "weight", 3, "[windows, layers, experts]") if _ndim(weight) == 3 else weight
        if isinstance(w, np.ndarray) and w.ndim == 3:
            w = w.sum(axis=0)
        groups = count(num_groups, "num_groups")
        current = old_global_expert_indices
        if current is not None and _resized(current, count(num_replicas, "num_replicas")):
            current = None
        r = rebalance_with_diagnostics(
            w,
            num_replicas,
            max(groups, 1),
            num_nodes,
            num_ranks,
            current,
            tolerance=cls.tolerance,
            max_moves=cls.max_moves,
            peer_limit=cls.peer_limit,
        )
        cls.last_diagnostics = r.diagnostics
        dtype = integer_dtype(old_global_expert_indices)
        p2l = r.physical_to_logical_map
        if torch_in and not is_torch(p2l):
            p2l = output(np.asarray(p2l), True, dtype)
        tables = cls.return_tables if cls.return_tables is not None else _vllm_wants_tables()
        if tables:
            return p2l, _as(r.logical_to_physical_map, torch_in, dtype), _as(r.expert_count, torch_in, dtype)
        return p2l


def _resized(old: Any, num_replicas: int) -> bool:
    """Whether vLLM handed over a map from an elastic-EP resize rather than a placement.

    While expert parallelism scales (``enable_elastic_ep``), ``eplb_state.py`` passes the map of
    the old cluster: narrower or wider than ``num_replicas`` (scale-down), or with ``-1`` in the
    slots of ranks that have just joined (scale-up, ``reconfigure_physical_expert_slots``).
    Neither is a placement of the new cluster to move from, so the policy plans afresh, as
    vLLM's default policy then re-plans too.
    """
    a = ids(old, "old_global_expert_indices", 2, "[layers, num_replicas]")
    return a.shape[1] != num_replicas or bool((a < 0).any())


def _ndim(x: Any) -> int:
    shape = getattr(x, "shape", None)
    if shape is not None:
        return len(shape)
    return np.ndim(x)


def _as(a: Any, torch_in: bool, dtype: Any) -> Any:
    return a if (not torch_in or is_torch(a)) else output(np.asarray(a), True, dtype)


def register(name: str = POLICY_NAME, *, replace_default: bool = False) -> type:
    """Adds :class:`MoePlannerEplbPolicy` to vLLM's ``EPLB_POLICIES`` under ``name``.

    With ``replace_default=True`` it is installed under ``default`` as well, for vLLM releases
    that accept only their own policy names in ``--eplb-config``. Returns the class.

    Raises:
        ImportError: when vLLM (with its EPLB policy registry) is not installed.
    """
    from vllm.distributed.eplb import policy as registry  # type: ignore

    tables = [registry.EPLB_POLICIES]
    try:  # eplb_state imports the dict by name; normally the same object
        from vllm.distributed.eplb import eplb_state  # type: ignore

        if getattr(eplb_state, "EPLB_POLICIES", None) is not None and eplb_state.EPLB_POLICIES is not tables[0]:
            tables.append(eplb_state.EPLB_POLICIES)
    except Exception:
        pass
    for table in tables:
        table[str(name)] = MoePlannerEplbPolicy
        if replace_default:
            table["default"] = MoePlannerEplbPolicy
    return MoePlannerEplbPolicy


def vllm_plugin() -> None:
    """The ``vllm.general_plugins`` entry point: :func:`register` in every vLLM process.

    Registers under ``moe_planner``; with ``MOE_PLANNER_VLLM_REPLACE_DEFAULT=1`` under
    ``default`` too. Does nothing when vLLM has no EPLB policy registry.
    """
    try:
        register(replace_default=bool(_env_flag("MOE_PLANNER_VLLM_REPLACE_DEFAULT")))
    except ImportError:
        pass


def vllm_default_baseline(
    weight: Any,
    num_replicas: int,
    num_groups: int,
    num_nodes: int,
    num_ranks: int,
    old_global_expert_indices: Any = None,
) -> np.ndarray:
    """vLLM's default policy as published, for side-by-side comparisons (a named baseline).

    DeepSeek's EPLB re-plans from scratch (its hierarchical policy when ``num_groups`` is a
    multiple of ``num_nodes``, the global one otherwise, as vLLM's ``DefaultEplbPolicy``), then,
    given the current map, each GPU's new experts are laid out so that an expert the GPU held
    before keeps its old slot (``preserve_intragpu_slots``): copies inside a GPU are saved,
    copies across GPUs are not minimized. Written from vLLM's description, not its code;
    checked against vLLM 0.33.0's ``DefaultEplbPolicy``: the same maps where loads do not tie,
    the same balance and copies within 0.3% on 58 x 256 integer loads (ties broken otherwise).

    Returns:
        ``int64 [layers, num_replicas]``: the new ``physical_to_logical_map`` (numpy).
    """
    from ._placement import place

    w = floats(weight, "weight", 2, "[layers, experts]")
    replicas = count(num_replicas, "num_replicas")
    ranks = count(num_ranks, "num_ranks")
    nodes = count(num_nodes, "num_nodes")
    groups = max(count(num_groups, "num_groups"), 1)
    if ranks == 0 or replicas % ranks != 0:
        raise ValueError(f"num_replicas ({replicas}) must be a multiple of num_ranks ({ranks})")
    if ranks % max(nodes, 1) != 0:
        nodes = 1  # as vLLM does when the ranks do not split evenly over nodes
    slots = replicas // ranks
    plan = place(w, ranks, slots, nodes=max(nodes, 1), groups=groups if w.shape[1] % groups == 0 else None, policy="eplb")
    new = np.array(plan.physical_to_logical_map, dtype=np.int64)
    if old_global_expert_indices is None:
        return new
    old = np.asarray(old_global_expert_indices.detach().cpu() if is_torch(old_global_expert_indices) else old_global_expert_indices, dtype=np.int64)
    if old.shape != new.shape:
        return new
    for layer in range(new.shape[0]):
        for g in range(ranks):
            lo, hi = g * slots, (g + 1) * slots
            wanted = list(new[layer, lo:hi])
            out = [-1] * slots
            for k, e in enumerate(old[layer, lo:hi]):
                if e in wanted:
                    wanted.remove(e)
                    out[k] = int(e)
            rest = iter(wanted)
            new[layer, lo:hi] = [e if e >= 0 else next(rest) for e in out]
    return new

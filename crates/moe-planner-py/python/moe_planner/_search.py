"""``moe_planner.iteration_search``: the fastest parallelization on a fabric (rail-only App. C)."""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Union

from . import _native
from ._arrays import count

__all__ = ["iteration_search"]


def iteration_search(
    model: Union[str, Mapping[str, Any]],
    system: Union[str, Mapping[str, Any]],
    gpus: int,
    global_batch: int,
    *,
    keep: int = 10,
    compute: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """Search tensor, pipeline and data parallelism for the fastest training iteration.

    Evaluates every ``(pp, tp, dp)`` shape, micro-batch and placement on the high-bandwidth
    (HB) domains of the rail-only paper's iteration-time model (Eq. 2-7) and keeps the fastest
    configurations that fit in memory.

    Args:
        model: a preset name (``"gpt-175b"``, ``"gpt-1t"``, ...) or a dict of the model's fields
            as in the CLI's JSON spec.
        system: a preset name (``"dgx-a100"``, ``"gh200"``, ...) or a dict with ``hb_domain``,
            ``peak_tflop_per_s``, ``hb_gb_per_s``, ``network_gbps``, ``memory_gb``,
            ``latency_us``.
        gpus: GPUs used.
        global_batch: global batch size.
        keep: configurations to keep in ``ranked``.
        compute: compute assumptions (a dict as in the CLI's JSON spec); default the paper's.

    Returns:
        The plan as a dict: ``best`` and ``ranked`` (each with ``parallelization``,
        ``iteration_time_s``, ``terms``, ``memory``, ``fits_in_memory``), ``evaluated`` and
        ``shapes``.

    Raises:
        ValueError: with the library's message for an unknown preset, an invalid model or
            system, GPUs that are not a multiple of the HB domain, ``keep = 0``, or no
            configuration that fits in memory.

    Example:
        >>> import moe_planner
        >>> plan = moe_planner.iteration_search("gpt-22b", "dgx-a100", 64, 64, keep=3)
        >>> p = plan["best"]["parallelization"]
        >>> p["tp"] * p["pp"] * p["dp"]
        64
        >>> len(plan["ranked"]) <= 3
        True
    """
    spec: Dict[str, Any] = {
        "model": model if isinstance(model, str) else dict(model),
        "system": system if isinstance(system, str) else dict(system),
        "gpus": count(gpus, "gpus"),
        "global_batch": count(global_batch, "global_batch"),
        "keep": count(keep, "keep"),
        "compute": None if compute is None else dict(compute),
    }
    try:
        text = json.dumps(spec, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"search spec: {e}") from e
    result: Dict[str, Any] = json.loads(_native.iteration_search(text))
    return result

"""``moe_planner.train_search``: plan MoE training end to end (issue 21)."""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _native
from ._arrays import count

__all__ = ["train_search"]


def train_search(
    model: Union[str, Mapping[str, Any]],
    gpus: int,
    global_batch: int,
    *,
    system: Union[str, Mapping[str, Any]] = "h100",
    seq_len: Optional[int] = None,
    top: int = 10,
    mapping: Optional[Mapping[str, Any]] = None,
    expert_loads: Optional[Sequence[float]] = None,
    zipf: Optional[float] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """Rank every valid mapping of an MoE (or dense) model on a cluster by step time.

    Evaluates TP, CP, PP with virtual stages, EP, ETP, micro-batch and recomputation (or the
    one ``mapping`` given) with the step-time model of ``rail_network::moe``: compute with a
    roofline for small expert GEMMs, expert imbalance, dispatch/combine all-to-alls on the
    fabric, Parm's schedules when ``etp > 1``, TP/CP/PP/DP communication, and memory per GPU.

    Args:
        model: a preset name (``"mixtral-8x7b"``, ``"deepseek-v3"``, ``"qwen3-235b-a22b"``,
            ...) or a dict of the model's fields as in the CLI's JSON model file.
        gpus: GPUs used.
        global_batch: sequences per step.
        system: a preset name (``"h100"``, ``"h200"``, ``"b200"``, ``"gb200-nvl72"``, ...) or a
            dict as in the CLI's JSON system file.
        seq_len: sequence length (default: the model's).
        top: mappings to return in ``configs``.
        mapping: evaluate this mapping only (``tp``, ``pp``, ``micro_batch`` and optionally
            ``cp``, ``vp``, ``ep``, ``etp``, ``recompute``).
        expert_loads: one load per routed expert (e.g. a ``logical_count`` row); every EP
            degree then gets its own imbalance factor.
        zipf: Zipf exponent of synthetic expert loads (instead of ``expert_loads``).
        options: step-model options (``expert_imbalance``, ``fabric``, ``a2a_overlap``,
            ``memory_reserve_bytes``, ``efficiency``, ``comm_sms``, ``param_sharding``
            (``"distributed_optimizer"``, ``"fsdp"``, ``"fsdp_keep_gathered"``),
            ``pipeline_schedule`` (``"one_f_one_b"``, ``"dual_pipe"``),
            ``optimizer_offload_fraction``, ``activation_offload_fraction``,
            ``bf16_optimizer_moments``, ``bf16_logits``, ``ep_all_to_all_fit``: a measured
            EP all-to-all ``{"ep": N, "alpha_s": A, "beta_s_per_byte": B}`` used instead of
            the fabric model for mappings with that EP degree and ETP 1).

    Returns:
        The plan as a dict: ``configs`` (records with ``tp, pp, vp, cp, dp, ep, etp,
        micro_batch, step_time_s, tokens_per_s_per_gpu, model_tflop_per_s_per_gpu, mfu,
        memory_bytes_per_gpu, fits, terms``), ``parameters``, ``active_parameters``,
        ``candidates``, ``valid``, ``fitting`` and ``network``.

    Raises:
        ValueError: with the library's message (naming the field) for an unknown preset, a
            mapping that does not divide, a model that fits nowhere, or NaN input.

    Example:
        >>> import moe_planner
        >>> plan = moe_planner.train_search("mixtral-8x7b", 64, 256, top=3)
        >>> len(plan["configs"]) <= 3 and plan["configs"][0]["fits"]
        True
    """
    spec: Dict[str, Any] = {
        "model": model if isinstance(model, str) else dict(model),
        "system": system if isinstance(system, str) else dict(system),
        "gpus": count(gpus, "gpus"),
        "global_batch": count(global_batch, "global_batch"),
        "search": {"keep": count(top, "top")},
    }
    if seq_len is not None:
        spec["seq_len"] = count(seq_len, "seq_len")
    if mapping is not None:
        spec["mapping"] = dict(mapping)
    if expert_loads is not None and zipf is not None:
        raise ValueError("train spec: give expert_loads or zipf, not both")
    if expert_loads is not None:
        spec["expert_loads"] = {"measured": [float(x) for x in expert_loads]}
    if zipf is not None:
        spec["expert_loads"] = {"zipf": float(zipf)}
    if options is not None:
        spec["options"] = dict(options)
    try:
        text = json.dumps(spec, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"train spec: {e}") from e
    result: Dict[str, Any] = json.loads(_native.train_search(text))
    return result

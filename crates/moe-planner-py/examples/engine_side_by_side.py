"""Issue 22's evidence: our vLLM policy against vLLM's default policy, side by side.

58 layers x 256 experts (the CLI's embedded DeepSeek-like loads), 288 slots on 32 GPUs (9 each),
then every load multiplied by exp(0.2 z - 0.02) (20% log-normal drift, numpy seed 7). Each policy
rebalances from its own plan for the old loads, as it would inside vLLM. A move is a replica on a
GPU that did not hold that expert (a weight copy between GPUs).

    python crates/moe-planner-py/examples/engine_side_by_side.py
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np

from moe_planner.vllm import MoePlannerEplbPolicy, vllm_default_baseline

ROOT = pathlib.Path(__file__).resolve().parents[3]
LOADS = ROOT / "crates/moe-planner-cli/data/deepseek_like_loads.json"


def balance(w: np.ndarray, p2l: np.ndarray, gpus: int) -> np.ndarray:
    """Per layer, the busiest GPU's load over the mean."""
    layers = np.arange(w.shape[0])[:, None]
    cnt = np.stack([np.bincount(r, minlength=w.shape[1]) for r in p2l])
    share = w[layers, p2l] / cnt[layers, p2l]
    per_gpu = share.reshape(w.shape[0], gpus, -1).sum(axis=2)
    return per_gpu.max(axis=1) / per_gpu.mean(axis=1)


def moves(old: np.ndarray, new: np.ndarray, gpus: int) -> np.ndarray:
    per = new.shape[1] // gpus
    out = []
    for o, n in zip(old, new):
        total = 0
        for g in range(gpus):
            had = set(o[g * per : (g + 1) * per].tolist())
            total += sum(1 for e in n[g * per : (g + 1) * per] if e not in had)
        out.append(total)
    return np.array(out)


def main() -> None:
    raw = json.loads(LOADS.read_text())["logical_count"]
    old_w = np.asarray(raw, dtype=np.float64)
    if old_w.ndim == 3:
        old_w = old_w.sum(axis=0)
    rng = np.random.default_rng(7)
    new_w = np.round(old_w * np.exp(0.2 * rng.standard_normal(old_w.shape) - 0.02))
    gpus, replicas = 32, 288
    print(f"loads {old_w.shape[0]} x {old_w.shape[1]}, {replicas} slots on {gpus} GPUs, 20% drift")
    print("| rule | policy | max/mean after (mean / worst layer) | moves per layer (mean) | total moves | time |")
    print("|---|---|---|---|---|---|")
    for groups, nodes, rule in [(8, 1, "global (1 node)"), (8, 4, "hierarchical (4 nodes, 8 groups)")]:
        t = time.perf_counter()
        ours_old = MoePlannerEplbPolicy.rebalance_experts(old_w, replicas, groups, nodes, gpus)
        t = time.perf_counter()
        ours_new = MoePlannerEplbPolicy.rebalance_experts(new_w, replicas, groups, nodes, gpus, ours_old)
        ours_s = time.perf_counter() - t
        rounds = MoePlannerEplbPolicy.last_diagnostics.rounds
        base_old = vllm_default_baseline(old_w, replicas, groups, nodes, gpus)
        t = time.perf_counter()
        base_new = vllm_default_baseline(new_w, replicas, groups, nodes, gpus, base_old)
        base_s = time.perf_counter() - t
        MoePlannerEplbPolicy.tolerance = 0.005  # about EPLB's excess over the best balance
        loose = MoePlannerEplbPolicy.rebalance_experts(new_w, replicas, groups, nodes, gpus, ours_old)
        MoePlannerEplbPolicy.tolerance = 0.0
        stay = balance(new_w, ours_old, gpus)
        for name, old, new, secs in [
            ("no move (old plan, new loads)", ours_old, ours_old, 0.0),
            ("moe_planner (fewest moves)", ours_old, ours_new, ours_s),
            ("moe_planner, tolerance 0.005 (MOE_PLANNER_TOLERANCE)", ours_old, loose, 0.0),
            ("vLLM default (EPLB + same-GPU slots)", base_old, base_new, base_s),
        ]:
            b = balance(new_w, new, gpus)
            m = moves(old, new, gpus)
            print(f"| {rule} | {name} | {b.mean():.4f} / {b.max():.4f} | {m.mean():.1f} | {m.sum()} | {secs:.2f} s |")
        print(f"| {rule} | (old plan under the new loads: {stay.mean():.4f}; our migration rounds per layer, one peer at a time: mean {rounds.mean():.1f}, max {rounds.max()}) | | | | |")


if __name__ == "__main__":
    main()

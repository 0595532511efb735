"""Issue 22's evidence: our vLLM policy against vLLM's default policy, side by side.

58 layers x 256 experts (the CLI's embedded DeepSeek-like loads), 288 slots on 32 GPUs (9 each),
then every load multiplied by exp(0.2 z - 0.02) (20% log-normal drift, numpy seed 7). Each policy
rebalances from its own plan for the old loads, as it would inside vLLM. A move is a replica on a
GPU that did not hold that expert (a weight copy between GPUs).

    python crates/moe-planner-py/examples/engine_side_by_side.py

Where vLLM is installed (issue 22's throwaway environment, docs/reproduction.md), vLLM's own code
runs on the same input: its ``DefaultEplbPolicy`` (the real baseline, next to our
re-implementation of it), and every plan's copies go through vLLM's own migration scheduler
(``schedule_migration_batches_for_layers``: batches in which each rank talks to one peer). Where
SGLang is installed, its own algorithms run next to ours through its dispatcher's arguments.
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np

import moe_planner
from moe_planner.vllm import MoePlannerEplbPolicy, vllm_default_baseline

# DeepSeek-V3: three 7168 x 2048 FP8 matrices per expert.
EXPERT_BYTES = 3 * 7168 * 2048

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


def real_vllm():
    """vLLM's default policy and migration scheduler, or ``None`` without vLLM."""
    try:
        import torch
        import vllm
        from vllm.distributed.eplb.migration_scheduler import schedule_migration_batches_for_layers
        from vllm.distributed.eplb.policy.default import DefaultEplbPolicy
    except Exception:
        return None

    def default(w, replicas, groups, nodes, gpus, old=None):
        t = torch.from_numpy(np.ascontiguousarray(w))
        o = None if old is None else torch.from_numpy(np.ascontiguousarray(old))
        return DefaultEplbPolicy.rebalance_experts(t, replicas, groups, nodes, gpus, o).numpy()

    def batches(old, new, gpus):
        b = schedule_migration_batches_for_layers(old.shape[1] // gpus, np.asarray(old), np.asarray(new))
        return np.array([len(layer) for layer in b])

    return vllm.__version__, default, batches


def main() -> None:
    raw = json.loads(LOADS.read_text())["logical_count"]
    old_w = np.asarray(raw, dtype=np.float64)
    if old_w.ndim == 3:
        old_w = old_w.sum(axis=0)
    rng = np.random.default_rng(7)
    new_w = np.round(old_w * np.exp(0.2 * rng.standard_normal(old_w.shape) - 0.02))
    gpus, replicas = 32, 288
    print(f"loads {old_w.shape[0]} x {old_w.shape[1]}, {replicas} slots on {gpus} GPUs, 20% drift")
    engine = real_vllm()
    print("vLLM:", engine[0] if engine else "not installed (rows from vLLM's own code skipped)")
    print("| rule | policy | max/mean after (mean / worst layer) | moves per layer (mean) | total moves | time | vLLM migration batches per layer (mean / max) |")
    print("|---|---|---|---|---|---|---|")
    for groups, nodes, rule in [(8, 1, "global (1 node)"), (8, 4, "hierarchical (4 nodes, 8 groups)")]:
        t = time.perf_counter()
        ours_old = MoePlannerEplbPolicy.rebalance_experts(old_w, replicas, groups, nodes, gpus)
        t = time.perf_counter()
        ours_new = MoePlannerEplbPolicy.rebalance_experts(new_w, replicas, groups, nodes, gpus, ours_old)
        ours_s = time.perf_counter() - t
        d = MoePlannerEplbPolicy.last_diagnostics
        rounds = d.rounds
        # Every layer's rounds meet König's bound: the most copies one GPU sends or receives.
        for layer in range(old_w.shape[0]):
            t = d.transfers[d.transfers[:, 0] == layer]
            busiest = max([0, *np.bincount(t[:, 2]).tolist(), *np.bincount(t[:, 3]).tolist()]) if len(t) else 0
            assert rounds[layer] == busiest, (layer, rounds[layer], busiest)
        base_old = vllm_default_baseline(old_w, replicas, groups, nodes, gpus)
        t = time.perf_counter()
        base_new = vllm_default_baseline(new_w, replicas, groups, nodes, gpus, base_old)
        base_s = time.perf_counter() - t
        MoePlannerEplbPolicy.tolerance = 0.005  # about EPLB's excess over the best balance
        t = time.perf_counter()
        loose = MoePlannerEplbPolicy.rebalance_experts(new_w, replicas, groups, nodes, gpus, ours_old)
        loose_s = time.perf_counter() - t
        MoePlannerEplbPolicy.tolerance = 0.0
        stay = balance(new_w, ours_old, gpus)
        rows = [
            ("no move (old plan, new loads)", ours_old, ours_old, 0.0),
            ("moe_planner (fewest moves)", ours_old, ours_new, ours_s),
            ("moe_planner, tolerance 0.005 (MOE_PLANNER_TOLERANCE)", ours_old, loose, loose_s),
            ("vLLM default (EPLB + same-GPU slots)", base_old, base_new, base_s),
        ]
        if engine is not None:
            real_old = engine[1](old_w, replicas, groups, nodes, gpus)
            t = time.perf_counter()
            real_new = engine[1](new_w, replicas, groups, nodes, gpus, real_old)
            real_s = time.perf_counter() - t
            rows.append((f"vLLM {engine[0]} DefaultEplbPolicy (vLLM's code)", real_old, real_new, real_s))
            same = np.array_equal(real_old, base_old) and np.array_equal(real_new, base_new)
            print(f"| {rule} | (our re-implementation of vLLM's default gives {'the same maps as' if same else 'other maps than'} vLLM's code) | | | | | |")
        for name, old, new, secs in rows:
            b = balance(new_w, new, gpus)
            m = moves(old, new, gpus)
            nb = engine[2](old, new, gpus) if engine is not None else None
            batches = f"{nb.mean():.1f} / {nb.max()}" if nb is not None else ""
            print(f"| {rule} | {name} | {b.mean():.4f} / {b.max():.4f} | {m.mean():.1f} | {m.sum()} | {secs:.2f} s | {batches} |")
        print(f"| {rule} | (old plan under the new loads: {stay.mean():.4f}; our migration rounds per layer, one peer at a time: mean {rounds.mean():.1f}, max {rounds.max()}) | | | | | |")

    sglang_rows(old_w, new_w, gpus, replicas)
    advisor(old_w, new_w, gpus)


def sglang_rows(old_w: np.ndarray, new_w: np.ndarray, gpus: int, replicas: int) -> None:
    """Where SGLang is installed: its own algorithms against ours through its dispatcher."""
    try:
        import sglang
        import torch
        from sglang.srt.eplb import eplb_algorithms
    except Exception:
        print("\nSGLang: not installed (its rows skipped)")
        return
    import moe_planner.sglang as adapter

    print(f"\nSGLang {sglang.__version__}: its dispatcher, {replicas} slots on {gpus} GPUs, 8 groups, 4 nodes")
    print("| algorithm | planner | max/mean, old loads (mean / worst) | after the drift (mean / worst) | copies per layer | time (drift) |")
    print("|---|---|---|---|---|---|")
    old_t = torch.from_numpy(old_w)[None]
    new_t = torch.from_numpy(new_w)[None]
    for algorithm in ["deepseek", "deepseek_hierarchical", "deepseek_vec", "deepseek_vec_hierarchical"]:
        enum = eplb_algorithms.EplbAlgorithm[algorithm]
        call = dict(num_physical_experts=replicas, num_local_physical_experts=replicas // gpus, num_groups=8, num_nodes=4, algorithm=enum)
        theirs_old = eplb_algorithms.rebalance_experts(tokens_per_expert=old_t, **call)[0].numpy()
        t = time.perf_counter()
        theirs_new = eplb_algorithms.rebalance_experts(tokens_per_expert=new_t, **call)[0].numpy()
        theirs_s = time.perf_counter() - t
        ours_old = adapter.rebalance_experts(old_t, **call)[0].numpy()
        t = time.perf_counter()
        # install(use_current=True) passes the placement serving now as `current`.
        ours_new = adapter.rebalance_experts(new_t, **call, current=ours_old)[0].numpy()
        ours_s = time.perf_counter() - t
        for name, old, new, secs in [("SGLang's own", theirs_old, theirs_new, theirs_s), ("moe_planner (install())", ours_old, ours_new, ours_s)]:
            a, b = balance(old_w, old, gpus), balance(new_w, new, gpus)
            print(f"| {algorithm} | {name} | {a.mean():.4f} / {a.max():.4f} | {b.mean():.4f} / {b.max():.4f} | {moves(old, new, gpus).mean():.1f} | {secs:.2f} s |")


def advisor(old_w: np.ndarray, new_w: np.ndarray, gpus: int) -> None:
    """The advisor's prediction against the plan it recommends, and its rebalance verdict."""
    t = time.perf_counter()
    a = moe_planner.advise(old_w, gpus, max_redundant=96, target_imbalance=1.01)
    secs = time.perf_counter() - t
    print(f"\nadvisor on the old loads ({secs:.2f} s): target 1.01")
    print("| redundant | ours max/mean (worst) | EPLB max/mean (worst) |")
    print("|---|---|---|")
    for p in a["points"]:
        print(f"| {p['redundant']} | {p['imbalance']:.4f} ({p['worst_layer_imbalance']:.4f}) | {p['baseline_imbalance']:.4f} ({p['baseline_worst_layer_imbalance']:.4f}) |")
    r = a.get("recommended_redundant")
    print(f"recommended: ours {r}, EPLB {a.get('baseline_recommended_redundant')}")
    if r is not None:
        replicas = old_w.shape[1] + r
        plan = MoePlannerEplbPolicy.rebalance_experts(old_w, replicas, 1, 1, gpus)
        predicted = next(p["imbalance"] for p in a["points"] if p["redundant"] == r)
        print(f"predicted {predicted:.4f}, the vLLM policy's plan with {r} redundant: {balance(old_w, plan, gpus).mean():.4f} on the same loads, {balance(new_w, plan, gpus).mean():.4f} on the next (drifted) window")
        for name, w in [("unchanged loads", old_w), ("20% drift", new_w)]:
            v = moe_planner.advise(w, gpus, current=plan, expert_bytes=EXPERT_BYTES, bandwidth_gbps=400)["rebalance"]
            print(f"rebalance now? {name}: {v['current_imbalance']:.4f} -> {v['rebalanced_imbalance']:.4f}, gain {100 * v['gain']:.2f}%, {v['moves']} copies, {v['transfer_rounds']} rounds, {v.get('transfer_time_s', 0):.3f} s at 400 Gbps: {'yes' if v['recommend'] else 'no'} (threshold {100 * v['min_gain']:.0f}%)")


if __name__ == "__main__":
    main()

"""Our node-aware and global plans against a numpy port of EPLB's two policies, same input, same run.

The port follows the policy deepseek-ai/EPLB publishes (``rebalance_experts``; MIT licence),
written here from its description, not copied: hierarchical = expert groups packed onto nodes
by a balanced packing, replicas within each node by the greedy that gives the next replica to
the largest per-replica load, replicas packed onto the node's GPUs by a balanced packing with
equal counts; global = the same with one node and one group. Like the original, the packings
loop in Python over each layer's items; the replication loop is vectorized over layers.

Input: 58 DeepSeek-shaped layers x 256 experts (log-normal, sigma = 1, seeded), 288 replicas on
32 GPUs in 4 nodes, 8 groups. Run after ``pip install ./crates/moe-planner-py``::

    python crates/moe-planner-py/bench/bench_eplb_numpy.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from moe_planner.eplb import rebalance_experts


def balanced_packing(weight: np.ndarray, num_packs: int) -> np.ndarray:
    """Pack index of every item of every row: heaviest first to the lightest pack with room,
    every pack taking ``items / num_packs`` items."""
    rows, items = weight.shape
    per_pack = items // num_packs
    pack_of = np.empty((rows, items), dtype=np.int64)
    for r in range(rows):
        load = [0.0] * num_packs
        count = [0] * num_packs
        for i in np.argsort(-weight[r], kind="stable"):
            best = min(
                (p for p in range(num_packs) if count[p] < per_pack), key=lambda p: load[p]
            )
            pack_of[r, i] = best
            load[best] += float(weight[r, i])
            count[best] += 1
    return pack_of


def replicate(weight: np.ndarray, replicas: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy replication of every row to ``replicas`` physical experts: returns each physical
    expert's logical expert and each logical expert's replica count."""
    rows, experts = weight.shape
    phy2log = np.tile(np.arange(replicas), (rows, 1))
    count = np.ones((rows, experts), dtype=np.int64)
    arange = np.arange(rows)
    for p in range(experts, replicas):
        best = np.argmax(weight / count, axis=1)
        phy2log[:, p] = best
        count[arange, best] += 1
    return phy2log, count


def eplb_hierarchical(weight: np.ndarray, replicas: int, groups: int, nodes: int, gpus: int):
    """EPLB's hierarchical policy: each layer's physical-to-logical map (GPU g holds slots
    ``g * replicas / gpus`` onward)."""
    layers, experts = weight.shape
    group_size = experts // groups
    per_node_groups = groups // nodes
    per_node_experts = experts // nodes
    per_node_replicas = replicas // nodes
    per_node_gpus = gpus // nodes
    node_of_group = balanced_packing(weight.reshape(layers, groups, group_size).sum(-1), nodes)
    # The experts of each node, node by node (groups in order), as rows of their own.
    node_experts = np.empty((layers, nodes, per_node_experts), dtype=np.int64)
    for layer in range(layers):
        for n in range(nodes):
            gs = np.flatnonzero(node_of_group[layer] == n)[:per_node_groups]
            node_experts[layer, n] = (gs[:, None] * group_size + np.arange(group_size)).ravel()
    rows = weight[np.arange(layers)[:, None, None], node_experts].reshape(-1, per_node_experts)
    phy2local, count = replicate(rows, per_node_replicas)
    share = (rows / count)[np.arange(rows.shape[0])[:, None], phy2local]
    gpu_of = balanced_packing(share, per_node_gpus)
    out = np.empty((layers, replicas), dtype=np.int64)
    per_gpu = per_node_replicas // per_node_gpus
    for r in range(rows.shape[0]):
        layer, n = divmod(r, nodes)
        filled = [0] * per_node_gpus
        for p in range(per_node_replicas):
            g = gpu_of[r, p]
            slot = n * per_node_replicas + g * per_gpu + filled[g]
            filled[g] += 1
            out[layer, slot] = node_experts[layer, n, phy2local[r, p]]
    return out


def max_over_mean(weight: np.ndarray, phy2log: np.ndarray, gpus: int) -> float:
    """Mean over layers of the busiest GPU over the mean GPU load (even split over replicas)."""
    layers, replicas = phy2log.shape
    ratios = []
    for layer in range(layers):
        count = np.bincount(phy2log[layer], minlength=weight.shape[1])
        share = weight[layer, phy2log[layer]] / count[phy2log[layer]]
        gpu = share.reshape(gpus, replicas // gpus).sum(1)
        ratios.append(gpu.max() / gpu.mean())
    return float(np.mean(ratios))


def median_ms(f, runs: int = 5) -> float:
    f()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    rng = np.random.default_rng(1)
    share = rng.lognormal(-0.5, 1.0, (58, 256))
    weight = np.round(256_000 * share / share.sum(1, keepdims=True))
    for name, groups, nodes in [("node-aware vs EPLB hierarchical", 8, 4), ("global vs EPLB global", 1, 1)]:
        ours_ms = median_ms(lambda: rebalance_experts(weight, 288, groups, nodes, 32))
        theirs_ms = median_ms(lambda: eplb_hierarchical(weight, 288, groups, nodes, 32))
        ours = max_over_mean(weight, np.asarray(rebalance_experts(weight, 288, groups, nodes, 32)[0]), 32)
        theirs = max_over_mean(weight, eplb_hierarchical(weight, 288, groups, nodes, 32), 32)
        print(
            f"{name}: ours {ours:.4f} in {ours_ms:.1f} ms, numpy EPLB {theirs:.4f} in {theirs_ms:.1f} ms "
            f"(ours {theirs_ms / ours_ms:.2f}x its speed)"
        )


if __name__ == "__main__":
    main()

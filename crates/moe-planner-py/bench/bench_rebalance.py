"""Time of ``moe_planner.eplb.rebalance_experts`` on the DeepSeek-shaped input.

58 layers x 256 experts, 288 replicas on 32 GPUs, the loads of
``examples/drop_in_timing.rs`` (which times the Rust core on the same array). Run after
``pip install ./crates/moe-planner-py``::

    python crates/moe-planner-py/bench/bench_rebalance.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from moe_planner import _native
from moe_planner.eplb import rebalance_experts


def loads() -> np.ndarray:
    layer = np.arange(58, dtype=np.int64)[:, None]
    expert = np.arange(256, dtype=np.int64)[None, :]
    return (25_600 // (1 + (expert * 37 + layer * 11) % 256)).astype(np.int64)


def median_ms(f, runs: int = 11) -> float:
    f()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    w = loads()
    w64 = np.ascontiguousarray(w, dtype=np.float64)
    as_list = w.tolist()
    for name, groups, nodes in [("global (1 node)", 1, 1), ("node-aware (8 groups, 4 nodes)", 8, 4)]:
        native = median_ms(lambda: _native.rebalance_experts(w64, 288, groups, nodes, 32))
        from_int = median_ms(lambda: rebalance_experts(w, 288, groups, nodes, 32))
        from_list = median_ms(lambda: rebalance_experts(as_list, 288, groups, nodes, 32))
        print(
            f"{name}: native call on float64 {native:.2f} ms, "
            f"from an int64 array {from_int:.2f} ms, from nested lists {from_list:.2f} ms"
        )


if __name__ == "__main__":
    main()

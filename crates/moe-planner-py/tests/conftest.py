"""Shared helpers of the tests: EPLB's README example and the invariants every placement keeps."""

from __future__ import annotations

import numpy as np
import pytest

# deepseek-ai/EPLB README: 2 layers x 12 experts, 16 replicas, 4 groups, 2 nodes, 8 GPUs.
README_WEIGHT = [
    [90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
    [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27],
]


@pytest.fixture
def readme_weight() -> np.ndarray:
    return np.array(README_WEIGHT, dtype=np.int64)


def gpu_loads(weight: np.ndarray, phy2log: np.ndarray, logcnt: np.ndarray, num_gpus: int) -> np.ndarray:
    """``[layers, gpus]``: each replica carries its expert's load over the replica count."""
    w = np.asarray(weight, dtype=np.float64)
    layers = np.arange(w.shape[0])[:, None]
    share = w[layers, phy2log] / logcnt[layers, phy2log]
    return share.reshape(w.shape[0], num_gpus, -1).sum(axis=2)


def check_tables(phy2log: np.ndarray, log2phy: np.ndarray, logcnt: np.ndarray, num_gpus: int) -> None:
    """EPLB's tables agree with each other, and no GPU holds one expert twice."""
    layers, replicas = phy2log.shape
    experts = logcnt.shape[1]
    assert phy2log.dtype == log2phy.dtype == logcnt.dtype == np.int64
    assert log2phy.shape == (layers, experts, replicas - experts + 1)
    assert (logcnt >= 1).all()
    assert (logcnt.sum(axis=1) == replicas).all()
    for layer in range(layers):
        assert np.array_equal(np.bincount(phy2log[layer], minlength=experts), logcnt[layer])
        for e in range(experts):
            slots = log2phy[layer, e]
            c = logcnt[layer, e]
            assert (slots[c:] == -1).all()
            assert (phy2log[layer, slots[:c]] == e).all()
        per_gpu = phy2log[layer].reshape(num_gpus, -1)
        for row in per_gpu:
            assert len(set(row.tolist())) == len(row), f"duplicate expert on a GPU: {row}"

"""The engine adapters (issue 22): vLLM's policy contract, SGLang's dispatcher, torch in and out,
the current map honoured, and the Python boundary's exceptions.

Contract tests always run with numpy. The real engines' own code paths are in
``test_engines_real.py`` (they run where vLLM or SGLang is installed and skip with the reason
otherwise); stand-in registries test :func:`register` and :func:`install` everywhere.
"""

from __future__ import annotations

import datetime
import sys
import types

import numpy as np
import pytest
from conftest import README_WEIGHT, check_tables, gpu_loads

import moe_planner.sglang as sglang_adapter
import moe_planner.vllm as vllm_adapter
from moe_planner.eplb import rebalance_experts, rebalance_with_diagnostics
from moe_planner.vllm import MoePlannerEplbPolicy, vllm_default_baseline

W = np.array(README_WEIGHT, dtype=np.float64)


def moves(old: np.ndarray, new: np.ndarray, num_gpus: int) -> int:
    """Replicas on a GPU that did not hold that expert before (copies between GPUs)."""
    old, new = np.asarray(old), np.asarray(new)
    layers, slots = new.shape
    per = slots // num_gpus
    total = 0
    for layer in range(layers):
        for g in range(num_gpus):
            had = set(old[layer, g * per : (g + 1) * per].tolist())
            total += sum(1 for e in new[layer, g * per : (g + 1) * per] if e not in had)
    return total


def drifted(w: np.ndarray, seed: int, sigma: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(w * np.exp(sigma * rng.standard_normal(w.shape) - sigma**2 / 2))


# --- vLLM's contract ---------------------------------------------------------------------------


def test_vllm_policy_argument_order_shape_and_dtype():
    p2l = MoePlannerEplbPolicy.rebalance_experts(W, 16, 4, 1, 8)
    assert isinstance(p2l, np.ndarray) and p2l.dtype == np.int64 and p2l.shape == (2, 16)
    # The same as the drop-in on the same arguments.
    assert np.array_equal(p2l, rebalance_experts(W, 16, 4, 1, 8)[0])
    d = MoePlannerEplbPolicy.last_diagnostics
    assert d is not None and d.moves is None and d.policy == ["optimal", "optimal"]


@pytest.mark.parametrize("nodes", [1, 2])
def test_vllm_policy_honours_the_old_map(nodes):
    fresh = MoePlannerEplbPolicy.rebalance_experts(W, 16, 4, nodes, 8)
    same = MoePlannerEplbPolicy.rebalance_experts(W, 16, 4, nodes, 8, fresh)
    assert moves(fresh, same, 8) == 0
    assert list(MoePlannerEplbPolicy.last_diagnostics.moves) == [0, 0]
    new = W[:, ::-1].copy()  # every expert's load changes
    ours = MoePlannerEplbPolicy.rebalance_experts(new, 16, 4, nodes, 8, fresh)
    d = MoePlannerEplbPolicy.last_diagnostics
    from_scratch = MoePlannerEplbPolicy.rebalance_experts(new, 16, 4, nodes, 8)
    assert moves(fresh, ours, 8) <= moves(fresh, from_scratch, 8)
    assert int(d.moves.sum()) == moves(fresh, ours, 8) == len(d.transfers)
    counts = np.stack([np.bincount(r, minlength=12) for r in ours])
    l2p = np.full((2, 12, 5), -1)
    for layer in range(2):
        for e in range(12):
            slots = np.flatnonzero(ours[layer] == e)
            l2p[layer, e, : len(slots)] = slots
    check_tables(ours, l2p, counts, 8)
    if nodes == 2:
        assert d.policy == ["optimal-node-aware-rebalance"] * 2
        # Groups (3 experts each) stay inside a node.
        node_of_slot = np.arange(16) // 8
        for layer in range(2):
            for g in range(4):
                assert len(set(node_of_slot[np.isin(ours[layer], [3 * g, 3 * g + 1, 3 * g + 2])])) == 1


def test_vllm_zero_groups_means_no_groups_and_a_window_is_summed():
    a = MoePlannerEplbPolicy.rebalance_experts(W, 16, 0, 1, 8)
    b = MoePlannerEplbPolicy.rebalance_experts(np.stack([W / 2, W / 2]), 16, 0, 1, 8)
    assert np.array_equal(a, b)


def test_vllm_policy_settings_trade_balance_for_moves():
    rng = np.random.default_rng(5)
    w = rng.lognormal(0, 1, (3, 32)) * 100
    old = MoePlannerEplbPolicy.rebalance_experts(w, 48, 1, 1, 8)
    new = drifted(w, 6)
    free = MoePlannerEplbPolicy.rebalance_experts(new, 48, 1, 1, 8, old)
    free_moves = MoePlannerEplbPolicy.last_diagnostics.moves.copy()
    try:
        MoePlannerEplbPolicy.max_moves = 2
        capped = MoePlannerEplbPolicy.rebalance_experts(new, 48, 1, 1, 8, old)
        assert (MoePlannerEplbPolicy.last_diagnostics.moves <= 2).all()
        MoePlannerEplbPolicy.max_moves = None
        MoePlannerEplbPolicy.tolerance = 0.5
        loose = MoePlannerEplbPolicy.rebalance_experts(new, 48, 1, 1, 8, old)
        assert (MoePlannerEplbPolicy.last_diagnostics.moves <= free_moves).all()
    finally:
        MoePlannerEplbPolicy.max_moves = None
        MoePlannerEplbPolicy.tolerance = 0.0
    for plan in (free, capped, loose):
        assert all(len(set(row)) == 6 for row in plan.reshape(3, 8, 6).reshape(-1, 6).tolist())


def test_vllm_default_baseline_keeps_slots_on_the_same_gpu_only():
    old = vllm_default_baseline(W, 16, 4, 1, 8)
    assert vllm_default_baseline(W, 16, 4, 1, 8, old).tolist() == old.tolist()
    new = vllm_default_baseline(W[:, ::-1], 16, 4, 1, 8, old)
    # Every expert that stays on its GPU keeps its old slot.
    for layer in range(2):
        for g in range(8):
            o, n = old[layer, 2 * g : 2 * g + 2], new[layer, 2 * g : 2 * g + 2]
            for k in range(2):
                if o[k] in n:
                    assert n[k] == o[k]


class _Registry(types.ModuleType):
    EPLB_POLICIES: dict


@pytest.fixture
def stand_in_vllm(monkeypatch):
    """The modules ``register`` touches, as vLLM lays them out, with its default policy."""
    names = ["vllm", "vllm.distributed", "vllm.distributed.eplb", "vllm.distributed.eplb.policy", "vllm.distributed.eplb.eplb_state"]
    mods = {n: types.ModuleType(n) for n in names}
    policies = {"default": object}
    mods["vllm.distributed.eplb.policy"].EPLB_POLICIES = policies
    mods["vllm.distributed.eplb.eplb_state"].EPLB_POLICIES = policies
    mods["vllm.distributed.eplb"].policy = mods["vllm.distributed.eplb.policy"]
    mods["vllm.distributed.eplb"].eplb_state = mods["vllm.distributed.eplb.eplb_state"]
    for n, m in mods.items():
        monkeypatch.setitem(sys.modules, n, m)
    return policies


def test_register_and_the_plugin_install_into_the_registry(stand_in_vllm, monkeypatch):
    vllm_adapter.vllm_plugin()
    assert stand_in_vllm["moe_planner"] is MoePlannerEplbPolicy
    assert stand_in_vllm["default"] is object
    monkeypatch.setenv("MOE_PLANNER_VLLM_REPLACE_DEFAULT", "1")
    vllm_adapter.vllm_plugin()
    assert stand_in_vllm["default"] is MoePlannerEplbPolicy
    # The call as eplb_state.py makes it: look up by the configured name, positional arguments.
    policy = stand_in_vllm["moe_planner"]
    p2l = policy.rebalance_experts(W, 16, 4, 2, 8, rebalance_experts(W, 16, 4, 2, 8)[0])
    assert p2l.shape == (2, 16)


def test_the_entry_point_is_declared():
    from importlib import metadata

    eps = metadata.entry_points()
    group = eps.select(group="vllm.general_plugins") if hasattr(eps, "select") else eps.get("vllm.general_plugins", [])
    assert any(ep.value == "moe_planner.vllm:vllm_plugin" for ep in group)


def test_vllm_policy_plans_afresh_from_an_elastic_resize_map():
    """vLLM's map during an elastic-EP resize: -1 in new ranks' slots, or the old width."""
    current = MoePlannerEplbPolicy.rebalance_experts(W, 16, 4, 1, 8)
    grown = np.pad(current, ((0, 0), (0, 8)), constant_values=-1)
    new = MoePlannerEplbPolicy.rebalance_experts(W, 24, 4, 1, 12, grown)
    assert new.shape == (2, 24) and MoePlannerEplbPolicy.last_diagnostics.moves is None
    assert np.array_equal(new, MoePlannerEplbPolicy.rebalance_experts(W, 24, 4, 1, 12))
    assert MoePlannerEplbPolicy.rebalance_experts(W, 12, 4, 1, 6, current).shape == (2, 12)
    # A map of the right width with a bad id is still an error naming the argument.
    with pytest.raises(ValueError, match="old_global_expert_indices"):
        MoePlannerEplbPolicy.rebalance_experts(W, 16, 4, 1, 8, np.where(current == 3, 99, current))


# --- SGLang's contract -------------------------------------------------------------------------


def test_sglang_signature_buffer_sum_and_triple():
    buffer = np.stack([W / 4, W / 4, W / 2])
    p2l, l2p, cnt = sglang_adapter.rebalance_experts(buffer, 16, 2, 4, 2, "deepseek_hierarchical")
    check_tables(p2l, l2p, cnt, 8)
    want = rebalance_experts(W, 16, 4, 2, 8)
    assert np.array_equal(p2l, want[0]) and np.array_equal(l2p, want[1])
    # Keyword call as SGLang's ExpertLocationMetadata makes it; no groups; the global rule.
    p2l, l2p, cnt = sglang_adapter.rebalance_experts(
        tokens_per_expert=buffer,
        num_physical_experts=16,
        num_local_physical_experts=2,
        num_groups=None,
        num_nodes=2,
        algorithm=types.SimpleNamespace(name="deepseek"),
    )
    assert gpu_loads(W, p2l, cnt, 8).max(axis=1).tolist() == [136.0, 172.0]
    with pytest.raises(ValueError, match="num_local_physical_experts"):
        sglang_adapter.rebalance_experts(buffer, 16, 3, 4, 2, "deepseek")


@pytest.fixture
def stand_in_sglang(monkeypatch):
    names = ["sglang", "sglang.srt", "sglang.srt.eplb", "sglang.srt.eplb.eplb_algorithms", "sglang.srt.eplb.expert_location"]
    mods = {n: types.ModuleType(n) for n in names}

    def original(**kwargs):
        return "sglang's own"

    algos = mods["sglang.srt.eplb.eplb_algorithms"]
    algos.rebalance_experts = original
    mods["sglang.srt.eplb"].eplb_algorithms = algos
    current = types.SimpleNamespace(physical_to_logical_map=None)
    mods["sglang.srt.eplb.expert_location"].get_global_expert_location_metadata = lambda: current
    for n, m in mods.items():
        monkeypatch.setitem(sys.modules, n, m)
    yield algos, original, current
    sglang_adapter.uninstall()


def test_sglang_install_uses_the_current_map_and_uninstall_restores(stand_in_sglang):
    algos, original, current = stand_in_sglang
    sglang_adapter.install()
    assert algos.rebalance_experts is not original
    call = dict(num_physical_experts=16, num_local_physical_experts=2, num_groups=4, num_nodes=1, algorithm="deepseek")
    first = algos.rebalance_experts(tokens_per_expert=W[None], **call)[0]
    current.physical_to_logical_map = first
    again = algos.rebalance_experts(tokens_per_expert=W[None], **call)[0]
    assert sglang_adapter.last_diagnostics.moves.tolist() == [0, 0]
    assert moves(first, again, 8) == 0
    # Arguments the adapter does not model go to SGLang's own function.
    assert algos.rebalance_experts(tokens_per_expert=W[None], broken_ranks=[0], **call) == "sglang's own"
    sglang_adapter.uninstall()
    assert algos.rebalance_experts is original


def test_sglang_elasticity_aware_goes_to_sglang_and_is_refused_directly(stand_in_sglang):
    algos, original, current = stand_in_sglang
    sglang_adapter.install()
    call = dict(num_physical_experts=16, num_local_physical_experts=2, num_groups=4, num_nodes=1)
    for name in ["elasticity_aware", "elasticity_aware_hierarchical"]:
        algorithm = types.SimpleNamespace(name=name)
        assert algos.rebalance_experts(tokens_per_expert=W[None], algorithm=algorithm, **call) == "sglang's own"
        with pytest.raises(ValueError, match="^algorithm: elasticity_aware"):
            sglang_adapter.rebalance_experts(W[None], 16, 2, 4, 1, name)
    # A current map with an empty slot (-1) is no placement to start from.
    first = algos.rebalance_experts(tokens_per_expert=W[None], algorithm="deepseek", **call)[0]
    current.physical_to_logical_map = np.where(first == 0, -1, first)
    algos.rebalance_experts(tokens_per_expert=W[None], algorithm="deepseek", **call)
    assert sglang_adapter.last_diagnostics.moves is None


# --- torch in, torch out -----------------------------------------------------------------------


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch", reason="torch is not installed (optional; numpy paths are tested above)")
    w = torch.tensor(README_WEIGHT, dtype=torch.float32)
    p2l, l2p, cnt = rebalance_experts(w, 16, 4, 2, 8)
    for t in (p2l, l2p, cnt):
        assert isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.dtype == torch.int64
    old = p2l.to(torch.int32)
    new = MoePlannerEplbPolicy.rebalance_experts(w, 16, 4, 2, 8, old)
    assert isinstance(new, torch.Tensor) and new.dtype == torch.int32 and torch.equal(new, old)
    s = sglang_adapter.rebalance_experts(w[None], 16, 2, 4, 2, "deepseek")
    assert all(isinstance(t, torch.Tensor) for t in s)
    # numpy stays numpy
    assert isinstance(rebalance_experts(W, 16, 4, 2, 8)[0], np.ndarray)


def test_cuda_tensor_in_gives_the_cpu_answer():
    # Engines hand over load statistics that live on the GPU; EPLB's own code copies them to the
    # CPU and returns CPU tensors, and so do the adapters. Runs only where a CUDA device exists.
    torch = pytest.importorskip("torch", reason="torch is not installed (optional)")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: run on a GPU machine to test CUDA inputs")
    cpu = torch.tensor(README_WEIGHT, dtype=torch.float32)
    gpu = cpu.to("cuda")
    for want, got in zip(rebalance_experts(cpu, 16, 4, 2, 8), rebalance_experts(gpu, 16, 4, 2, 8)):
        assert got.device.type == "cpu" and got.dtype == torch.int64 and torch.equal(got, want)
    old = rebalance_experts(cpu, 16, 4, 2, 8)[0].to(torch.int32)
    new = MoePlannerEplbPolicy.rebalance_experts(gpu.to(torch.bfloat16), 16, 4, 2, 8, old.to("cuda"))
    assert torch.equal(new.cpu(), old)
    s_cpu = sglang_adapter.rebalance_experts(cpu[None], 16, 2, 4, 2, "deepseek")
    s_gpu = sglang_adapter.rebalance_experts(gpu[None], 16, 2, 4, 2, "deepseek")
    for want, got in zip(s_cpu, s_gpu):
        assert torch.equal(got.cpu(), want)


class _StandInDtype:
    def __init__(self, np_dtype):
        self.np = np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"
        self.is_complex = self.np.kind == "c"

    def __eq__(self, other):
        return isinstance(other, _StandInDtype) and other.np == self.np

    def __hash__(self):
        return hash(self.np)

    def __str__(self):
        return f"torch.{self.np.name}"


class _StandInTensor:
    """The part of a CPU torch tensor the adapters touch (used only where torch is absent)."""

    def __init__(self, a):
        self._a = np.asarray(a)
        self.shape = self._a.shape
        self.device = types.SimpleNamespace(type="cpu")

    @property
    def dtype(self):
        return _StandInDtype(self._a.dtype)

    def detach(self):
        return self

    def cpu(self):
        return self

    def is_floating_point(self):
        return self._a.dtype.kind == "f"

    def double(self):
        return _StandInTensor(self._a.astype(np.float64))

    def to(self, dtype):
        return _StandInTensor(self._a.astype(dtype.np))

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


_StandInTensor.__module__ = "torch"


@pytest.fixture
def stand_in_torch(monkeypatch):
    try:
        import torch  # noqa: F401

        pytest.skip("real torch is installed: test_torch_in_torch_out covers it")
    except ImportError:
        pass
    fake = types.ModuleType("torch")
    fake.from_numpy = _StandInTensor
    fake.int32 = _StandInDtype(np.int32)
    monkeypatch.setitem(sys.modules, "torch", fake)
    return fake


def test_tensor_in_tensor_out_with_a_stand_in_torch(stand_in_torch):
    w = _StandInTensor(W.astype(np.float32))
    p2l, l2p, cnt = rebalance_experts(w, 16, 4, 2, 8)
    assert all(isinstance(t, _StandInTensor) for t in (p2l, l2p, cnt))
    assert np.asarray(p2l).dtype == np.int64
    old = p2l.to(stand_in_torch.int32)
    new = MoePlannerEplbPolicy.rebalance_experts(w, 16, 4, 2, 8, old)
    assert isinstance(new, _StandInTensor) and np.asarray(new).dtype == np.int32
    assert np.array_equal(np.asarray(new), np.asarray(old))
    s = sglang_adapter.rebalance_experts(_StandInTensor(W[None]), 16, 2, 4, 2, "deepseek_hierarchical")
    assert all(isinstance(t, _StandInTensor) for t in s)
    # numpy stays numpy
    assert isinstance(rebalance_experts(W, 16, 4, 2, 8)[0], np.ndarray)


# --- the Python boundary -----------------------------------------------------------------------


@pytest.mark.parametrize("arg", [0, 1, 2, 3])
def test_huge_counts_are_value_errors_naming_the_argument(arg):
    args = [16, 4, 2, 8]
    args[arg] = 2**70
    name = ["num_replicas", "num_groups", "num_nodes", "num_gpus"][arg]
    with pytest.raises(ValueError, match=name):
        rebalance_experts(W, *args)


def test_huge_seeds_and_budgets_are_value_errors():
    import moe_planner

    with pytest.raises(ValueError, match="seed"):
        moe_planner.schedule([[0, 1], [1, 0]], seed=2**64)
    with pytest.raises(ValueError, match="search_steps"):
        moe_planner.place(W, 8, 2, search_steps=2**100)
    with pytest.raises(ValueError, match="max_moves"):
        rebalance_with_diagnostics(W, 16, 4, 1, 8, max_moves=2**64)


@pytest.mark.parametrize(
    "bad",
    [
        W.astype(np.complex128),
        W.astype(str),
        np.array([["a"] * 12] * 2, dtype=object),
        np.full((2, 12), np.datetime64("2026-01-01")),
        np.ma.masked_array(W, mask=W < 50),
        [[datetime.datetime(2026, 1, 1)] * 12] * 2,
    ],
)
def test_non_numeric_arrays_are_type_errors_naming_the_argument(bad):
    with pytest.raises(TypeError, match="^weight"):
        rebalance_experts(bad, 16, 4, 2, 8)
    with pytest.raises(TypeError, match="^tokens_per_expert"):
        sglang_adapter.rebalance_experts(bad, 16, 2, 4, 2, "deepseek")


def test_non_numeric_old_maps_and_scalars_are_type_errors():
    with pytest.raises(TypeError, match="old_global_expert_indices"):
        rebalance_experts(W, 16, 4, 2, 8, np.zeros((2, 16), dtype=complex))
    with pytest.raises(TypeError, match="num_gpus"):
        rebalance_experts(W, 16, 4, 2, "8")
    with pytest.raises(TypeError, match="num_gpus"):
        rebalance_experts(W, 16, 4, 2, 8.0)
    with pytest.raises(TypeError, match="tolerance"):
        rebalance_with_diagnostics(W, 16, 4, 1, 8, tolerance=1j)
    with pytest.raises(TypeError, match="tolerance"):
        rebalance_with_diagnostics(W, 16, 4, 1, 8, tolerance="0.1")


def test_bad_old_maps_are_value_errors_naming_the_argument():
    ok = rebalance_experts(W, 16, 4, 1, 8)[0]
    for bad, message in [
        (ok[:1], "layers"),
        (ok[:, :8], "slots"),
        (np.where(ok == 3, 99, ok), "99"),
        (np.where(ok == 3, 4, ok), "expert 3 has no slot"),
        (np.where(ok == 3, -1, ok), "-1"),
    ]:
        with pytest.raises(ValueError, match=f"old_global_expert_indices.*{message}"):
            rebalance_experts(W, 16, 4, 1, 8, bad)


# --- the advisor -------------------------------------------------------------------------------


def test_advise_sweep_and_rebalance_recommendation():
    import moe_planner

    a = moe_planner.advise(W, 4, max_redundant=8, target_imbalance=1.02)
    assert [p["redundant"] for p in a["points"]] == [0, 4, 8]
    assert all(p["imbalance"] <= p["baseline_imbalance"] + 1e-9 for p in a["points"])
    now = rebalance_experts(W, 16, 4, 1, 8)[0]
    same = moe_planner.advise(W, 8, current=now, expert_bytes=1e9)["rebalance"]
    assert same["moves"] == 0 and not same["recommend"]
    flipped = moe_planner.advise(W[:, ::-1], 8, current=now, expert_bytes=1e9)["rebalance"]
    assert flipped["recommend"] and flipped["gain"] >= 0.05 and flipped["transfer_rounds"] > 0
    # The advisor's predicted balance is the balance of the plan it describes.
    new = rebalance_experts(W[:, ::-1], 16, 4, 1, 8, now)[0]
    cnt = np.stack([np.bincount(r, minlength=12) for r in new])
    loads = gpu_loads(W[:, ::-1], new, cnt, 8)
    got = float(np.mean(loads.max(axis=1) / loads.mean(axis=1)))
    assert abs(got - flipped["rebalanced_imbalance"]) < 1e-9
    with pytest.raises(ValueError, match="target_imbalance"):
        moe_planner.advise(W, 4, target_imbalance=0.9)
    with pytest.raises(ValueError, match="peer_limit"):
        moe_planner.advise(W, 8, current=now, peer_limit=0)

"""Our adapters through the real engines' own code (issue 22): vLLM's plugin loader, config,
policy registry, the call ``eplb_state.py`` makes and what it does with the answer; SGLang's
dispatcher, its ``--init-expert-location`` loading and its start-up plan from ``logical_count``.

Each test needs the engine installed and skips with the reason otherwise; neither engine is in
CI (several GB of CUDA wheels). ``docs/reproduction.md`` (issue 22) gives the pip commands, the
versions checked and the recorded output. Everything here runs on a CPU: the engines' GPU-only
steps (weight transfers, kernels) are not called.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import types

import numpy as np
import pytest
from conftest import README_WEIGHT, check_tables

import moe_planner.sglang as sglang_adapter
import moe_planner.vllm as vllm_adapter
from moe_planner.vllm import MoePlannerEplbPolicy

VLLM_MISSING = "vLLM is not installed: `pip install vllm` in a throwaway venv (docs/reproduction.md, issue 22)"
SGLANG_MISSING = "SGLang is not installed: `pip install sglang` in a throwaway venv (docs/reproduction.md, issue 22)"

W = np.array(README_WEIGHT, dtype=np.int64)
E, R, L, RANKS = 12, 16, 2, 8


def transfers(old: np.ndarray, new: np.ndarray, ranks: int) -> int:
    """Experts a rank holds after and did not hold before (vLLM's count of weight copies)."""
    per = old.shape[1] // ranks
    return sum(
        len(set(n[g * per : (g + 1) * per].tolist()) - set(o[g * per : (g + 1) * per].tolist()))
        for o, n in zip(old, new)
        for g in range(ranks)
    )


# --- vLLM -------------------------------------------------------------------------------------


@pytest.fixture
def vllm_registry(monkeypatch):
    """vLLM's real registry with our plugin loaded through vLLM's own loader; restored after."""
    pytest.importorskip("vllm", reason=VLLM_MISSING)
    import vllm.plugins
    from vllm.distributed.eplb.policy import EPLB_POLICIES

    saved = dict(EPLB_POLICIES)
    monkeypatch.setenv("MOE_PLANNER_VLLM_REPLACE_DEFAULT", "1")
    monkeypatch.setattr(vllm.plugins, "plugins_loaded", False)
    vllm.plugins.load_general_plugins()
    yield EPLB_POLICIES
    EPLB_POLICIES.clear()
    EPLB_POLICIES.update(saved)


def test_vllm_plugin_loader_installs_the_policy(vllm_registry):
    import inspect

    from vllm.distributed.eplb import eplb_state
    from vllm.distributed.eplb.policy import AbstractEplbPolicy

    assert vllm_registry["moe_planner"] is MoePlannerEplbPolicy
    assert vllm_registry["default"] is MoePlannerEplbPolicy
    # eplb_state.py looks the policy up in the same dict object.
    assert eplb_state.EPLB_POLICIES is vllm_registry
    assert issubclass(MoePlannerEplbPolicy, AbstractEplbPolicy)
    assert not inspect.isabstract(MoePlannerEplbPolicy)
    ours = list(inspect.signature(MoePlannerEplbPolicy.rebalance_experts).parameters)
    theirs = list(inspect.signature(AbstractEplbPolicy.rebalance_experts).parameters)
    assert ours == theirs
    # The installed vLLM's abstract policy returns the map alone, so the policy does too.
    assert vllm_adapter._vllm_wants_tables() is False


def test_vllm_config_selects_the_policy(vllm_registry):
    """``EplbState`` picks ``EPLB_POLICIES[parallel_config.eplb_config.policy]``."""
    from vllm.config.parallel import EPLBConfig

    try:
        named = EPLBConfig(policy="moe_planner")
    except Exception as e:  # vLLM 0.33.0: policy is Literal["default"]
        assert "policy" in str(e)
        named = None
    if named is not None:
        assert vllm_registry[named.policy] is MoePlannerEplbPolicy
    # Through `default` (MOE_PLANNER_VLLM_REPLACE_DEFAULT=1), whatever the release accepts.
    assert vllm_registry[EPLBConfig().policy] is MoePlannerEplbPolicy


def test_vllm_rearrange_path_on_cpu(vllm_registry, monkeypatch):
    """The call as ``EplbState.rearrange`` makes it, and vLLM's own use of the answer."""
    import torch
    from vllm.config.parallel import EPLBConfig
    from vllm.distributed.eplb import eplb_state
    from vllm.distributed.eplb.eplb_state import EplbState, compute_logical_maps
    from vllm.distributed.eplb.migration_scheduler import schedule_migration_batches_for_layers

    policy = vllm_registry[EPLBConfig().policy]
    initial = EplbState.build_initial_global_physical_to_logical_map(E, R - E)
    current = torch.tensor(initial).unsqueeze(0).expand(L, -1).contiguous()
    # vLLM's load window is int32 [window, layers, physical]; rearrange sums it over the window.
    window = torch.tensor(W, dtype=torch.int32).unsqueeze(0).repeat(4, 1, 1)
    load = window.sum(dim=0)
    for groups, nodes in [(4, 2), (4, 1), (1, 1), (0, 1)]:
        new = policy.rebalance_experts(load.cpu(), R, groups, nodes, RANKS, current.cpu())
        assert isinstance(new, torch.Tensor) and new.device == torch.device("cpu")  # async_worker asserts this
        assert new.dtype == current.dtype == torch.int64 and tuple(new.shape) == (L, R)
        logical, replicas = compute_logical_maps(new, E)
        assert tuple(replicas.shape) == (L, E) and int(replicas.min()) >= 1
        width = R - E + 1
        padded = torch.nn.functional.pad(logical, (0, width - logical.shape[-1]), value=-1)
        check_tables(new.numpy(), padded.numpy(), replicas.numpy(), RANKS)
        # vLLM's migration scheduler moves exactly the copies our diagnostics report.
        d = policy.last_diagnostics
        batches = schedule_migration_batches_for_layers(R // RANKS, current.numpy(), new.numpy())
        for layer, layer_batches in enumerate(batches):
            copies = sum(len(flow.expert_ids) for batch in layer_batches for flow in batch)
            assert copies == int(d.moves[layer]) == transfers(current.numpy()[layer : layer + 1], new.numpy()[layer : layer + 1], RANKS)
            for batch in layer_batches:  # each rank talks to one peer per batch
                ends = [r for flow in batch for r in (flow.src_rank, flow.dst_rank)]
                assert len(ends) == len(set(ends))
        # The same loads again: nothing moves, vLLM schedules no transfer.
        again = policy.rebalance_experts(load.cpu(), R, groups, nodes, RANKS, new)
        assert torch.equal(again, new)
        assert all(not b for b in schedule_migration_batches_for_layers(R // RANKS, new.numpy(), again.numpy()))
    # vLLM commits the answer into its model state with its own helper.
    commit = getattr(eplb_state, "_commit_eplb_maps", None)
    if commit is not None:
        # Pinned host memory needs a GPU driver; vLLM pins only where one is present.
        monkeypatch.setattr(eplb_state, "PIN_MEMORY", False, raising=False)
        state = types.SimpleNamespace(
            physical_to_logical_map=current.clone(),
            physical_to_logical_map_buffer=current.clone(),
            logical_to_physical_map=torch.full((L, E, 1024), -1, dtype=torch.int64),
            logical_replica_count=torch.zeros((L, E), dtype=torch.int64),
        )
        commit(state, new_physical_to_logical_map=new)
        assert torch.equal(state.physical_to_logical_map, new)
        assert torch.equal(state.logical_replica_count, replicas)


def test_vllm_elastic_resize_maps_plan_afresh(vllm_registry):
    """Elastic EP hands over the old cluster's map: wider with -1 (scale-up) or narrower."""
    import torch
    from vllm.distributed.eplb.eplb_state import compute_logical_maps

    policy = vllm_registry["default"]
    current = policy.rebalance_experts(torch.tensor(W), R, 4, 1, RANKS)
    grown = torch.nn.functional.pad(current, (0, 8), value=-1)  # 4 new ranks x 2 slots
    new = policy.rebalance_experts(torch.tensor(W), 24, 4, 1, 12, grown)
    assert tuple(new.shape) == (L, 24) and policy.last_diagnostics.moves is None
    compute_logical_maps(new, E)
    shrunk = policy.rebalance_experts(torch.tensor(W), 12, 4, 1, 6, current)
    assert tuple(shrunk.shape) == (L, 12) and int(shrunk.min()) >= 0


def test_vllm_fewer_copies_than_vllms_default_policy(vllm_registry):
    """Against vLLM's own ``DefaultEplbPolicy`` on drifted loads (64 experts, 8 ranks)."""
    import torch
    from vllm.distributed.eplb.policy.default import DefaultEplbPolicy

    from moe_planner.vllm import vllm_default_baseline

    rng = np.random.default_rng(22)
    old_w = rng.lognormal(0, 1, (4, 64)) * 100
    new_w = np.round(old_w * np.exp(0.2 * rng.standard_normal(old_w.shape) - 0.02))
    ours_old = MoePlannerEplbPolicy.rebalance_experts(torch.from_numpy(old_w), 80, 8, 1, 8)
    ours_new = MoePlannerEplbPolicy.rebalance_experts(torch.from_numpy(new_w), 80, 8, 1, 8, ours_old)
    theirs_old = DefaultEplbPolicy.rebalance_experts(torch.from_numpy(old_w), 80, 8, 1, 8)
    theirs_new = DefaultEplbPolicy.rebalance_experts(torch.from_numpy(new_w), 80, 8, 1, 8, theirs_old)
    assert transfers(ours_old.numpy(), ours_new.numpy(), 8) < transfers(theirs_old.numpy(), theirs_new.numpy(), 8)

    def busiest(p2l: np.ndarray) -> float:
        cnt = np.stack([np.bincount(r, minlength=64) for r in p2l])
        share = new_w[np.arange(4)[:, None], p2l] / cnt[np.arange(4)[:, None], p2l]
        return float(share.reshape(4, 8, -1).sum(axis=2).max(axis=1).sum())

    assert busiest(ours_new.numpy()) <= busiest(theirs_new.numpy()) + 1e-9
    # Our published baseline is vLLM's default policy: on loads without ties the same maps as
    # vLLM's code; on the rounded (tied) loads equal experts may swap (the two sorts break
    # ties differently), which leaves every GPU's load, and so the balance, unchanged.
    assert np.array_equal(vllm_default_baseline(old_w, 80, 8, 1, 8), theirs_old.numpy())
    base_new = vllm_default_baseline(new_w, 80, 8, 1, 8, theirs_old.numpy())
    assert busiest(base_new) == pytest.approx(busiest(theirs_new.numpy()), rel=1e-12)
    base_copies = transfers(theirs_old.numpy(), base_new, 8)
    assert abs(base_copies - transfers(theirs_old.numpy(), theirs_new.numpy(), 8)) <= 0.15 * base_copies


# --- SGLang -----------------------------------------------------------------------------------


@pytest.fixture
def sglang_runtime(monkeypatch, tmp_path):
    """SGLang's expert-location code with the server's runtime context stood in (2 layers, 12
    experts, 4 redundant, 8 EP ranks on 2 nodes, static dispatch) and a one-process gloo group
    (``_init_raw`` asks torch.distributed for the rank)."""
    pytest.importorskip("sglang", reason=SGLANG_MISSING)
    import torch.distributed as dist
    from sglang.srt.eplb import expert_location as el

    moe = types.SimpleNamespace(
        init_expert_location="trivial",
        ep_num_redundant_experts=R - E,
        ep_join_mode="none",
        eplb_algorithm="auto",
        ep_dispatch_algorithm="static",
        moe_a2a_backend="deepep",
        elastic_ep_backend=None,
    )
    parallel = types.SimpleNamespace(ep_size=RANKS, elastic_ep_initial_size=None, nnodes=2, ep_join_rank_offset=0, tp_size=RANKS)
    monkeypatch.setattr(el, "get_exec", lambda: types.SimpleNamespace(moe=moe))
    monkeypatch.setattr(el, "get_parallel", lambda: parallel)
    monkeypatch.setattr(el, "get_device", lambda: types.SimpleNamespace(device="cpu"))
    monkeypatch.setattr(
        el.ModelConfigForExpertLocation,
        "from_model_config",
        staticmethod(lambda _: el.ModelConfigForExpertLocation(num_layers=L, num_logical_experts=E, num_groups=4)),
    )
    started = not dist.is_initialized()
    if started:
        dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"file://{tmp_path / 'pg'}")
    yield el, moe
    sglang_adapter.uninstall()
    if started:
        dist.destroy_process_group()


def test_sglang_dispatcher_with_every_deepseek_algorithm(sglang_runtime):
    import torch
    from sglang.srt.eplb import eplb_algorithms

    el, _ = sglang_runtime
    tokens = torch.tensor([README_WEIGHT, README_WEIGHT], dtype=torch.int64)  # [buffer, layers, experts]
    sglang_adapter.install(use_current=False)
    for algorithm in eplb_algorithms.EplbAlgorithm:
        if algorithm.name.startswith("elasticity_aware"):
            continue
        sglang_adapter.last_diagnostics = None
        p2l, l2p, cnt = eplb_algorithms.rebalance_experts(
            tokens_per_expert=tokens,
            num_physical_experts=R,
            num_local_physical_experts=R // RANKS,
            num_groups=4,
            num_nodes=2,
            algorithm=algorithm,
        )
        assert sglang_adapter.last_diagnostics is not None, algorithm  # ours ran
        hierarchical = algorithm.name.endswith("hierarchical")
        assert sglang_adapter.last_diagnostics.policy == ["optimal-node-aware" if hierarchical else "optimal"] * L
        for t in (p2l, l2p, cnt):
            assert isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.dtype == torch.int64
        check_tables(p2l.numpy(), l2p.numpy(), cnt.numpy(), RANKS)
        # SGLang's own constructor takes the answer (it pads the -1 map to R, counts valid slots).
        md = el.ExpertLocationMetadata._init_raw(ep_size=RANKS, physical_to_logical_map=p2l, logical_to_all_physical_map=l2p)
        assert torch.equal(md.logical_to_all_physical_map_num_valid, cnt)
        assert tuple(md.logical_to_all_physical_map.shape) == (L, E, R)
    auto = eplb_algorithms.compute_algorithm("auto", 4, 2)
    assert auto.name == "deepseek_hierarchical"


def test_sglang_elasticity_aware_stays_with_sglang(sglang_runtime, monkeypatch):
    from sglang.srt.eplb import eplb_algorithms

    sglang_adapter.install()
    calls = []
    monkeypatch.setattr(sglang_adapter, "_original", lambda **kw: calls.append(kw["algorithm"]) or "sglang's own")
    out = eplb_algorithms.rebalance_experts(
        tokens_per_expert=np.array([README_WEIGHT]),
        num_physical_experts=R,
        num_local_physical_experts=2,
        num_groups=4,
        num_nodes=2,
        algorithm=eplb_algorithms.EplbAlgorithm.elasticity_aware,
    )
    assert out == "sglang's own" and calls == [eplb_algorithms.EplbAlgorithm.elasticity_aware]
    with pytest.raises(ValueError, match="^algorithm"):
        sglang_adapter.rebalance_experts(np.array([README_WEIGHT]), R, 2, 4, 2, eplb_algorithms.EplbAlgorithm.elasticity_aware_hierarchical)


def _place_out(tmp_path: pathlib.Path) -> pathlib.Path:
    """``moe-planner place --out`` on EPLB's README loads (the CLI where found, else the same
    document from Python)."""
    loads = tmp_path / "dump.json"
    loads.write_text(json.dumps({"logical_count": [README_WEIGHT]}))
    out = tmp_path / "expert_location.json"
    cli = os.environ.get("MOE_PLANNER_CLI") or shutil.which("moe-planner")
    if cli:
        subprocess.run([cli, "place", "--loads", str(loads), "--gpus", str(RANKS), "--slots-per-gpu", str(R // RANKS), "--out", str(out)], check=True)
    else:
        import moe_planner

        plan = moe_planner.place(W, RANKS, R // RANKS)
        out.write_text(json.dumps({"physical_to_logical_map": np.asarray(plan.physical_to_logical_map).tolist()}))
    return out


def test_sglang_init_expert_location_loads_a_place_out_file(sglang_runtime, tmp_path):
    el, moe = sglang_runtime
    out = _place_out(tmp_path)
    written = json.loads(out.read_text())
    assert list(written) == ["physical_to_logical_map"]  # SGLang passes every key to init_by_mapping
    moe.init_expert_location = str(out)
    md = el.compute_initial_expert_location_metadata(model_config=None, moe_ep_rank=0)
    assert md.physical_to_logical_map.tolist() == written["physical_to_logical_map"]
    assert tuple(md.logical_to_all_physical_map.shape) == (L, E, R)
    assert tuple(md.logical_to_rank_dispatch_physical_map.shape) == (L, E)
    # Every logical expert dispatches to one of its own slots.
    p2l = md.physical_to_logical_map
    dispatch = md.logical_to_rank_dispatch_physical_map
    for layer in range(L):
        assert [int(p2l[layer, s]) for s in dispatch[layer]] == list(range(E))


def test_sglang_start_up_plan_from_logical_count_goes_through_install(sglang_runtime, tmp_path):
    el, moe = sglang_runtime
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"logical_count": [README_WEIGHT, README_WEIGHT]}))
    moe.init_expert_location = str(dump)
    sglang_adapter.install()
    sglang_adapter.last_diagnostics = None
    md = el.compute_initial_expert_location_metadata(model_config=None, moe_ep_rank=0)
    assert sglang_adapter.last_diagnostics is not None  # our dispatcher planned it
    assert sglang_adapter.last_diagnostics.policy == ["optimal-node-aware"] * L  # auto -> hierarchical
    p2l = md.physical_to_logical_map.numpy()
    cnt = np.stack([np.bincount(r, minlength=E) for r in p2l])
    for row in p2l.reshape(L * RANKS, -1):
        assert len(set(row.tolist())) == len(row)
    assert (cnt >= 1).all()
    sglang_adapter.uninstall()
    sglang_adapter.last_diagnostics = None
    el.compute_initial_expert_location_metadata(model_config=None, moe_ep_rank=0)
    assert sglang_adapter.last_diagnostics is None  # SGLang's own function again


def test_sglang_sitecustomize_installs_in_every_new_interpreter(tmp_path):
    """The README's start-up hook: a ``sitecustomize.py`` on ``PYTHONPATH`` calls ``install()``
    before SGLang's processes run any code (each spawned process starts a new interpreter)."""
    pytest.importorskip("sglang", reason=SGLANG_MISSING)
    import sys

    (tmp_path / "sitecustomize.py").write_text("import moe_planner.sglang\nmoe_planner.sglang.install()\n")
    probe = (
        "from sglang.srt.eplb import eplb_algorithms\n"
        "import moe_planner.sglang as a\n"
        "print(eplb_algorithms.rebalance_experts.__module__, a._original.__module__)\n"
    )
    paths = [str(tmp_path)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["moe_planner.sglang", "sglang.srt.eplb.eplb_algorithms"]

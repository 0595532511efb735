"""train_search: ranked MoE training mappings as records, the library's errors as ValueError."""

import pytest

import moe_planner


def test_train_search_ranks_fitting_mappings():
    plan = moe_planner.train_search("mixtral-8x7b", 64, 256, top=3)
    configs = plan["configs"]
    assert 1 <= len(configs) <= 3
    times = [c["step_time_s"] for c in configs]
    assert times == sorted(times)
    assert all(c["fits"] for c in configs)
    assert abs(plan["parameters"] / 46.7e9 - 1) < 0.01


def test_train_search_one_mapping_and_errors():
    one = moe_planner.train_search(
        "mixtral-8x7b", 64, 256, mapping={"tp": 1, "pp": 4, "vp": 8, "ep": 8, "micro_batch": 1}
    )
    assert one["configs"][0]["dp"] == 16
    with pytest.raises(ValueError, match="ep must divide"):
        moe_planner.train_search(
            "mixtral-8x7b", 96, 96, mapping={"tp": 1, "pp": 1, "ep": 3, "micro_batch": 1}
        )
    with pytest.raises(ValueError, match="unknown model preset"):
        moe_planner.train_search("mixtral-8x8b", 64, 256)
    with pytest.raises(ValueError, match="train spec"):
        moe_planner.train_search("mixtral-8x7b", 64, 256, zipf=float("nan"))


def test_train_search_strategy_options():
    mapping = {"tp": 1, "pp": 4, "ep": 8, "micro_batch": 1}
    zero1 = moe_planner.train_search("mixtral-8x7b", 64, 256, mapping=mapping)
    fsdp = moe_planner.train_search(
        "mixtral-8x7b", 64, 256, mapping=mapping, options={"param_sharding": "fsdp"}
    )

    def weights(plan):
        return plan["configs"][0]["memory"]["weights_and_gradients_bytes"]

    assert weights(fsdp) < weights(zero1)
    dual = moe_planner.train_search(
        "mixtral-8x7b", 64, 256, mapping=mapping, options={"pipeline_schedule": "dual_pipe"}
    )
    assert dual["configs"][0]["terms"]["bubble_s"] < zero1["configs"][0]["terms"]["bubble_s"]
    with pytest.raises(ValueError, match="vp under DualPipe"):
        moe_planner.train_search(
            "mixtral-8x7b",
            64,
            256,
            mapping={**mapping, "vp": 8},
            options={"pipeline_schedule": "dual_pipe"},
        )

# Type stubs of the native module (crates/moe-planner-py/src). The public API is the
# `moe_planner` package, whose wrappers convert inputs and document every function.
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

def rebalance_experts(
    weight: np.ndarray,
    num_replicas: int,
    num_groups: int,
    num_nodes: int,
    num_gpus: int,
    current: Optional[np.ndarray],
    tolerance: float,
    max_moves: Optional[int],
    peer_limit: int,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]: ...
def place(
    loads: np.ndarray,
    num_gpus: int,
    slots_per_gpu: int,
    nodes: int,
    groups: Optional[int],
    policy: str,
    current: Optional[np.ndarray],
    tolerance: float,
    windows: Optional[np.ndarray],
    robust_objective: str,
    gpu_speed: Optional[np.ndarray],
    expert_bytes: Optional[float],
    bandwidth_gbps: float,
    search_steps: Optional[int],
    time_budget_s: Optional[float],
) -> Dict[str, Any]: ...
def schedule(
    traffic: np.ndarray,
    bandwidth_gbps: Union[float, Sequence[float]],
    algorithm: str,
    seed: int,
) -> Dict[str, Any]: ...
def iteration_search(spec_json: str) -> str: ...
def advise(
    loads: np.ndarray,
    num_gpus: int,
    nodes: int,
    groups: Optional[int],
    max_redundant: Optional[int],
    target_imbalance: float,
    current: Optional[np.ndarray],
    min_gain: float,
    tolerance: float,
    expert_bytes: Optional[float],
    bandwidth_gbps: float,
    peer_limit: int,
    search_steps: Optional[int],
) -> str: ...

class TooLargeError(ValueError): ...

def _sleep_for_tests(seconds: float) -> None: ...
def train_search(spec_json: str) -> str: ...

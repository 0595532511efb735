"""moe-planner for Python: plan how Mixture-of-Experts jobs use a GPU cluster.

* :func:`moe_planner.eplb.rebalance_experts`: a drop-in for DeepSeek's EPLB (same arguments and
  return shapes) that runs our optimal placement and never puts two replicas of an expert on
  one GPU;
* :mod:`moe_planner.vllm` / :mod:`moe_planner.sglang`: the same planners inside the serving
  engines (a vLLM EPLB policy with a plug-in entry point, SGLang's dispatcher), torch in and out;
* :func:`advise`: how many redundant experts a workload needs, and whether rebalancing the
  current placement now pays for its weight transfers;
* :func:`place`: expert replication and placement with the current placement, tolerance and
  load windows (fewest-move rebalancing), EPLB beside every plan;
* :func:`schedule`: a contention-free all-to-all timetable;
* :func:`iteration_search`: the fastest parallelization of an LLM training job on a fabric;
* :func:`train_search`: MoE training mappings ranked by step time, term by term.

Every planner runs in Rust (the ``moe-planner`` crates) on a worker thread without holding the
GIL; the calling thread checks for Ctrl-C every 50 ms and raises ``KeyboardInterrupt`` (the
Rust work then finishes in the background and its result is dropped). Bad input raises
``ValueError`` with the library's message, naming the argument; an input refused for its size
(for example a padded ``logical_to_physical_map`` beyond 2**26 entries) raises
:class:`TooLargeError`, a ``ValueError``, before anything that large is allocated. An internal
error raises ``RuntimeError``; none aborts the interpreter.

Example:
    >>> import moe_planner
    >>> r = moe_planner.place([[600, 560, 120, 120, 20, 10, 10, 10]], num_gpus=8, slots_per_gpu=2)
    >>> r.physical_to_logical_map.shape
    (1, 16)
"""

from . import eplb
from ._advise import advise
from ._native import TooLargeError
from ._placement import PlacementResult, place
from ._schedule import Schedule, schedule
from ._search import iteration_search
from ._train import train_search

__all__ = [
    "PlacementResult",
    "Schedule",
    "TooLargeError",
    "advise",
    "eplb",
    "iteration_search",
    "place",
    "schedule",
    "train_search",
]

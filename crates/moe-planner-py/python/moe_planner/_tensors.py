"""Torch in, torch out: the engine adapters answer in the array type they were given.

torch is optional: nothing here imports it unless a torch tensor came in.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np


def is_torch(x: Any) -> bool:
    """Whether ``x`` is a torch tensor (checked without importing torch)."""
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def integer_dtype(like: Any) -> Optional[Any]:
    """The dtype of a torch integer tensor ``like`` (to answer in the same dtype), else ``None``."""
    if like is None or not is_torch(like):
        return None
    dtype = like.dtype
    if getattr(dtype, "is_floating_point", True) or getattr(dtype, "is_complex", False) or str(dtype) == "torch.bool":
        return None
    return dtype


def output(a: np.ndarray, as_torch: bool, dtype: Optional[Any] = None) -> Any:
    """``a`` as is, or as a CPU torch tensor (``int64`` unless ``dtype`` names another integer type)."""
    if not as_torch:
        return a
    import torch

    t = torch.from_numpy(np.ascontiguousarray(a))
    return t if dtype is None else t.to(dtype)

"""Input conversion shared by the wrappers: anything array-like to a C-contiguous numpy array."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np


def _to_numpy_source(x: Any) -> Any:
    """A torch tensor (any device, any dtype) moved to the CPU in float64; anything else as is."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu()
        if hasattr(x, "double") and getattr(x, "is_floating_point", lambda: False)():
            x = x.double()  # bfloat16/float16 have no numpy equivalent
    return x


def array(x: Any, name: str, ndim: int, dtype: type, shape_doc: str) -> np.ndarray:
    """``x`` as a C-contiguous array of ``dtype`` with ``ndim`` dimensions, or ``ValueError``."""
    try:
        a = np.ascontiguousarray(np.asarray(_to_numpy_source(x)), dtype=dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(f"{name}: cannot convert to a {ndim}-D {np.dtype(dtype).name} array: {e}") from e
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {shape_doc}, got shape {a.shape}")
    return a


def floats(x: Any, name: str, ndim: int, shape_doc: str) -> np.ndarray:
    """``x`` as float64 (any numeric input; NaN and infinities are left for the planner to reject)."""
    return array(x, name, ndim, np.float64, shape_doc)


def ids(x: Any, name: str, ndim: int, shape_doc: str) -> np.ndarray:
    """``x`` as int64 ids; floats that are not whole numbers are refused."""
    raw = np.asarray(_to_numpy_source(x))
    if raw.dtype.kind == "f" and not np.all(np.isfinite(raw) & (raw == np.round(raw))):
        raise ValueError(f"{name} must hold integer ids")
    return array(raw, name, ndim, np.int64, shape_doc)


def count(x: Any, name: str) -> int:
    """A non-negative integer argument (Python or numpy integer)."""
    try:
        v = operator.index(x)
    except TypeError as e:
        raise TypeError(f"{name} must be an integer, got {type(x).__name__}") from e
    if v < 0:
        raise ValueError(f"{name} must be non-negative, got {v}")
    return v


def number(x: Any, name: str) -> float:
    """A real-valued argument; NaN and infinities are left for the planner to reject."""
    try:
        return float(x)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a number, got {x!r}") from e

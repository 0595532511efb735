"""Input conversion shared by the wrappers: anything array-like to a C-contiguous numpy array.

The boundary rules (issue 22): a count or seed of any size that the planners cannot take raises
``ValueError`` (never ``OverflowError``); complex, string, bytes, date/time and masked arrays
(and such scalars) raise ``TypeError``; every message starts with the Python argument's name.
"""

from __future__ import annotations

import datetime
import operator
from typing import Any

import numpy as np

#: Largest count or seed a planner takes (numpy's ``int64``; Rust's ``usize`` / ``u64`` hold it).
MAX_COUNT = 2**63 - 1

# numpy dtype kinds that are not real numbers: complex, unicode, bytes, datetime, timedelta, void.
_REFUSED_KINDS = {"c": "complex", "U": "string", "S": "bytes", "M": "datetime", "m": "timedelta", "V": "structured"}
_REFUSED_SCALARS = (str, bytes, complex, datetime.date, datetime.time, datetime.timedelta, np.datetime64, np.timedelta64)


def _refuse_types(raw: np.ndarray, name: str) -> None:
    """``TypeError`` naming ``name`` for arrays whose elements are not real numbers."""
    kind = _REFUSED_KINDS.get(raw.dtype.kind)
    if kind is not None:
        raise TypeError(f"{name}: {kind} values are not accepted (dtype {raw.dtype}); give real numbers")
    if raw.dtype.kind == "O":
        for v in raw.flat:
            if isinstance(v, _REFUSED_SCALARS) or np.iscomplexobj(v):
                raise TypeError(f"{name}: {type(v).__name__} values are not accepted; give real numbers")


def _to_numpy_source(x: Any) -> Any:
    """A torch tensor (any device, any dtype) moved to the CPU in float64; anything else as is."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu()
        if hasattr(x, "double") and getattr(x, "is_floating_point", lambda: False)():
            x = x.double()  # bfloat16/float16 have no numpy equivalent
    return x


def array(x: Any, name: str, ndim: int, dtype: type, shape_doc: str) -> np.ndarray:
    """``x`` as a C-contiguous array of ``dtype`` with ``ndim`` dimensions, or ``ValueError``."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name}: masked arrays are not accepted; fill the masked entries (x.filled(...)) first")
    try:
        raw = np.asarray(_to_numpy_source(x))
    except (ValueError, OverflowError) as e:
        raise ValueError(f"{name}: cannot convert to a {ndim}-D {np.dtype(dtype).name} array: {e}") from e
    _refuse_types(raw, name)
    try:
        a = np.ascontiguousarray(raw, dtype=dtype)
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
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name}: masked arrays are not accepted; fill the masked entries first")
    raw = np.asarray(_to_numpy_source(x))
    _refuse_types(raw, name)
    if raw.dtype.kind == "f" and not np.all(np.isfinite(raw) & (raw == np.round(raw))):
        raise ValueError(f"{name} must hold integer ids")
    return array(raw, name, ndim, np.int64, shape_doc)


def count(x: Any, name: str) -> int:
    """A non-negative integer argument (Python or numpy integer) of at most :data:`MAX_COUNT`.

    ``TypeError`` for anything that is not an integer (a float, a string, a bool), ``ValueError``
    for a negative or too large one, never ``OverflowError``.
    """
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        v = operator.index(x)
    except TypeError as e:
        raise TypeError(f"{name} must be an integer, got {type(x).__name__}") from e
    if v < 0:
        raise ValueError(f"{name} must be non-negative, got {v}")
    if v > MAX_COUNT:
        raise ValueError(f"{name} = {v} is too large (at most 2**63 - 1)")
    return v


def number(x: Any, name: str) -> float:
    """A real-valued argument; NaN and infinities are left for the planner to reject.

    ``TypeError`` for strings, bytes, complex numbers, dates and anything without ``float()``;
    ``ValueError`` for an integer too large for a float.
    """
    if isinstance(x, (*_REFUSED_SCALARS, np.complexfloating)):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    try:
        return float(x)
    except OverflowError as e:
        raise ValueError(f"{name} = {x} is too large for a float") from e
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}") from e

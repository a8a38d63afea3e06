"""Argument checking and naming shared by the kernel formulas.

Sizes are whole numbers >= 1 (Python ints, numpy integers, or floats with no fractional
part). A few documented size arguments (matmul's ``m``, a model's ``batch``) may also be numpy
arrays of whole numbers, for sweeps. Array-likes (numpy, torch, jax, cupy arrays) are read
through their ``.shape`` and ``.dtype`` only, so no framework is imported.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .. import dtypes
from ..errors import WorkloadError
from ..workload import Number, is_array


def is_arraylike(value: object) -> bool:
    """True for an object with a ``.shape`` and a ``.dtype`` (an array of any framework)."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, type)


def shape_of(value: object, what: str) -> tuple[int, ...]:
    """The shape of an array-like as a tuple of ints."""
    try:
        return tuple(operator.index(d) for d in value.shape)  # type: ignore[attr-defined]
    except TypeError:
        raise WorkloadError(f"{what}: shape {value.shape!r} is not a tuple of whole "  # type: ignore[attr-defined]
                            f"numbers") from None


def dtype_of(value: object, what: str) -> str:
    """The canonical precision of an array-like's ``.dtype``."""
    try:
        return dtypes.canonical(value.dtype)  # type: ignore[attr-defined]
    except LookupError as exc:
        raise WorkloadError(f"{what}: {exc}") from None


def precision(value: object, what: str) -> str:
    """A canonical precision name, or a WorkloadError naming the argument."""
    try:
        return dtypes.canonical(value)
    except LookupError as exc:
        raise WorkloadError(f"{what}: {exc}") from None


def size(value: object, what: str, *, minimum: int = 1) -> int:
    """A whole number >= *minimum*, or a WorkloadError naming the argument and the value."""
    if isinstance(value, bool):
        raise WorkloadError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    if isinstance(value, float):
        if value.is_integer() and value >= minimum:
            return int(value)
        raise WorkloadError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise WorkloadError(f"{what} must be a whole number >= {minimum}, got {value!r}") from None
    if number < minimum:
        raise WorkloadError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    return int(number)


def sweep_size(value: object, what: str) -> Number:
    """A size that may be a numpy array of whole numbers >= 1 (a sweep) or a scalar size."""
    if is_array(value):
        import numpy as np

        array = np.asarray(value)
        if array.dtype.kind not in "iuf" or not np.all(np.isfinite(array)) or np.any(
                array < 1) or np.any(array != np.floor(array)):
            raise WorkloadError(f"{what}: every element of the sweep must be a whole number "
                                f">= 1, got {value!r}")
        return array.astype(float)
    return float(size(value, what))


def pair(value: object, what: str, *, minimum: int = 1) -> tuple[int, int]:
    """An int or a pair of ints (height, width)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != 2:
            raise WorkloadError(f"{what} must be a whole number or a pair (height, width), "
                                f"got {value!r}")
        return size(value[0], what, minimum=minimum), size(value[1], what, minimum=minimum)
    number = size(value, what, minimum=minimum)
    return number, number


def show(value: Any) -> str:
    """A size for a workload name: ``4096``, or ``[1..512]`` for a sweep."""
    if is_array(value):
        flat = value.ravel()
        return f"[{int(flat.min())}..{int(flat.max())}]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def is_sweep(*values: object) -> bool:
    return any(is_array(v) for v in values)

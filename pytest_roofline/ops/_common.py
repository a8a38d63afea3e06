"""Argument checking and naming shared by the kernel formulas (and the model builders).

The rules every op and model applies, in one place:

* **Sizes** are whole numbers from 1 to 2**53 (:data:`MAX_SIZE`, the largest whole number a
  float holds exactly): Python ints, numpy integers, 0-d arrays, or floats with no fractional
  part (``4096.0``). Numpy scalars (``np.int64(64)``) are sizes, never arrays. Booleans,
  strings, NaN, infinities, zero and negative numbers are refused. A few documented size
  arguments (matmul's ``m``, a model's ``batch``) may also be non-empty numpy arrays of whole
  numbers, for sweeps.
* **Arrays** are objects with a ``.shape`` of at least one dimension and a ``.dtype`` (numpy,
  torch, jax, cupy), read through those two attributes only, so no framework is imported. An
  array with a zero-size dimension does no work and is refused. A torch module passed where
  an array or a size belongs is named as such in one line (``ops.linear`` takes modules).
* **Precisions**: see :mod:`pytest_roofline.dtypes`. With arrays, the bytes follow each
  array's storage dtype (what moves through memory); a ``dtype=`` given as well overrides the
  precision the work is *computed* in, so ``matmul(a32, b32, dtype="tf32")`` moves fp32 bytes
  and is priced at the tf32 peak.
* **Choices and flags** (``layout=``, ``split=``, ``causal=``) are strings from a listed set
  and real booleans.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence
from typing import Any

from .. import dtypes
from ..engine.workload import Number, is_array
from ..errors import RooflineError, WorkloadError, brief

#: The largest size accepted: 2**53, the last whole number a float holds exactly.
MAX_SIZE = 1 << 53


def input_error(excinfo: Any) -> bool:
    """A ``__tracebackhide__`` for ops: pytest leaves out an op's own frames when the error
    is about the input (a RooflineError), so the failure shows the caller's line and the
    one-line message, not the op's arguments (arrays print as dozens of lines)."""
    return bool(excinfo.errisinstance(RooflineError))


def given(dtype: object) -> bool:
    """True when the caller chose a precision. ``dtype=None`` (every op's default) means bf16
    for an op given sizes, and the arrays' own storage dtype for an op given arrays; an
    explicit ``"bf16"`` is a choice like any other."""
    return dtype is not None


def sized_precision(dtype: object) -> str:
    """The precision of an op given by sizes: *dtype*, bf16 by default (None)."""
    return "bf16" if dtype is None else precision(dtype, "dtype")


def is_module(value: object) -> bool:
    """True for a torch ``nn.Module`` (duck-typed: ``parameters`` and ``forward``)."""
    return hasattr(value, "parameters") and hasattr(value, "forward") and not isinstance(
        value, type)


def is_arraylike(value: object) -> bool:
    """True for an array of any framework: a ``.shape`` of one dimension or more and a
    ``.dtype``. Scalars (numpy scalars, 0-d arrays) are sizes, not arrays."""
    shape = getattr(value, "shape", None)
    if shape is None or not hasattr(value, "dtype") or isinstance(value, type):
        return False
    try:
        return len(shape) > 0
    except TypeError:
        return False


def _mistake(value: object) -> str:
    """A hint for a value that is neither a size nor an array, or ""."""
    if is_module(value):
        return (f" ({brief(value)}: pass an array, e.g. its .weight, or use "
                f"ops.linear(x, module) for a Linear layer)")
    return ""


def shape_of(value: object, what: str) -> tuple[int, ...]:
    """The shape of an array-like as a tuple of ints; a zero-size dimension is refused."""
    try:
        shape = tuple(operator.index(d) for d in value.shape)  # type: ignore[attr-defined]
    except (TypeError, AttributeError):
        raise WorkloadError(f"{what}: shape {brief(getattr(value, 'shape', None))} is not a "
                            f"tuple of whole numbers") from None
    if 0 in shape:
        raise WorkloadError(f"{what}: an array of shape {shape} holds no elements; arrays "
                            f"must have every dimension >= 1")
    return shape


def dtype_of(value: object, what: str) -> str:
    """The canonical precision of an array-like's ``.dtype``."""
    try:
        return dtypes.canonical(value.dtype)  # type: ignore[attr-defined]
    except LookupError as exc:
        raise WorkloadError(f"{what}: {exc}") from None


def precision(value: object, what: str) -> str:
    """A canonical precision name, or a WorkloadError naming the argument."""
    if type(value) is str and value in dtypes.ITEMSIZE:
        return value
    try:
        return dtypes.canonical(value)
    except LookupError as exc:
        raise WorkloadError(f"{what}: {exc}") from None


def array_precision(array: object, override: object, what: str) -> tuple[str, str]:
    """``(storage, compute)`` of an array operand: bytes follow the storage dtype, the
    *override* (a ``dtype=`` argument the caller gave) sets the compute precision."""
    stored = dtype_of(array, what)
    return stored, precision(override, "dtype") if given(override) else stored


def _bad_size(value: object, what: str, minimum: int) -> WorkloadError:
    try:
        large = value > MAX_SIZE if isinstance(value, int) else (
            not isinstance(value, (str, bytes)) and float(value) > MAX_SIZE)  # type: ignore[arg-type]
    except Exception:  # any value may arrive here; only the wording depends on it
        large = False
    hint = " (sizes stop at 2**53, the largest whole number a float holds)" if large else ""
    return WorkloadError(f"{what} must be a whole number >= {minimum}, got {brief(value)}"
                         + hint + _mistake(value))


def size(value: object, what: str, *, minimum: int = 1) -> int:
    """A whole number in [*minimum*, 2**53], or a WorkloadError naming the argument and the
    value (see the module docstring for what counts as a size)."""
    if type(value) is int:  # the common case
        if minimum <= value <= MAX_SIZE:
            return value
        raise _bad_size(value, what, minimum)
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise _bad_size(value, what, minimum)
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        scalar = value
        if getattr(value, "shape", None) == () and hasattr(value, "item"):
            scalar = value.item()  # a 0-d array of floats (numpy, torch)
        if isinstance(scalar, bool) or not isinstance(scalar, numbers.Real):
            raise _bad_size(value, what, minimum) from None
        real = float(scalar)
        if not real.is_integer():  # NaN and infinities are not integers either
            raise _bad_size(value, what, minimum) from None
        if not minimum <= real <= MAX_SIZE:
            raise _bad_size(value, what, minimum) from None
        return int(real)
    if type(number) is bool or not minimum <= number <= MAX_SIZE:
        raise _bad_size(value, what, minimum)
    return int(number)


def number(value: object, what: str) -> float:
    """A finite number >= 0 (a count that need not be whole), or a WorkloadError."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            real = float(value)
        except OverflowError:
            real = math.inf
        if 0 <= real < math.inf:
            return real
    raise WorkloadError(f"{what} must be a finite number >= 0, got {brief(value)}")


def sweep_size(value: object, what: str) -> Number:
    """A size that may be a non-empty numpy array of whole numbers in [1, 2**53] (a sweep),
    or a scalar size."""
    if is_array(value):
        import numpy as np

        array = np.asarray(value)
        if array.size == 0:
            raise WorkloadError(f"{what}: a sweep needs at least one value, got an empty array")
        if array.dtype.kind not in "iuf" or not np.all(np.isfinite(array)) or np.any(
                array < 1) or np.any(array > MAX_SIZE) or np.any(array != np.floor(array)):
            raise WorkloadError(f"{what}: every element of the sweep must be a whole number "
                                f"from 1 to 2**53, got {brief(value)}")
        return array.astype(float)
    return float(size(value, what))


def pair(value: object, what: str, *, minimum: int = 1) -> tuple[int, int]:
    """A size or a pair of sizes (height, width): a sequence or a 1-D array of two."""
    if is_arraylike(value) and hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != 2:
            raise WorkloadError(f"{what} must be a whole number or a pair (height, width), "
                                f"got {brief(value)}")
        return size(value[0], what, minimum=minimum), size(value[1], what, minimum=minimum)
    number = size(value, what, minimum=minimum)
    return number, number


def choice(value: object, what: str, allowed: Sequence[str]) -> str:
    """*value* if it is one of the strings *allowed*, else a WorkloadError listing them."""
    if isinstance(value, str) and value in allowed:
        return value
    raise WorkloadError(f"{what} must be one of {', '.join(repr(a) for a in allowed)}, got "
                        f"{brief(value)}")


def flag(value: object, what: str) -> bool:
    """*value* if it is True or False, else a WorkloadError."""
    if value is True or value is False:
        return value
    raise WorkloadError(f"{what} must be True or False, got {brief(value)}")


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

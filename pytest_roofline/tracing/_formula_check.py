"""A registered formula's call, checked: whatever it does wrong is one line naming the op and
the formula, never a traceback from inside the tracer (or torch's dispatch) and never a
workload with infinite or negative figures.

A formula returns a Kernel, a Workload, or (where the tracer knows the bytes the op moves:
a torch op, a custom op, a Triton launch) a number, its FLOPs alone.

What is refused: a formula that raises (anything, a RecursionError included), that returns
something other than a Kernel or a Workload (None, a string, a list; a number where no bytes
are known, or one that is not finite and >= 0), or whose
kernels add up past the largest float (``flops``, ``bytes`` or ``link_bytes`` times their
``count``, each and summed): a Kernel already refuses NaN, negative and infinite figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from ..engine.workload import Kernel, Workload
from ..errors import brief
from ._base import TraceError


class FormulaError(TraceError):
    """A registered formula that failed or returned what cannot be priced."""


def _label(name: str, formula: Callable[..., Any]) -> str:
    title = getattr(formula, "__qualname__", None) or type(formula).__name__
    module = getattr(formula, "__module__", None)
    where = f"{module}.{title}" if module and module not in ("__main__", "builtins") else title
    return f"the formula {where} registered for {name!r}"


def _total(values: Iterable[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


def _figures(kernels: list[Kernel]) -> str | None:
    """The first figure that is not a finite number >= 0 once counted, or None."""
    for field in ("flops", "bytes", "link_bytes"):
        try:
            each = [float(getattr(k, field)) * float(k.count) for k in kernels]
        except (TypeError, ValueError):  # arrays: a formula of a sweep, checked by Kernel
            continue
        bad = next((k.name for k, v in zip(kernels, each, strict=True)
                    if not 0 <= v < math.inf), None)
        if bad is not None:
            return f"kernel {bad!r} has {field} x count that is not a finite number >= 0"
        if not _total(each) < math.inf:
            return f"its kernels' {field} add up past the largest float (inf)"
    return None


def call(name: str, formula: Callable[..., Any], args: Iterable[Any],
         kwargs: dict[str, Any], *, numbers: bool = False) -> Kernel | Workload | float:
    """``formula(*args, **kwargs)``, checked (see the module docstring); with *numbers*, a
    number it returns is its FLOPs (a float)."""
    label = _label(name, formula)
    try:
        result = formula(*args, **kwargs)
    except RecursionError:
        raise FormulaError(f"{label} failed: it recursed without end "
                           f"(RecursionError)") from None
    except Exception as exc:  # the user's formula: name it, keep its message
        text = " ".join(str(exc).split())
        text = text if len(text) <= 200 else text[:197] + "..."
        raise FormulaError(f"{label} failed: {type(exc).__name__}: {text}") from None
    if numbers and isinstance(result, (int, float)) and not isinstance(result, bool):
        try:
            flops = float(result)
        except OverflowError:  # an int past the largest float
            flops = math.inf
        if not 0 <= flops < math.inf:
            raise FormulaError(f"{label} returned {brief(result, 40)} FLOPs; a number of FLOPs "
                               f"must be finite and >= 0")
        return flops
    kernels = [result] if isinstance(result, Kernel) else (
        list(result.kernels) if isinstance(result, Workload) else None)
    if kernels is None:
        what = "None" if result is None else f"{type(result).__name__} {brief(result)}"
        also = " or a number (its FLOPs)" if numbers else ""
        raise FormulaError(f"{label} returned {what}; it must return a Kernel or a Workload "
                           f"(pytest_roofline.ops builds both){also}")
    bad = _figures(kernels)
    if bad is not None:
        raise FormulaError(f"{label} returned what cannot be priced: {bad}")
    return result  # type: ignore[no-any-return]

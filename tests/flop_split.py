"""A workload's FLOPs split by (unit, dtype), as the Triton tests compare a count with the
derivation beside it."""

from __future__ import annotations

from typing import Any


def by_dtype(work: Any) -> dict[tuple[str, str], float]:
    """``{(unit, dtype): FLOPs}`` summed over *work*'s kernels."""
    found: dict[tuple[str, str], float] = {}
    for k in work.kernels:
        key = (k.unit, k.dtype)
        found[key] = found.get(key, 0.0) + float(k.flops)
    return found

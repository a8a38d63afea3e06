"""The ``roofline`` marker's signature: the arguments :mod:`pytest_roofline.judging.marker`
checks, and the head of the help line pytest shows with ``--markers``
(``options.MARKER_HELP``, a test keeps the two in step).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engine.workload import Workload


def roofline(
    hw: object = None,
    regime: object = None,
    *,
    workload: Workload | None = None,
    flops: object = None,
    bytes: object = None,
    link_bytes: object = None,
    footprint: object = None,
    dtype: str | None = None,
    sparse: bool = False,
    min_intensity: float | None = None,
    max_intensity: float | None = None,
    max_time: object = None,
    fits: bool | None = None,
    margin: float | None = None,
    min_efficiency: float | None = None,
    trace: object = False,
    cross_check: float | None = None,
    optional_hw: object = None,
    strict: bool = False,
    min_kernel_efficiency: object = None,
    allow_faster: bool = False,
) -> None:
    """Analyze the test's workload on each chip in hw and check the expectations given."""


SIGNATURE = inspect.signature(roofline)
KEYS = tuple(SIGNATURE.parameters)
POSITIONAL = ("hw", "regime")


def signature_text() -> str:
    """``(hw=None, regime=None, *, workload=None, ...)``: the signature without annotations."""
    parts: list[str] = []
    for param in SIGNATURE.parameters.values():
        if param.kind is inspect.Parameter.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        parts.append(f"{param.name}={param.default!r}")
    return f"({', '.join(parts)})"

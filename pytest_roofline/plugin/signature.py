"""The ``roofline`` marker's signature and its help line, which pytest shows with ``--markers``.

Registered at startup by every session, roofline tests or none, so this module imports
nothing of the plugin: :mod:`pytest_roofline.plugin.marker` checks the arguments.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..workload import Workload


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
    trace: bool = False,
    cross_check: float | None = None,
) -> None:
    """Analyze the test's workload on each chip in hw and check the expectations given."""


SIGNATURE = inspect.signature(roofline)
KEYS = tuple(SIGNATURE.parameters)
POSITIONAL = ("hw", "regime")



def _signature_text() -> str:
    """``(hw=None, regime=None, *, workload=None, ...)``: the signature without annotations."""
    parts: list[str] = []
    for param in SIGNATURE.parameters.values():
        if param.kind is inspect.Parameter.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        parts.append(f"{param.name}={param.default!r}")
    return f"({', '.join(parts)})"


HELP = (
    f"roofline{_signature_text()}: analyze the test's workload "
    "(workload=, flops=/bytes=, or roofline.add() through the fixture) on each chip in hw "
    "(default: --roofline-hw) after the test body passes, and fail the test when an "
    "expectation does not hold: regime ('compute', 'memory', 'network' or a list of allowed "
    "ones), min_intensity/max_intensity (FLOP/B), max_time (roofline time bound, e.g. "
    "'2 ms'), fits (the footprint fits the chip's memory), margin (relative band around the "
    "ridge where a regime assertion is too close to call), min_efficiency (roofline time over "
    "the time measured with roofline.measure(), e.g. 0.5; measured figures are otherwise "
    "only reported). trace=True records the torch ops the test body runs as its workload; "
    "cross_check=0.02 asks a declared and a traced workload to agree within 2% per kernel "
    "family. Without expectations the figures are only reported."
)

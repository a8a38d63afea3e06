"""pytest-roofline: is this kernel or model compute-, memory- or network-bound on that chip?

The engine (units, hardware, workloads, analysis, ops, models) never imports pytest; the
pytest plugin (``pytest_roofline.plugin``) is a thin layer over it. Importing this package is
cheap: pint, numpy and yaml are imported only when a spec or a quantity is first parsed.
"""

from __future__ import annotations

from typing import Any

from .analysis import KernelResult, Result, analyze, crossover, knob_hint
from .errors import (
    BaselineError,
    RooflineError,
    RuleError,
    SpecError,
    UnitError,
    UnknownHardwareError,
    UnknownModelError,
    UnsupportedPrecisionError,
    WorkloadError,
)
from .hardware import Hardware, Link, get_hardware, list_hardware, register_hardware
from .workload import Kernel, Knob, Workload

__version__ = "0.1.0"

__all__ = [
    "BaselineError",
    "Hardware",
    "Kernel",
    "KernelResult",
    "Knob",
    "Link",
    "Result",
    "RooflineError",
    "RuleError",
    "SpecError",
    "UnitError",
    "UnknownHardwareError",
    "UnknownModelError",
    "UnsupportedPrecisionError",
    "Workload",
    "WorkloadError",
    "__version__",
    "analyze",
    "crossover",
    "get_hardware",
    "knob_hint",
    "list_hardware",
    "models",
    "ops",
    "register_hardware",
]


def __getattr__(name: str) -> Any:
    # ops and models are imported on first use, keeping `import pytest_roofline` light.
    if name in ("ops", "models"):
        import importlib

        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""pytest-roofline: is this kernel or model compute-, memory- or network-bound on that chip?

The engine (units, hardware, workloads, analysis, ops, models) never imports pytest; the
pytest plugin (``pytest_roofline.plugin``) is a thin layer over it. Importing this package is
cheap: pint, numpy and yaml are imported only when a spec or a quantity is first parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from . import models, ops
    from .engine import fusion
    from .engine.analysis import KernelResult, Result, analyze
    from .engine.overlap import overlapped
    from .engine.sweeps import Sweep, crossover, knob_hint, sweep
    from .engine.workload import Kernel, Knob, Workload
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
    from .measuring.timing import Measurement, measure
    from .planning import plan, plan_training
    from .profiling import Job, KernelRow, Profile, Profiler, profile, read_job, read_trace
    from .tracing import TraceError, Tracer, register_op, trace, unregister_op

# Public name -> the module that defines it. Imported on first use, so that loading the pytest
# plugin (which imports this package) costs nothing for a suite that never uses it.
_WHERE = {
    **dict.fromkeys(("KernelResult", "Result", "analyze"), "engine.analysis"),
    **dict.fromkeys(("Sweep", "crossover", "knob_hint", "sweep"), "engine.sweeps"),
    **dict.fromkeys(("BaselineError", "RooflineError", "RuleError", "SpecError", "UnitError",
                     "UnknownHardwareError", "UnknownModelError", "UnsupportedPrecisionError",
                     "WorkloadError"), "errors"),
    **dict.fromkeys(("Hardware", "Link", "get_hardware", "list_hardware", "register_hardware"),
                    "hardware"),
    **dict.fromkeys(("Kernel", "Knob", "Workload"), "engine.workload"),
    **dict.fromkeys(("Measurement", "measure"), "measuring.timing"),
    **dict.fromkeys(("TraceError", "Tracer", "register_op", "trace", "unregister_op"),
                    "tracing"),
    **dict.fromkeys(("Job", "KernelRow", "Profile", "Profiler", "profile", "read_job",
                     "read_trace"), "profiling"),
    "overlapped": "engine.overlap",
    "plan": "planning",
    "plan_training": "planning",
}


__all__ = [
    "BaselineError",
    "Hardware",
    "Job",
    "Kernel",
    "KernelResult",
    "KernelRow",
    "Knob",
    "Link",
    "Measurement",
    "Profile",
    "Profiler",
    "Result",
    "RooflineError",
    "RuleError",
    "SpecError",
    "Sweep",
    "TraceError",
    "Tracer",
    "UnitError",
    "UnknownHardwareError",
    "UnknownModelError",
    "UnsupportedPrecisionError",
    "Workload",
    "WorkloadError",
    "__version__",
    "analyze",
    "crossover",
    "fusion",
    "get_hardware",
    "knob_hint",
    "list_hardware",
    "measure",
    "models",
    "ops",
    "overlapped",
    "plan",
    "plan_training",
    "profile",
    "read_job",
    "read_trace",
    "register_hardware",
    "register_op",
    "sweep",
    "trace",
    "unregister_op",
]


def __getattr__(name: str) -> Any:
    import importlib

    if name not in _WHERE and name not in ("ops", "models", "fusion"):
        # not a public name: `from . import dtypes` asks here before it imports the submodule,
        # so nothing may be imported on the way to this error
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in ("ops", "models", "fusion"):
        where = "engine.fusion" if name == "fusion" else name
        value: Any = importlib.import_module(f".{where}", __name__)
    else:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

"""Measured per-kernel rooflines: a profiled call, or a profiler trace from any machine.

* :func:`profile` (``pytest_roofline.profile``) runs a torch call under ``torch.profiler``
  and sets each op's measured time (on a GPU, its kernels' device time) against the bound of
  the same op priced by the tracer's op table.
* :func:`read_trace` does the same for a trace file recorded anywhere
  (``prof.export_chrome_trace()``, ``record_shapes=True``), on the chip the trace names.

Both return a :class:`Profile` (see :mod:`.model`): per kernel its calls, measured time,
bound, efficiency (never above 1: a kernel faster than its bound is flagged instead),
regime and precision; what could not be priced, named with its time; the share priced.
Modules: :mod:`.trace_file` reads the file, :mod:`.pricing` is the one adapter to the
tracer, :mod:`.join` joins kernels to ops, :mod:`.run` profiles a call.

JAX alike (a jitted call under ``jax.profiler``, or its ``.xplane.pb``): :mod:`.xplane`
reads the XSpace, :mod:`.hlo` the compiled programs it holds, :mod:`.hlo_pricing` prices
an executed fusion with the JAX tracer's table, :mod:`.jax_trace` joins the executed ops
to their instructions, :mod:`.jax_run` profiles a call or reads a trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import KernelRow, Profile, Unpriced
    from .rules import ProfileError
    from .run import Profiler, profile, read_trace

__all__ = ["KernelRow", "Profile", "ProfileError", "Profiler", "Unpriced", "profile",
           "read_trace"]
_WHERE = {"KernelRow": "model", "Profile": "model", "ProfileError": "rules",
          "Unpriced": "model", "Profiler": "run", "profile": "run", "read_trace": "run"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Measured per-kernel rooflines: a profiled call, or a profiler trace from any machine.

* :func:`profile` (``pytest_roofline.profile``) runs a torch call under ``torch.profiler``
  and sets each op's measured time (on a GPU, its kernels' device time) against the bound of
  the same op priced by the tracer's op table.
* :func:`read_trace` does the same for a trace file recorded anywhere
  (``prof.export_chrome_trace()``, ``record_shapes=True``), on the chip the trace names.
* :func:`read_job` reads every rank's trace of a distributed job (:mod:`.job`), priced in
  parallel, and compares the ranks: a :class:`Job` (its rank table, its collectives' skew
  and the rank that keeps the others waiting, its gates).

Both return a :class:`Profile` (see :mod:`.model`): per kernel its calls, measured time,
bound, efficiency (never above 1: a kernel faster than its bound is flagged instead),
regime and precision; what could not be priced, named with its time; the share priced.
One core and a wing per trace format (neither wing imports the other):

* the core: :mod:`.job` (a job's ranks, over the ways in), :mod:`.run` (the ways in:
  ``profile(fn)``, ``read_trace(path)``; one size cap,
  one handling of FIFOs, links and directories), :mod:`.rows` (the one place a judged row is
  built), :mod:`.devices` (one chip identification over the hardware catalog),
  :mod:`.collectives` (communication priced on the link roof), :mod:`.comm_calls` (each
  collective kernel, nccl-tests' bandwidths), :mod:`.timeline`,
  :mod:`.model` (the Profile), :mod:`.text`, :mod:`.categories`, :mod:`.diff`,
  :mod:`.csv_rows`, :mod:`.job_text` (a job's reports) and :mod:`.rules`;
* :mod:`.torch`: a Kineto trace (``export_chrome_trace``) read, joined and priced with the
  torch tracer's table;
* :mod:`.jax`: a ``jax.profiler`` XSpace (``.xplane.pb``) and the compiled HLO it holds,
  priced with the JAX tracer's table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .job import Job, read_job
    from .model import KernelRow, Profile, Unpriced
    from .rules import ProfileError
    from .run import Profiler, profile, read_trace

__all__ = ["Job", "KernelRow", "Profile", "ProfileError", "Profiler", "Unpriced", "profile",
           "read_job", "read_trace"]
_WHERE = {"Job": "job", "read_job": "job", "KernelRow": "model", "Profile": "model",
          "ProfileError": "rules",
          "Unpriced": "model", "Profiler": "run", "profile": "run", "read_trace": "run"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

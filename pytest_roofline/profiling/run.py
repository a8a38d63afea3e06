"""Profiling a call, or reading a trace file: the two ways in to a :class:`Profile`.

* ``profile(fn, *args, **kwargs)`` (``Profiler(hw=..., warmup=..., repeats=...)`` for other
  settings) warms the call up, then runs it *repeats* times under ``torch.profiler`` with
  ``record_shapes=True`` (CPU ops; on a GPU the CUDA kernels too, their own device times),
  exports the trace and reads it back through the same path as a file from anywhere, so
  the two can never disagree. Figures are per call (the repeats' totals over *repeats*).
  A Triton launch is a row of its own, ``triton::<kernel>(<shapes>)``, priced as a trace
  counts it (in Triton's interpreter: as it runs); the interpreter's copies of its
  arguments are inside it, never rows.
  The chip is this machine's: ``host`` (the calibrated CPU) for a call on CPU tensors,
  ``cuda:N`` for one on a GPU, or one ``hw=`` names that this machine holds.
* ``read_trace(path, hw=None, capture=None)`` prices a trace recorded anywhere (a GPU
  cluster's job) on the chip its ``deviceProperties`` name, or on *hw*; its graph replays
  from the traces of their capture, where *capture* names them (:mod:`.torch.capture`).

A JAX call (a jitted function, JAX arrays among the arguments) and a ``jax.profiler`` trace
(its directory or ``.xplane.pb``, told apart by content) take the same two ways in through
:mod:`.jax.jax_run`, to the same :class:`Profile`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..atomic import why_not_written, write_with
from ..engine.analysis import analyze
from ..engine.limits import limit_of
from ..errors import WorkloadError
from ..hardware import Hardware, foreign_to_this_machine, get_hardware
from ..measuring.cuda_timing import cuda_index
from ..ops.rules import size
from .devices import chip_of
from .jax import jax_run
from .model import Profile
from .rules import MAX_BYTES, ProfileError
from .torch import trace_file, trace_json
from .torch.capture import Captured, note_of, paths_of
from .torch.join import Joiner, build

_TORCH_HINT = "pip install 'pytest-roofline[torch]'"
_NESTED = ("profile() cannot run while another torch profiler records (torch.profiler.profile, "
           "or a profile() around this one): torch runs one at a time; profile outside it")
_STOPPED = ("profile(fn): fn ran a torch profiler of its own, which stopped profile()'s; "
            "torch runs one at a time: profile a function that does not")


def read_trace(path: str | os.PathLike[str], hw: Any = None,
               capture: str | os.PathLike[str] | None = None, *,
               max_bytes: int | None = None) -> Profile:
    """The :class:`Profile` of a PyTorch profiler trace file (``.json``/``.json.gz``) of at
    most *max_bytes* bytes, on disk and inflated (default :data:`~.rules.MAX_BYTES`,
    1 GiB), its CUDA/HIP graph replays priced from the traces of their *capture* (a file or
    a folder of them, :mod:`.torch.capture`) where given; or of a ``jax.profiler`` trace (its
    directory or ``.xplane.pb``: :mod:`.jax.jax_run`)."""
    return _read(path, hw, capture, max_bytes)[0]


def read_rank(path: str | os.PathLike[str], hw: Any = None, *,
              max_bytes: int | None = None) -> tuple[Profile, Any]:
    """A trace's :class:`Profile` and what a job compares its ranks by (a Kineto trace's
    :class:`~.torch.trace_file.TraceFile`; None for a jax.profiler trace)."""
    return _read(path, hw, None, max_bytes)


def _read(path: str | os.PathLike[str], hw: Any, capture: Any,
          max_bytes: int | None) -> tuple[Profile, Any]:
    if not isinstance(path, (str, os.PathLike)) or not str(os.fspath(path)).strip():
        raise ProfileError(f"read_trace: path={path!r:.60} must name a trace: a .json or "
                           f".json.gz file, or a jax.profiler directory or .xplane.pb")
    if max_bytes is None:
        max_bytes = MAX_BYTES
    elif isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ProfileError(f"read_trace: max_bytes={max_bytes!r:.40} must be a whole number "
                           f"of bytes >= 1")
    if jax_run.kind_of(path) != "json":
        if capture is not None:
            raise ProfileError(f"capture={os.fspath(capture)!r:.80}: graph captures are read "
                               f"for a PyTorch trace; a jax.profiler trace has none to give")
        return jax_run.read_xplane(path, hw, max_bytes=max_bytes), None
    trace = trace_file.read(path, max_bytes)
    if not trace.shapes and capture is None:  # the shapes of replays are in the capture
        raise ProfileError(f"trace file {str(path)!r} has no input shapes: record it with "
                           f"torch.profiler.profile(record_shapes=True) so its ops can be "
                           f"priced")
    chip = _chip(hw, trace)
    notes: tuple[str, ...] = ()
    if hw is None and trace.device:
        notes = (f"chip {chip.name} from the trace's device {trace.device.get('name')!r}",)
    if trace.steps:
        notes += ("serving steps annotated: " + ", ".join(
            f"{count} x {label}" for label, count in sorted(
                trace.steps.items(), key=lambda item: (-item[1], item[0]))[:6]),)
    captures: tuple[Any, ...] = ()
    if capture is not None:
        captures = read_captures(capture, chip)
        notes += (note_of(captures),)
    with trace_json.paused_gc():
        return build(trace, chip, source=Path(path).name, notes=(*notes, *trace.warnings),
                     captures=captures), trace


def _chip(hw: Any, trace: Any) -> Any:
    if not trace.on_device and trace.accelerator:
        # priced as a CPU trace, its host ops' times would stand for the device's work
        raise ProfileError(f"an {trace.accelerator} accelerator trace, not a CPU trace: the "
                           f"catalog has no {trace.accelerator} spec and this reader does not "
                           f"join {trace.accelerator} device work to its ops, so it cannot be "
                           f"priced")
    if hw is None:
        if not trace.on_device:
            raise ProfileError("a CPU trace names no chip: give hw= (--hw), e.g. a spec of the "
                               "machine that recorded it")
        return chip_of(trace.device)
    return hw if isinstance(hw, Hardware) else get_hardware(hw)


class Profiler:
    """Profile settings; calling it profiles: ``Profiler(repeats=10)(fn, *args)``.

    * ``hw``: the chip to set the kernels against (default: this machine's, see the module
      docstring); a chip this machine does not hold is refused, as for ``measure``.
    * ``warmup``: untimed calls first (compilation, allocator, caches); default 1.
    * ``repeats``: profiled calls (their figures averaged); default 5.
    * ``trace_to``: a path to keep the recorded trace at (``.json``, or ``.json.gz``
      compressed; for a JAX call, ``.xplane.pb``), for ``pytest-roofline profile`` or
      another trace viewer later; default None, the trace is read and dropped.
    """

    __slots__ = ("hw", "repeats", "trace_to", "warmup")

    def __init__(self, *, hw: Any = None, warmup: int = 1, repeats: int = 5,
                 trace_to: str | os.PathLike[str] | None = None) -> None:
        for name, value, low in (("warmup", warmup, 0), ("repeats", repeats, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ProfileError(f"Profiler: {name}={value!r} must be a whole number >= "
                                   f"{low}")
            try:  # the rule of every count (as Timer's): up to 2**53
                size(value, name, minimum=low)
            except WorkloadError as exc:
                raise ProfileError(f"Profiler: {exc}") from None
        if trace_to is not None and (not isinstance(trace_to, (str, os.PathLike))
                                     or not str(os.fspath(trace_to)).strip()):
            raise ProfileError(f"Profiler: trace_to={trace_to!r:.60} must be a file path "
                               f"(str or os.PathLike) ending in .json or .json.gz")
        if trace_to is not None and not str(os.fspath(trace_to)).endswith((
                ".json", ".json.gz", ".xplane.pb")):
            raise ProfileError(f"Profiler: trace_to={os.fspath(trace_to)!r} must end in "
                               f".json or .json.gz (a torch call's chrome trace), or "
                               f".xplane.pb (a JAX call's XSpace), read back by "
                               f"pytest-roofline profile")
        self.hw, self.warmup, self.repeats = hw, warmup, repeats
        self.trace_to = None if trace_to is None else Path(os.fspath(trace_to))

    def __call__(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Profile:
        if not callable(fn):
            raise ProfileError(f"profile(fn, *args): fn must be callable, got "
                               f"{type(fn).__name__}")
        from ..tracing import recording, untraced

        if not recording():
            return self._profile(fn, args, kwargs)
        # inside trace() (or a trace=True body): the warm-up and the timed calls are not
        # the traced work; the call is, once, as roofline.measure's is
        with untraced():
            result = self._profile(fn, args, kwargs)
        fn(*args, **kwargs)
        return result

    def _profile(self, fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Profile:
        if jax_run.is_jax_call(fn, args, kwargs):
            return self._jax(fn, args, kwargs)
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile
        except ImportError:
            raise ProfileError(f"profile() runs the call under torch.profiler: "
                               f"{_TORCH_HINT}") from None
        if self.trace_to is not None and self.trace_to.name.endswith(".xplane.pb"):
            raise ProfileError(f"Profiler: trace_to={str(self.trace_to)!r} is a JAX "
                               f"XSpace's name; a torch call's trace is a chrome trace: "
                               f".json or .json.gz")
        from ..tracing.tables import profiler_active

        if profiler_active():
            raise ProfileError(_NESTED)
        cuda = _on_cuda(torch, args, kwargs)
        chip = self._chip(cuda)
        from ..measuring.timing import synchronize

        for _ in range(self.warmup):
            synchronize(fn(*args, **kwargs))
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda is not None else [])
        from ..tracing.tables import triton_launches as labelled

        with labelled() as launches, profile(activities=activities,
                                             record_shapes=True) as prof:
            recording = profiler_active()
            for _ in range(self.repeats):
                synchronize(fn(*args, **kwargs))
                if recording and not profiler_active():  # fn's own profiler stopped ours
                    raise ProfileError(_STOPPED)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "trace.json")
            prof.export_chrome_trace(path)
            if not os.path.isfile(path):  # never the temporary file's name: torch's failure
                raise ProfileError("torch.profiler wrote no trace of the profiled calls "
                                   "(its export_chrome_trace() left no file): nothing to "
                                   "read; profile again, or time the call with "
                                   "roofline.measure(fn, *args)")
            trace = trace_file.read(path)
            if self.trace_to is not None:
                _keep(path, self.trace_to)
        if cuda is not None and not trace.on_device:
            raise ProfileError(
                f"torch.profiler recorded no CUDA kernel of a call on cuda:{cuda}, only its "
                f"host ops, so no kernel can be set against {chip.name}: the profiler's GPU "
                f"activity tracing (CUPTI) recorded nothing in this process. Time the whole "
                f"call with roofline.measure(fn, *args) instead, or record the trace in a "
                f"process where torch.profiler shows kernels and read it with "
                f"pytest-roofline profile TRACE")
        name = getattr(fn, "__name__", type(fn).__name__)
        if not trace.roots and not trace.orphans:  # never an empty profile that passes
            raise ProfileError(f"profile({name}): the call ran no torch op the profiler "
                               f"records, so it has no kernel to judge (a call of numpy or "
                               f"plain Python?): time it with roofline.measure(fn, *args)")
        with trace_json.paused_gc():
            return build(trace, chip, source=f"profile({name})", repeats=self.repeats,
                         launches=launches.workloads, notes=trace.warnings)

    def _jax(self, fn: Callable[..., Any], args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Profile:
        """A JAX call, under jax.profiler (:mod:`.jax.jax_run`), on this machine's CPU unless
        *hw* names a chip this machine holds."""
        if self.trace_to is not None and not self.trace_to.name.endswith(".xplane.pb"):
            raise ProfileError(f"Profiler: trace_to={str(self.trace_to)!r} must end in "
                               f".xplane.pb for a JAX call (jax.profiler writes an XSpace)")
        return jax_run.profile_call(fn, args, kwargs, chip=self._chip(jax_run.gpu_index()),
                                    warmup=self.warmup, repeats=self.repeats,
                                    trace_to=self.trace_to)

    def _chip(self, cuda: int | None) -> Any:
        hw = self.hw
        if hw is None:
            hw = "host" if cuda is None else f"cuda:{cuda}"
        chip = hw if isinstance(hw, Hardware) else get_hardware(hw)
        reason = foreign_to_this_machine(chip)
        if reason is not None:
            raise ProfileError(f"a profile against {chip.name} is refused: {reason}")
        return chip


def _keep(path: str, target: Path) -> None:
    """Copy the exported trace to *target*, gzip-compressed when it ends in ``.gz``."""
    import gzip
    def write(tmp: str) -> None:
        with open(path, "rb") as src, (gzip.open(tmp, "wb") if target.suffix == ".gz"
                                       else open(tmp, "wb")) as dst:
            shutil.copyfileobj(src, dst)

    try:
        write_with(target, write)
    except OSError as exc:
        raise ProfileError(f"Profiler: the trace cannot be kept at {str(target)!r}: "
                           f"{why_not_written(exc, target)}") from None


def _on_cuda(torch: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The CUDA device index of the first tensor argument on a GPU (None: all on CPU)."""
    return cuda_index(args, kwargs)


_DEFAULT = Profiler()


def profile(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Profile:
    """Profile ``fn(*args, **kwargs)`` per kernel against this machine's roofline (see the
    module docstring; :class:`Profiler` for settings)."""
    return _DEFAULT(fn, *args, **kwargs)


def read_captures(capture: str | os.PathLike[str], chip: Any) -> tuple[Any, ...]:
    """Each capture trace of *capture* priced on *chip*."""
    out = []
    for path in paths_of(capture):
        with trace_json.paused_gc():
            trace = trace_file.read(path)
        if not trace.shapes:
            raise ProfileError(f"capture trace {str(path)!r} has no input shapes: record the "
                               f"capture with torch.profiler.profile(record_shapes=True)")
        if trace.launches == 0:
            raise ProfileError(f"capture trace {str(path)!r} holds no launch of device "
                               f"work, so it captured no graph")
        trace.on_device = False  # its launches ran nothing: walk its ops by their shapes
        if len(trace.segments) < 2:
            out.append(_captured(trace, chip, path.name, trace.launches))
            continue
        for number, (begin, end, launches) in enumerate(trace.segments, start=1):
            if launches == 0:
                continue
            part = replace(trace, roots=_within(trace.roots, begin * 1e-6, end * 1e-6))
            out.append(replace(_captured(part, chip, f"{path.name}#{number}", launches),
                               segment=number, file=path.name))
    return tuple(out)


def _within(ops: list[Any], low: float, high: float) -> list[Any]:
    """The outermost ops of *ops* (and their children) that lie within [low, high] s."""
    out: list[Any] = []
    for op in ops:
        if op.start >= low and op.end <= high:
            out.append(op)
        elif op.start < high and op.end > low:
            out += _within(op.children, low, high)
    return out


def _captured(trace: Any, chip: Any, source: str, launches: int) -> Captured:
    """A capture's ops (*trace*'s, walked by their shapes) priced on *chip*."""
    joiner = Joiner(trace, chip)
    joiner.run()
    bound = flops = nbytes = limit = 0.0
    main: tuple[float, str, str] = (-1.0, "memory", "-")
    for group in joiner.groups.values():
        if group.workload is None or not group.times:
            continue
        result = analyze(group.workload, chip)
        time = float(result.time) * len(group.times)
        bound += time
        limit += limit_of(result, chip) * len(group.times)
        flops += float(result.flops) * len(group.times)
        nbytes += float(result.bytes) * len(group.times)
        if time > main[0]:
            main = (time, str(result.regime), str(result.peak_label))
    unpriced = tuple(sorted({name for name, _ in joiner.unpriced}))
    return Captured(source=source, launches=launches, bound=bound, flops=flops,
                    bytes=nbytes, regime=main[1], precision=main[2], unpriced=unpriced,
                    limit=limit)

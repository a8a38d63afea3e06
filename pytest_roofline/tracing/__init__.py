"""Workloads from the code users already have: trace a PyTorch or JAX callable.

``trace(fn, *args, **kwargs)`` calls ``fn(*args, **kwargs)`` and returns the
:class:`~pytest_roofline.Workload` of what it ran, one kernel per op, with the FLOP and byte
conventions of ``pytest_roofline.ops`` (see ``_kernels``; docs/trace.md has the full list):

* **PyTorch**: a dispatch mode records each aten op on real, ``meta`` or fake tensors (on meta
  nothing is computed). Eager torch runs op by op: every op reads its inputs from memory and
  writes its outputs (fusion ``"none"``). Kernels are named after the op and the module path
  (``layers.0.mlp.up_proj.mm``).
* **JAX**: the program ``jax.jit`` lowers (its jaxpr), one kernel per primitive; a jitted
  program fuses elementwise epilogues into the product that feeds them and makes layout ops
  free (fusion ``"epilogue"``). Arguments may be arrays or ``jax.ShapeDtypeStruct``.

The framework is read from the arguments (and from *fn*: an ``nn.Module`` is torch).
:class:`Tracer` holds the options: ``Tracer(dtype="tf32")(fn, *args)`` prices the matrix
kernels in another precision (bytes still follow the tensors' storage), ``fusion=`` picks the
policy, ``name=`` names the workload.

The public function is ``pytest_roofline.trace``; this package is ``pytest_roofline.tracing``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .. import dtypes
from ..engine.overlap import OVERLAP, overlapped
from ..engine.workload import Kernel, Workload, describe_unknown
from ..errors import WorkloadError
from . import registry
from ._base import Recording, TraceError, detect
from ._mesh import MeshError, links_option
from .registry import scoped

__all__ = [
    "FRAMEWORKS",
    "FUSION",
    "Recording",
    "TraceError",
    "Tracer",
    "recording",
    "register_op",
    "require",
    "trace",
    "unregister_op",
    "untraced",
]

#: Fusion policies: "none" (every op round-trips memory), "epilogue" (elementwise ops after a
#: matrix product stay on chip, layout ops are free).
FUSION = ("none", "epilogue")
#: Framework -> the extra that installs it.
FRAMEWORKS = {"torch": "torch", "jax": "jax"}
_DEFAULT_FUSION = {"torch": "none", "jax": "epilogue"}


def register_op(name: str, formula: Any = None) -> Any:
    """Give the traced op *name* a formula (see :mod:`.registry`); a decorator without
    *formula*."""
    return registry.register_op(name, formula)


def unregister_op(name: str) -> None:
    """Forget the formula registered for *name*."""
    registry.unregister_op(name)


def recording() -> bool:
    """Whether a torch recording (``trace()``, a ``trace=True`` body) is in progress and
    not paused."""
    module = sys.modules.get(f"{__name__}._torch")
    return any(not getattr(r, "is_paused", False) for r in getattr(module, "_ACTIVE", ()))


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """While entered, no torch recording in progress (a ``trace=True`` body, a trace) records
    anything: ``roofline.measure``'s timed calls are not the traced workload."""
    module = sys.modules.get(f"{__name__}._torch")
    active = list(getattr(module, "_ACTIVE", ()))
    with contextlib.ExitStack() as pauses:
        for recorder in active:
            pauses.enter_context(recorder.paused())
        yield


def require(framework: str) -> None:
    """Import *framework*, or raise a TraceError naming the extra that installs it."""
    import importlib

    try:
        importlib.import_module(framework)
    except ImportError:
        raise TraceError(f"tracing {framework} code needs {framework} installed: pip install "
                         f"'pytest-roofline[{FRAMEWORKS[framework]}]'") from None


class Tracer:
    """Trace options; calling it traces: ``Tracer(dtype="tf32")(fn, *args, **kwargs)``.

    * ``dtype``: the precision matrix kernels are priced in (default: the operands' own);
      bytes always follow the tensors' storage widths.
    * ``fusion``: ``"none"`` or ``"epilogue"`` (see :data:`FUSION`); default: ``"none"`` for
      eager torch, ``"epilogue"`` for a jitted JAX program. Eager torch runs op by op, so it
      takes ``"none"`` only.
    * ``name``: the workload's name (default ``trace(<fn name>)``).
    * ``framework``: ``"torch"`` or ``"jax"`` (default: read from the arguments, else from
      what the callable closes over).
    * ``links``: which chip link carries each mesh axis (JAX ``shard_map``) or process group
      (torch), ``{"x": "ici", "data": ("nvlink", 18)}``; default: the chip's default link
      (see ``_mesh``).
    * ``overlap``: ``"none"`` (default) or ``"full"``: the collectives' link time hidden
      behind the program's matrix work (:func:`pytest_roofline.overlapped`).
    * ``strict``: fail (TraceError) instead of recording an op that has no formula
      (default: record its bytes and list it in ``Workload.unknown``).
    * ``formulas``: ``{op name: formula}`` for this tracer only (as ``register_op`` takes
      them); they win over ``register_op``'s and the built-in ones.

    ``tracer(fn, *args)`` traces a call; ``with tracer.body() as recording:`` records the
    torch ops a block runs (what a ``trace=True`` test does); both end in
    :meth:`finish`.
    """

    __slots__ = ("dtype", "formulas", "framework", "fusion", "links", "name", "overlap",
                 "strict")

    def __init__(self, *, dtype: object = None, fusion: str | None = None,
                 name: str | None = None, framework: str | None = None,
                 links: object = None, overlap: str = "none", strict: bool = False,
                 formulas: object = None) -> None:
        if dtype is not None:
            try:
                dtype = dtypes.canonical(dtype)
            except LookupError as exc:
                raise TraceError(f"Tracer: dtype={dtype!r}: {exc}") from None
        if fusion is not None and fusion not in FUSION:
            raise TraceError(f"Tracer: fusion={fusion!r} is not a policy; allowed: "
                             f"{', '.join(map(repr, FUSION))}")
        if framework is not None and framework not in FRAMEWORKS:
            raise TraceError(f"Tracer: framework={framework!r} is not allowed; allowed: "
                             f"{', '.join(map(repr, FRAMEWORKS))}")
        if name is not None and not isinstance(name, str):
            raise TraceError(f"Tracer: name={name!r} must be a string")
        try:
            self.links = links_option(links)
        except MeshError as exc:
            raise TraceError(f"Tracer: {exc}") from None
        if not isinstance(overlap, str) or overlap not in OVERLAP:
            raise TraceError(f"Tracer: overlap={overlap!r} is not allowed; allowed: "
                             f"{', '.join(map(repr, OVERLAP))}")
        self.overlap = overlap
        if not isinstance(strict, bool):
            raise TraceError(f"Tracer: strict={strict!r} must be True or False")
        self.strict = strict
        self.formulas = scoped(formulas)
        self.dtype: str | None = dtype
        self.fusion = fusion
        self.name = name
        self.framework = framework

    def __repr__(self) -> str:
        return (f"Tracer(dtype={self.dtype!r}, fusion={self.fusion!r}, name={self.name!r}, "
                f"framework={self.framework!r}, links={self.links!r}, "
                f"overlap={self.overlap!r}, strict={self.strict!r}"
                + (f", formulas={self.formulas.names()!r})" if self.formulas else ")"))

    def __call__(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Workload:
        if not callable(fn):
            raise TraceError(f"trace(fn, *args): fn must be callable, got "
                             f"{type(fn).__name__}: {fn!r:.80}")
        framework = self.framework or detect(fn, args, kwargs)
        require(framework)
        fusion = self.fusion or _DEFAULT_FUSION[framework]
        try:
            recording = self._record(fn, args, kwargs, framework, fusion)
        except MeshError as exc:
            raise TraceError(str(exc)) from None
        name = self.name or f"trace({getattr(fn, '__name__', type(fn).__name__)})"
        return self.finish(recording, name=name)

    def _record(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                framework: str, fusion: str) -> Recording:
        """What *fn* ran, one :class:`Recording` whichever framework ran it."""
        if framework == "torch":
            if fusion != "none":
                raise TraceError(f"Tracer: fusion={fusion!r}: eager torch runs op by op, every "
                                 f"op round-tripping memory; it takes fusion='none'")
            from . import _torch

            return _torch.record(fn, args, kwargs, self.dtype, self.links, self.formulas)
        from . import _jax

        return _jax.record(fn, args, kwargs, self.dtype, fusion, self.links, self.formulas)

    def body(self, *, targets: Iterable[object] = ()) -> Any:
        """A context manager recording the torch ops run inside its block, as a test body:
        tensor factories, RNG fills and reference comparisons are left out (counted in the
        recording's ``left_out``); with *targets* (functions, modules, torch functions or
        ops), only what runs inside their calls. Its value, the recorder, has ``kernels``,
        ``unknown``, ``assumed`` and ``left_out`` while it records; once the block ends,
        ``recorder.result(footprint=...)`` is its :class:`Recording`, which :meth:`finish`
        makes a workload of."""
        require("torch")
        from . import _torch

        return _torch.Session({}, self.dtype, self.links, body=True, targets=targets,
                              formulas=self.formulas)

    def finish(self, recording: Recording, *, name: str, strict: bool = False) -> Workload:
        """The end of every trace, from its :class:`Recording`: under ``strict`` (this
        tracer's or the caller's) a TraceError naming the ops without a formula; the
        workload (a TraceError when nothing worth a kernel ran; what the recording assumed
        becomes ``Workload.assumed``); the collectives' overlap."""
        if not isinstance(recording, Recording):
            raise TraceError(f"Tracer.finish: recording={recording!r:.80} must be a "
                             f"Recording (a recorder's result(footprint=...))")
        unknown = dict(recording.unknown)
        if self.strict or strict:
            refuse_unknown(unknown, name)
        traced = workload(list(recording.kernels), footprint=recording.footprint, name=name,
                          unknown=unknown, assumed=dict(recording.assumed))
        if self.overlap == "full":
            try:
                return overlapped(traced)
            except WorkloadError as exc:
                raise TraceError(f"Tracer(overlap='full'): {exc}") from None
        return traced


def refuse_unknown(unknown: dict[str, int], name: str) -> None:
    """Under ``strict``: a TraceError naming the ops without a formula, and how to give one."""
    if not unknown:
        return
    first = next(iter(sorted(unknown)))
    raise TraceError(f"{name}: {describe_unknown(unknown)}; strict tracing counts no op as "
                     f"0 FLOPs: give each a formula, pytest_roofline.register_op({first!r}, "
                     f"formula), a function of the op's arguments that returns a Kernel or "
                     f"a Workload (docs/trace.md)")


def workload(kernels: list[Kernel], *, footprint: float, name: str,
             unknown: dict[str, int] | None = None,
             assumed: dict[str, int] | None = None) -> Workload:
    """The traced program, or a TraceError when it ran nothing worth a kernel."""
    if not kernels:
        raise TraceError(f"{name}: the traced code ran no op that reads or writes memory")
    return Workload(kernels, footprint=footprint, name=name, unknown=unknown, assumed=assumed)


_DEFAULT = Tracer()


def trace(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Workload:
    """Call ``fn(*args, **kwargs)`` and return the Workload of what it ran (see the module
    docstring; :class:`Tracer` for options)."""
    return _DEFAULT(fn, *args, **kwargs)

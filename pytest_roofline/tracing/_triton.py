"""Triton launches while a torch trace records: one kernel per launch of a ``triton.jit``
function, named after the kernel function.

No tensor op is dispatched for a launch on a GPU, and in interpreter mode
(``TRITON_INTERPRET=1``, how CI runs kernels on a CPU) the only ops torch sees are the
interpreter's own copies of the arguments to the host and back, which are not the kernel's
work. So a launch is caught where Triton starts it, the ``run`` of the kernel object
(``JITFunction`` compiled, ``InterpretedFunction`` interpreted; ``kernel[grid](...)``,
``wrap_triton(kernel)[grid](...)`` and a ``triton_op``'s launches all end there), and the
ops it dispatches are hidden from the recorder. On a GPU Triton's public launch hook
(``triton.knobs.runtime.launch_enter_hook``) hands over the launch metadata.

What a launch is charged, by the first that applies (``Workload.assumed`` names which):

* **A formula**: ``register_op(<kernel function name>, formula)`` or the tracer's own
  (``Tracer(formulas=...)``), called with the launch's arguments as passed; it returns a
  Kernel or a Workload, taken as it is, or a number, its FLOPs alone (the bytes then the
  launch's, below).
* **The kernel's ``launch_metadata``** (Triton's convention: ``"flops"``, ``"flops8"``,
  ``"flops16"``, ``"flops32"``, ``"flops64"`` keys, summed, and ``"bytes"``).
* **Counted as it runs** in Triton's interpreter (:mod:`._triton_count`): no annotation.
* Otherwise (a GPU, meta tensors) the launch is listed in ``Workload.unknown`` under its
  name (0 FLOPs is never assumed without a word) and strict tracing refuses it.
* **Bytes**, where the interpreter does not count them: each tensor argument whole, once per
  way the kernel's source moves it (read, written, or both: :mod:`._triton_source`).
* **Autotuning**: the configurations ``triton.autotune`` benchmarks on a launch are not the
  program's work; the launch it makes with the chosen configuration is recorded.
* **Unit**: a formula's number and Triton's metadata do not say whether the FLOPs ran on
  the matrix units; they are priced at the matrix peak, the faster roof, so the time stays
  a lower bound (a counted launch splits its ``tl.dot`` work from the rest).
* **Meta and fake tensors** (``wrap_triton`` under ``torch.compile`` or export, a meta
  trace): nothing can run; the launch is recorded as above without running.
* **profile()**: :class:`Labelled` puts each launch in a profiler range of its own, priced
  as a trace counts it.

Nothing here imports triton: launches are watched only when the traced code has imported it.
Triton's launch API used here (``KernelInterface.run(*args, grid, warmup, **kwargs)``,
``arg_names``, ``fn``, ``launch_metadata``) is checked by ``tests/test_trace_triton.py``.
"""

from __future__ import annotations

import contextlib
import re
import sys
import types
from typing import Any

from .. import dtypes
from ..engine.workload import Kernel
from . import _kernels as K
from . import _triton_count as _C
from . import _triton_source as _S
from . import registry

#: Triton's launch-metadata keys for FLOPs: ``flops`` or ``flops<bits>``.
_FLOPS_KEY = re.compile(r"^flops(\d*)$")
#: The floating-point width a ``flops<bits>`` key names -> the precision priced.
_WIDTH = {str(int(8 * dtypes.ITEMSIZE[p])): p for p in ("fp8", "bf16", "fp32", "fp64")}


def _classes() -> list[type]:
    """The kernel classes whose ``run`` starts a launch, of the triton already imported."""
    found: list[type] = []
    jit = sys.modules.get("triton.runtime.jit")
    if jit is not None and isinstance(getattr(jit, "JITFunction", None), type):
        found.append(jit.JITFunction)
    interpreter = sys.modules.get("triton.runtime.interpreter")
    if interpreter is not None and isinstance(getattr(interpreter, "InterpretedFunction",
                                                      None), type):
        found.append(interpreter.InterpretedFunction)
    tuner = sys.modules.get("triton.runtime.autotuner")
    if found and tuner is not None and isinstance(getattr(tuner, "Autotuner", None), type):
        found.append(tuner.Autotuner)
    return found


class Launches:
    """Watches Triton launches for one recorder while entered (see the module docstring)."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        self.count = 0  # launches recorded: a custom op that launched kernels is its launches
        self._patched: list[tuple[type, Any]] = []
        self._metadata: Any = None
        self._knobs: Any = None
        self.watching = False  # True while entered with triton imported
        # per launch: its first kernel, its name if unknown, the note of how it was counted
        self._log: list[tuple[int, str | None, str | None]] = []

    def __enter__(self) -> Launches:
        classes = _classes()
        if not classes:
            return self
        for cls in classes:
            original = cls.__dict__.get("run")
            if original is None or getattr(original, "_roofline_launch", False):
                continue  # an outer trace watches already: it hands launches to the inner one
            wrap = self._tuned if cls.__name__ == "Autotuner" else self._wrap
            cls.run = wrap(original)  # type: ignore[attr-defined]
            self._patched.append((cls, original))
        knobs = sys.modules.get("triton.knobs")
        runtime = getattr(knobs, "runtime", None)
        hook = getattr(runtime, "launch_enter_hook", None)
        if hook is not None and hasattr(hook, "add"):
            hook.add(self._hook)
            self._knobs = hook
        _ACTIVE.append(self)
        self.watching = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.watching = False
        for cls, original in reversed(self._patched):
            cls.run = original  # type: ignore[attr-defined]
        self._patched = []
        if self._knobs is not None:
            self._knobs.remove(self._hook)
            self._knobs = None
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    def _hook(self, metadata: Any) -> None:
        """Triton's launch hook (compiled kernels): keep the launch's metadata."""
        self._metadata = metadata

    def _wrap(self, original: Any) -> Any:
        def run(kernel: Any, *args: Any, grid: Any, warmup: Any = False, **kwargs: Any) -> Any:
            watcher = _ACTIVE[-1] if _ACTIVE else None
            if warmup or watcher is None:
                return original(kernel, *args, grid=grid, warmup=warmup, **kwargs)
            return watcher.launch(original, kernel, args, kwargs, grid)

        run._roofline_launch = True  # type: ignore[attr-defined]
        return run

    def _tuned(self, original: Any) -> Any:
        """``Autotuner.run``: the configurations it benchmarks are not the program's work;
        the launch it makes with the chosen one is."""
        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            watcher = _ACTIVE[-1] if _ACTIVE else None
            if watcher is None:
                return original(tuner, *args, **kwargs)
            first = len(watcher._log)
            out = original(tuner, *args, **kwargs)
            watcher.keep_last(first)
            return out

        run._roofline_launch = True  # type: ignore[attr-defined]
        return run

    def logged(self) -> int:
        """Launches recorded so far (a mark for :meth:`forget` and :meth:`keep_last`)."""
        return len(self._log)

    def keep_last(self, first: int) -> None:
        """Forget the launches recorded since launch number *first*, but the last."""
        if len(self._log) - first < 2:
            return
        last = self._log[-1]
        kept = self.recorder.kernels[last[0]:]
        self.forget(first)
        start = len(self.recorder.kernels)
        self.recorder.kernels.extend(kept)
        self._restore(last)
        self._log.append((start, last[1], last[2]))
        self.count += 1

    def forget(self, first: int) -> None:
        """Forget the launches recorded since launch number *first* (their kernels, their
        unknown names and what was noted of how they were counted)."""
        dropped = self._log[first:]
        if not dropped:
            return
        recorder = self.recorder
        del recorder.kernels[dropped[0][0]:]
        for _, name, note in dropped:
            for table, key in ((recorder.unknown, name), (recorder.assumed, note)):
                if key is not None and key in table:
                    table[key] -= 1
                    if not table[key]:
                        del table[key]
        del self._log[first:]
        self.count -= len(dropped)

    def _restore(self, entry: tuple[int, str | None, str | None]) -> None:
        recorder = self.recorder
        for table, key in ((recorder.unknown, entry[1]), (recorder.assumed, entry[2])):
            if key is not None:
                table[key] = table.get(key, 0) + 1

    def launch(self, original: Any, kernel: Any, args: tuple[Any, ...],
               kwargs: dict[str, Any], grid: Any) -> Any:
        """Run one launch with the recorder's view of its copies hidden, then record it;
        in the interpreter, counted as it runs when nothing else says its work."""
        recorder = self.recorder
        recording = recorder.recording
        self._metadata = None
        if _valueless(args, kwargs):  # meta or fake tensors: there is nothing to run
            if recording:
                self.record(kernel, args, kwargs, grid)
            return None
        count = _C.Count() if recording and _counts(kernel) else None
        with recorder.paused():
            if count is None:
                out = original(kernel, *args, grid=grid, warmup=False, **kwargs)
            else:
                with count:
                    out = original(kernel, *args, grid=grid, warmup=False, **kwargs)
        if recording:
            self.record(kernel, args, kwargs, grid, count)
        return out

    def record(self, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               grid: Any, count: _C.Count | None = None) -> None:
        """One launch's kernels: by its formula, else its launch_metadata, else as counted
        in the interpreter, else unknown by name (see the module docstring)."""
        recorder = self.recorder
        name = kernel_name(kernel)
        self.count += 1
        formula = registry.lookup(name, recorder.formulas)
        start = len(recorder.kernels)
        bound = bind(kernel, args, kwargs)

        def implied() -> float:
            if count is not None and not count.descriptors:
                return count.nbytes()
            return _S.tensor_bytes(kernel, bound)[0]

        if formula is not None:
            recorder.record_formula(name, formula, args, kwargs, nbytes=implied)
            self._note(start, None, f"Triton {name}: by its formula")
            return
        nbytes, dtype = _S.tensor_bytes(kernel, bound)
        stated = self._stated(kernel, bound, grid, name)
        label = recorder.label(name)
        if stated is not None:
            flops, width, stated_bytes = stated
            recorder.kernels.append(Kernel(label, flops, stated_bytes if stated_bytes is not None
                                           else implied(), unit="matrix",
                                           dtype=recorder.dtype or width or dtype or "fp32"))
            self._note(start, None, f"Triton {name}: by its launch_metadata")
            return
        if count is not None:
            recorder.kernels.extend(counted(label, count, nbytes, dtype, recorder.dtype))
            how = "counted in the interpreter" + (
                " (descriptors: bytes of its arguments)" if count.descriptors else "")
            self._note(start, None, f"Triton {name}: {how}")
            return
        recorder.kernels.append(K.vector(label, flops=0.0, nbytes=nbytes, dtype=dtype))
        self._note(start, name, None)

    def _note(self, start: int, unknown: str | None, note: str | None) -> None:
        """Log one launch recorded from kernel *start* on: unknown by name, or counted as
        *note* says (``Workload.assumed``)."""
        entry = (start, unknown, note)
        self._log.append(entry)
        self._restore(entry)

    def _stated(self, kernel: Any, bound: dict[str, Any], grid: Any,
                name: str) -> tuple[float, str | None, float | None] | None:
        """FLOPs, their precision and bytes from the kernel's ``launch_metadata``."""
        candidates: list[Any] = []
        if self._metadata is not None:  # compiled: Triton's hook had it
            held = self._metadata  # Triton's LazyDict (get() evaluates it), or a dict
            candidates.append(held if isinstance(held, dict) or not hasattr(held, "get")
                              else held.get())
        function = launch_metadata_of(kernel)
        if function is not None:  # interpreted, or a Triton whose hook does not carry it
            size = grid(bound) if callable(grid) else grid
            meta = types.SimpleNamespace(name=name, num_warps=None, num_stages=None,
                                         num_ctas=1, shared=0)
            candidates.append(lambda: function(tuple(size), meta, dict(bound)))
        for candidate in candidates:
            data = candidate() if callable(candidate) else candidate
            stated = _flops_stated(data)
            if stated is not None:
                return stated
        return None


def _flops_stated(data: Any) -> tuple[float, str | None, float | None] | None:
    """FLOPs, their precision and bytes of launch metadata (None: it states no FLOPs)."""
    if not isinstance(data, dict):
        return None
    flops, width = 0.0, None
    found = False
    for key, value in data.items():
        match = _FLOPS_KEY.match(str(key))
        if match and isinstance(value, (int, float)):
            flops += float(value)
            width = _WIDTH.get(match.group(1), width)
            found = True
    if not found:
        return None
    stated_bytes = data.get("bytes")
    return flops, width, (float(stated_bytes) if isinstance(stated_bytes, (int, float))
                          else None)


_ACTIVE: list[Launches] = []


def kernel_name(kernel: Any) -> str:
    """The name a launch is known by: the kernel function's ``__name__``."""
    fn = getattr(kernel, "fn", None)
    return str(getattr(fn, "__name__", None) or getattr(kernel, "__name__", "triton_kernel"))


def launch_metadata_of(kernel: Any) -> Any:
    """The kernel's ``launch_metadata`` function (``triton.jit(launch_metadata=...)``)."""
    function = getattr(kernel, "launch_metadata", None)
    if function is None:
        function = (getattr(kernel, "kwargs", None) or {}).get("launch_metadata")
    return function if callable(function) else None


def bind(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The launch's arguments by the kernel's parameter names."""
    names = list(getattr(kernel, "arg_names", ()) or ())
    bound = dict(zip(names, args, strict=False))
    bound.update({k: v for k, v in kwargs.items() if not names or k in names})
    return bound


def _valueless(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """True when a launch's tensors are on meta or fake (``wrap_triton`` traced by
    ``torch.compile`` or export, a meta trace): no kernel can run on them."""
    for value in (*args, *kwargs.values()):
        tensor = getattr(value, "base", value)
        if getattr(tensor, "is_meta", False) or type(tensor).__name__ == "FakeTensor":
            return True
    return False


def _counts(kernel: Any) -> bool:
    """Whether a launch of *kernel* is counted as it runs: it runs in Triton's interpreter
    and states no launch_metadata (a formula that gives FLOPs alone takes the bytes)."""
    return type(kernel).__name__ == "InterpretedFunction" and launch_metadata_of(kernel) is None


def counted(label: str, count: _C.Count, nbytes: float, dtype: str | None,
            priced: str | None) -> list[Kernel]:
    """The kernels of a launch counted in the interpreter, one per precision its work ran in:
    its dots' products on the matrix units (the largest first, carrying every byte; *priced*,
    a tracer's dtype override, prices all of them), its other arithmetic on the vector
    units, all timed as one kernel (``epilogue_of`` the first); a launch with no dot is its
    vector kernels, a launch with no arithmetic one vector kernel of 0 FLOPs in *dtype*.
    A launch that ran an op the counter does not know is refused by the op's name."""
    if count.refused:
        from ._base import TraceError

        ran = ", ".join(f"{name} x{calls}" for name, calls in sorted(count.refused.items()))
        raise TraceError(f"Triton {label}: ran {ran[:80]}, which is not counted; give its "
                         f"work with register_op({label!r}, formula)")
    moved = nbytes if count.descriptors else count.nbytes()
    matrix = {p: f for p, f in count.matrix.items() if f > 0}
    if priced and matrix:
        matrix = {priced: sum(matrix.values())}
    vector = {p: f for p, f in count.vector.items() if f > 0}
    kernels: list[Kernel] = []
    for width, flops in sorted(matrix.items(), key=lambda item: -item[1]):
        if not kernels:
            kernels.append(Kernel(label, flops, moved, unit="matrix", dtype=width))
        else:
            kernels.append(Kernel(f"{label}.{width}", flops, 0.0, unit="matrix", dtype=width,
                                  epilogue_of=label))
    for width, flops in sorted(vector.items(), key=lambda item: -item[1]):
        if not kernels:
            kernels.append(K.vector(label, flops=flops, nbytes=moved, dtype=width))
            continue
        name = f"{label}.vector" if len(vector) == 1 or not matrix else f"{label}.vector.{width}"
        if not matrix:
            name = f"{label}.{width}"
        kernels.append(K.vector(name, flops=flops, nbytes=0.0, dtype=width).evolve(
            epilogue_of=label))
    return kernels or [K.vector(label, flops=0.0, nbytes=moved, dtype=dtype)]


class _Within:
    """The launches of one custom op's call: with a formula registered for the op they are
    hidden (the formula counts the op); without one, they are the op's kernels."""

    __slots__ = ("launches", "mark", "pause", "ran")

    def __init__(self, recorder: Any, launches: Launches, hide: bool) -> None:
        self.launches = launches
        self.pause = recorder.paused() if hide else contextlib.nullcontext()
        self.mark = 0
        self.ran = False

    def __enter__(self) -> None:
        self.mark = self.launches.count
        self.pause.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.pause.__exit__(*exc)
        self.ran = self.launches.count > self.mark


def launches_in(recorder: Any, func: Any) -> _Within | None:
    """For a ``torch.library`` op (not aten's) while Triton launches are watched: how its
    launches count (see :class:`_Within`); None otherwise."""
    launches = recorder.launches
    if launches is None or launches not in _ACTIVE:
        return None
    namespace = getattr(func, "namespace", "aten")
    if namespace in ("aten", "prim"):
        return None
    name = f"{namespace}::{func.overloadpacket.__name__}"
    return _Within(recorder, launches,
                   hide=registry.lookup(name, recorder.formulas) is not None)


def _hook_count() -> int:
    """Launch hooks this module has left with Triton (0 outside a trace)."""
    knobs = sys.modules.get("triton.knobs")
    hook = getattr(getattr(knobs, "runtime", None), "launch_enter_hook", None)
    calls = getattr(hook, "calls", ())
    return sum(1 for call in calls if getattr(call, "__self__", None).__class__ is Launches)

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
  ``"flops16"``, ``"flops32"``, ``"flops64"`` keys, and ``"bytes"``), called as Triton
  calls it (the grid as launched; metadata with the launch's ``num_warps``/``num_stages``,
  Triton's defaults otherwise; every argument, the kernel's defaults included). Each key
  keeps its precision: one kernel per precision, the largest carrying the bytes, the others
  in its epilogue. A figure not finite and >= 0 is refused naming the kernel.
* **Counted as it runs** in Triton's interpreter (:mod:`._triton_count`): no annotation.
* **Counted by replay** where no interpreter ran it (a GPU, meta or fake tensors): replayed
  once in the interpreter on stand-in CPU tensors (:mod:`._triton_replay`).
* Otherwise (a replay that failed) the launch is listed in ``Workload.unknown`` under its
  name (0 FLOPs is never assumed without a word), why is noted, and strict tracing refuses
  it.
* **Bytes**, where the interpreter does not count them: each tensor argument whole, once per
  way the kernel's source moves it (read, written, or both: :mod:`._triton_source`).
* **Autotuning**: the configurations ``triton.autotune`` benchmarks on a launch are not the
  program's work, nor its hooks' copies (``restore_value``, ``reset_to_zero``); the launch
  it makes with the chosen configuration is recorded.
* **Unit**: a formula's number and Triton's metadata do not say whether the FLOPs ran on
  the matrix units; they are priced at the matrix peak, the faster roof, so the time stays
  a lower bound (a counted launch splits its ``tl.dot`` work from the rest).
* **Meta and fake tensors** (``wrap_triton`` under ``torch.compile`` or export, a meta
  trace): nothing can run; the launch is recorded as above without running (replayed).
* **profile()**: :class:`Labelled` puts each launch in a profiler range of its own, priced
  as a trace counts it.

Nothing here imports triton: launches are watched only when the traced code has imported it.
Triton's launch API used here (``KernelInterface.run(*args, grid, warmup, **kwargs)``,
``arg_names``, ``fn``, ``launch_metadata``) is checked by ``tests/test_trace_triton.py``.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
import types
from typing import Any

from .. import dtypes
from ..engine.workload import Kernel
from ..errors import brief
from . import _kernels as K
from . import _triton_compat as TC
from . import _triton_count as _C
from . import _triton_replay as _R
from . import _triton_source as _S
from . import registry
from ._base import TraceError

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
        self._patched: list[tuple[type, str, Any]] = []
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
            self._patched.append((cls, "run", original))
            trial = cls.__dict__.get(TC.TUNER_TRIAL) if cls.__name__ == "Autotuner" else None
            if trial is not None:  # a configuration's benchmark: unrecorded, so unreplayed
                setattr(cls, TC.TUNER_TRIAL, _trial(trial))
                self._patched.append((cls, TC.TUNER_TRIAL, trial))
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
        for cls, name, original in reversed(self._patched):
            setattr(cls, name, original)
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
            if warmup or watcher is None or _R.replaying():
                return original(kernel, *args, grid=grid, warmup=warmup, **kwargs)
            return watcher.launch(original, kernel, args, kwargs, grid)

        run._roofline_launch = True  # type: ignore[attr-defined]
        return run

    def _tuned(self, original: Any) -> Any:
        """``Autotuner.run``: the configurations it benchmarks are not the program's work,
        nor its hooks' copies (``restore_value``'s clone and copy back, ``reset_to_zero``'s
        zeroing, a config's ``pre_hook``); the launch it makes with the chosen one is."""
        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            watcher = _ACTIVE[-1] if _ACTIVE else None
            if watcher is None or _R.replaying():
                return original(tuner, *args, **kwargs)
            first = len(watcher._log)
            mark = len(watcher.recorder.kernels)
            out = original(tuner, *args, **kwargs)
            watcher.keep_last(first, mark)
            return out

        run._roofline_launch = True  # type: ignore[attr-defined]
        return run

    def logged(self) -> int:
        """Launches recorded so far (a mark for :meth:`forget` and :meth:`keep_last`)."""
        return len(self._log)

    def keep_last(self, first: int, mark: int | None = None) -> None:
        """Forget the launches recorded since launch number *first*, but the last; with
        *mark*, every other kernel recorded since kernel number *mark* too."""
        launched = len(self._log) - first
        if launched == 0 and mark is not None:
            del self.recorder.kernels[mark:]
        if launched < (1 if mark is not None else 2):
            return
        last = self._log[-1]
        kept = self.recorder.kernels[last[0]:]
        self.forget(first)
        if mark is not None:
            del self.recorder.kernels[mark:]
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
            if count is not None:
                return count.nbytes()
            return _S.tensor_bytes(kernel, bound)[0]

        if formula is not None:
            recorder.record_formula(name, formula, args, kwargs, nbytes=implied)
            self._note(start, None, f"Triton {name}: by its formula")
            return
        nbytes, dtype = _S.tensor_bytes(kernel, bound)
        stated = self._stated(kernel, bound, grid, name, kwargs)
        label = recorder.label(name)
        if stated is not None:
            widths, stated_bytes = stated
            recorder.kernels.extend(_by_precision(
                label, widths, stated_bytes if stated_bytes is not None else implied(),
                recorder.dtype, dtype))
            self._note(start, None, f"Triton {name}: by its launch_metadata")
            return
        how = "counted in the interpreter"
        failed = None
        if count is None:
            with recorder.paused():  # the replay's own copies are not the program's
                replayed = _R.replay(kernel, args, kwargs, lambda: _size(grid, bound))
            count, failed = replayed.count, replayed.failed
            how = "counted by replay" + (
                " (stand-in data: its work depends on values it reads)"
                if replayed.standin else "")
        if count is not None:
            recorder.kernels.extend(counted(label, count, nbytes, dtype, recorder.dtype))
            self._note(start, None, f"Triton {name}: {how}")
            return
        recorder.kernels.append(K.vector(label, flops=0.0, nbytes=nbytes, dtype=dtype))
        self._note(start, name, f"Triton {name}: not counted, {failed}" if failed else None)

    def _note(self, start: int, unknown: str | None, note: str | None) -> None:
        """Log one launch recorded from kernel *start* on: unknown by name, or counted as
        *note* says (``Workload.assumed``)."""
        entry = (start, unknown, note)
        self._log.append(entry)
        self._restore(entry)

    def _stated(self, kernel: Any, bound: dict[str, Any], grid: Any, name: str,
                options: dict[str, Any] | None = None,
                ) -> tuple[dict[str | None, float], float | None] | None:
        """FLOPs by precision and bytes from the kernel's ``launch_metadata``, called as
        Triton calls it: ``(grid, metadata, arguments)``, the arguments with the kernel's
        defaults, the metadata with the launch's ``num_warps``/``num_stages``/``num_ctas``
        (Triton's defaults where it sets none)."""
        candidates: list[Any] = []
        if self._metadata is not None:  # compiled: Triton's hook had it
            held = self._metadata  # Triton's LazyDict (get() evaluates it), or a dict
            candidates.append(held if isinstance(held, dict) or not hasattr(held, "get")
                              else held.get())
        function = launch_metadata_of(kernel)
        if function is not None:  # interpreted, or a Triton whose hook does not carry it
            given = options or {}
            meta = types.SimpleNamespace(
                name=name, num_warps=given.get("num_warps") or _NUM_WARPS,
                num_stages=given.get("num_stages") or _NUM_STAGES,
                num_ctas=given.get("num_ctas") or 1, shared=0)
            size = grid(bound) if callable(grid) else grid
            candidates.append(lambda: function(size, meta, dict(bound)))
        for candidate in candidates:
            data = candidate() if callable(candidate) else candidate
            stated = _flops_stated(data, name)
            if stated is not None:
                return stated
        return None


#: Triton's launch defaults (its CUDA backend's options) where a launch names none.
_NUM_WARPS = 4
_NUM_STAGES = 3


def _figure(name: str, key: str, value: Any) -> float:
    """A launch_metadata figure as a float, refused unless a finite number >= 0."""
    try:
        number = float(value)
    except OverflowError:
        number = float("inf")
    if not 0 <= number < float("inf"):
        raise TraceError(f"Triton kernel {name}: launch_metadata gave {key}={brief(value, 40)}"
                         f"; FLOPs and bytes must be finite numbers >= 0")
    return number


def _flops_stated(data: Any, name: str = "triton_kernel",
                  ) -> tuple[dict[str | None, float], float | None] | None:
    """FLOPs by the precision each key names (``flops``: None, the launch's own) and bytes
    of launch metadata (None: it states no FLOPs)."""
    if not isinstance(data, dict):
        return None
    widths: dict[str | None, float] = {}
    for key, value in data.items():
        match = _FLOPS_KEY.match(str(key))
        if match and isinstance(value, (int, float)) and not isinstance(value, bool):
            width = _WIDTH.get(match.group(1)) if match.group(1) else None
            widths[width] = widths.get(width, 0.0) + _figure(name, str(key), value)
    if not widths:
        return None
    if not sum(widths.values()) < float("inf"):
        raise TraceError(f"Triton kernel {name}: launch_metadata's FLOPs add up past the "
                         f"largest float (inf)")
    stated_bytes = data.get("bytes")
    return widths, (_figure(name, "bytes", stated_bytes)
                    if isinstance(stated_bytes, (int, float)) else None)


def _by_precision(label: str, widths: dict[str | None, float], nbytes: float,
                  priced: str | None, dtype: str | None) -> list[Kernel]:
    """A launch's stated FLOPs, one kernel per precision (the largest first, with every
    byte; the others in its epilogue: the same launch): ``flops`` at the launch's own
    precision, ``flops<bits>`` at the one its width names."""
    split: dict[str, float] = {}
    for width, flops in widths.items():
        precision = priced or width or dtype or "fp32"
        split[precision] = split.get(precision, 0.0) + flops
    ordered = sorted(split.items(), key=lambda item: -item[1])
    (head, flops), rest = ordered[0], ordered[1:]
    kernels = [Kernel(label, flops, nbytes, unit="matrix", dtype=head)]
    kernels += [Kernel(f"{label}.{precision}", more, 0.0, unit="matrix", dtype=precision,
                       epilogue_of=label) for precision, more in rest]
    return kernels


def _size(grid: Any, bound: dict[str, Any]) -> tuple[int, ...]:
    """The launch's grid as Triton resolves it (a callable given the bound arguments)."""
    size = grid(bound) if callable(grid) else grid
    return tuple(int(n) for n in (size if isinstance(size, (tuple, list)) else (size,)))


_ACTIVE: list[Launches] = []


def _trial(original: Any) -> Any:
    """``Autotuner._bench``: one configuration benchmarked, its launches and its hooks'
    copies run with the recorder paused (not recorded, not counted, not replayed)."""
    def bench(tuner: Any, *args: Any, **kwargs: Any) -> Any:
        watcher = _ACTIVE[-1] if _ACTIVE else None
        if watcher is None:
            return original(tuner, *args, **kwargs)
        with watcher.recorder.paused():
            return original(tuner, *args, **kwargs)

    return bench


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
    """The launch's arguments by the kernel's parameter names, with the defaults of those
    it does not pass (as Triton binds them for the grid and ``launch_metadata``)."""
    names = list(getattr(kernel, "arg_names", ()) or ())
    bound = dict(zip(names, args, strict=False))
    bound.update({k: v for k, v in kwargs.items() if not names or k in names})
    for name, default in _defaults(getattr(kernel, "fn", None)).items():
        bound.setdefault(name, default)
    return bound


def _defaults(fn: Any) -> dict[str, Any]:
    """The kernel function's parameters that have a default, with it."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not p.empty}


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
    moved = count.nbytes()
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

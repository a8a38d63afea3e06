"""Profiling a call, or reading a trace file: the two ways in to a :class:`Profile`.

* ``profile(fn, *args, **kwargs)`` (``Profiler(hw=..., warmup=..., repeats=...)`` for other
  settings) warms the call up, then runs it *repeats* times under ``torch.profiler`` with
  ``record_shapes=True`` (CPU ops; on a GPU the CUDA kernels too, their own device times),
  exports the trace and reads it back through the same path as a file from anywhere, so
  the two can never disagree. Figures are per call (the repeats' totals over *repeats*).
  The chip is this machine's: ``host`` (the calibrated CPU) for a call on CPU tensors,
  ``cuda:N`` for one on a GPU, or one ``hw=`` names that this machine holds.
* ``read_trace(path, hw=None)`` prices a trace recorded anywhere (a GPU cluster's job) on
  the chip its ``deviceProperties`` name, or on *hw*.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .model import Profile
from .rules import ProfileError

_TORCH_HINT = "pip install 'pytest-roofline[torch]'"


def read_trace(path: str | os.PathLike[str], hw: Any = None) -> Profile:
    """The :class:`Profile` of a PyTorch profiler trace file (``.json``/``.json.gz``)."""
    from . import trace_file
    from .join import build

    trace = trace_file.read(path)
    if not trace.shapes:
        raise ProfileError(f"trace file {str(path)!r} has no input shapes: record it with "
                           f"torch.profiler.profile(record_shapes=True) so its ops can be "
                           f"priced")
    chip = _chip(hw, trace)
    notes: tuple[str, ...] = ()
    if hw is None and trace.device:
        notes = (f"chip {chip.name} from the trace's device {trace.device.get('name')!r}",)
    return build(trace, chip, source=Path(path).name, notes=notes)


def _chip(hw: Any, trace: Any) -> Any:
    from ..hardware import Hardware, get_hardware
    from .devices import chip_of

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
    """

    __slots__ = ("hw", "repeats", "warmup")

    def __init__(self, *, hw: Any = None, warmup: int = 1, repeats: int = 5) -> None:
        for name, value, low in (("warmup", warmup, 0), ("repeats", repeats, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ProfileError(f"Profiler: {name}={value!r} must be a whole number >= "
                                   f"{low}")
        self.hw, self.warmup, self.repeats = hw, warmup, repeats

    def __call__(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Profile:
        if not callable(fn):
            raise ProfileError(f"profile(fn, *args): fn must be callable, got "
                               f"{type(fn).__name__}")
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile
        except ImportError:
            raise ProfileError(f"profile() runs the call under torch.profiler: "
                               f"{_TORCH_HINT}") from None
        _refuse_jax(fn, args, kwargs)
        cuda = _on_cuda(torch, args, kwargs)
        chip = self._chip(cuda)
        from ..measuring.timing import synchronize

        for _ in range(self.warmup):
            synchronize(fn(*args, **kwargs))
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=activities, record_shapes=True) as prof:
            for _ in range(self.repeats):
                synchronize(fn(*args, **kwargs))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "trace.json")
            prof.export_chrome_trace(path)
            from . import trace_file
            from .join import build

            trace = trace_file.read(path)
        name = getattr(fn, "__name__", type(fn).__name__)
        return build(trace, chip, source=f"profile({name})", repeats=self.repeats)

    def _chip(self, cuda: int | None) -> Any:
        from ..hardware import Hardware, foreign_to_this_machine, get_hardware

        hw = self.hw
        if hw is None:
            hw = "host" if cuda is None else f"cuda:{cuda}"
        chip = hw if isinstance(hw, Hardware) else get_hardware(hw)
        reason = foreign_to_this_machine(chip)
        if reason is not None:
            raise ProfileError(f"a profile against {chip.name} is refused: {reason}")
        return chip


def _on_cuda(torch: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The CUDA device index of the first tensor argument on a GPU (None: all on CPU)."""
    for value in (*args, *kwargs.values()):
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", None) == "cuda":
            return int(device.index or 0)
        params = getattr(value, "parameters", None)
        if callable(params):
            for p in params():
                if p.device.type == "cuda":
                    return int(p.device.index or 0)
                break
    return None


def _refuse_jax(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A JAX call is refused with the reason (docs/profile.md, JAX)."""
    values = (fn, *args, *kwargs.values())
    if any(type(v).__module__.split(".")[0] in ("jax", "jaxlib") for v in values):
        raise ProfileError("profile() measures torch calls: a jitted JAX program runs as "
                           "fused XLA kernels whose names do not map back to the traced "
                           "primitives, so its per-op times cannot be joined to their "
                           "bounds; time the whole call with roofline.measure(fn, *args) "
                           "and analyze its traced workload (docs/profile.md)")


_DEFAULT = Profiler()


def profile(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Profile:
    """Profile ``fn(*args, **kwargs)`` per kernel against this machine's roofline (see the
    module docstring; :class:`Profiler` for settings)."""
    return _DEFAULT(fn, *args, **kwargs)

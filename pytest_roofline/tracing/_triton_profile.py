"""Triton launches while ``profile()`` records: each a profiler range of its own.

Kept apart from :mod:`._triton` (the launches a trace records), because a labelled launch is
counted by a :class:`._torch.Recorder`, which itself uses :mod:`._triton`.
"""

from __future__ import annotations

from typing import Any

from ..engine.workload import Workload
from ._torch import Recorder
from ._triton import Launches, _classes, bind, kernel_name


class Labelled(Launches):
    """Triton launches while ``profile()`` records: each runs inside a profiler range named
    after it, ``triton::<kernel>(<tensor shapes>)``, and is counted as a trace counts it
    (in the interpreter: as it runs); :attr:`workloads` maps each range's name to the
    launch's Workload, or to why it has none. The interpreter's own copies of the arguments
    fall inside the range: they are the launch's, not rows of their own."""

    def __init__(self) -> None:
        super().__init__(Recorder({}, None))
        self.workloads: dict[str, Workload | str] = {}

    def __enter__(self) -> Labelled:
        super().__enter__()
        return self

    def launch(self, original: Any, kernel: Any, args: tuple[Any, ...],
               kwargs: dict[str, Any], grid: Any) -> Any:
        from torch.profiler import record_function

        name = kernel_name(kernel)
        label = f"triton::{name}({_shapes(bind(kernel, args, kwargs))})"
        recorder = self.recorder
        start = len(recorder.kernels)
        with record_function(label):
            out = super().launch(original, kernel, args, kwargs, grid)
        if label not in self.workloads and recorder.recording:  # not a tuner's trial
            kernels = recorder.kernels[start:]
            self.workloads[label] = (
                f"Triton kernel {name} without a formula or launch_metadata"
                if recorder.unknown.get(name) else Workload(kernels, name=label))
        return out


_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
          "int64": "i64", "int32": "i32", "int8": "i8", "uint8": "u8", "bool": "b"}


def _shapes(bound: dict[str, Any]) -> str:
    """``98432f32,98432f32``: the launch's tensor arguments' shapes and dtypes."""
    parts = []
    for value in bound.values():
        tensor = getattr(value, "base", value)
        shape = getattr(tensor, "shape", None)
        dtype = getattr(tensor, "dtype", None)
        if shape is not None and dtype is not None and hasattr(tensor, "data_ptr"):
            kind = str(dtype).removeprefix("torch.")
            parts.append("x".join(str(d) for d in shape) + _SHORT.get(kind, kind))
    return ",".join(parts)


class _Nothing:
    """No Triton imported: nothing to label."""

    def __init__(self) -> None:
        self.workloads: dict[str, Workload | str] = {}

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def labelled() -> Labelled | _Nothing:
    """A :class:`Labelled` watcher when triton is imported; else one that does nothing."""
    return Labelled() if _classes() else _Nothing()

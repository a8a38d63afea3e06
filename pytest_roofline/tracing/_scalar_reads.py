"""Reading a value out of a meta tensor during a trace: ``.item()``, ``bool()``, ``int()``,
``float()``, ``.tolist()``, ``if tensor:``.

On meta nothing is computed, so torch refuses every such read ("Tensor.item() cannot be
called on meta tensors"). Model code reads values to branch: transformers checks whether a
batch holds packed sequences with ``(mask[:, -1] == 0).all()`` before it builds attention
masks, and an input check asserts a condition with ``.any()``. The tracer's policy:

* **A truth value** (a bool tensor's ``.item()`` or ``bool()``: the caller branches on it) is
  answered with the value that means "nothing unusual": ``True`` for the result of an
  ``all()`` (every element passed the check), ``False`` for anything else (``any()``, a single
  comparison: no special case found). The trace follows the path an ordinary input takes.
* **A number** (an integer or floating read, ``.tolist()``, a copy of a meta tensor to the
  host) may size tensors or enter arithmetic: no value can be assumed without making the
  workload up. The trace stops with a TraceError naming the call site and the remedy (trace
  on real tensors at a small size, or pass that value to the code as a Python number).

Every answered read is named on the Workload (``Workload.assumed``: the op, the call site in
the traced code, the value assumed, and how many times), the way ops without a formula are
named in ``Workload.unknown``. Real and fake tensors are read as torch reads them.
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import Any

import torch

from . import _torch_compat as C
from ._base import TraceError

#: The op every value read of a tensor dispatches (``item``, ``bool``, ``int``, ``float``).
_READ = C.LOCAL_SCALAR_DENSE
#: Reductions whose truth value the neutral answer depends on.
_ALL = frozenset({torch.ops.aten.all, torch.ops.aten.any})
#: Copies that bring a tensor's values to the host (``.tolist()``, ``.cpu()`` of meta).
_COPIES = C.HOST_COPIES

#: Every op :func:`watches` looks at (one set lookup an op on the tracer's hot path).
FUNCS = frozenset({_READ, *_COPIES})
ALL = _ALL

#: Source folders whose frames are not the traced code's call site.
_INTERNAL = (os.path.dirname(torch.__file__ or "") + os.sep,
             os.path.dirname(os.path.dirname(__file__)) + os.sep)


def watches(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """True when *func* reads or copies out the values of a meta tensor."""
    if func is not _READ and func not in _COPIES:
        return False
    source = args[1] if func is torch.ops.aten.copy_.default and len(args) > 1 else (
        args[0] if args else None)
    if not isinstance(source, torch.Tensor) or not source.is_meta:
        return False
    if func is _READ:
        return True
    return _target_device(func, args, kwargs) != "meta"


def _target_device(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    if func is C.TO_COPY:  # a dtype or layout change stays on meta
        device = kwargs.get("device")
        return "meta" if device is None or torch.device(device).type == "meta" else "host"
    target = args[0] if args else None
    return "meta" if isinstance(target, torch.Tensor) and target.is_meta else "host"


class Reads:
    """The bool results of ``all``/``any`` seen on meta, to answer their truth value."""

    def __init__(self) -> None:
        self._made_by: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}

    def note(self, func: Any, out: object) -> None:
        """Remember which reduction made *out* (called for ``all``/``any`` only)."""
        if isinstance(out, torch.Tensor) and out.is_meta and out.numel() == 1:
            self._made_by[id(out)] = (weakref.ref(out), func.overloadpacket.__name__)

    def answer(self, recorder: Any, func: Any, args: tuple[Any, ...]) -> Any:
        """The value a read of a meta tensor is given, noted on the recorder; or a TraceError
        when the value cannot be assumed (see the module docstring)."""
        tensor = args[1] if func is torch.ops.aten.copy_.default and len(args) > 1 else args[0]
        where = call_site()
        if func is not _READ:
            raise TraceError(
                f"{where}: copies the values of a meta tensor of shape {tuple(tensor.shape)} "
                f"to the host (.tolist(), .cpu(), .numpy()); on meta there are none, and a "
                f"value made up here could size tensors. Trace with real tensors at a small "
                f"size, or pass those values to the code as Python numbers")
        if tensor.dtype is not torch.bool:
            raise TraceError(
                f"{where}: reads the {tensor.dtype} value of a meta tensor (.item(), int(), "
                f"float()); on meta there is none, and a made-up number could size tensors. "
                f"Trace with real tensors at a small size, or pass that value to the code as "
                f"a Python number")
        made = self._made_by.get(id(tensor))
        reduction = made[1] if made is not None and made[0]() is tensor else None
        value = reduction == "all"
        label = f"{reduction}()" if reduction else "a bool tensor"
        if recorder.recording:
            recorder.assume(f"aten::_local_scalar_dense of {label} on meta at {where}: "
                            f"assumed {value}")
        return value


def call_site() -> str:
    """``file.py:123 in fn``: the innermost frame of the traced code (not torch's, not the
    tracer's)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_INTERNAL) and not filename.startswith("<frozen"):
            return f"{_short(filename)}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return "an unknown call site"


def _short(filename: str) -> str:
    """The path from the package folder on (``transformers/masking_utils.py``)."""
    parts = filename.replace(os.sep, "/").split("/")
    if "site-packages" in parts:
        return "/".join(parts[parts.index("site-packages") + 1:])
    return "/".join(parts[-2:])

"""Measured ops and kernels joined to their bounds: a read trace into a Profile.

The rule, one for the CPU and the GPU: walk each thread's op tree from the top; the first
op on a path that :mod:`.pricing` can price (an ``aten::`` op whose call can be rebuilt
from its recorded inputs and has a formula) owns everything under it: its child ops (an
``aten::linear`` prices its ``t`` and ``addmm`` in one Workload, as the tracer sees the
same call) and every kernel they launched (an ``addmm`` owns cuBLAS's GEMM *and* its split-K
reduce; setting its bound against the last kernel alone would read its efficiency several
times too high). An op that cannot be priced passes the walk to its children; what it ran
itself (its kernels outside any child, or on a CPU its own time outside its children) is
named with the reason. Kernels launched outside any op are named by their own names.

On a GPU trace the op that launched a kernel owns it. A backend op that cannot be rebuilt on
meta tensors (``aten::_cudnn_attention_forward``, ``aten::_flash_attention_forward``: no meta
kernel) is priced by its nearest ancestor that launched nothing else and can be
(``aten::scaled_dot_product_attention``): the public op whose formula the tracer applies
to the same call. A list of tensors whose dtype the trace omits (``aten::cat``) takes the
element size its kernel's name states (:mod:`.pricing`).

On a GPU trace the measured time of an op is the device time of its kernels (copies and
memsets included), never the host's launch time; ops that launched nothing are skipped. A
copy between the host and the device (``Memcpy HtoD``/``DtoH``) is set apart from its op's
kernels and priced on the chip's PCIe link (:mod:`.copies`), a row of its own per op, inputs
and bytes; a copy within the device stays with its op, at the memory roof.
On a CPU trace it is the op's own span. Rows aggregate the calls of one op with the same
inputs. A matrix op whose kernels ran TF32 on the tensor cores is priced at the TF32 peak.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import copies, pricing
from .devices import runs_tf32
from .model import KernelRow, Profile, Unpriced, efficiency_of, rows_sorted
from .trace_file import Device, Op, TraceFile

if TYPE_CHECKING:
    from ..hardware import Hardware
    from ..workload import Workload


@dataclass
class _Group:
    op: str
    shapes: str
    workload: Workload | None  # None: zero work
    precision_dtype: str | None
    times: list[float] = field(default_factory=list)
    kernels: dict[str, None] = field(default_factory=dict)


@dataclass
class _Copy:
    """The host copies of one op with the same inputs and bytes: one PCIe bound a call."""

    op: str
    shapes: str
    nbytes: float
    bound: float
    times: list[float] = field(default_factory=list)
    kernels: dict[str, None] = field(default_factory=dict)


_OPAQUE = re.compile(r"OpaqueType<(\d+)u?>")


def element_dtype(kernels: list[str]) -> str | None:
    """The float dtype (profiler type name) of the element size a kernel's name states:
    PyTorch's copy kernels (``cat``, ``index``) are instantiated on ``OpaqueType<N>``, N bytes
    an element. None where no name says, or names disagree."""
    sizes = {int(m.group(1)) for name in kernels for m in _OPAQUE.finditer(name)}
    return pricing.BY_SIZE.get(sizes.pop()) if len(sizes) == 1 else None


def short_kernel(name: str) -> str:
    """A kernel's name without its template arguments and signature
    (``void at::native::vectorized_elementwise_kernel<4, ...>(...)`` ->
    ``vectorized_elementwise_kernel``; a CUTLASS kernel by its instance name)."""
    text = name.removeprefix("void ")
    if text.startswith("cutlass::Kernel<"):
        return text[len("cutlass::Kernel<"):].split(">")[0].split("(")[0]
    cut = min((i for i in (text.find("<"), text.find("(")) if i > 0), default=len(text))
    return text[:cut].rsplit("::", 1)[-1] or text[:60]


def shapes_of(op: Op) -> str:
    """``64x256f32,256x512f32``: the tensor inputs as recorded; a list of tensors in
    brackets (``[16x64,16x64]``, its dtype unrecorded)."""
    dims, types = op.dims or [], op.types or ()
    parts = []
    for i, kind in enumerate(types):
        shape = dims[i] if i < len(dims) else None
        if kind in pricing.DTYPES and isinstance(shape, list):
            parts.append("x".join(str(d) for d in shape) + _SHORT.get(pricing.DTYPES[kind],
                                                                      ""))
        elif kind in ("TensorList", "GenericList") and isinstance(shape, list) and shape \
                and all(isinstance(s, list) for s in shape):
            parts.append("[" + ",".join("x".join(str(d) for d in s) for s in shape) + "]")
    return ",".join(parts)


def unit_strides(dims: Any, strides: Any) -> Any:
    """*strides* with the stride of every dimension of size 1 made the contiguous one: it
    never moves a pointer, so two calls that differ only there are one call (a
    ``[16, 8, 1, 128]`` key cache and its transposed view are the same tensor)."""
    if not isinstance(dims, list) or not isinstance(strides, list):
        return strides

    def one(shape: Any, stride: Any) -> Any:
        if not (isinstance(shape, list) and isinstance(stride, list)
                and len(shape) == len(stride)):
            return stride
        if shape and all(isinstance(d, list) for d in shape):  # a list of tensors
            return [one(s, t) for s, t in zip(shape, stride, strict=False)] if all(
                isinstance(t, list) for t in stride) and len(stride) == len(shape) else stride
        if not all(type(d) is int for d in shape) or not all(type(t) is int for t in stride):
            return stride
        out, inner = list(stride), 1
        for k in range(len(shape) - 1, -1, -1):
            if shape[k] == 1:
                out[k] = inner
            inner *= shape[k]
        return out

    return [one(dims[i] if i < len(dims) else None, stride)
            for i, stride in enumerate(strides)]


#: Short dtype marks for labels: 64x256f32.
_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
          "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
          "bool": "b", "complex64": "c64", "complex128": "c128", "float8_e4m3fn": "f8",
          "float8_e5m2": "f8"}


class Joiner:
    """Walks a :class:`TraceFile` into groups of priced calls and unpriced time."""

    def __init__(self, trace: TraceFile, chip: Hardware) -> None:
        self.trace = trace
        self.chip = chip
        self.groups: dict[tuple[Any, ...], _Group] = {}
        self.copies: dict[tuple[Any, ...], _Copy] = {}
        self.unpriced: dict[tuple[str, str], list[float]] = defaultdict(list)

    def run(self) -> None:
        for root in self.trace.roots:
            self._walk(root)
        for device in self.trace.orphans:
            if copies.is_host_copy(device):
                self._host_copy(device, None)
            else:
                self.unpriced[(short_kernel(device.name), "launched outside any op")
                              ].append(device.seconds)

    def _host_copy(self, device: Device, op: Op | None) -> None:
        """A copy across the host link, priced on it (or named with why it is not)."""
        priced = copies.price(device, self.chip)
        label = device.name if op is None else op.name
        if isinstance(priced, str):
            self.unpriced[(label if op is None else f"{label} [{device.name}]", priced)
                          ].append(device.seconds)
            return
        nbytes, bound = priced
        key = (label, None if op is None else repr(op.dims),
               None if op is None else op.types, copies.direction(device), nbytes)
        group = self.copies.get(key)
        if group is None:
            group = _Copy(label, "" if op is None else shapes_of(op), nbytes, bound)
            self.copies[key] = group
        group.times.append(device.seconds)
        group.kernels.setdefault(device.name)

    def _walk(self, op: Op) -> None:
        if self.trace.on_device:
            self._walk_device(op)
            return
        group, reason = self._group(op, [])
        if group is not None:
            group.times.append(op.seconds)
            return
        for child in op.children:
            self._walk(child)
        own = op.self_seconds()
        if own > 0:
            self.unpriced[(op.name, reason)].append(own)

    def _walk_device(self, op: Op, ancestors: tuple[Op, ...] = ()) -> None:
        """A GPU trace: each op that launched kernels itself owns them (the innermost op
        around a launch), priced by its own recorded inputs, else by the nearest ancestor
        that launched nothing else (see the module docstring)."""
        launched = [d for d in op.launched if not copies.is_host_copy(d)]
        for device in op.launched:
            if copies.is_host_copy(device):
                self._host_copy(device, op)
        if launched:
            names = [d.name for d in launched]
            group, reason = self._group(op, names)
            for ancestor in reversed(ancestors) if group is None else ():
                if sum(1 for d in ancestor.devices() if not copies.is_host_copy(d)) \
                        != len(launched):
                    break  # it launched more than this op did: its bound is not theirs
                group, _ = self._group(ancestor, names)
                if group is not None:
                    break
            seconds = sum(d.seconds for d in launched)
            if group is not None:
                group.times.append(seconds)
                for name in names:
                    group.kernels.setdefault(short_kernel(name))
            else:
                short = sorted({short_kernel(n) for n in names})
                label = f"{op.name} [{', '.join(short[:2])}{', ...' if len(short) > 2 else ''}]"
                self.unpriced[(label, reason)].append(seconds)
        for child in op.children:
            self._walk_device(child, (*ancestors, op))

    def _group(self, op: Op, kernels: list[str]) -> tuple[_Group | None, str]:
        """The group of *op*'s calls with its inputs (priced once), or the reason it has
        none."""
        if not op.name.startswith("aten::"):
            return None, "not an aten op"
        tf32 = runs_tf32(kernels)
        strides = unit_strides(op.dims, op.args.get("Input Strides"))
        key = (op.name, repr(op.dims), op.types, op.concrete, tf32, repr(strides))
        group = self.groups.get(key)
        if group is not None:
            return group, ""
        sized = element_dtype(kernels)
        result = pricing.price(op.name, op.dims, op.types, op.concrete, None, strides, sized)
        if tf32 and not isinstance(result, str) and any(
                k.unit == "matrix" and k.dtype == "fp32" for k in result.kernels):
            result = pricing.price(op.name, op.dims, op.types, op.concrete, "tf32", strides,
                                   sized)
        if isinstance(result, str) and result != pricing.ZERO:
            return None, result
        group = _Group(op.name, shapes_of(op), None if isinstance(result, str) else result,
                       "tf32" if tf32 else None)
        if not isinstance(result, str):  # the traced kernels' names (mm, addmm, ...)
            for kernel in result.kernels:
                group.kernels.setdefault(kernel.name)
        self.groups[key] = group
        return group, ""


def build(trace: TraceFile, chip: Hardware, *, source: str, repeats: int = 1,
          notes: tuple[str, ...] = ()) -> Profile:
    """The :class:`Profile` of *trace* on *chip*: every call of *repeats* runs divided by
    *repeats* (the figures of one run)."""
    from ..analysis import analyze

    joiner = Joiner(trace, chip)
    joiner.run()
    tick = 1e-6 if trace.integer_times else 0.0
    rows = []
    analyzed: dict[int, Any] = {}
    for group in joiner.groups.values():
        if not group.times:
            continue
        count = len(group.times)
        measured = sum(group.times)
        if group.workload is None:
            bound, flops, nbytes, regime, precision = 0.0, 0.0, 0.0, "memory", "-"
        else:
            result = analyzed.get(id(group.workload))
            if result is None:
                result = analyze(group.workload, chip)
                analyzed[id(group.workload)] = result
            bound = float(result.time) * count
            flops, nbytes = float(result.flops) * count, float(result.bytes) * count
            regime = str(result.regime)
            precision = _precision(result)
        spread = _spread(group.times)
        efficiency, faster = efficiency_of(bound, measured, count, spread, tick)
        likely = _likely(regime, nbytes / count, chip, group.precision_dtype) if faster else ""
        rows.append(KernelRow(
            op=group.op, shapes=group.shapes, kernels=tuple(group.kernels),
            count=count / repeats, measured=measured / repeats, bound=bound / repeats,
            flops=flops / repeats, bytes=nbytes / repeats, regime=regime,
            precision=precision, efficiency=efficiency, faster=faster, spread=spread,
            likely=likely))
    rows += [_copy_row(c, tick, repeats) for c in joiner.copies.values()]
    unpriced = sorted((Unpriced(name, sum(times) / repeats, len(times) / repeats, reason)
                       for (name, reason), times in joiner.unpriced.items()),
                      key=lambda u: (-u.seconds, u.name))
    return Profile(hw=chip.name, source=source, on_device=trace.on_device,
                   total=trace.total_seconds() / repeats, rows=rows_sorted(rows),
                   unpriced=tuple(unpriced), repeats=repeats, notes=notes)


def _copy_row(group: _Copy, tick: float, repeats: int) -> KernelRow:
    """The row of a group of host copies: bytes over the PCIe link (:mod:`.copies`)."""
    count = len(group.times)
    measured, bound = sum(group.times), group.bound * count
    spread = _spread(group.times)
    efficiency, faster = efficiency_of(bound, measured, count, spread, tick)
    likely = ("its bytes as recorded cross the link faster than its spec'd bandwidth: check "
              "the pcie link in the chip's spec") if faster else ""
    return KernelRow(
        op=group.op, shapes=group.shapes, kernels=tuple(group.kernels),
        count=count / repeats, measured=measured / repeats, bound=bound / repeats,
        flops=0.0, bytes=group.nbytes * count / repeats, regime="network",
        precision=f"link:{copies.LINK}", efficiency=efficiency, faster=faster,
        spread=spread, likely=likely)


def _likely(regime: str, nbytes: float, chip: Any, precision: str | None) -> str:
    """The likely cause of a row faster than its bound: a memory-bound call whose bytes fit
    in the chip's on-chip memory ran from there; else its counts are too high."""
    from ..units import si

    levels = [lv for lv in getattr(chip, "onchip", ()) or () if float(lv.capacity) > 0]
    cache = max(levels, key=lambda lv: float(lv.capacity)) if levels else None
    if regime == "memory" and cache is not None and nbytes <= 2 * float(cache.capacity):
        return (f"its {si(nbytes, 'B')} a call is within reach of the {cache.name} "
                f"({si(float(cache.capacity), 'B')}), so its data likely stayed on chip "
                f"between kernels, which the bound charges to memory")
    device = str((getattr(chip, "provenance", None) or {}).get("device") or "")
    if device:
        roof = "peak" if regime == "compute" else "bandwidth"
        fix = ("set it against the published chip, or recalibrate" if device != "cpu" else
               "recalibrate on a quiet machine (pytest-roofline calibrate)")
        return (f"it ran above {chip.name}'s calibrated {roof}, which a few kernels measured: "
                f"another shape, another library or a higher clock can beat them; {fix}")
    return (f"its formula likely overcounts it ({si(nbytes, 'B')} a call"
            + (", priced in TF32" if precision else "") + "): check the op's counts")


def _precision(result: Any) -> str:
    """The peak of the kernel that sets most of the bound (``matrix:tf32``)."""
    kernels = list(result.kernels)
    if not kernels:
        return str(result.peak_label)
    main = max(kernels, key=lambda k: float(k.time))
    return str(main.peak_label)


def _spread(times: list[float]) -> float:
    if len(times) < 4:
        return 0.0
    from ..measuring.timing import quantile

    values = sorted(times)
    median = quantile(values, 0.5)
    if median <= 0:
        return 0.0
    return (quantile(values, 0.75) - quantile(values, 0.25)) / median

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
meta tensors (``aten::_cudnn_attention_forward``, ``aten::cudnn_convolution``: no meta
kernel) is priced by its nearest ancestor that can be (``aten::_convolution``): the public
op whose formula the tracer applies to the same call, which then owns every kernel under it,
the small epilogue kernels of its other children included (a convolution's bias add: one op,
one bound), unless some of them are priced already. A list of tensors whose dtype the trace
omits (``aten::cat``) takes the element size its kernel's name states (:mod:`.pricing`).
Where the trace leaves out what a bound needs (a convolution's stride before torch 2.1, the
gradients an old backward op computed), or a kernel's name says it runs an algorithm with
fewer multiplies (Winograd, FFT: its memory alone bounds it), the lowest bound is taken and
the profile's notes say so, and so does each row priced under it (``KernelRow.assumed``).

On a GPU trace the measured time of an op is the device time of its kernels (copies and
memsets included), never the host's launch time; ops that launched nothing are skipped. A
copy between the host and the device (``Memcpy HtoD``/``DtoH``) is set apart from its op's
kernels and priced on the chip's PCIe link (:mod:`.copies`), a row of its own per op, inputs
and bytes; a copy within the device stays with its op, at the memory roof.
On a CPU trace it is the op's own span. Rows aggregate the calls of one op with the same
inputs (shapes, dtypes, scalars and strides); rows that would print the same, their inputs
differing in strides alone, show each strided input's strides (:func:`told_apart`). A
matrix op whose kernels ran TF32 on the tensor cores is priced at the TF32 peak.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...engine.analysis import analyze
from ...engine.limits import limit_of
from .. import collectives
from ..devices import runs_tf32
from ..model import KernelRow, Profile, Unpriced, rows_sorted
from ..rows import judged_row, precision_of
from ..timeline import COMMUNICATION, timeline
from . import capture, comm_ops, comms, copies, pricing
from .capture import Captured
from .dtype_names import DTYPES
from .trace_file import Device, Op, TraceFile

if TYPE_CHECKING:
    from ...engine.workload import Workload
    from ...hardware import Hardware


@dataclass
class _Group:
    op: str
    shapes: str
    workload: Workload | None  # None: zero work
    precision_dtype: str | None
    times: list[float] = field(default_factory=list)
    timed: list[int] = field(default_factory=list)  # the kernels each call timed
    kernels: dict[str, None] = field(default_factory=dict)
    assumed: tuple[str, ...] = ()  # what its bound assumed where the trace is silent
    strides: Any = None  # its inputs' strides (size-1 dimensions made contiguous)
    dims: Any = None  # its inputs' recorded dims
    formula: str = ""  # who gave a non-aten op its formula (register_op, the tracer's)


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


def shapes_of(op: Op, types: tuple[str, ...] | None = None) -> str:
    """``64x256f32,256x512f32``: the tensor inputs as recorded (of *types* where the trace
    records none); a list of tensors in brackets (``[16x64,16x64]``, its dtype
    unrecorded)."""
    dims, types = op.dims or [], types or op.types or ()
    parts = []
    for i, kind in enumerate(types):
        shape = dims[i] if i < len(dims) else None
        if kind in DTYPES and isinstance(shape, list):
            parts.append("x".join(str(d) for d in shape) + _SHORT.get(DTYPES[kind],
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


def layout(dims: Any, strides: Any) -> str:
    """``input 1 strides 16777216:128:4096:1``: the recorded strides of each input that is
    not laid out contiguously (*strides* as :func:`unit_strides` makes them; a list of
    tensors in brackets), ``contiguous`` where none is, ``strides not recorded`` where the
    trace gives none: what tells apart calls of one op with the same shapes."""
    if not isinstance(dims, list) or not isinstance(strides, list):
        return "strides not recorded"

    def packed(shape: Any) -> list[int] | None:
        if not isinstance(shape, list) or not all(type(d) is int for d in shape):
            return None
        out: list[int] = []
        inner = 1
        for d in reversed(shape):
            out.insert(0, inner)
            inner *= d
        return out

    def text(stride: Any) -> str:
        if isinstance(stride, list) and stride and all(isinstance(t, list) for t in stride):
            return "[" + ",".join(text(t) for t in stride) + "]"
        return ":".join(str(t) for t in stride) if isinstance(stride, list) else "?"

    parts = []
    for i, stride in enumerate(strides):
        shape = dims[i] if i < len(dims) else None
        if not isinstance(shape, list) or not shape or stride == packed(shape):
            continue
        if all(isinstance(s, list) for s in shape) and isinstance(stride, list) and all(
                isinstance(t, list) for t in stride) and all(
                t == packed(s) for s, t in zip(shape, stride, strict=False)):
            continue  # a list of contiguous tensors
        parts.append(f"input {i + 1} strides {text(stride)}")
    return ", ".join(parts) or "contiguous"


def told_apart(groups: list[_Group]) -> dict[int, str]:
    """The :func:`layout` of each group (by id) of one op whose inputs print the same as
    another's but differ in their strides (they may run other kernels); groups that print
    apart already have none."""
    same: dict[tuple[str, str], list[_Group]] = defaultdict(list)
    for group in groups:
        same[(group.op, group.shapes)].append(group)
    return {id(g): layout(g.dims, g.strides)
            for alike in same.values() if len({repr(g.strides) for g in alike}) > 1
            for g in alike}


#: Short dtype marks for labels: 64x256f32.
_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
          "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
          "bool": "b", "complex64": "c64", "complex128": "c128", "float8_e4m3fn": "f8",
          "float8_e5m2": "f8"}


#: Why device work no op prices was not priced, by cause (the rest: the op's own reason).
NO_LAUNCH = "no launch in the trace"
GRAPH_REPLAY = "graph replay"
OUTSIDE = "launched outside any op"


#: Kernels that only help a call's main kernel: a memset (zeroing an output or a split-K
#: workspace) and a split-K reduction. A call that ran nothing else lost its main kernel.
_HELPERS = re.compile(r"^memset|splitk_?reduce|reduce_?splitk", re.IGNORECASE)
#: Ops whose whole work can be a memset (``zero_``, ``fill_``, ``zeros``): never incomplete.
_FILLS = re.compile(r"zero|fill|full|ones|empty|memset", re.IGNORECASE)
INCOMPLETE = ("incomplete call: its main kernel is not in the trace (sampled, or cut by "
              "the trace's window), only a memset or split-K reduction")


def incomplete(group: _Group, kernels: list[str]) -> bool:
    """Whether a call of *group* that ran *kernels* is incomplete: it has work to do, yet
    every kernel recorded for it only helps a main one (a memset, a split-K reduction),
    as a sampling profiler leaves a GEMM whose kernel it dropped. Such a call is left out
    of its row's time and of the guard, and named (:data:`INCOMPLETE`): judged against the
    whole GEMM's bound, a 1 us memset reads hundreds of times faster than physics."""
    if group.workload is None or not kernels or _FILLS.search(group.op):
        return False
    return all(_HELPERS.search(short_kernel(name).strip()) for name in kernels)


def orphan_reason(device: Device) -> str:
    """Why a kernel no op launched is unpriced: its launch is not in the trace (it began
    before the trace's window), it is a node of a CUDA/HIP graph replay, or it was launched
    outside any op."""
    if device.launch is None:
        return NO_LAUNCH
    return GRAPH_REPLAY if device.graph else OUTSIDE


class Joiner:
    """Walks a :class:`TraceFile` into groups of priced calls and unpriced time."""

    def __init__(self, trace: TraceFile, chip: Hardware,
                 launches: Mapping[str, Workload | str] | None = None) -> None:
        self.trace = trace
        self.launches = launches or {}  # Triton launches' ranges -> their work
        self.chip = chip
        self.groups: dict[tuple[Any, ...], _Group] = {}
        self.copies: dict[tuple[Any, ...], _Copy] = {}
        self.unpriced: dict[tuple[str, str], list[float]] = defaultdict(list)
        #: Kernels already set against a bound (ids): an ancestor priced for an op that could
        #: not be owns its later children's kernels too.
        self.claimed: set[int] = set()
        #: What was assumed where the trace left out what a bound needs (said in its notes).
        self.assumed: set[str] = set()
        #: each graph replay's nodes (by its launch's correlation), with their unpriced names
        self.replays: dict[Any, list[tuple[str, Device]]] = {}

    def run(self) -> None:
        for root in self.trace.roots:
            self._walk(root)
        for device in self.trace.orphans:
            if copies.is_host_copy(device):
                self._host_copy(device, None)
            elif device.graph:
                self._replay(short_kernel(device.name), device)
            else:
                self.unpriced[(short_kernel(device.name), orphan_reason(device))
                              ].append(device.seconds)

    def _replay(self, label: str, device: Device) -> None:
        """A node of a graph replay: kept with its replay, priced from a capture or named."""
        self.replays.setdefault(device.args.get("correlation"), []).append((label, device))

    def _host_copy(self, device: Device, op: Op | None) -> None:
        """A copy across the host link, priced on it (or named with why it is not)."""
        recorded = None if op is None else copies.op_bytes(op.name, op.dims, op.types)
        priced = copies.price(device, self.chip, recorded)
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
            group.timed.append(1)
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
        launched = [d for d in op.launched if not copies.is_host_copy(d) and not d.graph
                    and id(d) not in self.claimed]
        for device in op.launched:
            if device.graph:  # a graph replay's node: no op of it recorded
                self._replay(f"{op.name} [{short_kernel(device.name)}]", device)
            elif copies.is_host_copy(device):
                self._host_copy(device, op)
        if launched:
            names = [d.name for d in launched]
            group, reason = self._group(op, names, ancestors)
            for depth in reversed(range(len(ancestors))) if group is None else ():
                ancestor = ancestors[depth]
                under = [d for d in ancestor.devices() if not copies.is_host_copy(d)]
                if any(id(d) in self.claimed for d in under):
                    break  # part of its work is priced already: its bound is not theirs
                group, _ = self._group(ancestor, [d.name for d in under], ancestors[:depth])
                if group is not None:
                    # the ancestor's bound is all it does (a convolution and its bias add):
                    # it owns every kernel under it, those of ops not walked yet included
                    launched = under
                    names = [d.name for d in under]
                    break
            if group is not None:
                self.claimed.update(id(d) for d in launched)
            seconds = sum(d.seconds for d in launched)
            if group is not None and incomplete(group, names):
                helpers = ", ".join(sorted({short_kernel(n).strip() for n in names}))
                self.unpriced[(f"{group.op}({group.shapes}) [{helpers}]", INCOMPLETE)
                              ].append(seconds)
            elif group is not None:
                group.times.append(seconds)
                group.timed.append(len(launched))
                for name in names:
                    group.kernels.setdefault(short_kernel(name))
            else:
                short = sorted({short_kernel(n) for n in names})
                label = f"{op.name} [{', '.join(short[:2])}{', ...' if len(short) > 2 else ''}]"
                self.unpriced[(label, reason)].append(seconds)
        for child in op.children:
            self._walk_device(child, (*ancestors, op))

    def _collective(self, op: Op, kernels: list[str], ancestors: tuple[Op, ...]
                    ) -> tuple[_Group | None, str]:
        """A collective's group, priced on the network roof from the sizes recorded on its
        ops (:mod:`.comm_ops`, :mod:`.collectives`), or the reason it is not."""
        chain = comm_ops.chain_of(op, ancestors)
        kernel = next((short_kernel(k) for k in kernels if COMMUNICATION.search(k)), "")
        args = comm_ops.collective_args(chain, kernel, self.trace.distributed)
        workload, label, why = collectives.price(args, kernel)
        if workload is None:
            return None, why
        shapes = f"{label}, {args.get('In msg nelems')} {args.get('dtype')}"
        key = (collectives.COLLECTIVE_OP, shapes)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _Group(collectives.COLLECTIVE_OP, shapes, workload,
                                              None)
            for kernel_name in workload.kernels:
                group.kernels.setdefault(kernel_name.name)
        return group, ""

    def _group(self, op: Op, kernels: list[str], ancestors: tuple[Op, ...] = ()
               ) -> tuple[_Group | None, str]:
        """The group of *op*'s calls with its inputs (priced once), or the reason it has
        none."""
        launch = self.launches.get(op.name)
        if launch is not None:  # a Triton launch's range: it owns the ops inside
            if isinstance(launch, str):
                return None, launch
            group = self.groups.get((op.name,))
            if group is None:
                kernel_name, _, shapes = op.name.partition("(")
                distinct = ",".join(dict.fromkeys(shapes.rstrip(")").split(",")))
                group = self.groups[(op.name,)] = _Group(kernel_name, distinct, launch, None)
                for kernel in launch.kernels:
                    group.kernels.setdefault(kernel.name)
            return group, ""
        if comm_ops.is_comm_op(op.name) and (
                op.name == collectives.COLLECTIVE_OP or any(COMMUNICATION.search(k)
                                                            for k in kernels)):
            return self._collective(op, kernels, ancestors)
        if not op.name.startswith("aten::") and not pricing.has_formula(op.name):
            return None, "not an aten op"
        tf32 = runs_tf32(kernels)
        strides = unit_strides(op.dims, op.args.get("Input Strides"))
        key = (op.name, repr(op.dims), op.types, op.concrete, tf32, repr(strides))
        group = self.groups.get(key)
        if group is not None:
            return group, ""
        sized = element_dtype(kernels)
        base = op.name.removeprefix("aten::")
        gradients = _gradients(op) if base in pricing.LEGACY_CONV_BACKWARD else None
        types = op.types
        assumed: list[str] = []
        if not types and op.dims:  # torch 1.8 records no dtypes: its kernels' names may
            types = _types_named(op.dims, kernels)
            if types:
                assumed.append(NAMED_DTYPE_NOTE)
        result = pricing.price(op.name, op.dims, types, op.concrete, None, strides, sized,
                               gradients)
        if tf32 and not isinstance(result, str) and any(
                k.unit == "matrix" and k.dtype == "fp32" for k in result.kernels):
            result = pricing.price(op.name, op.dims, types, op.concrete, "tf32", strides,
                                   sized, gradients)
        if isinstance(result, str) and result != pricing.ZERO:
            return None, result
        if not isinstance(result, str):
            if base in pricing.CONVOLUTIONS and op.concrete is None:
                assumed.append(pricing.UNRECORDED_CONV)
            if base in pricing.LEGACY_CONV_BACKWARD and gradients is None:
                assumed.append(pricing.ONE_GRADIENT)
            if any(_REDUCED.search(k) for k in kernels):
                result = pricing.memory_only(result)
                assumed.append(REDUCED_NOTE)
        self.assumed.update(assumed)
        group = _Group(op.name, shapes_of(op, types),
                       None if isinstance(result, str) else result,
                       "tf32" if tf32 else None, assumed=tuple(assumed), strides=strides,
                       dims=op.dims, formula=pricing.formula_of(op.name))
        if not isinstance(result, str):  # the traced kernels' names (mm, addmm, ...)
            for kernel in result.kernels:
                group.kernels.setdefault(kernel.name)
        self.groups[key] = group
        return group, ""


#: Kernels whose names say they run an algorithm with fewer multiplies than the direct one.
_REDUCED = re.compile(r"winograd|fft", re.IGNORECASE)
REDUCED_NOTE = ("kernels named for a reduced-arithmetic algorithm (Winograd, FFT) are "
                "bounded by their memory alone")


#: C++ element types in kernels' template arguments -> the profiler's dtype names.
_NAMED_TYPES = {"float": "float", "double": "double", "__half": "c10::Half",
                "half": "c10::Half", "__nv_bfloat16": "c10::BFloat16"}
_TEMPLATE_TYPE = re.compile(r"[<,]\s*(float|double|__half|half|__nv_bfloat16)\s*[,>]")
NAMED_DTYPE_NOTE = ("ops' dtypes are not recorded (torch 1.8): taken from the element type "
                    "their kernels' names state")


def _types_named(dims: list[Any], kernels: list[str]) -> tuple[str, ...] | None:
    """Input types for an op whose trace records none: every tensor (a non-empty shape) of
    the one element type its kernels' template arguments name (``implicit_convolve_sgemm<
    float, float, ...>``), the rest unknown; None where the names say none or disagree."""
    named = {_NAMED_TYPES[m.group(1)] for name in kernels
             for m in _TEMPLATE_TYPE.finditer(name)}
    if len(named) != 1:
        return None
    dtype = named.pop()
    return tuple(dtype if isinstance(d, list) and d and all(isinstance(v, int) for v in d)
                 else "" for d in dims)


def _gradients(op: Op) -> tuple[bool, bool] | None:
    """The (input, weight) gradients an old convolution backward op computed, as its child
    ops name them (``cudnn_convolution_backward_input``, ``..._weight``); None where none
    does."""
    names = [child.name for child in op.children]
    asked = (any(n.endswith("_backward_input") for n in names),
             any(n.endswith("_backward_weight") for n in names))
    return asked if any(asked) else None


def build(trace: TraceFile, chip: Hardware, *, source: str, repeats: int = 1,
          notes: tuple[str, ...] = (),
          launches: Mapping[str, Workload | str] | None = None,
          captures: tuple[Captured, ...] = ()) -> Profile:
    """The :class:`Profile` of *trace* on *chip*: every call of *repeats* runs divided by
    *repeats* (the figures of one run). *launches*: the work of the Triton launches'
    profiler ranges (``triton::<kernel>(<shapes>)``), or why a launch has none; graph
    replays priced by *captures* (:mod:`.capture`) where one matches."""
    joiner = Joiner(trace, chip, launches)
    joiner.run()
    replayed = _replays(joiner, captures)
    tick = trace.tick
    rows = []
    analyzed: dict[int, Any] = {}
    timed = [group for group in joiner.groups.values() if group.times]
    layouts = told_apart(timed)
    for group in timed:
        if group.workload is None:
            call, limit, flops, nbytes, regime, precision = 0.0, None, 0.0, 0.0, "-", "-"
        else:
            priced = analyzed.get(id(group.workload))
            if priced is None:
                result = analyze(group.workload, chip)
                priced = analyzed[id(group.workload)] = (result, limit_of(result, chip))
            result, limit = priced
            call = float(result.time)
            flops, nbytes = float(result.flops), float(result.bytes)
            regime = str(result.regime) if call > 0 else "-"  # no work: no roof
            precision = precision_of(result) if call > 0 else "-"
            if regime == "network" and chip.links:  # a collective: the link it is priced on
                precision = f"link:{chip.default_link or next(iter(chip.links))}"
        rows.append(judged_row(
            op=group.op, shapes=group.shapes, kernels=tuple(group.kernels),
            calls=list(zip(group.times, group.timed, strict=True)), bound=call, limit=limit,
            flops=flops, nbytes=nbytes, regime=regime, precision=precision, tick=tick,
            repeats=repeats, chip=chip, assumed=group.assumed,
            layout=layouts.get(id(group), ""), formula=group.formula))
    rows += [_copy_row(c, tick, repeats) for c in joiner.copies.values()]
    rows += [_replay_row(r, tick, repeats) for r in replayed.values()]
    unpriced = sorted((Unpriced(name, sum(times) / repeats, len(times) / repeats, reason)
                       for (name, reason), times in joiner.unpriced.items()),
                      key=lambda u: (-u.seconds, u.name))
    return Profile(hw=chip.name, source=source, on_device=trace.on_device,
                   total=trace.total_seconds() / repeats, rows=rows_sorted(rows),
                   unpriced=tuple(unpriced), repeats=repeats,
                   notes=(*notes, *sorted(joiner.assumed)), tick=tick,
                   timeline=timeline(trace.timeline, trace.launch_times)
                   if trace.on_device else None,
                   collectives=comms.calls(trace, chip) if trace.on_device else ())


def _copy_row(group: _Copy, tick: float, repeats: int) -> KernelRow:
    """The row of a group of host copies: bytes over the PCIe link (:mod:`.copies`), each
    copy judged on its own (no cache holds a transfer: its limit is its bound)."""
    return judged_row(
        op=group.op, shapes=group.shapes, kernels=tuple(group.kernels),
        calls=[(t, 1) for t in group.times], bound=group.bound, limit=None, flops=0.0,
        nbytes=group.nbytes, regime="network", precision=f"link:{copies.LINK}", tick=tick,
        repeats=repeats, chip=None,
        why=("its bytes as recorded cross the link faster than its spec'd bandwidth: check "
             "the pcie link in the chip's spec"))


@dataclass
class _Replay:
    """The replays of one graph priced by one capture."""

    capture: Captured
    matched: int  # captures with its count of kernels: the lowest bound of them is used
    times: list[float] = field(default_factory=list)
    timed: list[int] = field(default_factory=list)
    kernels: dict[str, None] = field(default_factory=dict)


def _replays(joiner: Joiner, captures: tuple[Captured, ...]) -> dict[str, _Replay]:
    """Each graph replay priced by its capture (:func:`.capture.match`), by capture; the
    rest named unpriced (``graph replay``)."""
    out: dict[str, _Replay] = {}
    replays = sorted(joiner.replays.values(), key=lambda nodes: min(
        device.start for _, device in nodes))
    matched = capture.assign([len(nodes) for nodes in replays], captures) if captures \
        else [None] * len(replays)
    for nodes, found in zip(replays, matched, strict=True):
        if found is None:
            for label, device in nodes:
                joiner.unpriced[(label, GRAPH_REPLAY)].append(device.seconds)
            continue
        group = out.setdefault(found[0].source, _Replay(found[0], found[1]))
        group.times.append(sum(device.seconds for _, device in nodes))
        group.timed.append(len(nodes))
        for _, device in nodes:
            group.kernels.setdefault(short_kernel(device.name))
    return out


def _replay_row(group: _Replay, tick: float, repeats: int) -> KernelRow:
    """The row of a graph's replays: each replay against its capture's bound and limit."""
    cap = group.capture
    why = ((f"{group.matched} captures have its {cap.launches} kernels and the lowest "
            f"bound of them was used: " if group.matched > 1 else "")
           + "its capture's ops overcount it")
    shapes = (f"{cap.launches} kernels, as {cap.source}"
              + (f", lowest of {group.matched}" if group.matched > 1 else "")
              + (f", {len(cap.unpriced)} ops unpriced" if cap.unpriced else ""))
    return judged_row(
        op="graph replay", shapes=shapes, kernels=tuple(group.kernels),
        calls=list(zip(group.times, group.timed, strict=True)), bound=cap.bound,
        limit=cap.limit, flops=cap.flops, nbytes=cap.bytes, regime=cap.regime,
        precision=cap.precision, tick=tick, repeats=repeats, chip=None, why=why)

"""A PyTorch profiler trace (``prof.export_chrome_trace()``) read into a tree of CPU ops.

The file is the Chrome trace format PyTorch's profiler (Kineto) writes, ``.json`` or
``.json.gz``. What is read:

* **CPU ops** (events of category ``cpu_op``, ``Operator`` in older traces): name, start and
  duration, and, when the trace was recorded with ``record_shapes=True``, each input's dims,
  type (a dtype name such as ``float``, or ``Scalar``, ``ScalarList``, ``TensorList``) and,
  in traces of torch 2.1 on, the concrete value of each scalar input. Per host thread the
  ops nest by their time spans into a tree (an ``aten::linear`` holds its ``aten::addmm``).
* **Launches** (category ``cuda_runtime``/``cuda_driver``, ``cudaLaunchKernel`` and the
  like) are attributed to the innermost CPU op whose span holds them, on their thread.
* **Device work** (categories ``kernel``, ``gpu_memcpy``, ``gpu_memset``) is joined to its
  launch through the ``correlation`` id both carry, so every kernel lands in the op that
  launched it: an ``addmm`` that runs cuBLAS's GEMM and then its split-K reduction owns both.
  A kernel whose launch is under no op (or missing) is kept at the root, by its own name.
* ``deviceProperties`` (the GPU's name and memory) says which chip ran it.
* **Triton launches**: the ranges ``profile()`` records around each (category
  ``user_annotation``, named ``triton::<kernel>(<shapes>)``), read as ops; so are the
  ``nccl:<collective>`` ranges around a collective's launch (its tensor's dims and type).

Times are read in microseconds (the format's unit) and kept in seconds. Nothing here knows a
formula: :mod:`.pricing` prices the ops, :mod:`.join` sets them against their kernels.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ...errors import brief
from ..rules import MAX_BYTES
from .trace_json import TraceFileError, load, paused_gc

#: Categories of CPU ops, of launches on the host, and of work on the device.
OP_CATEGORIES = frozenset({"cpu_op", "operator", "Operator"})
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy",
                               "Memset"})
_US = 1e-6
#: The prefix of the profiler ranges ``profile()`` puts around a Triton launch (read as ops).
LAUNCH_RANGE = "triton::"
#: Host ranges read as ops: Triton launches', and the ``nccl:<collective>`` range a process
#: group opens around a collective's launch (it records the tensor it was called on).
_RANGES = (LAUNCH_RANGE, "nccl:")
#: A host call that puts device work on a stream (a graph's replay is not one of them).
_LAUNCH = re.compile(r"LaunchKernel|Memcpy|Memset|cuLaunch|hipExtModuleLaunch")
_CAPTURE = re.compile(r"StreamBeginCapture|StreamEndCapture")
#: Host annotations (``record_function``) where serving engines name their steps.
ANNOTATION_CATEGORIES = frozenset({"user_annotation"})
#: A serving step's annotation: vLLM's and SGLang's ``step[DECODE bs=64 ...]``.
_STEP = re.compile(r"step\[\s*([A-Za-z_]+)(?:[^\]]*?\bbs\s*=\s*(\d+))?", re.IGNORECASE)



@dataclass(frozen=True)
class Device:
    """A device's time: a kernel, a copy or a memset, its duration (s) and the profiler's
    ``args`` (a copy's ``bytes``)."""

    name: str
    seconds: float
    category: str
    args: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: the host call that launched it, where the cause of an unpriced kernel turns on it
    #: (a graph launch, ``cudaGraphLaunch``; a launch outside any op); None where the trace
    #: holds no launch of it (it began before the trace's window) or it was not needed
    launch: str | None = None
    start: float = 0.0  # us on the trace's clock (its ts as written), for the timeline
    stream: Any = None  # the device and stream it ran on (pid, tid)

    @property
    def graph(self) -> bool:
        """A node of a CUDA/HIP graph replay (``cudaGraphLaunch``, ``hipGraphLaunch``)."""
        return self.launch is not None and "GraphLaunch" in self.launch



class Op:
    """One recorded CPU op: its span, the profiler's ``args`` (input dims, types and concrete
    values, read when the op is priced), what nests in it, and the device work it launched
    itself (not through a child op)."""

    __slots__ = ("args", "children", "launched", "name", "seconds", "start")

    def __init__(self, name: str, start: float, seconds: float, args: dict[str, Any]) -> None:
        self.name = name
        self.start = start  # s
        self.seconds = seconds
        self.args = args
        self.children: list[Op] = []
        self.launched: list[Device] = []

    def __repr__(self) -> str:
        return f"Op({self.name!r}, {self.seconds * 1e6:.1f} us, {len(self.children)} children)"

    @property
    def end(self) -> float:
        return self.start + self.seconds

    @property
    def dims(self) -> list[Any] | None:
        value = self.args.get("Input Dims", self.args.get("Input dims"))  # torch 1.8: "dims"
        return value if isinstance(value, list) else None

    @property
    def types(self) -> tuple[str, ...] | None:
        return _strings(self.args.get("Input type"))

    @property
    def concrete(self) -> tuple[str, ...] | None:
        return _strings(self.args.get("Concrete Inputs"))

    def device_seconds(self) -> float:
        """The device time of every kernel launched in this op's span, its children's too."""
        own = sum(d.seconds for d in self.launched)
        return own + sum(child.device_seconds() for child in self.children)

    def devices(self) -> list[Device]:
        """Every kernel launched in this op's span, in launch order by op."""
        out = list(self.launched)
        for child in self.children:
            out.extend(child.devices())
        return out

    def self_seconds(self) -> float:
        """Host time spent in this op outside its child ops."""
        return max(0.0, self.seconds - sum(child.seconds for child in self.children))


@dataclass
class TraceFile:
    """A read trace: the ops of every host thread as trees (roots in time order), the device
    work no op launched, and the device that ran it."""

    path: str
    roots: list[Op]
    orphans: list[Device]
    device: dict[str, Any] | None
    on_device: bool  # the trace holds device work (a GPU run): times are the kernels'
    events: int
    shapes: bool  # ops carry input dims (recorded with record_shapes=True)
    integer_times: bool  # every device duration a whole number of us (older traces)
    warnings: tuple[str, ...] = ()  # what reads but cannot be right (see :func:`parse`)
    accelerator: str | None = None  # a device the reader cannot price (MTIA), by name
    tick: float = 1e-6  # the resolution of the timer of its measured times (s): timer_tick()
    #: serving steps annotated on the host (``step[DECODE bs=64 ...]``): how many of each
    #: kind and batch size (``DECODE bs=64``)
    steps: dict[str, int] = field(default_factory=dict)
    #: the host's launches of device work (kernels, copies, memsets): in a trace of a CUDA
    #: graph's capture, whose launches ran nothing, the graph's nodes
    launches: int = 0
    #: every piece of device work, kernels, copies and memsets, in the file's order
    timeline: tuple[Device, ...] = ()
    #: the trace's ``distributedInfo`` (its rank, world size, process groups), if any
    distributed: dict[str, Any] | None = None
    #: correlation id -> when the host launched it (us, the trace's clock)
    launch_times: dict[Any, float] = field(default_factory=dict)
    #: a capture's begin/end capture segments (``cudaStreamBeginCapture`` to
    #: ``cudaStreamEndCapture``): each one's start and end (us) and its launches
    segments: tuple[tuple[float, float, int], ...] = ()

    def total_seconds(self) -> float:
        """The measured time the profile shares out: the device time of every kernel (GPU),
        else the host time of every top-level op (CPU)."""
        if self.on_device:
            return sum(r.device_seconds() for r in self.roots) + sum(
                d.seconds for d in self.orphans)
        return sum(r.seconds for r in self.roots)


#: The deepest nesting of CPU ops on one thread: real traces nest a few dozen deep.
MAX_DEPTH = 256


def read(path: str | os.PathLike[str], max_bytes: int = MAX_BYTES) -> TraceFile:
    """Read *path* into a :class:`TraceFile` (see the module docstring)."""
    with paused_gc():
        data = load(path, max_bytes)
        return parse(data, str(path))


_NUMBERS = (int, float)
_KEYS = (int, str)  # of a pid, a tid and a correlation id


def _order(item: tuple[float, int, float, Any, float, float]) -> tuple[float, int, float]:
    return item[0], item[1], item[2]


class _Event:
    """Reading one event's fields, each checked against what the format allows."""

    def __init__(self, path: str, index: int, event: dict[str, Any]) -> None:
        self.path, self.index, self.event = path, index, event

    def fail(self, key: str, value: Any, allowed: str) -> TraceFileError:
        name = self.event.get("name")
        what = f" ({brief(name, 40)})" if isinstance(name, str) else ""
        return TraceFileError(f"trace file {self.path!r}: event {self.index}{what} has "
                              f"{key}={brief(value, 40)}; expected {allowed}")

    def micros(self, key: str) -> float:
        """A time in us (``ts``, ``dur``): a finite number, ``dur`` not negative."""
        value: Any = self.event.get(key)
        if type(value) not in _NUMBERS:
            raise self.fail(key, value, "a number of microseconds")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number) or (key == "dur" and number < 0):
            raise self.fail(key, value, "a finite number of microseconds" + (
                " >= 0" if key == "dur" else ""))
        return number

    def key(self, key: str, optional: bool = False) -> Any:
        """A ``pid``, ``tid`` or correlation id: a whole number or a string."""
        value = (self.event.get("args") or {}).get(key) if key == "correlation" else \
            self.event.get(key)
        if value is None and optional:
            return None
        if type(value) not in _KEYS:
            raise self.fail(key, value, "a whole number or a string")
        return value

    def thread(self) -> tuple[Any, Any]:
        """The host thread (``pid``, ``tid``), either left out where the trace has one."""
        return self.key("pid", optional=True), self.key("tid", optional=True)

    def args(self) -> dict[str, Any]:
        value = self.event.get("args")
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail("args", value, "an object of the event's arguments")
        for field_name, check, allowed in _ARG_CHECKS:
            if field_name in value and value[field_name] is not None and not check(
                    value[field_name]):
                raise self.fail(f"args[{field_name!r}]", value[field_name], allowed)
        counted = value.get("bytes")
        if isinstance(counted, str):  # ROCm traces write a copy's bytes as a string
            value = {**value, "bytes": int(counted)}
        return value

    def name(self) -> str:
        value = self.event.get("name", "?")
        if not isinstance(value, str):
            raise self.fail("name", value, "a string")
        return value


_INTS = frozenset({int})


def _is_dims(value: Any) -> bool:
    """A recorded input's dims: a list of whole numbers, or (a list of tensors) a list of
    such lists; anything else (a scalar's ``[]``) is an empty list."""
    if type(value) is not list:
        return False
    kinds = set(map(type, value))
    if kinds <= _INTS:
        return True
    return kinds == {list} and all(set(map(type, item)) <= _INTS for item in value)


def _all_dims(value: Any) -> bool:
    return type(value) is list and all(map(_is_dims, value))


def _strings_or_none(value: Any) -> bool:
    return isinstance(value, list) and all(v is None or isinstance(v, str) for v in value)


_ARG_CHECKS = (
    ("Input Dims", _all_dims, "a list of dims (lists of whole numbers)"),
    ("Input dims", _all_dims, "a list of dims (lists of whole numbers)"),
    ("Input Strides", _all_dims, "a list of strides (lists of whole numbers)"),
    ("Input type", _strings_or_none, "a list of type names (strings)"),
    ("Concrete Inputs", _strings_or_none, "a list of values written as strings"),
    ("bytes", lambda v: type(v) in _NUMBERS or (
        isinstance(v, str) and 0 < len(v) <= 20 and v.isdigit() and v.isascii()),
     "a number of bytes (or its decimal digits, as ROCm writes it)"),
)


def parse(data: dict[str, Any], path: str = "<trace>") -> TraceFile:
    """A :class:`TraceFile` from the JSON object of a trace.

    Every field read is checked (a :class:`TraceFileError` names the event, the field, its
    value and what is allowed); what reads but cannot be right is kept and warned of in
    :attr:`TraceFile.warnings`: CPU ops on one thread that overlap without nesting (only
    containment is nesting: each is read as running after the op it starts in, its span
    whole and never taken from that op's) and launches that
    share a correlation id (every kernel of the id goes to the first)."""
    events = data["traceEvents"]
    threads: dict[tuple[Any, Any], list[tuple[float, int, float, Any, float, float]]] = {}
    devices: dict[Any, list[Device]] = {}  # correlation id -> the device work of one launch
    orphans: list[Device] = []
    by_id: dict[Any, int] = {}  # correlation id -> how many launches carry it
    timeline: list[Device] = []  # every piece of device work, in the file's order
    durations: dict[bool, list[float]] = {True: [], False: []}  # device, host: a sample
    steps: dict[str, int] = {}
    launch_times: dict[Any, float] = {}
    launch_marks: list[float] = []
    capture_marks: list[tuple[float, bool]] = []
    launches = 0
    shapes = False
    integer = True
    for index, event in enumerate(events):
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        cat = event.get("cat")
        if not isinstance(cat, str):
            if cat is None:
                continue
            raise _Event(path, index, event).fail("cat", cat, "a category name (a string)")
        if cat not in OP_CATEGORIES and cat not in LAUNCH_CATEGORIES and \
                cat not in DEVICE_CATEGORIES and cat not in ANNOTATION_CATEGORIES:
            continue
        read = _Event(path, index, event)
        start_us, dur_us = read.micros("ts"), read.micros("dur")
        start, seconds = start_us * _US, dur_us * _US
        args = read.args()
        if cat in OP_CATEGORIES or (cat in ANNOTATION_CATEGORIES
                                    and read.name().startswith(_RANGES)):
            shapes = shapes or "Input Dims" in args or "Input dims" in args
            if len(durations[False]) < _SAMPLE:
                durations[False].append(dur_us)
            op = Op(read.name(), start, seconds, args)
            threads.setdefault(read.thread(), []).append(
                (op.start, 0, -op.seconds, op, start_us, start_us + dur_us))
        elif cat in LAUNCH_CATEGORIES:
            name = read.name()
            if _LAUNCH.search(name):
                launches += 1
                launch_marks.append(start_us)
            elif _CAPTURE.search(name):
                capture_marks.append((start_us, "Begin" in name))
            correlation = read.key("correlation", optional=True)
            if correlation is not None:
                by_id[correlation] = by_id.get(correlation, 0) + 1
                launch_times.setdefault(correlation, start_us)
                threads.setdefault(read.thread(), []).append(
                    (start, 1, 0.0, (correlation, name), start_us, start_us))
        elif cat in ANNOTATION_CATEGORIES:
            found = _STEP.search(read.name())
            if found is not None:
                label = found.group(1).upper() + (f" bs={found.group(2)}" if found.group(2)
                                                  else "")
                steps[label] = steps.get(label, 0) + 1
        else:
            integer = integer and float(event["dur"]).is_integer()
            if len(durations[True]) < _SAMPLE:
                durations[True].append(dur_us)
            work = Device(read.name(), seconds, cat, args, start=start_us,
                          stream=(event.get("pid"), event.get("tid")))
            timeline.append(work)
            correlation = read.key("correlation", optional=True)
            if correlation is None:
                orphans.append(work)
            else:  # one launch may run several pieces (a CUDA graph's nodes): keep each
                devices.setdefault(correlation, []).append(work)
    roots: list[Op] = []
    overlaps: list[Op] = []
    outside: dict[Any, str] = {}  # correlation -> the launch's name, for one under no op
    for (pid, tid), items in threads.items():
        # at one instant ops come before launches, and an outer (longer) op before its child
        items.sort(key=_order)
        stack: list[Op] = []
        ends: list[float] = []  # of the ops on the stack, in us as the file writes them
        for start, kind, _, what, start_us, end_us in items:
            overlapped = False
            # only containment is nesting: an op that starts inside another and ends after
            # it ran after it, overlapping (in the file's own us: seconds since the epoch
            # round off, and an op that starts where another ends is not an overlap)
            while stack and (start >= stack[-1].end or (kind == 0 and end_us > ends[-1])):
                overlapped = overlapped or (kind == 0 and start_us < ends[-1])
                stack.pop()
                ends.pop()
            if kind == 0:
                if overlapped:
                    overlaps.append(what)
                if len(stack) >= MAX_DEPTH:
                    raise TraceFileError(
                        f"trace file {path!r}: CPU ops on thread {pid}/{tid} nest more than "
                        f"{MAX_DEPTH} deep (at {what.name!r}); a profiler trace nests a few "
                        f"dozen")
                (stack[-1].children if stack else roots).append(what)
                stack.append(what)
                ends.append(end_us)
                continue
            correlation, name = what
            if correlation not in devices:
                continue
            if not stack:  # launched under no op: kept, with its launch, as an orphan
                outside[correlation] = str(name)
            elif "GraphLaunch" in str(name):  # a graph's nodes: named by their launch
                stack[-1].launched.extend(replace(d, launch=str(name))
                                          for d in devices.pop(correlation))
            else:
                stack[-1].launched.extend(devices.pop(correlation))
    for correlation, rest in devices.items():  # launched under no op, or not in the trace
        launch = outside.get(correlation)
        orphans.extend(rest if launch is None else (replace(d, launch=launch) for d in rest))
    roots.sort(key=lambda op: op.start)
    warnings: list[str] = []
    if overlaps:
        warnings.append(f"{len(overlaps)} CPU op(s) overlap the op they start in without "
                        f"ending in it (first: {overlaps[0].name!r}); each is read as "
                        f"running after it, with its whole span, never nested in it")
    shared = sorted((k for k, n in by_id.items() if n > 1), key=str)
    if shared:
        warnings.append(f"{len(shared)} correlation id(s) are shared by several launches "
                        f"(first: {shared[0]!r}); their kernels all go to the first launch")
    device = _device(data.get("deviceProperties"), path)
    on_device = bool(orphans) or _any_launched(roots)
    return TraceFile(path=path, roots=roots, orphans=orphans, device=device,
                     on_device=on_device, events=len(events), shapes=shapes,
                     integer_times=integer and on_device, warnings=tuple(warnings),
                     accelerator=None if on_device else _accelerator(events, device),
                     tick=timer_tick(durations[on_device]), steps=steps,
                     launches=launches, timeline=tuple(timeline),
                     distributed=_distributed(data.get("distributedInfo")),
                     launch_times=launch_times,
                     segments=_segments(capture_marks, launch_marks))


def _segments(marks: list[tuple[float, bool]], launched: list[float]
              ) -> tuple[tuple[float, float, int], ...]:
    """Each begin capture .. end capture span (us) with the launches inside it."""
    import bisect

    launched.sort()
    out = []
    begin: float | None = None
    for at, is_begin in sorted(marks):
        if is_begin:
            begin = at
        elif begin is not None:
            count = bisect.bisect_right(launched, at) - bisect.bisect_left(launched, begin)
            out.append((begin, at, count))
            begin = None
    return tuple(out)


def _distributed(info: Any) -> dict[str, Any] | None:
    """A trace's ``distributedInfo`` where it is an object, else None."""
    return dict(info) if isinstance(info, dict) else None


def _bounded(value: Any) -> bool:
    """A finite number in [0, 2**64): what a device property can be, checked before any
    arithmetic (a 400-digit integer would overflow a float)."""
    return type(value) in _NUMBERS and 0 <= value < 2**64 and math.isfinite(float(value))


def _device(properties: Any, path: str) -> dict[str, Any] | None:
    """The first GPU's properties, its name a string and its memory a number of bytes."""
    if not isinstance(properties, list) or not properties or not isinstance(
            properties[0], dict):
        return None
    device = properties[0]
    checks: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
        ("name", lambda v: isinstance(v, str), "a string"),
        ("totalGlobalMem", _bounded, "a number of bytes below 2**64"),
        ("numSms", _bounded, "a count below 2**64"),
        ("multiProcessorCount", _bounded, "a count below 2**64"),
        ("clockRate", _bounded, "a clock in kHz below 2**64"))
    for key, check, allowed in checks:
        value = device.get(key)
        if value is not None and not check(value):
            raise TraceFileError(f"trace file {path!r}: deviceProperties[0] has "
                                 f"{key}={brief(value, 40)}; expected {allowed}")
    return device


#: Event categories of accelerators whose device work this reader does not join to ops:
#: Kineto writes Meta's MTIA activity as ``mtia_runtime`` and ``mtia_ccp_events``.
_ACCELERATORS = {"mtia": "MTIA"}


def _accelerator(events: list[Any], device: dict[str, Any] | None) -> str | None:
    """The accelerator a trace with no CUDA/HIP device work ran on, when its device name or
    its event categories say (MTIA); None for a CPU trace."""
    name = str((device or {}).get("name") or "").lower()
    for key, label in _ACCELERATORS.items():
        if key in name:
            return label
    for event in events:
        category = event.get("cat") if isinstance(event, dict) else None
        if isinstance(category, str):
            for key, label in _ACCELERATORS.items():
                if category.lower().startswith(key):
                    return label
    return None


#: Durations read to find a trace's timer tick.
_SAMPLE = 4096
#: Candidate ticks (ns), largest first: whole microseconds (older Kineto), the 32 ns of an
#: NVIDIA GPU's global timer, and the like.
_TICKS = (1000, 500, 250, 200, 128, 100, 64, 50, 32, 25, 20, 16)


def timer_tick(durations: list[float]) -> float:
    """The resolution (s) of the timer that measured *durations* (us, as the trace writes
    them): the largest candidate tick that at least 95% of the durations are whole multiples
    of (within 1 ns: a duration is the difference of two timestamps, each rounded to the ns
    when written), at most 1 us (the format's unit), 1 ns when none fits. With no duration to
    read, 1 us: the coarsest a trace's clock can be."""
    nanos = [round(d * 1000) for d in durations]
    if not any(nanos):
        return 1e-6
    need = 0.95 * len(nanos)
    for tick in _TICKS:
        fits = sum(1 for n in nanos if min(n % tick, tick - n % tick) <= 1)
        if fits >= need:
            return tick / 1e9
    return 1e-9


def _any_launched(roots: list[Op]) -> bool:
    pending = list(roots)
    while pending:
        op = pending.pop()
        if op.launched:
            return True
        pending.extend(op.children)
    return False


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple("" if v is None else str(v) for v in value)

"""A PyTorch profiler trace (``prof.export_chrome_trace()``) read into a tree of CPU ops.

The file is the Chrome trace format PyTorch's profiler (Kineto) writes, ``.json`` or
``.json.gz``. What is read:

* **CPU ops** (events of category ``cpu_op``, ``Operator`` in older traces): name, start and
  duration, and, when the trace was recorded with ``record_shapes=True``, each input's dims,
  type (a dtype name such as ``float``, or ``Scalar``, ``ScalarList``, ``TensorList``) and,
  in traces of torch 2.1 on, the concrete value of each scalar input. Per host thread the
  ops nest by their time spans into a tree (an ``aten::linear`` holds its ``aten::addmm``).
* **Triton launches**: the ranges ``profile()`` records around each (category
  ``user_annotation``, named ``triton::<kernel>(<shapes>)``), read as ops.
* **Launches** (category ``cuda_runtime``/``cuda_driver``, ``cudaLaunchKernel`` and the
  like) are attributed to the innermost CPU op whose span holds them, on their thread.
* **Device work** (categories ``kernel``, ``gpu_memcpy``, ``gpu_memset``) is joined to its
  launch through the ``correlation`` id both carry, so every kernel lands in the op that
  launched it: an ``addmm`` that runs cuBLAS's GEMM and then its split-K reduction owns both.
  A kernel whose launch is under no op (or missing) is kept at the root, by its own name.
* ``deviceProperties`` (the GPU's name and memory) says which chip ran it.

Times are read in microseconds (the format's unit) and kept in seconds. Nothing here knows a
formula: :mod:`.pricing` prices the ops, :mod:`.join` sets them against their kernels.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import RooflineError

#: Categories of CPU ops, of launches on the host, and of work on the device.
OP_CATEGORIES = frozenset({"cpu_op", "operator", "Operator"})
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy",
                               "Memset"})
_US = 1e-6
#: The prefix of the profiler ranges ``profile()`` puts around a Triton launch (read as ops).
LAUNCH_RANGE = "triton::"
#: A host call that puts device work on a stream (a graph's replay is not one of them).
_LAUNCH = re.compile(r"LaunchKernel|Memcpy|Memset|cuLaunch|hipExtModuleLaunch")
#: Host annotations (``record_function``) where serving engines name their steps.
ANNOTATION_CATEGORIES = frozenset({"user_annotation"})
#: A serving step's annotation: vLLM's and SGLang's ``step[DECODE bs=64 ...]``.
_STEP = re.compile(r"step\[\s*([A-Za-z_]+)(?:[^\]]*?\bbs\s*=\s*(\d+))?", re.IGNORECASE)


class TraceFileError(RooflineError, ValueError):
    """A trace file that cannot be read as a PyTorch profiler trace."""


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
    accelerator: str | None = None  # a device the reader cannot price (MTIA), by name
    tick: float = 1e-6  # the resolution of the timer of its measured times (s): timer_tick()
    #: serving steps annotated on the host (``step[DECODE bs=64 ...]``): how many of each
    #: kind and batch size (``DECODE bs=64``)
    steps: dict[str, int] = field(default_factory=dict)
    #: the host's launches of device work (kernels, copies, memsets): in a trace of a CUDA
    #: graph's capture, whose launches ran nothing, the graph's nodes
    launches: int = 0

    def total_seconds(self) -> float:
        """The measured time the profile shares out: the device time of every kernel (GPU),
        else the host time of every top-level op (CPU)."""
        if self.on_device:
            return sum(r.device_seconds() for r in self.roots) + sum(
                d.seconds for d in self.orphans)
        return sum(r.seconds for r in self.roots)


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object of a trace file (``.json`` or gzip-compressed ``.json.gz``)."""
    where = Path(path)
    if not where.is_file():
        raise TraceFileError(f"trace file {str(where)!r} does not exist; expected a PyTorch "
                             f"profiler trace (.json or .json.gz) from "
                             f"prof.export_chrome_trace()")
    try:
        raw = where.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        data = json.loads(raw)
    except (OSError, UnicodeDecodeError, ValueError, EOFError) as exc:
        raise TraceFileError(f"trace file {str(where)!r} is not JSON (or gzip-compressed "
                             f"JSON): {str(exc).splitlines()[0][:120]}") from None
    if isinstance(data, list):  # a bare event list is a valid Chrome trace too
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise TraceFileError(f"trace file {str(where)!r} has no 'traceEvents' list: not a "
                             f"Chrome trace as prof.export_chrome_trace() writes")
    return data


def read(path: str | os.PathLike[str]) -> TraceFile:
    """Read *path* into a :class:`TraceFile` (see the module docstring)."""
    with paused_gc():
        data = load(path)
        return parse(data, str(path))


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while a trace is read: the JSON of a trace of
    100,000 events is a million small objects, none in a cycle, and the collector's passes
    over them as they are made cost more than reading them (2.2 s of 2.9 s for 240,000
    events). Memory is freed as before, by reference counts."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_NUMBERS = (int, float)


def _order(item: tuple[float, int, float, Any]) -> tuple[float, int, float]:
    return item[0], item[1], item[2]


def parse(data: dict[str, Any], path: str = "<trace>") -> TraceFile:
    """A :class:`TraceFile` from the JSON object of a trace."""
    events = data["traceEvents"]
    threads: dict[tuple[Any, Any], list[tuple[float, int, float, Any]]] = {}
    devices: dict[Any, list[Device]] = {}  # correlation id -> the device work of one launch
    orphans: list[Device] = []
    shapes = False
    integer = True
    durations: dict[bool, list[float]] = {True: [], False: []}  # device, host: a sample
    steps: dict[str, int] = {}
    launches = 0
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        cat = event.get("cat")
        start: Any = event.get("ts")
        dur: Any = event.get("dur")
        if type(start) not in _NUMBERS or type(dur) not in _NUMBERS or dur < 0:
            continue
        args = event.get("args") or {}
        if cat in OP_CATEGORIES or (cat == "user_annotation" and str(
                event.get("name", "")).startswith(LAUNCH_RANGE)):
            shapes = shapes or "Input Dims" in args or "Input dims" in args
            if len(durations[False]) < _SAMPLE:
                durations[False].append(dur)
            op = Op(str(event.get("name", "?")), start * _US, dur * _US, args)
            threads.setdefault((event.get("pid"), event.get("tid")), []).append(
                (op.start, 0, -op.seconds, op))
        elif cat in LAUNCH_CATEGORIES:
            if _LAUNCH.search(str(event.get("name", ""))):
                launches += 1
            correlation = args.get("correlation")
            if correlation is not None:
                threads.setdefault((event.get("pid"), event.get("tid")), []).append(
                    (start * _US, 1, 0.0, (correlation, event.get("name"))))
        elif cat in ANNOTATION_CATEGORIES:
            found = _STEP.search(str(event.get("name", "")))
            if found is not None:
                label = found.group(1).upper() + (f" bs={found.group(2)}" if found.group(2)
                                                  else "")
                steps[label] = steps.get(label, 0) + 1
        elif cat in DEVICE_CATEGORIES:
            integer = integer and float(dur).is_integer()
            if len(durations[True]) < _SAMPLE:
                durations[True].append(dur)
            work = Device(str(event.get("name", "?")), dur * _US, str(cat),
                          args if isinstance(args, dict) else {})
            correlation = args.get("correlation")
            if correlation is None:
                orphans.append(work)
            else:  # one launch may run several pieces (a CUDA graph's nodes): keep each
                devices.setdefault(correlation, []).append(work)
    roots: list[Op] = []
    outside: dict[Any, str] = {}  # correlation -> the launch's name, for one under no op
    for items in threads.values():
        # at one instant ops come before launches, and an outer (longer) op before its child
        items.sort(key=_order)
        stack: list[Op] = []
        for start, kind, _, what in items:
            while stack and start >= stack[-1].end:
                stack.pop()
            if kind == 0:
                (stack[-1].children if stack else roots).append(what)
                stack.append(what)
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
        name = outside.get(correlation)
        orphans.extend(rest if name is None else (replace(d, launch=name) for d in rest))
    roots.sort(key=lambda op: op.start)
    properties = data.get("deviceProperties")
    device = properties[0] if isinstance(properties, list) and properties and isinstance(
        properties[0], dict) else None
    on_device = bool(orphans) or _any_launched(roots)
    return TraceFile(path=path, roots=roots, orphans=orphans, device=device,
                     on_device=on_device, events=len(events), shapes=shapes,
                     integer_times=integer and on_device,
                     accelerator=None if on_device else _accelerator(events, device),
                     tick=timer_tick(durations[on_device]), steps=steps,
                     launches=launches)


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

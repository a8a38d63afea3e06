"""A ``jax.profiler`` trace priced per executed HLO op: the JAX twin of :mod:`.join`.

The trace (:mod:`.xplane`) holds the ops XLA executed, each an event naming its instruction
(``hlo_op``) and program (``program_id``, ``hlo_module``), and the compiled programs
themselves (:mod:`.hlo`). Each executed op is joined to its instruction by those two names
and priced as one kernel (:mod:`.hlo_pricing`: the FLOPs of the ops it fused, the bytes
crossing its boundary). Rows aggregate the executions of one op of one program, named by
the op (``ynn_fusion.1``), prefixed by its program (``jit_mlp/ynn_fusion.1``) where the
trace ran several.

**Which events.** Where a device plane (``/device:GPU:N``, ``/device:TPU:N``) holds
events, the device's kernels are the times (``on_device``; the host's events of the same
ops are their launches): an op's kernels' device time, its executions counted as the most
often run of its kernels. Otherwise (XLA:CPU) the
ops recorded on the host's threads, each execution an event (recorded when the trace is
taken at ``host_tracer_level`` 3: at the default level XLA:CPU records none). An op whose
span holds other ops (a ``while`` running its body) counts its own time outside them.

**TPU lines.** A TPU's plane holds its executed ops on the ``XLA Ops`` line, each event
named by its instruction (``%fusion.3 = f32[...] fusion(...)``, the name before ``=``)
with no ``hlo_op`` stat, its span the ``device_offset_ps`` and ``device_duration_ps``
stats where it has them (XProf's own timing of the op on the core: a few events' own spans
read 0 where those say 8 ms, and start where the previous op still runs); its program is
its ``program_id`` stat, or the ``XLA Modules`` event (``jit_f(<program id>)``) its span
lies in. The ``Async XLA Ops`` line holds async
spans (a ``copy-start`` to its ``copy-done``): in flight while other ops run, so never
added to the ops' time and never nesting one another; the note names them. On the ``XLA
Ops`` line an async op's halves (``copy-start``, ``copy-done``, ``all-reduce-start``...)
are the core issuing it and waiting for it: their time is named unpriced with that
reason (the work ran over the span, not in the wait), never judged as the work itself.

**Async spans** (an op whose name ends ``-start`` or ``-done``) never hold another op's
time and are never held: each keeps its whole duration.

**What is not priced** is named with its time: an op of a program whose HLO the trace does
not hold, an opcode without a formula, a loop's own time. A trace with no executed op, or
no compiled program at all, is refused with what to record instead.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...engine.analysis import analyze
from ...engine.limits import limit_of
from ...errors import UnknownHardwareError
from ..devices import plane_chip
from ..model import Profile, Unpriced, rows_sorted
from ..rows import judged_row, precision_of
from ..rules import ProfileError
from . import hlo_pricing
from .hlo import Instruction, Module, parse_module
from .xplane import Event, Plane, XPlaneError, read_space

if TYPE_CHECKING:
    from ...engine.workload import Workload
    from ...hardware import Hardware

#: How to record a trace these readers can price (said where one falls short).
RECORD = ("jax.profiler.trace(dir, profiler_options=opts) with opts = "
          "jax.profiler.ProfileOptions() and opts.host_tracer_level = 3")
_PROGRAM = re.compile(r"^(?P<name>.*)\((?P<id>-?\d+)\)$")


@dataclass
class JaxTrace:
    """A read XSpace: the executed ops, the compiled programs, the device."""

    path: str
    ops: list[tuple[Event, float]]  # each executed op and its own time (s)
    programs: dict[int, bytes]  # program id -> serialized HloProto
    names: dict[int, str]  # program id -> module name
    on_device: bool
    device: dict[str, Any] | None  # the first device plane's stats
    modules: dict[int, Module | str] = field(default_factory=dict)
    #: async spans (a TPU's ``Async XLA Ops`` line): in flight beside the ops, not timed
    spans: list[Event] = field(default_factory=list)

    def module(self, program: int) -> Module | str:
        """The compiled program *program*, or why it cannot be had."""
        hit = self.modules.get(program)
        if hit is None:
            raw = self.programs.get(program)
            if raw is None:
                hit = (f"the trace holds no compiled HLO of program {program}: it was "
                       f"compiled while no profiler ran, or in another process")
            else:
                try:
                    hit = parse_module(raw, f"{self.names.get(program, '?')}({program})")
                except XPlaneError as exc:
                    hit = str(exc)
            self.modules[program] = hit
        return hit


def find(path: str | os.PathLike[str]) -> Path:
    """The ``.xplane.pb`` of *path*: the file itself, or the newest one under a directory
    that ``jax.profiler.trace(dir)`` wrote. Only regular files count: a FIFO (which would
    block the read), a socket or a dangling link under the directory is passed over."""
    return located(path)[0]


def located(path: str | os.PathLike[str]) -> tuple[Path, tuple[str, ...]]:
    """:func:`find`'s file, and a note naming the other ``.xplane.pb`` files beside it (a
    multi-host job writes one ``<host>.xplane.pb`` a host into one run folder): the file
    read is one of them, and the note says which were not."""
    where = Path(path)
    if where.is_dir():
        found = sorted((p for p in where.rglob("*.xplane.pb") if _regular(p)),
                       key=_newest)
        if not found:
            raise ProfileError(f"trace {str(where)!r} is a directory with no .xplane.pb: "
                               f"give a torch trace (.json, .json.gz) or the folder "
                               f"jax.profiler.trace(dir) wrote")
        newest = found[-1]
        hosts = sorted(p.name for p in found[:-1] if p.parent == newest.parent)
        note = () if not hosts else (
            f"read {newest.name}, the newest; {len(hosts)} other .xplane.pb beside it (other "
            f"hosts of a run?) not read: " + ", ".join(hosts[:4])
            + (f" and {len(hosts) - 4} more" if len(hosts) > 4 else "")
            + " (give each file to read it)",)
        return newest, note
    if not where.is_file():
        raise ProfileError(f"trace {str(where)!r} does not exist or is not a regular file; "
                           f"expected a jax.profiler trace directory or its .xplane.pb, or "
                           f"a PyTorch profiler trace (.json or .json.gz)")
    return where, ()


def _regular(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _newest(path: Path) -> tuple[float, str]:
    try:
        return path.stat().st_mtime, str(path)
    except OSError:  # gone since it was listed
        return 0.0, str(path)


def read(path: str | os.PathLike[str], max_bytes: int | None = None) -> JaxTrace:
    """Read the XSpace at *path* (a file or a trace directory), of at most *max_bytes*."""
    where, _ = located(path)
    planes = read_space(where, max_bytes)
    return collect(planes, str(where))


def collect(planes: list[Plane], path: str) -> JaxTrace:
    """A :class:`JaxTrace` of read planes (see the module docstring)."""
    programs: dict[int, bytes] = {}
    names: dict[int, str] = {}
    for plane in planes:
        for meta_name, stats in plane.metadata.items():
            raw = stats.get("Hlo Proto")
            match = _PROGRAM.match(meta_name)
            if isinstance(raw, bytes) and match is not None:
                number = program_number(match["id"], f"{Path(path).name[:60]!r}: the "
                                                     f"compiled program {meta_name[:24]!r}")
                programs[number] = raw
                names[number] = match["name"]
    # a device that ran kernels times them; the host's events of the same ops are launches
    devices = [p for p in planes if p.name.startswith("/device:") and p.events]
    device_stats = next((p.stats for p in devices if p.stats), None)
    chosen = devices or [p for p in planes if p.name.startswith("/host:")]
    ops: list[tuple[Event, float]] = []
    spans: list[Event] = []
    for plane in chosen:
        executed = _executed(plane, path)
        spans.extend(e for e in executed if e.line in ASYNC_LINES)
        ops.extend(_own_times([e for e in executed if e.line not in ASYNC_LINES]))
    return JaxTrace(path, ops, programs, names, bool(devices),
                    device_stats if devices else None, spans=spans)


#: A TPU plane's line of executed ops (events named by their instruction, no ``hlo_op``),
#: of the modules they ran in, and of async spans.
OPS_LINE, MODULES_LINE, ASYNC_LINES = "XLA Ops", "XLA Modules", frozenset({"Async XLA Ops"})
_OP_NAME = re.compile(r"^%?(?P<name>[^\s=%]+)")
#: The halves of an async HLO op (``copy-start``, ``all-reduce-done.1``).
ASYNC = re.compile(r"-(start|done)(\.\d+)?$")


def _executed(plane: Plane, path: str) -> list[Event]:
    """The plane's executed ops: events naming their HLO op (``hlo_op``), and on a TPU's
    ``XLA Ops`` and ``Async XLA Ops`` lines every event, its op read from its name and its
    program from its stats or the ``XLA Modules`` event it ran in."""
    modules = sorted((e for e in plane.events if e.line == MODULES_LINE),
                     key=lambda e: e.start_ns)
    starts = [e.start_ns for e in modules]
    # a plane whose kernels name their ops (a GPU's stream lines) is timed by them: an XLA
    # Ops line beside them (XProf's derived view of the same ops) would count each twice
    derived = any("hlo_op" in e.stats for e in plane.events
                  if e.line != OPS_LINE and e.line not in ASYNC_LINES)
    out: list[Event] = []
    for event in plane.events:
        if event.seconds < 0:
            continue
        if (event.line == OPS_LINE or event.line in ASYNC_LINES) and derived:
            continue
        if event.line == OPS_LINE or event.line in ASYNC_LINES:
            match = _OP_NAME.match(event.name)
            if match is None:
                continue
            stats = {**event.stats, "hlo_op": match["name"]}
            if not isinstance(stats.get("program_id"), int):
                index = bisect.bisect_right(starts, event.start_ns) - 1
                program = _PROGRAM.match(modules[index].name) if index >= 0 and \
                    event.start_ns < _end(modules[index]) else None
                if program is not None:
                    stats["program_id"] = program_number(
                        program["id"], f"{Path(path).name[:60]!r}: the XLA Modules "
                        f"event {modules[index].name[:24]!r}")
                    stats.setdefault("hlo_module", program["name"])
            start, length = _picos(stats.get("device_offset_ps")), _picos(
                stats.get("device_duration_ps"))
            if start is not None and length is not None:  # XProf's own span on the core
                event = replace(event, start_ns=start / 1e3, seconds=length * 1e-12)
            out.append(replace(event, name=match["name"], stats=stats))
        elif "hlo_op" in event.stats:
            out.append(event)
    return out


def _picos(value: Any) -> int | None:
    """A time stat in ps: an int >= 0, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def program_number(digits: str, where: str) -> int:
    """A program id as a module's name writes it (``jit_f(<id>)``): at most the 20 digits
    of a uint64, else a one-line error naming *where* (never Python's digit-limit error)."""
    if len(digits.lstrip("-")) > 20:
        raise ProfileError(f"{where}: its program id has {len(digits)} digits (at most "
                           f"20: a 64-bit integer)")
    return int(digits)


def _own_times(events: list[Event]) -> list[tuple[Event, float]]:
    """Each event with its time outside the events its span holds on its line. Only
    containment is nesting: an event that starts before the previous one ends and ends
    after it (two kernels overlapping on a stream by a few ns) ran after it, and keeps its
    whole duration, as the previous one keeps its own."""
    out: list[tuple[Event, float]] = []
    by_line: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for event in events:
        by_line[(event.plane, event.line)].append(event)
    for line in by_line.values():
        line.sort(key=lambda e: (e.start_ns, -e.seconds))
        inner = [0.0] * len(line)
        stack: list[int] = []
        for i, event in enumerate(line):
            if ASYNC.search(str(event.stats.get("hlo_op"))):
                continue  # async: in flight beside the others, never nested
            while stack and not _holds(line[stack[-1]], event):
                stack.pop()
            if stack:
                inner[stack[-1]] += event.seconds
            stack.append(i)
        out.extend((e, max(0.0, e.seconds - inner[i])) for i, e in enumerate(line))
    return out


def _end(event: Event) -> float:
    return event.start_ns + event.seconds * 1e9


def _holds(outer: Event, event: Event) -> bool:
    """Whether *event*'s span lies inside *outer*'s (to half a ns: spans end in float ns)."""
    return outer.start_ns <= event.start_ns < _end(outer) and _end(event) <= _end(outer) + 0.5


@dataclass
class _Group:
    op: str
    shapes: str
    workload: Workload | None
    kernels: dict[str, None]
    times: list[float] = field(default_factory=list)
    launches: dict[str, int] = field(default_factory=dict)
    #: [seconds, events] of each call on the host, where an op of one execution ran as
    #: several events in a row (:func:`_continues`)
    calls: list[list[float]] = field(default_factory=list)


def _program_of(event: Event, trace: JaxTrace) -> int | None:
    value = event.stats.get("program_id")
    if isinstance(value, int):
        return value
    module = event.stats.get("hlo_module")
    matches = [pid for pid, name in trace.names.items() if name == module]
    return matches[0] if len(matches) == 1 else None


def _primitives(module: Module, ins: Instruction) -> list[str]:
    """The jaxpr ops an executed op came from (its instructions' metadata): each by its
    name (``dot_general``, ``max``) and, where it ran in named scopes (flax modules), by
    its path too (``Dense_0/dot_general``), the ``jit(...)`` wrappers left out."""
    found: dict[str, None] = {}
    pending = [ins]
    opened: set[int] = set()  # computations already walked (a cycle is walked once)
    while pending:
        item = pending.pop()
        if item.op_name:
            parts = [p for p in item.op_name.split("/")
                     if not p.startswith(("jit(", "pjit(", "jvp(", "transpose("))]
            if parts:
                found.setdefault(parts[-1])
                found.setdefault("/".join(parts))
        for uid in item.called if item.opcode == "fusion" else ():
            comp = module.computations.get(uid)
            if comp is not None and uid not in opened:
                opened.add(uid)
                pending.extend(comp.instructions)
    return sorted(found)


def refuse_if_empty(trace: JaxTrace) -> None:
    if not trace.ops and trace.on_device:
        raise ProfileError(
            f"jax.profiler trace {trace.path!r}: its device kernels name no HLO op (no "
            f"hlo_op stat), so none can be joined to its compiled program: record it with "
            f"jax.profiler.trace of a jax whose device events name their op")
    if not trace.ops:
        raise ProfileError(
            f"jax.profiler trace {trace.path!r} records no executed XLA op (no event with "
            f"an hlo_op): on XLA:CPU record it with {RECORD}, or set "
            f"XLA_FLAGS=--xla_cpu_enable_xprof_traceme=true before jax starts")
    if not trace.programs:
        raise ProfileError(
            f"jax.profiler trace {trace.path!r} holds no compiled program (no 'Hlo Proto' in "
            f"its /host:metadata plane), so its ops cannot be priced: record it with "
            f"jax.profiler.trace in the process that compiled the program (ProfileOptions."
            f"enable_hlo_proto, on by default)")


#: The resolution of an XSpace's clock: its events' times are whole nanoseconds.
TICK = 1e-9


def build(trace: JaxTrace, chip: Hardware, *, source: str, repeats: int = 1,
          notes: tuple[str, ...] = ()) -> Profile:
    """The :class:`Profile` of *trace* on *chip*, per call of *repeats* runs."""
    refuse_if_empty(trace)
    groups: dict[tuple[int, str], _Group] = {}
    unpriced: dict[tuple[str, str], list[float]] = defaultdict(list)
    several = len({_program_of(event, trace) for event, _ in trace.ops}) > 1
    continued = set() if trace.on_device else _continues([e for e, _ in trace.ops])
    for event, seconds in trace.ops:
        name = str(event.stats["hlo_op"])
        program = _program_of(event, trace)
        module = event.stats.get("hlo_module") or trace.names.get(program or 0, "?")
        label = f"{module}/{name}" if several or program is None else name
        if program is None:
            unpriced[(label, "its program is not named in the trace")].append(seconds)
            continue
        if event.line == OPS_LINE and ASYNC.search(name):
            unpriced[(label, "an async op's issue or wait on the core; its work runs over "
                             "its span, beside other ops")].append(seconds)
            continue
        group = groups.get((program, name))
        if group is None:
            group_or_reason = _group(trace, program, name, label)
            if isinstance(group_or_reason, str):
                unpriced[(label, group_or_reason)].append(seconds)
                continue
            group = groups[(program, name)] = group_or_reason
        group.times.append(seconds)
        if id(event) in continued and group.calls:
            group.calls[-1][0] += seconds
            group.calls[-1][1] += 1
        else:
            group.calls.append([seconds, 1.0])
        if trace.on_device:
            group.kernels.setdefault(event.name)
            group.launches[event.name] = group.launches.get(event.name, 0) + 1
    rows = []
    for group in groups.values():
        measured = sum(group.times)
        if not trace.on_device and len(group.calls) < len(group.times):
            # an op that ran as several events in a row, one call (XLA:CPU runs a sort as a
            # copy then the sort, both under the sort's name): each call with its events
            calls = [(seconds, int(n)) for seconds, n in group.calls]
            count = len(calls)
            spread = None
        else:
            calls = []
            count = max(group.launches.values()) if group.launches else len(group.times)
        if group.workload is None:  # no work: no roof
            bound, limit, flops, nbytes, regime, precision = 0.0, None, 0.0, 0.0, "-", "-"
        else:
            result = analyze(group.workload, chip)
            bound, limit = float(result.time), limit_of(result, chip)
            flops, nbytes = float(result.flops), float(result.bytes)
            regime, precision = str(result.regime), precision_of(result)
        if not calls and len(group.launches) <= 1:  # one event a call: each judged alone
            spread = None
            calls = [(seconds, 1) for seconds in group.times]
        elif not calls:  # several kernels a call, not told apart by call: the calls' mean
            spread = 0.0
            calls = [(measured / count, max(1, round(len(group.times) / count)))] * count
        rows.append(judged_row(
            op=group.op, shapes=group.shapes, kernels=tuple(group.kernels), calls=calls,
            bound=bound, limit=limit, flops=flops, nbytes=nbytes, regime=regime,
            precision=precision, tick=TICK, repeats=repeats, chip=chip, spread=spread))
    missing = sorted((Unpriced(name, sum(t) / repeats, len(t) / repeats, reason)
                      for (name, reason), t in unpriced.items()),
                     key=lambda u: (-u.seconds, u.name))
    total = sum(seconds for _, seconds in trace.ops) / repeats
    notes = (*notes, *spans_note(trace.spans))
    return Profile(hw=chip.name, source=source, on_device=trace.on_device, total=total,
                   rows=rows_sorted(rows), unpriced=tuple(missing), repeats=repeats,
                   notes=notes, tick=TICK)


def spans_note(spans: list[Event]) -> tuple[str, ...]:
    """A line naming the async spans (a TPU's ``Async XLA Ops``): in flight beside the ops,
    so not added to their time; the longest-running ops first, each with its spans' range."""
    if not spans:
        return ()
    by_op: dict[str, list[float]] = defaultdict(list)
    for span in spans:
        by_op[str(span.stats.get("hlo_op"))].append(span.seconds)
    ranked = sorted(by_op.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    shown = ", ".join(f"{op} {len(t)} x {_ms(min(t))}-{_ms(max(t))}" for op, t in ranked[:3])
    more = f" and {len(ranked) - 3} more" if len(ranked) > 3 else ""
    return (f"{len(spans)} async spans ({sum(s.seconds for s in spans):.3g} s in flight, "
            f"beside the ops, not added to their time): {shown}{more}",)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _continues(events: list[Event]) -> set[int]:
    """The ids of the host events that continue the previous event's call: the same op of
    the same execution (``run_id``) on the same thread (two devices of XLA:CPU run one
    execution on two threads: two calls), with no other op's event between them in time (a loop
    body's fusion, run again after the loop's other ops, is a call of its own). An op
    whose events no other op separates is one call, read as slower, never as faster."""
    out: set[int] = set()
    ordered = sorted((e for e in events if e.stats.get("run_id") is not None),
                     key=lambda e: (str(e.stats.get("run_id")), e.plane, e.line, e.start_ns))
    for before, event in itertools.pairwise(ordered):
        if (before.stats.get("run_id") == event.stats.get("run_id")
                and (before.plane, before.line) == (event.plane, event.line)
                and before.stats.get("hlo_op") == event.stats.get("hlo_op")
                and before.stats.get("hlo_module") == event.stats.get("hlo_module")):
            out.add(id(event))
    return out


def _group(trace: JaxTrace, program: int, name: str, label: str) -> _Group | str:
    module = trace.module(program)
    if isinstance(module, str):
        return module
    ins = module.by_name.get(name)
    if ins is None:
        return f"no instruction {name!r} in its compiled program"
    priced = hlo_pricing.price(module, ins)
    if isinstance(priced, str) and priced != hlo_pricing.ZERO:
        return priced
    shapes = ",".join(a.label for a in ins.arrays[:1 if ins.tuple_shape else None])
    kernels = dict.fromkeys(_primitives(module, ins))
    return _Group(label, shapes, None if isinstance(priced, str) else priced, kernels)


def chip_of(stats: dict[str, Any] | None) -> Hardware:
    """The built-in chip a device plane's stats describe (:func:`.devices.plane_chip`, the
    core's one identification), or a ProfileError that says to name it with ``--hw``."""
    try:
        return plane_chip(stats)
    except UnknownHardwareError as exc:
        raise ProfileError(str(exc)) from None

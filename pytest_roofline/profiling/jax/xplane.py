"""A ``jax.profiler`` trace (an XSpace, ``.xplane.pb``) read without TensorFlow or jaxlib.

``jax.profiler.trace(dir)`` writes ``dir/plugins/profile/<run>/<host>.xplane.pb``: one
serialized ``XSpace`` protocol buffer (``tsl/profiler/protobuf/xplane.proto``). It is read
here by its wire format, field by field, so a trace recorded on a GPU or TPU cluster reads on
any CI runner. What is read:

* **Planes** (``XSpace.planes = 1``): ``/host:CPU`` (host threads; on XLA:CPU the executed
  ops), ``/device:GPU:N`` / ``/device:TPU:N`` (the device's kernels), ``/host:metadata``.
* **Events** (``XPlane.lines = 3`` -> ``XLine.events = 4``): each event's name (through its
  ``XEventMetadata``), duration (``duration_ps = 3``) and stats, its own (``XEvent.stats =
  4``) and its metadata's (``XEventMetadata.stats = 5``), by name (``XStatMetadata``): an
  executed HLO op carries ``hlo_op`` (the instruction's name), ``hlo_module`` and
  ``program_id``.
* **Compiled programs**: the ``/host:metadata`` plane holds, per program XLA had compiled
  while tracing, an event metadata named ``<module>(<program_id>)`` with the stat ``Hlo
  Proto``: the serialized ``HloProto``, read by :mod:`.hlo`.
* **The device** a device plane describes (``device_vendor``, ``compute_cap_major``/``minor``,
  ``memory_size``, ``core_count``): the chip, see :func:`chip_of`.

A file that is not an XSpace (JSON, gzip, a truncated or corrupt protocol buffer) is an
:class:`XPlaneError` naming it, never a traceback from the decoder.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import RooflineError
from ..rules import MAX_BYTES

_PS = 1e-12


class XPlaneError(RooflineError, ValueError):
    """A file that cannot be read as a ``jax.profiler`` XSpace (``.xplane.pb``)."""


class _BadField(Exception):
    """A field whose value cannot be right (its message names the event and the field)."""


class _Truncated(Exception):
    pass


def _varint(data: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise _Truncated
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """``(field number, wire type, value)`` of each field of one message: an int for a
    varint, bytes for a length-delimited field or a fixed 32/64-bit one."""
    i, end = 0, len(data)
    while i < end:
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Truncated
        if wire == 0:
            value, i = _varint(data, i)
            yield number, 0, value
        elif wire == 2:
            size, i = _varint(data, i)
            if i + size > end:
                raise _Truncated
            yield number, 2, data[i:i + size]
            i += size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if i + size > end:
                raise _Truncated
            yield number, wire, data[i:i + size]
            i += size
        else:  # groups (3, 4) are not used by these messages
            raise _Truncated


def message(data: bytes) -> dict[int, list[Any]]:
    """Every field of one message by number (repeated fields in order)."""
    out: dict[int, list[Any]] = {}
    for number, _, value in fields(data):
        out.setdefault(number, []).append(value)
    return out


def packed(values: list[Any]) -> list[int]:
    """The ints of a repeated integer field, packed (bytes) or not (ints)."""
    out: list[int] = []
    for value in values:
        if isinstance(value, int):
            out.append(value)
            continue
        i = 0
        while i < len(value):
            number, i = _varint(value, i)
            out.append(number)
    return out


def signed(value: int) -> int:
    """An int64 read from its varint (two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def integer(values: list[Any] | None, default: int = 0) -> int:
    """The first value of an int64 field, or *default* where it is absent or of another
    wire type (a corrupt message)."""
    value = values[0] if values else None
    return signed(value) if isinstance(value, int) else default


def text(values: list[Any] | None) -> str:
    if not values or not isinstance(values[0], bytes):
        return ""
    return values[0].decode("utf-8", "replace")


@dataclass(frozen=True)
class Event:
    """One executed span: its name, plane, line, start (ns from the line's origin),
    duration (s) and stats by name."""

    name: str
    plane: str
    line: str
    start_ns: float
    seconds: float
    stats: dict[str, Any] = field(compare=False, hash=False)


@dataclass(frozen=True)
class Plane:
    name: str
    stats: dict[str, Any]
    events: tuple[Event, ...]
    #: event metadata name -> its stats (the /host:metadata plane's compiled programs)
    metadata: dict[str, dict[str, Any]]


def _stat(data: bytes, names: dict[int, str]) -> tuple[str, Any]:
    """(name, value) of an XStat: double 2, uint64 3, int64 4, str 5, bytes 6, ref 7."""
    name, value = "", None
    for number, wire, raw in fields(data):
        if number == 1 and wire == 0:
            name = names.get(raw, str(raw))
        elif number == 2 and wire == 1:
            value = struct.unpack("<d", raw)[0]
        elif number in (3, 4) and wire == 0:
            value = raw if number == 3 else signed(raw)
        elif number == 5 and wire == 2:
            value = raw.decode("utf-8", "replace")
        elif number == 6 and wire == 2:
            value = bytes(raw)
        elif number == 7 and wire == 0:
            value = names.get(raw, str(raw))
    return name, value


def _stats(values: list[Any] | None, names: dict[int, str]) -> dict[str, Any]:
    return dict(_stat(v, names) for v in values or () if isinstance(v, bytes))


def _map_entries(values: list[Any] | None) -> Iterator[tuple[int, bytes]]:
    """The (key, value) entries of a ``map<int64, Message>`` field."""
    for entry in values or ():
        if not isinstance(entry, bytes):
            continue
        parts = message(entry)
        key = parts.get(1, [0])[0]
        value = parts.get(2, [b""])[0]
        if isinstance(key, int) and isinstance(value, bytes):
            yield key, value


def _plane(data: bytes, keep_metadata: bool) -> Plane:
    parts = message(data)
    name = text(parts.get(2))
    names: dict[int, str] = {}
    for key, value in _map_entries(parts.get(5)):  # stat metadata: id -> name
        names[key] = text(message(value).get(2))
    events_meta: dict[int, tuple[str, dict[str, Any]]] = {}
    for key, value in _map_entries(parts.get(4)):
        meta = message(value)
        events_meta[key] = (text(meta.get(2)), _stats(meta.get(5), names))
    events: list[Event] = []
    for line_data in parts.get(3, ()):
        if not isinstance(line_data, bytes):
            continue
        line = message(line_data)
        line_name = text(line.get(11)) or text(line.get(2))
        for event_data in line.get(4, ()):
            if not isinstance(event_data, bytes):
                continue
            event = message(event_data)
            meta_name, meta_stats = events_meta.get(event.get(1, [0])[0], ("?", {}))
            offset = event.get(2, [0])[0]
            duration = event.get(3, [0])[0]
            if not isinstance(offset, int) or not isinstance(duration, int):
                continue
            offset, duration = signed(offset), signed(duration)  # both int64 on the wire
            if duration < 0:
                raise _BadField(f"event {meta_name[:60]!r} on {line_name[:40]!r} of plane "
                                f"{name[:40]!r}: duration_ps {duration} is negative (a "
                                f"duration is >= 0)")
            stats = {**meta_stats, **_stats(event.get(4), names)}
            events.append(Event(meta_name, name, line_name, offset / 1000.0,
                                duration * _PS, stats))
    metadata = {meta_name: stats for meta_name, stats in events_meta.values()} \
        if keep_metadata else {}
    return Plane(name, _stats(parts.get(6), names), tuple(events), metadata)


def is_xspace(raw: bytes) -> bool:
    """True when *raw* starts as an XSpace does (a plane, field 1, length-delimited, whose
    own first field is its id or its name)."""
    if len(raw) < 4 or raw[0] != 0x0A:
        return False
    try:
        size, i = _varint(raw, 1)
    except _Truncated:
        return False
    return i < len(raw) and raw[i] in (0x08, 0x12) and size > 0


def read_space(path: str | os.PathLike[str], max_bytes: int | None = None) -> list[Plane]:
    """The planes of the XSpace file *path*, of at most *max_bytes* bytes (default
    :data:`.rules.MAX_BYTES`, every trace format's; a larger file, a sparse one included,
    is refused unread)."""
    where = Path(path)
    limit = MAX_BYTES if max_bytes is None else max_bytes
    try:
        size = where.stat().st_size
        if size > limit:
            raise XPlaneError(f"jax.profiler trace {str(where)!r} is larger than {limit} "
                              f"bytes (max_bytes={limit}; raise it with max_bytes= or "
                              f"--max-bytes)")
        raw = where.read_bytes()
    except OSError as exc:
        raise XPlaneError(f"jax.profiler trace {str(where)!r} cannot be read: "
                          f"{exc.strerror or exc}") from None
    except MemoryError:
        raise XPlaneError(f"jax.profiler trace {str(where)!r} needs more memory to read "
                          f"than this process may use ({size} bytes)") from None
    return parse_space(raw, str(where))


def parse_space(raw: bytes, where: str = "<xspace>") -> list[Plane]:
    """The planes of a serialized XSpace (see the module docstring)."""
    if raw[:2] == b"\x1f\x8b" or raw.lstrip()[:1] in (b"{", b"["):
        raise XPlaneError(f"{where!r} is JSON (a chrome or perfetto trace), not a "
                          f"jax.profiler XSpace (.xplane.pb)")
    try:
        planes = [_plane(p, True) for number, wire, p in fields(raw)
                  if number == 1 and wire == 2]
    except (_Truncated, UnicodeDecodeError, struct.error):
        planes = []
    except _BadField as exc:
        raise XPlaneError(f"{where!r}: {exc}") from None
    except RecursionError:
        raise XPlaneError(f"{where!r} nests its messages deeper than an XSpace does") from None
    if not planes:
        raise XPlaneError(f"{where!r} is not a jax.profiler XSpace (.xplane.pb): it holds no "
                          f"readable plane (truncated, or another file)")
    return planes

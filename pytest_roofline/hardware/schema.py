"""The hardware spec schema: a raw spec mapping (``specs/hardware/*.yaml``, documented in
``specs/hardware/README.md``) read into a :class:`~.chip.Hardware`, one reader per section.

Every number is cited (a key of ``sources`` or a URL) and parsed with its unit once; an
unknown key in any section is an error naming the file and the field, so a typo never
silently drops a number. Adding a spec field: its key in the section's key set, its reading
in that section's reader, its field on :class:`~.chip.Hardware`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import dtypes, units
from ..errors import SpecError, UnsupportedPrecisionError, brief, did_you_mean
from ..specfiles import check_shape
from .chip import (
    _NAME,
    DEVICE_KINDS,
    LINK_ALGORITHMS,
    SOFTWARE_ALGORITHMS,
    Hardware,
    Link,
    MemoryLevel,
)

_TOP_KEYS = frozenset({
    "name", "aliases", "vendor", "description", "default_dtype", "sources", "memory", "matrix",
    "matrix_sparse", "vector", "links", "onchip", "clock", "notes", "extends", "vector_fallback",
    "default_link", "note", "vector_matmul", "mixed_matmul", "provenance", "mesh_axes",
    "device",
})
_DEVICE_KEYS = frozenset({"compute_units", "is", "die", "source", "note", "notes"})
_MIXED_KEYS = frozenset({"paths", "source", "note", "notes"})
_VECTOR_MATMUL_KEYS = frozenset({"precisions", "source", "note", "notes"})
_MEMORY_KEYS = frozenset({"capacity", "bandwidth", "by_threads", "kind", "source", "note",
                          "notes"})
_LINK_KEYS = frozenset({"bandwidth", "count", "source", "note", "notes", "kind", "latency",
                        "latency_source", "latency_kind", "algorithms", "algorithms_source"})
_LEVEL_KEYS = frozenset({"name", "capacity", "bandwidth", "source", "note", "notes", "kind"})
_CLOCK_KEYS = frozenset({"boost", "base", "value", "source", "note", "notes"})


class _Reader:
    """Reads one raw spec mapping, naming the file and field in every error."""

    def __init__(self, data: Mapping[str, Any], origin: str) -> None:
        self.data = data
        self.origin = origin
        sources = data.get("sources")
        if not isinstance(sources, dict) or not sources:
            raise self.error("sources", sources, "a mapping of citation keys to public sources")
        self.sources = {str(k): str(v) for k, v in sources.items()}

    def error(self, path: str, value: object, expected: str) -> SpecError:
        return SpecError(f"{self.origin}: field {path!r}: got {brief(value)}, expected "
                         f"{expected}")

    def cite(self, path: str, source: object) -> None:
        if source is None:
            raise self.error(f"{path}.source", None,
                             f"a key of 'sources' ({', '.join(self.sources)}) citing where "
                             f"the numbers come from")
        if str(source) not in self.sources and not str(source).startswith("http"):
            raise self.error(f"{path}.source", source,
                             f"one of the keys of 'sources': {', '.join(self.sources)}")

    def quantity(self, path: str, raw: object, dimension: str, section_source: object) -> float:
        if isinstance(raw, dict):
            if "value" not in raw:
                raise self.error(path, raw, "a quantity, or {value: ..., source: ...}")
            self.cite(path, raw.get("source"))
            raw = raw["value"]
        else:
            self.cite(path.rsplit(".", 1)[0] if "." in path else path, section_source)
        try:
            return units.parse(raw, dimension, what=f"{self.origin}: field {path!r}")
        except SpecError:
            raise
        except ValueError as exc:
            raise SpecError(str(exc)) from None

    def keys(self, path: str, raw: Mapping[str, Any], allowed: frozenset[str]) -> None:
        """Refuse unknown keys inside a section, so a typo never silently drops a number."""
        unknown = sorted(set(map(str, raw)) - allowed)
        if unknown:
            raise self.error(f"{path}.{unknown[0]}", raw[unknown[0]],
                             f"one of the fields {', '.join(sorted(allowed))}"
                             + did_you_mean(unknown[0], allowed))

    def section(self, key: str, required: bool = False) -> dict[str, Any]:
        raw = self.data.get(key)
        if raw is None:
            if required:
                raise self.error(key, None, "a mapping (see specs/hardware/README.md)")
            return {}
        if not isinstance(raw, dict):
            raise self.error(key, raw, "a mapping")
        return raw

    def peaks(self, key: str, required: bool = False) -> dict[str, float]:
        raw = self.section(key, required)
        out: dict[str, float] = {}
        for name, value in raw.items():
            if name in ("source", "note", "notes"):
                continue
            if name not in dtypes.ITEMSIZE:
                raise self.error(f"{key}.{name}", value,
                                 f"a precision key: {', '.join(dtypes.ITEMSIZE)}"
                                 + did_you_mean(str(name), dtypes.ITEMSIZE))
            out[name] = self.quantity(f"{key}.{name}", value, "flop_rate", raw.get("source"))
        if required and not out:
            raise self.error(key, raw, "at least one precision's peak, e.g. bf16: 989.4 TFLOP/s")
        return out


def from_dict(data: Mapping[str, Any], origin: str = "<dict>") -> Hardware:
    """Build a Hardware from a spec mapping (already merged with any ``extends`` parent)."""
    check_shape(data, origin, SpecError)
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise SpecError(f"{origin}: unknown field {unknown[0]!r}; allowed fields: "
                        f"{', '.join(sorted(_TOP_KEYS))}" + did_you_mean(unknown[0], _TOP_KEYS))
    reader = _Reader(data, origin)
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name.lower()):
        raise reader.error("name", name, "a name of letters, digits, '.', '-' or '_'")
    capacity, bandwidth, by_threads = _memory(reader)
    links = _links(reader)
    onchip = _onchip(reader, data.get("onchip"))
    clock = _clock(reader)
    vector_matmul = _vector_matmul(reader)
    mixed = _mixed_matmul(reader)
    aliases = data.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise reader.error("aliases", aliases, "a list of names")
    matrix = reader.peaks("matrix", required=True)
    default_dtype = _default_dtype(reader, matrix)
    compute_units, device_is, die = _device(reader)
    try:
        return Hardware(
            name=name.lower(),
            memory_capacity=capacity,
            memory_bandwidth=bandwidth,
            matrix=matrix,
            matrix_sparse=reader.peaks("matrix_sparse"),
            vector=reader.peaks("vector"),
            links=links,
            onchip=onchip,
            aliases=tuple(a.lower() for a in aliases),
            vendor=str(data.get("vendor", "")),
            description=str(data.get("description", "")),
            default_dtype=default_dtype,
            default_link=None if data.get("default_link") is None
            else str(data["default_link"]).lower(),
            mesh_axes=_mesh_axes(reader, data.get("mesh_axes")),
            vector_fallback=str(data.get("vector_fallback", "fp32")),
            vector_matmul=vector_matmul,
            mixed_matmul=mixed,
            clock=clock,
            sources=reader.sources,
            origin=origin,
            provenance=_provenance(reader, data.get("provenance")),
            memory_by_threads=by_threads,
            compute_units=compute_units,
            device_is=device_is,
            die=die,
        )
    except SpecError as exc:
        if str(exc).startswith(f"{origin}: "):
            raise
        raise SpecError(f"{origin}: {exc}") from None


# -- one reader per section ------------------------------------------------------------------


def _memory(reader: _Reader) -> tuple[float, float, dict[int, float]]:
    """``memory``: (capacity in B, bandwidth in B/s, {thread count: bandwidth in B/s})."""
    memory = reader.section("memory", required=True)
    reader.keys("memory", memory, _MEMORY_KEYS)
    for key in ("capacity", "bandwidth"):
        if key not in memory:
            raise reader.error(f"memory.{key}", None, "a quantity such as '80 GB' / '3.35 TB/s'")
    by_threads: dict[int, float] = {}
    by_threads_raw = memory.get("by_threads") or {}
    if not isinstance(by_threads_raw, dict):
        raise reader.error("memory.by_threads", by_threads_raw,
                           "a mapping of thread count to bandwidth, e.g. {1: '20 GB/s'}")
    for threads, raw in by_threads_raw.items():
        count = int(threads) if isinstance(threads, str) and threads.isdigit() else threads
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise reader.error(f"memory.by_threads.{threads}", threads,
                               "a thread count (a whole number >= 1)")
        by_threads[count] = reader.quantity(f"memory.by_threads.{count}", raw, "bandwidth",
                                            memory.get("source"))
    capacity = reader.quantity("memory.capacity", memory["capacity"], "byte",
                               memory.get("source"))
    bandwidth = reader.quantity("memory.bandwidth", memory["bandwidth"], "bandwidth",
                                memory.get("source"))
    return capacity, bandwidth, by_threads


def _links(reader: _Reader) -> dict[str, Link]:
    """``links``: {name: Link}, each with its bandwidth, count and (cited) latency."""
    links: dict[str, Link] = {}
    for link_name, raw in reader.section("links").items():
        path = f"links.{link_name}"
        if not isinstance(raw, dict):
            raise reader.error(path, raw, "a mapping with bandwidth, count and source")
        reader.keys(path, raw, _LINK_KEYS)
        count = raw.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise reader.error(f"{path}.count", count, "a whole number of links >= 1")
        latency_raw = raw.get("latency", "unpublished")
        if latency_raw == "unpublished":
            latency, kind = 0.0, "unpublished"
            for key in ("latency_kind", "latency_source"):  # they qualify a figure: none here
                if raw.get(key) is not None and raw.get(key) != "unpublished":
                    raise reader.error(f"{path}.{key}", raw.get(key),
                                       f"no {key} with latency: unpublished (it describes a "
                                       f"latency figure; give one, or leave {key} out)")
        else:
            if raw.get("latency_source") is None:
                raise reader.error(f"{path}.latency_source", None, "the source of the latency "
                                   "(a key of sources: or a URL)")
            latency = reader.quantity(f"{path}.latency", latency_raw, "time",
                                      raw.get("latency_source"))
            kind = raw.get("latency_kind", "published")
            if kind not in ("published", "measured"):
                raise reader.error(f"{path}.latency_kind", kind, "'published' (a physical "
                                   "minimum a vendor or paper states) or 'measured'")
        links[str(link_name).lower()] = Link(
            name=str(link_name).lower(),
            bandwidth=reader.quantity(f"{path}.bandwidth", raw.get("bandwidth"), "bandwidth",
                                      raw.get("source")),
            count=count, note=str(raw.get("note", "")), latency=latency, latency_kind=kind,
            algorithms=_algorithms(reader, path, raw))
    return links


def _algorithms(reader: _Reader, path: str, raw: Mapping[str, Any]) -> tuple[str, ...]:
    """``links.X.algorithms``: the collective algorithms the fabric runs, cited by
    ``algorithms_source`` (default: ring, tree and one_shot, which every fabric runs)."""
    listed = raw.get("algorithms")
    if listed is None:
        return SOFTWARE_ALGORITHMS
    if not isinstance(listed, list) or not listed or not all(
            isinstance(a, str) and a in LINK_ALGORITHMS for a in listed):
        raise reader.error(f"{path}.algorithms", listed,
                           f"a list of {', '.join(LINK_ALGORITHMS)}")
    if raw.get("algorithms_source") is None:
        raise reader.error(f"{path}.algorithms_source", None, "the source of the algorithms "
                           "(a key of sources: or a URL)")
    reader.cite(f"{path}.algorithms", raw.get("algorithms_source"))
    return tuple(dict.fromkeys((*SOFTWARE_ALGORITHMS, *listed)))


def _onchip(reader: _Reader, raw: object) -> tuple[MemoryLevel, ...]:
    """``onchip``: the on-chip memory levels, each with a capacity and maybe a bandwidth."""
    onchip_raw = raw or []
    if not isinstance(onchip_raw, list):
        raise reader.error("onchip", onchip_raw, "a list of levels")
    onchip = []
    for i, level in enumerate(onchip_raw):
        path = f"onchip[{i}]"
        if not isinstance(level, dict) or "name" not in level or "capacity" not in level:
            raise reader.error(path, level, "a mapping with name, capacity and source")
        reader.keys(path, level, _LEVEL_KEYS)
        bandwidth = level.get("bandwidth")
        onchip.append(MemoryLevel(
            name=str(level["name"]),
            capacity=reader.quantity(f"{path}.capacity", level["capacity"], "byte",
                                     level.get("source")),
            bandwidth=None if bandwidth is None else reader.quantity(
                f"{path}.bandwidth", bandwidth, "bandwidth", level.get("source"))))
    return tuple(onchip)


def _clock(reader: _Reader) -> float | None:
    """``clock``: the boost clock in Hz (None when the spec gives none)."""
    clock_raw = reader.section("clock")
    if not clock_raw:
        return None
    reader.keys("clock", clock_raw, _CLOCK_KEYS)
    boost = clock_raw.get("boost", clock_raw.get("value"))
    return reader.quantity("clock.boost", boost, "frequency", clock_raw.get("source"))


def _device(reader: _Reader) -> tuple[int | None, str, str | None]:
    """``device``: compute units (SMs or CUs) of one device, whether a device is the module
    or one die, and the spec of one die."""
    raw = reader.section("device")
    if not raw:
        return None, "module", None
    reader.keys("device", raw, _DEVICE_KEYS)
    reader.cite("device", raw.get("source"))
    units_raw = raw.get("compute_units")
    if units_raw is not None and (isinstance(units_raw, bool) or not isinstance(units_raw, int)
                                  or units_raw < 1):
        raise reader.error("device.compute_units", units_raw, "a whole number >= 1")
    kind = str(raw.get("is", "module"))
    if kind not in DEVICE_KINDS:
        raise reader.error("device.is", raw.get("is"), " or ".join(DEVICE_KINDS))
    die = raw.get("die")
    if kind == "die" and (not isinstance(die, str) or not _NAME.match(die.lower())):
        raise reader.error("device.die", die, "the name of the spec of one die (device.is: "
                                              "die)")
    if kind == "module" and die is not None:
        raise reader.error("device.die", die, "nothing: a device of this chip is the module "
                                              "(device.is: module)")
    return units_raw, kind, die.lower() if isinstance(die, str) else None


def _vector_matmul(reader: _Reader) -> tuple[str, ...]:
    """``vector_matmul``: precisions whose matrix work runs at their vector peak."""
    vm_raw = reader.section("vector_matmul")
    if not vm_raw:
        return ()
    reader.keys("vector_matmul", vm_raw, _VECTOR_MATMUL_KEYS)
    reader.cite("vector_matmul", vm_raw.get("source"))
    names = vm_raw.get("precisions")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise reader.error("vector_matmul.precisions", names,
                           "a list of precisions, e.g. [fp32]")
    try:
        return tuple(dtypes.canonical(n) for n in names)
    except UnsupportedPrecisionError as exc:
        raise SpecError(f"{reader.origin}: field 'vector_matmul.precisions': {exc}") from None


def _mixed_matmul(reader: _Reader) -> dict[str, str]:
    """``mixed_matmul``: {'ACTIVATIONS x WEIGHTS': the precision whose matrix peak applies}."""
    mixed: dict[str, str] = {}
    mixed_raw = reader.section("mixed_matmul")
    if not mixed_raw:
        return mixed
    reader.keys("mixed_matmul", mixed_raw, _MIXED_KEYS)
    reader.cite("mixed_matmul", mixed_raw.get("source"))
    paths = mixed_raw.get("paths")
    if not isinstance(paths, dict) or not paths:
        raise reader.error("mixed_matmul.paths", paths,
                           "a mapping such as {'bf16 x fp8': fp8} (activations x weights: "
                           "the precision whose peak applies)")
    for pair, path in paths.items():
        parts = str(pair).split(" x ")
        try:
            if len(parts) != 2:
                raise UnsupportedPrecisionError(f"{pair!r} is not 'ACTIVATIONS x WEIGHTS'")
            key = " x ".join(dtypes.canonical(p.strip()) for p in parts)
            mixed[key] = dtypes.canonical(path)
        except UnsupportedPrecisionError as exc:
            raise SpecError(f"{reader.origin}: field 'mixed_matmul.paths': {exc}") from None
    return mixed


def _default_dtype(reader: _Reader, matrix: Mapping[str, float]) -> str:
    """``default_dtype``: bf16 unless given; a chip without a bf16 peak defaults to its first."""
    try:
        default_dtype = dtypes.canonical(reader.data.get("default_dtype", "bf16"))
    except UnsupportedPrecisionError as exc:
        raise SpecError(f"{reader.origin}: field 'default_dtype': {exc}") from None
    if "default_dtype" not in reader.data and default_dtype not in matrix:
        default_dtype = next(iter(matrix))
    return default_dtype


def _provenance(reader: _Reader, raw: object) -> dict[str, Any]:
    """``provenance``: how a calibrated spec was measured (kept as given)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise reader.error("provenance", raw, "a mapping (how a calibrated spec was measured)")
    return raw


#: A mesh axis name: what a ``jax.sharding.Mesh`` or a torch ``DeviceMesh`` names its axes;
#: ``+`` joins axes in a collective's ``axis:a+b`` link and cannot be part of one.
_AXIS = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def _mesh_axes(reader: _Reader, raw: object) -> dict[str, str]:
    """A spec's ``mesh_axes``: {axis or group name: link name}."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                            for k, v in raw.items()):
        raise reader.error("mesh_axes", raw, "a mapping of mesh axis names to link names, "
                                             "e.g. {tp: nvlink, dp: ib}")
    for axis in raw:
        if not _AXIS.fullmatch(axis):
            raise reader.error(f"mesh_axes.{axis}", axis, "an axis name (a letter or _ "
                               "first, then letters, digits, _ . -; at most 64 characters): "
                               "one axis a key, never '' or axes joined with '+'")
    return {k: v.lower() for k, v in raw.items()}

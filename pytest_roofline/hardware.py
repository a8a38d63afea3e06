"""Hardware: a frozen value object per chip, and the catalog that loads spec files.

A spec file (``specs/hardware/*.yaml``, schema in ``specs/hardware/README.md``) is parsed once:
units become floats in SI units (FLOP/s, B/s, B) and the result is cached, so later lookups
cost a dictionary access.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from . import dtypes, units
from .errors import (
    SpecError,
    UnknownHardwareError,
    UnsupportedPrecisionError,
    brief,
    did_you_mean,
)
from .specfiles import SpecIndex, builtin_dir, check_shape, is_file, is_path, load_yaml

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_TOP_KEYS = frozenset({
    "name", "aliases", "vendor", "description", "default_dtype", "sources", "memory", "matrix",
    "matrix_sparse", "vector", "links", "onchip", "clock", "notes", "extends", "vector_fallback",
    "default_link", "note", "vector_matmul", "mixed_matmul", "provenance", "mesh_axes",
})
_MIXED_KEYS = frozenset({"paths", "source", "note", "notes"})
_VECTOR_MATMUL_KEYS = frozenset({"precisions", "source", "note", "notes"})
_MEMORY_KEYS = frozenset({"capacity", "bandwidth", "by_threads", "kind", "source", "note",
                          "notes"})
#: A measurement keeping this many cores busy, or fewer, uses the roof of that thread count
#: (see :meth:`Hardware.memory_roof`): slack for threads that idle part of the time.
THREAD_SLACK = 0.1
_LINK_KEYS = frozenset({"bandwidth", "count", "source", "note", "notes", "kind", "latency",
                        "latency_source", "latency_kind"})
#: ``latency_kind`` of a link: a physical minimum its vendor or a paper states, or a figure
#: someone measured (which includes software overhead: a bound priced with it says so).
LATENCY_KINDS = ("published", "measured", "unpublished")
_LEVEL_KEYS = frozenset({"name", "capacity", "bandwidth", "source", "note", "notes", "kind"})
_CLOCK_KEYS = frozenset({"boost", "base", "value", "source", "note", "notes"})


@dataclass(frozen=True)
class Link:
    """A chip-to-chip interconnect: *bandwidth* is one direction of one link, in B/s;
    *latency* the time one step of a collective takes over it however small the message, in
    s (0 where none is published: ``latency_kind="unpublished"``)."""

    name: str
    bandwidth: float
    count: int = 1
    note: str = ""
    latency: float = 0.0
    latency_kind: str = "unpublished"

    def __post_init__(self) -> None:
        if not (self.bandwidth > 0):
            raise SpecError(f"link {self.name!r}: bandwidth must be > 0, got {self.bandwidth!r}")
        if not (isinstance(self.latency, (int, float)) and 0 <= self.latency < float("inf")):
            raise SpecError(f"link {self.name!r}: latency must be a finite time >= 0, got "
                            f"{self.latency!r}")
        if self.latency_kind not in LATENCY_KINDS:
            raise SpecError(f"link {self.name!r}: latency_kind must be one of "
                            f"{', '.join(LATENCY_KINDS)}, got {self.latency_kind!r}")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise SpecError(f"link {self.name!r}: count must be a whole number >= 1, "
                            f"got {self.count!r}")

    @property
    def total(self) -> float:
        """One-direction bandwidth of all the chip's links of this kind, in B/s."""
        return self.bandwidth * self.count


@dataclass(frozen=True)
class MemoryLevel:
    """An on-chip memory level (L2, SRAM, VMEM): capacity in B, bandwidth in B/s if published."""

    name: str
    capacity: float
    bandwidth: float | None = None


@dataclass(frozen=True, eq=False)
class Hardware:
    """One accelerator, with every figure a float in SI units.

    ``matrix`` holds the dense peaks of the matrix units per precision (FLOP/s),
    ``matrix_sparse`` the structured-sparse peaks, ``vector`` the vector-unit peaks.
    """

    name: str
    memory_bandwidth: float
    memory_capacity: float
    matrix: Mapping[str, float]
    vector: Mapping[str, float] = field(default_factory=dict)
    matrix_sparse: Mapping[str, float] = field(default_factory=dict)
    links: Mapping[str, Link] = field(default_factory=lambda: MappingProxyType({}))
    onchip: tuple[MemoryLevel, ...] = ()
    aliases: tuple[str, ...] = ()
    vendor: str = ""
    description: str = ""
    default_dtype: str = "bf16"
    default_link: str | None = None
    #: mesh axis (or process group) name -> the link it runs over: what a traced collective
    #: on that axis is priced by when the trace named no link for it (``Kernel.link`` is then
    #: ``"axis:<name>"``)
    mesh_axes: Mapping[str, str] = field(default_factory=dict)
    vector_fallback: str = "fp32"
    vector_matmul: tuple[str, ...] = ()
    mixed_matmul: Mapping[str, str] = field(default_factory=dict)
    clock: float | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    origin: str = "<python>"
    provenance: Mapping[str, Any] = field(default_factory=dict)  # how a calibration was made
    #: Measured memory bandwidth (B/s) a kernel on N threads reaches, by N (calibrations only)
    memory_by_threads: Mapping[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"hardware {self.name!r}"
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise SpecError(f"{where}: name must be lowercase letters, digits, '.', '-' or '_'")
        for attr in ("memory_bandwidth", "memory_capacity"):
            value = getattr(self, attr)
            if not isinstance(value, (int, float)) or not (value > 0) or value == float("inf"):
                raise SpecError(f"{where}: {attr} must be a finite number > 0, got {value!r}")
        if not self.matrix:
            raise SpecError(f"{where}: matrix must list at least one precision's peak")
        for table in ("matrix", "vector", "matrix_sparse"):
            peaks = getattr(self, table)
            for key, value in peaks.items():
                if key not in dtypes.ITEMSIZE:
                    raise SpecError(f"{where}: {table}.{key}: unknown precision; expected one of "
                                    f"{', '.join(dtypes.ITEMSIZE)}")
                if not isinstance(value, (int, float)) or not (value > 0):
                    raise SpecError(f"{where}: {table}.{key} must be > 0, got {value!r}")
            object.__setattr__(self, table, MappingProxyType(dict(peaks)))
        object.__setattr__(self, "links", MappingProxyType(dict(self.links)))
        if self.default_dtype not in self.matrix:
            raise SpecError(f"{where}: default_dtype {self.default_dtype!r} has no matrix peak; "
                            f"the chip lists {', '.join(self.matrix)}")
        if self.default_link is not None and self.default_link not in self.links:
            raise SpecError(f"{where}: default_link {self.default_link!r} is not one of its links "
                            f"({', '.join(self.links) or 'none'})")
        for axis, link_name in self.mesh_axes.items():
            if link_name not in self.links:
                raise SpecError(f"{where}: mesh_axes.{axis}: {link_name!r} is not one of its "
                                f"links ({', '.join(self.links) or 'none'})")
        object.__setattr__(self, "mesh_axes", MappingProxyType(dict(self.mesh_axes)))
        for name in self.vector_matmul:
            if name not in self.vector or name in self.matrix:
                raise SpecError(f"{where}: vector_matmul lists {name!r}, which needs a vector "
                                f"peak and no matrix peak of that precision")
        for pair, path in self.mixed_matmul.items():
            if path not in self.matrix:
                raise SpecError(f"{where}: mixed_matmul {pair!r} runs at {path!r}, which has no "
                                f"matrix peak; the chip lists {', '.join(self.matrix)}")
        object.__setattr__(self, "mixed_matmul", MappingProxyType(dict(self.mixed_matmul)))
        for threads, value in self.memory_by_threads.items():
            if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
                raise SpecError(f"{where}: memory.by_threads: {threads!r} is not a thread "
                                f"count (a whole number >= 1)")
            if not isinstance(value, (int, float)) or not (
                    0 < value <= self.memory_bandwidth * (1 + 1e-9)):
                raise SpecError(f"{where}: memory.by_threads.{threads} must be > 0 and at most "
                                f"memory.bandwidth ({self.memory_bandwidth:.6g} B/s), got "
                                f"{value!r}")
        object.__setattr__(self, "memory_by_threads",
                           MappingProxyType(dict(sorted(self.memory_by_threads.items()))))
        if self.vector_fallback not in ("fp32", "matrix"):
            raise SpecError(f"{where}: vector_fallback must be 'fp32' or 'matrix', "
                            f"got {self.vector_fallback!r}")

    # -- figures ------------------------------------------------------------------------------

    @property
    def bandwidth(self) -> float:
        """Off-chip memory bandwidth in B/s."""
        return self.memory_bandwidth

    def memory_roof(self, parallelism: float | None) -> tuple[int | None, float]:
        """The memory roof (thread count, B/s) of a kernel that kept *parallelism* cores busy.

        A calibrated CPU records the bandwidth 1 thread and every core reach
        (``memory.by_threads``): one core cannot reach the bandwidth of all, so a measured
        single-threaded kernel is set against the single-thread roof. The roof is that of
        the smallest calibrated thread count at or above *parallelism* (less THREAD_SLACK);
        above every count, or with no table or no parallelism, it is ``memory_bandwidth``
        (thread count None): the roof of the chip as a whole, which every analytic bound
        uses.
        """
        if parallelism is None or not self.memory_by_threads:
            return None, self.memory_bandwidth
        for threads, value in self.memory_by_threads.items():
            if parallelism <= threads + THREAD_SLACK:
                return threads, value
        return None, self.memory_bandwidth

    @property
    def capacity(self) -> float:
        """Off-chip memory capacity in B."""
        return self.memory_capacity

    @property
    def dtypes(self) -> tuple[str, ...]:
        """Precisions the matrix units have a dense peak for."""
        return tuple(self.matrix)

    def peak(self, dtype: str | None = None, unit: str = "matrix", sparse: bool = False) -> float:
        """Peak throughput in FLOP/s of *unit* ("matrix" or "vector") in *dtype*.

        Dense by default; ``sparse=True`` reads the structured-sparse peaks. A precision the
        matrix units do not have is an error, never a fallback to another precision's peak.
        int16, int32, int64 and bool work is vector work whatever *unit* says
        (:data:`pytest_roofline.dtypes.VECTOR_ONLY`).
        """
        return self.peak_key(dtype, unit, sparse)[1]

    def peak_key(self, dtype: str | None = None, unit: str = "matrix",
                 sparse: bool = False) -> tuple[str, float]:
        """``(label, FLOP/s)`` where *label* says which peak was used, e.g. ``"vector:fp32"``.

        Vector work in a precision of 8 bits or fewer (fp8, int8, fp4 programs) runs at the
        chip's 16-bit vector peak (the faster of fp16 and bf16) when one is listed: engines
        dequantize to the activation precision for norms, softmax and activations. Matrix work
        in a precision listed under ``vector_matmul`` (fp32 where the matrix units have no
        fp32 path, e.g. H100, A100) runs at that precision's vector peak, and the label says
        so (``"vector:fp32"``); TF32 is used only when asked for.
        """
        name = self.default_dtype if dtype is None else dtypes.canonical(dtype)
        if name in dtypes.VECTOR_ONLY:  # no matrix unit multiplies int16/32/64 or bool
            unit, sparse = "vector", False
        if unit == "vector":
            if name in self.vector:
                return f"vector:{name}", self.vector[name]
            if dtypes.ITEMSIZE[name] < 2:
                wide = [d for d in ("bf16", "fp16") if d in self.vector]
                if wide:
                    best = max(wide, key=lambda d: self.vector[d])  # bf16 on a tie
                    return f"vector:{best}", self.vector[best]
            if self.vector_fallback == "fp32" and "fp32" in self.vector:
                return "vector:fp32", self.vector["fp32"]
            if self.vector_fallback == "matrix" and name in self.matrix:
                return f"matrix:{name}", self.matrix[name]
            if self.vector_fallback == "matrix":  # the fallback is set: the precision is off
                listed = ", ".join(self.matrix) or "none"
                first = next(iter(self.matrix), "fp32")
                raise UnsupportedPrecisionError(
                    f"{self.name} has no {name} peak: its vector work runs on the matrix "
                    f"units (vector_fallback: matrix), which list {listed}; give the op one "
                    f"of those precisions (dtype={first!r})")
            raise UnsupportedPrecisionError(
                f"{self.name} publishes no vector-unit peak for {name} (vector peaks: "
                f"{', '.join(self.vector) or 'none'}); add one in a spec that extends "
                f"{self.name!r}, or set vector_fallback: matrix")
        if unit != "matrix":
            raise ValueError(f"unit must be 'matrix' or 'vector', got {unit!r}")
        table = self.matrix_sparse if sparse else self.matrix
        if not sparse and name not in table and name in self.vector_matmul:
            return f"vector:{name}", self.vector[name]
        if name not in table:
            kind = "sparse" if sparse else "dense"
            raise UnsupportedPrecisionError(
                f"{self.name} has no {kind} {name} peak on its matrix units; it has: "
                f"{', '.join(table) or 'none'}")
        return f"{'sparse' if sparse else 'matrix'}:{name}", table[name]

    def mixed_path(self, activations: str, weights: str) -> str | None:
        """The precision whose matrix peak a product of *activations* x *weights* runs at,
        when the spec states a mixed path for the pair (None otherwise)."""
        return self.mixed_matmul.get(f"{activations} x {weights}")

    def ridge(self, dtype: str | None = None, unit: str = "matrix", sparse: bool = False) -> float:
        """Ridge point in FLOP/B: peak FLOP/s over memory bandwidth (2 FLOPs per MAC)."""
        return self.peak(dtype, unit, sparse) / self.memory_bandwidth

    def link(self, name: str | None = None) -> Link:
        """The named link (case-insensitive), or the default link when *name* is None."""
        if not self.links:
            raise UnknownHardwareError(f"{self.name} has no chip-to-chip links in its spec; "
                                       f"network work cannot be priced on it")
        if name is None:
            return self.links[self.default_link or next(iter(self.links))]
        if name.startswith("axis:"):
            return self._axis_link(name[5:])
        key = name.lower()
        if key not in self.links:
            raise UnknownHardwareError(
                f"{self.name} has no link {name!r}; its links are {', '.join(self.links)}"
                + did_you_mean(key, self.links))
        return self.links[key]

    def _axis_link(self, axes: str) -> Link:
        """The link of mesh axes ``a`` or ``a+b`` (``mesh_axes``; unmapped: the default link).
        Axes mapped to different links: the fastest, so the bound stays a bound."""
        found = [self.links[self.mesh_axes[a]] for a in axes.split("+") if a in self.mesh_axes]
        if not found:
            return self.link(None)
        return max(found, key=lambda link: link.total)

    def link_bandwidth(self, name: str | None = None, count: int | None = None) -> float:
        """One-direction bandwidth in B/s over *count* links (all of them when None)."""
        link = self.link(name)
        if count is None:
            return link.total
        if count < 1 or count > link.count:
            raise UnknownHardwareError(
                f"{self.name} has {link.count} {link.name} links, cannot use {count}")
        return link.bandwidth * count

    def replace(self, **changes: Any) -> Hardware:
        """A copy with some fields changed (validated like any other)."""
        from dataclasses import replace

        return replace(self, **changes)

    def summary(self) -> dict[str, Any]:
        """Plain data for reports and the command line."""
        return {
            "name": self.name, "aliases": list(self.aliases), "vendor": self.vendor,
            "description": self.description, "default_dtype": self.default_dtype,
            "memory_bandwidth_Bps": self.memory_bandwidth,
            "memory_capacity_B": self.memory_capacity,
            "matrix_flops": dict(self.matrix), "matrix_sparse_flops": dict(self.matrix_sparse),
            "vector_flops": dict(self.vector), "vector_matmul": list(self.vector_matmul),
            "mixed_matmul": dict(self.mixed_matmul),
            "ridge_flop_per_byte": {d: self.ridge(d) for d in (*self.matrix,
                                                               *self.vector_matmul)},
            "mesh_axes": dict(self.mesh_axes),
            "links": {n: {"bandwidth_Bps": lk.bandwidth, "count": lk.count, "note": lk.note,
                          "latency_s": lk.latency, "latency_kind": lk.latency_kind}
                      for n, lk in self.links.items()},
            "onchip": [{"name": lv.name, "capacity_B": lv.capacity, "bandwidth_Bps": lv.bandwidth}
                       for lv in self.onchip],
            **({"memory_by_threads_Bps": {str(k): v for k, v in self.memory_by_threads.items()}}
               if self.memory_by_threads else {}),
            "sources": dict(self.sources), "origin": self.origin,
            **({"provenance": dict(self.provenance)} if self.provenance else {}),
        }


# -- spec parsing ----------------------------------------------------------------------------


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
            count=count, note=str(raw.get("note", "")), latency=latency, latency_kind=kind)
    onchip_raw = data.get("onchip") or []
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
    clock_raw = reader.section("clock")
    clock = None
    if clock_raw:
        reader.keys("clock", clock_raw, _CLOCK_KEYS)
        boost = clock_raw.get("boost", clock_raw.get("value"))
        clock = reader.quantity("clock.boost", boost, "frequency", clock_raw.get("source"))
    vector_matmul: tuple[str, ...] = ()
    vm_raw = reader.section("vector_matmul")
    if vm_raw:
        reader.keys("vector_matmul", vm_raw, _VECTOR_MATMUL_KEYS)
        reader.cite("vector_matmul", vm_raw.get("source"))
        names = vm_raw.get("precisions")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise reader.error("vector_matmul.precisions", names,
                               "a list of precisions, e.g. [fp32]")
        try:
            vector_matmul = tuple(dtypes.canonical(n) for n in names)
        except UnsupportedPrecisionError as exc:
            raise SpecError(f"{origin}: field 'vector_matmul.precisions': {exc}") from None
    mixed: dict[str, str] = {}
    mixed_raw = reader.section("mixed_matmul")
    if mixed_raw:
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
                raise SpecError(f"{origin}: field 'mixed_matmul.paths': {exc}") from None
    aliases = data.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise reader.error("aliases", aliases, "a list of names")
    default_dtype = data.get("default_dtype", "bf16")
    matrix = reader.peaks("matrix", required=True)
    try:
        default_dtype = dtypes.canonical(default_dtype)
    except UnsupportedPrecisionError as exc:
        raise SpecError(f"{origin}: field 'default_dtype': {exc}") from None
    if "default_dtype" not in data and default_dtype not in matrix:
        default_dtype = next(iter(matrix))
    try:
        return Hardware(
            name=name.lower(),
            memory_capacity=reader.quantity("memory.capacity", memory["capacity"], "byte",
                                            memory.get("source")),
            memory_bandwidth=reader.quantity("memory.bandwidth", memory["bandwidth"],
                                             "bandwidth", memory.get("source")),
            matrix=matrix,
            matrix_sparse=reader.peaks("matrix_sparse"),
            vector=reader.peaks("vector"),
            links=links,
            onchip=tuple(onchip),
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
        )
    except SpecError as exc:
        if str(exc).startswith(f"{origin}: "):
            raise
        raise SpecError(f"{origin}: {exc}") from None


def _provenance(reader: _Reader, raw: object) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise reader.error("provenance", raw, "a mapping (how a calibrated spec was measured)")
    return raw


def _merge(parent: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(parent)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


# -- the catalog -----------------------------------------------------------------------------

#: Chips whose spec is made on demand, not read from a file: a name pattern (a regular
#: expression matched against the whole lower-case name) -> a function taking the name and
#: returning a Hardware (or None). Filled by the modules that make such chips, when they are
#: imported (:func:`register_resolver`): the engine imports none of them.
#: ``pytest_roofline.measuring`` registers the calibrations of this machine (``host``,
#: ``cuda:N``, measured on first use); the package, its plugin and its CLI import it.
RESOLVERS: dict[str, Callable[[str], Hardware | None]] = {}


def register_resolver(pattern: str, resolve: Callable[[str], Hardware | None]) -> None:
    """Make the names matching *pattern* (a regular expression, matched against the whole
    lower-case name) chips made on demand by *resolve*."""
    re.compile(pattern)  # a bad pattern fails here, not at the first lookup
    RESOLVERS[pattern] = resolve


#: Where the check lives that a time measured on this machine may be set against a chip
#: (``module:function``, returning the reason it may not, or None); imported when a
#: measurement taken here is first analyzed.
MEASURABLE = "pytest_roofline.measuring.here:foreign"


def foreign_to_this_machine(chip: Hardware) -> str | None:
    """Why a call timed on this machine cannot be set against *chip* (None: it can)."""
    import importlib

    module, _, attr = MEASURABLE.partition(":")
    reason: str | None = getattr(importlib.import_module(module), attr)(chip)
    return reason


def is_dynamic(name: str) -> bool:
    """Whether *name* is one the catalog makes on demand (a calibration such as ``host``)."""
    return any(re.fullmatch(p, name.lower()) for p in RESOLVERS)


def _dynamic(name: str) -> Hardware | None:
    for pattern, resolve in RESOLVERS.items():
        if not re.fullmatch(pattern, name):
            continue
        chip = resolve(name)
        if chip is not None:
            return chip
    return None


def builtin_spec_dir() -> Path:
    """The folder of the built-in hardware specs (inside the installed package)."""
    return builtin_dir("hardware")


class Catalog(SpecIndex):
    """Chips by name and alias: the built-in specs, plus user files and registered objects.

    Raw YAML is read once to learn names; units are parsed only for chips actually used.
    """

    KIND, WHAT, NOUN = "hardware", "spec file", "chip"
    LOOKUP_ERROR = UnknownHardwareError

    def __init__(self) -> None:
        super().__init__()
        self._built: dict[str, Hardware] = {}
        self._by_path: dict[str, Hardware] = {}  # chips read from files named by path

    def _forget(self, key: str) -> None:
        self._built.pop(key, None)

    def register(self, spec: Hardware | Mapping[str, Any] | str | os.PathLike[str]) -> Hardware:
        """Add a chip (a Hardware, a spec mapping or a spec file); later names win."""
        self._scan()
        if isinstance(spec, Hardware):
            self._add_object(spec.name, spec.aliases, spec.origin)
            self._built[spec.name] = spec
            return spec
        if isinstance(spec, Mapping):
            key = self._add_raw(dict(spec), "<registered>")
        else:
            path = Path(self.name_text(spec))
            key = self._add_raw(load_yaml(path), str(path))
        return self.get(key)

    def register_path(self, path: str | os.PathLike[str]) -> list[Hardware]:
        """Register a spec file, or every ``*.yaml``/``*.yml`` file of a folder."""
        folder = Path(self.name_text(path))
        if not is_file(folder) and _is_dir(folder):
            files = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
            return [self.register(f) for f in files]
        if not is_file(folder):
            raise SpecError(f"{folder}: no such spec file or folder")
        return [self.register(folder)]

    def _resolve(self, key: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        data, origin = self._raw[key]
        return self._extend(data, origin, (*seen, key))

    def _extend(self, data: dict[str, Any], origin: str,
                seen: tuple[str, ...]) -> dict[str, Any]:
        """*data* merged over the spec it ``extends`` (*seen*: the specs being resolved)."""
        parent = data.get("extends")
        if parent is None:
            return data
        if not isinstance(parent, str):
            raise SpecError(f"{origin}: field 'extends': got {brief(parent)}, expected the name "
                            f"of the chip it extends")
        parent_key = self._alias.get(str(parent).lower())
        if parent_key is None:
            raise SpecError(f"{origin}: field 'extends': unknown chip {parent!r}."
                            + did_you_mean(str(parent), self._alias))
        if parent_key in seen:
            raise SpecError(f"{origin}: field 'extends': {parent!r} extends itself in a loop")
        if not self._raw[parent_key][0]:  # a registered Hardware object: no raw data
            raise SpecError(f"{origin}: field 'extends': {parent!r} was registered as an object "
                            f"and cannot be extended; extend a spec file instead")
        base = self._resolve(parent_key, seen)
        merged = _merge(base, {k: v for k, v in data.items() if k != "extends"})
        if "aliases" not in data:
            merged["aliases"] = []
        return merged

    def get(self, name: str | os.PathLike[str] | Hardware) -> Hardware:
        if isinstance(name, Hardware):
            return name
        text = name if type(name) is str else self.name_text(name)
        key = self._alias.get(text.lower()) if self._scanned else None
        if key is not None and key in self._built:
            return self._built[key]
        if is_path(text):
            return self._from_file(Path(text))
        self._scan()
        key = self._alias.get(text.lower())
        if key is None:
            made = _dynamic(text.lower())
            if made is not None:
                self.register(made)
                for alias in (text.lower(), *made.aliases):
                    self._alias.setdefault(alias, made.name)
                return made
            raise UnknownHardwareError(f"unknown hardware {text!r}." + self.suggest(text))
        if key not in self._built:
            self._built[key] = from_dict(self._resolve(key), self._raw[key][1])
        return self._built[key]

    def suggest(self, text: str) -> str:
        """Close names when there are some; every chip only when nothing is close."""
        close = did_you_mean(text, self._alias)
        if close:
            return close + " A spec file path also works."
        return f" Known chips: {', '.join(self.names())}. A spec file path also works."

    def _from_file(self, path: Path) -> Hardware:
        """A chip read from a spec file named by path. It is known by that path only: its name
        is not registered, so whether a name is known never depends on which test happened to
        load a file first (register_path / --roofline-specs make a file's names known)."""
        if not is_file(path):
            raise UnknownHardwareError(f"hardware spec file {brief(str(path), 200)} does not "
                                       f"exist")
        where = str(path.resolve())
        chip = self._by_path.get(where)
        if chip is None:
            self._scan()
            data = load_yaml(path)
            chip = self._by_path[where] = from_dict(self._extend(data, str(path), ()), str(path))
        return chip

    def __iter__(self) -> Iterator[Hardware]:
        return (self.get(n) for n in self.names())


CATALOG = Catalog()


def get_hardware(name_or_path: str | os.PathLike[str] | Hardware) -> Hardware:
    """A chip by name or alias (case-insensitive), or from a spec file path."""
    return CATALOG.get(name_or_path)


def list_hardware() -> list[str]:
    """Canonical names of every known chip, sorted."""
    return CATALOG.names()


def register_hardware(spec: Hardware | Mapping[str, Any] | str | os.PathLike[str]) -> Hardware:
    """Make a chip known by name: a Hardware object, a spec mapping, or a spec file path."""
    return CATALOG.register(spec)


def _mesh_axes(reader: _Reader, raw: object) -> dict[str, str]:
    """A spec's ``mesh_axes``: {axis or group name: link name}."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                            for k, v in raw.items()):
        raise reader.error("mesh_axes", raw, "a mapping of mesh axis names to link names, "
                                             "e.g. {tp: nvlink, dp: ib}")
    return {k: v.lower() for k, v in raw.items()}

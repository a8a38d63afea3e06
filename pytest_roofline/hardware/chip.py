"""A chip as values: its links, its on-chip memory levels and the Hardware object itself.

Every figure is a float in SI units (FLOP/s, B/s, B, s), parsed once from a spec
(:mod:`.schema`) or given from Python; each object checks itself when it is made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .. import dtypes
from ..errors import SpecError, UnknownHardwareError, UnsupportedPrecisionError, did_you_mean

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
#: A measurement keeping this many cores busy, or fewer, uses the roof of that thread count
#: (see :meth:`Hardware.memory_roof`): slack for threads that idle part of the time.
THREAD_SLACK = 0.1
#: What one device in a profiler trace (and to the driver) is: the whole module, or one of
#: its dies (an MI250X's two GCDs are two devices)
DEVICE_KINDS = ("module", "die")
#: Collective algorithms any fabric runs (software on the chips), those a fabric's switches
#: run (NVLink SHARP, InfiniBand SHARP: the switch adds), and every one a spec may list: the
#: one list of algorithm names, which ``ops`` prices and the analysis looks up links by.
SOFTWARE_ALGORITHMS = ("ring", "tree", "one_shot")
IN_NETWORK_ALGORITHMS = ("nvls", "sharp")
LINK_ALGORITHMS = (*SOFTWARE_ALGORITHMS, *IN_NETWORK_ALGORITHMS)

#: ``latency_kind`` of a link: a physical minimum its vendor or a paper states, or a figure
#: someone measured (which includes software overhead: a bound priced with it says so).
LATENCY_KINDS = ("published", "measured", "unpublished")


@dataclass(frozen=True)
class Link:
    """A chip-to-chip interconnect: *bandwidth* is one direction of one link, in B/s;
    *latency* the time one step of a collective takes over it however small the message, in
    s (0 where none is published: ``latency_kind="unpublished"``); *algorithms* the
    collective algorithms the fabric runs (every fabric runs ``ring``, ``tree`` and
    ``one_shot``; ``nvls``, NVLink SHARP, and ``sharp``, InfiniBand SHARP, reduce in the
    switch and only where the spec lists them)."""

    name: str
    bandwidth: float
    count: int = 1
    note: str = ""
    latency: float = 0.0
    latency_kind: str = "unpublished"
    algorithms: tuple[str, ...] = SOFTWARE_ALGORITHMS

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
        if type(self.algorithms) is not tuple or not set(self.algorithms) <= set(
                LINK_ALGORITHMS):
            raise SpecError(f"link {self.name!r}: algorithms must be a list of "
                            f"{', '.join(LINK_ALGORITHMS)}, got {self.algorithms!r}")

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
    #: What software sees as one device of this chip: SMs (NVIDIA) or CUs (AMD) on it, and
    #: whether it is the whole module or one of its dies (then ``die`` names the die's spec)
    compute_units: int | None = None
    device_is: str = "module"
    die: str | None = None
    #: The peaks :meth:`peak_key` has answered, by its arguments (a copy starts empty)
    _peaks: dict[tuple[object, str, bool], tuple[str, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = f"hardware {self.name!r}"
        if self.device_is not in DEVICE_KINDS:
            raise SpecError(f"{where}: device.is must be one of {', '.join(DEVICE_KINDS)}, got "
                            f"{self.device_is!r}")
        if (self.device_is == "die") != (self.die is not None):
            raise SpecError(f"{where}: device.die names the spec of one die, and is given "
                            f"exactly when device.is is 'die' (got is={self.device_is!r}, "
                            f"die={self.die!r})")
        if self.compute_units is not None and (
                isinstance(self.compute_units, bool) or not isinstance(self.compute_units, int)
                or self.compute_units < 1):
            raise SpecError(f"{where}: device.compute_units must be a whole number >= 1, got "
                            f"{self.compute_units!r}")
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
        """``(label, FLOP/s)`` where *label* says which peak was used, e.g. ``"vector:fp32"``
        (see :meth:`_find_peak`). A chip is frozen, so each answer is kept: the analysis
        asks for the same few peaks at every call."""
        key = (dtype, unit, sparse)
        try:
            return self._peaks[key]
        except (KeyError, TypeError):  # not asked yet, or an argument no dict can key
            found = self._find_peak(dtype, unit, sparse)
        if type(dtype) is str or dtype is None:
            self._peaks[key] = found
        return found

    def _find_peak(self, dtype: str | None, unit: str, sparse: bool) -> tuple[str, float]:
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
                f"link_count={count!r:.20} is not allowed on {self.name}: it has "
                f"{link.count} {link.name} links; expected 1 to {link.count}")
        return link.bandwidth * count

    def replace(self, **changes: Any) -> Hardware:
        """A copy with some fields changed (validated like any other)."""
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
                          "latency_s": lk.latency, "latency_kind": lk.latency_kind,
                          "algorithms": list(lk.algorithms)}
                      for n, lk in self.links.items()},
            "onchip": [{"name": lv.name, "capacity_B": lv.capacity, "bandwidth_Bps": lv.bandwidth}
                       for lv in self.onchip],
            **({"memory_by_threads_Bps": {str(k): v for k, v in self.memory_by_threads.items()}}
               if self.memory_by_threads else {}),
            **({"device": {"compute_units": self.compute_units, "is": self.device_is,
                           **({"die": self.die} if self.die else {})}}
               if self.compute_units is not None or self.die else {}),
            "sources": dict(self.sources), "origin": self.origin,
            **({"provenance": dict(self.provenance)} if self.provenance else {}),
        }

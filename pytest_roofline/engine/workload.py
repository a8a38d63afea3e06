"""Workloads: what a program asks of a chip, as kernels of FLOPs and bytes.

A :class:`Kernel` is one operation bounded on its own: the FLOPs it performs (counting a
multiply-accumulate as 2 FLOPs), the bytes it moves to and from off-chip memory, the bytes it
sends over a chip-to-chip link, the unit it runs on (``"matrix"`` or ``"vector"``), its
precision, and how many times it runs. A kernel may also say which of its bytes are its
output (``out_bytes``, what an epilogue fused into it would read), which tensors it receives
from or hands to neighbouring kernels (``handoff_in``, the sizes of the handed tensors it
reads; ``handoff_out``, its handed output; ``handoff_pieces``, how many independent pieces,
the images of a batch, they split into: what an on-chip memory may keep), whether it runs in
another kernel's epilogue (``epilogue_of``: that kernel's name), and, for a product of two
precisions, which (``operands``: activations, weights; a chip may state a mixed path),
and, for a collective, how many steps it takes one after another (``link_steps``: each waits
the link's latency) and the algorithms it may run only on a fabric that offers them
(``link_options``: (algorithm, link bytes, steps, bytes) per run, such as NVLink SHARP's
in-switch reduction; the kernel's own figures hold on any fabric, and
:meth:`Kernel.on_link` takes the lower envelope over the options a link lists);
:mod:`pytest_roofline.engine.fusion` documents the rules. A :class:`Workload` is a program of
kernels plus the memory footprint it needs resident (for the capacity check), and the ops it
ran that no formula counts (``unknown``: op name -> calls; their bytes are in the kernels,
their FLOPs are not known, never taken as 0 without a word).

Quantities may be numpy arrays of one shape (a sweep over batch sizes); analysis then returns
arrays of the same shape.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Union

from .. import dtypes, units
from ..errors import WorkloadError, brief

if TYPE_CHECKING:
    import numpy as np

    Number = Union[float, "np.ndarray[Any, Any]"]  # noqa: UP007 - a runtime alias on 3.10
else:
    Number = Any

UNITS = ("matrix", "vector")
_INF = float("inf")
#: The fusion model's numeric fields of a kernel and their dimensions.
_NUMERIC = (("out_bytes", "byte"), ("handoff_out", "byte"), ("handoff_pieces", "flop"))


def is_array(value: object) -> bool:
    """True for numpy arrays (checked without importing numpy)."""
    kind = type(value)
    if kind is float or kind is int or kind is str or value is None:  # the figures, mostly
        return False
    return kind.__module__ == "numpy" and hasattr(value, "shape") and bool(
        getattr(value, "ndim", 0))


def _quantity(value: object, dimension: str, what: str) -> Number:
    if is_array(value):
        import numpy as np

        array = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(array)) or np.any(array < 0):
            raise WorkloadError(f"{what}: every element must be a finite number >= 0")
        return array
    if type(value) is float or type(value) is int:
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not (0 <= number < math.inf):
            raise WorkloadError(f"{what}: {brief(value)} is not allowed, it must be a finite "
                                f"number >= 0")
        return number
    try:
        return units.parse(value, dimension, what=what, allow_zero=True)
    except (ValueError, OverflowError) as exc:
        raise WorkloadError(str(exc)) from None


def _least(a: Number, b: Number) -> Number:
    if is_array(a) or is_array(b):
        import numpy as np

        return np.minimum(a, b)
    return min(a, b)


def _options(options: object, what: str) -> tuple[tuple[str, Number, Number, Number], ...]:
    """Checked ``link_options``: (algorithm name, link bytes, steps, bytes) tuples."""
    if type(options) is not tuple or not all(
            type(o) is tuple and len(o) == 4 and isinstance(o[0], str) for o in options):
        raise WorkloadError(f"{what}: link_options must be a tuple of (algorithm, link bytes, "
                            f"steps, bytes) tuples, got {brief(options)}")
    return tuple((name, _quantity(link, "byte", f"{what}: link_options {name} link bytes"),
                  _quantity(steps, "flop", f"{what}: link_options {name} steps"),
                  _quantity(nbytes, "byte", f"{what}: link_options {name} bytes"))
                 for name, link, steps, nbytes in options)


def _finite(value: Number) -> bool:
    if type(value) is float:
        return value < math.inf
    if is_array(value):
        import numpy as np

        return bool(np.all(np.isfinite(value)))
    return bool(value < math.inf)


#: What :meth:`Kernel.evolve` checks by type alone: the fields the fusion model changes.
_EVOLVE: dict[str, type] = {"bytes": float, "handoff_out": float, "handoff_pieces": float,
                            "handoff_in": tuple, "name": str, "epilogue_of": str}


@dataclass(frozen=True)
class Kernel:
    """One operation, bounded on its own by compute, memory bandwidth or a link."""

    name: str
    flops: Number
    bytes: Number
    _: KW_ONLY  # the rest by name: a run of a dozen positional figures reads as none
    link_bytes: Number = 0.0
    unit: str = "matrix"
    dtype: str | None = None
    link: str | None = None
    link_count: int | None = None
    count: Number = 1.0
    out_bytes: Number = 0.0
    handoff_in: tuple[Number, ...] = ()
    handoff_out: Number = 0.0
    handoff_pieces: Number = 1.0
    epilogue_of: str | None = None
    operands: tuple[str, ...] = ()
    link_steps: Number = 0.0
    link_options: tuple[tuple[str, Number, Number, Number], ...] = ()

    def __post_init__(self) -> None:
        name = self.name
        what = f"kernel {name!r}" if type(name) is str and len(name) <= 80 else (
            f"kernel {brief(name)}")
        set_ = object.__setattr__
        set_(self, "flops", _quantity(self.flops, "flop", f"{what}: flops"))
        set_(self, "bytes", _quantity(self.bytes, "byte", f"{what}: bytes"))
        set_(self, "link_bytes", _quantity(self.link_bytes, "byte", f"{what}: link_bytes"))
        set_(self, "count", _quantity(self.count, "flop", f"{what}: count"))
        if type(self.link_steps) is not float or not (0.0 <= self.link_steps < _INF):
            set_(self, "link_steps", _quantity(self.link_steps, "flop", f"{what}: link_steps"))
        if self.link_options:
            set_(self, "link_options", _options(self.link_options, what))
        if self.link is not None and not isinstance(self.link, str):
            raise WorkloadError(f"{what}: link must be a link name such as 'nvlink', or None, "
                                f"got {brief(self.link)}")
        if not isinstance(self.unit, str) or self.unit not in UNITS:
            raise WorkloadError(f"{what}: unit must be 'matrix' or 'vector', got "
                                f"{brief(self.unit)}")
        for attr, dim in _NUMERIC:  # the fusion model's figures (plain floats: no parsing)
            value = getattr(self, attr)
            if type(value) is not float or not (0.0 <= value < _INF):
                set_(self, attr, _quantity(value, dim, f"{what}: {attr}"))
        handed = self.handoff_in
        if type(handed) is not tuple:
            raise WorkloadError(f"{what}: handoff_in must be a tuple of tensor sizes in bytes, "
                                f"got {brief(handed)}")
        if handed:
            set_(self, "handoff_in", tuple(_quantity(v, "byte", f"{what}: handoff_in")
                                           for v in handed))
        if self.epilogue_of is not None and not isinstance(self.epilogue_of, str):
            raise WorkloadError(f"{what}: epilogue_of must be the name of the kernel it runs "
                                f"in, or None, got {brief(self.epilogue_of)}")
        if self.operands:
            if type(self.operands) is not tuple or len(self.operands) != 2:
                raise WorkloadError(f"{what}: operands must be a pair of precisions "
                                    f"(activations, weights), got {brief(self.operands)}")
            try:
                set_(self, "operands", tuple(dtypes.canonical(o) for o in self.operands))
            except LookupError as exc:
                raise WorkloadError(f"{what}: operands: {exc}") from None
        if self.dtype is not None:
            try:
                set_(self, "dtype", dtypes.canonical(self.dtype))
            except LookupError as exc:
                raise WorkloadError(f"{what}: dtype: {exc}") from None
            if self.unit == "matrix" and self.dtype in dtypes.VECTOR_ONLY:
                set_(self, "unit", "vector")  # no matrix unit multiplies int32, bool ...
        # each part is finite and >= 0, so the one sum is finite exactly when no total overflows
        try:
            total = (self.flops + self.bytes + self.link_bytes) * self.count
        except ValueError:  # numpy: sweeps of shapes that do not broadcast
            raise WorkloadError(f"{what}: flops, bytes, link_bytes and count are sweeps of "
                                f"shapes that do not broadcast together") from None
        if not _finite(total):
            raise WorkloadError(f"{what}: {brief(self.count)} runs of {brief(self.flops)} "
                                f"FLOPs and {brief(self.bytes)} B overflow a float; sizes this "
                                f"large describe no real program")
        if self.link_count is not None and (
                isinstance(self.link_count, bool) or not isinstance(self.link_count, int)
                or self.link_count < 1):
            raise WorkloadError(f"{what}: link_count must be a whole number >= 1 or None, "
                                f"got {brief(self.link_count)}")

    def on_link(self, algorithms: Iterable[str]) -> Kernel:
        """This kernel on a link that runs *algorithms*: its link bytes, steps and memory
        bytes are the least of its own and those of each option the link offers (a lower
        envelope: whichever the library picks takes at least that). Unchanged without
        options."""
        offered = [o for o in self.link_options if o[0] in algorithms]
        if not offered:
            return self
        link_bytes, steps, nbytes = self.link_bytes, self.link_steps, self.bytes
        for _, option_link, option_steps, option_bytes in offered:
            link_bytes = _least(link_bytes, option_link)
            steps = _least(steps, option_steps)
            nbytes = _least(nbytes, option_bytes)
        return replace(self, link_bytes=link_bytes, link_steps=steps, bytes=nbytes,
                       link_options=())

    @property
    def total_flops(self) -> Number:
        return self.flops * self.count

    @property
    def total_bytes(self) -> Number:
        return self.bytes * self.count

    @property
    def total_link_bytes(self) -> Number:
        return self.link_bytes * self.count

    def scaled(self, factor: Number) -> Kernel:
        """The same kernel run *factor* times as often."""
        return replace(self, count=self.count * factor)

    def evolve(self, **changes: Any) -> Kernel:
        """A copy with *changes*, checked. The fusion model's changes (a plain float >= 0 for
        ``bytes``, ``handoff_out`` or ``handoff_pieces``, a tuple of them for ``handoff_in``,
        a text for ``name`` or ``epilogue_of``) are checked here at the cost of a type test;
        any other change goes through the constructor's checks (``dataclasses.replace``)."""
        for key, value in changes.items():
            kind = _EVOLVE.get(key)
            if kind is float:
                if type(value) is not float or not (0.0 <= value < _INF):
                    break
            elif kind is tuple:
                if type(value) is not tuple or not all(
                        type(v) is float and 0.0 <= v < _INF for v in value):
                    break
            elif kind is str:
                if not (type(value) is str or (value is None and key == "epilogue_of")):
                    break
            else:
                break
        else:
            new = object.__new__(Kernel)
            new.__dict__.update(self.__dict__)
            new.__dict__.update(changes)
            if _finite((new.flops + new.bytes + new.link_bytes) * new.count):
                return new
        return replace(self, **changes)


@dataclass(frozen=True)
class Knob:
    """A size parameter of the workload and how to rebuild the workload at another value.

    Verdict messages use it to say which value moves the workload across the ridge
    ("compute-bound from m >= 319").
    """

    name: str
    value: int
    build: Callable[[int], Workload]
    lo: int = 1
    hi: int = 1 << 24


class Workload:
    """A program of kernels plus its resident memory footprint.

    ``Workload(flops=..., bytes=...)`` builds a one-kernel workload directly (numbers in FLOP
    and B, or strings with units such as ``"4 GB"``). Workloads compose: ``a + b`` runs both
    programs (footprints add: both stay resident), ``n * w`` runs *w* n times (the footprint is
    needed once).

    ``hint`` says which setting shrinks the footprint (a training step names its ZeRO,
    data-parallel or recomputation knob); verdicts quote it when the footprint does not fit.

    ``unknown`` maps the name of each op the program ran without a formula for its FLOPs (a
    traced custom op, a ``custom_call``) to how many calls of it the kernels hold: those
    kernels carry the op's bytes and no FLOPs, so the bound is not a lower bound on its
    compute. Composition adds the counts (``n * w`` keeps them: the names matter).

    ``assumed`` names, the same way, each value a trace could not read and assumed (a
    ``.item()`` of a meta tensor, a ``torch.cond`` predicate on meta, a loop's trip count
    known only at run time) with what was assumed, and how many times.
    """

    __slots__ = ("assumed", "footprint", "hint", "kernels", "knob", "name", "unknown")
    kernels: tuple[Kernel, ...]
    footprint: Number
    name: str
    knob: Knob | None
    hint: str
    unknown: Mapping[str, int]
    assumed: Mapping[str, int]

    def __init__(
        self,
        kernels: Iterable[Kernel] = (),
        *,
        flops: object = None,
        bytes: object = None,
        link_bytes: object = None,
        unit: str = "matrix",
        dtype: str | None = None,
        link: str | None = None,
        footprint: object = 0.0,
        name: str = "workload",
        knob: Knob | None = None,
        hint: str = "",
        unknown: Mapping[str, int] | None = None,
        assumed: Mapping[str, int] | None = None,
    ) -> None:
        if not isinstance(name, str):
            raise WorkloadError(f"a workload's name must be a string, got {brief(name)}")
        try:
            kernel_list = list(kernels)
        except TypeError:
            raise WorkloadError(f"workload {name!r}: kernels must be a list of Kernel objects "
                                f"(or give flops= and bytes=), got {brief(kernels)}") from None
        if flops is not None or bytes is not None or link_bytes is not None:
            raw: dict[str, Any] = {
                "flops": 0.0 if flops is None else flops,
                "bytes": 0.0 if bytes is None else bytes,
                "link_bytes": 0.0 if link_bytes is None else link_bytes,
            }
            kernel_list.append(Kernel(name, unit=unit, dtype=dtype, link=link, **raw))
        if not kernel_list:
            raise WorkloadError(f"workload {name!r} is empty: give kernels, or flops= and "
                                f"bytes= (numbers or strings such as '4 GB')")
        for kernel in kernel_list:
            if not isinstance(kernel, Kernel):
                raise WorkloadError(f"workload {name!r}: expected Kernel objects, got "
                                    f"{type(kernel).__name__}")
        set_ = object.__setattr__
        set_(self, "kernels", tuple(kernel_list))
        set_(self, "footprint", _quantity(footprint, "byte", f"workload {name!r}: footprint"))
        set_(self, "name", name)
        set_(self, "knob", knob)
        if not isinstance(hint, str):
            raise WorkloadError(f"workload {name!r}: hint must be a string, got {brief(hint)}")
        set_(self, "hint", hint)
        set_(self, "unknown", _unknown(unknown, name))
        set_(self, "assumed", _unknown(assumed, name, "assumed"))

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"Workload is immutable; cannot set {key!r}")

    def __repr__(self) -> str:
        return (f"Workload({self.name!r}, kernels={len(self.kernels)}, "
                f"flops={self.flops!r}, bytes={self.bytes!r})")

    # -- totals --------------------------------------------------------------------------------

    @property
    def flops(self) -> Number:
        return add_up(k.total_flops for k in self.kernels)

    @property
    def bytes(self) -> Number:
        return add_up(k.total_bytes for k in self.kernels)

    @property
    def link_bytes(self) -> Number:
        return add_up(k.total_link_bytes for k in self.kernels)

    @property
    def intensity(self) -> Number:
        """Total FLOPs over total memory bytes, in FLOP/B (2 FLOPs per MAC); see
        :func:`intensity` for zero bytes."""
        return intensity(self.flops, self.bytes, self.name)

    # -- composition ---------------------------------------------------------------------------

    def __add__(self, other: object) -> Workload:
        if not isinstance(other, Workload):
            return NotImplemented
        return Workload((*self.kernels, *other.kernels),
                        footprint=add_up((self.footprint, other.footprint)),
                        name=f"{self.name} + {other.name}",
                        unknown=merge_unknown((self.unknown, other.unknown)),
                        assumed=merge_unknown((self.assumed, other.assumed)))

    def __mul__(self, factor: object) -> Workload:
        if isinstance(factor, bool) or not (isinstance(factor, (int, float)) or is_array(factor)):
            return NotImplemented
        return self.repeat(factor)  # type: ignore[arg-type]

    __rmul__ = __mul__

    def repeat(self, times: Number) -> Workload:
        """The program run *times* times; the footprint is needed once."""
        if is_array(times):
            times = _quantity(times, "flop", f"workload {self.name!r}: repeat")
        else:
            try:
                times = float(times) if isinstance(times, numbers.Real) and not isinstance(
                    times, bool) else math.nan
            except OverflowError:
                times = math.inf
            if not 0 <= times < math.inf:
                raise WorkloadError(f"workload {self.name!r}: cannot repeat {brief(times)} "
                                    f"times; give a finite number >= 0")
        return Workload([k.scaled(times) for k in self.kernels], footprint=self.footprint,
                        name=self.name, unknown=self.unknown, assumed=self.assumed)

    def with_(self, *, name: str | None = None, footprint: object = None,
              knob: Knob | None = None, hint: str | None = None) -> Workload:
        """A copy with a new name, footprint, knob or hint."""
        return Workload(self.kernels, footprint=self.footprint if footprint is None else footprint,
                        name=self.name if name is None else name,
                        knob=self.knob if knob is None else knob,
                        hint=self.hint if hint is None else hint, unknown=self.unknown,
                        assumed=self.assumed)


def holds_arrays(workload: Workload) -> bool:
    """Whether any figure of *workload* is a numpy array: a sweep, which
    ``pytest_roofline.sweep`` prices and ``analyze`` refuses."""
    return is_array(workload.footprint) or any(
        is_array(value) for k in workload.kernels
        for value in (k.flops, k.bytes, k.link_bytes, k.count, k.out_bytes, k.handoff_out,
                      k.handoff_pieces, k.link_steps, *k.handoff_in))


def add_up(values: Iterable[Number]) -> Number:
    """The sum of figures that may be sweeps (numpy arrays); shapes that do not broadcast
    together are a WorkloadError, not numpy's ValueError."""
    total: Number = 0.0
    try:
        for value in values:
            total = total + value
    except ValueError:  # numpy: sweeps of shapes that do not broadcast
        raise WorkloadError("the workload's kernels are sweeps of shapes that do not broadcast "
                            "together") from None
    return total


def intensity(flops: Number, nbytes: Number, name: str = "workload") -> Number:
    """FLOPs over bytes, the rule for every program: no FLOPs is intensity 0 (also for no
    bytes: zero work is a defined, zero-time result); FLOPs with no memory bytes have no finite
    intensity and are a WorkloadError (declare the bytes read and written)."""
    if type(nbytes) is float and nbytes > 0 and type(flops) is float:  # the common case
        ratio = flops / nbytes
        if ratio < math.inf:
            return ratio
        raise _overflow(name)
    if is_array(flops) or is_array(nbytes):
        import numpy as np

        f, b = np.broadcast_arrays(np.asarray(flops, float), np.asarray(nbytes, float))
        if np.any((b <= 0) & (f > 0)):
            raise _no_bytes(name)
        out = np.zeros(f.shape)
        with np.errstate(over="ignore"):
            np.divide(f, b, out=out, where=b > 0)
        if not np.all(np.isfinite(out)):
            raise _overflow(name)
        return out
    if nbytes > 0:
        quotient = flops / nbytes
        if quotient == math.inf:
            raise _overflow(name)
        return quotient
    if flops > 0:
        raise _no_bytes(name)
    return 0.0


def _overflow(name: str) -> WorkloadError:
    return WorkloadError(f"workload {brief(name)}: FLOPs over bytes overflow a float; "
                         f"figures this far apart describe no real program")


def _no_bytes(name: str) -> WorkloadError:
    return WorkloadError(f"workload {brief(name)} does FLOPs but moves no memory bytes, so "
                         f"its intensity is unbounded; declare the bytes it reads and writes "
                         f"(bytes=...)")


def total(workloads: Iterable[Workload], name: str = "program") -> Workload:
    """One workload that runs all of *workloads* in sequence."""
    items = list(workloads)
    if not items:
        raise WorkloadError("total() of no workloads")
    kernels = [k for w in items for k in w.kernels]
    return Workload(kernels, footprint=add_up(w.footprint for w in items), name=name,
                    unknown=merge_unknown(w.unknown for w in items),
                    assumed=merge_unknown(w.assumed for w in items))


_NO_UNKNOWN: Mapping[str, int] = MappingProxyType({})


def _unknown(value: object, name: str, field: str = "unknown") -> Mapping[str, int]:
    """A validated, read-only ``name -> calls`` mapping (sorted by name)."""
    if not value:
        return _NO_UNKNOWN
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and k and isinstance(n, int) and not isinstance(n, bool)
            and n >= 1 for k, n in value.items()):
        raise WorkloadError(f"workload {name!r}: {field} must map names to call counts "
                            f"(whole numbers >= 1), got {brief(value)}")
    return MappingProxyType(dict(sorted(value.items())))


def merge_unknown(parts: Iterable[Mapping[str, int]]) -> Mapping[str, int]:
    """The ``unknown`` of programs run together: the counts of each op name added."""
    merged: dict[str, int] = {}
    for part in parts:
        for op, calls in part.items():
            merged[op] = merged.get(op, 0) + calls
    return merged


def describe_unknown(unknown: Mapping[str, int]) -> str:
    """``"2 ops without a formula: mylib::fancy x2"`` ("" when there are none)."""
    calls = sum(unknown.values())
    if not calls:
        return ""
    listed = ", ".join(f"{op} x{n}" for op, n in sorted(unknown.items(),
                                                          key=lambda kv: (-kv[1], kv[0])))
    return f"{calls} op{'s' if calls != 1 else ''} without a formula: {listed}"

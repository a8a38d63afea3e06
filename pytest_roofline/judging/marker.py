"""The ``roofline`` marker's arguments checked into an Expectation.

:func:`roofline` (from :mod:`pytest_roofline.judging.signature`) only documents the signature
(``pytest --markers`` shows it); :func:`parse` turns the arguments of one test's marker(s)
into a frozen :class:`Expectation`, or raises :class:`MarkerError` naming the key, the bad
value and what is allowed.

The plugin imports this module when the first roofline test is set up (with the workload
module, which the fixture checks every declared workload against); the other engine modules
are imported when a marker is first parsed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import units
from ..dtypes import canonical
from ..engine import settings
from ..engine.regimes import REGIMES
from ..engine.workload import holds_arrays, is_array, total
from ..errors import RooflineError, brief, closest, did_you_mean
from ..hardware import get_hardware
from ..specfiles import is_path
from ..units import flop_per_byte, format_time, fraction
from .signature import KEYS, POSITIONAL
from .signature import roofline as roofline

if TYPE_CHECKING:
    from ..engine.workload import Workload
    from ..hardware import Hardware


class MarkerError(RooflineError, ValueError):
    """A ``roofline`` marker argument that cannot be used."""


@dataclass(frozen=True)
class Expectation:
    """What one test asks of the roofline: on which chips, with which checks.

    ``regime`` is the tuple of allowed regimes (None: any). ``workload`` is the marker's
    workload (None when the test declares it through the fixture).
    """

    hw: tuple[Hardware, ...]
    regime: tuple[str, ...] | None = None
    workload: Workload | None = None
    dtype: str | None = None
    sparse: bool = False
    min_intensity: float | None = None
    max_intensity: float | None = None
    max_time: float | None = None
    fits: bool | None = None
    margin: float = 0.0
    min_efficiency: float | None = None
    trace: bool = False
    cross_check: float | None = None
    trace_only: tuple[Any, ...] = ()
    strict: bool = False
    tracer: Any = None  # trace=Tracer(...): the options the test body is traced with
    optional_hw: frozenset[str] = frozenset()  # chips whose failure to price is a skip
    #: per-kernel efficiency of roofline.profile(): a fraction, or patterns to fractions
    min_kernel_efficiency: float | dict[str, float] | None = None
    allow_faster: bool = False  # a profiled kernel faster than its bound does not fail

    @cached_property
    def checks(self) -> bool:
        """True when at least one expectation is set (otherwise the figures are reported)."""
        return (self.regime is not None or self.min_intensity is not None
                or self.max_intensity is not None or self.max_time is not None
                or self.fits is not None or self.min_efficiency is not None
                or self.cross_check is not None or self.min_kernel_efficiency is not None)

    @property
    def expected(self) -> list[str] | None:
        """The allowed regimes as the JSON report lists them."""
        return None if self.regime is None else list(self.regime)

    def describe(self) -> str:
        """A short label of the checks, for the summary table: ``compute, t<=2 ms, fits``."""
        return self.label

    @cached_property
    def label(self) -> str:
        """:meth:`describe`, worked out once (every test sharing the marker reads it)."""
        parts: list[str] = []
        if self.regime is not None:
            margin = f" (margin {self.margin:.0%})" if self.margin > 0 else ""
            parts.append("|".join(self.regime) + margin)
        if self.min_intensity is not None:
            parts.append(f"I>={_num(self.min_intensity)}")
        if self.max_intensity is not None:
            parts.append(f"I<={_num(self.max_intensity)}")
        if self.max_time is not None:
            parts.append(f"t<={format_time(self.max_time)}")
        if self.fits is not None:
            parts.append("fits" if self.fits else "no fit")
        if self.min_efficiency is not None:
            parts.append(f"eff>={self.min_efficiency:.0%}")
        if self.cross_check is not None:
            parts.append(f"xcheck {self.cross_check:.3g}")
        if self.min_kernel_efficiency is not None:
            low = self.min_kernel_efficiency
            parts.append(f"kernels>={low:.0%}" if isinstance(low, float) else
                         f"kernels>={min(low.values()):.0%}..")
        return ", ".join(parts) if parts else "-"


def _num(x: float) -> str:
    return flop_per_byte(x)


def merge(marks: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]) -> dict[str, Any]:
    """Arguments of several markers (closest first: function, class, module), closest wins."""
    merged: dict[str, Any] = {}
    for args, kwargs in marks:
        if len(args) > len(POSITIONAL):
            raise MarkerError(f"takes at most {len(POSITIONAL)} positional arguments "
                              f"(hw, regime), got {len(args)}: {tuple(args)!r}")
        named = dict(zip(POSITIONAL, args, strict=False))
        for key in named:
            if key in kwargs:
                raise MarkerError(f"{key} given both by position and as {key}=")
        named.update(kwargs)
        for key, value in named.items():
            merged.setdefault(key, value)
    return merged


def parse(
    kwargs: Mapping[str, Any],
    *,
    default_hw: Sequence[str] = (),
    default_margin: float = 0.0,
    name: str = "workload",
    base: Path | None = None,
) -> Expectation:
    """Check a marker's arguments (merged with :func:`merge`) into an :class:`Expectation`.

    *default_hw* applies when the marker names no chip; *name* names a workload built from
    ``flops=``/``bytes=``; *base* is the folder that relative spec paths in ``hw`` start from
    (the test file's) before the current directory.
    """
    unknown = [k for k in kwargs if k not in KEYS]
    if unknown:
        key = unknown[0]
        shown = key if len(key) <= 40 else key[:37] + "..."
        raise MarkerError(f"unknown argument {shown}={brief(kwargs[key])}."
                          + closest(key, KEYS, "docs/plugin.md, The marker"))
    hw_value = kwargs.get("hw")
    from_option = hw_value is None
    if from_option and not default_hw:
        raise MarkerError("no hardware to analyze on: pass hw= to the marker (a name such as "
                          "'h100', a list of them, or a spec file path), or set --roofline-hw "
                          "or roofline_hw in the ini file")
    hardware = _hardware(default_hw if from_option else hw_value, base, from_option)
    optional = _optional(kwargs.get("optional_hw"), hardware)
    dtype = _dtype(kwargs.get("dtype"), [c for c in hardware if c.name not in optional],
                   bool(kwargs.get("sparse", False)))
    regime = _regime(kwargs.get("regime"))
    min_i = _intensity(kwargs.get("min_intensity"), "min_intensity")
    max_i = _intensity(kwargs.get("max_intensity"), "max_intensity")
    if min_i is not None and max_i is not None and min_i > max_i:
        raise MarkerError(f"min_intensity={min_i!r} is above max_intensity={max_i!r}; no "
                          f"workload can satisfy both")
    max_time = None
    if kwargs.get("max_time") is not None:
        max_time = _quantity(kwargs["max_time"], "max_time", "time", allow_zero=False)
    fits = kwargs.get("fits")
    if fits is not None and not isinstance(fits, bool):
        raise MarkerError(f"fits={fits!r} is not allowed; expected True (the footprint must "
                          f"fit the chip's memory), False (it must not) or None")
    margin = default_margin
    if kwargs.get("margin") is not None:
        if regime is None:
            raise MarkerError(f"margin={kwargs['margin']!r} needs regime=: the margin is a band "
                              f"around the ridge inside which a regime assertion fails")
        margin = _margin(kwargs["margin"])
    sparse = kwargs.get("sparse", False)
    if not isinstance(sparse, bool):
        raise MarkerError(f"sparse={sparse!r} is not allowed; expected True or False")
    min_efficiency = None
    if kwargs.get("min_efficiency") is not None:
        min_efficiency = _fraction(kwargs["min_efficiency"], "min_efficiency",
                                   "a fraction of the roof in (0, 1] such as 0.5 or '50%'",
                                   low_open=True)
    trace, trace_only, tracer = _trace(kwargs.get("trace", False))
    strict = kwargs.get("strict", False)
    if not isinstance(strict, bool):
        raise MarkerError(f"strict={strict!r} is not allowed; expected True (fail when a traced "
                          f"op has no formula) or False")
    cross_check = None
    if kwargs.get("cross_check") is not None:
        cross_check = _fraction(kwargs["cross_check"], "cross_check",
                                "a relative band in [0, 1) such as 0.02 or '2%'")
    min_kernel = None
    if kwargs.get("min_kernel_efficiency") is not None:
        from ..profiling.rules import ProfileError, parse_minimum

        try:
            min_kernel = parse_minimum(kwargs["min_kernel_efficiency"])
        except ProfileError as exc:
            raise MarkerError(str(exc)) from None
    allow_faster = kwargs.get("allow_faster", False)
    if not isinstance(allow_faster, bool):
        raise MarkerError(f"allow_faster={allow_faster!r} is not allowed; expected True (a "
                          f"profiled kernel faster than its bound is reported, not failed) "
                          f"or False")
    return Expectation(
        min_kernel_efficiency=min_kernel, allow_faster=allow_faster,
        hw=hardware, regime=regime, workload=_workload(kwargs, name), dtype=dtype,
        sparse=sparse, min_intensity=min_i, max_intensity=max_i, max_time=max_time,
        fits=fits, margin=margin, min_efficiency=min_efficiency, trace=trace,
        cross_check=cross_check, optional_hw=optional, trace_only=trace_only, strict=strict,
        tracer=tracer)


def _trace(value: object) -> tuple[bool, tuple[Any, ...], Any]:
    """``trace=``: True (the test body), a ``Tracer`` (the test body, traced with its
    options), a callable, or a list of callables and modules (only their calls) -> (trace,
    the callables, the Tracer or None)."""
    if isinstance(value, bool):
        return value, (), None
    from ..tracing import Tracer

    if isinstance(value, Tracer):
        return True, (), value
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if items and all(callable(item) and not isinstance(item, Tracer) for item in items):
        return True, items, None
    raise MarkerError(f"trace={value!r} is not allowed; expected True (record the torch ops "
                      f"the test body runs), a Tracer (the same, with its options), a "
                      f"function or module, or a list of them (record only their calls), or "
                      f"False")


def _optional(value: object, hardware: Sequence[Hardware]) -> frozenset[str]:
    """``optional_hw=``: True (every chip of hw), a chip name or a list of names from hw;
    the canonical names of the chips whose failure to price the workload is a skip."""
    if value is None or value is False:
        return frozenset()
    if value is True:
        return frozenset(c.name for c in hardware)
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple, set, frozenset)) or not all(
            isinstance(n, str) for n in names):
        raise MarkerError(f"optional_hw={value!r} is not allowed; expected True (any chip of "
                          f"hw) or the name of a chip in hw, or a list of them")
    chosen = set()
    for name in names:
        wanted = name.lower()
        chip = next((c for c in hardware if wanted == c.name or wanted in c.aliases), None)
        if chip is None:
            raise MarkerError(f"optional_hw: {name!r} is not one of the test's chips "
                              f"({', '.join(c.name for c in hardware)})")
        chosen.add(chip.name)
    return frozenset(chosen)


def _hardware(value: object, base: Path | None, from_option: bool) -> tuple[Hardware, ...]:
    from ..hardware import Hardware

    key = "--roofline-hw" if from_option else "hw"
    items = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
    if not items:
        raise MarkerError(f"{key}={value!r} names no chip; expected a name such as 'h100', a "
                          f"list of names, or a spec file path")
    chips: list[Hardware] = []
    for item in items:
        if isinstance(item, Hardware):
            chip = item
        elif isinstance(item, (str, os.PathLike)):
            chip = _lookup(item, base, key)
        else:
            raise MarkerError(f"{key}={item!r} is a {type(item).__name__}; expected a chip "
                              f"name such as 'h100', a spec file path, or a list of them")
        if all(c.name != chip.name for c in chips):
            chips.append(chip)
    return tuple(chips)


def _lookup(item: str | os.PathLike[str], base: Path | None, key: str) -> Hardware:
    text = os.fspath(item)
    if base is not None and is_path(text) and not os.path.isabs(text):
        local = base / text
        if local.is_file():
            text = str(local)
    try:
        return get_hardware(text)
    except RooflineError as exc:
        raise MarkerError(f"{key}={os.fspath(item)!r}: {exc}") from None


def _dtype(value: object, hardware: Sequence[Hardware], sparse: bool) -> str | None:
    if value is None:
        return None
    try:
        name = canonical(value)
    except RooflineError as exc:
        raise MarkerError(f"dtype={value!r}: {exc}") from None
    for chip in hardware:
        try:
            chip.peak(name, "matrix", sparse)
        except RooflineError as exc:
            raise MarkerError(f"dtype={value!r}: {exc}") from None
    return name


def _regime(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    allowed = f"allowed: {', '.join(map(repr, REGIMES))} or a list of them"
    if not isinstance(items, (list, tuple, set, frozenset)) or not items:
        raise MarkerError(f"regime={value!r} is not allowed; {allowed}")
    chosen = set()
    for item in items:
        text = item.strip().lower() if isinstance(item, str) else item
        if isinstance(text, str) and text.endswith("-bound"):
            text = text[: -len("-bound")]
        if text not in REGIMES:
            raise MarkerError(f"regime={item!r} is not a regime; {allowed}."
                              + (did_you_mean(item, REGIMES) if isinstance(item, str) else ""))
        chosen.add(text)
    return tuple(r for r in REGIMES if r in chosen)


def _intensity(value: object, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            0 <= value < float("inf")):
        raise MarkerError(f"{key}={value!r} is not allowed; expected a number of FLOP/B >= 0")
    return float(value)


def _margin(value: object) -> float:
    try:
        number: float = settings.check("margin", value, text=True)
    except settings.BadSetting as exc:
        raise MarkerError(f"margin={value!r} is not allowed; expected {exc.allowed}") from None
    return number


def _fraction(value: object, key: str, allowed: str, low_open: bool = False) -> float:
    """A number or a percentage string; *low_open*: in (0, 1], else in [0, 1)."""
    number = fraction(value)
    inside = (0 < number <= 1) if low_open else (0 <= number < 1)
    if not inside:
        raise MarkerError(f"{key}={value!r} is not allowed; expected {allowed}")
    return number


def _quantity(value: object, key: str, dimension: str, allow_zero: bool = True) -> float:
    if is_array(value):
        raise MarkerError(f"{key}= is an array; the marker takes one value (sweep() takes "
                          f"arrays)")
    try:
        return units.parse(value, dimension, what=key, allow_zero=allow_zero)
    except ValueError as exc:
        raise MarkerError(str(exc)) from None


def _workload(kwargs: Mapping[str, Any], name: str) -> Workload | None:
    from ..engine.workload import Workload

    raw = {k: kwargs.get(k) for k in ("flops", "bytes", "link_bytes")}
    given = {k: v for k, v in raw.items() if v is not None}
    workload = kwargs.get("workload")
    footprint = kwargs.get("footprint")
    if workload is not None and given:
        raise MarkerError(f"give either workload= or flops=/bytes=, not both (got workload= "
                          f"and {', '.join(f'{k}=' for k in given)})")
    if workload is not None:
        allowed = ("a Workload (from pytest_roofline.ops or models, or Workload(flops=..., "
                   "bytes=...)), or a list of them")
        if isinstance(workload, (list, tuple)) and workload:
            for i, item in enumerate(workload):
                if not isinstance(item, Workload):
                    raise MarkerError(f"workload[{i}]={item!r} is a {type(item).__name__}; "
                                      f"expected {allowed}")
            workload = total(workload, name=" + ".join(w.name for w in workload))
        if not isinstance(workload, Workload):
            raise MarkerError(f"workload={workload!r} is a {type(workload).__name__}; expected "
                              f"{allowed}")
        _check_scalar(workload, "workload")
    elif given:
        dimensions = {"flops": "flop", "bytes": "byte", "link_bytes": "byte"}
        values = {k: _quantity(v, k, dimensions[k]) for k, v in given.items()}
        workload = Workload(flops=values.get("flops", 0.0), bytes=values.get("bytes", 0.0),
                            link_bytes=values.get("link_bytes", 0.0), name=name)
    if footprint is not None:
        if workload is None:
            raise MarkerError(f"footprint={footprint!r} needs a workload in the marker "
                              f"(workload= or flops=/bytes=)")
        workload = workload.with_(footprint=_quantity(footprint, "footprint", "byte"))
    return workload


def _check_scalar(workload: Workload, key: str) -> None:
    if holds_arrays(workload):
        raise MarkerError(f"{key}={workload.name!r} holds arrays (a sweep); a test checks "
                          f"one workload at a time: sweep() takes arrays")

"""The package's one unit registry, and parsing of quantities at the boundary.

Spec files and user strings carry units (``"3.35 TB/s"``, ``"989.4 TFLOP/s"``, ``"2 ms"``);
they are parsed here, once, into plain floats in SI base units:

============  ===========  =========================================
dimension     SI float in  accepted units (any SI prefix)
============  ===========  =========================================
``flop``      FLOP         FLOP, FLOPs, OP (integer ops count alike)
``flop_rate`` FLOP/s       FLOP/s, FLOPS, OP/s, TOPS
``byte``      B            B, kB, MB, GB, TB (decimal); KiB, MiB, GiB, TiB (binary); bit
``bandwidth`` B/s          B/s, GB/s, TB/s, GiB/s, Gbit/s ...
``time``      s            s, ms, us, ns, min
``frequency`` Hz           Hz, MHz, GHz
============  ===========  =========================================

Decimal and binary prefixes are never mixed up: ``"80 GB"`` is 8e10 bytes and ``"80 GiB"`` is
85.9e9 bytes. Plain numbers are taken to be in the SI unit of the table. pint is imported only
when the first string is parsed; everything past this module runs on floats.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import UnitError, brief

_DIMENSIONS: dict[str, tuple[str, str]] = {
    # name: (SI unit for pint, how the SI unit is written in messages)
    "flop": ("FLOP", "FLOP"),
    "flop_rate": ("FLOP / second", "FLOP/s"),
    "byte": ("byte", "B"),
    "bandwidth": ("byte / second", "B/s"),
    "time": ("second", "s"),
    "frequency": ("hertz", "Hz"),
}

_EXAMPLES = {
    "flop": "'4.3 GFLOP'",
    "flop_rate": "'989.4 TFLOP/s'",
    "byte": "'80 GB' or '16 GiB'",
    "bandwidth": "'3.35 TB/s'",
    "time": "'2 ms'",
    "frequency": "'1.98 GHz'",
}

_NAMES = {
    "flop": "FLOP count",
    "flop_rate": "throughput",
    "byte": "data size",
    "bandwidth": "bandwidth",
    "time": "time",
    "frequency": "frequency",
}

_registry: Any = None


def registry() -> Any:
    """The application-wide pint registry (built on first use)."""
    global _registry
    if _registry is None:
        import pint

        _registry = pint.UnitRegistry(
            str(Path(__file__).with_name("units.txt")), cache_folder=None)
    return _registry


def _check(value: float, what: str, allow_zero: bool, given: object = None) -> float:
    """*value*, or a UnitError quoting what the caller wrote (*given*, when it was not this
    float: ``'1e400 s'`` reads as inf)."""
    plain = given is None or isinstance(given, float) or (
        isinstance(given, int) and given == value)
    shown = repr(value) if plain else f"{brief(given)} (read as {value!r})"
    if math.isnan(value) or math.isinf(value):
        raise UnitError(f"{what}: {shown} is not a finite number")
    if value < 0 or (value == 0 and not allow_zero):
        need = "zero or more" if allow_zero else "greater than zero"
        raise UnitError(f"{what}: {shown} is not allowed, it must be {need}")
    return value


# The common spellings ("989.4 TFLOP/s", "3.35 TB/s", "80 GB", "2 ms") are read without pint:
# importing pint costs ~150 ms, most of the first roofline test's time. Same arithmetic as
# pint (the number times the prefix's factor); anything else goes to pint.
_SIMPLE = re.compile(
    r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?\s*"
    r"(Ki|Mi|Gi|Ti|Pi|[nuµμmkKMGTPE])?(FLOP/s|FLOPs|FLOPS|FLOP|OP/s|OPs|OPS|OP|B/s|B|Hz|s)")
_SIMPLE_PREFIX = {
    None: 1, "n": 1e-9, "u": 1e-6, "µ": 1e-6, "μ": 1e-6, "m": 1e-3, "k": 1e3, "K": 1e3,
    "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
}
_SIMPLE_UNIT = {
    "FLOP": "flop", "FLOPs": "flop", "OP": "flop", "OPs": "flop",
    "FLOP/s": "flop_rate", "FLOPS": "flop_rate", "OP/s": "flop_rate", "OPS": "flop_rate",
    "B": "byte", "B/s": "bandwidth", "s": "time", "Hz": "frequency",
}


def _parse_simple(text: str, dimension: str) -> float | None:
    """``<number> [prefix]<unit>`` of *dimension* as a float; None for anything else."""
    match = _SIMPLE.fullmatch(text)
    if match is None or _SIMPLE_UNIT[match[4]] != dimension:
        return None
    number = float(match[1]) if match[2] is None else float(f"{match[1]}e{match[2]}")
    return float(number * _SIMPLE_PREFIX[match[3]])


@lru_cache(maxsize=4096)
def _parse_text(text: str, dimension: str) -> float:
    simple = _parse_simple(text, dimension) if len(text) <= 100 else None
    if simple is not None:
        return simple
    if len(text) > 100 or "**" in text or "^" in text:
        # pint evaluates powers exactly: '10**10**10 B' would not finish
        raise UnitError(f"cannot parse {brief(text)} as a quantity (at most 100 characters, "
                        f"and no powers)")
    import pint

    reg = registry()
    unit, _ = _DIMENSIONS[dimension]
    try:
        quantity = reg.Quantity(text)
    except Exception as exc:  # pint's parser raises many kinds (TokenError, ...)
        reason = " ".join(str(exc).split())[:80] or type(exc).__name__
        raise UnitError(f"cannot parse {brief(text)} as a quantity ({reason})") from None
    try:
        if not isinstance(quantity, reg.Quantity):  # a bare number such as "3e9"
            return float(quantity)
        if quantity.dimensionless:
            return float(quantity.to("dimensionless").magnitude)
        return float(quantity.to(unit).magnitude)
    except pint.errors.DimensionalityError:
        raise UnitError(
            f"{text!r} has units of {quantity.units:~}, which are not a {_NAMES[dimension]}"
        ) from None
    except (TypeError, ValueError, OverflowError):
        raise UnitError(f"{brief(text)} is not a real number with units") from None


def parse(value: object, dimension: str, *, what: str = "value", allow_zero: bool = False) -> float:
    """Parse *value* (a number in SI units, or a string with units) into a float in SI units.

    *dimension* is one of ``flop``, ``flop_rate``, ``byte``, ``bandwidth``, ``time``,
    ``frequency``. *what* names the thing in error messages (``"memory.bandwidth in h100.yaml"``).
    Negative, NaN and infinite values are refused, and zero unless *allow_zero*.
    """
    if not isinstance(dimension, str) or dimension not in _DIMENSIONS:
        raise UnitError(f"unknown dimension {brief(dimension)}; expected one of "
                        f"{', '.join(_DIMENSIONS)}")
    if isinstance(value, bool) or value is None:
        raise UnitError(f"{what}: expected a {_NAMES[dimension]} such as "
                        f"{_EXAMPLES[dimension]}, got {value!r}")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        return _check(number, what, allow_zero, value)
    if isinstance(value, str):
        try:
            number = _parse_text(value.strip(), dimension)
        except UnitError as exc:
            raise UnitError(
                f"{what}: {exc}; expected a {_NAMES[dimension]} such as "
                f"{_EXAMPLES[dimension]}"
            ) from None
        return _check(number, what, allow_zero, value)
    if hasattr(value, "to") and hasattr(value, "magnitude") and hasattr(value, "units"):
        # a pint Quantity, perhaps of another registry: go through its text form
        return parse(f"{value.magnitude} {value.units}", dimension, what=what,
                     allow_zero=allow_zero)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise UnitError(f"{what}: expected a number or a string with units such as "
                        f"{_EXAMPLES[dimension]}, got {brief(value)}") from None
    return _check(number, what, allow_zero, value)


_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """Format a float with an SI prefix: ``si(1.37e11, "FLOP") == "137 GFLOP"``."""
    if value != value:  # NaN
        return "nan"
    if value in (math.inf, -math.inf):
        return "inf"
    magnitude = abs(value)
    for scale, prefix in _PREFIXES:
        if magnitude >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}".rstrip()
    return f"{value:.{digits}g} {unit}".rstrip()


def format_time(seconds: float, digits: int = 3) -> str:
    """Format a duration with a readable unit: ``format_time(1.39e-4) == "139 us"``."""
    magnitude = abs(seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if magnitude >= scale:
            return f"{seconds / scale:.{digits}g} {unit}"
    return f"{seconds / 1e-9:.{digits}g} ns"


def flop_per_byte(value: float) -> str:
    """A FLOP/B figure (an intensity or a ridge) as every message, table, chart and report
    shows it: one decimal from 10 up to a million (``31.8``, ``1365.3``), three significant
    digits otherwise (``0.25``, ``0.0795``, ``4.2e+06``); ``nan`` and ``inf`` as such."""
    x = float(value)
    if x != x or math.isinf(x):
        return str(x)
    return f"{x:.1f}" if 10 <= abs(x) < 1e6 else f"{x:.3g}"


def fraction(value: object) -> float:
    """``0.7`` or ``"70%"`` as 0.7: the one reading of a fraction given by a user (an option,
    a marker argument, a command-line flag); NaN for anything that is not a number, so that
    the caller's range check names the value. The caller checks the range it allows."""
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return math.nan
    text = value.strip()
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        return math.nan

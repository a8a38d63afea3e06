"""``min_kernel_efficiency``: one fraction for every kernel, or kernel-name patterns to
fractions.

A pattern is a shell-style wildcard (``fnmatch``, case-insensitive) matched against the
recorded op (``aten::linear``, or ``linear`` without its namespace), the kernels the tracer
prices it as (``addmm``, ``mm``: the names ``trace()`` gives) and the device kernels it
launched (``*gemm*``, ``*layer_norm*``); ``aten::mm`` matches the traced ``mm`` too. A row
takes the first pattern, in the order given, that any of its names matches; a row no pattern
matches is not asserted. A fraction is a number in (0, 1] or a percentage string (``"40%"``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from ..errors import RooflineError

#: The most bytes a trace file may hold, and inflate to when compressed, whatever its format
#: (1 GiB): past it the file is refused before it is read whole (``max_bytes=``,
#: ``--max-bytes`` raise it).
MAX_BYTES = 1 << 30


class ProfileError(RooflineError, ValueError):
    """A profile that cannot be made or read (bad arguments, a trace without shapes)."""


def fraction(value: Any, what: str) -> float:
    """A fraction in (0, 1] from a number or ``"40%"``; a ProfileError naming *what*."""
    number: Any = value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not (
            0 < number <= 1):
        raise ProfileError(f"{what}={value!r} is not allowed; expected a fraction of the roof "
                           f"in (0, 1] such as 0.4 or '40%'")
    return float(number)


def parse_minimum(value: Any, what: str = "min_kernel_efficiency"
                  ) -> float | dict[str, float]:
    """The marker's argument: a fraction, or a mapping of patterns to fractions."""
    if isinstance(value, Mapping):
        if not value:
            raise ProfileError(f"{what}={{}} asserts nothing; give a fraction or a mapping of "
                               f"kernel-name patterns to fractions such as {{'*gemm*': 0.5}}")
        out: dict[str, float] = {}
        for pattern, limit in value.items():
            if not isinstance(pattern, str) or not pattern.strip():
                raise ProfileError(f"{what}: pattern {pattern!r} must be a non-empty string "
                                   f"such as 'aten::addmm' or '*gemm*'")
            out[pattern] = fraction(limit, f"{what}[{pattern!r}]")
        return out
    return fraction(value, what)


def names_of(row: Any) -> tuple[str, ...]:
    """The names a pattern is matched against: the op, with and without its namespace,
    and the row's kernels (a :class:`.model.KernelRow`)."""
    return (row.op, row.op.removeprefix("aten::"), *row.kernels)


def minimum_for(row: Any, minimum: float | Mapping[str, float]) -> float | None:
    """The fraction *row* must reach under *minimum* (None: not asserted)."""
    if not isinstance(minimum, Mapping):
        return float(minimum)
    names = [n.lower() for n in names_of(row)]
    for pattern, limit in minimum.items():
        wanted = {pattern.lower(), pattern.lower().removeprefix("aten::")}
        if any(fnmatch.fnmatchcase(name, p) for name in names for p in wanted):
            return float(limit)
    return None

"""Compare rules: when does a result count as a regression against its baseline?

Two checks are built in and always apply:

* ``regime``: the bottleneck changed (compute, memory or network), in either direction;
* ``fits``: the workload fitted in the chip's memory in the baseline and no longer does.

Further rules are written ``METRIC:LIMIT`` and parsed into :class:`Rule` objects::

    intensity:10%    intensity (FLOP/B) fell by more than 10% of the baseline value
    intensity:5      intensity fell by more than 5 FLOP/B
    time:5%          the bound time rose by more than 5%
    time:2us         the bound time rose by more than 2 us (any time unit: ns, us, ms, s)
    flops:1%         FLOPs rose by more than 1%; absolute: flops:1GFLOP
    bytes:10%        memory traffic rose by more than 10%; absolute: bytes:64MB, bytes:1GiB
    footprint:5%     resident memory rose by more than 5%; absolute: footprint:1GB
    efficiency:10%   measured efficiency (roofline time / measured time) fell by more than
                     10% of the baseline value; absolute: efficiency:0.05 (5 points of roof).
                     Records without a measurement are not checked. Efficiency carries
                     across machines where measured times do not. Each profiled kernel
                     (roofline.profile) is checked too, matched by op, shapes and layout:
                     one whose % of roof fell beyond the limit, and whose call slowed
                     beyond the noise of both runs, fails naming the kernel.

"More than" is strict: ``intensity:10%`` accepts a fall of exactly 10%, and ``time:0%``
fails on any rise at all. Amounts of time, FLOPs and bytes need their unit (a bare
``time:5`` is an error that offers ``time:5%`` and ``time:5ms``); intensity takes a plain
number of FLOP/B and efficiency a fraction.
Several rules may be given; each one applies. A value may also hold several rules
separated by commas (``intensity:10%,time:5%``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import units
from ..errors import RuleError, did_you_mean
from ..fields import Record, RecordKey
from .defaults import RULES_HELP

#: The checks that always apply, in the order they are reported.
BUILTIN = ("regime", "fits")

GRAMMAR = ("A rule is METRIC:LIMIT, where METRIC is one of intensity, time, flops, bytes, "
           "footprint, efficiency and LIMIT is a percentage of the baseline value "
           "('intensity:10%', 'time:5%') or an amount in the metric's unit ('intensity:5' "
           "FLOP/B, 'time:2us', 'flops:1GFLOP', 'bytes:64MB', 'efficiency:0.05').")

#: One-line help text shared by the command line and the pytest option.
HELP = RULES_HELP

_EPSILON = 1e-9  # relative slack so that a limit met exactly (10.000000000000002%) passes


def format_number(value: float, unit: str = "") -> str:
    """A figure as people read it: 1365.3, 0.0123, 4.2e+09 (with *unit* appended)."""
    return f"{units.flop_per_byte(value)} {unit}".rstrip()


def _si(unit: str) -> Callable[[float], str]:
    return lambda value: units.si(value, unit, digits=4)


def _time(value: float) -> str:
    return units.format_time(value, digits=4)


@dataclass(frozen=True)
class Metric:
    """A figure of a record that a rule can watch."""

    name: str
    field: RecordKey  # the record field holding the figure
    label: str  # how messages name it
    worse: str  # "fall" or "rise": the direction that counts as a regression
    dimension: str | None  # units.parse dimension of absolute limits; None: a plain number
    show: Callable[[float], str]  # formats a value with its unit

    def value(self, record: Record) -> float | None:
        """The figure in *record*, or None when the record has no usable number."""
        raw = record.get(self.field)
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw != raw:
            return None
        return float(raw)


METRICS: dict[str, Metric] = {
    "intensity": Metric("intensity", "intensity", "intensity", "fall", None,
                        lambda v: format_number(v, "FLOP/B")),
    "time": Metric("time", "time_s", "time bound", "rise", "time", _time),
    "flops": Metric("flops", "flops", "FLOPs", "rise", "flop", _si("FLOP")),
    "bytes": Metric("bytes", "bytes", "memory traffic", "rise", "byte", _si("B")),
    "footprint": Metric("footprint", "footprint_B", "footprint", "rise", "byte", _si("B")),
    "efficiency": Metric("efficiency", "efficiency", "measured efficiency", "fall", None,
                         lambda v: f"{v:.1%}"),
}


def relative_change(base: float, new: float) -> float:
    """``(new - base) / base`` in percent, with the limits spelt out: 0 -> x is +inf%."""
    if base == new:
        return 0.0
    if math.isinf(base):
        return -100.0 if new < base else 100.0
    if base == 0:
        return math.inf if new > 0 else -math.inf
    return (new - base) / abs(base) * 100.0


@dataclass(frozen=True)
class Rule:
    """``METRIC:LIMIT``: *threshold* is in percent when *relative*, else in the metric's SI
    unit (FLOP/B, s, FLOP, B). Build one with :func:`parse_rule`."""

    metric: str
    threshold: float
    relative: bool
    text: str = field(default="", compare=False)  # as the user wrote it, for messages

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise RuleError(f"unknown rule metric {self.metric!r}; "
                            f"expected one of {', '.join(METRICS)}"
                            + did_you_mean(str(self.metric), METRICS))
        if (isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float))
                or not math.isfinite(self.threshold) or self.threshold < 0):
            raise RuleError(f"rule {self.metric}: the limit must be a finite number >= 0, "
                            f"got {self.threshold!r}")
        if not isinstance(self.relative, bool):
            raise RuleError(f"rule {self.metric}: relative must be True or False, "
                            f"got {self.relative!r}")
        object.__setattr__(self, "threshold", float(self.threshold))

    @property
    def spec(self) -> Metric:
        return METRICS[self.metric]

    @property
    def limit(self) -> str:
        """The limit as written in messages: ``10%``, ``2 us``, ``5.0 FLOP/B``."""
        if self.relative:
            return f"{self.threshold:g}%"
        return self.spec.show(self.threshold)

    def __str__(self) -> str:
        if self.text:
            return self.text
        if self.relative:
            return f"{self.metric}:{self.threshold:g}%"
        if self.spec.dimension is None:
            return f"{self.metric}:{self.threshold:g}"
        return f"{self.metric}:{self.limit.replace(' ', '')}"

    def check(self, base: Record, new: Record) -> str | None:
        """The failure message when *new* breaks the rule against *base*, else None.

        *base* and *new* are records (mappings); a record without a number for the
        metric (e.g. a test whose marker was wrong) is not checked.
        """
        spec = self.spec
        old_value, new_value = spec.value(base), spec.value(new)
        if old_value is None or new_value is None:
            return None
        worsening = old_value - new_value if spec.worse == "fall" else new_value - old_value
        if not worsening > 0:
            return None
        change = relative_change(old_value, new_value)
        if self.relative:
            amount = abs(change)
        else:
            amount = worsening if math.isfinite(worsening) else math.inf
        if not amount - self.threshold > _EPSILON * max(1.0, self.threshold):
            return None
        verb = "fell" if spec.worse == "fall" else "rose"
        return (f"{spec.label} {verb} from {spec.show(old_value)} to {spec.show(new_value)} "
                f"({change:+.1f}%), over the limit of {self.limit} (rule {self})")


_RULE = re.compile(r"^\s*([A-Za-z_]+)\s*:\s*(.+?)\s*$")
_PERCENT = re.compile(r"^([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*%$")
_PLAIN = re.compile(r"^([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(?:FLOP/B|flop/b)?$")


def parse_rule(text: str) -> Rule:
    """``"intensity:10%"`` -> ``Rule("intensity", 10.0, relative=True)``; errors name the
    rule and the grammar."""
    if not isinstance(text, str):
        raise RuleError(f"bad compare rule {text!r}: expected a string. {GRAMMAR}")
    match = _RULE.match(text)
    if not match:
        raise RuleError(f"bad compare rule {text!r}: no METRIC:LIMIT in it. {GRAMMAR}")
    name, limit = match.group(1).lower(), match.group(2)
    written = f"{name}:{limit.replace(' ', '')}"
    if name not in METRICS:
        hint = did_you_mean(name, METRICS)
        if name in BUILTIN:
            hint = f" {name!r} is always checked and takes no limit."
        raise RuleError(f"bad compare rule {text!r}: unknown metric {name!r}.{hint} {GRAMMAR}")
    if limit.startswith("-"):
        raise RuleError(f"bad compare rule {text!r}: the limit must be >= 0 (the direction is "
                        f"the metric's: intensity falls, the others rise). {GRAMMAR}")
    percent = _PERCENT.match(limit)
    if percent:
        return _rule(text, name, float(percent.group(1)), relative=True, written=written)
    dimension = METRICS[name].dimension
    if dimension is None:
        plain = _PLAIN.match(limit)
        if not plain:
            raise RuleError(f"bad compare rule {text!r}: limit {limit!r} is neither a "
                            f"percentage nor a number of FLOP/B. {GRAMMAR}")
        value = float(plain.group(1))
        if name == "efficiency" and value >= 1:  # a fraction of the roof, at most 1
            raise RuleError(f"bad compare rule {text!r}: an efficiency limit without '%' is "
                            f"points of roof as a fraction (0.05 = 5 points), and a fall of "
                            f"{limit} points of roof never happens, so the rule would never "
                            f"fire: '{name}:{limit}%' (a share of the baseline value) or "
                            f"'{name}:{value / 100:g}' ({limit} points). {GRAMMAR}")
        return _rule(text, name, value, relative=False, written=written)
    if limit.endswith("%"):  # a percent sign after something that is not a number
        raise RuleError(f"bad compare rule {text!r}: {limit!r} is not a percentage; expected "
                        f"a number before '%' such as '5%'. {GRAMMAR}")
    if _NUMBER.match(limit):
        # a bare number of seconds or bytes reads as a share to most people, and a limit
        # of 5 s never fires on a microsecond kernel: the unit is asked for
        unit = _EXAMPLE_UNITS[name]
        raise RuleError(f"bad compare rule {text!r}: a {METRICS[name].label} limit needs a "
                        f"unit or a percentage: '{name}:{limit}%' (a share of the baseline "
                        f"value) or '{name}:{limit}{unit}' (an amount). {GRAMMAR}")
    try:
        amount = units.parse(limit, dimension, what="the limit", allow_zero=True)
    except ValueError as exc:
        raise RuleError(f"bad compare rule {text!r}: {exc}. {GRAMMAR}") from None
    return _rule(text, name, amount, relative=False, written=written)


_NUMBER = re.compile(r"^[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?$")
#: The unit a bare-number limit is offered with, in the error that asks for one.
_EXAMPLE_UNITS = {"time": "ms", "flops": "GFLOP", "bytes": "MB", "footprint": "GB"}


def _rule(text: str, name: str, threshold: float, *, relative: bool, written: str) -> Rule:
    """The Rule, with a bad limit (infinite, say) reported against the rule as typed."""
    try:
        return Rule(name, threshold, relative=relative, text=written)
    except RuleError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise RuleError(f"bad compare rule {text!r}: {reason}. {GRAMMAR}") from None


def parse_rules(values: Iterable[str] | str | None) -> tuple[Rule, ...]:
    """Every rule of *values* (strings, each possibly comma-separated), in order, once each.

    Shared by the command line and the pytest option, so a repeated option keeps every rule.
    """
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    rules: list[Rule] = []
    for value in values:
        if isinstance(value, Rule):
            pieces: list[Any] = [value]
        else:
            if not isinstance(value, str):
                raise RuleError(f"bad compare rule {value!r}: expected a string. {GRAMMAR}")
            pieces = [p for p in value.split(",") if p.strip()]
            if not pieces:
                raise RuleError(f"bad compare rule {value!r}: no rule in it. {GRAMMAR}")
        for piece in pieces:
            rule = piece if isinstance(piece, Rule) else parse_rule(piece)
            if rule not in rules:
                rules.append(rule)
    return tuple(rules)


def describe(rules: Iterable[Rule]) -> str:
    """The checks in force, as one line: ``regime, fits, intensity:10%, time:5%``."""
    return ", ".join([*BUILTIN, *(str(r) for r in rules)])

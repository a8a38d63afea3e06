"""Compare two reports: which results regressed, which are new, which vanished.

The figures in a report are analytic (FLOPs, bytes and peaks from formulas and spec sheets,
never timings), so a compare is exact and gives the same answer on any machine: a regime
change needs no noise threshold, and ``time:0%`` is a meaningful rule. Floats round-trip
through JSON exactly, so a report compared with itself shows no change at all.

Records are matched by :func:`pytest_roofline.records.key`: ``(nodeid, hw, dtype)``. When one
report holds several records with the same key (a test that adds two workloads on one chip),
they are matched in order, the second being keyed ``"nodeid #2"`` and so on.

Checks, in the order they are reported for each record (see :mod:`pytest_roofline.rules`):
the regime (always), the memory fit (always), then each rule given.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..engine.regimes import REGIMES
from ..errors import BaselineError
from ..fields import Record, RecordKey
from ..text_table import render
from ..units import format_time, si
from . import records as records_mod
from .records import Report
from .rules import METRICS, Rule, format_number, parse_rules
from .table import natural

Key = tuple[str, str, str]

#: Figures that make a record "changed" when they differ (and "unchanged" when none does).
FIGURES: tuple[RecordKey, ...] = (
    "regime", "flops", "bytes", "link_bytes", "intensity", "ridge", "time_s", "footprint_B",
    "fits")


def records_of(report: Report | Sequence[Record]) -> list[Record]:
    """The records of a report (a report mapping, or already a list of records)."""
    if isinstance(report, Mapping):
        results = report.get("results")
        if not isinstance(results, list):
            raise BaselineError("a roofline report needs a 'results' list of records")
        return list(results)
    return list(report)


def index(records: Iterable[Record]) -> dict[Key, Record]:
    """Records by key; repeated keys get ``" #2"``, ``" #3"`` ... appended to the nodeid."""
    out: dict[Key, Record] = {}
    seen: dict[Key, int] = {}
    for record in records:
        key = records_mod.key(record)
        count = seen.get(key, 0) + 1
        seen[key] = count
        if count > 1:
            key = (f"{key[0]} #{count}", key[1], key[2])
        out[key] = record
    return out


def where(key: Key) -> str:
    """``"h100-sxm (bf16)"``: the chip and precision of a key."""
    return f"{key[1]} ({key[2]})"


def label(key: Key) -> str:
    """``"tests/test_x.py::test_gemm on h100-sxm (bf16)"``."""
    return f"{key[0]} on {where(key)}"


@dataclass(frozen=True)
class Regression:
    """One broken check on one record: the baseline value, the new value and the rule."""

    key: Key
    rule: str  # "regime", "fits" or a rule as written, e.g. "intensity:10%"
    base: Any
    new: Any
    message: str  # starts with the chip and precision: "h100-sxm (bf16): ..."

    @property
    def nodeid(self) -> str:
        return self.key[0]

    @property
    def line(self) -> str:
        """The message with the test named: ``"tests/test_x.py::test_a: h100-sxm ..."``."""
        return f"{self.nodeid}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"nodeid": self.key[0], "hw": self.key[1], "dtype": self.key[2],
                "rule": self.rule, "base": self.base, "new": self.new,
                "message": self.message}


def _regime(record: Record) -> str | None:
    value = record.get("regime")
    return value if isinstance(value, str) and value in REGIMES else None


def _number(record: Record, name: RecordKey) -> float | None:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _bytes(value: float | None) -> str:
    return "unknown" if value is None else si(value, "B", digits=4)


def check_pair(key: Key, base: Record, new: Record,
               rules: Sequence[Rule]) -> list[Regression]:
    """Every check that *new* breaks against *base* (both records of *key*)."""
    found: list[Regression] = []
    prefix = f"{where(key)}: "
    old_regime, new_regime = _regime(base), _regime(new)
    if old_regime and new_regime and old_regime != new_regime:
        detail = ""
        old_i, new_i = _number(base, "intensity"), _number(new, "intensity")
        ridge = _number(new, "ridge")
        if old_i is not None and new_i is not None and ridge is not None:
            detail = (f"; intensity {format_number(old_i)} -> {format_number(new_i)} FLOP/B, "
                      f"ridge {format_number(ridge)} FLOP/B")
        found.append(Regression(
            key, "regime", old_regime, new_regime,
            f"{prefix}regime changed from {old_regime} to {new_regime}{detail} "
            f"(rule regime: a change of bottleneck always counts)"))
    if base.get("fits") is True and new.get("fits") is False:
        old_f, new_f = _number(base, "footprint_B"), _number(new, "footprint_B")
        found.append(Regression(
            key, "fits", True, False,
            f"{prefix}no longer fits in memory: footprint {_bytes(old_f)} -> {_bytes(new_f)}, "
            f"capacity {_bytes(_number(new, 'capacity_B'))} (rule fits)"))
    for rule in rules:
        message = rule.check(base, new)
        if message is not None:
            spec = rule.spec
            found.append(Regression(key, str(rule), spec.value(base), spec.value(new),
                                    prefix + message))
        if rule.metric == "efficiency":
            found += _kernel_regressions(key, base, new, rule)
    return found


def _profiles(record: Record) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for profile in record.get("profile") or ():
        if isinstance(profile, Mapping):
            out.setdefault(str(profile.get("hw")), []).append(profile)
    return out


def _kernel_regressions(key: Key, base: Record, new: Record, rule: Rule) -> list[Regression]:
    """The efficiency *rule* on each profiled kernel of *new* that *base* profiled too
    (matched by op, shapes and layout, :mod:`pytest_roofline.profiling.diff`): a kernel
    whose % of roof fell beyond the rule, and whose call slowed beyond the noise of both
    runs (their ticks and spreads), is a regression naming it."""
    old_profiles = _profiles(base)
    if not old_profiles:
        return []
    from ..profiling.diff import label_of, row_key, slower  # loaded when a test profiled

    found: list[Regression] = []
    for hw, profiles in _profiles(new).items():
        for old, now in zip(old_profiles.get(hw, []), profiles, strict=False):
            old_rows = {row_key(r): r for r in old.get("rows") or () if isinstance(r, Mapping)}
            ticks = (_tick(old), _tick(now))
            for row in now.get("rows") or ():
                before = old_rows.get(row_key(row)) if isinstance(row, Mapping) else None
                if before is None:
                    continue
                was, became = before.get("efficiency"), row.get("efficiency")
                if not isinstance(was, (int, float)) or not isinstance(became, (int, float)):
                    continue
                message = rule.check(_efficiency(was), _efficiency(became))
                if message is None or not slower(before, row, limit=0.0, base_tick=ticks[0],
                                                 new_tick=ticks[1]):
                    continue
                found.append(Regression(
                    key, str(rule), float(was), float(became),
                    f"{where(key)}: kernel {label_of(row_key(row))} on {hw}: {message}"))
    return found


def _efficiency(value: float) -> Record:
    return {"efficiency": float(value)}


def _tick(profile: Mapping[str, Any]) -> float:
    tick = profile.get("tick_s")
    return float(tick) if isinstance(tick, (int, float)) and not isinstance(tick, bool) \
        else 0.0


def check_record(baseline: Mapping[Key, Record], record: Record,
                 rules: Sequence[Rule] | Iterable[str] = ()) -> list[str]:
    """Failure messages of one new *record* against the baseline's records by key.

    For the pytest plugin, per test and chip: an empty list when the record passes or has no
    baseline (a new test is listed, never failed). *rules* may be Rule objects or strings.
    """
    key = records_mod.key(record)
    base = baseline.get(key)
    if base is None:
        return []
    return [r.message for r in check_pair(key, base, record, _rules(rules))]


def _rules(rules: Sequence[Rule] | Iterable[str]) -> tuple[Rule, ...]:
    items = list(rules)
    if all(isinstance(r, Rule) for r in items):
        return tuple(items)  # type: ignore[arg-type]
    return parse_rules(items)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Comparison:
    """The outcome of comparing a new report with a baseline."""

    rules: tuple[Rule, ...]
    regressions: tuple[Regression, ...]
    new: tuple[Key, ...]
    vanished: tuple[Key, ...]
    unchanged: tuple[Key, ...]  # compared, every figure identical
    changed: tuple[Key, ...]  # compared, some figure differs, no check broken
    warnings: tuple[str, ...] = ()
    base: str = ""  # what the baseline was (a name or a path), for messages
    pairs: tuple[tuple[Key, Record, Record], ...] = ()  # (key, baseline, new) of compared
    regressed: tuple[Key, ...] = field(init=False)

    def __post_init__(self) -> None:
        keys = dict.fromkeys(r.key for r in self.regressions)
        object.__setattr__(self, "regressed", tuple(keys))

    @property
    def failed(self) -> bool:
        """True when at least one record regressed."""
        return bool(self.regressions)

    @property
    def compared(self) -> int:
        """How many records were found in both reports."""
        return len(self.regressed) + len(self.unchanged) + len(self.changed)

    def for_test(self, nodeid: str) -> tuple[Regression, ...]:
        """The regressions of one test (every chip and precision)."""
        return tuple(r for r in self.regressions if r.key[0] == nodeid)

    def summary(self) -> str:
        """One line: ``"2 regressions in 1 of 10 results compared; 7 unchanged, ..."``."""
        n = len(self.regressions)
        head = (f"{n} regression{'s' if n != 1 else ''} in {len(self.regressed)} of "
                f"{self.compared} results compared" if n else
                f"no regression in {self.compared} results compared")
        return (f"{head}; {len(self.unchanged)} unchanged, {len(self.changed)} changed within "
                f"the rules; {len(self.new)} new, {len(self.vanished)} vanished")

    def lines(self, limit: int | None = None) -> list[str]:
        """A human report: regressions, warnings, new and vanished results, the summary.

        *limit* caps the new and vanished lists (regressions are always listed in full).
        """
        out: list[str] = []
        if self.regressions:
            out.append(f"Regressions ({len(self.regressions)}):")
            out.extend(f"  {r.line}" for r in self.regressions)
        if self.warnings:
            out.append(f"Warnings ({len(self.warnings)}):")
            out.extend(f"  {w}" for w in self.warnings)
        for title, keys in (("New since the baseline, not compared", self.new),
                            ("Vanished since the baseline", self.vanished)):
            if not keys:
                continue
            out.append(f"{title} ({len(keys)}):")
            shown = keys if limit is None else keys[:limit]
            out.extend(f"  {label(k)}" for k in shown)
            if len(shown) < len(keys):
                out.append(f"  ... and {len(keys) - len(shown)} more")
        out.append(self.summary())
        return out

    def to_dict(self) -> dict[str, Any]:
        def keys(items: Iterable[Key]) -> list[dict[str, str]]:
            return [{"nodeid": k[0], "hw": k[1], "dtype": k[2]} for k in items]

        return {
            "base": self.base,
            "rules": [str(r) for r in self.rules],
            "checks": ["regime", "fits", *(str(r) for r in self.rules)],
            "failed": self.failed,
            "regressions": [r.to_dict() for r in self.regressions],
            "new": keys(self.new), "vanished": keys(self.vanished),
            "unchanged": keys(self.unchanged), "changed": keys(self.changed),
            "warnings": list(self.warnings),
            "summary": self.summary(),
        }


def _setting(record: Record, report: Report | None,
             name: Literal["flops_per_mac", "derate"], default: float) -> float:
    value = record.get(name)
    if value is None and report is not None:
        value = (report.get("settings") or {}).get(name)
    return float(value) if isinstance(value, (int, float)) else default


def _warnings(pairs: Sequence[tuple[Key, Record, Record]],
              base_report: Report | Sequence[Record],
              new_report: Report | Sequence[Record]) -> list[str]:
    base_rep = base_report if isinstance(base_report, Mapping) else None
    new_rep = new_report if isinstance(new_report, Mapping) else None
    out: list[str] = []
    settings: tuple[tuple[Literal["flops_per_mac", "derate"], str], ...] = (
        ("flops_per_mac", "FLOPs per multiply-accumulate"), ("derate", "derate"))
    for name, what in settings:
        olds = {_setting(b, base_rep, name, 2.0 if name == "flops_per_mac" else 1.0)
                for _, b, _n in pairs}
        news = {_setting(n, new_rep, name, 2.0 if name == "flops_per_mac" else 1.0)
                for _, _b, n in pairs}
        if olds != news:
            out.append(f"the baseline used {what} {', '.join(f'{v:g}' for v in sorted(olds))}, "
                       f"this run {', '.join(f'{v:g}' for v in sorted(news))}: figures that "
                       f"depend on it are not like for like")
    ridges: dict[tuple[str, str], tuple[float, float]] = {}
    for key, base, new in pairs:
        old_r, new_r = _number(base, "ridge"), _number(new, "ridge")
        if old_r is not None and new_r is not None and old_r != new_r:
            ridges.setdefault((key[1], key[2]), (old_r, new_r))
    for (hw, dtype), (old_r, new_r) in sorted(ridges.items()):
        out.append(f"the ridge of {hw} ({dtype}) moved from {format_number(old_r)} to "
                   f"{format_number(new_r)} FLOP/B: the chip's spec differs between the runs")
    return out


def compare(base_report: Report | Sequence[Record],
            new_report: Report | Sequence[Record],
            rules: Sequence[Rule] | Iterable[str] = (), *, base: str = "") -> Comparison:
    """Compare *new_report* against *base_report* (reports, or lists of records).

    *rules* are Rule objects or rule strings (``"intensity:10%"``); the regime and memory-fit
    checks always apply. *base* names the baseline in messages.
    """
    rule_objs = _rules(rules)
    old = index(records_of(base_report))
    current = index(records_of(new_report))
    regressions: list[Regression] = []
    unchanged: list[Key] = []
    changed: list[Key] = []
    pairs: list[tuple[Key, Record, Record]] = []
    for key, record in current.items():
        if key not in old:
            continue
        base_record = old[key]
        pairs.append((key, base_record, record))
        found = check_pair(key, base_record, record, rule_objs)
        if found:
            regressions.extend(found)
        elif all(base_record.get(f) == record.get(f) for f in FIGURES):
            unchanged.append(key)
        else:
            changed.append(key)
    return Comparison(
        rules=rule_objs,
        regressions=tuple(regressions),
        new=tuple(k for k in current if k not in old),
        vanished=tuple(k for k in old if k not in current),
        unchanged=tuple(unchanged),
        changed=tuple(changed),
        warnings=tuple(_warnings(pairs, base_report, new_report)),
        base=base,
        pairs=tuple(pairs),
    )


# -- every result, old against new -----------------------------------------------------------

#: The figures of the side-by-side table and the CSV: (column, record field).
SIDE_BY_SIDE: tuple[tuple[str, RecordKey], ...] = (("FLOP/B", "intensity"), ("time", "time_s"))
CSV_FIGURES: tuple[RecordKey, ...] = (
    "flops", "bytes", "link_bytes", "intensity", "ridge", "time_s", "footprint_B")


def _delta(old: float | None, new: float | None) -> float | None:
    """The relative change new / old - 1, or None when it is not defined."""
    if old is None or new is None or old == 0:
        return None
    return new / old - 1


def _status(comparison: Comparison, key: Key) -> str:
    if key in comparison.regressed:
        return "REGRESSED"
    return "changed" if key in comparison.changed else "same"


def rows(comparison: Comparison,
         vanished: Mapping[Key, Record] | None = None) -> list[tuple[Key, Record | None,
                                                                   Record | None, str]]:
    """Every result: ``(key, baseline record, new record, status)``, regressions first, then
    changed, unchanged, new and vanished ones (*vanished*: the baseline's records by key)."""
    order = {"REGRESSED": 0, "changed": 1, "same": 2}
    compared = sorted(((k, b, n, _status(comparison, k)) for k, b, n in comparison.pairs),
                      key=lambda row: (order[row[3]], natural(row[0][0]), row[0][1:]))
    out: list[tuple[Key, Record | None, Record | None, str]] = list(compared)
    news = {k: n for k, _b, n in comparison.pairs}
    out += [(k, None, news.get(k), "new")
            for k in sorted(comparison.new, key=lambda k: (natural(k[0]), k[1:]))]
    out += [(k, (vanished or {}).get(k), None, "vanished")
            for k in sorted(comparison.vanished, key=lambda k: (natural(k[0]), k[1:]))]
    return out


def side_by_side(comparison: Comparison, base_report: Any, new_report: Any,
                 width: int | None = None) -> list[str]:
    """Every result old against new, as pytest-benchmark prints them: the chip, the regime,
    and each figure as ``old -> new`` with its relative change (intensity and time bound,
    plus the figure of every rule of the comparison).

    A narrow terminal first leaves out the figures no rule judges (the time bound counts as
    judged when no rule is given), then the changes of the judged ones, then gives each test
    id a line of its own; the chip and the old and new values of a judged figure always
    stay.
    """
    old_index = index(records_of(base_report))
    new_index = index(records_of(new_report))
    judged = [r.metric for r in comparison.rules]
    figures = [("FLOP/B", "intensity"), ("time", "time")]
    figures += [(METRICS[m].label if m != "efficiency" else "% roof", m)
                for m in dict.fromkeys(judged) if m not in ("intensity", "time")]
    table: list[list[str]] = []

    def show(metric: str, value: float | None) -> str:
        if value is None:
            return "-"
        if metric == "time":
            return format_time(value)
        return METRICS[metric].show(value) if metric != "intensity" else format_number(value)

    for key, _b, _n, status in rows(comparison, old_index):
        base, new = old_index.get(key), new_index.get(key)
        old_r, new_r = _regime(base or {}), _regime(new or {})
        cells = [key[0], where(key),
                 f"{old_r or '-'} -> {new_r or '-'}" if base and new and old_r != new_r
                 else (old_r or new_r or "-")]
        for _, metric in figures:
            old_v = METRICS[metric].value(base) if base else None
            new_v = METRICS[metric].value(new) if new else None
            change = _delta(old_v, new_v)
            cells += [f"{show(metric, old_v)} -> {show(metric, new_v)}",
                      "-" if change is None else f"{change:+.1%}"]
        table.append([*cells, status])
    headers = ["test", "chip", "regime"]
    for name, _ in figures:
        headers += [f"{name} old -> new", "+/-"]
    kept = set(judged) or {"time"}
    # a figure's change goes before its value, so that no change is shown without its value
    optional = [3 + 2 * k + j for k, (_, metric) in enumerate(figures)
                if metric not in kept for j in (1, 0)]
    optional += [4 + 2 * k for k, (_, metric) in enumerate(figures) if metric in kept]
    return render([*headers, "status"], table, align="lll" + "rr" * len(figures) + "l",
                  width=width, optional=optional,
                  # ids are never cut short on one line: the figures go first, then each id
                  # takes a line of its own, so that two ids cannot read the same
                  min_shrunk=max((len(row[0]) for row in table), default=16))


def to_csv(comparison: Comparison, base_report: Any, new_report: Any) -> str:
    """Every result old against new as CSV: figures in SI units, relative changes as
    fractions (0.1 = +10%), empty cells where a side has no value."""
    import csv
    old_index = index(records_of(base_report))
    new_index = index(records_of(new_report))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["nodeid", "hw", "dtype", "status", "regime_old", "regime_new"]
    for name in CSV_FIGURES:
        header += [f"{name}_old", f"{name}_new", f"{name}_change"]
    writer.writerow([*header, "fits_old", "fits_new"])

    def cell(value: Any) -> str:
        return "" if value is None else repr(value) if isinstance(value, float) else str(value)

    for key, _b, _n, status in rows(comparison, old_index):
        base, new = old_index.get(key), new_index.get(key)
        row = [key[0], key[1], key[2], status, (base or {}).get("regime", ""),
               (new or {}).get("regime", "")]
        for name in CSV_FIGURES:
            old_v = _number(base, name) if base else None
            new_v = _number(new, name) if new else None
            row += [cell(old_v), cell(new_v), cell(_delta(old_v, new_v))]
        row += [cell((base or {}).get("fits")), cell((new or {}).get("fits"))]
        writer.writerow(row)
    return buffer.getvalue()

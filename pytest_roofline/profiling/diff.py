"""Two profiles of the same work side by side: which kernels slowed, lost roof, appeared or
went.

A profile's JSON form (:meth:`.model.Profile.to_dict`, what ``--json`` prints and a test's
record carries) is what is compared, so a saved profile, a trace read again and a test's
baseline compare alike. Rows are matched by op, input shapes and layout (the strides that
tell two rows of one op apart), repeated keys in order. Per matched row: the time a call
takes (the row's measured time over its calls) and its % of roof, before and after.

**A slowdown counts only beyond the noise both runs allow**: a row regressed when a call's
time grew by more than the limit given *and* by more than the allowance of each side (the
efficiency rule's: the larger of one tick of its trace's clock per call and its fixed
fraction, widened by the row's spread up to its cap, :mod:`pytest_roofline.efficiency`),
so a 1 us tick read as a +17% regression, or a noisy row, never fails a gate. A row whose
time moved by less is "unchanged" even where its figure moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..efficiency import fraction
from ..efficiency import percent as percent_of
from ..text_table import escaped
from ..units import format_time

__all__ = ["ProfileDiff", "RowChange", "diff", "row_key", "slower"]

RowKey = tuple[str, str, str]


def row_key(row: Mapping[str, Any]) -> RowKey:
    """(op, shapes, layout): what matches a row of one profile to a row of another."""
    return (str(row.get("op", "?")), str(row.get("shapes") or ""),
            str(row.get("layout") or ""))


def label_of(key: RowKey) -> str:
    op, shapes, layout = key
    op = op.removeprefix("aten::").removeprefix("triton::")
    inner = "; ".join(part for part in (shapes, layout) if part)
    return escaped(f"{op}({inner})" if inner else op)


def per_call(row: Mapping[str, Any]) -> float | None:
    """Seconds a call of *row* took (its measured time over its calls); None without."""
    measured, count = row.get("measured_s"), row.get("count")
    if not isinstance(measured, (int, float)) or not isinstance(count, (int, float)) or \
            isinstance(measured, bool) or not count > 0:
        return None
    return float(measured) / float(count)


def _allowance(row: Mapping[str, Any], tick: float, seconds: float) -> float:
    spread = row.get("spread")
    spread = float(spread) if isinstance(spread, (int, float)) and not isinstance(
        spread, bool) else 0.0
    return max(tick, fraction(spread) * seconds)


def slower(base: Mapping[str, Any], new: Mapping[str, Any], *, limit: float,
           base_tick: float = 0.0, new_tick: float = 0.0) -> bool:
    """Whether a call of *new* takes more than *limit* (a fraction: 0.1 for 10%) longer
    than a call of *base*, beyond the allowance of both (see the module docstring)."""
    old, now = per_call(base), per_call(new)
    if old is None or now is None:
        return False
    grown = now - old
    return (grown > limit * old and grown > _allowance(base, base_tick, old)
            + _allowance(new, new_tick, now))


@dataclass(frozen=True)
class RowChange:
    """One row of both profiles (or of one: *base* or *new* None)."""

    key: RowKey
    base: Mapping[str, Any] | None
    new: Mapping[str, Any] | None
    regressed: bool = False

    @property
    def label(self) -> str:
        return label_of(self.key)

    @property
    def time_change(self) -> float | None:
        """The relative change of a call's time (+0.5: 50% slower); None unless both."""
        if self.base is None or self.new is None:
            return None
        old, now = per_call(self.base), per_call(self.new)
        if old is None or now is None or not old > 0:
            return None
        return now / old - 1

    def to_dict(self) -> dict[str, Any]:
        def side(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
            if row is None:
                return None
            return {"call_s": per_call(row), "efficiency": row.get("efficiency"),
                    "cell": row.get("cell"), "count": row.get("count"),
                    "kernels": row.get("kernels")}

        return {"op": self.key[0], "shapes": self.key[1], "layout": self.key[2],
                "label": self.label, "base": side(self.base), "new": side(self.new),
                "time_change": self.time_change, "regressed": self.regressed}


def _index(rows: Iterable[Mapping[str, Any]]) -> dict[RowKey, Mapping[str, Any]]:
    out: dict[RowKey, Mapping[str, Any]] = {}
    seen: dict[RowKey, int] = {}
    for row in rows:
        key = row_key(row)
        n = seen[key] = seen.get(key, 0) + 1
        out[key if n == 1 else (key[0], key[1], f"{key[2]} #{n}".strip())] = row
    return out


@dataclass(frozen=True)
class ProfileDiff:
    """What changed between a baseline profile and a new one."""

    base: str  # what the baseline was (its source)
    new: str
    limit: float | None  # the regression limit (a fraction), None: report only
    changes: tuple[RowChange, ...]  # matched rows, most slowed first
    appeared: tuple[RowChange, ...]
    gone: tuple[RowChange, ...]

    @property
    def regressions(self) -> tuple[RowChange, ...]:
        return tuple(c for c in self.changes if c.regressed)

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    def lines(self, top: int = 10) -> list[str]:
        """The text report: a line per regressed row, then the most changed, then the rows
        new and gone."""
        limit = "" if self.limit is None else f", gate: a call slower by > {self.limit:.0%}"
        out = [f"{escaped(self.new)} against {escaped(self.base)}: {len(self.changes)} "
               f"kernels in both, {len(self.appeared)} new, {len(self.gone)} gone{limit}"]
        for change in self.regressions:
            out.append(f"REGRESSED: {_line(change)}")
        moved = [c for c in self.changes if not c.regressed and abs(c.time_change or 0) > 1e-9]
        out += [f"  {_line(c)}" for c in moved[:top]]
        still = len(self.changes) - len(self.regressions) - len(moved)
        if still:
            out.append(f"  {still} kernels took the same time a call")
        out += [f"  new: {c.label}" for c in self.appeared[:top]]
        out += [f"  gone: {c.label}" for c in self.gone[:top]]
        return out

    def markdown(self, top: int = 20) -> str:
        """A Markdown diff for a pull request's comment."""
        verdict = ("**regressed**" if self.failed else "no regression") if \
            self.limit is not None else "compared"
        lines = [f"### Kernels: {_md(self.new)} against {_md(self.base)}", "",
                 f"{len(self.changes)} kernels in both, {len(self.appeared)} new, "
                 f"{len(self.gone)} gone: {verdict}"
                 + ("" if self.limit is None else f" (a call slower by more than "
                                                  f"{self.limit:.0%}, beyond noise)"), "",
                 "| kernel | call before | call after | change | % roof before | "
                 "% roof after | |", "|---|---:|---:|---:|---:|---:|---|"]
        for c in [*self.regressions, *[c for c in self.changes if not c.regressed]][:top]:
            before, after = per_call(c.base or {}), per_call(c.new or {})
            change = c.time_change
            lines.append(
                f"| `{_md(c.label)}` | {_time(before)} | {_time(after)} | "
                f"{'-' if change is None else f'{change:+.1%}'} | "
                f"{_cell(c.base)} | {_cell(c.new)} | {'regressed' if c.regressed else ''} |")
        for c in self.appeared[:top]:
            lines.append(f"| `{_md(c.label)}` | - | {_time(per_call(c.new or {}))} | new | - | "
                         f"{_cell(c.new)} | |")
        for c in self.gone[:top]:
            lines.append(f"| `{_md(c.label)}` | {_time(per_call(c.base or {}))} | - | gone | "
                         f"{_cell(c.base)} | - | |")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "new": self.new, "limit": self.limit,
                "failed": self.failed,
                "regressions": [c.to_dict() for c in self.regressions],
                "changes": [c.to_dict() for c in self.changes],
                "new_rows": [c.to_dict() for c in self.appeared],
                "gone_rows": [c.to_dict() for c in self.gone]}


def _md(text: str) -> str:
    return escaped(text).replace("|", "\\|").replace("`", "'")


def _time(seconds: float | None) -> str:
    return "-" if seconds is None else str(format_time(seconds))


def _cell(row: Mapping[str, Any] | None) -> str:
    if row is None:
        return "-"
    cell = row.get("cell")
    if isinstance(cell, str) and cell:
        return cell
    value = row.get("efficiency")
    return percent_of(float(value)) if isinstance(value, (int, float)) else "-"


def _line(change: RowChange) -> str:
    before, after = per_call(change.base or {}), per_call(change.new or {})
    moved = change.time_change
    return (f"{change.label}: {_time(before)} -> {_time(after)} a call"
            + ("" if moved is None else f" ({moved:+.1%})")
            + f", % roof {_cell(change.base)} -> {_cell(change.new)}")


def _tick(profile: Mapping[str, Any]) -> float:
    tick = profile.get("tick_s")
    return float(tick) if isinstance(tick, (int, float)) and not isinstance(tick, bool) and \
        tick >= 0 else 0.0


def diff(base: Mapping[str, Any], new: Mapping[str, Any], *,
         limit: float | None = None) -> ProfileDiff:
    """*new* (a profile's JSON form) against *base*: see the module docstring. *limit*: the
    fraction a call may slow down by (None: report, fail nothing)."""
    old_rows, new_rows = _index(_rows(base)), _index(_rows(new))
    base_tick, new_tick = _tick(base), _tick(new)
    changes: list[RowChange] = []
    for key, row in new_rows.items():
        old = old_rows.get(key)
        if old is None:
            continue
        regressed = limit is not None and slower(old, row, limit=limit, base_tick=base_tick,
                                                 new_tick=new_tick)
        changes.append(RowChange(key, old, row, regressed))
    changes.sort(key=lambda c: (not c.regressed, -(c.time_change or 0.0), c.label))
    appeared = tuple(RowChange(k, None, r) for k, r in new_rows.items() if k not in old_rows)
    gone = tuple(RowChange(k, r, None) for k, r in old_rows.items() if k not in new_rows)
    return ProfileDiff(base=str(base.get("source", "baseline")),
                       new=str(new.get("source", "new")), limit=limit,
                       changes=tuple(changes), appeared=appeared, gone=gone)


def _rows(profile: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    rows = profile.get("rows")
    return [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []

"""Verdicts: an Expectation and the analysis Results of a workload -> pass, fail, and why.

A failure is one line that states what was expected, what came out and why, e.g.::

    expected compute-bound on h100-sxm (bf16), but intensity 31.8 FLOP/B < ridge 295.2 FLOP/B:
    memory-bound. Compute-bound from m >= 319.

The regime margin: with ``margin=0.1`` a regime assertion passes only when the winning
resource needs at least 10% more time than the strongest resource outside the allowed
regimes. For one kernel those are the kernel's compute, memory and link times (so
compute-bound needs intensity >= 1.1 x ridge, memory-bound intensity <= ridge / 1.1); for a
program of several kernels they are the shares of time each resource bounds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import fields as F
from .. import units
from ..engine.analysis import Result, Timed, analyze
from ..engine.breakdown import format_breakdown
from ..engine.regimes import REGIMES
from ..engine.sweeps import knob_hint
from ..engine.workload import Workload, describe_unknown, holds_arrays
from ..errors import RooflineError
from ..fields import Record
from ..hardware import foreign_to_this_machine
from ..report.records import record_fields
from ..text_table import wrap_line
from .marker import Expectation

if TYPE_CHECKING:
    from ..hardware import Hardware


@dataclass(frozen=True)
class Check:
    """The verdict on one chip: its Result and the failed expectations (one line each)."""

    result: Result
    failures: tuple[str, ...]
    checked: bool
    #: the spread of the measurement its verdict allowed for: the breakdown judges with it
    spread: float = 0.0

    @property
    def outcome(self) -> str:
        """``failed``, ``passed``, or ``report`` when nothing was asserted."""
        if self.failures:
            return "failed"
        return "passed" if self.checked else "report"

    @property
    def message(self) -> str:
        return " ".join(self.failures)

    def with_failures(self, extra: Sequence[str]) -> Check:
        """This check with more failed lines (from a ``pytest_roofline_result`` hook)."""
        return Check(self.result, (*self.failures, *extra), True, self.spread)


class Judgement:
    """A workload's verdict on every chip, as plain data: its checks, and their records'
    fields as ``(hw, fields)`` pairs (each record without ``nodeid`` and ``hw``, JSON types
    only); *error* instead when nothing could be judged. Every test sharing a marker and its
    workload shares one Judgement: the plugin turns its fields into test-report properties."""

    __slots__ = ("_texts", "checks", "error", "fields", "unpriced")

    def __init__(self, error: str | None = None, checks: tuple[Check, ...] = (),
                 fields: list[tuple[str, Record]] | None = None,
                 unpriced: tuple[str, ...] = ()) -> None:
        self.error = error
        self.checks = checks
        # the checks' fields in order, then an error (or skipped) row per chip that cannot
        # price the workload
        self.fields = fields or []
        self.unpriced = unpriced  # the failed lines of those chips (not the skipped ones)
        self._texts: list[str] | None = None

    def texts(self) -> list[str]:
        """Each record ``[hw, fields]`` as JSON text, written once for every test sharing
        this Judgement (what a pytest-xdist worker's call report carries)."""
        if self._texts is None:
            self._texts = [json.dumps((hw, fields), allow_nan=True)
                           for hw, fields in self.fields]
        return self._texts

    @property
    def records(self) -> list[Record]:
        """The JSON records of the checks, without ``nodeid`` (``hw`` first)."""
        return [{"hw": hw, **fields} for hw, fields in self.fields]


def judge(expectation: Expectation, workload: Workload | None, *, flops_per_mac: int = 2,
          derate: float = 1.0,
          analyzed: Callable[[], Sequence[Result | str]] | None = None,
          spread: float = 0.0, other_cores: float | None = None,
          measured_by: str | None = None, method: str | None = None,
          notes: Sequence[str] = ()) -> Judgement:
    """Analyze *workload* on the expectation's chips (or take *analyzed*'s results) and
    judge it. Problems that stop the analysis become :attr:`Judgement.error`. *spread* is
    the relative spread of a measurement the results carry; *other_cores*, the cores other
    processes kept busy while it was timed (recorded as ``measured_other_cores``);
    *measured_by*, where that time came from (``measured_by``); *method* and *notes*, how a
    GPU call was timed and what its figures are read with (``measured_method``,
    ``measured_notes``)."""
    if workload is None:
        return Judgement("roofline: the test declared no workload: call roofline.add(...) in "
                         "the test, or pass workload= or flops=/bytes= to the marker")
    unpriced: list[tuple[str, str]] = []  # (chip, why) of the chips that cannot price it
    try:
        each = list(analyzed()) if analyzed is not None else analyze_each(
            expectation, workload, flops_per_mac=flops_per_mac, derate=derate)
        results = tuple(r for r in each if isinstance(r, Result))
        unpriced = [(chip.name, r) for chip, r in zip(expectation.hw, each, strict=True)
                    if isinstance(r, str)]
    except RooflineError as exc:
        return Judgement(f"roofline: {exc}")
    if not results:  # no chip can price it: each still has its row in the reports
        return _unpriced(expectation, workload, unpriced, None, alone=True)
    checks = evaluate(expectation, workload, results, flops_per_mac=flops_per_mac,
                      derate=derate, spread=spread, other_cores=other_cores)
    judged: list[tuple[str, Record]] = []
    label = expectation.label
    note = describe_unknown(workload.unknown)
    if note:  # ops without a formula: said in the failure line, the message and the record
        checks = tuple(c if not c.failures else Check(
            c.result, (*c.failures[:-1], f"{c.failures[-1]} ({note})"), c.checked, c.spread)
            for c in checks)
    for check in checks:
        # Results of analyze() hold floats, bools, None and text only
        # (test_judged_properties_hold_json_types_only), so the fields need no conversion:
        # the property is these fields themselves.
        fields = record_fields(check.result, expectation.regime, check.outcome, check.message)
        hw = fields.pop("hw")
        fields[F.EXPECTATION] = label
        if note:
            fields[F.UNKNOWN] = dict(workload.unknown)
            fields[F.MESSAGE] = fields[F.MESSAGE] or note
        if check.result.measured is not None:
            from ..measuring.diagnose import judged as judged_by

            fields[F.MEASURED_SPREAD] = float(spread)
            if measured_by is not None:
                fields[F.MEASURED_BY] = measured_by
            from .mfu import mfu

            utilization = mfu(check.result, workload)
            if utilization is not None:
                fields[F.MFU] = utilization
            if other_cores is not None:
                fields[F.MEASURED_OTHER_CORES] = round(float(other_cores), 2)
            if method is not None:
                fields[F.MEASURED_METHOD] = method
            if notes:
                fields[F.MEASURED_NOTES] = list(notes)
            verdict = judged_by(check.result, spread)
            measured_note = None if verdict is None else verdict.note
            if measured_note is not None:  # faster than the bound, at it, or no work
                fields[F.MEASURED_NOTE] = measured_note
        judged.append((hw, fields))
    # the precision the other chips priced it in
    return _unpriced(expectation, workload, unpriced, results[0].dtype, checks=checks,
                     judged=judged)


def _unpriced(expectation: Expectation, workload: Workload, unpriced: list[tuple[str, str]],
              dtype: str | None, *, alone: bool = False, checks: tuple[Check, ...] = (),
              judged: list[tuple[str, Record]] | None = None) -> Judgement:
    """The judgement with an error row (``skipped`` under ``optional_hw``) for each chip
    that cannot price the workload. When *alone* (no chip can), the test fails even where
    every chip is optional: nothing was judged."""
    judged = list(judged or [])
    failures = []
    if dtype is None:  # the precision the kernels name, as the ridge would take it; where
        # none names one, said so in words: the record's dtype is text a reader requires
        dtype = expectation.dtype or next(
            (k.dtype for k in workload.kernels if k.unit == "matrix" and k.dtype), "unknown")
    for chip, why in unpriced:
        skipped = chip in expectation.optional_hw
        judged.append((chip, {
            "workload": workload.name, "dtype": dtype,
            F.EXPECTED: expectation.expected, F.OUTCOME: "skipped" if skipped else "error",
            F.MESSAGE: why + (" (skipped: optional_hw)" if skipped else ""),
            F.EXPECTATION: expectation.label}))
        if alone and not skipped:
            failures.append(why)
        elif not skipped:
            failures.append(f"{why}; the other chips are judged as usual (optional_hw= lets "
                            f"a chip that cannot price the workload be skipped)")
    if alone and not failures:
        failures.append(f"{unpriced[0][1]}; no chip of the test can price the workload, so "
                        f"nothing was judged")
    return Judgement(None, checks, judged, tuple(failures))


def num(value: Any) -> str:
    """A FLOP/B figure for messages: ``31.8``, ``295.2``, ``0.25``."""
    return units.flop_per_byte(value)


def analyze_all(expectation: Expectation, workload: Workload, *, flops_per_mac: int = 2,
                derate: float = 1.0, measured: float | Timed | None = None,
                here_only: bool = False) -> tuple[Result, ...]:
    """The workload analyzed on every chip of the expectation, in order (*measured*: seconds
    a timed run took, or its Measurement, compared with every chip's bound; *here_only*: see
    :func:`analyze_each`); the first chip that cannot price it raises."""
    results = []
    for result in analyze_each(expectation, workload, flops_per_mac=flops_per_mac,
                               derate=derate, measured=measured, here_only=here_only):
        if isinstance(result, str):
            raise RooflineError(result)
        results.append(result)
    return tuple(results)


def analyze_each(expectation: Expectation, workload: Workload, *, flops_per_mac: int = 2,
                 derate: float = 1.0, measured: float | Timed | None = None,
                 here_only: bool = False) -> list[Result | str]:
    """The workload analyzed on each chip of the expectation, in order: a Result, or the
    line saying why that chip cannot price it (a precision it lacks). A sweep raises.

    *here_only*: the measurement is one the test did not ask to be judged by (the rounds of
    pytest-benchmark, which times every benchmark wherever it runs): it is set against the
    chips this machine is (``host``, a GPU it holds, the user's own spec) and the other chips
    are judged on the workload alone, where a measurement the test asked for
    (``roofline.measure``) against them is refused."""
    results: list[Result | str] = []
    for chip in expectation.hw:
        timed = measured
        if here_only and measured is not None and foreign_to_this_machine(chip) is not None:
            timed = None
        try:
            result = analyze(workload, chip, expectation.dtype, flops_per_mac=flops_per_mac,
                             derate=derate, sparse=expectation.sparse, measured=timed)
        except RooflineError as exc:
            if holds_arrays(workload):
                raise RooflineError(f"workload {workload.name!r} holds arrays (a sweep); a "
                                    f"test checks one workload at a time: sweep() takes "
                                    f"arrays") from None
            results.append(f"cannot analyze {workload.name!r} on {chip.name}: {exc}")
            continue
        if timed is not None and not isinstance(timed, (int, float)):
            result = _against_fresh_roof(workload, chip, expectation, result, timed,
                                         flops_per_mac=flops_per_mac, derate=derate)
        results.append(result)
    return results


def _against_fresh_roof(workload: Workload, chip: Hardware, expectation: Expectation,
                        result: Result, measured: Timed, *, flops_per_mac: int,
                        derate: float) -> Result:
    """*result*, or the measurement judged against the roof it ran with, a note saying so:
    where it shows *chip*'s calibrated roof to be stale (it beat the bound, or ran on a
    machine quieter than the calibration's), the roof measured again now
    (``measuring.recheck``); where a single-threaded call got only part of a core on a
    saturated machine, that share of the 1-thread roof (``measuring.share``)."""
    from ..measuring.recheck import refreshed
    from ..measuring.share import starved

    notes: list[str] = []
    # each roof the result leans on in turn (a fresher GEMM peak may make it memory-bound),
    # then a starved call's share of a core
    for adjust in (refreshed, refreshed, starved):
        changed = adjust(result, chip, measured)
        if changed is None:
            continue
        chip, note = changed
        notes.append(note)
        again = analyze(workload, chip, expectation.dtype, flops_per_mac=flops_per_mac,
                        derate=derate, sparse=expectation.sparse, measured=measured)
        result = again._replace(hw=result.hw, notes=(*again.notes, *notes))
    return result


def evaluate(expectation: Expectation, workload: Workload, results: Sequence[Result], *,
             flops_per_mac: int = 2, derate: float = 1.0,
             spread: float = 0.0, other_cores: float | None = None) -> tuple[Check, ...]:
    """One :class:`Check` per Result, each listing the expectations that do not hold."""
    return tuple(
        Check(r, tuple(_failures(expectation, workload, r, flops_per_mac, derate)
                       + _measured_failures(expectation, r, spread, other_cores)),
              expectation.checks, spread)
        for r in results)


def _measured_failures(exp: Expectation, r: Result, spread: float,
                       other_cores: float | None = None) -> list[str]:
    """Measured figures are asserted only with min_efficiency (never by default); a failure
    says when the call was timed (*other_cores* busy beside it) or its chip calibrated
    under load."""
    if exp.min_efficiency is None:
        return []
    if r.measured is None:
        return [f"min_efficiency={exp.min_efficiency:g} needs a measurement on {r.hw}: time "
                f"the kernel with roofline.measure(fn, *args) in the test."]
    from ..measuring.diagnose import efficiency_failure, explain_faster, is_faster

    if is_faster(r, spread):
        chip = next((c for c in exp.hw if c.name == r.hw), None)
        from ..measuring.recheck import recheck  # a calibration's roof, measured again

        return [explain_faster(r, chip, spread, recheck(r, chip) if chip else None,
                               other_cores=other_cores)]
    chip = next((c for c in exp.hw if c.name == r.hw), None)
    line = efficiency_failure(r, exp.min_efficiency, spread, chip=chip,
                              other_cores=other_cores)
    return [line] if line else []


def _where(r: Result) -> str:
    return f"on {r.hw} ({r.dtype})"


def _failures(exp: Expectation, workload: Workload, r: Result, flops_per_mac: int,
              derate: float) -> list[str]:
    # the lines are written only for the expectations that fail: most tests pass
    out: list[str] = []
    if exp.regime is not None:
        line = _regime_failure(exp, workload, r, flops_per_mac, derate)
        if line:
            out.append(line)
    if exp.min_intensity is not None and not r.intensity >= exp.min_intensity:
        out.append(f"expected intensity >= {num(exp.min_intensity)} FLOP/B {_where(r)}, but "
                   f"it is {num(r.intensity)} FLOP/B.")
    if exp.max_intensity is not None and not r.intensity <= exp.max_intensity:
        out.append(f"expected intensity <= {num(exp.max_intensity)} FLOP/B {_where(r)}, but "
                   f"it is {num(r.intensity)} FLOP/B.")
    if exp.max_time is not None and not r.time <= exp.max_time:
        out.append(f"expected a roofline time bound <= {units.format_time(exp.max_time)} "
                   f"{_where(r)}, but it is {units.format_time(float(r.time))} "
                   f"({r.regime}-bound).")
    if exp.fits is not None:
        line = _fits_failure(exp.fits, r, workload.hint, workload)
        if line:
            out.append(line)
    return out


def _want(regimes: Sequence[str]) -> str:
    if len(regimes) == 1:
        return f"{regimes[0]}-bound"
    return " or ".join(f"{x}-" for x in regimes[:-1]) + f" or {regimes[-1]}-bound"


def measures(r: Result) -> dict[str, float]:
    """What decides the regime: a kernel's resource times, or a program's shares of time."""
    if len(r.kernels) == 1:
        return {k: float(v) for k, v in r.bound_times.items()}
    return {k: float(v) for k, v in r.shares.items()}


def _by_intensity(r: Result, regimes: Sequence[str]) -> bool:
    """True when "intensity vs ridge" explains the regime exactly (one matrix kernel)."""
    if len(r.kernels) != 1 or not set(regimes) <= {"compute", "memory"}:
        return False
    kernel = r.kernels[0]
    return kernel.peak_label.startswith(("matrix", "sparse")) and kernel.peak == r.peak \
        and r.t_network == 0


def _why(r: Result, wanted: Sequence[str]) -> str:
    got = r.regime
    if _by_intensity(r, [*wanted, got]):
        sign = "<" if got == "memory" else ">="
        return f"intensity {num(r.intensity)} FLOP/B {sign} ridge {num(r.ridge)} FLOP/B"
    fmt = units.format_time
    m = measures(r)
    if len(r.kernels) == 1:
        others = [x for x in REGIMES if x != got and (m[x] > 0 or x in wanted)]
        return f"{got} time {fmt(m[got])} > " + " and ".join(f"{x} {fmt(m[x])}" for x in others)
    total = float(r.time) or 1.0
    rest = ", ".join(f"{x} {m[x] / total:.0%}" for x in wanted)
    return (f"{got}-bound kernels take {m[got] / total:.0%} of the {fmt(float(r.time))} time bound "
            f"({rest})")


def _regime_failure(exp: Expectation, workload: Workload, r: Result,
                    flops_per_mac: int, derate: float) -> str | None:
    allowed = exp.regime or REGIMES
    if r.regime not in allowed:
        line = (f"expected {_want(allowed)} {_where(r)}, but {_why(r, allowed)}: "
                f"{r.regime}-bound.")
        hint = _hint(workload, r, allowed, exp, flops_per_mac, derate)
        return f"{line} {hint[0].upper()}{hint[1:]}." if hint else line
    if exp.margin <= 0:
        return None
    rivals = [x for x in REGIMES if x not in allowed]
    if not rivals:
        return None
    m = measures(r)
    rival = max(rivals, key=lambda x: m[x])
    won, lost = m[r.regime], m[rival]
    if lost <= 0 or won >= lost * (1 + exp.margin):
        return None
    band = f"{exp.margin:.0%}"
    if _by_intensity(r, [r.regime, rival]):
        detail = (f"intensity {num(r.intensity)} FLOP/B is within {band} of ridge "
                  f"{num(r.ridge)} FLOP/B")
    elif len(r.kernels) == 1:
        fmt = units.format_time
        detail = (f"{r.regime} time {fmt(won)} is within {band} of {rival} time {fmt(lost)}")
    else:
        total = float(r.time) or 1.0
        detail = (f"{r.regime}-bound kernels take {won / total:.0%} of the time and "
                  f"{rival}-bound ones {lost / total:.0%}, within {band}")
    return (f"expected {_want(allowed)} {_where(r)}, but {detail}: too close to call "
            f"(margin={band}).")


def _hint(workload: Workload, r: Result, allowed: Sequence[str], exp: Expectation,
          flops_per_mac: int, derate: float) -> str | None:
    if workload.knob is None:
        return None
    chip = next((c for c in exp.hw if c.name == r.hw), r.hw)
    for regime in allowed:
        hint = knob_hint(workload, chip, regime, exp.dtype, flops_per_mac=flops_per_mac,
                         derate=derate, sparse=exp.sparse)
        if hint:
            return hint
    return None


def _fits_failure(wanted: bool, r: Result, hint: str = "",
                  workload: Workload | None = None) -> str | None:
    if r.fits is None:
        return (f"expected the footprint {'' if wanted else 'not '}to fit in {r.hw} memory, "
                f"but the workload declares no footprint (footprint= in the marker, or a "
                f"model workload).")
    if bool(r.fits) == wanted:
        return None
    need = f"it needs {units.si(float(r.footprint), 'B')} of {units.si(r.capacity, 'B')}"
    why = f" ({hint})" if hint and wanted else ""
    knob = _fitting_knob(workload, r.capacity) if wanted and workload is not None else ""
    return f"expected the footprint {'' if wanted else 'not '}to fit in {r.hw} memory, " \
           f"but {need}{why}.{knob}"


def _fitting_knob(workload: Workload, capacity: float) -> str:
    """`` It fits up to batch = 119.`` (the largest value of the workload's size knob whose
    footprint fits, by bisection: footprints grow with sizes), else the fewest chips whose
    memory could hold it at all (footprint over capacity, before any sharding overhead)."""
    footprint = float(workload.footprint)
    chips = max(2, math.ceil(footprint / capacity)) if capacity > 0 else 0
    at_least = (f" The fewest chips that could hold it: {chips} ({chips} x "
                f"{units.si(capacity, 'B')}, before any sharding overhead)." if chips else "")
    knob = workload.knob
    if knob is None or knob.value <= knob.lo:
        return at_least

    def fits(x: int) -> bool:
        try:
            return float(knob.build(x).footprint) <= capacity
        except RooflineError:
            return False

    if not fits(knob.lo):
        return f" It does not fit even at {knob.name} = {knob.lo}.{at_least}"
    lo, hi = knob.lo, knob.value  # fits(lo), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return f" It fits up to {knob.name} = {lo}.{at_least}"


def breakdown(checks: Sequence[Check], width: int | None = None) -> str:
    """The figures behind the verdicts, for the test's report section (in *width* columns
    when given: sentences and verdicts wrapped, the kernel table fitted; a ``FAIL:`` line's
    continuations indented under its verdict)."""
    fmt, si = units.format_time, units.si
    blocks = []
    for check in checks:
        r = check.result
        network = float(r.link_bytes) > 0
        links = f", links {si(float(r.link_bytes), 'B')}" if network else ""
        lines = [
            f"{r.hw} ({r.dtype}), workload {r.workload!r}: {check.outcome}",
            f"  FLOPs {si(float(r.flops), 'FLOP')}, memory {si(float(r.bytes), 'B')}{links}; "
            f"intensity {num(r.intensity)} FLOP/B, ridge {num(r.ridge)} FLOP/B "
            f"({r.flops_per_mac} FLOPs/MAC, derate {r.derate:g})",
            f"  time bound {fmt(float(r.time))} ({r.regime}-bound): compute "
            f"{fmt(float(r.t_compute))}, memory {fmt(float(r.t_memory))}"
            + (f", network {fmt(float(r.t_network))}" if network else ""),
        ]
        if r.fits is not None:
            lines.append(f"  footprint {si(float(r.footprint), 'B')} of "
                         f"{si(r.capacity, 'B')}: {'fits' if r.fits else 'does not fit'}")
        if r.measured is not None:
            from ..measuring.diagnose import judged, roof_threads_note

            verdict = judged(r, check.spread)
            reached = verdict.describe() if r.efficiency is None and verdict is not None \
                else f"{float(r.efficiency or 0):.1%} of the roof"
            lines.append(f"  measured {fmt(float(r.measured))}: {reached}"
                         + roof_threads_note(r))
        if len(r.kernels) > 1:
            lines.extend("  " + line for line in format_breakdown(
                r, width=None if width is None else width - 2))
        if width is not None:  # the figures wrap, their continuations indented 2 more
            lines = [part for line in lines for part in wrap_line(line, width)]
        for failure in check.failures:  # continued under the verdict, past "FAIL: "
            lines.extend(wrap_line(f"  FAIL: {failure}", width, hang=len("FAIL: ")))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"

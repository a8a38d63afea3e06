"""The one file format of pytest-roofline: JSON reports, which are also baselines.

A report is a JSON object::

    {
      "format": "pytest-roofline",      # identifies our files
      "version": 1,                     # bumped on incompatible changes
      "datetime": "2026-11-22T00:00:00+00:00",
      "pytest_roofline_version": "0.1.0",
      "machine": {"python": "3.11.7", "platform": "...", "node": "..."},
      "settings": {"flops_per_mac": 2, "derate": 1.0},
      "results": [RECORD, ...]
    }

and each RECORD is the roofline of one test on one chip (figures in SI units)::

    {
      "nodeid": "tests/test_x.py::test_gemm",  "hw": "h100-sxm",  "dtype": "bf16",
      "workload": "matmul(4096x4096x4096, bf16)",
      "flops": 1.37e11, "bytes": 1.0e8, "link_bytes": 0.0,       # FLOP, B, B
      "intensity": 1365.3, "ridge": 295.3,                       # FLOP/B
      "dram_intensity": 1365.3,        # = intensity: FLOPs over DRAM bytes, after on-chip reuse
      "tensor_bytes": 1.0e8,           # every byte the kernels read and write, on chip or not
      "workload_intensity": 1365.3,    # FLOPs over tensor_bytes: the same on every chip
      "regime": "compute",                                       # compute | memory | network
      "time_s": 1.39e-4, "t_compute_s": ..., "t_memory_s": ..., "t_network_s": ...,
      "attainable_flops": 9.89e14,                               # FLOP/s
      "footprint_B": 1.0e8, "capacity_B": 8.0e10, "fits": true,  # fits: null when unknown
      "flops_per_mac": 2, "derate": 1.0,                         # the conventions in force
      "peak_label": "matrix:bf16",     # the peak the ridge uses (vector:fp32: CUDA cores)
      "expected": ["compute"],         # allowed regimes; null: no regime asserted
      "expectation": "compute",        # the summary's label of every check
      "outcome": "passed",             # passed | failed | report (nothing asserted)
                                       # | error / skipped: the chip cannot price it
      "message": ""                    # the failure lines, if any
    }

A test that timed its kernel (``roofline.measure()``) adds ``"measured_s"`` (the median time,
s), ``"efficiency"`` (roofline time / measured time), ``"measured_spread"`` (IQR / median),
``"measured_by"`` (where the time came from: ``"roofline.measure median"``,
``"pytest-benchmark median"``), ``"measured_other_cores"`` (the cores other processes kept
busy meanwhile, where known), ``"measured_method"`` and ``"measured_notes"`` (how a call on
a GPU was timed, ``"cuda-events, L2 flushed"``, and what its figures are read with: a
throttled clock, a launch-bound call),
``"roof_threads"`` (when the memory roof of that many threads of a calibrated CPU was used)
and, when the run is above its bound (no efficiency then, never a clamped 1), a
``"measured_note"``: ``"faster-than-bound"`` beyond its physical limit by more than its
allowance for noise (``"limit_s"``, :mod:`pytest_roofline.engine.limits`), ``"above-roof"``
above its bound within that limit (a finding), ``"at-bound"`` above it within the allowance
(:mod:`pytest_roofline.efficiency`), or ``"no-work"`` for a bound of 0.

Fields added by a ``pytest_roofline_result`` hook travel with the record. Records are keyed
by ``(nodeid, hw, dtype)`` when compared against a baseline.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from ..engine.regimes import REGIMES
from ..errors import BaselineError, brief
from ..fields import (
    EXPECTED,
    MESSAGE,
    NUMBERS,
    OPTIONAL_NUMBERS,
    OUTCOME,
    REQUIRED,
    STRINGS,
    TEXTS,
    UNPRICED_REQUIRED,
    Record,
)
from ..specfiles import check_shape, is_file, read_text
from ..version import __version__

if TYPE_CHECKING:
    from ..engine.analysis import Result

FORMAT = "pytest-roofline"
VERSION = 1
#: The outcomes of a chip that cannot price the workload (a precision it lacks): ``error``,
#: or ``skipped`` when the marker's ``optional_hw=`` allows it. Such a record has no figures:
#: ``nodeid``, ``hw``, ``dtype``, ``workload``, ``outcome`` and the ``message`` saying why.
UNPRICED = ("error", "skipped")


class _Results(TypedDict):
    format: str
    version: int
    results: list[Record]


class Report(_Results, total=False):
    """A report, as :func:`make_report` writes it and :func:`load_report` reads it (the
    fields other than ``format``, ``version`` and ``results`` may be absent from a file)."""

    datetime: str
    pytest_roofline_version: str
    machine: dict[str, str]
    settings: dict[str, Any]
    #: the reports a merged report was made of (``report.merge``)
    merged_from: list[dict[str, Any]]


def make_record(nodeid: str, result: Result, expected: Sequence[str] | None, outcome: str,
                message: str = "") -> Record:
    """A RECORD from an analysis Result (scalars only)."""
    return {"nodeid": nodeid, **record_fields(result, expected, outcome, message)}


def record_fields(result: Result, expected: Sequence[str] | None, outcome: str,
                  message: str = "") -> Record:
    """A RECORD's fields but ``nodeid``, in order: the Result's figures, then the verdict."""
    record = result.to_dict()
    record[EXPECTED] = None if expected is None else list(expected)
    record[OUTCOME] = outcome
    record[MESSAGE] = message
    return record


def key(record: Record) -> tuple[str, str, str]:
    """What identifies a record across runs: test, chip and precision."""
    return (str(record["nodeid"]), str(record["hw"]), str(record["dtype"]))


def make_report(records: Iterable[Record],
                settings: Mapping[str, Any] | None = None) -> Report:
    return {
        "format": FORMAT,
        "version": VERSION,
        "datetime": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "pytest_roofline_version": __version__,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "node": platform.node(), "processor": platform.processor()},
        "settings": dict(settings or {}),
        "results": sorted((r.copy() for r in records), key=key),
    }


def write_report(path: str | os.PathLike[str], report: Report) -> None:
    """Write atomically: a temporary file in the same folder, then a rename. The JSON is
    streamed to the file, never held whole in memory (a run's report can be large)."""
    from ..atomic import write_with

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, allow_nan=True)
            handle.write("\n")

    write_with(path, write)




def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a report may hold")


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read and check a report or baseline file; errors name the file and what is wrong.

    The one reader of report files (``compare``, ``plot``, ``markdown``, baselines): a file that
    is unreadable, not UTF-8, not JSON, nested deeper than the format goes, holding NaN or
    Infinity anywhere, or whose records lack a field or hold one of the wrong type, is a
    :class:`BaselineError` naming the file, never a traceback or a figure read as ``nan``.
    """
    source = Path(path)
    if not is_file(source):
        raise BaselineError(f"{source}: no such roofline report or baseline file")
    text = read_text(source, "report", BaselineError)
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}); "
                            f"is it a half-written or foreign file?") from None
    except ValueError as exc:  # NaN, Infinity
        raise BaselineError(f"{source}: not a valid report: {exc}") from None
    except RecursionError:
        raise BaselineError(f"{source}: not a valid report: nested too deeply") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BaselineError(f"{source}: not a pytest-roofline report (no "
                            f"\"format\": \"{FORMAT}\" field)")
    if data.get("version") != VERSION:
        raise BaselineError(f"{source}: report version {brief(data.get('version'))} is not "
                            f"supported; this pytest-roofline reads version {VERSION}")
    results = data.get("results")
    if not isinstance(results, list):
        raise BaselineError(f"{source}: field 'results' must be a list of records")
    # depth: the fields around the records here, each record's own fields in record_problem
    check_shape({k: v for k, v in data.items() if k != "results"}, str(source), BaselineError,
                max_containers=None)
    settings = data.get("settings")
    if settings is not None and not isinstance(settings, dict):
        raise BaselineError(f"{source}: field 'settings' must be a mapping, got "
                            f"{brief(settings)}")
    for i, record in enumerate(results):
        problem = record_problem(record)
        if problem:
            raise BaselineError(f"{source}: results[{i}] {problem}")
    # checked: the one place a file's JSON becomes a Report, and its records Records
    return cast(Report, data)


_KIND = {**dict.fromkeys(TEXTS, "text"), "regime": "regime",
         **dict.fromkeys(NUMBERS, "number"), **dict.fromkeys(OPTIONAL_NUMBERS, "optional"),
         "fits": "fits", EXPECTED: "expected",
         **dict.fromkeys(STRINGS, "string")}
_MAX = 1.7976931348623157e308  # the largest float; a larger JSON integer is no figure


def record_problem(record: object) -> str:
    """What is wrong with a RECORD read from a file, or "" (see :func:`load_report`).

    One pass over the record's fields; a field a hook added is free-form, but nested no
    deeper than a spec may be."""
    if not isinstance(record, dict):
        return "is not a record"
    required = UNPRICED_REQUIRED if record.get("outcome") in UNPRICED else REQUIRED
    missing = [k for k in required if k not in record]
    if missing:
        return f"lacks field(s) {', '.join(missing)}"
    for name, value in record.items():
        kind = _KIND.get(name)
        kind_of = type(value)
        if kind is None:
            if kind_of is dict or kind_of is list:
                try:
                    check_shape(value, "", BaselineError, max_containers=None)
                except BaselineError:
                    return f"field {name!r} is nested deeper than a report goes"
            continue
        if kind == "number" or (kind == "optional" and value is not None):
            if (kind_of is float or kind_of is int) and 0 <= value <= _MAX:
                continue
            return f"field {name!r}: got {brief(value)}, expected a finite number >= 0"
        if kind == "text" and kind_of is not str:
            return f"field {name!r}: got {brief(value)}, expected a string"
        if kind == "regime" and (kind_of is not str or value not in REGIMES):
            return f"field 'regime': got {brief(value)}, expected one of {', '.join(REGIMES)}"
        if kind == "fits" and value is not None and kind_of is not bool:
            return f"field 'fits': got {brief(value)}, expected true, false or null"
        if kind == "expected" and value is not None and not (
                kind_of is list and all(type(e) is str for e in value)):
            return f"field 'expected': got {brief(value)}, expected a list of regimes or null"
        if kind == "string" and value is not None and kind_of is not str:
            return f"field {name!r}: got {brief(value)}, expected a string"
    return ""

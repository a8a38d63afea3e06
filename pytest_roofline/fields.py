"""The JSON record's field names, in one place.

A record (``report.records`` documents the format) is the roofline of one test on one chip.
Its figures come from an analysis :class:`~pytest_roofline.engine.analysis.Result` (and a
:class:`~pytest_roofline.engine.sweeps.Sweep` writes the same keys, each an array), its verdict from
the judging layer. Every module that writes a record or checks one reads the names here:
``Result.to_dict``, ``Sweep.to_dict``, ``report.records`` (the reader's required and numeric
fields) and the verdict's fields.

:class:`Record` is the record's type: every key it may carry and its value's type, so that a
type checker checks each ``record["time_s"]`` and a misspelled key is an error. It is a plain
dict at run time (nothing is checked or copied); the reader of files
(``report.records.load_report``) checks a file's records and only then calls them records.
:class:`SweepRecord` is what ``Sweep.to_dict`` writes: the same figures, each a list of
numbers (one per point of the sweep) or a number where it does not vary.
"""


# No ``from __future__ import annotations`` here: the TypedDicts' annotations are evaluated
# once as types, where as strings each of their 70-odd keys would be compiled into a
# ForwardRef when the module is imported (the plugin imports it for every marked run).
from typing import Any, Final, Literal, TypedDict


class Record(TypedDict, total=False):
    """A JSON record: the roofline of one test on one chip (``report.records`` documents
    each field). Every key is optional to the type: a chip that cannot price the workload
    writes only ``UNPRICED_REQUIRED``, a priced test ``REQUIRED`` and more; the reader checks
    which a record needs. Figures are in SI units; ``None`` is JSON's ``null``."""

    nodeid: str
    hw: str
    dtype: str
    workload: str | None
    flops: float
    bytes: float
    link_bytes: float | None
    intensity: float
    dram_intensity: float
    tensor_bytes: float
    workload_intensity: float
    ridge: float
    regime: str
    time_s: float
    t_compute_s: float | None
    t_memory_s: float | None
    t_network_s: float | None
    attainable_flops: float | None
    footprint_B: float | None
    capacity_B: float | None
    fits: bool | None
    flops_per_mac: float | None
    derate: float | None
    peak_label: str
    measured_s: float | None
    efficiency: float | None
    limit_s: float | None
    roof_threads: int
    notes: list[str]
    expected: list[str] | None
    expectation: str | None
    outcome: str
    message: str | None
    measured_spread: float
    measured_other_cores: float
    measured_note: str
    measured_by: str
    measured_method: str
    measured_notes: list[str]
    mfu: float
    profile: list[dict[str, Any]]
    unknown: dict[str, int]


#: A key of a :class:`Record` (the type of a helper that reads a figure by its key, so that a
#: misspelled key is a type error there too); the Record's keys, in their order.
RecordKey = Literal[
    "nodeid", "hw", "dtype", "workload", "flops",
    "bytes", "link_bytes", "intensity", "dram_intensity", "tensor_bytes",
    "workload_intensity", "ridge", "regime", "time_s", "t_compute_s",
    "t_memory_s", "t_network_s", "attainable_flops", "footprint_B", "capacity_B",
    "fits", "flops_per_mac", "derate", "peak_label", "measured_s",
    "efficiency", "limit_s", "roof_threads", "notes", "expected", "expectation",
    "outcome", "message", "measured_spread", "measured_other_cores", "measured_note",
    "measured_by", "measured_method", "measured_notes", "mfu", "profile",
    "unknown",
]


#: A figure of a sweep: one number per point (nested lists for a sweep of several axes), or
#: one number where the figure does not vary.
Figures = float | list[Any]
#: The regime of a sweep: one per point, or one for all.
Regimes = str | list[Any]


class SweepRecord(TypedDict, total=False):
    """What ``Sweep.to_dict`` writes: a :class:`Record`'s figures, each an array as lists
    (``numpy.ndarray.tolist``). A sweep keeps no per-kernel figures, so it has no
    ``tensor_bytes`` or ``workload_intensity``, and no verdict."""

    workload: str
    hw: str
    dtype: str
    flops: Figures
    bytes: Figures
    link_bytes: Figures
    intensity: Figures
    dram_intensity: Figures
    ridge: float
    regime: Regimes
    time_s: Figures
    t_compute_s: Figures
    t_memory_s: Figures
    t_network_s: Figures
    attainable_flops: Figures
    footprint_B: Figures
    capacity_B: float
    fits: bool | list[Any] | None
    flops_per_mac: int
    derate: float
    peak_label: str
    notes: list[str]


#: A Result's attribute -> its record key, in record order (every record of a priced test).
RESULT: tuple[tuple[str, RecordKey], ...] = (
    ("workload", "workload"), ("hw", "hw"), ("dtype", "dtype"), ("flops", "flops"),
    ("bytes", "bytes"), ("link_bytes", "link_bytes"), ("intensity", "intensity"),
    ("intensity", "dram_intensity"), ("tensor_bytes", "tensor_bytes"),
    ("workload_intensity", "workload_intensity"), ("ridge", "ridge"), ("regime", "regime"),
    ("time", "time_s"), ("t_compute", "t_compute_s"), ("t_memory", "t_memory_s"),
    ("t_network", "t_network_s"), ("attainable", "attainable_flops"),
    ("footprint", "footprint_B"), ("capacity", "capacity_B"), ("fits", "fits"),
    ("flops_per_mac", "flops_per_mac"), ("derate", "derate"), ("peak_label", "peak_label"),
)
#: Written only when the test was timed.
MEASURED: tuple[tuple[str, RecordKey], ...] = (
    ("measured", "measured_s"), ("efficiency", "efficiency"), ("limit", "limit_s"))
#: Written only when set: the thread count of the memory roof used, the figures' notes.
ROOF_THREADS: Final = "roof_threads"
NOTES: Final = "notes"

#: The verdict's fields, after the figures.
EXPECTED: Final = "expected"
OUTCOME: Final = "outcome"
MESSAGE: Final = "message"
EXPECTATION: Final = "expectation"
#: What a timed test adds: the spread of its timings, the cores other processes kept busy,
#: and a note when it beat the bound beyond its spread.
MEASURED_SPREAD: Final = "measured_spread"
MEASURED_OTHER_CORES: Final = "measured_other_cores"
MEASURED_NOTE: Final = "measured_note"
#: Where a timed test's time came from ("roofline.measure median", "pytest-benchmark median").
MEASURED_BY: Final = "measured_by"
#: How a GPU call was timed ("cuda-events, L2 flushed"), and what its figures are read with
#: (a throttled clock, a launch-bound call): ``Measurement.method`` and ``.notes``.
MEASURED_METHOD: Final = "measured_method"
MEASURED_NOTES: Final = "measured_notes"
#: A timed test's model FLOPs utilization (``judging.mfu``), where it does matrix work.
MFU: Final = "mfu"
#: A profiled test's kernels (``judging.kernels``), on the record of the chip profiled on.
PROFILE: Final = "profile"
#: The ops the workload ran without a formula (name -> calls).
UNKNOWN: Final = "unknown"
NODEID: Final = "nodeid"

#: What a reader requires of a record, and of one whose chip could not price the workload.
REQUIRED: tuple[RecordKey, ...] = (
    "nodeid", "hw", "dtype", "flops", "bytes", "intensity", "ridge", "regime", "time_s",
    "outcome")
UNPRICED_REQUIRED: tuple[RecordKey, ...] = ("nodeid", "hw", "dtype", "outcome")
#: Figures: finite numbers >= 0 where present (``null`` allowed for the optional).
NUMBERS: tuple[RecordKey, ...] = ("flops", "bytes", "intensity", "ridge", "time_s")
OPTIONAL_NUMBERS: tuple[RecordKey, ...] = (
    "link_bytes", "t_compute_s", "t_memory_s", "t_network_s", "attainable_flops",
    "footprint_B", "capacity_B", "flops_per_mac", "derate", "limit_s")
TEXTS: tuple[RecordKey, ...] = ("nodeid", "hw", "dtype", "outcome")
#: Free text, or null.
STRINGS: tuple[RecordKey, ...] = ("message", "expectation", "workload")

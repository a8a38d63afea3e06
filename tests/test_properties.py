"""Property-based tests: whatever arrives, the engine, the spec readers and the report reader
answer with a figure that is finite and >= 0, or with one of the package's own errors.

Kept fast (modest ``max_examples``, no deadline): a few seconds in all.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_roofline import (
    BaselineError,
    RooflineError,
    SpecError,
    UnitError,
    Workload,
    analyze,
    get_hardware,
    models,
    ops,
    sweep,
    units,
)
from pytest_roofline.engine.workload import holds_arrays
from pytest_roofline.hardware import Catalog
from pytest_roofline.models.catalog import Catalog as ModelCatalog
from pytest_roofline.report import plot, records
from pytest_roofline.report.compare import compare
from pytest_roofline.report.markdown import render

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
FILES = settings(FAST, max_examples=25)  # each example writes and reads a file
CHIPS = Catalog()  # one private catalog: the built-in specs are read once, not per example
_FILES = itertools.count()


def _fresh(folder: Path) -> Path:
    """A new file name per example: a catalog may keep what it read from a path."""
    return folder / f"chip-{next(_FILES)}.yaml"

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]

sizes = st.one_of(
    st.integers(min_value=-3, max_value=4096),
    st.integers(min_value=2**50, max_value=2**60),
    st.just(10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([np.int64(64), np.int32(7), np.float32(8.0), np.float64(2.5),
                     np.bool_(True), np.array(16), True, None, "8", [8], (4, 4), b"8"]),
)
arrays = st.builds(
    lambda shape, dtype: np.zeros(shape, dtype=dtype),
    st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=4).map(tuple),
    st.sampled_from(DTYPES),
)
anything = st.one_of(sizes, arrays)
precisions = st.one_of(
    st.sampled_from(["bf16", "fp8", "tf32", "int8", "int4", "fp64", "bogus", "", None]),
    st.sampled_from([np.float16, np.dtype("int32"), np.bool_, float, int, ["bf16"], {}, 3]),
)

#: Keyword arguments of the ops, each with the values it is meant to take (and, drawn beside
#: them, anything at all).
KEYWORDS: dict[str, st.SearchStrategy[Any]] = {
    "causal": st.booleans(), "fused": st.booleans(), "layout": st.sampled_from(
        ["bshd", "bhsd", "nchw", "nhwc", ["bshd"]]),
    "kv_dtype": precisions, "a_dtype": precisions, "b_dtype": precisions,
    "out_dtype": precisions, "padding": st.sampled_from(["same", "valid", 1, (1, 2), "x"]),
    "stride": st.integers(min_value=-1, max_value=3), "groups": st.integers(0, 4),
    "window": st.integers(min_value=-1, max_value=16), "axis": st.integers(-3, 3),
    "kind": st.sampled_from(["max", "avg", "min"]), "affine": st.booleans(),
    "residual": st.booleans(), "inputs": st.integers(-1, 3), "outputs": st.integers(-1, 3),
    "flops_per_element": st.floats(), "link": st.sampled_from(["nvlink", "pcie", None, 3]),
    "link_count": st.integers(-1, 20), "shared_weights": st.booleans(),
    "shards": st.integers(-1, 8), "split": st.sampled_from(["k", "n", "m"]),
    "gather": st.booleans(), "overlap": st.booleans(),
}

def _sharded(m: object, k: object, n: object, *, shards: object = 2, split: object = "k",
             gather: object = True, overlap: object = False, dtype: object = None,
             link: object = None, link_count: object = None) -> Workload:
    return ops.sharded_matmul(m, k, n, shards=shards, split=split,  # type: ignore[arg-type]
                              gather=gather, overlap=overlap,  # type: ignore[arg-type]
                              dtype=dtype, link=link, link_count=link_count)  # type: ignore[arg-type]


def _einsum(a: object, b: object, *, dtype: object = None, out_dtype: object = None) -> Workload:
    return ops.einsum("ij,jk->ik", a, b, dtype=dtype, out_dtype=out_dtype)


OPS: list[tuple[str, Callable[..., Any], int]] = [
    ("sharded_matmul", _sharded, 3), ("einsum", _einsum, 2), ("linear", ops.linear, 3),
    ("matmul", ops.matmul, 3), ("batched_matmul", ops.batched_matmul, 4),
    ("attention", ops.attention, 6), ("conv2d", ops.conv2d, 5), ("pool2d", ops.pool2d, 4),
    ("softmax", ops.softmax, 2), ("layernorm", ops.layernorm, 2), ("rmsnorm", ops.rmsnorm, 2),
    ("elementwise", ops.elementwise, 1), ("reduction", ops.reduction, 1), ("dot", ops.dot, 2),
    ("embedding", ops.embedding, 2), ("all_reduce", ops.all_reduce, 2),
    ("all_gather", ops.all_gather, 2), ("point_to_point", ops.point_to_point, 1),
]


def _finite_and_positive(value: object) -> bool:
    array = np.asarray(value, dtype=float)
    return bool(np.all(np.isfinite(array)) and np.all(array >= 0))


def check_result(workload: Workload) -> None:
    """Every figure of the workload and of its roofline on H100 is finite and >= 0."""
    for figure in (workload.flops, workload.bytes, workload.link_bytes, workload.footprint):
        assert _finite_and_positive(figure)
    figures = ("flops", "bytes", "link_bytes", "intensity", "time", "t_compute", "t_memory",
               "t_network", "attainable", "footprint")
    if holds_arrays(workload):  # a sweep: every figure an array of the sweep's shape
        try:
            points = sweep(workload, get_hardware("h100"))
        except RooflineError:
            return
        for name in figures:
            value = getattr(points, name)
            assert isinstance(value, np.ndarray) and value.shape == points.time.shape, name
            assert _finite_and_positive(value), name
        assert all(type(r) is np.str_ for r in points.regime.ravel())
        return
    try:
        result = analyze(workload, get_hardware("h100"))
    except RooflineError:
        return
    for name in figures:  # plain floats, never arrays or numpy scalars
        assert type(getattr(result, name)) is float, name
        assert _finite_and_positive(getattr(result, name)), name
    assert type(result.regime) is str and result.fits in (True, False, None)
    for kernel in result.kernels:
        for name in ("time", "share", "flops", "bytes"):
            assert type(getattr(kernel, name)) is float, name
            assert _finite_and_positive(getattr(kernel, name)), name
        assert type(kernel.regime) is str
        assert kernel.intensity is None or _finite_and_positive(kernel.intensity)


@FAST
@given(op=st.sampled_from(OPS), data=st.data())
def test_ops_take_anything_and_answer_with_a_finite_workload_or_our_error(
        op: tuple[str, Callable[..., Any], int], data: st.DataObject) -> None:
    _, function, arity = op
    args = [data.draw(anything) for _ in range(arity)]
    kwargs: dict[str, Any] = {}
    if data.draw(st.booleans()):
        kwargs["dtype"] = data.draw(precisions)
    keywords = [k for k in KEYWORDS if k in function.__code__.co_varnames]
    for key in data.draw(st.lists(st.sampled_from(keywords), max_size=2, unique=True)
                         if keywords else st.just([])):
        kwargs[key] = data.draw(st.one_of(KEYWORDS[key], anything))
    try:
        workload = function(*args, **kwargs)
    except RooflineError:
        return
    check_result(workload)


@FAST
@given(a=arrays, b=arrays, dtype=precisions)
def test_matmul_of_arrays(a: np.ndarray, b: np.ndarray, dtype: object) -> None:
    try:
        workload = ops.matmul(a, b, dtype=dtype)
    except RooflineError:
        return
    check_result(workload)
    assert workload.bytes >= a.size * a.itemsize  # bytes follow the storage dtype


MODEL_KEYWORDS: dict[str, st.SearchStrategy[Any]] = {
    "tp": st.one_of(st.integers(-1, 8), anything), "dtype": precisions,
    "weight_dtype": precisions, "kv_dtype": precisions, "fused": st.one_of(st.booleans(), sizes),
    "link": st.sampled_from(["nvlink", "ici", None, 3, ["nvlink"]]),
    "image_size": st.one_of(st.integers(-1, 512), sizes),
}


@FAST
@given(name=st.sampled_from(["llama-3-8b", "gpt-2", "mixtral-8x7b", "bert-base", "resnet-50"]),
       phase=st.sampled_from(["prefill", "decode", "forward", "train_step", "footprint"]),
       batch=st.one_of(sizes, st.just(np.array([1, 8, 64]))), seq=sizes, data=st.data())
def test_models_answer_with_finite_workloads_or_our_error(name: str, phase: str, batch: object,
                                                          seq: object,
                                                          data: st.DataObject) -> None:
    model = models.load(name)
    method = getattr(model, phase, None)
    if method is None:
        return
    accepted = method.__code__.co_varnames
    keys = data.draw(st.lists(st.sampled_from(sorted(MODEL_KEYWORDS)), max_size=2, unique=True))
    kwargs = {k: data.draw(MODEL_KEYWORDS[k]) for k in keys if k in accepted}
    if phase == "footprint":
        kwargs["phase"] = data.draw(st.sampled_from(["decode", "train", "x", ["decode"]]))
    try:
        result = method(batch, **kwargs) if name == "resnet-50" else method(batch, seq,
                                                                            **kwargs)
    except RooflineError:
        return
    if isinstance(result, Workload):
        check_result(result)
    else:  # a footprint: every part finite and >= 0
        assert _finite_and_positive(result.total)


@FAST
@given(flops=st.floats(min_value=0, allow_infinity=False),
       nbytes=st.floats(min_value=0, allow_infinity=False),
       times=st.one_of(st.floats(), st.integers(min_value=-2, max_value=10**320)),
       unit=st.sampled_from(["matrix", "vector"]),
       dtype=st.sampled_from(["bf16", "fp32", "int8", "int32", "bool", None]))
def test_analyze_never_reports_inf_nan_or_negative(flops: float, nbytes: float, times: object,
                                                   unit: str, dtype: str | None) -> None:
    try:
        workload = Workload(flops=flops, bytes=nbytes, unit=unit, dtype=dtype).repeat(
            times)  # type: ignore[arg-type]
    except RooflineError:
        return
    check_result(workload)


_JSON_SCALARS = (str, int, float, bool, type(None))


@FAST
@given(flops=st.one_of(st.floats(min_value=0, max_value=1e30), st.integers(0, 10**20),
                       st.builds(np.float64, st.floats(min_value=0, max_value=1e30))),
       nbytes=st.one_of(st.floats(min_value=0, max_value=1e30), st.integers(0, 10**20),
                        st.builds(np.float32, st.floats(min_value=0, max_value=1e30))),
       footprint=st.one_of(st.just(0), st.floats(min_value=0, max_value=1e15),
                           st.builds(np.int64, st.integers(0, 2**40))),
       unit=st.sampled_from(["matrix", "vector"]),
       dtype=st.sampled_from(["bf16", "fp32", "int8", None]),
       regime=st.sampled_from([None, "compute", ["compute", "memory"]]),
       measured=st.one_of(st.none(), st.floats(min_value=1e-9, max_value=10.0)),
       spread=st.one_of(st.floats(min_value=0, max_value=1), st.builds(np.float64,
                                                                       st.floats(0, 1))))
def test_judged_properties_hold_json_types_only(flops: object, nbytes: object,
                                                 footprint: object, unit: str,
                                                 dtype: str | None, regime: object,
                                                 measured: float | None,
                                                 spread: object) -> None:
    """What a test's report carries (and pytest-xdist sends) is made of JSON's own types,
    exactly: str, int, float, bool, None and lists of them; never a numpy number."""
    from pytest_roofline.judging.marker import parse
    from pytest_roofline.judging.verdict import analyze_all, judge

    try:
        workload = Workload(flops=flops, bytes=nbytes, unit=unit, dtype=dtype,
                            footprint=footprint)
        expectation = parse({"hw": ["h100", "tpu-v5e"], "regime": regime},
                            default_hw=(), default_margin=0.0, name="t", base=None)
        results = analyze_all(expectation, workload, measured=measured)
    except RooflineError:
        return
    judgement = judge(expectation, workload, analyzed=lambda: results, spread=spread)
    assert judgement.error is None and len(judgement.fields) == 2
    for check in judgement.checks:
        assert type(check.result.time) is float and type(check.failures) is tuple
    for name, fields in judgement.fields:
        assert type(name) is str and type(fields) is dict
        for key, value in fields.items():
            assert type(key) is str
            if type(value) is list:
                assert all(type(v) in _JSON_SCALARS for v in value), (key, value)
            else:
                assert type(value) in _JSON_SCALARS, (key, type(value))
        assert json.loads(json.dumps(fields)) == fields or any(
            isinstance(v, float) and v != v for v in fields.values())


# -- spec files -------------------------------------------------------------------------------

leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                   st.text(max_size=12), st.sampled_from(["80 GB)", "3.35 TB/s", "1 PB/s/s",
                                                          "bf16", "989 TFLOP/s", "h100"]))
yaml_values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20)
SPEC_KEYS = ["name", "aliases", "sources", "memory", "matrix", "vector", "links", "extends",
             "default_dtype", "family", "hidden", "layers", "heads", "intermediate", "vocab",
             "tie_embeddings", "kv_heads", "depths", "widths", "clock", "onchip"]
spec_mappings = st.dictionaries(st.sampled_from(SPEC_KEYS), yaml_values, max_size=10)


@FILES
@given(data=spec_mappings)
def test_random_spec_files_give_only_spec_errors(tmp_path: Path, data: dict[str, Any]) -> None:
    path = _fresh(tmp_path)
    path.write_text(yaml.safe_dump(data))
    for read in (lambda: CHIPS.get(str(path)), lambda: ModelCatalog().config(str(path))):
        with contextlib.suppress(SpecError, UnitError):  # anything else fails the test
            read()


@FILES
@given(raw=st.binary(max_size=64))
def test_random_bytes_as_a_spec_file(tmp_path: Path, raw: bytes) -> None:
    path = _fresh(tmp_path)
    path.write_bytes(raw)
    with pytest.raises((SpecError, UnitError)):
        CHIPS.get(str(path))


@FAST
@given(text=st.one_of(st.text(max_size=30), st.builds(
    lambda n, u: f"{n} {u}", st.floats(), st.sampled_from(
        ["GB", "GiB", "TB/s", "TFLOP/s", "ms", "B)", "(B", "GB**2", "bit", "1/s"]))))
def test_unit_strings_parse_to_a_finite_number_or_a_unit_error(text: str) -> None:
    for dimension in ("byte", "bandwidth", "flop_rate"):
        try:
            value = units.parse(text, dimension)
        except UnitError:
            continue
        assert math.isfinite(value) and value > 0


@FILES
@given(capacity=st.floats(min_value=1e6, max_value=1e15),
       bandwidth=st.floats(min_value=1e6, max_value=1e15),
       peaks=st.dictionaries(st.sampled_from(["bf16", "fp16", "fp8", "int8", "fp32"]),
                             st.floats(min_value=1e9, max_value=1e18), min_size=1),
       unit=st.sampled_from([("B", 1.0), ("GB", 1e9), ("GiB", 2.0**30)]))
def test_valid_spec_files_round_trip(tmp_path: Path, capacity: float, bandwidth: float,
                                     peaks: dict[str, float], unit: tuple[str, float]) -> None:
    suffix, scale = unit
    spec = {"name": "round-trip", "sources": {"sheet": "https://example.org/sheet"},
            "default_dtype": next(iter(peaks)),
            "memory": {"capacity": f"{capacity / scale!r} {suffix}",
                       "bandwidth": f"{bandwidth!r} B/s", "source": "sheet"},
            "matrix": {"source": "sheet", **{k: f"{v!r} FLOP/s" for k, v in peaks.items()}}}
    path = _fresh(tmp_path)
    path.write_text(yaml.safe_dump(spec))
    chip = CHIPS.get(str(path))
    assert chip.memory_capacity == pytest.approx(capacity, rel=1e-12)
    assert chip.memory_bandwidth == bandwidth
    assert dict(chip.matrix) == peaks


# -- reports ----------------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20)
record_values = st.fixed_dictionaries(
    {"nodeid": st.one_of(st.text(max_size=8), json_values), "hw": st.just("h100-sxm"),
     "dtype": st.sampled_from(["bf16", "fp8"]),
     "flops": st.one_of(st.floats(), json_values), "bytes": st.floats(min_value=0),
     "intensity": st.floats(), "ridge": st.floats(min_value=0), "time_s": st.floats(),
     "regime": st.sampled_from(["compute", "memory", "network", "fast"]),
     "outcome": st.sampled_from(["passed", "failed", "report"])},
    optional={"fits": json_values, "expected": json_values, "message": json_values,
              "link_bytes": json_values})


@FILES
@given(results=st.one_of(json_values, st.lists(record_values, max_size=3)),
       wrap=st.booleans(), raw=st.binary(max_size=16))
def test_random_reports_give_only_baseline_errors(tmp_path: Path, results: Any, wrap: bool,
                                                  raw: bytes) -> None:
    document = records.make_report([]) if wrap else {}
    document["results"] = results
    path = tmp_path / "report.json"
    text = json.dumps(document) if wrap else json.dumps(results)
    path.write_bytes(text.encode() + (raw if not wrap else b""))
    try:
        report = records.load_report(path)
    except BaselineError:
        return
    # what the reader lets through, compare, Markdown and the chart take without a traceback
    assert not compare(report, report).failed
    assert compare(report, report).lines()
    text = render(report)
    assert "nan" not in text.lower().split("|")
    plot.charts(report)


# -- the header lines of spec files (names learned without parsing a whole file) ---------------

_NAME_PIECES = st.sampled_from(["h100", "H100", "-sxm", "v5e", "_x", ".1", "7", "/", "'", '"',
                                " ", "#", ":", "yes", "No", "null", "~", "[", "]", ",", "&a",
                                "*a", "!x", "1e5", "0x1f", "on", "True", "+", "@"])
_NAMES = st.lists(_NAME_PIECES, min_size=1, max_size=4).map("".join)


@FAST
@given(name=_NAMES, aliases=st.one_of(st.none(), st.lists(_NAMES, max_size=3)),
       block=st.booleans())
def test_header_names_agree_with_yaml(name: str, aliases: list[str] | None,
                                      block: bool) -> None:
    """What the header lines give is what YAML reads (lower-cased), or nothing at all."""
    import yaml

    from pytest_roofline.specfiles import header_names

    text = f"# a chip\nname: {name}\nmemory:\n  capacity: 1 GB\n"
    if aliases is not None:
        text += ("aliases:\n" + "".join(f"  - {a}\n" for a in aliases) if block
                 else f"aliases: [{', '.join(aliases)}]\n")
    names = header_names(text)
    if names is None:
        return
    data = yaml.safe_load(text)
    assert isinstance(data["name"], str)
    listed = data.get("aliases") or []
    assert all(isinstance(a, str) for a in listed)
    assert names == (data["name"].lower(), *(a.lower() for a in listed))


def test_builtin_specs_are_parsed_when_first_used() -> None:
    """A fresh catalog knows every built-in name and alias, as a full read does; naming one
    chip parses that file (and the one it extends) only."""
    from pytest_roofline.specfiles import builtin_dir, header_names, load_yaml

    catalog = Catalog()
    full: dict[str, str] = {}
    for path in sorted(builtin_dir("hardware").glob("*.yaml")):
        data = load_yaml(path)
        for alias in (data["name"], *(data.get("aliases") or [])):
            full[alias.lower()] = data["name"].lower()
        assert header_names(path.read_text()) is not None  # the built-in files are plain
    assert catalog.aliases() == full
    assert catalog.get("h100").name == "h100-sxm"
    assert len(catalog._raw._pending) == len(catalog.names()) - 1
    assert repr(catalog.get("tpu-v5e")) == repr(CHIPS.get("tpu-v5e"))  # as a full read builds


# -- merging the reports of CI shards ----------------------------------------------------------

_SHARD_RECORD = st.fixed_dictionaries({
    "nodeid": st.sampled_from([f"t.py::test_{i}" for i in range(12)]),
    "hw": st.sampled_from(["h100-sxm", "a100-80gb-sxm"]),
    "dtype": st.just("bf16"), "flops": st.floats(0, 1e15), "bytes": st.floats(1, 1e12),
    "intensity": st.floats(0, 1e4), "regime": st.sampled_from(["compute", "memory"]),
    "time_s": st.floats(0, 10), "outcome": st.sampled_from(["passed", "failed", "report"]),
})


@given(st.lists(_SHARD_RECORD, max_size=20, unique_by=lambda r: (r["nodeid"], r["hw"])),
       st.integers(1, 4), st.randoms(use_true_random=False))
def test_merging_split_shards_gives_back_the_run(records_: list[dict[str, Any]], shards: int,
                                                  rng: Any) -> None:
    """Records dealt over shards (each test and chip in one shard) merge back into the
    report of the whole run; dealing one of them twice is refused, naming it."""
    from pytest_roofline.errors import BaselineError
    from pytest_roofline.report.merge import merge

    dealt: list[list[dict[str, Any]]] = [[] for _ in range(shards)]
    for record in records_:
        dealt[rng.randrange(shards)].append(record)
    reports = [(f"shard{i}.json", records.make_report(part, {"flops_per_mac": 2}))
               for i, part in enumerate(dealt)]
    merged = merge(reports)
    assert merged["results"] == records.make_report(records_)["results"]
    assert [s["results"] for s in merged["merged_from"]] == [len(p) for p in dealt]
    if records_ and shards > 1:
        twice = [*reports, ("again.json", records.make_report(records_[:1],
                                                              {"flops_per_mac": 2}))]
        with pytest.raises(BaselineError, match=f"both hold {records_[0]['nodeid']}"):
            merge(twice)

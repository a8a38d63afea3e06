"""Bad input to the engine gets the package's own one-line errors, never a traceback from deep
inside or a silently wrong number (issue 10's engine half), and arrays keep their dtype
overrides (issue 12's array-mode list). Expected figures are derived in each test."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline import (
    BaselineError,
    RooflineError,
    SpecError,
    UnitError,
    UnknownHardwareError,
    UnknownModelError,
    UnsupportedPrecisionError,
    Workload,
    WorkloadError,
    analyze,
    crossover,
    dtypes,
    get_hardware,
    models,
    ops,
    register_hardware,
    units,
)
from pytest_roofline.errors import brief
from pytest_roofline.report import baseline, records
from pytest_roofline.report.compare import compare
from pytest_roofline.report.markdown import render

SPECS = Path(__file__).resolve().parent.parent / "specs" / "hardware"


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text, text
    assert len(text) < 400, text
    return text


# -- sizes ------------------------------------------------------------------------------------


def test_numpy_scalars_are_sizes_not_arrays() -> None:
    # 2·64³ FLOPs however the sizes are spelt
    for k in (np.int64(64), np.int32(64), np.float64(64.0), np.float32(64.0), np.array(64),
              np.array(64.0)):
        assert ops.matmul(64, k, 64).flops == 2 * 64**3
    assert ops.softmax(np.int64(4), np.int16(8)).flops == 5 * 32


@pytest.mark.parametrize("value", [0, -1, 2.5, math.nan, math.inf, 1e308, 10**200, True,
                                   "8", None, [8], b"8", np.bool_(True)])
def test_bad_sizes_are_one_line_workload_errors(value: object) -> None:
    with pytest.raises(WorkloadError, match=r"matmul") as exc:
        ops.matmul(64, value, 64)
    one_line(exc)


def test_sizes_stop_at_2_to_the_53() -> None:
    assert ops.elementwise(2**53).flops == 2.0**53
    with pytest.raises(WorkloadError, match=r"sizes stop at 2\*\*53"):
        ops.elementwise(2**53 + 1)


def test_figures_that_overflow_a_float_are_refused() -> None:
    # 2·(2**53)³ = 2**160 is finite; a thousand of those kernels per token run 1e300 times is not
    with pytest.raises(WorkloadError, match="overflow a float"):
        ops.matmul(2**53, 2**53, 2**53).repeat(1e300)
    with pytest.raises(WorkloadError, match="overflow a float"):
        Workload(flops=1e308, bytes=1e308) * 10


def test_empty_and_zero_size_arrays_are_refused() -> None:
    with pytest.raises(WorkloadError, match="at least one value"):
        models.load("llama-3-8b").prefill(np.array([], dtype=np.int64), 1)
    with pytest.raises(WorkloadError, match=r"shape \(0, 8\) holds no elements"):
        ops.matmul(np.empty((0, 8)), np.empty((8, 8)))
    with pytest.raises(WorkloadError, match="holds no elements"):
        ops.softmax(np.empty((4, 0), np.float16))


def test_arrays_for_padding_and_split() -> None:
    # a 2-element array is a (height, width) pair, as a tuple is
    pad = ops.conv2d(1, 3, 8, 32, 3, padding=np.array([1, 1]))
    assert pad.flops == ops.conv2d(1, 3, 8, 32, 3, padding=(1, 1)).flops
    with pytest.raises(WorkloadError, match="pair") as exc:
        ops.conv2d(1, 3, 8, 32, 3, padding=np.array([1, 1, 1]))
    one_line(exc)
    with pytest.raises(WorkloadError, match="split must be 'k'"):
        ops.sharded_matmul(8, 8, 8, shards=2, split=np.array(["k"]))  # type: ignore[arg-type]
    with pytest.raises(WorkloadError, match="layout"):
        ops.attention(np.empty((1, 8, 2, 4)), np.empty((1, 8, 2, 4)), np.empty((1, 8, 2, 4)),
                      layout=["bshd"])  # type: ignore[arg-type]


# -- precisions -------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [
    lambda d: ops.layernorm(8, 8, dtype=d), lambda d: ops.rmsnorm(8, 8, dtype=d),
    lambda d: ops.reduction(8, dtype=d), lambda d: ops.matmul(8, 8, 8, dtype=d),
    lambda d: ops.attention(1, 8, 8, 2, 2, 4, dtype=d), lambda d: ops.einsum("ij", (2, 2),
                                                                             dtype=d),
    lambda d: models.load("gpt2").decode(1, 8, dtype=d),
    lambda d: analyze(ops.matmul(8, 8, 8), "h100", d),
])
@pytest.mark.parametrize("bad", [["bf16"], {"bf16": 1}, 16, None.__class__])
def test_unusable_dtypes_are_one_line_errors(op: object, bad: object) -> None:
    with pytest.raises(RooflineError) as exc:
        op(bad)  # type: ignore[operator]
    one_line(exc)


def test_dtype_classes_and_objects_are_read_without_their_framework() -> None:
    assert dtypes.canonical(np.float16) == "fp16"
    assert dtypes.canonical(np.dtype("float16")) == "fp16"
    assert dtypes.canonical(np.bool_) == "bool"
    assert dtypes.canonical(np.uint8) == "int8"
    assert dtypes.canonical(float) == "fp64"  # numpy's reading of Python's float

    class bfloat16:  # shaped like jax.numpy.bfloat16: a class named after its dtype
        dtype = None

    assert dtypes.canonical(bfloat16) == "bf16"
    assert ops.matmul(8, 8, 8, dtype=np.float16).kernels[0].dtype == "fp16"


def test_integer_and_bool_arrays_are_priced_by_the_documented_rule() -> None:
    h100 = get_hardware("h100")
    mask = np.ones((8, 8), dtype=bool)
    w = ops.elementwise(mask)
    assert w.bytes == 2 * 64 * 1.0  # 1 byte per bool, read and written
    # int8 products at the int8 matrix peak; int32 products on the vector units (fp32 peak,
    # the spec's vector fallback: H100 lists no int32 vector peak)
    i8 = analyze(ops.matmul(np.ones((64, 64), np.int8), np.ones((64, 64), np.int8)), h100)
    assert i8.kernels[0].peak_label == "matrix:int8"
    i32 = analyze(ops.matmul(np.ones((64, 64), np.int32), np.ones((64, 64), np.int32)), h100)
    assert i32.kernels[0].peak_label == "vector:fp32"
    assert i32.kernels[0].peak == h100.vector["fp32"]
    # a chip without an int8 matrix peak: the UnsupportedPrecisionError rule stands
    chip = h100.replace(name="no-int8", matrix={"bf16": 1e15}, aliases=())
    with pytest.raises(UnsupportedPrecisionError, match="no dense int8 peak"):
        analyze(ops.matmul(64, 64, 64, dtype="int8"), chip)


# -- array mode: overrides set the compute precision, bytes follow storage ----------------------


def test_dtype_override_with_arrays_sets_compute_and_keeps_storage_bytes() -> None:
    a = np.zeros((64, 64), np.float32)
    w = ops.matmul(a, a, dtype="tf32")
    (kernel,) = w.kernels
    assert kernel.dtype == "tf32"
    assert kernel.bytes == 3 * 64 * 64 * 4  # two fp32 operands and an fp32 result
    assert "fp32 as tf32" in w.name
    # sizes mode agrees on bytes (tf32 is stored in 4 bytes) and on the peak
    assert ops.matmul(64, 64, 64, dtype="tf32").bytes == kernel.bytes
    r = analyze(w, "h100")
    assert r.kernels[0].peak_label == "matrix:tf32"


def test_operand_overrides_with_arrays() -> None:
    a, b = np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16)
    # both operands computed as int8: an int8 product reading fp16 operands; the output, which
    # no array gives, is stored in the compute precision unless out_dtype says otherwise
    w = ops.matmul(a, b, a_dtype="int8", b_dtype="int8")
    assert w.kernels[0].dtype == "int8" and w.bytes == 2 * 64 * 64 * 2 + 64 * 64 * 1
    assert ops.matmul(a, b, a_dtype="int8", b_dtype="int8", out_dtype="int32").bytes == \
        2 * 64 * 64 * 2 + 64 * 64 * 4
    # int8 weights with fp16 activations: the wider, fp16, computes
    assert ops.matmul(a, b, b_dtype="int8").kernels[0].dtype == "fp16"


def test_override_in_attention_conv_softmax() -> None:
    q = np.zeros((1, 128, 8, 64), np.float32)
    att = ops.attention(q, q, q, layout="bshd", dtype="tf32")
    # the override prices the products; the softmax stays in q's precision (as traced)
    assert [k.dtype for k in att.kernels] == ["tf32", "fp32"]
    assert att.bytes == ops.attention(1, 128, 128, 8, 8, 64, dtype="fp32").bytes
    with pytest.raises(WorkloadError, match="kv_dtype"):
        ops.attention(q, q, q, layout="bshd", kv_dtype="int8")
    x, k = np.zeros((2, 3, 32, 32), np.float32), np.zeros((8, 3, 3, 3), np.float16)
    conv = ops.conv2d(x, k, dtype="tf32")
    assert conv.kernels[0].dtype == "tf32"
    # x and y in fp32 (4 B), the weights in fp16 (2 B): 2·3·32·32·4 + 2·8·30·30·4 + 8·3·3·3·2
    assert conv.bytes == 2 * 3 * 32 * 32 * 4 + 2 * 8 * 30 * 30 * 4 + 8 * 3 * 3 * 3 * 2
    sm = ops.softmax(np.zeros((4, 8), np.float16), dtype="fp32")
    assert sm.kernels[0].dtype == "fp32" and sm.bytes == 2 * 32 * 2


def test_linear_takes_torch_layout_and_modules() -> None:
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(64, 128, dtype=torch.bfloat16)
    x = torch.empty(4, 16, 64, dtype=torch.bfloat16)
    w = ops.linear(x, layer)
    # m = 64 tokens, in 64, out 128: 2·64·64·128 FLOPs; bytes: x, W, y, bias in bf16
    assert w.flops == 2 * 64 * 64 * 128
    assert w.bytes == 2 * (64 * 64 + 128 * 64 + 64 * 128 + 128)
    assert ops.linear(x, layer.weight).bytes == w.bytes - 2 * 128
    # torch's own counter agrees on the FLOPs
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        layer(x)
    assert counter.get_total_flops() == w.flops
    with pytest.raises(WorkloadError, match=r"Linear module, not an array.*ops\.linear") as exc:
        ops.matmul(x, layer)
    assert "tensor(" not in one_line(exc)
    with pytest.raises(WorkloadError, match="in_features"):
        ops.linear(x, torch.empty(64, 128))  # [in, out]: the transposed layout


def test_torch_bool_and_int_tensors() -> None:
    torch = pytest.importorskip("torch")
    assert ops.elementwise(torch.empty(8, 8, dtype=torch.bool)).bytes == 128
    assert ops.reduction(torch.empty(8, 8, dtype=torch.int64), axis=-1).kernels[0].dtype == \
        "int64"
    assert ops.matmul(torch.empty(8, 8), torch.empty(8, 8), dtype=torch.float16).kernels[
        0].dtype == "fp16"


# -- lookups ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [5, None, b"h100", 1.5, ["h100"]])
def test_hardware_names_of_the_wrong_type(name: object) -> None:
    with pytest.raises(UnknownHardwareError, match="by name") as exc:
        get_hardware(name)  # type: ignore[arg-type]
    one_line(exc)
    with pytest.raises(UnknownHardwareError):
        analyze(ops.matmul(8, 8, 8), name)  # type: ignore[arg-type]


def test_model_names_of_the_wrong_type() -> None:
    with pytest.raises(UnknownModelError, match="by name"):
        models.load(None)  # type: ignore[arg-type]


def test_workload_and_repeat_arguments() -> None:
    with pytest.raises(WorkloadError, match="kernels must be a list"):
        Workload(None)  # type: ignore[arg-type]
    for times in ("8", None, math.inf, -1, math.nan, True):
        with pytest.raises(WorkloadError, match="cannot repeat"):
            ops.matmul(8, 8, 8).repeat(times)  # type: ignore[arg-type]


def test_crossover_and_settings() -> None:
    with pytest.raises(RooflineError, match="unknown setting 'bogus'"):
        crossover(lambda m: ops.matmul(m, 64, 64), "h100", bogus=1)
    with pytest.raises(RooflineError, match="sparse must be True or False"):
        analyze(ops.matmul(8, 8, 8), "h100", sparse="yes")  # type: ignore[arg-type]


# -- zero work and finite results --------------------------------------------------------------


def test_zero_work_is_a_defined_zero_time_result() -> None:
    r = analyze(Workload(flops=0, bytes=0), "h100")
    assert (r.time, r.attainable, r.intensity, r.regime) == (0.0, 0.0, 0.0, "compute")
    # a one-device all-reduce does nothing, and says so
    assert analyze(ops.all_reduce(1024, 1), "h100").time == 0.0
    assert analyze(ops.matmul(8, 8, 8).repeat(0), "h100").time == 0.0


def test_flops_without_bytes_is_refused_and_on_chip_kernels_have_no_intensity() -> None:
    with pytest.raises(WorkloadError, match="moves no memory bytes"):
        analyze(Workload(flops=1e9), "h100")
    r = analyze(ops.attention(1, 128, 128, 8, 8, 64), "h100")
    assert r.kernels[1].intensity is None  # the fused softmax stays on chip
    assert all(math.isfinite(float(k.time)) for k in r.kernels)


# -- spec files -------------------------------------------------------------------------------


def _spec(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "chip.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _h100_as(name: str) -> str:
    text = (SPECS / "h100-sxm.yaml").read_text()
    return text.replace("name: h100-sxm", f"name: {name}").replace(
        "aliases: [h100, h100-sxm5]", "aliases: []")


@pytest.mark.parametrize("text, message", [
    (b"name: x\n\xff\xfe\n", r"not UTF-8 text \(byte 0xff at offset 8\)"),
    ("name: " + "[" * 200 + "]" * 200, "nested deeper than 32 levels"),
    ("name: [unclosed\n", r"not valid YAML at line \d+, column \d+"),
    (_h100_as("typo").replace("capacity: 80 GB", 'capacity: "80 GB)"'),
     r"field 'memory.capacity': cannot parse '80 GB\)'"),
    (_h100_as("{a: 1}"), r"field 'name': got \{'a': 1\}"),
    (_h100_as("ext").replace("vendor: NVIDIA", "extends: {a: 1}"), "field 'extends'"),
    (_h100_as("dt").replace("default_dtype: bf16", "default_dtype: [bf16]"),
     "field 'default_dtype'"),
    (_h100_as("al").replace("aliases: []", "aliases: [{a: 1}]"), "expected a list of names"),
])
def test_broken_spec_files_are_one_line_spec_errors(tmp_path: Path, text: str | bytes,
                                                    message: str) -> None:
    path = _spec(tmp_path, text)
    with pytest.raises(SpecError, match=message) as exc:
        get_hardware(str(path))
    line = one_line(exc)
    assert line.count(str(path)) == 1  # the path once, never repeated
    if "name" not in message:
        with pytest.raises(SpecError):
            models.load(str(path))


def test_unit_strings_that_pint_cannot_parse() -> None:
    for text in ("80 GB)", "10**10**10 B", "(" * 200 + "1", "1 GB / 0", "5 GB/s/s"):
        with pytest.raises(UnitError):
            units.parse(text, "byte")


# -- reports ----------------------------------------------------------------------------------


def _report(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "report.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def _good_record(**changes: object) -> dict[str, object]:
    record = {"nodeid": "t.py::x", "hw": "h100-sxm", "dtype": "bf16", "flops": 1e9,
              "bytes": 1e6, "intensity": 1e3, "ridge": 295.3, "regime": "compute",
              "time_s": 1e-6, "outcome": "passed"}
    record.update(changes)
    return record


@pytest.mark.parametrize("text, message", [
    (b'{"format": "pytest-roofline", "\xff": 1}', "not UTF-8"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply|nested deeper"),
    (json.dumps(records.make_report([_good_record()])).replace("1000000000.0", "NaN"),
     "NaN is not a number"),
    (json.dumps(records.make_report([_good_record()])).replace("1000000000.0", "Infinity"),
     "Infinity is not a number"),
    (json.dumps(records.make_report([_good_record(flops="many")])), "field 'flops'"),
    (json.dumps(records.make_report([_good_record(regime="fast")])), "field 'regime'"),
    (json.dumps(records.make_report([_good_record(hw=["h100"])])), "field 'hw'"),
    (json.dumps(records.make_report([_good_record(flops=10**400)])), "field 'flops'"),
    (json.dumps(records.make_report([_good_record(extra=_nested(40))])),
     "field 'extra' is nested deeper"),
])
def test_broken_reports_are_one_line_baseline_errors(tmp_path: Path, text: str | bytes,
                                                     message: str) -> None:
    path = _report(tmp_path, text)
    with pytest.raises(BaselineError, match=message) as exc:
        baseline.load(tmp_path, str(path))
    assert str(path) in one_line(exc)


def test_a_valid_report_compares_with_itself_unchanged_and_renders(tmp_path: Path) -> None:
    path = _report(tmp_path, json.dumps(records.make_report([_good_record()])))
    report = records.load_report(path)
    assert not compare(report, report).failed
    assert "nan" not in render(report)


def test_brief_never_prints_a_whole_array() -> None:
    assert brief(np.zeros((1000, 1000))).startswith("a numpy ndarray of shape [1000x1000]")
    assert brief(np.int64(3)) == "np.int64(3)"
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    assert len(brief(deep)) <= 60


@pytest.mark.parametrize("command", ["compare", "plot", "markdown"])
def test_the_command_line_reads_broken_reports_as_one_line_errors(
        tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_roofline.cli import main

    for text in (b'{"format": "pytest-roofline", "\xff": 1}', "[" * 50_000 + "]" * 50_000,
                 json.dumps(records.make_report([_good_record()])).replace("1000000000.0",
                                                                           "NaN")):
        path = _report(tmp_path, text)
        args = [command, str(path), str(path)] if command == "compare" else [command, str(path)]
        if command == "plot":
            args += ["-o", str(tmp_path / "chart.png")]
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(path) in err[0], err


def test_int32_work_requested_as_matrix_work_prices_at_the_vector_peak() -> None:
    h100 = get_hardware("h100")
    # FLOPs of an int32 elementwise op at the fp32 vector peak (H100 lists no int32 vector
    # peak), and the ridge of an int32 analysis is that peak over the bandwidth
    assert h100.peak("int32", "matrix") == h100.vector["fp32"]
    r = analyze(ops.elementwise(np.ones((8, 8), np.int32)), h100, "int32")
    assert r.ridge == pytest.approx(h100.vector["fp32"] / h100.memory_bandwidth, rel=1e-12)


@pytest.mark.parametrize("name", ["x" * 5000 + ".yaml", "a/\x00b.yaml"])
def test_paths_the_system_refuses_are_lookup_errors(name: str, tmp_path: Path) -> None:
    with pytest.raises(UnknownHardwareError) as exc:
        get_hardware(name)
    one_line(exc)
    with pytest.raises(UnknownModelError):
        models.load(name)
    with pytest.raises(BaselineError):
        baseline.load(tmp_path, name)


def test_deeply_nested_mappings_registered_from_python() -> None:
    from pytest_roofline.hardware import Catalog
    from pytest_roofline.models.catalog import Catalog as ModelCatalog

    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(SpecError, match="nested deeper than 32 levels"):
        ModelCatalog().register({"name": "deep", "family": "transformer", "sources": {"a": deep}})
    with pytest.raises(SpecError, match="nested deeper than 32 levels"):
        Catalog().register({"name": "deep", "sources": {"a": deep}})
    with pytest.raises(SpecError, match="must be a mapping"):
        models.config_from_dict(5)  # type: ignore[arg-type]


def test_sweeps_of_shapes_that_do_not_broadcast() -> None:
    three = ops.matmul(np.array([1, 2, 3]), 64, 64)
    two = ops.matmul(np.array([1, 2]), 64, 64)
    with pytest.raises(WorkloadError, match="do not broadcast"):
        three + two
    with pytest.raises(WorkloadError, match="do not broadcast"):
        analyze(Workload([three.kernels[0], two.kernels[0]]), "h100")
    with pytest.raises(WorkloadError, match="do not broadcast"):
        Workload(flops=np.array([1.0, 2.0, 3.0]), bytes=np.ones((8, 8)))


def test_knob_hint_and_unit_parse_refuse_what_they_cannot_use() -> None:
    from pytest_roofline import knob_hint

    with pytest.raises(WorkloadError, match="needs a Workload"):
        knob_hint(5, "h100", "compute")  # type: ignore[arg-type]
    with pytest.raises(UnitError, match="unknown dimension"):
        units.parse("8 GB", ["byte"])  # type: ignore[arg-type]


def test_counts_that_need_not_be_whole() -> None:
    # 3.5 FLOPs per element over 8 elements: 28 FLOPs
    assert ops.elementwise(8, flops_per_element=3.5).flops == 28.0
    for bad in (10**400, -1, math.nan, math.inf, "2", True):
        with pytest.raises(WorkloadError, match="flops_per_element must be a finite number"):
            ops.elementwise(8, flops_per_element=bad)  # type: ignore[arg-type]


def test_an_array_where_a_model_phase_belongs() -> None:
    with pytest.raises(WorkloadError, match="phase must be"):
        models.load("llama-3-8b").footprint(1, 8, phase=np.array(["decode", "x"]))  # type: ignore[arg-type]


def test_einsum_and_vector_ops_take_the_override_with_arrays() -> None:
    a = np.zeros((64, 64), np.float32)
    w = ops.einsum("ij,jk->ik", a, a, dtype="tf32")
    assert w.kernels[0].dtype == "tf32" and w.bytes == 3 * 64 * 64 * 4
    assert "as tf32" in w.name
    # shapes alone are stored in dtype, so sizes and arrays agree on bytes
    assert ops.einsum("ij,jk->ik", (64, 64), (64, 64), dtype="fp32").bytes == w.bytes
    norm = ops.rmsnorm(np.zeros((8, 64), np.float16), dtype="fp32")
    assert norm.kernels[0].dtype == "fp32" and norm.bytes == (2 * 8 * 64 + 64) * 2


@pytest.mark.parametrize("register", [register_hardware, models.register])
@pytest.mark.parametrize("name", ["\x00", "chip\x00.yaml"])
def test_a_path_the_system_refuses_is_a_spec_error(register: Any, name: str) -> None:
    """A NUL byte in a spec path (found by an outside fuzz run): the system refuses to open
    it; that is a SpecError naming the path, not pathlib's ValueError."""
    with pytest.raises(SpecError, match=r"cannot read (spec|model) file \(embedded null byte\)"):
        register(name)

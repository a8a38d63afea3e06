"""Every figure docs/measure.md publishes from its H200 run, checked against the run's raw
JSON (docs/gpu-acceptance-h200.json) and its traces (tests/data/traces/h200_*.json.gz).

Each table cell is recomputed here from the JSON with the rounding the table uses (three
significant figures for rates and times, whole percents), and each "of" column from its
definition, bound / measured, not from the run's clamped ``efficiency`` field: a cell edited
by hand, or a prose number the data does not support, fails a test.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = json.loads((ROOT / "docs" / "gpu-acceptance-h200.json").read_text())["sections"]
DOC = (ROOT / "docs" / "measure.md").read_text()
PROSE = " ".join(DOC.split())  # the prose with its line breaks folded
TRACES = ROOT / "tests" / "data" / "traces"


def _table(heading: str) -> list[list[str]]:
    """The rows of the first Markdown table after *heading* in docs/measure.md."""
    text = DOC[DOC.index(heading):]
    rows = []
    for line in text.splitlines()[1:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def _three(value: float) -> str:
    """Three significant figures, as the tables write them: ``755``, ``1.21``, ``58.0``."""
    digits = 3 - len(str(int(abs(value)))) if abs(value) >= 1 else 2
    return f"{value:.{max(digits, 0)}f}"


def _rate(value: float | None, unit: str, published: bool = False) -> str:
    """A measured rate to three significant figures; a published one as the datasheet's
    round figure (``4.8 TB/s``, ``989 TFLOP/s``)."""
    if value is None:
        return "not published"
    for factor, prefix in ((1e15, "P"), (1e12, "T")):
        if value >= factor:
            number = f"{value / factor:.3g}" if published else _three(value / factor)
            return f"{number} {prefix}{unit}"
    raise AssertionError(value)


def _time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{_three(seconds * 1e3)} ms"
    return f"{_three(seconds * 1e6)} us"


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


# -- the calibration table --------------------------------------------------------------------

CALIBRATION = {"bf16 GEMM": "matrix.bf16", "fp16 GEMM": "matrix.fp16",
               "fp8 GEMM (`_scaled_mm`)": "matrix.fp8", "tf32 GEMM": "matrix.tf32",
               "fp32 GEMM (CUDA cores)": "matrix.fp32", "fp64 GEMM": "matrix.fp64",
               "copy, 1 GiB": "memory.copy", "memset, 1 GiB": "memory.memset",
               "L2 (graph of copies)": "cache.l2"}


def test_every_cell_of_the_calibration_table_is_the_runs() -> None:
    from pytest_roofline.hardware import get_hardware

    h200 = get_hardware("h200")
    published = {"matrix.fp32": h200.vector["fp32"], "memory.copy": h200.memory_bandwidth,
                 "memory.memset": h200.memory_bandwidth,
                 **{f"matrix.{d}": v for d, v in h200.matrix.items()}}
    rows = {r["figure"]: r for r in RUN["calibration"]["rows"]}
    table = _table("**Calibration**, twice")
    assert [cells[0] for cells in table] == list(CALIBRATION)
    for label, run1, run2, agree, spec, ratio in table:
        row = rows[CALIBRATION[label]]
        unit = "FLOP/s" if row["figure"].startswith("matrix") else "B/s"
        assert run1 == _rate(row["run1"], unit), label
        assert run2 == _rate(row["run2"], unit), label
        # agreement: the runs' difference over the larger
        assert row["agreement"] == pytest.approx(
            abs(row["run1"] - row["run2"]) / max(row["run1"], row["run2"]), rel=1e-9)
        assert agree == _pct(row["agreement"]), label
        assert spec == _rate(row["published"], unit, published=True), label
        if row["published"] is None:
            assert ratio == "-" and row["figure"] == "cache.l2"
            continue
        # the published column is the catalog's H200 spec, the ratio the best run over it
        assert row["published"] == pytest.approx(published[row["figure"]], rel=1e-9)
        best = max(row["run1"], row["run2"])
        assert ratio == _pct(best / row["published"]), label


def test_the_calibration_prose_is_the_runs() -> None:
    rows = {r["figure"]: r for r in RUN["calibration"]["rows"]}
    runs = [f"{r['seconds']} s" for r in RUN["calibration"]["runs"]]
    assert f"**Calibration**, twice ({runs[0]} and {runs[1]})" in PROSE
    gemm = [r["ratio"] for k, r in rows.items() if k.startswith("matrix.")]
    memory = [r["ratio"] for k, r in rows.items() if k.startswith("memory.")]
    assert f"Every GEMM peak is {_pct(min(gemm))[:-1]}-{_pct(max(gemm))} of its datasheet" \
        in PROSE
    assert f"the memory roof {_pct(min(memory))[:-1]}-{_pct(max(memory))}" in PROSE
    agreement = {k: r["agreement"] for k, r in rows.items() if k != "cache.l2"}
    worst = sorted(agreement, key=agreement.__getitem__)[-2:]  # fp8 and the copy
    assert worst == ["matrix.fp8", "memory.copy"]
    others = max(v for k, v in agreement.items() if k not in worst)
    assert (f"agree within {max(agreement.values()) * 100:.1f}% (the copy "
            f"{agreement['memory.copy'] * 100:.1f}%, fp8 {agreement['matrix.fp8'] * 100:.1f}%, "
            f"the rest within {others * 100:.1f}%)") in PROSE
    assert f"within {_pct(rows['cache.l2']['agreement'])}." in PROSE


# -- the efficiency table ---------------------------------------------------------------------


def _of(row: dict[str, Any], side: str) -> str:
    """An "of" cell: bound / measured, saying so above 100%."""
    ratio = row[side]["bound"] / row["measured"]
    if row[side]["efficiency"] is None:  # the run judged it faster than the bound
        return f"{_pct(ratio)}, faster than the bound"
    return f"{_pct(ratio)}, above the roof" if round(ratio * 100) > 100 else _pct(ratio)


def _method(method: str) -> str:
    graph = re.match(r"cuda-graph of (\d+) calls", method)
    if graph:
        return f"graph of {graph.group(1)} calls"
    assert method.startswith("cuda-events, L2 flushed"), method
    return "events, L2 flushed"


def test_every_cell_of_the_efficiency_table_is_the_runs() -> None:
    rows = RUN["efficiency"]["rows"]
    table = _table("**Efficiency**: each case")
    assert len(table) == len(rows)
    for row, cells in zip(rows, table, strict=True):
        _case, measured, method, spec_bound, of_spec, cal_bound, of_cal = cells
        assert measured == _time(row["measured"]), row["case"]
        assert method == _method(row["method"]), row["case"]
        assert spec_bound == _time(row["spec"]["bound"]), row["case"]
        assert cal_bound == _time(row["calibrated"]["bound"]), row["case"]
        assert of_spec == _of(row, "spec"), row["case"]
        assert of_cal == _of(row, "calibrated"), row["case"]
        for side in ("spec", "calibrated"):  # the run's efficiency: the same ratio, at most 1
            efficiency = row[side]["efficiency"]
            if efficiency is not None:
                assert efficiency == pytest.approx(
                    min(1.0, row[side]["bound"] / row["measured"]), rel=1e-9)


def _row(case: str) -> dict[str, Any]:
    return next(r for r in RUN["efficiency"]["rows"] if r["case"] == case)


def test_the_efficiency_prose_is_the_runs() -> None:
    matmul, copy = _row("matmul bf16 8192^3"), _row("copy 1024 MiB bf16")
    assert (f"{_pct(matmul['spec']['efficiency'])} and {_pct(copy['spec']['efficiency'])} of "
            f"the published roofs") in PROSE
    assert f"the copy reads {_pct(copy['calibrated']['efficiency'])}" in PROSE
    flops = 2 * 8192 ** 3
    median, best = flops / matmul["measured"], flops / matmul["best"]
    calibrated = next(r for r in RUN["calibration"]["rows"] if r["figure"] == "matrix.bf16")
    assert (f"{_time(matmul['measured'])} against a {_time(matmul['calibrated']['bound'])} "
            f"bound: {_pct(matmul['calibrated']['bound'] / matmul['measured'])}, within its "
            f"{_pct(matmul['spread'])} spread") in PROSE
    assert f"at {median / 1e12:.0f} TFLOP/s median ({best / 1e12:.0f} best)" in PROSE
    assert f"beat the calibration's {calibrated['run1'] / 1e12:.0f} TFLOP/s" in PROSE
    assert median > max(calibrated["run1"], calibrated["run2"])
    # the warm add: its 32 MiB of traffic over its time
    warm = _row("add 1.0 16384 KiB bf16, L2 warm")
    assert f"ran at {2 * 16 * 2**20 / warm['measured'] / 1e12:.1f} TB/s" in PROSE
    flushed = _row("add 1.0 16384 KiB bf16, L2 flushed")
    assert f"flushed, the same add reads {_pct(flushed['spec']['efficiency'])}" in PROSE
    big = _row("add 1.0 1024 MiB bf16 (out=)")
    assert f"the same add on 1 GiB reaches {_pct(big['spec']['efficiency'])}" in PROSE
    sdpa = _row("SDPA causal bf16")
    assert f"**SDPA, {_pct(sdpa['spec']['efficiency'])}**" in PROSE


def test_the_decode_layer_prose_is_the_runs_and_its_trace() -> None:
    decode = _row("Llama-3-8B layer decode")
    [note] = [n for n in decode["notes"] if n.startswith("launch-bound")]
    graph_us = float(re.search(r"the call takes ([\d.]+) us", note).group(1))  # type: ignore[union-attr]
    eager_us = float(re.search(r"timed eagerly ([\d.e+]+) us", note).group(1))  # type: ignore[union-attr]
    bound = decode["spec"]["bound"]
    assert f"**decode layer, {_pct(decode['spec']['efficiency'])}**" in PROSE
    assert (f"takes {graph_us:.0f} us ({_pct(bound / (graph_us * 1e-6))} of its bound), eagerly "
            f"{_time(decode['measured'])} (the median; the note's own eager timing read "
            f"{eager_us / 1e3:.2f} ms)") in PROSE
    # kernel launches per call: the decode trace's kernels over its profiled calls
    trace = json.loads(gzip.decompress((TRACES / "h200_llama3_8b_layer_decode.json.gz")
                                       .read_bytes()))
    kernels = sum(1 for e in trace["traceEvents"] if e.get("cat") == "kernel")
    calls = RUN["profile"]["decode"]["profile"]["repeats"]
    assert kernels % calls == 0
    assert f"its {kernels // calls} kernel launches wait on Python" in PROSE
    # the KV cache's torch.cat: two copies of the whole 16 x 8 x 4096 x 128 bf16 cache
    # (K and V), read and written: 2 x 2 x 16*8*4096*128*2 B
    cat = [r for r in RUN["profile"]["decode"]["profile"]["rows"]
           if r["op"] == "aten::cat" and r["shapes"].startswith("[16x8x4095x128")]
    cat_bytes = sum(r["bytes"] for r in cat) / sum(r["count"] for r in cat) * 2
    assert cat_bytes == 2 * 2 * 16 * 8 * 4096 * 128 * 2
    layer_bytes = RUN["tracing"]["decode"]["cuda"]["bytes"]
    share = cat_bytes / layer_bytes
    without = bound * (1 - share)  # memory-bound: the bound scales with the bytes
    assert (f"is {_pct(share)} of the layer's bytes and runs near the memory roof; against a "
            f"decode without that copy (a cache written in place), the same {graph_us:.0f} us "
            f"is {_pct(without / (graph_us * 1e-6))} of the bound") in PROSE


@pytest.fixture(scope="module")
def read_back() -> dict[str, Any]:
    """The two layer traces read back against the published H200: every row."""
    import pytest_roofline as rl

    return {phase: rl.read_trace(TRACES / f"h200_llama3_8b_layer_{phase}.json.gz")
            for phase in ("prefill", "decode")}


def _span(values: list[float]) -> str:
    return f"{min(values) * 100:.0f}-{max(values) * 100:.0f}%"


def test_the_per_kernel_prose_is_the_traces(read_back: dict[str, Any]) -> None:
    prefill, decode = read_back["prefill"].rows, read_back["decode"].rows
    # the JSON's read-back rows are these traces' rows: the run's reader listed calls that
    # differ only in a size-1 dimension's stride (the decode's two KV-cache `cat`s) as two
    # rows, today's one, so rows are matched by (op, shapes) with their times summed
    for phase, rows in (("prefill", prefill), ("decode", decode)):
        kept: dict[tuple[str, str], list[float]] = {}
        for json_row in RUN["profile"][phase]["read_back"]["rows"]:
            sums = kept.setdefault((json_row["op"], json_row["shapes"]), [0.0, 0.0])
            sums[0] += json_row["bound_s"]
            sums[1] += json_row["measured_s"]
        read: dict[tuple[str, str], list[float]] = {}
        for row in rows:  # calls of one label whose strides differ are rows of their own
            sums = read.setdefault((row.op, row.shapes), [0.0, 0.0])
            sums[0] += row.bound
            sums[1] += row.measured
        assert set(kept) <= set(read), set(kept) - set(read)
        for key, figures in kept.items():
            assert read[key] == pytest.approx(figures, rel=1e-6), key
    mm = [r.efficiency for r in prefill if r.op == "aten::mm"]
    assert len(mm) == 4 and f"the four GEMMs run at {_span(mm)} of the 989 TFLOP/s" in PROSE
    [attention] = [r.efficiency for r in prefill if "attention" in r.op]
    assert f"cuDNN's attention at {_pct(attention)}" in PROSE
    elementwise = [r for r in prefill if r.op != "aten::mm" and "attention" not in r.op]
    tiny = [r for r in elementwise if r.shapes.startswith("1x4096x1f32")]
    assert {r.op for r in tiny} == {"aten::add", "aten::rsqrt"}
    rest = [r for r in elementwise if r not in tiny]
    lowest = min(rest, key=lambda r: r.efficiency)
    assert lowest.op == "aten::cat"
    assert (f"elementwise ops at {_span([r.efficiency for r in rest])} of the memory roof (the "
            f"rotary `cat` lowest), except the RMSNorm's eps add and rsqrt on a 4096x1 tensor, "
            f"16 KiB launches at {max(r.efficiency for r in tiny) * 100:.1f}%") in PROSE
    weights = [r.efficiency for r in decode if r.op == "aten::mm"
               and ("4096x14336" in r.shapes or "14336x4096" in r.shapes)]
    small = [r.efficiency for r in decode if r.op == "aten::mm"
             and "4096x14336" not in r.shapes and "14336x4096" not in r.shapes]
    # the run's own two KV-cache `cat` rows (today's reader lists them as one call group)
    cat = [r["efficiency"] for r in RUN["profile"]["decode"]["read_back"]["rows"]
           if r["op"] == "aten::cat" and "4095" in r["shapes"]]
    [attention] = [r.efficiency for r in decode if "attention" in r.op]
    assert f"stream their weights at {_span(weights)} of 4.8 TB/s" in PROSE
    assert f"a copy of the whole cache per token) at {_span(cat)}" in PROSE
    assert f"attention at {_pct(attention)}, and the small GEMMs at {_span(small)}" in PROSE
    assert not read_back["prefill"].faster and not read_back["decode"].faster


def test_the_gemms_above_the_calibrated_roof_are_counted() -> None:
    """Against the calibrated cuda-0, a GEMM row's bound / measured above 1 ran above the
    calibrated peak, whether the run flagged it (efficiency None) or read it 100%."""
    above = {phase: [r for r in RUN["profile"][phase]["profile"]["rows"]
                     if r["op"] == "aten::mm" and r["bound_s"] / r["measured_s"] >= 1]
             for phase in ("prefill", "mixed")}
    gemms = [r for r in RUN["profile"]["prefill"]["profile"]["rows"] if r["op"] == "aten::mm"]
    assert len(above["prefill"]) == len(gemms) == 4 and len(above["mixed"]) == 1
    flagged = [r for rows in above.values() for r in rows if r["efficiency"] is None]
    assert len(flagged) == 1
    assert all(r["efficiency"] == 1.0 for rows in above.values() for r in rows
               if r["efficiency"] is not None)
    assert ("all four prefill GEMMs, and the mixed trace's, ran at or above the calibrated "
            "755 TFLOP/s: one is flagged with that cause, the others read 100%") in PROSE


def test_the_tracing_and_plugin_prose_is_the_runs() -> None:
    tracing = RUN["tracing"]
    assert (f"({tracing['prefill']['cuda']['flops'] / 1e12:.2f} TFLOP at prefill, "
            f"{tracing['decode']['cuda']['flops'] / 1e9:.2f} GFLOP at decode)") in PROSE
    big, tiny = RUN["plugin"]["results"]
    assert big["outcome"] == "passed" and tiny["outcome"] == "failed"
    assert f"passes ({_pct(big['efficiency'])} of the calibrated roof)" in PROSE
    assert f"(a launch, {tiny['efficiency'] * 100:.1f}% of its roof) fails" in PROSE


@pytest.mark.parametrize("edit", [("| 1.44 ms | events", "| 1.45 ms | events"),
                                  ("| 1.11 ms | 77% |", "| 1.11 ms | 78% |"),
                                  ("| 989 TFLOP/s | 76% |", "| 990 TFLOP/s | 76% |"),
                                  ("| 3.92 TB/s | 4.05 TB/s | 3% |",
                                   "| 3.92 TB/s | 4.05 TB/s | 2% |")])
def test_an_edited_cell_fails(edit: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = edit
    assert DOC.count(old) == 1
    monkeypatch.setattr(sys.modules[__name__], "DOC", DOC.replace(old, new))
    with pytest.raises(AssertionError):
        test_every_cell_of_the_calibration_table_is_the_runs()
        test_every_cell_of_the_efficiency_table_is_the_runs()


def test_the_acceptance_script_renders_the_of_columns_as_the_page_does() -> None:
    pytest.importorskip("torch")
    from test_gpu_acceptance import _script

    text = _script().markdown({"sections": {"efficiency": RUN["efficiency"]}, "errors": {}})
    for row in RUN["efficiency"]["rows"]:
        assert f"| {_of(row, 'spec')} |" in text and f"| {_of(row, 'calibrated')} |" in text


def test_the_page_says_the_run_used_other_versions_than_the_pins() -> None:
    device = RUN["device"]
    readme = (ROOT / "README.md").read_text()
    torch_pin = re.search(r"torch==([\d.]+)", readme).group(1)  # type: ignore[union-attr]
    triton_pin = re.search(r"triton==([\d.]+)", readme).group(1)  # type: ignore[union-attr]
    assert not device["torch"].startswith(torch_pin)
    assert f"torch {device['torch']}, CUDA {device['cuda']}" in PROSE
    assert (f"not the versions the test command pins (torch {torch_pin}, triton "
            f"{triton_pin})") in PROSE


def test_the_acceptance_script_lists_the_kernels_above_the_roof() -> None:
    """On the published run's calibrated prefill profile: the four GEMMs (bound / measured
    1.02-1.06), the rows a calibration that no kernel beats would leave empty."""
    pytest.importorskip("torch")
    from test_gpu_acceptance import _script

    above = _script().above_roof(RUN["profile"]["prefill"]["profile"])
    assert [r["op"] for r in above] == ["aten::mm"] * 4
    assert all(1.0 < r["bound_over_measured"] < 1.07 for r in above)
    assert _script().above_roof(RUN["profile"]["decode"]["profile"]) == []


def test_the_gemm_rates_against_the_calibrated_peak_are_the_runs() -> None:
    """755 TFLOP/s calibrated; the 8192^3 matmul's median and the profiled GEMMs' rates
    (FLOPs over measured time, every profile of the run) span the "764-803" the page gives."""
    calibrated = next(r for r in RUN["calibration"]["rows"] if r["figure"] == "matrix.bf16")
    matmul = _row("matmul bf16 8192^3")
    rates = [2 * 8192 ** 3 / matmul["measured"]] + [
        r["flops"] / r["measured_s"] for phase in ("prefill", "decode", "mixed")
        for r in RUN["profile"][phase]["profile"]["rows"]
        if r["op"] == "aten::mm" and r["regime"] == "compute"]
    assert (f"(the run below: {calibrated['run1'] / 1e12:.0f} TFLOP/s calibrated, its GEMMs "
            f"{min(rates) / 1e12:.0f}-{max(rates) / 1e12:.0f})") in PROSE

"""Roofline charts: the chart model, a PNG/SVG written and read back, the character chart."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import analyze, ops
from pytest_roofline.errors import RooflineError
from pytest_roofline.report import ascii_plot, plot
from pytest_roofline.report.compare import compare
from pytest_roofline.report.records import make_record, make_report

H100_BF16 = 989.4e12  # FLOP/s, dense, specs/hardware/h100-sxm.yaml (whitepaper)
H100_BW = 3.35e12  # B/s


def rec(nodeid: str, m: int, hw: str = "h100", outcome: str = "passed") -> dict[str, Any]:
    expected = None if outcome == "report" else ("compute",)
    return make_record(nodeid, analyze(ops.matmul(m, 8192, 8192), hw), expected, outcome)


def sample() -> dict[str, Any]:
    # m = 4096 is compute-bound on h100 (intensity 2048 > ridge 295.3), m = 32 memory-bound
    return make_report([rec("t.py::test_big", 4096), rec("t.py::test_small", 32, "h100", "failed"),
                        rec("t.py::test_side", 64, "h100", "report"),
                        rec("t.py::test_big", 4096, "a100")])


# -- the chart model ---------------------------------------------------------------------------


def test_a_chart_per_chip_with_the_chips_roofs_and_the_records_as_points() -> None:
    charts = plot.charts(sample())
    assert [c.hw for c in charts] == ["a100-80gb-sxm", "h100-sxm"]
    h100 = charts[1]
    assert h100.bandwidth == pytest.approx(H100_BW)
    used = [r for r in h100.roofs if r.used]
    assert [r.dtypes for r in used] == [("bf16",)]  # fp16 shares the peak; no record uses it
    assert used[0].peak == pytest.approx(H100_BF16)
    assert {"fp8", "int8"} <= set(h100.roofs[0].dtypes)  # highest roof first, unused
    big = next(p for p in h100.points if p.name == "test_big")
    # compute-bound: the point sits on the flat roof, at the peak
    assert big.performance == pytest.approx(H100_BF16, rel=1e-9)
    small = next(p for p in h100.points if p.name == "test_small")
    # memory-bound: on the slope, bandwidth x intensity
    assert small.performance == pytest.approx(H100_BW * small.intensity, rel=1e-9)
    assert h100.roof_at(small.intensity, used[0]) == pytest.approx(small.performance)


def test_the_chart_names_and_draws_the_roofs_and_ridges_its_records_use() -> None:
    # An fp32 layernorm and an fp32 GEMM on an A100 are compared with the fp32 vector peak
    # (19.5 TFLOP/s: the CUDA cores), the same figure as the fp64 tensor-core peak: the roof
    # is named "fp32 vector", never "fp64". With a bf16 GEMM beside them, two roofs are in
    # use and both ridges are drawn: 312 / 2.039 = 153.0 and 19.5 / 2.039 = 9.56 FLOP/B;
    # no ridge of an unused precision (fp64's, int8's) is.
    records = [make_record("t::norm", analyze(ops.layernorm(4096, 8192, dtype="fp32"), "a100"),
                           None, "report"),
               make_record("t::gemm32", analyze(ops.matmul(4096, 4096, 4096, dtype="fp32"),
                                                "a100"), None, "report"),
               make_record("t::gemm16", analyze(ops.matmul(4096, 4096, 4096), "a100"), None,
                           "report")]
    (chart,) = plot.charts(records)
    used = {r.label: r.peak for r in chart.roofs if r.used}
    assert used == {"bf16": pytest.approx(312e12), "fp32 vector": pytest.approx(19.5e12)}
    assert not any("fp64" in r.dtypes for r in chart.roofs if r.used)
    assert sorted(chart.ridges) == [pytest.approx(19.5e12 / 2.039e12),
                                    pytest.approx(312e12 / 2.039e12)]
    text = ascii_plot.render({"results": records})
    assert "fp32 vector roof 19.5 TFLOP/s" in text and "ridge 153.0 and 9.56 FLOP/B" in text
    (alone,) = plot.charts(records[:1])  # only the norm: one roof, one ridge, its own
    assert [r.label for r in alone.roofs if r.used] == ["fp32 vector"]
    assert alone.ridges == (pytest.approx(19.5e12 / 2.039e12),)


def test_an_unknown_chip_gets_the_roof_its_records_imply() -> None:
    record = rec("t::x", 64)
    record["hw"] = "lab-chip-not-in-catalog"
    (chart,) = plot.charts([record])
    assert chart.bandwidth == pytest.approx(H100_BW, rel=1e-12)  # bytes / memory time
    assert chart.roofs[0].peak == pytest.approx(H100_BF16, rel=1e-12)  # ridge x bandwidth


def test_records_that_cannot_be_placed_are_listed_not_drawn() -> None:
    record = rec("t::x", 64)
    record.update(intensity=float("inf"), bytes=0.0)
    (chart,) = plot.charts([record])
    assert chart.points == () and chart.skipped == ("t::x",)


def test_regressions_are_marked() -> None:
    base = make_report([rec("t.py::test_big", 4096)])
    new = make_report([rec("t.py::test_big", 32)])
    (chart,) = plot.charts(new, compare(base, new))
    assert chart.points[0].regressed


# -- matplotlib -------------------------------------------------------------------------------


def test_a_png_is_written_and_reads_back_at_the_documented_size(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    image = pytest.importorskip("matplotlib.image")
    path = plot.write(sample(), tmp_path / "out" / "chart.png")
    pixels = image.imread(path)
    # two chips, one row each: chart and table, 10 x 4.8 inches at 100 dpi
    assert pixels.shape[:2] == (960, 1000)
    colours = np.unique((pixels[..., :3] * 255).round().reshape(-1, 3), axis=0)
    assert len(colours) > 50  # not blank: axes, roofs, text, points
    failed_red = np.array([0xD6, 0x27, 0x28])
    assert np.any(np.all(np.abs(pixels[..., :3] * 255 - failed_red) < 2, axis=-1))
    assert [p.name for p in path.parent.iterdir()] == ["chart.png"]  # no temporary left


def test_one_chip_is_one_subplot(tmp_path: Path) -> None:
    image = pytest.importorskip("matplotlib.image")
    path = plot.write([rec("t::a", 64)], tmp_path / "one.png", title="one chip")
    assert image.imread(path).shape[:2] == (480, 1000)


@pytest.mark.parametrize("sizes", [
    [2048, 3072, 4096, 8192],  # four points close together on the compute roof
    [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 300, 320, 384, 448, 512, 640,
     768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384],  # thirty points
])
def test_point_numbers_never_overlap_and_stay_inside_the_axes(sizes: list[int]) -> None:
    pytest.importorskip("matplotlib")
    report = make_report([rec(f"tests/test_gemm.py::test_projection[{m}]", m,
                              outcome=("passed", "failed", "report")[i % 3])
                          for i, m in enumerate(sizes)])
    fig = plot.figure(report)
    renderer = fig.canvas.get_renderer()
    chart_ax, table_ax = fig.axes[:2]
    frame = chart_ax.get_window_extent(renderer)
    numbers = [t for t in chart_ax.texts if t.get_text()[:1].isdigit()]
    boxes = [t.get_window_extent(renderer) for t in numbers]
    # every point has its number (points on the same pixels share one: "15-16")
    shown = set()
    for text in (t.get_text() for t in numbers):
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            shown.update(range(int(lo), int(hi or lo) + 1))
    assert shown == set(range(1, len(sizes) + 1))
    for i, box in enumerate(boxes):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, numbers[i].get_text()
        assert frame.y0 <= box.y0 and box.y1 <= frame.y1, numbers[i].get_text()
        for other in boxes[i + 1:]:
            assert not box.overlaps(other), (numbers[i].get_text(), other)
    # the table names every numbered point, and the y axis spans no empty decade
    table = "\n".join(t.get_text() for t in table_ax.texts)
    assert all(f"test_projection[{m}]" in table for m in sizes)
    y_lo, y_hi = (math.log10(v) for v in chart_ax.get_ylim())
    lowest = min(p.performance for p in plot.charts(report)[0].points)
    assert y_lo > math.log10(lowest) - 1 and y_hi < math.log10(H100_BF16) + 1


def test_svg_and_pdf_are_written_too(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    svg = plot.write(sample(), tmp_path / "chart.svg").read_text()
    assert "<svg" in svg and "test_small" in svg
    assert plot.write(sample(), tmp_path / "chart.pdf").read_bytes().startswith(b"%PDF")


def test_an_unknown_format_or_nothing_to_plot_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RooflineError, match=r"must end in \.png, \.svg, \.pdf"):
        plot.write(sample(), tmp_path / "chart.gif")
    with pytest.raises(RooflineError, match="nothing to plot"):
        plot.write(make_report([]), tmp_path / "chart.png")


def test_without_matplotlib_the_error_names_the_extra(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(plot.MissingExtraError) as info:
        plot.write(sample(), tmp_path / "chart.png")
    assert 'pip install "pytest-roofline[plot]"' in str(info.value)
    assert isinstance(info.value, ImportError)
    assert not (tmp_path / "chart.png").exists()


# -- characters -------------------------------------------------------------------------------


def grid_of(text: str) -> list[str]:
    """The plot rows of a one-chip chart (between the header and the x axis)."""
    lines = text.splitlines()
    axis = next(i for i, line in enumerate(lines) if line.lstrip().startswith("+"))
    return [line for line in lines[:axis] if line[6:8] == " |"]  # the title may take two


def test_the_character_chart_has_the_asked_size_and_a_legend() -> None:
    report = make_report([rec("t.py::test_big", 4096), rec("t.py::test_small", 32)])
    text = ascii_plot.render(report, width=60, height=15)
    rows = grid_of(text)
    assert len(rows) == 15
    assert all(len(row) <= 6 + 2 + 60 for row in rows)
    assert text.splitlines()[0].startswith("roofline: h100-sxm  bf16 roof 989 TFLOP/s")
    # letters run left to right: the memory-bound point first
    assert "  A  test_small" in text and "memory" in text
    assert "  B  test_big" in text and "compute" in text


def test_the_character_chart_keeps_to_80_columns_at_its_default_size() -> None:
    """72 x 20 cells and a 6-column y label make 80: the title and the x axis label wrap
    rather than run past the grid, as a CI log of 80 columns would cut them."""
    report = make_report([rec("t.py::test_big", 4096), rec("t.py::test_small", 32)])
    lines = ascii_plot.render(report).splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert lines[0] == "roofline: h100-sxm  bf16 roof 989 TFLOP/s, memory 3.35 TB/s,"
    assert lines[1] == "  ridge 295.3 FLOP/B (^)"
    assert any(line.endswith("   FLOP/B (DRAM)") for line in lines)
    narrow = ascii_plot.render(report, width=64).splitlines()  # the ticks leave no room
    assert max(len(line) for line in narrow) <= 80


def test_points_sit_on_the_roof_characters() -> None:
    report = make_report([rec("t.py::test_big", 4096), rec("t.py::test_small", 32)])
    rows = grid_of(ascii_plot.render(report))
    row_big = next(r for r in rows if "B" in r)  # test_big: letters run left to right
    row_small = next(r for r in rows if "A" in r)
    assert "-" in row_big and "/" not in row_big.split("B")[1]  # compute-bound: flat roof
    assert "/" in row_small  # memory-bound: the bandwidth slope
    assert rows.index(row_big) < rows.index(row_small)  # higher performance is higher up


def test_a_shared_cell_says_which_results_it_holds() -> None:
    # m = 4096 and m = 4000 land in one cell on the flat roof: intensity m*8192 / (8192 + 2m)
    # = 2048.0 and 2023.7 FLOP/B
    report = make_report([rec("t.py::test_a", 4096), rec("t.py::test_b", 4000),
                          rec("t.py::test_c", 32)])
    text = ascii_plot.render(report)
    assert "*" in "\n".join(grid_of(text))
    assert "  * at 2023.7 FLOP/B: B, C" in text


def test_the_character_chart_marks_verdicts_and_regressions() -> None:
    base = make_report([rec("t.py::test_big", 4096)])
    new = make_report([rec("t.py::test_big", 32, outcome="failed")])
    text = ascii_plot.render(new, compare(base, new))
    assert "FAIL, REGRESSED" in text
    assert ascii_plot.render(make_report([])) == "roofline: no results to plot"
    with pytest.raises(ValueError, match="at least 20 x 6"):
        ascii_plot.render(new, width=10)


@pytest.mark.parametrize("length", [10, 40, 90])
def test_the_side_table_ends_inside_the_image_in_a_readable_font(length: int) -> None:
    """Regressed points of long test names and 9-character intensities (a 65536-cube GEMM:
    2 * 65536**3 FLOPs over 3 * 65536**2 * 2 bytes = 21,845 FLOP/B, "2.185e+04"): each
    table line, "REGRESSED" whole, ends at least 4 pixels inside the 1000-pixel image, and
    the font is 7 pt or more (the table was 6 pt, its lines 5 pixels from the edge: cut at
    "REGRESS" by a wider monospace font)."""
    pytest.importorskip("matplotlib")
    names = [f"t.py::test_{'n' * length}_{i}" for i in range(6)]

    def record(name: str, m: int) -> dict[str, Any]:
        return make_record(name, analyze(ops.matmul(m, m, m), "h100"), ("memory",), "failed")

    base = make_report([record(n, 64) for n in names])
    new = make_report([record(n, 65536) for n in names])
    fig = plot.figure(new, compare(base, new))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    table = next(t for ax in fig.axes for t in ax.texts if "verdict" in t.get_text())
    assert table.get_text().count("REGRESSED") == 6 and "2.185e+04" in table.get_text()
    assert table.get_window_extent(renderer).x1 <= fig.bbox.x1 - 4
    assert table.get_fontsize() >= 7.0

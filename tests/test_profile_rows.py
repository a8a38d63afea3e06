"""A profile's rows say what their bound assumed, and rows of one op whose inputs differ only
in their strides read apart (public traces, ``tests/data/traces/README.md``)."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_roofline.profiling.text import ASSUMED_LEGEND
from pytest_roofline.profiling.torch.join import layout

TRACES = Path(__file__).parent / "data" / "traces"
RESNET = ("kineto_resnet50_v100_2021.json.gz", "v100")
PREFILL = ("h200_llama3_8b_layer_prefill.json.gz", None)


@functools.cache
def profile(name: str, hw: str | None):
    pytest.importorskip("torch")
    from pytest_roofline.profiling import read_trace

    return read_trace(TRACES / name, hw=hw)


def test_the_stem_convolution_of_a_torch_1_8_trace_says_it_assumed_its_stride() -> None:
    # torch 1.8 records neither the stem's stride 2 and padding 3 nor its dtypes: its bound
    # takes one output position an image (the lowest bound), the row says so itself
    from pytest_roofline.profiling.torch import pricing
    from pytest_roofline.profiling.torch.join import NAMED_DTYPE_NOTE

    prof = profile(*RESNET)
    stem = [r for r in prof.rows if r.op == "aten::_convolution"
            and r.shapes == "32x3x224x224f32,64x3x7x7f32"]
    assert len(stem) == 1
    row = stem[0]
    assert pricing.UNRECORDED_CONV in row.assumed
    assert NAMED_DTYPE_NOTE in row.assumed
    assert set(row.assumed) <= set(prof.notes)  # each one said in full in the notes
    assert row.to_dict()["assumed"] == list(row.assumed)
    # the JSON the text is rendered from carries it
    shown = [r for r in prof.to_dict()["rows"] if r["op"] == row.op
             and r["shapes"] == row.shapes]
    assert [r["assumed"] for r in shown] == [list(row.assumed)]
    text = prof.table(top=len(prof.rows), width=200)
    from pytest_roofline.units import format_time

    cell = format_time(row.bound) + "*"
    lines = [line for line in text.splitlines()
             if line.startswith("_convolution(32x3x224x224f32,64x3x7x7f32) ")]
    assert len(lines) == 1 and f" {cell} " in lines[0], lines
    assert ASSUMED_LEGEND in text.splitlines()


def test_a_convolution_with_its_stride_recorded_assumes_none() -> None:
    # a torch 2.x trace records a convolution's stride and padding: nothing is assumed
    prof = profile("tracelens_mi300x_resnet_train.json.gz", "mi300x")
    convs = [r for r in prof.rows if "conv" in r.op]
    assert convs
    assert not [r for r in convs if r.assumed]


def test_a_recent_trace_assumes_nothing_and_shows_no_mark() -> None:
    prof = profile(*PREFILL)
    assert prof.rows and not [r for r in prof.rows if r.assumed]
    assert all(r["assumed"] == [] for r in prof.to_dict()["rows"])
    text = prof.table(top=len(prof.rows))
    assert ASSUMED_LEGEND not in text
    assert "*" not in text


def test_rows_of_one_op_that_differ_only_in_strides_read_apart() -> None:
    # Llama's rotary embedding multiplies q (1x32x4096x128) and k (1x8x4096x128) by cos:
    # once on the projection's output viewed [1, 4096, heads, 128] and transposed to
    # [1, heads, 4096, 128] (strides heads·4096·128, 128, heads·128, 1), once on a
    # contiguous copy. Same shapes, same dtypes, other strides: rows of their own, which
    # must not print the same.
    prof = profile(*PREFILL)
    labels = [r.label for r in prof.rows]
    assert len(labels) == len(set(labels)), labels
    doc = prof.to_dict()["rows"]
    assert len({(r["op"], r["shapes"], r["layout"]) for r in doc}) == len(doc)
    for heads in (32, 8):
        shapes = f"1x{heads}x4096x128bf16,1x1x4096x128bf16"
        mul = [r for r in prof.rows if r.op == "aten::mul" and r.shapes == shapes]
        strided = f"input 1 strides {heads * 4096 * 128}:128:{heads * 128}:1"
        assert sorted(r.layout for r in mul) == ["contiguous", strided]
        assert sorted(r.label for r in mul) == [f"mul({shapes}; contiguous)",
                                                f"mul({shapes}; {strided})"]
        assert sorted(r["layout"] for r in doc if r["op"] == "aten::mul"
                      and r["shapes"] == shapes) == ["contiguous", strided]
    # the text table (80 columns, labels cut in the middle) keeps their ends apart
    text = prof.table(top=len(prof.rows))
    rows = [line.split()[0] for line in text.splitlines() if line.startswith("mul(1x32x")]
    assert len(rows) == 2 and len(set(rows)) == 2, rows
    # rows that print apart already have no layout: only the four muls have one
    assert sorted(r.op for r in prof.rows if r.layout) == ["aten::mul"] * 4
    assert sorted(r["op"] for r in doc if r["layout"]) == ["aten::mul"] * 4
    assert "mm(4096x4096bf16,4096x4096bf16)" in labels


def test_layout_names_each_strided_input() -> None:
    # a [2, 3] tensor is contiguous at strides (3, 1); its transpose [3, 2] at (1, 3) is not
    assert layout([[2, 3], [3, 2]], [[3, 1], [1, 3]]) == "input 2 strides 1:3"
    assert layout([[2, 3], []], [[3, 1], []]) == "contiguous"  # a scalar has no layout
    assert layout([[[2, 3], [4]]], [[[3, 1], [1]]]) == "contiguous"  # a list of tensors
    assert layout([[[2, 3], [4]]], [[[1, 2], [1]]]) == "input 1 strides [1:2,1]"
    assert layout([[2, 3]], None) == "strides not recorded"


@given(st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=5))
def test_a_contiguous_input_reads_contiguous_and_a_transposed_one_does_not(
        shape: list[int]) -> None:
    packed = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    assert layout([shape], [packed]) == "contiguous"
    if len(shape) >= 2 and shape[-1] > 1 and shape[-2] > 1:
        swapped = [*packed[:-2], packed[-1], packed[-2]]
        assert layout([shape], [swapped]).startswith("input 1 strides ")


def test_the_reports_tables_show_the_layout_and_the_mark() -> None:
    # the pytest reports render a record's profile JSON: the Markdown table and the summary
    # keep the two rotary muls apart, and the summary marks an assumed bound
    from pytest_roofline import fields
    from pytest_roofline.report.kernels import markdown_lines, summary_lines

    prefill = {"nodeid": "t", fields.PROFILE: [profile(*PREFILL).to_dict()]}
    md = [line for line in markdown_lines([prefill], top=30)
          if line.startswith("| `mul(1x32x4096x128bf16,1x1x4096x128bf16")]
    assert len(md) == 2 and len({line.split("`")[1] for line in md}) == 2, md
    resnet = profile(*RESNET).to_dict(8)
    summary = summary_lines([{"nodeid": "t", fields.PROFILE: [resnet]}], top=8)
    assert any("*" in line for line in summary[2:]), summary

"""The shared FLOP and byte rules (``pytest_roofline.ops._family``): each closed form against
a count made the slow way, and the one table of collectives read by ops and both tracers."""

from __future__ import annotations

import itertools

import pytest

from pytest_roofline.ops import _family as R


def _brute_pairs(q_len: int, kv_len: int, offset: int, left: int | None,
                 right: int | None) -> int:
    """Counted one pair at a time: query i at key position i + offset sees keys
    [position - left, position + right] (None: unbounded) inside [0, kv_len)."""
    total = 0
    for i in range(q_len):
        here = i + offset
        for j in range(kv_len):
            if (left is None or j >= here - left) and (right is None or j <= here + right):
                total += 1
    return total


@pytest.mark.parametrize("align", R.ALIGNMENTS)
def test_scored_pairs_closed_form_equals_counting_every_pair(align: str) -> None:
    # exact: both are whole numbers far below 2**53
    for q_len, kv_len in itertools.product(range(1, 10), range(1, 10)):
        offset = kv_len - q_len if align == "bottom_right" else 0
        for left, right in itertools.product([None, 0, 1, 2, 5, 12], [None, 0, 1, 3, 12]):
            assert R.scored_pairs(q_len, kv_len, left=left, right=right, align=align) == (
                _brute_pairs(q_len, kv_len, offset, left, right)), (q_len, kv_len, left, right)
        assert R.scored_pairs(q_len, kv_len, causal=True, align=align) == _brute_pairs(
            q_len, kv_len, offset, None, 0)


def test_scored_pairs_of_prefill_and_decode() -> None:
    # prefill causal: n(n+1)/2; decode: one query sees every key; top-left decode sees one
    assert R.scored_pairs(4096, 4096, causal=True) == 4096 * 4097 / 2
    assert R.scored_pairs(1, 4096, causal=True) == 4096
    assert R.scored_pairs(1, 4096, causal=True, align="top_left") == 1


def test_ops_models_and_tracers_share_one_copy_of_each_rule() -> None:
    from pytest_roofline.models import training, transformer
    from pytest_roofline.ops import vector
    from pytest_roofline.tracing import known_ops

    assert transformer.GELU_FLOPS is R.GELU_FLOPS and R.ELEMENT_FLOPS["gelu"] == R.GELU_FLOPS
    assert transformer.ADAM_FLOPS is R.ADAM_FLOPS
    assert training.ADAM_STATE_BYTES is R.ADAM_STATE_BYTES
    assert vector.softmax_kernel("s", 4, 10, "bf16").flops == R.softmax_flops(40.0)
    # flash-attn's windows and ops.attention's window are the same count
    from pytest_roofline.ops.attention import scored_pairs

    assert known_ops.pairs(7, 9, causal=True, left=3) == scored_pairs(7, 9, True, 4) == (
        R.scored_pairs(7, 9, causal=True, left=3))


def test_pools_and_reductions_follow_the_reduction_rule() -> None:
    # a max pool of a 3x3 window is a reduction of 9 elements to 1: 8 comparisons; an
    # average adds its divide
    assert R.pool_flops(10.0, 9.0, average=False) == R.reduce_flops(90.0, 10.0) == 80.0
    assert R.pool_flops(10.0, 9.0, average=True) == 90.0
    # bilinear: 4 taps, 4 multiplies and 3 adds
    assert R.interpolate_flops(1.0, 4) == 7.0


def test_collective_rows_hold_the_ring_closed_forms() -> None:
    # the module table of ops.collectives, at N = 8
    n = 8
    ar, ag, rs = R.collective("all_reduce"), R.collective("all_gather"), R.collective(
        "reduce_scatter")
    assert ar.sent(n) == 2 * 7 / 8 and ar.steps(n, "ring") == (1.0, 14.0)
    assert ar.steps(n, "one_shot") == (4.0, 1.0) and ar.steps(n, "tree") == (1.0, 6.0)
    assert ag.held(n) == (1 / 8, 1.0) and rs.held(n) == (1.0, 1 / 8)
    assert R.collective("point_to_point").held(n) == (1.0, 0.0)
    for framework in ("torch", "jax", "hlo"):
        names = [name for row in R.COLLECTIVES.values() for name in getattr(row, framework)]
        assert len(names) == len(set(names)), f"a {framework} name in two rows"


def test_hlo_element_widths_come_from_the_one_table() -> None:
    """The SPMD reader's bytes per HLO element type are ``dtypes.ITEMSIZE``'s (the one table
    of widths, read through ``dtypes.element_bytes``), fp8 variants and complex types
    included; a type the table does not know takes the reader's
    stated default, never a width of its own."""
    from pytest_roofline import dtypes
    from pytest_roofline.tracing._jax_spmd import _width

    expected = {"pred": "bool", "s8": "int8", "u8": "int8", "f8e4m3fn": "fp8",
                "f8e5m2": "fp8", "f8e4m3fnuz": "fp8", "bf16": "bf16", "f16": "fp16",
                "s16": "int16", "u16": "int16", "f32": "fp32", "s32": "int32",
                "u32": "int32", "f64": "fp64", "s64": "int64", "u64": "int64"}
    for hlo, name in expected.items():
        assert _width(hlo) == dtypes.ITEMSIZE[name], hlo
    # a complex type: two parts of its float type; XLA's 2-bit s2 is a type no table knows
    assert _width("c64") == 2 * dtypes.ITEMSIZE["fp32"]
    assert _width("c128") == 2 * dtypes.ITEMSIZE["fp64"]
    assert _width("s2") == 4 and _width("s2", None) is None

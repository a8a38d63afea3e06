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


# -- each constant of the rules, from its count of operations -----------------------------------
# (the mutation run, docs/mutation.md, found that a changed constant failed no test)

#: FLOPs an element of the elementwise ops that are not one operation, each from its
#: operations (a fused multiply-add counts 1, as a select or a clamp does; exp, log, tanh,
#: erfinv one each):
ELEMENT_COUNTS = {
    "silu": 4,         # x / (1 + exp(-x)): negate, exp, add, divide
    "sigmoid": 4,      # 1 / (1 + exp(-x)): negate, exp, add, divide
    "logistic": 4,     # JAX's name of the sigmoid
    "gelu": 8,         # tanh form: x**3 (2 multiplies), 2 multiply-adds, tanh, add, 2 multiplies
    "softplus": 3,     # log(1 + exp(x)): exp, add, log
    "elu": 3,          # alpha * (exp(x) - 1) where x < 0: exp, subtract, multiply
    "selu": 4,         # scale * elu: elu's 3 and a multiply
    "hardswish": 4,    # x * clamp(x + 3, 0, 6) / 6: add, clamp, multiply, divide
    "hardsigmoid": 3,  # clamp(x + 3, 0, 6) / 6: add, clamp, divide
    "log_sigmoid": 4,  # -log(1 + exp(-x)): negate, exp, add, log (the sign folded)
    "logaddexp": 4,    # max + log1p(exp(-|a - b|)): subtract, exp, log1p, add
    "erfinv": 1,       # one special function, as exp is one
    "lerp": 2,         # a + w * (b - a): subtract, multiply-add
    "addcmul": 2,      # a + v * b * c: multiply, multiply-add
    "addcdiv": 2,      # a + v * b / c: divide, multiply-add
    "mish": 5,         # x * tanh(softplus(x)): softplus 3 (exp, add, log), tanh, multiply
}


def test_each_elementwise_op_costs_its_operations() -> None:
    for name, count in ELEMENT_COUNTS.items():
        assert R.ELEMENT_FLOPS[name] == count, name
        assert R.element_flops(name, 1000.0) == 1000.0 * count, name
    assert R.GELU_FLOPS == 8
    assert R.element_flops("add", 1000.0) == 1000.0   # one operation: 1 an element
    # every entry pinned (mish was 6, one more than its operations: docs/mutation.md)
    assert set(R.ELEMENT_FLOPS) == set(ELEMENT_COUNTS)
    # Adam(W) a parameter (ops/_family.py's derivation): weight decay 2, first moment 3,
    # second moment 4, denominator 3, step 3
    assert R.ADAM_FLOPS == 2 + 3 + 4 + 3 + 3 == 15


def test_each_per_element_constant_is_its_count() -> None:
    assert R.SOFTMAX_FLOPS == 5        # max, subtract, exp, sum, divide
    assert R.softmax_flops(10.0) == 50.0
    assert R.LAYERNORM_FLOPS == 7      # mean, subtract, square, mean, rsqrt-scale, weight, bias
    assert R.RMSNORM_FLOPS == 4        # square, mean, rsqrt-scale, weight
    assert R.norm_flops("layernorm", 10.0, weight=False, bias=False) == 50.0
    assert R.norm_flops("rmsnorm", 10.0, weight=False, bias=False) == 30.0
    assert R.GLU_FLOPS == 5            # silu(gate) * up: negate, exp, add, divide, multiply
    assert R.SOFTMAX_BACKWARD_FLOPS == 4   # y * (dy - sum(dy * y)): multiply, sum, subtract,
    #                                        multiply
    assert R.EVAL_BATCH_NORM_FLOPS == 2    # a per-channel scale and shift: multiply, add
    assert R.NORM_BACKWARD_FLOPS == 11     # x-hat (2), g·dy and x-hat·g·dy (2), two row
    #                                        means (2), the combination (3), weight and bias
    #                                        gradients' sums (2)
    assert R.ADAM_STATE_BYTES == 12        # fp32 master weights, first and second moments
    assert R.adam_step_bytes(2.0) == 28.0  # state read and written, a bf16 gradient read and
    #                                        a bf16 weight written


def test_attention_backward_products_and_bytes() -> None:
    # FlashAttention-2's backward over 100 pairs, head_dim 64, value_dim 32: Q·Kᵀ recomputed,
    # dQ = dS·K and dK = dSᵀ·Q over head_dim (3 x 64), dV = Pᵀ·dO and dP = dO·Vᵀ over
    # value_dim (2 x 32): 100 x 256 MACs; the forward, Q·Kᵀ and P·V: 100 x 96
    assert R.attention_backward_macs(100, 64, 32) == 25_600
    assert R.attention_forward_macs(100, 64, 32) == 9_600
    # Q, K, V, O read and dQ, dK, dV, dO (O's size) each once, and the log-sum-exp read
    assert R.attention_backward_bytes(q=10, k=20, v=30, o=40, lse=4) == 2 * 100 + 4
    assert R.lse_bytes(3) == 12        # fp32 each
    # on the vector units, per scored pair: the recomputed softmax (5) and
    # dS = scale · P · (dP - D): subtract, multiply, the softmax scale (3)
    assert R.ATTENTION_GRAD_FLOPS == 3 and R.ATTENTION_BACKWARD_VECTOR_FLOPS == 8


def test_sorting_and_pools_and_interpolation_count_their_comparisons() -> None:
    assert R.sort_flops(1024, 8) == 1024 * 3           # log2(8) comparisons an element
    assert R.sort_flops(10, 1) == 10                   # a row of 1 is compared once at least
    assert R.pool_flops(4, 9, average=False) == 32     # 8 comparisons a 3 x 3 window
    assert R.pool_flops(4, 9, average=True) == 36      # 8 adds and a divide
    assert R.interpolate_flops(5, 4) == 35             # 4 multiplies, 3 adds an output
    assert R.dot_flops(8) == 15 and R.reduce_flops(10, 2) == 8 and R.reduce_flops(1, 2) == 0


def test_a_depthwise_convolution_alone_runs_on_the_vector_units() -> None:
    assert R.conv_unit(32, 1) == "vector"      # depthwise: one input channel a group
    assert R.conv_unit(2, 1) == "vector"       # two groups of one channel: depthwise too
    assert R.conv_unit(1, 1) == "matrix"       # one group of one channel: a plain conv
    assert R.conv_unit(32, 2) == "matrix"      # grouped, two channels a group


def test_one_shot_of_a_gather_sends_what_the_ring_does_in_one_step() -> None:
    """Only the all-reduce's one-shot sends more than its ring ((N-1)·D against
    2·D·(N-1)/N): a gather, a scatter or an all-to-all sends (N-1)/N·D either way."""
    row = R.collective("all_gather")
    assert row.steps(8, "one_shot") == (1.0, 1.0)
    assert R.collective("all_reduce").steps(8, "one_shot") == (4.0, 1.0)   # N / 2


def test_collective_rows_are_frozen_and_found_by_each_frameworks_name() -> None:
    import dataclasses

    row = R.collective("all_reduce")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.kind = "x"  # type: ignore[misc]
    assert R.collective_named("torch", "all_reduce") is row
    assert R.collective_named("jax", "psum") is row
    assert R.collective_named("hlo", "all-gather") is R.collective("all_gather")
    assert R.collective_named("hlo", "all-reduce-start") is None

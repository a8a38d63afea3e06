"""Serving engines' custom ops (aiter, sgl_kernel, sglang) priced by the formulas the tracer
ships for them (``tracing.vendor_ops``), each checked against a closed form written here, in
a trace as ``pytest-roofline profile`` reads it (the recorded inputs rebuilt on meta and
handed to the formula); and TraceLens's SGLang prefill trace priced whole (86.0% before,
TraceLens 95.9%)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.engine.workload import Workload
from pytest_roofline.profiling import read_trace

pytest.importorskip("torch")

from pytest_roofline.profiling.torch import pricing

TRACES = Path(__file__).parent / "data" / "traces"
PREFILL = TRACES / "tracelens_mi300x_sglang_prefilldecode.json.gz"
BF = "c10::BFloat16"


def priced(name: str, dims: list[Any], types: tuple[str, ...],
           concrete: tuple[str, ...]) -> Workload:
    pricing._CACHE.clear()
    result = pricing.price(name, dims, types, concrete)
    assert isinstance(result, Workload), result
    return result


def test_aiter_rmsnorm() -> None:
    # out, input 4x8 bf16, weight 8: 4 FLOPs an element (square, mean, rsqrt-scale,
    # weight) = 128; bytes: input 32 and weight 8 read, out 32 written, 2 bytes each
    w = priced("aiter::rmsnorm", [[4, 8], [4, 8], [8], []], (BF, BF, BF, "Scalar"),
               ("", "", "", "1e-06"))
    assert (w.flops, w.bytes) == (4 * 32, 2 * (32 + 8 + 32))


def test_aiter_add_rmsnorm() -> None:
    # residual add (1) then RMS norm with weight (4): 5 x 32 FLOPs; input, residual_in (32
    # each) and weight (8) read, out and residual_out (32 each) written
    w = priced("aiter::add_rmsnorm", [[4, 8]] * 4 + [[8], []], (BF,) * 5 + ("Scalar",),
               ("",) * 5 + ("1e-06",))
    assert (w.flops, w.bytes) == (5 * 32, 2 * (32 + 32 + 8 + 32 + 32))


def test_sgl_kernel_silu_and_mul() -> None:
    # out 4x8 = silu(x[:, :8]) * x[:, 8:] of x 4x16: silu 4 + mul 1 per output element;
    # x read (64), out written (32)
    w = priced("sgl_kernel::silu_and_mul", [[4, 8], [4, 16]], (BF, BF), ("", ""))
    assert (w.flops, w.bytes) == (5 * 32, 2 * (64 + 32))


def test_sgl_kernel_rotary_embedding() -> None:
    # 6 tokens, query 4 heads x 16, key 2 heads x 16, head_size 16, a 100 x 16 cos/sin cache
    # (rot_dim 16): 6 x (4 + 2) = 36 head rows rotated, 3 FLOPs an element (4 multiplies
    # and 2 adds a pair) = 3 x 36 x 16; bytes: positions 6 x 8, query and key read and
    # written (2 x 576 x 2), one cache row a token (6 x 16 x 2)
    w = priced("sgl_kernel::rotary_embedding",
               [[6], [6, 64], [6, 32], [], [100, 16], []],
               ("long int", BF, BF, "Scalar", BF, "Scalar"), ("", "", "", "16", "", "True"))
    assert w.flops == 3 * 36 * 16
    assert w.bytes == 6 * 8 + 2 * (6 * 64 + 6 * 32) * 2 + 6 * 16 * 2


def test_sglang_store_cache() -> None:
    # k, v 6x32 bf16 written at 6 slots of 100-row caches: k, v (384 B each) and loc (48 B)
    # read, 2 x 384 B written; a copy: no FLOPs
    w = priced("sglang::store_cache",
               [[6, 32], [6, 32], [100, 32], [100, 32], [6], [], []],
               (BF, BF, BF, BF, "long int", "Scalar", "Scalar"),
               ("", "", "", "", "", "2048", "0"))
    assert (w.flops, w.bytes) == (0.0, 2 * (384 + 384) + 48)


MHA_DIMS = [[15360, 32, 128], [835874, 8, 128], [835874, 8, 128], [16], [16], [15616]] + [
    []] * 24
MHA_TYPES = (BF, BF, BF, "int", "int", "int") + ("Scalar",) * 12 + ("",) * 12
MHA_VALUES = ("",) * 6 + ("1024", "1024", "0.", "0.088388347648318447", "0.", "False",
                          "True", "-1", "-1", "0", "False", "False") + ("",) * 12


def test_aiter_mha_batch_prefill_as_recorded_by_sglang() -> None:
    """15 sequences (cu_seqlens_q of 16), 15,360 query tokens, 32 heads of 128, 8 KV heads,
    causal: the lengths are not recorded, so the fewest pairs the totals allow: 15 equal
    sequences of 1,024 (the trace's own annotation says sq15360, sum of squares 15 x
    1024^2: exactly so), 1,024 x 1,025 / 2 pairs each a head. FLOPs a pair: Q·K and P·V,
    2 x 128 each, and the softmax's 5. Bytes: Q and O (15,360 x 32 x 128 x 2 each), the
    lengths' and pointers' int32s (16 + 16), and K, V rows and page entries for one key a
    query (15,360 x 8 x 256 x 2, 15,360 x 4)."""
    w = priced("aiter::mha_batch_prefill", MHA_DIMS, MHA_TYPES, MHA_VALUES)
    pairs = 32 * 15 * 1024 * 1025 // 2
    assert w.flops == pairs * (4 * 128 + 5)
    q = 15360 * 32 * 128 * 2
    assert w.bytes == 2 * q + 32 * 4 + 15360 * 4 + 15360 * 8 * 256 * 2
    refused = pricing.price("aiter::mha_batch_prefill", MHA_DIMS, MHA_TYPES,
                            (*MHA_VALUES[:12], "False", *MHA_VALUES[13:]))
    assert isinstance(refused, str) and refused.startswith("its formula refused")
    import torch

    from pytest_roofline.tracing import TraceError, vendor_ops

    meta = [torch.empty(d, dtype=torch.bfloat16, device="meta") for d in MHA_DIMS[:6]]
    with pytest.raises(TraceError, match="non-causal"):
        vendor_ops.mha_batch_prefill(*meta, 1024, 1024, 0.0, 0.1, 0.0, False, False)


def test_sglangs_prefill_trace_is_priced_whole() -> None:
    profile = read_trace(PREFILL)
    assert profile.priced_share >= 0.96  # 86.0% before these formulas; TraceLens 95.9%
    shipped = {r.op for r in profile.rows if r.formula == "the tracer's formula"}
    assert {"aiter::mha_batch_prefill", "aiter::rmsnorm", "aiter::add_rmsnorm",
            "sgl_kernel::silu_and_mul", "sgl_kernel::rotary_embedding",
            "sglang::store_cache"} <= shipped


def test_flash_attns_shipped_formulas_are_found_before_any_rebuild() -> None:
    """In a fresh process a trace's ``flash_attn::`` op is priced by its shipped formula
    even when nothing was rebuilt on meta before it (the tracer, which registers them, not
    yet started)."""
    import subprocess
    import sys

    code = ("from pytest_roofline.profiling.torch import pricing; "
            "print(pricing.has_formula('flash_attn::_flash_attn_forward'), "
            "pricing.has_formula('flashattn::_flash_attn_backward'), "
            "pricing.has_formula('aiter::rmsnorm'), pricing.has_formula('nolib::x'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["True", "True", "True", "False"]

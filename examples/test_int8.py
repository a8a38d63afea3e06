"""int8 weights with bf16 activations: half the weight bytes for the same FLOPs.

With k = n = 8192 the weight dominates the traffic, so the intensity nearly doubles and the
batch needed to become compute-bound halves: m >= 160 instead of m >= 319 on an H100.
"""

from __future__ import annotations

import pytest

from pytest_roofline import analyze, ops


@pytest.mark.parametrize("m", [
    pytest.param(64, marks=pytest.mark.roofline(regime="memory")),
    pytest.param(160, marks=pytest.mark.roofline(regime="compute")),
])
@pytest.mark.roofline(hw="h100")
def test_int8_weight_projection(m: int, roofline) -> None:
    int8 = roofline.add(ops.matmul(m, 8192, 8192, b_dtype="int8"))
    bf16 = ops.matmul(m, 8192, 8192)
    assert int8.flops == bf16.flops
    assert int8.bytes == bf16.bytes - 8192 * 8192  # one byte per weight instead of two


@pytest.mark.roofline(hw="h100", regime="memory", fits=True)
def test_int8_llama_decode_is_faster(roofline, llama_8b) -> None:
    roofline.add(llama_8b.decode(batch=8, context=4096, weight_dtype="int8"))
    bf16_time = analyze(llama_8b.decode(batch=8, context=4096), "h100").time
    assert roofline.result().time < 0.7 * bf16_time  # weights are most of a step's bytes

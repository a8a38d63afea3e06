"""Matrix products on both sides of the H100 ridge.

``[m, 8192] @ [8192, 8192]`` in bf16 has intensity m·8192 / (2·m + 8192) FLOP/B (each
operand read once, the output written once). The H100 SXM ridge is 989.4 TFLOP/s / 3.35 TB/s
= 295.3 FLOP/B, crossed between m = 318 (295.1) and m = 319 (296.0).
"""

from __future__ import annotations

import pytest

from pytest_roofline import ops

memory = pytest.mark.roofline(regime="memory")
compute = pytest.mark.roofline(regime="compute")


@pytest.mark.parametrize("m", [
    pytest.param(1, marks=memory, id="gemv"),
    pytest.param(16, marks=memory),
    pytest.param(256, marks=memory),
    pytest.param(319, marks=compute, id="319-just-past-the-ridge"),
    pytest.param(1024, marks=compute),
    pytest.param(4096, marks=compute),
])
@pytest.mark.roofline(hw="h100")
def test_projection(m: int, roofline) -> None:
    roofline.add(ops.matmul(m, 8192, 8192))


@pytest.mark.roofline(hw=["h100", "a100", "tpu-v5e"], regime="compute", margin=0.5,
                      workload=ops.matmul(4096, 4096, 4096))
def test_square_gemm_is_clearly_compute_bound() -> None:
    """Intensity 1365 FLOP/B, over 1.5x every ridge listed (margin=0.5)."""


@pytest.mark.roofline(hw="h100", regime="memory", max_time="50 us",
                      workload=ops.matmul(16, 8192, 8192))
def test_small_batch_time_bound() -> None:
    """Reading the 128 MiB weight at 3.35 TB/s takes 40 us: the roofline bound."""


@pytest.mark.xfail(reason="shows what a failed roofline expectation looks like", strict=True)
@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul(64, 8192, 8192))
def test_small_gemm_expected_compute_bound() -> None:
    """m = 64 sits far below the ridge: the verdict names the m that would be compute-bound."""

"""Normalization layers run on the vector units and stay memory-bound everywhere."""

from __future__ import annotations

import pytest

from pytest_roofline import ops

pytestmark = pytest.mark.roofline(hw=["h100", "tpu-v5e", "mi300x"])


@pytest.mark.roofline(regime="memory", max_intensity=4,
                      workload=ops.layernorm(8192, 4096))
def test_layernorm() -> None:
    """7 FLOPs per element over 4 bytes moved per element (bf16 in and out): 1.75 FLOP/B."""


@pytest.mark.roofline(regime="memory", workload=ops.rmsnorm(8192, 4096, residual=True))
def test_fused_rmsnorm_residual() -> None:
    """The residual add fused in: more bytes, still far below any ridge."""


@pytest.mark.roofline(hw="tpu-v5e", regime="memory", flops=2e9, bytes="4 GB")
def test_custom_kernel_from_counts() -> None:
    """A kernel known only by its counts: 2 GFLOP over 4 GB."""

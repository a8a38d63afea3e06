"""Sharded work and collectives: the network is the third roof.

A matmul split along k over 8 H100s all-reduces its [m, n] partial sums over NVLink
(18 links x 25 GB/s one way). Per chip the matmul takes 2·m·(k/8)·n / peak and the
all-reduce 2·(7/8)·m·n·2 B / 450 GB/s: the chip is compute-bound only once k/8 is large.
"""

from __future__ import annotations

import pytest

from pytest_roofline import ops


@pytest.mark.parametrize("k", [
    pytest.param(8192, marks=pytest.mark.roofline(regime="network")),
    pytest.param(65536, marks=pytest.mark.roofline(regime="compute")),
])
@pytest.mark.roofline(hw="h100")
def test_sharded_matmul(k: int, roofline) -> None:
    roofline.add(ops.sharded_matmul(8192, k, 8192, shards=8))


@pytest.mark.roofline(hw=["h100", "tpu-v5e"], regime="network",
                      workload=ops.all_reduce(1 << 28, 8))
def test_gradient_all_reduce() -> None:
    """512 MB of bf16 gradients all-reduced over 8 chips: no FLOPs to hide behind."""


@pytest.mark.roofline(hw="h100", regime=["compute", "memory"],
                      workload=ops.sharded_matmul(8192, 65536, 8192, shards=8, overlap=True))
def test_overlapped_collective_matmul() -> None:
    """Overlapping the all-reduce with the matmul hides the network entirely."""

"""Llama 3 decode and prefill: memory-bound token by token, compute-bound over a prompt."""

from __future__ import annotations

import pytest

from pytest_roofline import models

llama = models.load("llama-3-8b")


@pytest.mark.roofline(hw=["h100", "a100", "h100-sustained"], regime="memory", fits=True,
                      workload=llama.decode(batch=8, context=4096))
def test_decode_step() -> None:
    """Each step reads all 8B weights and the KV cache for one token per sequence."""


@pytest.mark.roofline(hw="h100", regime="compute", fits=True,
                      workload=llama.prefill(batch=1, seq=2048))
def test_prefill() -> None:
    """2,048 prompt tokens share every weight read: intensity far above the ridge."""


@pytest.mark.parametrize("batch", [1, 32, 128])
@pytest.mark.roofline(hw="h100", regime="memory", max_time="40 ms")
def test_decode_stays_memory_bound_as_batch_grows(batch: int, roofline, llama_8b) -> None:
    """At context 4096 the KV cache grows with the batch as fast as the FLOPs do."""
    roofline.add(llama_8b.decode(batch=batch, context=4096))


@pytest.mark.roofline(hw="h100", fits=False,
                      workload=models.load("llama-3-70b").decode(batch=8, context=4096))
def test_70b_does_not_fit_one_h100() -> None:
    """140 GB of bf16 weights alone exceed 80 GB of HBM."""


@pytest.mark.roofline(hw="h100", regime="memory", fits=True,
                      workload=models.load("llama-3-70b").decode(batch=8, context=4096, tp=8))
def test_70b_decode_over_eight_h100() -> None:
    """Tensor parallel over 8 chips: a slice per chip fits, the all-reduces cross NVLink."""

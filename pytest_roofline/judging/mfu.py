"""MFU: model FLOPs utilization of a measured run, beside its roofline efficiency.

MFU is what training teams gate on (PaLM, Chowdhery et al. 2022, appendix B): the model's
matrix FLOPs over the measured time and the chip's matrix peak. The model FLOPs are those of
the matrix kernels of the workload, without the forward pass recomputed for the backward
(kernels named ``recompute.*``, counted by hardware FLOPs utilization but not by MFU). The
peak is the one the ridge uses: the matrix peak of the precision the matrix work is priced
in (``Result.peak``). Where the roofline efficiency says how close a run is to its own
bound, MFU says how much of the chip's matrix peak it turns into model work; a
memory-bound step can reach its roof at a low MFU.

MFU never reads above the run's efficiency: the matrix peak's time of the model FLOPs is at
most the roofline bound, so MFU <= efficiency; a run at or above its bound has no efficiency
(:mod:`pytest_roofline.efficiency`: never a clamped 1) and no MFU either.
"""

from __future__ import annotations

from typing import Any


def mfu(result: Any, workload: Any) -> float | None:
    """The MFU of a measured *result* (``analyze(workload, ...)``), or None when it was not
    measured, ran faster than its bound, or *workload* does no matrix work (its kernels of
    ``unit="matrix"``)."""
    measured = getattr(result, "measured", None)
    efficiency = getattr(result, "efficiency", None)
    if measured is None or efficiency is None or not float(measured) > 0 \
            or not float(result.peak) > 0:
        return None
    model = sum(float(k.flops) for k, kernel in zip(result.kernels, workload.kernels,
                                                    strict=False)
                if kernel.unit == "matrix" and not k.name.startswith("recompute."))
    if model <= 0:
        return None
    return min(model / (float(measured) * float(result.peak)), float(efficiency))

"""The one private torch API the GPU calibration uses, isolated here with a test
(``tests/test_trace_compat.py``).

* ``torch._scaled_mm``: the only way torch offers to run an fp8 (e4m3) GEMM on the tensor
  cores (there is no public fp8 matmul); the fp8 matrix peak is measured through it.
"""

from __future__ import annotations

from typing import Any


def scaled_mm(torch: Any) -> Any:
    """torch's fp8 GEMM entry point, ``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=)``
    (*a* row-major, *b* column-major); None where this torch build has none."""
    try:
        return torch._scaled_mm
    except AttributeError:
        return None

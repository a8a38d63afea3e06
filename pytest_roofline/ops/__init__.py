"""Kernel formulas: one pure function per kernel, each returning a :class:`Workload`.

Workloads are declared by what they are (``ops.matmul(4096, 4096, 4096)``), never by
hand-counted FLOPs. Every function states its formula in its docstring; the conventions all
of them share:

* FLOPs count a multiply-accumulate as 2 (the vendors' convention; ``analyze(...,
  flops_per_mac=1)`` switches).
* Bytes are off-chip memory traffic with each tensor read or written once (ideal tiling, a
  lower bound), each tensor at its own precision.
* Matrix products run on the matrix units; softmax, norms, elementwise ops, reductions and
  lookups on the vector units.
* With arrays, bytes follow each array's storage dtype and ``dtype=`` (or ``a_dtype=``,
  ``b_dtype=``) sets the precision the work is computed in, which picks the peak. Integer
  matrix work is priced at the chip's int8 (int4) matrix peak only in int8 (int4); int16,
  int32, int64 and bool work at the vector units' peak (see :mod:`pytest_roofline.dtypes`).
* Sizes are whole numbers >= 1; a bad one is a :class:`~pytest_roofline.WorkloadError`
  naming the argument and the value. Array-likes (anything with ``.shape`` and ``.dtype``)
  give their shapes and precision; no framework is imported.
* Where a size is a natural knob (matmul's m, a batch) the workload carries a
  :class:`~pytest_roofline.Knob`, so a verdict can say "compute-bound from m >= 319".
"""

from __future__ import annotations

from .attention import attention
from .collectives import (
    all_gather,
    all_reduce,
    all_to_all,
    point_to_point,
    reduce_scatter,
    send,
    sharded_matmul,
)
from .conv import conv2d, pool2d
from .einsum import einsum
from .matmul import batched_matmul, linear, matmul
from .vector import dot, elementwise, embedding, layernorm, reduction, rmsnorm, softmax

__all__ = [
    "all_gather",
    "all_reduce",
    "all_to_all",
    "attention",
    "batched_matmul",
    "conv2d",
    "dot",
    "einsum",
    "elementwise",
    "embedding",
    "layernorm",
    "linear",
    "matmul",
    "point_to_point",
    "pool2d",
    "reduce_scatter",
    "reduction",
    "rmsnorm",
    "send",
    "sharded_matmul",
    "softmax",
]

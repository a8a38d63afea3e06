"""The tracer's rule books as the profile readers use them: one public face over the private
tables, so that a profiled op is priced by the very rule a trace of the same code uses, and
a change to a table reaches both.

* Kernels (:mod:`._kernels`): :func:`matrix_kernel`, :func:`vector_kernel`,
  :func:`precision_of` (a framework dtype's precision), :data:`FLOATING`.
* JAX (:mod:`._jax_ops`): :class:`Prim` (a primitive with its params and operands),
  :func:`jax_kernel` (its Kernel), :func:`jax_precision`, :data:`VECTOR_FLOPS` (per-element
  FLOPs of the elementwise primitives); :func:`vector_dtype` (:mod:`._kernels`).
* Collectives: :func:`collective_named` (``ops._family``'s row of a collective by the name
  torch, a jaxpr or compiled HLO gives it).
* torch (imported on first use, so that reading a trace costs no torch import):
  :func:`schema_arguments` of an aten op, :func:`profiler_active`, :func:`triton_launches`
  (each Triton launch in a profiler range of its own).
"""

from __future__ import annotations

from typing import Any

from ..ops._family import collective_named
from ._jax_ops import VECTOR_FLOPS, Prim
from ._jax_ops import kernel as jax_kernel
from ._jax_ops import precision as jax_precision
from ._kernels import FLOATING, vector_dtype
from ._kernels import matrix as matrix_kernel
from ._kernels import precision as precision_of
from ._kernels import vector as vector_kernel

__all__ = [
    "FLOATING",
    "VECTOR_FLOPS",
    "Prim",
    "collective_named",
    "jax_kernel",
    "jax_precision",
    "matrix_kernel",
    "precision_of",
    "profiler_active",
    "schema_arguments",
    "triton_launches",
    "vector_dtype",
    "vector_kernel",
]


def schema_arguments(func: Any) -> list[Any]:
    """An aten op's schema arguments, in order (see ``_torch_compat.arguments``)."""
    from ._torch_compat import arguments

    return arguments(func)


def profiler_active() -> bool:
    """True while a torch profiler records in this process."""
    from ._torch_compat import profiler_active as active

    return active()


def triton_launches() -> Any:
    """A context that puts each Triton launch in a profiler range of its own (a no-op when
    triton is not imported)."""
    from ._triton_profile import labelled

    return labelled()

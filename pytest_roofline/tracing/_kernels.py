"""Kernels of traced ops: the ``ops`` conventions applied to what a framework ran.

Both tracers (torch, jax) describe each op by its operands' shapes and storage widths and
hand it here, so FLOPs follow one set of rules whatever the framework (the rules themselves,
per-element FLOPs, reductions, scored pairs, collectives, live in ``ops._family``):

* **Matrix family** (matmul, batched matmul, convolution, attention's two products): a
  multiply-accumulate counts 2 FLOPs, as ``ops.matmul`` and torch's flop registry count them.
* **Attention** (fused): ``ops.attention``'s builders, forward and backward, called as they
  are (one matrix kernel over the *scored* (query, key) pairs carrying all the off-chip
  bytes, and the softmax as a vector kernel in its epilogue).
* **Vector ops**: FLOPs per element as ``ops.vector`` counts them: softmax 5, layernorm 7 (5
  without the affine pair), rmsnorm 4 (3 without weight); silu and sigmoid 4 (negate, exp,
  add, divide), gelu 8 (as ``models``); any other arithmetic op 1 per output element;
  reductions one per input element not already an output (a mean adds its divide).
* **Index, mask, copy and layout-changing ops**: bytes only, no FLOPs.

Bytes follow the tensors' storage widths: each kernel reads its inputs once and writes its
outputs once (the tracer's fusion policy may drop a round trip). Integer and bool arithmetic
is priced at the chip's fp32 vector peak (a CUDA core issues an INT32 op no faster than an
FP32 one; the bound stays a lower bound); its bytes are the integer widths.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..engine.workload import Kernel
from ..ops.attention import backward_kernels, fused_kernels

#: Pricing precision of integer and bool arithmetic (see the module docstring).
INTEGER_PRICING = "fp32"


def precision(name: object) -> str | None:
    """Canonical precision of a framework dtype (a torch, numpy or JAX dtype, or its name),
    None for one the project does not know (complex types, ...)."""
    try:
        return dtypes.canonical(name)
    except LookupError:
        return None


def width(dtype: Any) -> float:
    """Bytes per element of a JAX (numpy) dtype as memory holds it: the one rule of widths
    (``dtypes.element_bytes``) for a type the project knows, so a 4-bit type is half a byte
    as XLA packs it (numpy stores one a byte); the dtype's own ``itemsize`` for any other."""
    found = _WIDTHS.get(dtype)
    if found is None:
        try:
            found = dtypes.element_bytes(getattr(dtype, "name", dtype))
        except LookupError:
            found = float(dtype.itemsize)
        _WIDTHS[dtype] = found
    return found


#: Widths already read, by dtype (a handful: a program uses few dtypes).
_WIDTHS: dict[Any, float] = {}


#: Storage precisions by width, for a dtype known only by its width and kind.
_BY_WIDTH = {floating: {dtypes.ITEMSIZE[p]: p for p in names} for floating, names in (
    (True, ("int4", "int8", "bf16", "fp32", "fp64")),
    (False, ("int4", "int8", "int16", "int32", "int64")))}


def by_width(itemsize: float, *, floating: bool) -> str:
    """The storage precision of a *floating* (or integer) type *itemsize* bytes wide (one byte:
    int8, half a byte: int4, whose vector work is priced as fp32 as any integer's)."""
    return _BY_WIDTH[floating].get(float(itemsize), "int8")


def storage(name: str, itemsize: int) -> str:
    """The canonical storage precision of a framework dtype named *name*, by its width where
    the name is not one the project knows (a float type as a float of that width)."""
    found = precision(name)
    if found is not None:
        return found
    floating = name.removeprefix("torch.").startswith(("f", "bf", "complex"))
    return by_width(itemsize, floating=floating)


#: Floating-point precisions: the vector peaks are quoted for these only.
FLOATING = frozenset({"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4"})


def vector_dtype(dtype: str | None) -> str:
    """The precision a vector kernel is priced in (integer and bool ops: the fp32 peak)."""
    return dtype if dtype in FLOATING else INTEGER_PRICING


def wider(a: str | None, b: str | None) -> str | None:
    """The wider of two operand precisions: the one a mixed product runs in."""
    if a is None or b is None:
        return a or b
    return b if dtypes.ITEMSIZE[b] > dtypes.ITEMSIZE[a] else a


def matrix(name: str, *, macs: float, nbytes: float, dtype: str | None) -> Kernel:
    """A matrix-family op of *macs* multiply-accumulates (2 FLOPs each)."""
    return Kernel(name, 2.0 * macs, nbytes, unit="matrix", dtype=dtype or INTEGER_PRICING)


def vector(name: str, *, flops: float, nbytes: float, dtype: str | None) -> Kernel:
    """An op on the vector units (FLOPs may be 0: an index, mask or copy op)."""
    return Kernel(name, flops, nbytes, unit="vector", dtype=vector_dtype(dtype))


def attention(name: str, *, heads: float, pairs: float, head_dim: int, value_dim: int,
              nbytes: float, dtype: str | None, softmax_dtype: str | None) -> list[Kernel]:
    """Fused attention over *pairs* scored pairs per (sequence, head), *heads* of them in all:
    ``ops.attention.fused_kernels``, the one builder every path calls (a dtype override
    prices the products only; integer operands at the fp32 peaks)."""
    return fused_kernels(name, pairs=heads * pairs, head_dim=head_dim, value_dim=value_dim,
                         nbytes=nbytes, dtype=dtype or INTEGER_PRICING,
                         softmax_dtype=vector_dtype(softmax_dtype))


def attention_backward(name: str, *, heads: float, pairs: float, head_dim: int,
                       value_dim: int, nbytes: float, dtype: str | None) -> list[Kernel]:
    """Fused attention's backward (``ops.attention.backward_kernels``: the one decision)."""
    return backward_kernels(name, pairs=heads * pairs, head_dim=head_dim,
                            value_dim=value_dim, nbytes=nbytes,
                            dtype=dtype or INTEGER_PRICING, softmax_dtype=vector_dtype(dtype))

"""Kernels of traced ops: the ``ops`` conventions applied to what a framework ran.

Both tracers (torch, jax) describe each op by its operands' shapes and storage widths and
hand it here, so FLOPs follow one set of rules whatever the framework:

* **Matrix family** (matmul, batched matmul, convolution, attention's two products): a
  multiply-accumulate counts 2 FLOPs, as ``ops.matmul`` and torch's flop registry count them.
* **Attention** (fused, as ``ops.attention``): one matrix kernel for Q·Kᵀ and P·V over the
  *scored* (query, key) pairs only, carrying all the off-chip bytes, plus its softmax as a
  vector kernel of 5 FLOPs per scored pair and no bytes.
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

from .. import dtypes
from ..ops.vector import LAYERNORM_FLOPS, RMSNORM_FLOPS, SOFTMAX_FLOPS
from ..workload import Kernel

#: FLOPs per output element of elementwise ops that are not one operation each.
ELEMENT_FLOPS: dict[str, float] = {
    "silu": 4.0, "sigmoid": 4.0, "logistic": 4.0, "gelu": 8.0, "softplus": 3.0, "mish": 6.0,
    "elu": 3.0, "selu": 4.0, "hardswish": 4.0, "hardsigmoid": 3.0, "log_sigmoid": 4.0,
    "logaddexp": 4.0, "erfinv": 1.0, "lerp": 2.0, "addcmul": 2.0, "addcdiv": 2.0,
}

#: Pricing precision of integer and bool arithmetic (see the module docstring).
INTEGER_PRICING = "fp32"


def precision(name: object) -> str | None:
    """Canonical precision of a framework dtype, None for integer and bool types."""
    try:
        return dtypes.canonical(name)
    except LookupError:
        return None


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


def causal_pairs_top_left(q_len: int, kv_len: int) -> float:
    """Scored pairs of torch's ``is_causal``: query i sees keys 0..i (top-left aligned)."""
    full = min(q_len, kv_len)
    return full * (full + 1) / 2.0 + float(q_len - full) * kv_len


def attention(name: str, *, heads: float, pairs: float, head_dim: int, value_dim: int,
              nbytes: float, dtype: str | None, softmax_dtype: str | None) -> list[Kernel]:
    """Fused attention over *pairs* scored pairs per (sequence, head), *heads* of them in all.

    Matrix FLOPs 2·pairs·head_dim (Q·Kᵀ) + 2·pairs·value_dim (P·V), all the bytes; the
    softmax (5 FLOPs a pair) is a vector kernel of its own with no off-chip bytes, priced in
    *softmax_dtype* (the operands' precision: a dtype override prices the products only).
    """
    scored = heads * pairs
    return [matrix(name, macs=scored * (head_dim + value_dim), nbytes=nbytes, dtype=dtype),
            vector(f"{name}.softmax", flops=SOFTMAX_FLOPS * scored, nbytes=0.0,
                   dtype=softmax_dtype)]


def norm_flops(kind: str, elements: float, *, weight: bool, bias: bool) -> float:
    """FLOPs of a layernorm or rmsnorm of *elements* elements (``ops.vector``'s table)."""
    if kind == "rmsnorm":
        return elements * (RMSNORM_FLOPS - (0.0 if weight else 1.0))
    return elements * (LAYERNORM_FLOPS - (0.0 if weight else 1.0) - (0.0 if bias else 1.0))


def softmax_flops(elements: float) -> float:
    return SOFTMAX_FLOPS * elements


#: Eval-mode batch norm: a per-channel scale and shift (multiply, add) per element.
EVAL_BATCH_NORM_FLOPS = 2.0
#: Backward of a layer, group, batch or RMS norm, per element of the input gradient:
#: x̂ recomputed (subtract, multiply), g·dy and x̂·g·dy (2), their two row means (2), the
#: combination (subtract, subtract, multiply: 3), and the weight and bias gradients' sums (2).
NORM_BACKWARD_FLOPS = 11.0

"""Matrix products: ``matmul`` and ``batched_matmul``.

Traffic model (shared by every matrix formula here): each operand crosses off-chip memory
once and the output is written once, i.e. the tiles are large enough that no operand is
re-read. This is the minimum traffic of the product, the figure the roofline literature uses
("How to Scale Your Model", ch. 1). Real kernels re-read tiles when the operands outgrow the
on-chip memory, which only adds bytes: the roofline time is a lower bound.

Precisions: each operand is priced at its own width. The product runs in the wider of the two
input precisions (int8 weights with bf16 activations are dequantized and multiplied in bf16;
two int8 operands multiply in int8), unless the chip's spec states a mixed path for the pair
(``mixed_matmul``), and the output is written in ``out_dtype`` (default: ``dtype``).

With arrays, the bytes follow each array's storage dtype, and the precision overrides set the
precision the product is *computed* in: ``dtype=`` the product's, ``a_dtype=``/``b_dtype=`` an
operand's (the product then runs in the wider of the two). ``matmul(a32, b32, dtype="tf32")``
moves fp32 bytes at the tf32 peak; ``out_dtype=`` (default: the storage of the compute
precision) prices the output, which no array gives. Integer products run at the chip's int8
(int4) matrix peak only in int8 (int4); int16/int32/int64 and bool products run on the vector
units (:data:`pytest_roofline.dtypes.VECTOR_ONLY`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from .. import dtypes
from ..engine.workload import Kernel, Knob, Number, Workload
from ..errors import WorkloadError, brief
from ._common import (
    dtype_of,
    given,
    is_arraylike,
    is_module,
    is_sweep,
    precision,
    shape_of,
    show,
    size,
    sized_precision,
    sweep_size,
)


def resolve_dtypes(dtype: object, a_dtype: object, b_dtype: object,
                   out_dtype: object) -> tuple[str, str, str, str]:
    """``(a, b, out, compute)`` canonical precisions of a product given by sizes (see the
    module docstring); *dtype* defaults to bf16."""
    base = sized_precision(dtype)
    a = base if a_dtype is None else precision(a_dtype, "a_dtype")
    b = base if b_dtype is None else precision(b_dtype, "b_dtype")
    out = base if out_dtype is None else precision(out_dtype, "out_dtype")
    compute = b if dtypes.ITEMSIZE[b] > dtypes.ITEMSIZE[a] else a
    return a, b, out, compute


def precision_label(a: str, b: str, out: str, compute: str | None = None) -> str:
    """``"bf16"`` when every operand shares one precision, else ``"bf16 x int8 -> bf16"``;
    ``"fp32 as tf32"`` when an override computes in another precision than the operands'."""
    label = a if a == b == out else f"{a} x {b} -> {out}"
    natural = b if dtypes.ITEMSIZE[b] > dtypes.ITEMSIZE[a] else a
    return label if compute is None or compute == natural else f"{label} as {compute}"


def array_dtypes(x: object, w: object, dtype: object, a_dtype: object, b_dtype: object,
                 out_dtype: object, what: str) -> tuple[str, str, str, str]:
    """``(a, b, out, compute)`` of a product of two arrays: a and b are the storage dtypes
    (bytes), the overrides set the compute precision (see the module docstring)."""
    a, b = dtype_of(x, f"{what}: a"), dtype_of(w, f"{what}: b")
    a_comp = a if a_dtype is None else precision(a_dtype, "a_dtype")
    b_comp = b if b_dtype is None else precision(b_dtype, "b_dtype")
    if given(dtype):
        compute = precision(dtype, "dtype")
    else:
        compute = b_comp if dtypes.ITEMSIZE[b_comp] > dtypes.ITEMSIZE[a_comp] else a_comp
    out = dtypes.storage(compute) if out_dtype is None else precision(out_dtype, "out_dtype")
    return a, b, out, compute


def operands(x: object, w: object, what: str) -> None:
    """Refuse operands that are not both arrays, naming a module passed by mistake."""
    for label, value in (("a", x), ("b", w)):
        if is_module(value):
            raise WorkloadError(f"{what}: {label} is {brief(value)}, not an array; for a "
                                f"Linear layer use ops.linear(x, layer), which reads its "
                                f"weight as [out, in]")
        if not is_arraylike(value):
            raise WorkloadError(f"{what}: give sizes ({what}(m, k, n)) or two arrays, got "
                                f"{label}={brief(value)}")


def matmul_kernel(name: str, m: Number, k: Number, n: Number, a: str, b: str, out: str,
                  compute: str, count: Number = 1.0) -> Kernel:
    """The kernel of ``[m, k] @ [k, n]`` (no checks: the formulas' common core).

    FLOPs = 2·m·k·n (a multiply-accumulate counts 2). Bytes = m·k·|a| + k·n·|b| + m·n·|out|.
    """
    size_of = dtypes.ITEMSIZE
    written = m * n * size_of[out]
    return Kernel(name, 2.0 * m * k * n, m * k * size_of[a] + k * n * size_of[b] + written,
                  unit="matrix", dtype=compute, count=count, out_bytes=written,
                  operands=() if a == b else (a, b))


def matmul(
    m: object,
    k: object = None,
    n: object = None,
    *,
    dtype: object = None,
    a_dtype: object = None,
    b_dtype: object = None,
    out_dtype: object = None,
) -> Workload:
    """``A[m, k] @ B[k, n] -> C[m, n]``: 2·m·k·n FLOPs on the matrix units.

    Bytes: m·k·|a| + k·n·|b| + m·n·|out| with each operand at its own precision, so int8
    weights (``b_dtype="int8"``) with bf16 activations move half the weight bytes for the same
    FLOPs. With k, n >> m the intensity is about m (bf16) or 2·m (int8 weights): the token or
    batch dimension m is the workload's knob. *m* may be a numpy array (a sweep).

    *dtype* defaults to bf16 for sizes.

    Arrays work too: ``matmul(a, b)`` reads the shapes and precisions of two array-likes.
    Leading dimensions of *a* fold into m when *b* is 2-D (shared weights); when *b* has batch
    dimensions of its own, this is a batched product (see :func:`batched_matmul`). The
    precision arguments then set the compute precision (see the module docstring). A torch
    ``nn.Linear`` weight is [out, in]: use :func:`linear` for it.
    """
    if is_arraylike(k) or is_module(k) or is_module(m) or (is_arraylike(m) and k is None):
        operands(m, k, "matmul")
        return _from_arrays(m, k, array_dtypes(m, k, dtype, a_dtype, b_dtype, out_dtype,
                                               "matmul"))
    if k is None or n is None:
        raise WorkloadError("matmul needs the sizes m, k, n (or two arrays: matmul(a, b)); "
                            f"got m={brief(m)}, k={brief(k)}, n={brief(n)}")
    m_ = sweep_size(m, "matmul: m")
    k_ = size(k, "matmul: k")
    n_ = size(n, "matmul: n")
    a, b, out, compute = resolve_dtypes(dtype, a_dtype, b_dtype, out_dtype)
    return _matmul(m_, k_, n_, a, b, out, compute)


def _matmul(m: Number, k: int, n: int, a: str, b: str, out: str, compute: str) -> Workload:
    name = f"matmul({show(m)}x{k}x{n}, {precision_label(a, b, out, compute)})"
    kernel = matmul_kernel(name, m, k, n, a, b, out, compute)
    knob = None if is_sweep(m) else Knob(
        "m", int(m), lambda x: _matmul(float(x), k, n, a, b, out, compute))
    return Workload((kernel,), footprint=kernel.bytes, name=name, knob=knob)


def _from_arrays(x: object, w: object, dts: tuple[str, str, str, str]) -> Workload:
    a_shape, b_shape = shape_of(x, "matmul: a"), shape_of(w, "matmul: b")
    a, b, out, compute = dts
    a_mat = a_shape if len(a_shape) >= 2 else (1, *a_shape)
    b_mat = b_shape if len(b_shape) >= 2 else (*b_shape, 1)
    if a_mat[-1] != b_mat[-2]:
        raise WorkloadError(f"matmul: shapes {a_shape} and {b_shape} do not contract: a's last "
                            f"dimension {a_mat[-1]} differs from b's contracted dimension "
                            f"{b_mat[-2]}")
    k, n = a_mat[-1], b_mat[-1]
    b_batch = math.prod(b_mat[:-2])
    if b_batch == 1:
        m = math.prod(a_mat[:-1])
        return _matmul(float(size(m, "matmul: m")), size(k, "matmul: k"), size(n, "matmul: n"),
                       a, b, out, compute)
    try:
        import numpy as np

        batch_shape = np.broadcast_shapes(a_mat[:-2], b_mat[:-2])
    except ValueError:
        raise WorkloadError(f"matmul: batch dimensions of {a_shape} and {b_shape} do not "
                            f"broadcast") from None
    return _batched(float(math.prod(batch_shape)), size(a_mat[-2], "matmul: m"),
                    size(k, "matmul: k"), size(n, "matmul: n"), False, a, b, out, compute)


def batched_matmul(
    batch: object,
    m: object,
    k: object = None,
    n: object = None,
    *,
    shared_weights: bool = False,
    dtype: object = None,
    a_dtype: object = None,
    b_dtype: object = None,
    out_dtype: object = None,
) -> Workload:
    """*batch* independent products ``A[i][m, k] @ B[i][k, n]``: 2·batch·m·k·n FLOPs.

    With per-batch weights (the default) every product reads its own B, so
    bytes = batch·(m·k·|a| + k·n·|b| + m·n·|out|) and the intensity stays about 2·m·k·n /
    (k·n·|b|) whatever the batch: about 2 for int8 matrix-vector products (m = 1), the scaling
    book's batched example. ``shared_weights=True`` reads one B for the whole batch (the
    same as ``matmul(batch·m, k, n)``). *batch* may be a numpy array (a sweep).

    ``batched_matmul(a, b)`` takes two array-likes, [..., m, k] and [..., k, n] (see
    :func:`matmul`): weights with batch dimensions of their own are per-batch.
    """
    if is_arraylike(m) or is_module(m) or is_module(batch) or (
            is_arraylike(batch) and m is None):
        operands(batch, m, "batched_matmul")
        return _from_arrays(batch, m, array_dtypes(batch, m, dtype, a_dtype, b_dtype, out_dtype,
                                                   "batched_matmul"))
    if k is None or n is None:
        raise WorkloadError("batched_matmul needs batch, m, k, n (or two arrays: "
                            f"batched_matmul(a, b)); got k={brief(k)}, n={brief(n)}")
    if not isinstance(shared_weights, bool):
        raise WorkloadError(f"batched_matmul: shared_weights must be True or False, got "
                            f"{brief(shared_weights)}")
    batch_ = sweep_size(batch, "batched_matmul: batch")
    m_, k_, n_ = (size(v, f"batched_matmul: {w}") for v, w in ((m, "m"), (k, "k"), (n, "n")))
    a, b, out, compute = resolve_dtypes(dtype, a_dtype, b_dtype, out_dtype)
    return _batched(batch_, m_, k_, n_, shared_weights, a, b, out, compute)


def _batched(batch: Number, m: int, k: int, n: int, shared: bool, a: str, b: str, out: str,
             compute: str) -> Workload:
    kind = "shared weights" if shared else "per-batch weights"
    name = (f"batched_matmul({show(batch)}x[{m}x{k}x{n}], {kind}, "
            f"{precision_label(a, b, out, compute)})")
    if shared:
        kernel = matmul_kernel(name, batch * m, k, n, a, b, out, compute)
    else:
        kernel = matmul_kernel(name, m, k, n, a, b, out, compute, count=batch)
    knob = None if is_sweep(batch) else Knob(
        "batch", int(batch), lambda x: _batched(float(x), m, k, n, shared, a, b, out, compute))
    return Workload((kernel,), footprint=kernel.total_bytes, name=name, knob=knob)


def linear(x: object, weight: object, bias: object = None, *, dtype: object = None,
           out_dtype: object = None) -> Workload:
    """``y = x @ weightᵀ + bias`` with torch's layout: *weight* is [out, in], or an
    ``nn.Linear`` module (its ``weight`` and ``bias`` are read, never printed or copied).

    *x* is an array [..., in]; its leading dimensions fold into m. FLOPs = 2·m·in·out, the
    product only, as torch's flop counter counts ``linear``/``addmm`` (the bias add, m·out more,
    is fused into the product's epilogue and not counted). Bytes: x, the weight and the output
    once each, plus the bias (out elements) when there is one, each at its storage dtype;
    ``dtype=`` sets the compute precision (see the module docstring).
    """
    layer = None
    if is_module(weight):
        layer = weight
        weight = getattr(layer, "weight", None)
        if not is_arraylike(weight):
            raise WorkloadError(f"linear: {brief(layer)} has no .weight array; linear takes an "
                                f"nn.Linear module or its weight [out, in]")
        if bias is None:
            bias = getattr(layer, "bias", None)
    if is_module(x) or not is_arraylike(x):
        raise WorkloadError(f"linear: x must be an array [..., in], got {brief(x)}")
    if not is_arraylike(weight):
        raise WorkloadError(f"linear: weight must be an array [out, in] or an nn.Linear module, "
                            f"got {brief(weight)}")
    x_shape, w_shape = shape_of(x, "linear: x"), shape_of(weight, "linear: weight")
    if len(w_shape) != 2:
        raise WorkloadError(f"linear: weight must be [out, in] (2 dimensions), got shape "
                            f"{w_shape}")
    n, k = w_shape
    if x_shape[-1] != k:
        raise WorkloadError(f"linear: x's last dimension {x_shape[-1]} differs from the "
                            f"weight's in_features {k} (weight is [out, in] = {w_shape})")
    bias_bytes = 0.0
    if bias is not None:
        if not is_arraylike(bias) or shape_of(bias, "linear: bias") != (n,):
            raise WorkloadError(f"linear: bias must be an array of shape ({n},), got "
                                f"{brief(bias)}")
        bias_bytes = n * dtypes.ITEMSIZE[dtype_of(bias, "linear: bias")]
    a, b, out, compute = array_dtypes(x, weight, dtype, None, None, out_dtype, "linear")
    m = size(math.prod(x_shape[:-1]), "linear: m")
    return _linear(float(m), size(k, "linear: in"), size(n, "linear: out"), bias_bytes,
                   a, b, out, compute)


def _linear(m: Number, k: int, n: int, bias_bytes: float, a: str, b: str, out: str,
            compute: str) -> Workload:
    extra = " + bias" if bias_bytes else ""
    name = f"linear({show(m)}x{k} -> {n}{extra}, {precision_label(a, b, out, compute)})"
    core = matmul_kernel(name, m, k, n, a, b, out, compute)
    kernel = replace(core, bytes=core.bytes + bias_bytes)  # the bias: read once, in the epilogue
    knob = Knob("m", int(m), lambda x: _linear(float(x), k, n, bias_bytes, a, b, out, compute))
    return Workload((kernel,), footprint=kernel.bytes, name=name, knob=knob)

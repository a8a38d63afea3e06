"""torch.compile's Triton kernels in a trace, priced from what the trace records of them.

Inductor names each kernel it generates after its kind and the aten ops it fuses
(``triton_poi_fused__unsafe_view_mul_silu_2``: a pointwise kernel running a view, a multiply
and a SiLU; ``triton_red_fused_add_mean_mul_pow_rsqrt_0``: a reduction kernel, an RMS norm),
and the profiler records the launch as a CPU op of that name whose inputs are the kernel's
arguments: every buffer it reads or writes (dims, strides, dtype), then its sizes
(``xnumel``, and ``r0_numel`` for a reduction) as scalars. From those:

* **bytes**: each distinct buffer once, its stored elements (a broadcast dimension once),
  at its dtype's width. A buffer the kernel both reads and writes (``in_out_ptr``) is
  counted once: the trace does not say which it is, so the bound stays a lower bound;
* **FLOPs**: each fused op by the tracer's rules (``ops._family``): in a pointwise kernel
  (``poi``) every op once per element of its largest buffer, as elementwise arithmetic
  counts (silu 4, gelu 8, any other arithmetic op 1); in a reduction kernel (``red``,
  ``per``) the reductions (``sum``, ``mean``, ``amax`` ...) once per element reduced
  (``xnumel`` x ``r0_numel``), every other op once per row (``xnumel``): the fewest it
  can run, since the name does not say which side of the reduction an op is on;
  layout ops (views, permutes, dtype conversions, copies) none; a norm's statistics as a
  reduction; a product or attention op named in such a kernel is its epilogue (a bias add,
  1 FLOP an element counted as the kernel's other ops) or its inputs' layout (none): the
  product itself ran as its own kernel, priced as its aten op.

A kernel whose name holds an op with no rule here, a template kernel (``triton_tem_``: an
inductor GEMM or convolution, whose operands the name does not say), or one whose buffers
were not recorded is not priced, and the reason names it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ... import dtypes
from ...engine.workload import Workload
from ...ops import rules as R
from ...tracing import tables as K
from .dtype_names import DTYPES

#: An inductor kernel's name: its kind, the ops it fuses, its index.
NAME = re.compile(r"^triton_(poi|red|per)_fused_(\w+?)_(\d+)$")
TEMPLATE = re.compile(r"^triton_tem_fused_")
#: Ops that move no data of their own inside a fused kernel (their loads and stores are the
#: kernel's buffers, counted once).
LAYOUT = frozenset({
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "squeeze",
    "unsqueeze", "slice", "select", "clone", "convert_element_type", "_to_copy", "copy",
    "cat", "constant_pad_nd", "index", "embedding", "as_strided", "alias", "split",
    "split_with_sizes", "unbind", "full", "zeros", "ones", "empty", "lift_fresh", "detach",
    "stack", "gather", "scatter", "index_select", "iota", "arange", "full_like", "zeros_like",
    "ones_like", "unsafe_split", "narrow"})
#: Arithmetic ops: their FLOPs per element (``ops._family.ELEMENT_FLOPS``, else 1).
ARITHMETIC = frozenset({
    "add", "sub", "mul", "div", "neg", "exp", "exp2", "log", "log2", "log1p", "expm1",
    "sqrt", "rsqrt", "reciprocal", "abs", "pow", "tanh", "sin", "cos", "erf", "relu",
    "sigmoid", "silu", "gelu", "maximum", "minimum", "clamp", "clamp_min", "clamp_max",
    "where", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
    "bitwise_and", "bitwise_or", "floor", "ceil", "round", "sign", "hardtanh", "softplus",
    "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward",
    "tanh_backward", "rsub", "fill", "masked_fill", "lerp", "addcmul", "addcdiv", "elu",
    "mish", "hardswish", "hardsigmoid", "native_dropout", "bernoulli", "rand", "randn",
    "native_dropout_backward", "leaky_relu", "_softmax", "_log_softmax"})
#: Reductions: one FLOP per element reduced (a mean adds its divide per row, counted with
#: the row's ops).
REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std",
                        "var_mean", "argmax", "argmin", "any", "all", "logsumexp"})
#: Norms: their statistics reduce every element (counted as a reduction: one FLOP an
#: element, the fewest; the affine steps are the kernel's other ops).
NORMS = frozenset({"native_layer_norm", "native_group_norm", "native_batch_norm",
                   "_native_batch_norm_legit", "_native_batch_norm_legit_no_training"})
#: Products and attention named in a pointwise or reduction kernel: what inductor fused of
#: them is their epilogue or their inputs' preparation (the product itself ran as its own
#: kernel, an extern call priced as its aten op): a bias add, 1 FLOP an element (addmm's,
#: a convolution's), or none (a view or copy of mm's output, attention's inputs laid out).
EPILOGUES = {"addmm": 1.0, "baddbmm": 1.0, "convolution": 1.0, "mm": 0.0, "bmm": 0.0,
             "_scaled_dot_product_flash_attention": 0.0,
             "_scaled_dot_product_efficient_attention": 0.0,
             "_scaled_dot_product_cudnn_attention": 0.0}
_VOCABULARY = LAYOUT | ARITHMETIC | REDUCTIONS | NORMS | frozenset(EPILOGUES)
_LONGEST = max(len(op.split("_")) for op in _VOCABULARY)


def is_kernel(name: str) -> bool:
    """Whether *name* is an inductor Triton kernel's (generated code: ``triton_poi_``,
    ``triton_red_``, ``triton_per_``, ``triton_tem_``)."""
    return NAME.match(name) is not None or TEMPLATE.match(name) is not None


def fused_ops(name: str) -> list[str] | str:
    """The aten ops an inductor kernel's *name* lists, in order; or the reason they cannot
    be read (a word that is no op this module has a rule for)."""
    found = NAME.match(name)
    if found is None:
        return f"{name} is an inductor template kernel: its operands are not in its name"
    words = found.group(2).split("_")
    ops: list[str] = []
    i = 0
    while i < len(words):
        for size in range(min(_LONGEST, len(words) - i), 0, -1):
            # "_unsafe_view" splits as ["", "unsafe", "view"] and joins back whole
            candidate = "_".join(words[i:i + size])
            if candidate in _VOCABULARY:
                ops.append(candidate)
                i += size
                break
        else:
            return (f"inductor kernel {name} fuses {words[i]!r}, an op with no rule here "
                    f"(pytest_roofline/profiling/torch/inductor.py)")
    return ops


def price(name: str, dims: list[Any], types: tuple[str, ...],
          concrete: tuple[str, ...] | None, strides: list[Any] | None) -> Workload | str:
    """The Workload of one launch of the inductor kernel *name* from its recorded
    arguments (see the module docstring), or why it cannot be priced."""

    ops = fused_ops(name)
    if isinstance(ops, str):
        return ops
    kind = name.split("_")[1]
    buffers: list[tuple[int, float]] = []  # (elements stored, bytes each)
    largest = 0
    for i, dtype in enumerate(types):
        if dtype in DTYPES:
            shape: list[int] = dims[i] if i < len(dims) else []
            if not _is_shape(shape):
                return f"input {i} of inductor kernel {name} has dims {shape!r}"
            stride = strides[i] if strides is not None and i < len(strides) else None
            buffers.append((_stored(shape, stride), dtypes.itemsize(DTYPES[dtype])))
            largest = max(largest, math.prod(shape))
        elif dtype not in ("Scalar", ""):
            return f"inductor kernel {name} takes a {dtype}: not a buffer or a size"
    if not buffers:
        return "its input shapes were not recorded (record_shapes=True)"
    sizes = [int(v) for t, v in zip(types, concrete or (), strict=False)
             if t == "Scalar" and v.isdigit()]
    rows = float(largest)
    if kind != "poi":
        rows = float(sizes[-2]) if len(sizes) >= 2 and sizes[-2] * sizes[-1] == largest \
            else 1.0  # the rows not recorded: the fewest
    flops = 0.0
    for op in ops:
        if op in REDUCTIONS or op in NORMS:
            flops += float(largest)
        elif op in EPILOGUES:
            flops += EPILOGUES[op] * (rows if kind != "poi" else float(largest))
        elif op in ARITHMETIC:
            flops += R.element_flops(op, rows if kind != "poi" else float(largest))
    precision = _precision(types, DTYPES)
    nbytes = float(sum(n * width for n, width in buffers))
    kernel = K.vector_kernel(name, flops=flops, nbytes=nbytes, dtype=precision)
    return Workload((kernel,), name=name)


def _precision(types: tuple[str, ...], names: dict[str, str]) -> str | None:
    """The widest float dtype among the kernel's buffers (its arithmetic runs in it, or in
    fp32 upcast, which the vector peak prices the same or faster); None (the integer
    pricing) where none is a float."""
    floats = [K.precision_of(names[t]) for t in types if t in names]
    return max((p for p in floats if p in K.FLOATING), key=lambda p: dtypes.ITEMSIZE[p],
               default=None)


def _is_shape(value: Any) -> bool:
    return isinstance(value, list) and all(type(d) is int and 0 <= d <= 2 ** 53 for d in value)


def _stored(shape: list[int], stride: Any) -> int:
    """Elements of a buffer a kernel touches: a stride-0 (broadcast) dimension once."""
    if not (isinstance(stride, list) and len(stride) == len(shape)
            and all(type(s) is int for s in stride)):
        return math.prod(shape)
    n = 1
    for size, step in zip(shape, stride, strict=True):
        if step != 0:
            n *= size
    return n

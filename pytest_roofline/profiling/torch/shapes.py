"""The commonest recorded ops priced from their recorded shapes alone, without importing torch.

Rebuilding a call on ``meta`` tensors (:mod:`.pricing`) costs torch's import (seconds) and,
through the meta decompositions, ``torch._dynamo``'s; a small trace of products, elementwise
arithmetic and reductions then spends most of its run starting torch. This module prices
those ops by the same rules the tracer applies (``tracing._kernels``, ``ops._family``,
``tracing._torch_args.nbytes``: each distinct input read once, its stored elements, a
broadcast (stride-0) dimension once; each output written once), and answers ``None`` for any
call it is not sure of (a mixed dtype, a shape that does not broadcast, an op outside its
tables, a formula ``register_op`` gave the op), which :mod:`.pricing` then rebuilds on meta.

One answer whatever the path: ``tests/test_profile_shapes.py`` prices every call of every
test trace both ways and asserts equal Workloads, checks each table row's class against
torch's own tags, and property-tests random shapes.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ... import dtypes
from ...engine.workload import Workload
from ...ops import rules as R
from ...tracing import registry
from ...tracing import tables as K

#: The profiler's float type names -> canonical precisions (the dtypes priced here).
FLOATS = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16"}
#: Products: op -> (positions of a and b, rank of each operand).
PRODUCTS = {"mm": (0, 1, 2), "addmm": (1, 2, 2), "bmm": (0, 1, 3)}
#: Elementwise arithmetic (the tracer's vector class: tagged pointwise by torch, or in its
#: vector table), every tensor input broadcast to the output; the in-place form (``add_``)
#: writes its first operand.
ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt", "reciprocal", "abs",
    "sigmoid", "tanh", "silu", "gelu", "relu", "clamp_min", "clamp_max", "threshold_backward"})
#: Those of two tensor operands (the rest take one; a scalar may follow either).
BINARY = frozenset({"add", "sub", "mul", "div", "clamp_min", "clamp_max", "threshold_backward"})
#: The inputs each of those needs at least (a threshold, a bound, the other operand).
NEEDS = {"threshold_backward": 3}
#: Reductions over a list of dims (``sum(x, dims, keepdim, dtype)``): FLOPs per input element
#: (sum: one per input element not already an output).
REDUCTIONS = frozenset({"sum", "mean"})
#: Losses of two tensors of one shape, ``(input, target, reduction)``: reduction 0 keeps
#: the elements, 1 (mean) and 2 (sum) give one; FLOPs one per element (the vector table's
#: rule for an op torch does not tag pointwise: the larger of input and output).
LOSSES = frozenset({"mse_loss", "l1_loss"})
#: In-place fills: write their first operand, read only the value (when it is a tensor).
FILLS = frozenset({"fill_", "zero_"})
#: Ops torch has and the tracer's table gives no formula (checked against torch's tags and
#: the table in the tests): the reason the tracer gives.
NO_FORMULA = frozenset({"mse_loss_backward"})
#: ``_foreach`` ops torch has: a list of tensors whose dtype no input states is not priced.
FOREACH = frozenset({"_foreach_add_", "_foreach_mul_", "_foreach_copy_", "_foreach_zero_",
                     "_foreach_add", "_foreach_mul"})
LIST_DTYPE = "the dtype of its list of tensors is not recorded"


def price(name: str, dims: list[Any], types: tuple[str, ...],
          concrete: tuple[str, ...] | None, dtype: str | None,
          strides: list[Any] | None, list_dtype: str | None) -> Workload | str | None:
    """The Workload (or the reason it is not priced) the tracer gives one recorded call of
    *name*, where this module knows it for sure; None where only a rebuild on meta tells."""
    op = name.removeprefix("aten::")
    if op == name or registry.lookup(name) is not None:
        return None  # not an aten op, or a formula register_op gave it
    if op in NO_FORMULA:
        return f"no formula for {name}" if _shapes(dims, types) is not None else None
    if op in FOREACH:
        return _foreach(dims, types, list_dtype)
    found = _shapes(dims, types)
    if found is None:
        return None
    tensors, precision = found
    if op in PRODUCTS:
        return _product(op, tensors, dims, types, strides, dtype or precision)
    if op in FILLS:
        return _fill(op, tensors, dims, types, strides, precision)
    if op.rstrip("_") in ELEMENTWISE:
        return _elementwise(op, tensors, dims, strides, precision)
    if op in LOSSES:
        return _loss(op, tensors, dims, types, concrete, strides, precision)
    if op in REDUCTIONS:
        return _reduction(op, tensors, dims, types, concrete, strides, precision)
    return None


def _shapes(dims: list[Any], types: tuple[str, ...]) -> tuple[list[int], str] | None:
    """The positions of the call's tensor inputs, where every input is a tensor of one float
    dtype, a scalar (``Scalar``) or absent (``''``, ``ScalarList`` of a reduction), with that
    dtype's precision; None else (another kind of input: only a rebuild knows how torch
    takes it)."""
    tensors = []
    seen: set[str] = set()
    for i, kind in enumerate(types):
        if kind in FLOATS:
            shape = dims[i] if i < len(dims) else None
            if not _is_shape(shape):
                return None
            tensors.append(i)
            seen.add(kind)
        elif kind not in ("Scalar", "", "ScalarList"):
            return None
    return (tensors, FLOATS[seen.pop()]) if len(seen) == 1 else None


def _is_shape(value: Any) -> bool:
    return isinstance(value, list) and all(type(d) is int and 0 <= d <= 2 ** 31 for d in value)


def _touched(shape: list[int], stride: Any) -> int:
    """Elements a kernel reads of a tensor (``_torch_args.touched``: a stride-0 dimension is
    stored once) of *shape* and its recorded *stride* (contiguous where not recorded)."""
    if not shape:
        return 1
    if not (isinstance(stride, list) and _is_shape(stride) and len(stride) == len(shape)):
        return math.prod(shape)
    n = 1
    for size, step in zip(shape, stride, strict=True):
        if step != 0:
            n *= size
        elif size == 0:
            return 0
    return n


def _stride(strides: list[Any] | None, i: int) -> Any:
    return strides[i] if strides is not None and i < len(strides) else None


def _read(tensors: list[int], dims: list[Any], strides: list[Any] | None) -> int:
    return sum(_touched(dims[i], _stride(strides, i)) for i in tensors)


def _broadcast(shapes: list[list[int]]) -> list[int] | None:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        for j, size in enumerate(shape, start=rank - len(shape)):
            if size != out[j]:
                if out[j] != 1 and size != 1:
                    return None
                out[j] = size if out[j] == 1 else out[j]
    return out


def _one(name: str, kernel: Any) -> Workload:
    return Workload((kernel,), name=name)


def _product(op: str, tensors: list[int], dims: list[Any], types: tuple[str, ...],
             strides: list[Any] | None, priced_in: str) -> Workload | None:
    first, second, rank = PRODUCTS[op]
    operands = [0, 1, 2] if op == "addmm" else [0, 1]
    given = len(tensors) == len(operands) + 1 and len(types) == len(tensors)  # mm.out(a, b, out)
    if tensors != operands + ([len(types) - 1] if given else []) or (
            not given and len(types) > (5 if op == "addmm" else 2)):
        return None
    a, b = dims[first], dims[second]
    if len(a) != rank or len(b) != rank or a[-1] != b[-2] or a[:-2] != b[:-2]:
        return None
    out = [*a[:-1], b[-1]]
    if given and dims[tensors[-1]] != out:
        return None
    if op == "addmm" and (len(dims[0]) > 2 or _broadcast([dims[0], out]) != out):
        return None
    precision = FLOATS[types[first]]
    macs = float(math.prod(a[:-2]) * a[-2] * a[-1] * b[-1])
    nbytes = float((_read(operands, dims, strides) + math.prod(out)) * _width(precision))
    return _one(f"aten::{op}", K.matrix_kernel(op, macs=macs, nbytes=nbytes, dtype=priced_in))


def _width(precision: str) -> int:
    return int(dtypes.ITEMSIZE[precision])


def _elementwise(op: str, tensors: list[int], dims: list[Any], strides: list[Any] | None,
                 precision: str) -> Workload | None:
    base = op.rstrip("_")
    arity = 2 if base in BINARY else 1
    if tensors != list(range(len(tensors))) or not 1 <= len(tensors) <= arity:
        return None  # an ``out=`` tensor: a rebuild tells which it is
    if len(dims) < NEEDS.get(base, arity):
        return None  # an argument the schema requires is missing: no overload takes it
    out = _broadcast([dims[i] for i in tensors])
    if out is None:
        return None
    in_place = op.endswith("_")
    if in_place and (out != dims[0] or 0 in (_stride(strides, 0) or [])):
        return None  # torch refuses to broadcast into, or write through, a broadcast operand
    n_out = float(math.prod(out))
    nbytes = float((_read(tensors, dims, strides) + math.prod(out)) * _width(precision))
    flops = R.element_flops(op.rstrip("_"), n_out)
    return _one(f"aten::{op}", K.vector_kernel(op, flops=flops, nbytes=nbytes, dtype=precision))


def _fill(op: str, tensors: list[int], dims: list[Any], types: tuple[str, ...],
          strides: list[Any] | None, precision: str) -> Workload | None:
    if not tensors or tensors[0] != 0 or (op == "zero_" and len(types) != 1):
        return None
    if len(tensors) > 1 and (len(types) != 2 or dims[1] != []):
        return None  # fill_ takes a value: a scalar, or a tensor of no dims
    if 0 in (_stride(strides, 0) or []):
        return None
    nbytes = float((_read(tensors[1:], dims, strides) + math.prod(dims[0])) * _width(precision))
    return _one(f"aten::{op}", K.vector_kernel(op, flops=0.0, nbytes=nbytes, dtype=precision))


def _reduction(op: str, tensors: list[int], dims: list[Any], types: tuple[str, ...],
               concrete: tuple[str, ...] | None, strides: list[Any] | None,
               precision: str) -> Workload | None:
    """``sum(x)``, ``sum(x, dims, keepdim, dtype=None)``, ``mean`` likewise; an empty list of
    dims reduces every dim (as torch does)."""
    shape = dims[0]
    given = tensors[1:] == [4] and len(types) == 5  # mean.out(x, dims, keepdim, dtype, out=)
    if not (tensors == [0] or given) or not shape:
        return None
    if types[1:] in ((), ("",)):
        axes, keep = list(range(len(shape))), False
    elif types[1:4] == ("ScalarList", "Scalar", "") and len(types) == 4 + given and concrete:
        try:
            axes = [int(d) for d in json.loads(concrete[1])]
        except (ValueError, TypeError):
            return None
        if concrete[2] not in ("True", "False") or any(
                not -len(shape) <= d < len(shape) for d in axes):
            return None
        axes = [d % len(shape) for d in axes] or list(range(len(shape)))
        keep = concrete[2] == "True"
        if len(set(axes)) != len(axes):
            return None
    else:
        return None
    out = [1 if j in axes else n for j, n in enumerate(shape) if keep or j not in axes]
    if given and dims[4] != out:
        return None
    n_in, n_out = float(math.prod(shape)), float(math.prod(out))
    flops = R.reduce_flops(n_in, n_out) if op == "sum" else n_in
    nbytes = float((_read([0], dims, strides) + math.prod(out)) * _width(precision))
    return _one(f"aten::{op}", K.vector_kernel(op, flops=flops, nbytes=nbytes, dtype=precision))


def _loss(op: str, tensors: list[int], dims: list[Any], types: tuple[str, ...],
          concrete: tuple[str, ...] | None, strides: list[Any] | None,
          precision: str) -> Workload | None:
    if tensors != [0, 1] or types[2:] != ("Scalar",) or not concrete or dims[0] != dims[1] \
            or concrete[2] not in ("0", "1", "2"):
        return None
    out = dims[0] if concrete[2] == "0" else []
    n_in, n_out = math.prod(dims[0]), math.prod(out)
    nbytes = float((_read(tensors, dims, strides) + n_out) * _width(precision))
    return _one(f"aten::{op}", K.vector_kernel(op, flops=float(max(n_in, n_out)), nbytes=nbytes,
                                        dtype=precision))


def _foreach(dims: list[Any], types: tuple[str, ...], list_dtype: str | None) -> str | None:
    if any(t in FLOATS for t in types) or list_dtype:
        return None
    lists = [i for i, t in enumerate(types) if t in ("TensorList", "GenericList")]
    if not lists or not all(isinstance(dims[i], list) and dims[i] and all(
            _is_shape(s) for s in dims[i]) for i in lists if i < len(dims)):
        return None
    return LIST_DTYPE

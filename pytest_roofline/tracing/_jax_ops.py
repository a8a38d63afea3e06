"""The table of JAX primitives the JAX tracer knows, one row per family; the policy for the
rest (the JAX twin of ``_aten``).

A primitive is matrix work (``dot_general``, convolutions, ragged products: a formula of
its kernel below), vector work (a family's formula: a Prim in, FLOPs out; the rules are
``ops._family``'s), a move (bytes only, no FLOPs), metadata (free), a collective (the table
of ``ops._family``, through ``_jax_mesh``), or **unknown**: recorded with its bytes and listed
in ``Workload.unknown``. The formulas are registered through the same
:class:`~.registry.Registry` as ``register_op``; a primitive in two families is an error at
import. Adding a primitive to a family is one name in one set; a new family is a set and its
formula, both here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..engine.workload import Kernel
from ..ops import _family as R
from . import _jax_mesh, registry
from . import _kernels as K

#: Metadata: move nothing (or are folded into the consumer's indexing).
FREE = frozenset({"reshape", "squeeze", "expand_dims", "broadcast_in_dim"}) | _jax_mesh.FREE
REDUCE = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax",
                     "argmin", "reduce_and", "reduce_or", "reduce_xor"})
#: Scans: one FLOP per element.
SCAN = frozenset({"cumsum", "cummax", "cummin", "cumprod", "cumlogsumexp"})
#: Primitives that move, select or fill data and compute nothing (bytes only).
MEMORY = frozenset({
    "gather", "scatter", "dynamic_slice", "dynamic_update_slice", "concatenate", "pad",
    "transpose", "slice", "rev", "iota", "split", "bitcast_convert_type", "reduce_precision",
    "device_put", "sharding_constraint", "optimization_barrier", "random_bits", "random_seed",
    "random_wrap", "random_unwrap", "random_fold_in", "random_split", "threefry2x32",
    "rng_bit_generator", "rng_uniform", "axis_index", "platform_index", "squeeze",
    "expand_dims", "broadcast_in_dim", "reshape", "full_like", "zeros_like", "mesh_cast",
    "reshard", "pvary", "copy", "copy_p", "convert_element_type", "select_n", "stop_gradient",
    "select_and_gather_add", "argsort",
    # inside a Pallas kernel: refs live on chip (the boundary's blocks are counted apart)
    "get", "swap", "addupdate", "load", "masked_load", "masked_swap", "program_id",
    "num_programs", "multiple_of", "run_scoped", "broadcast_to", "delay", "dma_start",
    "dma_wait", "semaphore_signal", "semaphore_wait", "semaphore_read", "barrier",
    "prng_seed", "prng_random_bits"})
#: Scatters that combine their values with the destination: one FLOP per value.
SCATTER_COMBINE = frozenset({"scatter-add", "scatter_add", "scatter-mul", "scatter_mul",
                              "scatter-min", "scatter_min", "scatter-max", "scatter_max"})
#: Sorting: comparisons, n·log2(length) (sort) or n (top_k), as the torch tracer counts.
SORTING = frozenset({"sort", "top_k"})
#: Reductions over windows (pooling): window - 1 FLOPs per output, as any reduction.
WINDOW = frozenset({"reduce_window_sum", "reduce_window_max", "reduce_window_min",
                     "reduce_window", "select_and_scatter_add"})
#: Elementwise primitives that compute (1 FLOP per output element unless ELEMENT_FLOPS says).
ARITHMETIC = frozenset({
    "add", "sub", "mul", "div", "neg", "max", "min", "exp", "exp2", "log", "log1p", "expm1",
    "tanh", "logistic", "sqrt", "rsqrt", "cbrt", "pow", "integer_pow", "abs", "sign", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2",
    "erf", "erfc", "erf_inv", "square", "rem", "floor", "ceil", "round", "nextafter", "eq",
    "ne", "lt", "le", "gt", "ge", "and", "or", "not", "xor", "shift_left",
    "shift_right_logical", "shift_right_arithmetic", "clamp", "is_finite", "lgamma",
    "digamma", "add_any", "population_count", "clz", "imag", "real", "conj", "complex"})
#: Elementwise primitives that only move or select data: they fuse, but compute nothing.
MOVING = frozenset({"convert_element_type", "select_n", "copy", "copy_p", "stop_gradient"})
FUSABLE = ARITHMETIC | MOVING | FREE



MATRIX = frozenset({"dot_general", "conv_general_dilated", "ragged_dot", "ragged_dot_general"})


class Prim:
    """One primitive as the walker saw it: what a formula reads."""

    __slots__ = ("dtype", "ins", "label", "name", "nbytes", "outs", "params")

    def __init__(self, *, name: str, label: str, params: Any, ins: list[Any], outs: list[Any],
                 nbytes: float, dtype: str | None) -> None:
        self.name, self.label, self.params = name, label, params
        self.ins, self.outs = ins, outs  # the operands with a shape, the results
        self.nbytes = nbytes  # the bytes the walker's fusion policy leaves it
        self.dtype = dtype  # the precision matrix work is priced in (None: the operands')

    @property
    def n_in(self) -> float:
        return float(math.prod(self.ins[0].aval.shape)) if self.ins else 0.0

    @property
    def n_out(self) -> float:
        return float(math.prod(self.outs[0].aval.shape)) if self.outs else 0.0

    def wider(self) -> str | None:
        """The precision a product is priced in: the override, else the wider operand's."""
        return self.dtype or K.wider(precision(self.ins[0]), precision(self.ins[1]))


def precision(var: Any) -> str | None:
    return K.precision(var.aval.dtype.name)


VectorFormula = Callable[[Prim], float]
MatrixFormula = Callable[[Prim], Kernel]
VECTOR_FLOPS: registry.Registry[VectorFormula] = registry.Registry("the JAX vector table")
MATRIX_KERNELS: registry.Registry[MatrixFormula] = registry.Registry("the JAX matrix table")


@VECTOR_FLOPS.rows(REDUCE)
def _reduce(p: Prim) -> float:
    return R.reduce_flops(p.n_in, p.n_out) if p.ins else 0.0


@VECTOR_FLOPS.rows(SCAN)
def _scan(p: Prim) -> float:
    return R.scan_flops(p.n_in)


@VECTOR_FLOPS.rows(ARITHMETIC)
def _elementwise(p: Prim) -> float:
    return R.element_flops(p.name, p.n_out)


@VECTOR_FLOPS.rows(SCATTER_COMBINE)
def _scatter_combine(p: Prim) -> float:
    return float(math.prod(p.ins[-1].aval.shape)) if p.ins else 0.0


@VECTOR_FLOPS.rows({"sort"})
def _sort(p: Prim) -> float:
    if not p.ins:
        return 0.0
    shape = p.ins[0].aval.shape
    return R.sort_flops(p.n_in, shape[p.params.get("dimension", -1)] if shape else 1)


@VECTOR_FLOPS.rows({"top_k"})
def _top_k(p: Prim) -> float:
    return R.top_k_flops(p.n_in)


@VECTOR_FLOPS.rows(WINDOW)
def _pool(p: Prim) -> float:
    """A pool: a reduction over each window; max-pool's gradient (select_and_scatter_add)
    pools each window of its source, then adds once."""
    window = float(math.prod(p.params.get("window_dimensions", (1,))))
    if p.name == "select_and_scatter_add" and p.ins:
        return R.pool_flops(p.n_in, window, average=True)
    return R.pool_flops(p.n_out, window, average=False)


@MATRIX_KERNELS.rows({"dot_general"})
def _dot_general(p: Prim) -> Kernel:
    (contract, rhs_contract), (batch, rhs_batch) = p.params["dimension_numbers"]
    lhs, rhs = p.ins[0].aval, p.ins[1].aval
    n = math.prod(lhs.shape[i] for i in contract)
    macs = float(math.prod(p.outs[0].aval.shape) * n)
    if len(lhs.shape) == len(contract) + len(batch) and \
            len(rhs.shape) == len(rhs_contract) + len(rhs_batch):
        # a dot of vectors: the vector units, as ops.dot and torch's dot (ops._family)
        outputs = float(math.prod(p.outs[0].aval.shape))
        return K.vector(p.label, flops=outputs * R.dot_flops(n), nbytes=p.nbytes,
                        dtype=p.wider())
    return K.matrix(p.label, macs=macs, nbytes=p.nbytes, dtype=p.wider())


@MATRIX_KERNELS.rows({"conv_general_dilated"})
def _conv(p: Prim) -> Kernel:
    macs = conv_macs(p)
    rhs_spec = p.params["dimension_numbers"][1]
    if R.conv_unit(p.params["feature_group_count"], p.ins[1].aval.shape[rhs_spec[1]]) == \
            "vector":  # depthwise (ops._family.conv_unit, as ops.conv2d)
        return K.vector(p.label, flops=2.0 * macs, nbytes=p.nbytes, dtype=p.wider())
    return K.matrix(p.label, macs=macs, nbytes=p.nbytes, dtype=p.wider())


@MATRIX_KERNELS.rows({"ragged_dot", "ragged_dot_general"})
def _ragged_dot(p: Prim) -> Kernel:
    """lhs [m, k] by one of the groups of rhs [g, k, n]: each row meets one group."""
    macs = float(math.prod(p.outs[0].aval.shape) * p.ins[0].aval.shape[-1])
    return K.matrix(p.label, macs=macs, nbytes=p.nbytes, dtype=p.wider())


def kernel(p: Prim) -> Kernel:
    """The kernel of a known primitive: its formula, else bytes only (a move)."""
    matrix = MATRIX_KERNELS.get(p.name)
    if matrix is not None:
        return matrix(p)
    formula = VECTOR_FLOPS.get(p.name)
    return K.vector(p.label, flops=formula(p) if formula is not None else 0.0,
                    nbytes=p.nbytes, dtype=precision(p.outs[0]) if p.outs else None)


def known(name: str) -> bool:
    """True for a primitive with a formula or a class (the rest is unknown)."""
    return (name in MEMORY or name in MOVING or name in FREE or name in VECTOR_FLOPS
            or name in MATRIX_KERNELS or _jax_mesh.is_collective(name))


def conv_macs(eqn: Any) -> float:
    """Multiply-accumulates of a convolution over every tap, padding included: each output
    element meets each tap of the kernel (per spatial axis, outputs x taps), as torch's
    counter, the torch trace and ``ops.conv2d`` count a convolution (docs/bounds.md: one
    rule for every path). XLA's cost analysis counts only the taps that land on the input,
    fewer at a padded border. On a base-dilated axis (a transposed convolution, a gradient)
    the holes the dilation puts between the input's elements are no taps: a tap there meets
    nothing, in the input or its padding."""
    p = eqn.params
    lhs, rhs, out = eqn.ins[0].aval, eqn.ins[1].aval, eqn.outs[0].aval
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    batch = lhs.shape[lhs_spec[0]]
    in_features = lhs.shape[lhs_spec[1]]
    out_features = rhs.shape[rhs_spec[0]]
    taps_met = 1.0
    for i, (li, ri, oi) in enumerate(zip(lhs_spec[2:], rhs_spec[2:], out_spec[2:],
                                         strict=True)):
        size, taps, outputs = lhs.shape[li], rhs.shape[ri], out.shape[oi]
        base = p["lhs_dilation"][i]
        if base == 1:
            taps_met *= taps * outputs
            continue
        stride, low = p["window_strides"][i], p["padding"][i][0]
        dilation, span = p["rhs_dilation"][i], (size - 1) * base + 1
        pairs = 0
        for k in range(taps):
            for o in range(outputs):
                position = o * stride - low + k * dilation
                if not 0 <= position < span or position % base == 0:
                    pairs += 1
        taps_met *= pairs
    groups = p["feature_group_count"]
    batch_groups = p["batch_group_count"]
    return float(batch // batch_groups * (in_features // groups) * out_features * taps_met)

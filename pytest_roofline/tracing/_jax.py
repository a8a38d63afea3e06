"""Record what a JAX callable runs: one kernel per primitive of the program ``jax.jit``
lowers (its jaxpr, the program XLA receives).

FLOPs follow ``_kernels`` (the ``ops`` conventions). A ``dot_general`` counts 2 FLOPs per
multiply-accumulate and a convolution 2 per multiply-accumulate of *valid* taps, skipping the
taps that fall on padding, as XLA's cost analysis does (torch's counter counts them); both
equal XLA's figures. Sub-programs (``pjit``, ``custom_jvp``/``custom_vjp``, ``remat``,
``closed_call``) are walked in place; a ``scan`` body counts ``length`` times; a
``while_loop`` body once (its trip count is not known before it runs: the bound stays a
lower bound); a ``cond`` counts its cheapest branch.

Fusion policies (bytes only; FLOPs never change):

* ``"epilogue"`` (default: what XLA does to a jitted program at least): an elementwise chain
  that consumes a matrix product's result, and is its only consumer, runs in the product's
  epilogue; the intermediate results stay on chip (neither written nor read back), and each
  op of the chain names the product (``Kernel.epilogue_of``), so ``analyze`` times them
  together as the fusion model (:mod:`pytest_roofline.fusion`) does.
* ``"none"``: every primitive reads its inputs and writes its outputs.

Kernels are named after the primitive, prefixed by the named scopes it ran in
(``jax.named_scope``; flax modules open one each): ``layers.0.mlp.dot_general``.

Under both, ``reshape``, ``squeeze``, ``expand_dims`` and ``broadcast_in_dim`` move nothing
(metadata, or folded into the consumer's indexing).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import numpy as np

from ..ops import _family as R
from ..workload import Kernel
from . import _jax_mesh, _jax_spmd, registry
from . import _kernels as K
from ._mesh import AxisLink

_FREE = frozenset({"reshape", "squeeze", "expand_dims", "broadcast_in_dim"}) | _jax_mesh.FREE
_REDUCE = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax",
                     "argmin", "reduce_and", "reduce_or", "reduce_xor"})
#: Scans: one FLOP per element.
_SCAN = frozenset({"cumsum", "cummax", "cummin", "cumprod", "cumlogsumexp"})
#: Primitives that move, select or fill data and compute nothing (bytes only).
_MEMORY = frozenset({
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
_SCATTER_COMBINE = frozenset({"scatter-add", "scatter_add", "scatter-mul", "scatter_mul",
                              "scatter-min", "scatter_min", "scatter-max", "scatter_max"})
#: Sorting: comparisons, n·log2(length) (sort) or n (top_k), as the torch tracer counts.
_SORTING = frozenset({"sort", "top_k"})
#: Reductions over windows (pooling): window - 1 FLOPs per output, as any reduction.
_WINDOW = frozenset({"reduce_window_sum", "reduce_window_max", "reduce_window_min",
                     "reduce_window", "select_and_scatter_add"})
#: Elementwise primitives that compute (1 FLOP per output element unless ELEMENT_FLOPS says).
_ARITHMETIC = frozenset({
    "add", "sub", "mul", "div", "neg", "max", "min", "exp", "exp2", "log", "log1p", "expm1",
    "tanh", "logistic", "sqrt", "rsqrt", "cbrt", "pow", "integer_pow", "abs", "sign", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2",
    "erf", "erfc", "erf_inv", "square", "rem", "floor", "ceil", "round", "nextafter", "eq",
    "ne", "lt", "le", "gt", "ge", "and", "or", "not", "xor", "shift_left",
    "shift_right_logical", "shift_right_arithmetic", "clamp", "is_finite", "lgamma",
    "digamma", "add_any", "population_count", "clz", "imag", "real", "conj", "complex"})
#: Elementwise primitives that only move or select data: they fuse, but compute nothing.
_MOVING = frozenset({"convert_element_type", "select_n", "copy", "copy_p", "stop_gradient"})
_FUSABLE = _ARITHMETIC | _MOVING | _FREE


def _bytes(var: Any) -> float:
    """Bytes of a value; scalars (rank 0) ride in the kernel's arguments and count none."""
    aval = getattr(var, "aval", None)
    if aval is None or not getattr(aval, "shape", ()):
        return 0.0
    return float(math.prod(aval.shape) * aval.dtype.itemsize)


def _dtype(var: Any) -> str | None:
    return K.precision(var.aval.dtype.name)


try:
    from jax.extend.core import Literal as _Literal
except ImportError:  # jax < 0.4.36
    _Literal = jax.core.Literal


def _is_var(value: Any) -> bool:
    return not isinstance(value, _Literal)


_CALLS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


class _Op:
    """One primitive of the flattened program: call-like sub-programs are inlined, so an
    epilogue fuses across a ``jax.jit``-decorated helper as XLA fuses it."""

    __slots__ = ("count", "invars", "kernels", "label", "name", "outvars", "params")

    def __init__(self, label: str, invars: list[Any], outvars: list[Any], params: Any,
                 count: float, kernels: list[Kernel] | None = None, *, prim: str = "") -> None:
        self.name = prim or label  # the primitive
        self.label = label  # the kernel's name: named scopes (flax modules) and primitive
        self.invars, self.outvars = invars, outvars
        self.params, self.count, self.kernels = params, count, kernels


class _Walk:
    def __init__(self, dtype: str | None, fusion: str,
                 links: dict[str, AxisLink] | None = None,
                 axes: dict[str, int] | None = None) -> None:
        self.dtype = dtype
        self.fusion = fusion
        self.kernels: list[Kernel] = []
        self.links = links or {}
        self.axes: dict[str, int] = axes if axes is not None else {}  # shard_map mesh axes
        self.unknown: dict[str, int] = {}

    def walk(self, jaxpr: Any, count: float) -> None:
        ops: list[_Op] = []
        self._flatten(jaxpr, {}, count, ops)
        consumers: dict[Any, list[_Op]] = {}
        for op in ops:
            for var in op.invars:
                if _is_var(var):
                    consumers.setdefault(var, []).append(op)
        outputs = {v for v in jaxpr.outvars if _is_var(v)}
        # values held on chip in a product's epilogue -> the kernel whose epilogue holds them
        chain: dict[Any, str] = {}

        def stays(var: Any) -> bool:
            """True when every consumer of an epilogue value fuses: it is never written."""
            users = consumers.get(var, ())
            return var not in outputs and bool(users) and all(u.name in _FUSABLE
                                                              for u in users)

        epilogue = self.fusion == "epilogue"
        for op in ops:
            if op.kernels is not None:  # a loop or a branch, walked on its own
                self.kernels.extend(op.kernels)
                continue
            name = op.name
            if name == "custom_call" or (name not in _KNOWN
                                         and not _jax_mesh.is_collective(name)):
                self.kernels.extend(self._unknown(op, name))
                continue
            matrix = name in ("dot_general", "conv_general_dilated", "ragged_dot",
                              "ragged_dot_general")
            held = [chain[v] for v in op.invars if _is_var(v) and v in chain]
            fused = epilogue and not matrix and name in _FUSABLE and bool(held)
            if name in _FREE:  # metadata: moves nothing, passes an epilogue value through
                if fused:
                    chain.update(dict.fromkeys(op.outvars, held[0]))
                continue
            nbytes = sum(_bytes(v) for v in op.invars
                         if not (fused and _is_var(v) and v in chain))
            carried = epilogue and (matrix or fused)  # fusable consumers take its outputs
            nbytes += sum(_bytes(out) for out in op.outvars if not (carried and stays(out)))
            kernel = self._kernel(op, name, nbytes, op.count)
            if fused:  # timed with its host, as fusion.epilogue prices it
                kernel = kernel.evolve(epilogue_of=held[0])
            if carried:
                chain.update(dict.fromkeys(op.outvars, kernel.epilogue_of or kernel.name))
            self.kernels.append(kernel)

    def _flatten(self, jaxpr: Any, env: dict[Any, Any], count: float,
                 ops: list[_Op]) -> None:
        def key(var: Any) -> Any:
            return env.get(var, var) if _is_var(var) else var

        for eqn in jaxpr.eqns:
            name, params = eqn.primitive.name, eqn.params
            invars = [key(v) for v in eqn.invars]
            if name in ("scan", "while", "cond"):
                ops.append(_Op(name, invars, list(eqn.outvars), params, count,
                               self._control(name, params, count)))
                continue
            if name == "pallas_call":
                ops.append(_Op(name, invars, list(eqn.outvars), params, count,
                               self._pallas(eqn, count)))
                continue
            sub = next((params[k] for k in _CALLS if k in params), None)
            if name == "shard_map":  # a per-chip body: its values are shards, not the
                self.axes.update(_jax_mesh.mesh_axes(params))  # outer (global) arrays
                self._flatten(getattr(sub, "jaxpr", sub), {}, count, ops)
                continue
            if sub is not None:
                inner = getattr(sub, "jaxpr", sub)
                inner_env = dict(zip(inner.invars, invars, strict=False))
                self._flatten(inner, inner_env, count, ops)
                for outer, var in zip(eqn.outvars, inner.outvars, strict=False):
                    env[outer] = inner_env.get(var, var) if _is_var(var) else var
                continue
            scope = str(eqn.source_info.name_stack).replace("/", ".")
            label = f"{scope}.{name}" if scope else name
            ops.append(_Op(label, invars, list(eqn.outvars), params, count, prim=name))

    def _control(self, name: str, params: Any, count: float) -> list[Kernel]:
        """Kernels of a loop or branch (see the module docstring), fused inside only."""
        if name == "scan":
            return self._sub(params["jaxpr"].jaxpr, count * params["length"])
        if name == "while":
            return (self._sub(params["cond_jaxpr"].jaxpr, count)
                    + self._sub(params["body_jaxpr"].jaxpr, count))
        branches = [self._sub(b.jaxpr, count) for b in params["branches"]]
        return min(branches, key=lambda ks: sum(k.total_flops for k in ks))

    def _sub(self, jaxpr: Any, count: float) -> list[Kernel]:
        walker = _Walk(self.dtype, self.fusion, self.links, self.axes)
        walker.walk(jaxpr, count)
        for op, calls in walker.unknown.items():
            self.unknown[op] = self.unknown.get(op, 0) + calls
        return walker.kernels

    def _unknown(self, op: _Op, name: str) -> list[Kernel]:
        """A primitive with no built-in formula (a ``custom_call``, an FFI call): its
        registered formula, else its bytes, listed as unknown."""
        params = op.params
        target = str(params.get("target_name") or params.get("call_target_name") or name)
        where = op.label.rsplit(".", 1)[0] if "." in op.label else ""
        for key in (target, name):
            formula = registry.lookup(key)
            if formula is not None:
                return self._formula(key, formula, where, op.invars, op.count)
        self.unknown[target] = self.unknown.get(target, 0) + 1
        nbytes = sum(_bytes(v) for v in op.invars if _is_var(v)) + sum(
            _bytes(v) for v in op.outvars)
        outs = op.outvars
        kernel = K.vector(f"{where}.{target}" if where else target, flops=0.0, nbytes=nbytes,
                          dtype=_dtype(outs[0]) if outs else None)
        return [kernel.scaled(op.count) if op.count != 1.0 else kernel]

    def _formula(self, name: str, formula: registry.Formula, where: str, invars: list[Any],
                 count: float) -> list[Kernel]:
        """The kernels a registered formula gives, called with the operands' shapes."""
        args = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in invars
                if hasattr(v, "aval")]
        kernels, unknown = registry.apply(name, formula, where, args, {})
        for other, calls in unknown.items():
            self.unknown[other] = self.unknown.get(other, 0) + calls
        return [k.scaled(count) if count != 1.0 else k for k in kernels]

    def _pallas(self, eqn: Any, count: float) -> list[Kernel]:
        """A ``pallas_call``: its registered formula (by kernel name), else one kernel: the
        body's FLOPs over the grid, and the bytes of the blocks crossing its boundary (refs
        inside live in on-chip memory; loads and stores are not charged)."""
        params = eqn.params
        debug = getattr(params["jaxpr"], "debug_info", None)  # the kernel function's name
        kernel_name = str(params.get("name") or getattr(debug, "func_name", None)
                          or "pallas_call")
        scope = str(eqn.source_info.name_stack).replace("/", ".")
        label = f"{scope}.{kernel_name}" if scope else kernel_name
        formula = registry.lookup(kernel_name)
        if formula is not None:
            return self._formula(kernel_name, formula, scope, eqn.invars, count)
        mapping = params["grid_mapping"]
        grid = tuple(int(g) for g in mapping.grid)
        steps = math.prod(grid) if grid else 1
        body = _Walk(self.dtype, "none")
        body.walk(params["jaxpr"], float(steps))
        for other, calls in body.unknown.items():
            self.unknown[other] = self.unknown.get(other, 0) + calls
        matrix = float(sum(k.total_flops for k in body.kernels if k.unit == "matrix"))
        vector = float(sum(k.total_flops for k in body.kernels if k.unit == "vector"))
        nbytes = sum(_block_traffic(bm, grid) for bm in mapping.block_mappings)
        dtype = next((k.dtype for k in body.kernels if k.unit == "matrix"), None)
        out_dtype = _dtype(eqn.outvars[0]) if eqn.outvars else None
        kernels = []
        if matrix:
            kernels.append(Kernel(label, matrix, nbytes, unit="matrix", dtype=dtype))
        if vector or not matrix:
            kernels.append(K.vector(f"{label}.vector" if matrix else label, flops=vector,
                                    nbytes=0.0 if matrix else nbytes, dtype=out_dtype))
        return [k.scaled(count) if count != 1.0 else k for k in kernels]

    def _kernel(self, eqn: _Op, name: str, nbytes: float, count: float) -> Kernel:
        outs, ins = eqn.outvars, [v for v in eqn.invars if hasattr(v, "aval")]
        if _jax_mesh.is_collective(name):
            return _jax_mesh.kernel(eqn.label, name, eqn.params, ins, outs, self.axes,
                                    self.links, count)
        label = eqn.label
        if name == "dot_general":
            (contract, _), _ = eqn.params["dimension_numbers"]
            lhs = ins[0].aval
            macs = float(math.prod(outs[0].aval.shape) * math.prod(lhs.shape[i]
                                                                    for i in contract))
            dtype = self.dtype or K.wider(_dtype(ins[0]), _dtype(ins[1]))
            kernel = K.matrix(label, macs=macs, nbytes=nbytes, dtype=dtype)
        elif name == "conv_general_dilated":
            dtype = self.dtype or K.wider(_dtype(ins[0]), _dtype(ins[1]))
            macs = conv_macs(eqn)
            rhs_spec = eqn.params["dimension_numbers"][1]
            if eqn.params["feature_group_count"] > 1 and ins[1].aval.shape[rhs_spec[1]] == 1:
                # depthwise: no reduction over channels for a matrix unit (as ops.conv2d)
                kernel = K.vector(label, flops=2.0 * macs, nbytes=nbytes, dtype=dtype)
            else:
                kernel = K.matrix(label, macs=macs, nbytes=nbytes, dtype=dtype)
        elif name == "ragged_dot" or name == "ragged_dot_general":
            # lhs [m, k] by one of the groups of rhs [g, k, n]: each row meets one group
            lhs, rhs = ins[0].aval, ins[1].aval
            macs = float(math.prod(outs[0].aval.shape) * lhs.shape[-1])
            del rhs
            dtype = self.dtype or K.wider(_dtype(ins[0]), _dtype(ins[1]))
            kernel = K.matrix(label, macs=macs, nbytes=nbytes, dtype=dtype)
        else:
            elements = float(math.prod(outs[0].aval.shape)) if outs else 0.0
            n_in = float(math.prod(ins[0].aval.shape)) if ins else 0.0
            if name in _REDUCE and ins:
                flops = R.reduce_flops(n_in, elements)
            elif name in _SCAN:
                flops = R.scan_flops(n_in)
            elif name in _ARITHMETIC:
                flops = R.element_flops(name, elements)
            elif name in _SCATTER_COMBINE and ins:
                flops = float(math.prod(ins[-1].aval.shape))
            elif name == "sort" and ins:
                dim = eqn.params.get("dimension", -1)
                flops = R.sort_flops(n_in, ins[0].aval.shape[dim] if ins[0].aval.shape else 1)
            elif name == "top_k":
                flops = R.top_k_flops(n_in)
            elif name in _WINDOW:  # a pool: a reduction over each window
                window = float(math.prod(eqn.params.get("window_dimensions", (1,))))
                if name == "select_and_scatter_add" and ins:  # max-pool's gradient: a
                    windows = float(math.prod(ins[0].aval.shape))  # pool, then one add
                    flops = R.pool_flops(windows, window, average=True)
                else:
                    flops = R.pool_flops(elements, window, average=False)
            else:
                flops = 0.0  # index, gather, scatter, copy, concatenate, pad, ...
            kernel = K.vector(label, flops=flops, nbytes=nbytes,
                              dtype=_dtype(outs[0]) if outs else None)
        return kernel.scaled(count) if count != 1.0 else kernel


#: Every primitive with a formula (the rest is unknown: bytes only, listed by name).
_KNOWN = (_ARITHMETIC | _MOVING | _FREE | _REDUCE | _SCAN | _MEMORY | _SCATTER_COMBINE
          | _SORTING | _WINDOW | frozenset({"dot_general", "conv_general_dilated",
                                           "ragged_dot", "ragged_dot_general"}))


#: Grids up to this many steps have their blocks' index maps evaluated step by step.
_GRID_EVALUATED = 4096


def _block_traffic(block: Any, grid: tuple[int, ...]) -> float:
    """Bytes one operand's blocks move across a ``pallas_call``'s boundary: a block is
    fetched (or written back) when its index changes between consecutive grid steps, as the
    Pallas pipeline does; larger grids: the array once (each block at least once)."""
    # ``BlockMapping`` (the params of the pallas_call primitive; tests/test_trace_jax.py
    # fails when its fields change): array_aval, block_shape (ints, or Blocked(block_size),
    # Squeezed and Element markers), index_map_jaxpr.
    array = block.array_aval
    itemsize = np.dtype(array.dtype).itemsize
    dims = [d if isinstance(d, int) else int(getattr(d, "block_size", 1) or 1)
            for d in block.block_shape]
    block_bytes = float(math.prod(dims) * itemsize)
    whole = float(math.prod(array.shape) * itemsize)
    steps = math.prod(grid) if grid else 1
    index_map = getattr(block, "index_map_jaxpr", None)
    if index_map is None or steps > _GRID_EVALUATED or not grid:
        return min(whole, block_bytes * steps) if grid else min(whole, block_bytes)
    fetches, last = 0, None
    for point in itertools.product(*(range(g) for g in grid)):
        index = tuple(int(i) for i in jax.core.eval_jaxpr(index_map.jaxpr, index_map.consts,
                                                           *point))
        if index != last:
            fetches, last = fetches + 1, index
    return block_bytes * fetches


def conv_macs(eqn: _Op) -> float:
    """Multiply-accumulates of a convolution over its valid taps, as XLA counts them."""
    p = eqn.params
    lhs, rhs, out = eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    batch = lhs.shape[lhs_spec[0]]
    in_features = lhs.shape[lhs_spec[1]]
    out_features = rhs.shape[rhs_spec[0]]
    valid = 1.0
    for i, (li, ri, oi) in enumerate(zip(lhs_spec[2:], rhs_spec[2:], out_spec[2:],
                                         strict=True)):
        stride = p["window_strides"][i]
        low = p["padding"][i][0]
        base = p["lhs_dilation"][i]
        dilation = p["rhs_dilation"][i]
        size, taps, outputs = lhs.shape[li], rhs.shape[ri], out.shape[oi]
        span = (size - 1) * base + 1  # the dilated input's extent
        pairs = 0
        for k in range(taps):
            for o in range(outputs):
                position = o * stride - low + k * dilation
                if 0 <= position < span and position % base == 0:
                    pairs += 1
        valid *= pairs
    groups = p["feature_group_count"]
    batch_groups = p["batch_group_count"]
    return float(batch // batch_groups * (in_features // groups) * out_features * valid)


def record(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           dtype: str | None, fusion: str, links: dict[str, AxisLink] | None = None,
           ) -> tuple[list[Kernel], float, dict[str, int]]:
    """The kernels of ``fn(*args, **kwargs)``, the bytes of its arguments and the
    primitives without a formula."""
    target = partial(fn, **kwargs) if kwargs else fn
    closed = jax.make_jaxpr(target)(*args)
    walker = _Walk(dtype, fusion, links)
    walker.walk(closed.jaxpr, 1.0)
    footprint = sum(_bytes(v) for v in closed.jaxpr.invars)
    mesh = _jax_spmd.sharded_mesh(args, kwargs)
    if mesh is None:
        return walker.kernels, float(footprint), walker.unknown
    # a partitioned program (jit with NamedSharding inputs): per chip, see _jax_spmd
    share = 1.0 / mesh.size
    kernels = [k.scaled(share) for k in walker.kernels]
    kernels += _jax_spmd.collectives(fn, args, kwargs, mesh, links or {})
    return kernels, _jax_spmd.footprint(args, kwargs), walker.unknown

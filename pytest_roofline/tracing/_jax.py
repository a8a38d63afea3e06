"""Record what a JAX callable runs: one kernel per primitive of the program ``jax.jit``
lowers (its jaxpr, the program XLA receives).

FLOPs follow ``_kernels`` (the ``ops`` conventions). A ``dot_general`` counts 2 FLOPs per
multiply-accumulate and a convolution 2 per multiply-accumulate of *valid* taps, skipping the
taps that fall on padding, as XLA's cost analysis does (torch's counter counts them); both
equal XLA's figures. Sub-programs (``pjit``, ``custom_jvp``/``custom_vjp``, ``remat``,
``closed_call``) are walked in place; a ``scan`` body counts ``length`` times; a
``while_loop`` body once (its trip count is not known before it runs: the bound stays a
lower bound, and ``Workload.assumed`` names the loop); a ``cond`` counts its cheapest branch.

Fusion policies (bytes only; FLOPs never change):

* ``"epilogue"`` (default: what XLA does to a jitted program at least): an elementwise chain
  that consumes a matrix product's result, and is its only consumer, runs in the product's
  epilogue; the intermediate results stay on chip (neither written nor read back), and each
  op of the chain names the product (``Kernel.epilogue_of``), so ``analyze`` times them
  together as the fusion model (:mod:`pytest_roofline.engine.fusion`) does.
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

from ..engine.workload import Kernel
from . import _jax_compat as C
from . import _jax_mesh, _jax_spmd, registry
from . import _jax_ops as P
from . import _kernels as K
from ._base import Recording
from ._mesh import AxisLink


def _bytes(var: Any) -> float:
    """Bytes of a value (``_kernels.width`` an element); scalars (rank 0) ride in the
    kernel's arguments and count none."""
    aval = getattr(var, "aval", None)
    if aval is None or not getattr(aval, "shape", ()):
        return 0.0
    return float(math.prod(aval.shape) * K.width(aval.dtype))


#: Primitives that read slices of their first operand: at most the output's worth of it.
_GATHERS = frozenset({"gather", "dynamic_slice"})


def _gathered(operand: Any, out: Any) -> float:
    """Bytes a gather reads of *operand*: each element at most once, and no more elements
    than it outputs (the table is never read whole; a row two ids share is read once)."""
    shape = getattr(getattr(out, "aval", None), "shape", ())
    elements = math.prod(shape) if shape else 1
    return min(_bytes(operand), float(elements * K.width(operand.aval.dtype)))





class _Op:
    """One primitive of the flattened program: call-like sub-programs are inlined, so an
    epilogue fuses across a ``jax.jit``-decorated helper as XLA fuses it."""

    __slots__ = ("count", "invars", "kernels", "label", "name", "outvars", "params", "per_chip")

    def __init__(self, label: str, invars: list[Any], outvars: list[Any], params: Any,
                 count: float, kernels: list[Kernel] | None = None, *, prim: str = "",
                 per_chip: bool = False) -> None:
        self.per_chip = per_chip  # in a shard_map body: one chip's work
        self.name = prim or label  # the primitive
        self.label = label  # the kernel's name: named scopes (flax modules) and primitive
        self.invars, self.outvars = invars, outvars
        self.params, self.count, self.kernels = params, count, kernels


class _Walk:
    def __init__(self, dtype: str | None, fusion: str,
                 links: dict[str, AxisLink] | None = None,
                 axes: dict[str, int] | None = None,
                 formulas: registry.Formulas | None = None) -> None:
        self.dtype = dtype
        self.formulas = formulas  # a Tracer's own (Tracer(formulas=...))
        self.fusion = fusion
        self.kernels: list[Kernel] = []
        self.links = links or {}
        self.axes: dict[str, int] = axes if axes is not None else {}  # shard_map mesh axes
        self.unknown: dict[str, int] = {}
        self.inside = False  # flattening a shard_map body
        self.per_chip: set[int] = set()  # ids of the kernels of shard_map bodies (per chip)
        self.collectives: set[int] = set()  # ids of the collectives' kernels
        self.assumed: dict[str, int] = {}  # loops whose trip count is known at run time only

    def walk(self, jaxpr: Any, count: float) -> None:
        ops: list[_Op] = []
        self._flatten(jaxpr, {}, count, ops)
        consumers: dict[Any, list[_Op]] = {}
        for op in ops:
            for var in op.invars:
                if C.is_var(var):
                    consumers.setdefault(var, []).append(op)
        outputs = {v for v in jaxpr.outvars if C.is_var(v)}
        # values held on chip in a product's epilogue -> the kernel whose epilogue holds them
        chain: dict[Any, str] = {}

        def stays(var: Any) -> bool:
            """True when every consumer of an epilogue value fuses: it is never written."""
            users = consumers.get(var, ())
            return var not in outputs and bool(users) and all(u.name in P.FUSABLE
                                                              for u in users)

        epilogue = self.fusion == "epilogue"
        for op in ops:
            if op.kernels is not None:  # a loop or a branch, walked on its own
                self._add(op, op.kernels)
                continue
            name = op.name
            if name == "custom_call" or not P.known(name):
                self._add(op, self._unknown(op, name))
                continue
            matrix = name in P.MATRIX
            held = [chain[v] for v in op.invars if C.is_var(v) and v in chain]
            fused = epilogue and not matrix and name in P.FUSABLE and bool(held)
            if name in P.FREE:  # metadata: moves nothing, passes an epilogue value through
                if fused:
                    chain.update(dict.fromkeys(op.outvars, held[0]))
                continue
            nbytes = sum(_bytes(v) for v in op.invars
                         if not (fused and C.is_var(v) and v in chain))
            if name in _GATHERS and op.invars and op.outvars and C.is_var(op.invars[0]):
                nbytes -= _bytes(op.invars[0]) - _gathered(op.invars[0], op.outvars[0])
            carried = epilogue and (matrix or fused)  # fusable consumers take its outputs
            nbytes += sum(_bytes(out) for out in op.outvars if not (carried and stays(out)))
            kernel = self._kernel(op, name, nbytes, op.count)
            if fused:  # timed with its host, as fusion.epilogue prices it
                kernel = kernel.evolve(epilogue_of=held[0])
            if carried:
                chain.update(dict.fromkeys(op.outvars, kernel.epilogue_of or kernel.name))
            self._add(op, [kernel])

    def _add(self, op: _Op, kernels: list[Kernel]) -> None:
        self.kernels.extend(kernels)
        if op.per_chip:
            self.per_chip.update(id(k) for k in kernels)

    def _flatten(self, jaxpr: Any, env: dict[Any, Any], count: float,
                 ops: list[_Op]) -> None:
        def key(var: Any) -> Any:
            return env.get(var, var) if C.is_var(var) else var

        for eqn in jaxpr.eqns:
            name, params = eqn.primitive.name, eqn.params
            invars = [key(v) for v in eqn.invars]
            if name in ("scan", "while", "cond"):
                ops.append(_Op(name, invars, list(eqn.outvars), params, count,
                               self._control(name, params, count), per_chip=self.inside))
                continue
            if name == "pallas_call":
                ops.append(_Op(name, invars, list(eqn.outvars), params, count,
                               self._pallas(eqn, count), per_chip=self.inside))
                continue
            sub = next((params[k] for k in C.CALLS if k in params), None)
            if name == "shard_map":  # a per-chip body: its values are shards, not the
                self.axes.update(_jax_mesh.mesh_axes(params))  # outer (global) arrays
                outer, self.inside = self.inside, True
                try:
                    self._flatten(getattr(sub, "jaxpr", sub), {}, count, ops)
                finally:
                    self.inside = outer
                continue
            if sub is not None:
                inner = getattr(sub, "jaxpr", sub)
                inner_env = dict(zip(inner.invars, invars, strict=False))
                self._flatten(inner, inner_env, count, ops)
                for outer, var in zip(eqn.outvars, inner.outvars, strict=False):
                    env[outer] = inner_env.get(var, var) if C.is_var(var) else var
                continue
            scope = C.scope(eqn)
            label = f"{scope}.{name}" if scope else name
            ops.append(_Op(label, invars, list(eqn.outvars), params, count, prim=name,
                           per_chip=self.inside))

    def _control(self, name: str, params: Any, count: float) -> list[Kernel]:
        """Kernels of a loop or branch (see the module docstring), fused inside only."""
        if name == "scan":
            return self._sub(params["jaxpr"].jaxpr, count * params["length"])
        if name == "while":
            what = "jax while_loop: trip count known at run time only, body counted once"
            self.assumed[what] = self.assumed.get(what, 0) + 1
            return (self._sub(params["cond_jaxpr"].jaxpr, count)
                    + self._sub(params["body_jaxpr"].jaxpr, count))
        branches = [self._sub(b.jaxpr, count) for b in params["branches"]]
        return min(branches, key=lambda ks: sum(k.total_flops for k in ks))

    def _sub(self, jaxpr: Any, count: float) -> list[Kernel]:
        walker = _Walk(self.dtype, self.fusion, self.links, self.axes, self.formulas)
        walker.walk(jaxpr, count)
        for op, calls in walker.unknown.items():
            self.unknown[op] = self.unknown.get(op, 0) + calls
        self.collectives.update(walker.collectives)
        for what, calls in walker.assumed.items():
            self.assumed[what] = self.assumed.get(what, 0) + calls
        return walker.kernels

    def _unknown(self, op: _Op, name: str) -> list[Kernel]:
        """A primitive with no built-in formula (a ``custom_call``, an FFI call): its
        registered formula, else its bytes, listed as unknown."""
        params = op.params
        target = str(params.get("target_name") or params.get("call_target_name") or name)
        where = op.label.rsplit(".", 1)[0] if "." in op.label else ""
        for key in (target, name):
            formula = registry.lookup(key, self.formulas)
            if formula is not None:
                return self._formula(key, formula, where, op.invars, op.count)
        self.unknown[target] = self.unknown.get(target, 0) + 1
        nbytes = sum(_bytes(v) for v in op.invars if C.is_var(v)) + sum(
            _bytes(v) for v in op.outvars)
        outs = op.outvars
        kernel = K.vector(f"{where}.{target}" if where else target, flops=0.0, nbytes=nbytes,
                          dtype=P.precision(outs[0]) if outs else None)
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
        kernel_name = C.pallas_name(params)
        scope = C.scope(eqn)
        label = f"{scope}.{kernel_name}" if scope else kernel_name
        formula = registry.lookup(kernel_name, self.formulas)
        if formula is not None:
            return self._formula(kernel_name, formula, scope, eqn.invars, count)
        grid = C.pallas_grid(params)
        steps = math.prod(grid) if grid else 1
        body = _Walk(self.dtype, "none", formulas=self.formulas)
        body.walk(params["jaxpr"], float(steps))
        for other, calls in body.unknown.items():
            self.unknown[other] = self.unknown.get(other, 0) + calls
        matrix = float(sum(k.total_flops for k in body.kernels if k.unit == "matrix"))
        vector = float(sum(k.total_flops for k in body.kernels if k.unit == "vector"))
        nbytes = sum(_block_traffic(block, grid) for block in C.pallas_blocks(params))
        dtype = next((k.dtype for k in body.kernels if k.unit == "matrix"), None)
        out_dtype = P.precision(eqn.outvars[0]) if eqn.outvars else None
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
            collective = _jax_mesh.kernel(eqn.label, name, eqn.params, ins, outs, self.axes,
                                          self.links, count)
            self.collectives.add(id(collective))
            return collective
        kernel = P.kernel(P.Prim(name=name, label=eqn.label, params=eqn.params, ins=ins,
                                 outs=outs, nbytes=nbytes, dtype=self.dtype))
        return kernel.scaled(count) if count != 1.0 else kernel


#: Grids up to this many steps have their blocks' index maps evaluated step by step.
_GRID_EVALUATED = 4096


def _block_traffic(block: C.Block, grid: tuple[int, ...]) -> float:
    """Bytes one operand's blocks move across a ``pallas_call``'s boundary: a block is
    fetched (or written back) when its index changes between consecutive grid steps, as the
    Pallas pipeline does; larger grids: the array once (each block at least once)."""
    whole, block_bytes = block.array_bytes, block.block_bytes
    steps = math.prod(grid) if grid else 1
    if block.index_at is None or steps > _GRID_EVALUATED or not grid:
        return min(whole, block_bytes * steps) if grid else min(whole, block_bytes)
    fetches, last = 0, None
    for point in itertools.product(*(range(g) for g in grid)):
        index = block.index_at(*point)
        if index != last:
            fetches, last = fetches + 1, index
    return block_bytes * fetches


def record(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           dtype: str | None, fusion: str, links: dict[str, AxisLink] | None = None,
           formulas: registry.Formulas | None = None) -> Recording:
    """The kernels of ``fn(*args, **kwargs)``, the bytes of its arguments, the
    primitives without a formula and what was assumed (loops of run-time length); a
    jitted program leaves nothing out."""
    target = partial(fn, **kwargs) if kwargs else fn
    closed = jax.make_jaxpr(target)(*args)
    walker = _Walk(dtype, fusion, links, formulas=formulas)
    walker.walk(closed.jaxpr, 1.0)
    mesh = _jax_spmd.sharded_mesh(args, kwargs)
    if mesh is None:
        return Recording(kernels=tuple(walker.kernels),
                         footprint=float(sum(_bytes(v) for v in closed.jaxpr.invars)),
                         unknown=walker.unknown, assumed=walker.assumed, left_out={})
    # a partitioned program (jit with NamedSharding inputs), per chip (see _jax_spmd): the
    # global program's work shared among the chips, a shard_map body's as it is (already
    # one chip's), and every collective once, from the compiled program (which holds the
    # shard_map's and the partitioner's alike)
    share = 1.0 / mesh.size
    kernels = [k if id(k) in walker.per_chip else k.scaled(share) for k in walker.kernels
               if id(k) not in walker.collectives]
    moved, unknown = _jax_spmd.collectives(fn, args, kwargs, mesh, links or {})
    for op, calls in unknown.items():
        walker.unknown[op] = walker.unknown.get(op, 0) + calls
    return Recording(kernels=(*kernels, *moved),
                     footprint=_jax_spmd.footprint(args, kwargs),
                     unknown=walker.unknown, assumed=walker.assumed, left_out={})

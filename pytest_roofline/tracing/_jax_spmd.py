"""A ``jax.jit`` program whose inputs carry ``NamedSharding``s: the collectives XLA's SPMD
partitioner inserts, per chip, read from the compiled program.

Arguments sharded over a mesh of more than one device (``jax.Array``s or
``jax.ShapeDtypeStruct(..., sharding=NamedSharding(mesh, spec))``) make the partitioner split
the program; the collectives it adds are in the compiled HLO (``jit(fn).lower(*args).
compile().as_text()``) with per-device shapes, and each becomes the ``ops.collectives`` kernel
of its kind over its replica group (``_mesh``). The kind is read from the table of
collectives (``ops._family.COLLECTIVES``: all-reduce, all-gather, reduce-scatter, all-to-all,
collective-permute); the result is a 1/``parts_out`` share of the collective's size (a
reduce-scatter's result times the group: the unreduced size; a permute's result the peer's,
the same size). A communication opcode of HLO that no row names is listed in
``Workload.unknown`` with its bytes, never skipped. The group (a permute's source-target
pairs) is matched to the mesh axes it spans, so ``Tracer(links=...)`` prices it on the axis's
link.

The compute is the jaxpr's (global shapes) divided by the devices of the mesh: no chip does
less than an even share of the total work, so the busiest chip's figures are at least that
(replicated work only adds to some chips): a lower bound per chip. A ``shard_map`` body is
one chip's work already and is not divided; its collectives are in the compiled program
too, and are counted from there only (once). XLA's CPU backend promotes bf16 reductions to
f32; an accelerator reduces at the inputs' width, so a collective's bytes use the narrower of
the compiled width and the widest input's (the bound stays a bound).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from .. import dtypes
from ..engine.workload import Kernel
from ..ops import _family as R
from . import _kernels as K
from . import _mesh

#: HLO's communication opcodes (XLA's ``HloOpcode``): one the table of collectives
#: (``ops._family``) does not name is listed in ``Workload.unknown``, never skipped.
HLO_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                   "ragged-all-to-all", "collective-permute", "collective-broadcast", "send",
                   "recv")


@functools.lru_cache(maxsize=8)
def _pattern(opcodes: tuple[str, ...]) -> re.Pattern[str]:
    """An HLO instruction line running one of *opcodes* (or its async ``-start``)."""
    names = "|".join(re.escape(o) for o in sorted(opcodes, key=len, reverse=True))
    return re.compile(r"%(?P<name>[\w.\-]+)\s*=\s*(?P<shape>\(.*?\)|[a-z0-9]+\[[^\]]*\]\S*)"
                      rf"\s+(?P<op>{names})(?P<start>-start)?\(")


def _opcodes() -> tuple[str, ...]:
    named = [name for row in R.COLLECTIVES.values() for name in row.hlo]
    return tuple(dict.fromkeys([*HLO_COLLECTIVES, *named]))


_ARRAY = re.compile(r"([a-z]+\d*)\[([\d,]*)\]")
_EXPLICIT = re.compile(r"replica_groups=\{\{([\d,]*)\}")
_IOTA = re.compile(r"replica_groups=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")


def _width(hlo_type: str, default: float | None = 4) -> float | None:
    """Bytes per element of an HLO element type (``f32``, ``bf16``, ``s8``, ``pred``), from
    the one rule of widths (``dtypes.element_bytes``); *default* for a type it does not know."""
    try:
        return dtypes.element_bytes(hlo_type)
    except (LookupError, ValueError):
        return default


def _bytes_of(hlo_type: str) -> float:
    """:func:`_width`, 4 bytes for a type it does not know."""
    return _width(hlo_type) or 4


def sharded_mesh(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """The mesh of the first argument sharded over more than one device, or None."""
    import jax

    for leaf in jax.tree_util.tree_leaves((args, dict(kwargs))):
        sharding = getattr(leaf, "sharding", None)
        if isinstance(sharding, jax.sharding.NamedSharding) and sharding.mesh.size > 1:
            return sharding.mesh
    return None


def _arrays(shape: str) -> list[tuple[str, int]]:
    """(HLO element type, elements) of each array of a (tuple) shape."""
    return [(kind, math.prod(int(d) for d in dims.split(",") if d))
            for kind, dims in _ARRAY.findall(shape)]


def _group(line: str) -> tuple[int, tuple[int, ...]]:
    """(group size, the first group's device ids) of a collective's replica groups."""
    found = _EXPLICIT.search(line)
    if found:
        ids = tuple(int(i) for i in found.group(1).split(",") if i)
        return len(ids), ids
    iota = _IOTA.search(line)
    if iota:
        import numpy as np

        shape = [int(d) for d in iota.group(1).split(",")]
        dims = [int(d) for d in iota.group(2).split(",")]
        order = np.arange(math.prod(dims)).reshape(dims)
        if iota.group(3):
            order = order.transpose([int(p) for p in iota.group(3).split(",")])
        first = order.reshape(shape[0], -1)[0]
        return len(first), tuple(int(i) for i in first)
    return 0, ()


def _axes_of(ids: tuple[int, ...], mesh: Any) -> tuple[str, ...]:
    """The mesh axes whose devices form the group *ids* (device positions in the mesh)."""
    import numpy as np

    names = tuple(mesh.axis_names)
    positions = np.arange(mesh.size).reshape(mesh.devices.shape)
    wanted = sorted(ids)
    for size in range(1, len(names) + 1):
        for axes in itertools.combinations(range(len(names)), size):
            rest = [i for i in range(len(names)) if i not in axes]
            groups = positions.transpose(rest + list(axes)).reshape(
                -1, math.prod(positions.shape[i] for i in axes))
            if sorted(int(i) for i in groups[0]) == wanted:
                return tuple(names[i] for i in axes)
    return ()


_PAIRS = re.compile(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}")


def _permute_axes(line: str, mesh: Any) -> tuple[str, ...]:
    """The mesh axes a collective-permute's (source, target) pairs move along: those in
    which a pair's two devices sit at different positions."""
    import numpy as np

    found = _PAIRS.search(line)
    if not found:
        return ()
    shape = mesh.devices.shape
    moved: set[int] = set()
    for pair in re.findall(r"\{(\d+),(\d+)\}", found.group(1)):
        source, target = (np.unravel_index(int(i), shape) for i in pair)
        moved.update(axis for axis, (a, b) in enumerate(zip(source, target, strict=True))
                     if a != b)
    names = tuple(mesh.axis_names)
    return tuple(names[axis] for axis in sorted(moved))


def collectives(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any],
                mesh: Any, links: Mapping[str, _mesh.AxisLink],
                ) -> tuple[list[Kernel], dict[str, int]]:
    """The per-chip collective kernels of the partitioned program (module docstring), and
    the collectives the table does not name (their bytes are kept, their link bytes
    unknown)."""
    import jax

    text = jax.jit(fn).lower(*args, **kwargs).compile().as_text()
    widest = max((getattr(getattr(leaf, "dtype", None), "itemsize", 0)
                  for leaf in jax.tree_util.tree_leaves((args, dict(kwargs)))), default=0)
    pattern = _pattern(_opcodes())
    kernels: list[Kernel] = []
    unknown: dict[str, int] = {}
    for line in text.splitlines():
        found = pattern.search(line)
        if not found:
            continue
        opcode, name = found.group("op"), f"spmd.{found.group('name')}"
        arrays = _arrays(found.group("shape"))
        row = R.collective_named("hlo", opcode)
        if row is None:  # a collective no row prices: its bytes, named as unknown
            unknown[opcode] = unknown.get(opcode, 0) + 1
            held = sum(n * _bytes_of(a) for a, n in arrays)
            kernels.append(K.vector(name, flops=0.0, nbytes=float(held), dtype=None))
            continue
        if found.group("start") and len(arrays) > 1 and (row.parts_in(2) > 1
                                                          or row.parts_out(2) == 0):
            # the async start of a collective whose result is not its operand's size (a
            # gather, a permute) holds (operands, results)
            arrays = arrays[len(arrays) // 2:]
        if not arrays:
            continue
        size, ids = _group(line)
        axes = _axes_of(ids, mesh) if ids else (
            _permute_axes(line, mesh) if row.parts_out(2) == 0 else ())
        # no replica group: a permute runs over the axes its pairs move along (at least 2)
        devices = size or (max(math.prod(mesh.shape[a] for a in axes), 2)
                           if row.parts_out(2) == 0 else mesh.size)
        hlo_type = max((a for a, _ in arrays), key=_bytes_of)
        width = _bytes_of(hlo_type)
        if widest and widest < width:
            width = widest
        nbytes = sum(n * _bytes_of(a) for a, n in arrays) * width / _bytes_of(hlo_type)
        # the result is the whole (D) split in parts_out shares; a point-to-point result is
        # the peer's, of the same size
        nbytes *= row.parts_out(devices) or 1
        floating = hlo_type.startswith(("f", "bf"))
        dtype = K.by_width(width, floating=floating)
        if _width(hlo_type, None) == width:
            dtype = K.precision(hlo_type) or dtype
        kernels.append(_mesh.collective(row.kind, name=name, elements=nbytes / width,
                                        dtype=dtype, devices=devices, axes=axes, links=links))
    return kernels, unknown


def footprint(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> float:
    """Bytes of the arguments one chip holds: each array's shard (whole when replicated)."""
    import jax

    total = 0.0
    for leaf in jax.tree_util.tree_leaves((args, dict(kwargs))):
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            continue
        sharding = getattr(leaf, "sharding", None)
        local = sharding.shard_shape(tuple(shape)) if sharding is not None else shape
        total += math.prod(local) * dtype.itemsize
    return float(total)

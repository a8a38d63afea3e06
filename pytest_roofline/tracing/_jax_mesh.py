"""JAX collectives inside ``shard_map``: per-chip kernels with link bytes (see ``_mesh``).

Inside a ``shard_map`` body every value is the shard one chip holds, so the body's kernels
are per chip; the collectives name the mesh axes they run over, whose sizes the enclosing
``shard_map`` states (``params["mesh"].shape``). Which primitive is which collective is the
table of collectives' (``ops._family.COLLECTIVES``: psum and its kin all-reduce, all_gather,
reduce_scatter (``psum_scatter``), all_to_all, ppermute a point-to-point send); a primitive's
operands are what one chip holds, a 1/``parts_in`` share of the collective's size (an
all-gather's operand times the axis's chips: the gathered size).

``pvary``, ``pbroadcast`` and ``axis_index`` move no data (type-system and index ops). With
``axis_index_groups`` a collective runs over one group's chips, not the whole axis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..engine.workload import Kernel
from ..ops import _family as R
from . import _kernels as K
from . import _mesh

#: Primitives of a sharded program that move no data.
FREE = frozenset({"pvary", "pbroadcast", "axis_index"})


def mesh_axes(params: Mapping[str, Any]) -> dict[str, int]:
    """{axis name: size} of a ``shard_map`` equation's mesh (a Mesh or an AbstractMesh)."""
    mesh = params.get("mesh")
    shape = getattr(mesh, "shape", None)
    if not isinstance(shape, Mapping):
        return {}
    return {str(axis): int(size) for axis, size in shape.items()}


def _axes(params: Mapping[str, Any]) -> tuple[str, ...]:
    raw = params.get("axes", params.get("axis_name", ()))
    if not isinstance(raw, (tuple, list)):
        raw = (raw,)
    return tuple(str(a) for a in raw)


def _elements(var: Any) -> float:
    return float(math.prod(var.aval.shape))


def kernel(label: str, prim: str, params: Mapping[str, Any], invars: list[Any],
           outvars: list[Any], sizes: Mapping[str, int], links: Mapping[str, _mesh.AxisLink],
           count: float) -> Kernel:
    """The kernel of one collective equation. A psum of several operands is one collective
    of all their bytes, in the widest operand's precision."""
    row = R.collective_named("jax", prim)
    assert row is not None, prim  # the walker hands only collectives here
    axes = _axes(params)
    missing = [a for a in axes if a not in sizes]
    if missing:
        raise _mesh.MeshError(f"{label}: runs over axis {missing[0]!r}, which no enclosing "
                              f"shard_map names (its mesh axes: "
                              f"{', '.join(sizes) or 'none'}); trace the shard_map program")
    groups = params.get("axis_index_groups")
    devices = len(groups[0]) if groups else math.prod(sizes[a] for a in axes)
    sources = [v for v in invars if hasattr(v, "aval")]  # a 1/parts_in share of the whole
    widest = max(sources, key=lambda v: v.aval.dtype.itemsize).aval.dtype
    total = sum(_elements(v) * v.aval.dtype.itemsize for v in sources)
    return _mesh.collective(row.kind, name=label,
                            elements=total / widest.itemsize * row.parts_in(devices),
                            dtype=K.storage(widest.name, widest.itemsize),
                            devices=devices, axes=axes, links=links, count=count)


def is_collective(prim: str) -> bool:
    """True for a primitive the table of collectives names (``ops._family``)."""
    return R.collective_named("jax", prim) is not None

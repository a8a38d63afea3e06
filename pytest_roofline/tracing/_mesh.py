"""Collectives a traced program runs: per-chip kernels with link bytes, on a mesh axis.

Both tracers hand each collective they meet here, with its per-chip operand (the shard a chip
holds inside ``shard_map``, or the tensor a torch rank passes), the number of chips of the
axis or group it runs over, and that axis's name. The kernel is the one
:func:`pytest_roofline.ops.collectives.collective_kernel` builds for the same collective, so
a traced all-reduce of V bytes over N chips sends 2·V·(N-1)/N bytes per chip, an all-gather
(V the gathered size) and a reduce-scatter (V the unreduced size) V·(N-1)/N, an all-to-all
V·(N-1)/N, a point-to-point send V (the module table of ``ops.collectives``).

Which link carries an axis: ``Tracer(links={"x": "ici", "data": ("nvlink", 18)})`` maps a
mesh axis (JAX) or a process group's name (torch; ``"world"`` for the default group) to a
link of the chip's spec, with an optional link count; axes not named use the chip's default
link with all its links, unless the chip's spec maps the axis (``mesh_axes: {tp: nvlink,
dp: ib}``): such a kernel's link is ``"axis:<name>"``, resolved by the chip it is analyzed
on. A collective over several axes mapped to different links is a TraceError: give it one
link, or write it as one collective per axis.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import dtypes
from ..engine.workload import Kernel
from ..ops._family import COLLECTIVES
from ..ops.collectives import collective_kernel
from . import _kernels as K

#: One axis's link: (link name or None for the chip's default, link count or None for all).
AxisLink = tuple[str | None, int | None]


class MeshError(ValueError):
    """A mesh option or a collective that cannot be priced (the tracer reraises it)."""


def links_option(value: object) -> dict[str, AxisLink]:
    """Validate ``Tracer(links=...)``: {axis: link name, or (link name, link count)}."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MeshError(f"links={value!r:.80} must map a mesh axis or group name to a link "
                        f"name such as 'nvlink' or 'ici', or to (link name, link count)")
    out: dict[str, AxisLink] = {}
    for axis, spec in value.items():
        if not isinstance(axis, str):
            raise MeshError(f"links: axis {axis!r:.40} must be an axis or group name (a str)")
        if isinstance(spec, str):
            out[axis] = (spec.lower(), None)
            continue
        if (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str)
                and isinstance(spec[1], int) and not isinstance(spec[1], bool)
                and spec[1] >= 1):
            out[axis] = (spec[0].lower(), spec[1])
            continue
        raise MeshError(f"links[{axis!r}]={spec!r:.60} must be a link name such as 'nvlink', "
                        f"or (link name, link count >= 1)")
    return out


def axis_link(axes: tuple[str, ...], links: Mapping[str, AxisLink]) -> AxisLink:
    """The link a collective over *axes* runs on (see the module docstring)."""
    chosen = {links.get(axis, (None, None)) for axis in axes}
    if len(chosen) > 1:
        named = ", ".join(f"{a}: {links.get(a, (None, None))[0] or 'default link'}"
                          for a in axes)
        raise MeshError(f"a collective over axes {axes} whose links differ ({named}): map "
                        f"them to one link in Tracer(links=...), or run one collective per "
                        f"axis")
    link = chosen.pop() if chosen else (None, None)
    if link == (None, None) and axes:  # the chip's spec may map the axis (mesh_axes)
        return f"axis:{'+'.join(axes)}", None
    return link


def collective(kind: str, *, name: str, elements: float, dtype: str, devices: int,
               axes: tuple[str, ...], links: Mapping[str, AxisLink],
               count: float = 1.0) -> Kernel:
    """The per-chip kernel of a traced collective of *elements* (``ops.collectives``' size
    convention: the gathered size for an all-gather, the unreduced one for a
    reduce-scatter) over *devices* chips of *axes*."""
    if kind not in COLLECTIVES:
        raise MeshError(f"collective kind {kind!r} is not one of {', '.join(COLLECTIVES)}")
    link, link_count = axis_link(axes, links)
    where = "/".join(axes)
    label = f"{name}[{where} x{devices}]" if where else name
    compute = K.vector_dtype(dtype if dtype in dtypes.ITEMSIZE else None)
    kernel = collective_kernel(kind, label, float(elements), max(int(devices), 1), dtype,
                               link, link_count, compute=compute)
    return kernel.scaled(count) if count != 1.0 else kernel

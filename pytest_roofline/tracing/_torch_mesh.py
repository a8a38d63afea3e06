"""torch collectives: per-chip kernels with link bytes (see ``_mesh``).

Functional collectives (``torch.distributed._functional_collectives``, what DTensor and
``torch.compile`` emit) reach the dispatch mode as ``_c10d_functional`` ops on the rank's own
tensor: the figures are one rank's.

Which op is which collective is the table of collectives' (``ops._family.COLLECTIVES``:
all_reduce(_) and its coalesced forms all-reduce, all_gather_into_tensor(_out) all-gather,
reduce_scatter_tensor reduce-scatter, all_to_all_single all-to-all, broadcast(_) an all-gather:
a ring broadcast sends each chip's share once, as a gather would). The tensor a rank passes is
a 1/``parts_in`` share of the collective's size (an all-gather's input, or a broadcast's,
times the group's ranks).

``wait_tensor`` and ``_wrap_tensor_autograd`` move nothing. Of the in-place ``c10d`` ops
(``torch.distributed.all_gather_into_tensor`` and co.), those whose group size the shapes
give are priced the same way (``_allgather_base_``: output / input; ``_reduce_scatter_base_``:
input / output); any other ``c10d`` collective is a TraceError naming it (unknown is never
zero): write it with functional collectives.

The group size of an ``all_reduce`` and of an ``all_to_all_single`` without split sizes comes
from the process group its name resolves to (a torch-private function, in ``_torch_compat``).

**DTensor.** An op on DTensors is handed back to DTensor (the dispatch mode declines it), whose
dispatcher runs the op on each rank's local shard and the collectives a redistribution needs:
those are recorded, per chip, as for plain tensors. DTensor's own bookkeeping on the host is
not: its sharding propagation runs the op on fake tensors of the global shapes
(:func:`is_bookkeeping`, using ``_torch_compat.is_fake``), and its device-mesh arithmetic runs
on the mesh's integer tensor and what is derived from it (:class:`DTensors` tracks them).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import torch

from ..engine.workload import Kernel
from ..ops import _family as R
from . import _kernels as K
from . import _mesh
from . import _torch_args as T
from . import _torch_compat as C

NAMESPACES = frozenset({"_c10d_functional", "c10d"})
#: Ops of those namespaces that move no data.
FREE = frozenset({"wait_tensor", "_wrap_tensor_autograd", "barrier", "monitored_barrier"})
#: In-place ``c10d`` ops whose group size their shapes give (output / input, or the inverse).
_SIZED_BY_SHAPES = frozenset({"_allgather_base_", "_reduce_scatter_base_"})


def _group_keys(group: Any) -> list[str]:
    import torch.distributed as dist

    desc = str(getattr(group, "group_desc", "") or "")
    keys = [desc, desc.removeprefix("mesh_"), str(getattr(group, "group_name", ""))]
    if group is dist.group.WORLD:
        keys.insert(0, "world")
    return [k for k in keys if k]


def _elements(value: object) -> tuple[float, str]:
    """Elements of the tensors of *value* in the widest one's precision, and that
    precision."""
    tensors = list(T.tensors(value))
    widest = max(tensors, key=lambda t: t.dtype.itemsize)
    total = sum(t.numel() * t.dtype.itemsize for t in tensors)
    return total / widest.dtype.itemsize, K.storage(str(widest.dtype), widest.dtype.itemsize)


def kernel(name: str, op: str, namespace: str, args: tuple[Any, ...], out: object,
           links: Mapping[str, _mesh.AxisLink]) -> Kernel | None:
    """The kernel of one collective op, None for a free one (wait_tensor)."""
    if op in FREE:
        return None
    if namespace == "c10d":
        return _inplace(name, op, args, links)
    row = R.collective_named("torch", op)
    if row is None:
        raise _mesh.MeshError(f"{name}: the collective _c10d_functional.{op} has no formula; "
                              f"its link bytes are unknown")
    group_name = str(args[-1])
    group = None
    if op.startswith(("all_gather", "reduce_scatter")):
        devices = int(args[-2])
    elif op == "all_to_all_single" and isinstance(args[1], (list, tuple)) and args[1]:
        devices = len(args[1])
    else:
        group = C.process_group(group_name)
        devices = int(group.size())
    if group is None:
        try:
            group = C.process_group(group_name)
        except (RuntimeError, ValueError, LookupError):
            group = None
    keys = _group_keys(group) if group is not None else [group_name]
    axis = next((k for k in keys if k in links), keys[0] if keys else group_name)
    elements, dtype = _elements(args[0])  # what this rank passes: 1/parts_in of the whole
    return _mesh.collective(row.kind, name=name, elements=elements * row.parts_in(devices),
                            dtype=dtype, devices=devices, axes=(axis,), links=links)


def _inplace(name: str, op: str, args: tuple[Any, ...],
             links: Mapping[str, _mesh.AxisLink]) -> Kernel:
    """The in-place ``c10d`` ops whose group size their shapes give (module docstring)."""
    row = R.collective_named("torch", op)
    if op in _SIZED_BY_SHAPES and row is not None:
        output, source = args[0], args[1]
        sizes = sorted((output.numel(), source.numel()))
        devices = max(sizes[1] // max(sizes[0], 1), 1)
        elements, dtype = _elements(source)
        return _mesh.collective(row.kind, name=name, elements=elements * row.parts_in(devices),
                                dtype=dtype, devices=devices,
                                axes=("world",) if "world" in links else (), links=links)
    raise _mesh.MeshError(f"{name}: c10d.{op} (an in-place torch.distributed collective) "
                          f"does not say how many ranks it runs over; its link bytes would be "
                          f"unknown. Write it with torch.distributed._functional_collectives "
                          f"(all_reduce, all_gather_tensor, reduce_scatter_tensor, "
                          f"all_to_all_single), which the trace prices")


def dtensor_type() -> Any:
    """DTensor's class when ``torch.distributed.tensor`` is loaded (else None: no import)."""
    module = sys.modules.get("torch.distributed.tensor")
    return getattr(module, "DTensor", None)


class DTensors:
    """What a recording of a DTensor program must leave out (see the module docstring)."""

    __slots__ = ("derived", "host", "kept", "seen")

    def __init__(self) -> None:
        self.seen = False
        self.host: set[int] = set()  # storages of the device meshes' integer tensors
        self.derived: set[int] = set()  # ids of tensors computed from them
        self.kept: list[torch.Tensor] = []  # ... held, so that no id is reused

    def declines(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
        """True when an op has DTensor operands: DTensor dispatches it (its local ops and
        collectives come back to the mode)."""
        kind = dtensor_type()
        if kind is None:
            return False
        found = False
        for value in (*args, *kwargs.values()):
            items = value if isinstance(value, (list, tuple)) else (value,)
            for item in items:
                if isinstance(item, kind):
                    found = True
                    self.host.add(item.device_mesh.mesh.untyped_storage().data_ptr())
        self.seen = self.seen or found
        return found

    def is_bookkeeping(self, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> bool:
        """True for DTensor's host-side work: fake-tensor propagation, mesh arithmetic."""
        if not self.seen:
            return False
        tensors = inputs + outputs
        if any(C.is_fake(t) for t in tensors) or (not inputs and not outputs):
            return True
        if any(id(t) in self.derived or (t.device.type == "cpu" and
                                         t.untyped_storage().data_ptr() in self.host)
               for t in inputs):
            self.derived.update(id(t) for t in outputs)
            self.kept.extend(outputs)
            return True
        return False

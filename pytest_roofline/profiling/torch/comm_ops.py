"""What a PyTorch trace records around a collective, read as the sizes the table needs.

torch 2.2 on records a collective's sizes on its ``record_param_comms`` op (``Collective
name``, ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``). Older traces
(PARAM's DLRM ranks, HolisticTraceAnalysis's A100 and V100 ranks) record none of them there,
but the ops around it say as much:

* the ``nccl:<name>`` range the process group opens around the launch (a
  ``user_annotation``: ``nccl:all_reduce``, ``nccl:all_to_all``, ``nccl:_all_gather_base``,
  ``nccl:_reduce_scatter_base``) names the collective and records the tensor it was called
  on: its ``Input Dims`` and ``Input type`` (the input: the all-reduce's buffer, the
  all-gather's shard, the reduce-scatter's unreduced tensor, the all-to-all's input);
* the ``c10d::<name>_`` op above it (``c10d::alltoall_base_(output, input, ...)``,
  ``c10d::_allgather_base_(output, input)``, ``c10d::_reduce_scatter_base_(output,
  input)``) records its output tensor too, so the output's size;
* the NCCL/RCCL kernel's name says the kind where no op does (``ncclKernel_AllReduce_...``;
  not ``SendRecv``, which all-to-all, send and receive all launch);
* the trace's ``distributedInfo`` holds the job's process groups (``pg_config``) or its
  ``world_size``: the group size where the op's own is neither recorded nor told by its
  message sizes (an all-gather's output over its input), and the row says so.

:func:`collective_args` returns the recorded arguments where the trace has them, else these
read into the same keys, for :func:`..collectives.price`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .. import collectives
from .trace_file import Op

#: A collective kernel's kind in its name (NCCL's and RCCL's).
_KIND = re.compile(r"(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)


def kind_of_kernel(name: str) -> str:
    """``AllReduce`` of ``ncclKernel_AllReduce_RING_LL_Sum_float(...)``; ``collective``
    where the name does not say (``ncclDevKernel_Generic``)."""
    found = _KIND.search(name)
    kind = found.group(1) if found else ""
    return kind if kind and kind.lower() != "generic" else "collective"

__all__ = ["NCCL_RANGE", "chain_of", "collective_args", "is_comm_op"]

#: The range the process group opens around a collective's launch.
NCCL_RANGE = "nccl:"
_C10D = "c10d::"
#: c10d ops whose first input is the output tensor, the second the input.
_OUTPUT_FIRST = ("alltoall_base", "_allgather_base", "_reduce_scatter_base",
                 "allgather_into_tensor_coalesced", "reduce_scatter_tensor_coalesced")
#: A kernel's kind (``AllReduce`` of ``ncclKernel_AllReduce_...``) -> the collective it is.
_KERNEL_KINDS = {"allreduce": "allreduce", "allgather": "allgather",
                 "reducescatter": "reduce_scatter"}


def is_comm_op(name: str) -> bool:
    """An op of a collective: ``record_param_comms``, an ``nccl:`` range, a ``c10d::`` op."""
    return name == collectives.COLLECTIVE_OP or name.startswith((NCCL_RANGE, _C10D))


def chain_of(op: Op, ancestors: Sequence[Op]) -> list[Op]:
    """The collective ops around *op*: its nearest ancestors that are ones, *op*, and its
    descendants that are ones (outermost first)."""
    above: list[Op] = []
    for ancestor in reversed(ancestors):
        if not is_comm_op(ancestor.name):
            break
        above.append(ancestor)
    out = [*reversed(above), op]
    stack = [c for c in reversed(op.children) if is_comm_op(c.name)]
    while stack:
        child = stack.pop()
        out.append(child)
        stack.extend(c for c in reversed(child.children) if is_comm_op(c.name))
    return out


def _elements(dims: Any) -> int | None:
    """The elements of a recorded shape (``[2, 1024, 34820]``), None where it is not one."""
    if not isinstance(dims, list) or not dims or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        return None
    count = math.prod(dims)
    return count if count < 2**53 else None


def _tensor(op: Op, index: int) -> tuple[int | None, str]:
    """(elements, type) of input *index* of *op*: a tensor, or a list of one tensor."""
    dims = op.dims or []
    types = op.types or ()
    if index >= len(dims):
        return None, ""
    shape = dims[index]
    if isinstance(shape, list) and len(shape) == 1 and isinstance(shape[0], list):
        shape = shape[0]  # a TensorList of one tensor (newer traces record its shape)
    kind = types[index] if index < len(types) else ""
    return _elements(shape), "" if kind in ("TensorList", "Scalar") else kind


def _name_of(op: Op) -> str:
    if op.name.startswith(NCCL_RANGE):
        return op.name[len(NCCL_RANGE):]
    if op.name.startswith(_C10D):
        return op.name[len(_C10D):].rstrip("_")
    return ""


def _group_from(info: Mapping[str, Any] | None, process_group: str) -> tuple[int | None, str]:
    """The size of a collective's group from the trace's ``distributedInfo``: its
    ``pg_config`` entry (the op's ``Process Group Name``, or the one group there is), else
    its ``world_size``."""
    if not info:
        return None, ""
    groups = [g for g in info.get("pg_config") or [] if isinstance(g, dict)]
    named = [g for g in groups if process_group and str(g.get("pg_name")) == process_group]
    pick = named or (groups if len(groups) == 1 else [])
    if pick:
        size = pick[0].get("pg_size")
        if isinstance(size, int) and not isinstance(size, bool) and 1 <= size < 2**31:
            return size, f"{collectives.FROM_TRACE} process group (pg_config)"
    world = info.get("world_size")
    if isinstance(world, int) and not isinstance(world, bool) and 1 <= world < 2**31:
        return world, f"{collectives.FROM_TRACE} world size (distributedInfo)"
    return None, ""


def collective_args(chain: Sequence[Op], kernel: str,
                    info: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments :func:`..collectives.price` reads of the collective *chain* (its
    ops, outermost first) whose kernel is *kernel*, in a trace whose ``distributedInfo``
    is *info*: the recorded ones where a ``record_param_comms`` op carries its
    ``Collective name``, else what the ops around it record (see the module docstring);
    ``{}`` where nothing names the collective."""
    for op in chain:
        if op.name == collectives.COLLECTIVE_OP and op.args.get("Collective name"):
            recorded = dict(op.args)
            group, _ = collectives.group_of(recorded)
            if group is None:  # not recorded: the trace's process groups may tell it
                size, source = _group_from(info, str(recorded.get("Process Group Name")
                                                     or ""))
                if size is not None:
                    recorded[collectives.TRACE_GROUP] = (size, source)
            return recorded
    ranges = [op for op in chain if op.name.startswith(NCCL_RANGE)]
    c10d = [op for op in chain if op.name.startswith(_C10D)]
    params = [op for op in chain if op.name == collectives.COLLECTIVE_OP]
    name = next((_name_of(op) for op in (*ranges, *c10d) if _name_of(op)), "")
    if not name:
        name = _KERNEL_KINDS.get(kind_of_kernel(kernel).lower(), "")
    if not name:
        return {}
    args: dict[str, Any] = {"Collective name": name}
    elements, dtype = None, ""
    for op in (*ranges, *params):  # the tensor the collective was called on
        elements, dtype = _tensor(op, 0)
        if elements is not None and dtype:
            break
    outer = c10d[0] if c10d else None
    if outer is not None and _name_of(outer) in _OUTPUT_FIRST:
        out, _ = _tensor(outer, 0)
        into, in_type = _tensor(outer, 1)
        if elements is None or not dtype:
            elements, dtype = into, in_type
        if out is not None:
            args["Out msg nelems"] = out
    elif outer is not None and (elements is None or not dtype):
        elements, dtype = _tensor(outer, 0)
    if elements is not None:
        args["In msg nelems"] = elements
        if collectives.same_size(name):
            args.setdefault("Out msg nelems", elements)
    if dtype:
        args["dtype"] = dtype
    group, _ = collectives.group_of(args)
    if group is None:
        size, source = _group_from(info, "")
        if size is not None:
            args[collectives.TRACE_GROUP] = (size, source)
    return args

"""A collective recorded in a PyTorch trace, priced on the network roof.

PyTorch's distributed layer records each collective as a ``record_param_comms`` op whose
arguments say what it moved: ``Collective name`` (``allreduce``, ``allgather``,
``reduce_scatter``, ``all_to_all`` ...), ``In msg nelems`` and ``Out msg nelems`` (elements
in and out), ``dtype`` and ``Group size`` (the ranks of its own process group, not the
world's). With them the collective is priced by the one collectives table
(:mod:`pytest_roofline.ops.collectives`: a ring all-reduce sends 2(n-1)/n of its data, an
all-gather and a reduce-scatter (n-1)/n of the gathered or unreduced size, an all-to-all
(n-1)/n of what each rank holds) on the chip's default link, regime ``network``: the
NCCL/RCCL kernels it launched are its measured time. A trace that leaves out the group
size or the sizes (older torch) keeps the op unpriced, with that reason; a collective with
no row in the table (a broadcast, a barrier, a wait) is named, never priced as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import ops
from ..dtypes import ITEMSIZE
from ..engine.workload import Workload
from ..errors import RooflineError

__all__ = ["COLLECTIVE_OP", "price", "price_hlo"]

#: The op PyTorch records a collective's sizes on.
COLLECTIVE_OP = "record_param_comms"

#: ``Collective name`` -> (the table's formula, whether its size is the output's).
_KINDS: dict[str, tuple[Any, bool]] = {
    **dict.fromkeys(("allreduce", "all_reduce", "allreduce_coalesced"), (ops.all_reduce, False)),
    **dict.fromkeys(("allgather", "_allgather_base", "all_gather", "all_gather_into_tensor",
                     "allgather_into_tensor_coalesced"), (ops.all_gather, True)),
    **dict.fromkeys(("reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor",
                     "reduce_scatter_tensor_coalesced"), (ops.reduce_scatter, False)),
    **dict.fromkeys(("all_to_all", "alltoall", "alltoall_base", "all_to_allv"),
                    (ops.all_to_all, False)),
}
#: The profiler's ``dtype`` names -> the package's.
_DTYPES = {"Float": "fp32", "BFloat16": "bf16", "Half": "fp16", "Double": "fp64",
           "Int": "int32", "Long": "int64", "Char": "int8", "Byte": "uint8",
           "Float8_e4m3fn": "fp8", "Float8_e5m2": "fp8", "Bool": "bool", "Short": "int16"}


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        0 <= value < 2**53 else None


def price(args: Mapping[str, Any]) -> tuple[Workload | None, str, str]:
    """(the workload, its label, '') of a ``record_param_comms`` op's *args*, or (None,
    label, why it is not priced)."""
    name = str(args.get("Collective name") or "")
    label = f"{name}" if name else "collective"
    if not name:
        return None, label, "collective sizes not recorded (torch before 2.2)"
    kind = _KINDS.get(name)
    if kind is None:
        return None, label, f"no formula for the collective {name!r}"
    group = _whole(args.get("Group size"))
    size = _whole(args.get("Out msg nelems" if kind[1] else "In msg nelems"))
    dtype = _DTYPES.get(str(args.get("dtype") or ""))
    if group is None or group < 1 or size is None or dtype is None:
        return None, label, (f"collective {name}: its group size, element count or dtype is "
                             f"not recorded as the table needs (Group size "
                             f"{str(args.get('Group size'))[:20]}, dtype "
                             f"{str(args.get('dtype'))[:20]})")
    try:
        workload = kind[0](size, group, dtype=dtype)
    except RooflineError as exc:
        return None, label, f"collective {name}: {str(exc)[:100]}"
    return workload, f"{name} over {group} ranks", ""


#: The package's precision of an HLO array's dtype name (``tables.jax_precision`` names).
_HLO_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64",
               "int32": "int32", "int64": "int64", "int8": "int8", "uint8": "uint8",
               "int16": "int16", "bool": "bool", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"}


def price_hlo(opcode: str, *, result_bytes: float, dtype: str, group: int) -> Workload | str:
    """The workload of a collective of compiled HLO (``all-reduce``, ``all-gather``,
    ``reduce-scatter``, ``all-to-all``, ``collective-permute``) whose result one device
    holds is *result_bytes* of *dtype*, over a replica group of *group* devices; or why it
    is not priced. The collective's size is the table's (``trace()`` of a sharded program
    sizes it the same way): the result times the shares it is split into (a reduce-scatter's
    result times the group: the unreduced size), a permute's result the peer's."""
    from ..tracing.tables import collective_named

    row = collective_named("hlo", opcode)
    if row is None:
        return f"no formula for the collective {opcode}"
    precision = _HLO_DTYPES.get(dtype)
    if precision is None:
        return f"collective {opcode} of {dtype[:20] or 'an unknown type'}: no width for it"
    if row.kind == "point_to_point":
        group = max(group, 2)
    if group < 1:
        return (f"collective {opcode}: its replica groups are not in the program (every "
                f"device?), so its group size is not known")
    nbytes = result_bytes * (row.parts_out(group) or 1)
    elements = nbytes / ITEMSIZE[precision]
    if not elements >= 1:
        return "zero"
    formula = {"all_reduce": ops.all_reduce, "all_gather": ops.all_gather,
               "reduce_scatter": ops.reduce_scatter, "all_to_all": ops.all_to_all}
    try:
        if row.kind == "point_to_point":
            return ops.point_to_point(round(elements), dtype=precision)
        return formula[row.kind](round(elements), group, dtype=precision)
    except (RooflineError, KeyError) as exc:
        return f"collective {opcode}: {str(exc)[:100]}"

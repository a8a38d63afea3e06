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
no row in the table (a barrier, a wait, a gather to one rank) is named, never priced as 0. Older
traces record the same figures on the ops around it (:mod:`.torch.comm_ops` reads them into
these keys): the group size may then come from the trace's ``distributedInfo``
(:data:`TRACE_GROUP`), and the row says so.

The algorithm is the one the collective's NCCL/RCCL kernel names (``..._RING_LL``,
``_TREE_``, ``_NVLS_``, ``_COLLNET_``: :func:`algorithm_of`), priced by that row of the
collectives table; ring where the name says none (``ncclDevKernel_Generic``) or names one the
table has no row for, and the label says which.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import ops
from ..dtypes import ITEMSIZE, itemsize
from ..engine.workload import Workload
from ..errors import RooflineError

__all__ = ["COLLECTIVE_OP", "FROM_TRACE", "INFERRED", "RECORDED", "TRACE_GROUP",
           "algorithm_of", "bus_factor", "data_elements", "element_bytes", "group_of",
           "price", "price_hlo", "same_size"]

#: The op PyTorch records a collective's sizes on.
COLLECTIVE_OP = "record_param_comms"

_BROADCASTS = ("broadcast", "_broadcast_oop")
#: ``Collective name`` -> (the table's formula, whether its size is the output's).
_KINDS: dict[str, tuple[Any, bool]] = {
    **dict.fromkeys(("allreduce", "all_reduce", "allreduce_coalesced"), (ops.all_reduce, False)),
    **dict.fromkeys(("allgather", "_allgather_base", "_all_gather_base", "all_gather",
                     "all_gather_into_tensor", "allgather_into_tensor_coalesced"),
                    (ops.all_gather, True)),
    **dict.fromkeys(("reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor",
                     "reduce_scatter_tensor_coalesced"), (ops.reduce_scatter, False)),
    **dict.fromkeys(("all_to_all", "alltoall", "alltoall_base", "all_to_allv"),
                    (ops.all_to_all, False)),
    # the table's row for a broadcast (ops._family: torch's broadcast is an all-gather's):
    # each rank takes the (n-1)/n of the tensor it lacks, the least any algorithm moves
    **dict.fromkeys(_BROADCASTS, (ops.all_gather, False)),
}
#: The profiler's ``dtype`` names -> the package's.
_DTYPES = {"Float": "fp32", "BFloat16": "bf16", "Half": "fp16", "Double": "fp64",
           "Int": "int32", "Long": "int64", "Char": "int8", "Byte": "uint8",
           "Float8_e4m3fn": "fp8", "Float8_e5m2": "fp8", "Bool": "bool", "Short": "int16",
           # the C++ names an op's ``Input type`` records (older traces: no ``dtype``)
           "float": "fp32", "c10::BFloat16": "bf16", "c10::Half": "fp16", "double": "fp64",
           "int": "int32", "long int": "int64", "long": "int64", "signed char": "int8",
           "unsigned char": "uint8", "bool": "bool", "short int": "int16", "short": "int16",
           "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8"}
#: NCCL/RCCL's algorithm in a kernel's name -> the collectives table's.
_ALGORITHMS = {"RING": "ring", "TREE": "tree", "NVLS": "nvls", "NVLS_TREE": "nvls",
               "COLLNET": "sharp", "COLLNET_DIRECT": "sharp", "COLLNET_CHAIN": "sharp",
               "PAT": ""}
_ALGORITHM = re.compile(r"_(RING|TREE|NVLS_TREE|NVLS|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|PAT)"
                        r"(?=_|\(|$)")


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        0 <= value < 2**53 else None


def _ranks(value: Any) -> int | None:
    """The size of a recorded ``Process Group Ranks`` (``'[0, 1, 2, 3]'`` or a list)."""
    if isinstance(value, list):
        return len(value) or None
    text = str(value or "").strip()
    if not (text.startswith("[") and text.endswith("]")) or not text[1:-1].strip():
        return None
    parts = text[1:-1].split(",")
    return len(parts) if all(p.strip().isdigit() for p in parts) else None


def _splits(value: Any) -> list[int] | None:
    """A recorded split size (``'[3, 5]'``, a list, or ``'[]'``: even): element counts."""
    if isinstance(value, list):
        items: list[Any] = value
    else:
        text = str(value or "").strip()
        if not (text.startswith("[") and text.endswith("]")) or not text[1:-1].strip():
            return None
        try:
            items = [int(part) for part in text[1:-1].split(",")]
        except ValueError:
            return None
    counts = [_whole(item) for item in items]
    return None if not counts or any(c is None for c in counts) else [
        c for c in counts if c is not None]


def group_of(args: Mapping[str, Any]) -> tuple[int | None, str]:
    """(the ranks of a collective's own process group, where that figure came from:
    :data:`RECORDED` or :data:`INFERRED`), or (None, '') where neither tells it.

    Its ``Group size`` (or the length of its ``Process Group Ranks``) where recorded; else,
    for an all-gather (out = n x in) or a reduce-scatter (in = n x out), the ratio of its
    message sizes."""
    group = _whole(args.get("Group size"))
    if group is not None and group >= 1:
        return group, RECORDED
    group = _ranks(args.get("Process Group Ranks"))
    if group is not None:
        return group, RECORDED
    kind = _KINDS.get(str(args.get("Collective name") or ""))
    into = _whole(args.get("In msg nelems"))
    out = _whole(args.get("Out msg nelems"))
    if kind is None or not into or not out:
        return _from_trace(args)
    big, small = (out, into) if kind[0] is ops.all_gather else (into, out) \
        if kind[0] is ops.reduce_scatter else (0, 1)
    if big > small and big % small == 0:
        return big // small, INFERRED
    return _from_trace(args)


def _from_trace(args: Mapping[str, Any]) -> tuple[int | None, str]:
    """The group size read from the trace (:data:`TRACE_GROUP`: (size, where from))."""
    told = args.get(TRACE_GROUP)
    if isinstance(told, tuple) and len(told) == 2:
        size = _whole(told[0])
        if size:
            return size, str(told[1])
    return None, ""


#: Where a collective's group size came from.
RECORDED, INFERRED = "recorded", "inferred from its message sizes"
#: The group size read from the trace's ``distributedInfo`` where the op's own is not
#: recorded: the key (a (size, where from) pair) and the start of where it came from.
TRACE_GROUP, FROM_TRACE = "_group from the trace", "the trace's"


def same_size(name: str) -> bool:
    """A collective whose output is its input's size (an all-reduce)."""
    return _KINDS.get(name, (None, False))[0] is ops.all_reduce


def algorithm_of(name: str, kernel: str) -> tuple[str, str]:
    """(the collectives table's algorithm, what the label says of it) of the collective
    *name* run by *kernel*: the one its name says (``ncclKernel_AllReduce_RING_LL_Sum_float``
    -> ring), ring where it says none or one the table has no row for (tree, NVLS and
    CollNet are all-reduce rows)."""
    found = _ALGORITHM.search(kernel.split("(")[0])
    said = found.group(1) if found else ""
    algorithm = _ALGORITHMS.get(said, "")
    is_reduce = same_size(name)
    if algorithm and (algorithm == "ring" or is_reduce):
        return algorithm, f"{algorithm} (its kernel's name)"
    if said:
        return "ring", f"ring (its kernel's name says {said}: no row of the table)"
    return "ring", "ring (assumed: its kernel's name does not say)"


def price(args: Mapping[str, Any], kernel: str = "") -> tuple[Workload | None, str, str]:
    """(the workload, its label, '') of a ``record_param_comms`` op's *args* run by the
    NCCL/RCCL *kernel* (its algorithm: :func:`algorithm_of`), or (None, label, why it is not
    priced).

    The group is the collective's own (:func:`group_of`); an all-to-all with uneven splits
    (``In split size``, element counts per peer) sends what it does not keep, its own
    split (its position in ``Process Group Ranks``, else the largest kept: the lowest
    bound), as one point-to-point volume. One whose splits are not recorded but whose input
    and output differ in size is uneven too: what it keeps is in both, so it sends or
    receives at least their difference, priced so (the lowest bound); with equal sizes its
    splits are taken as even, and the label says so."""
    name = str(args.get("Collective name") or "")
    label = f"{name}" if name else "collective"
    if not name:
        return None, label, NOT_NAMED
    kind = _KINDS.get(name)
    if kind is None:
        return None, label, f"no formula for the collective {name!r}"
    group, source = group_of(args)
    size = _whole(args.get("Out msg nelems" if kind[1] else "In msg nelems"))
    dtype = _DTYPES.get(str(args.get("dtype") or ""))
    if group is None or group < 1 or size is None or dtype is None:
        return None, label, (f"collective {name}: its group size, element count or dtype is "
                             f"not recorded as the table needs (Group size "
                             f"{str(args.get('Group size'))[:20]}, dtype "
                             f"{str(args.get('dtype'))[:20]})")
    inferred = "" if source == RECORDED else " (group inferred from its message sizes)" \
        if source == INFERRED else f" (group: {source}, its own not recorded)"
    algorithm, said = algorithm_of(name, kernel)
    splits = _splits(args.get("In split size")) if kind[0] is ops.all_to_all else None
    out = _whole(args.get("Out msg nelems"))
    try:
        if splits is not None and len(splits) == group and len(set(splits)) > 1:
            sent = sum(splits) - _kept(args, splits)
            workload = ops.point_to_point(sent, dtype=dtype, algorithm=algorithm)
            return workload, f"{name} over {group} ranks, {said}, uneven splits{inferred}", ""
        if kind[0] is ops.all_to_all and "In split size" not in args and out is not None \
                and out != size:
            workload = ops.point_to_point(abs(out - size), dtype=dtype, algorithm=algorithm)
            return workload, (f"{name} over {group} ranks, {said}, uneven splits not "
                              f"recorded: at least |in - out| sent or received{inferred}"), ""
        workload = kind[0](size, group, dtype=dtype, algorithm=algorithm)
    except RooflineError as exc:
        return None, label, f"collective {name}: {str(exc)[:100]}"
    even = ", splits not recorded: taken as even" if kind[0] is ops.all_to_all and \
        "In split size" not in args else ""
    return workload, f"{name} over {group} ranks, {said}{even}{inferred}", ""


#: Why a collective nothing in its trace names is not priced.
NOT_NAMED = ("collective not named: its record_param_comms op records no sizes (torch "
             "before 2.2) and no op or kernel around it names it")


def _kept(args: Mapping[str, Any], splits: list[int]) -> int:
    """The split a rank keeps: its own, by its position in its group, else the largest."""
    rank = _whole(args.get("Rank"))
    text = str(args.get("Process Group Ranks") or "").strip()
    if rank is not None and text.startswith("[") and text.endswith("]"):
        members = [part.strip() for part in text[1:-1].split(",")]
        if str(rank) in members and len(members) == len(splits):
            return splits[members.index(str(rank))]
    return max(splits)


#: nccl-tests' bus-bandwidth factors (its doc/PERFORMANCE.md): busbw = algbw x factor, an
#: all-reduce 2(n-1)/n, an all-gather, a reduce-scatter and an all-to-all (n-1)/n, a
#: broadcast, a reduce or a send/receive 1.
def bus_factor(name: str, group: int) -> float:
    """nccl-tests' bus-bandwidth factor of the collective *name* over *group* ranks."""
    kind = _KINDS.get(name, (None, False))[0]
    if group < 1 or name in _BROADCASTS:
        return 1.0
    if kind is ops.all_reduce:
        return 2 * (group - 1) / group
    if kind in (ops.all_gather, ops.reduce_scatter, ops.all_to_all):
        return (group - 1) / group
    return 1.0


def data_elements(args: Mapping[str, Any]) -> int | None:
    """The size nccl-tests' algorithm bandwidth divides: an all-reduce's buffer, an
    all-gather's gathered output, a reduce-scatter's unreduced input, an all-to-all's
    input (elements); None where not recorded."""
    kind = _KINDS.get(str(args.get("Collective name") or ""))
    if kind is None:
        return None
    return _whole(args.get("Out msg nelems" if kind[1] else "In msg nelems"))


def element_bytes(args: Mapping[str, Any]) -> int | None:
    """Bytes an element of the recorded ``dtype`` (None: not one the table knows)."""
    dtype = _DTYPES.get(str(args.get("dtype") or ""))
    return None if dtype is None else int(itemsize(dtype))


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

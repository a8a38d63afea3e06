"""An executed HLO op priced by the JAX tracer's own table: one kernel per fusion.

``trace()`` prices a JAX program primitive by primitive (its table: ``tracing.tables``). XLA
runs it as fusions, each an instruction of the compiled program whose called computation
holds the ops it fused. An executed op is priced here as **one kernel**:

* its **FLOPs** are those of the ops inside (a fusion's computation, and the fusions nested
  in it), each HLO opcode read as the primitive it lowers from (``dot`` as ``dot_general``,
  ``multiply`` as ``mul``, ``exponential`` as ``exp``, ``reduce`` as a reduction,
  ``reduce-window`` as a pool, ...) and
  priced by that primitive's formula in the tracer's table, so a fused program and its
  traced primitives count the same FLOPs;
* its **bytes** are those crossing its boundary: its operands read once and its results
  written once (an operand passed twice read once); what stays inside a fusion is never
  charged. An operand that every op inside reads through a slice, a dynamic slice or a
  gather is charged at most what those read (a bound must not charge the whole array for a
  part of it), and so is one that reaches a slice at the fusion's root through elementwise
  ops alone (the slice's share of it). A buffer updated in place (a
  ``dynamic-update-slice`` or ``scatter`` into an operand, as a KV cache or a loop's carry
  is) moves its update only: it is not read, and only the update is written, at most the
  buffer's bytes (a segment sum's updates combine into its rows). The
  workspace a GEMM custom call returns beside its result (a tuple's later elements) is
  scratch: not charged;
* a convolution (XLA's own, or a cuDNN/MIOpen custom call, forward or either gradient)
  is priced by the tracer's convolution formula over every tap (docs/bounds.md); its
  workspace, too, is scratch;
* matrix work (each dot) and vector work run in one kernel and overlap: the kernel's time
  is the larger of its matrix time, vector time and memory time (``epilogue_of``, as the
  fusion model times a fused epilogue);
* a collective (``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
  ``collective-permute`` and their ``-start``) is priced on the chip's link by the
  collectives table, over its replica group (:func:`..collectives.price_hlo`), as
  ``trace()`` prices the same psum; its ``-done`` is the wait, its work the start's.

What cannot be priced comes back as a reason (the caller names the op with its time): an
opcode with no row here (an FFT, a custom call that is not a GEMM or a convolution),
an element type of unknown width, a loop or call whose ops are timed on their own.
"""

from __future__ import annotations

import math
from typing import Any

from ...engine.workload import Kernel, Workload
from ...tracing import tables
from .. import collectives
from .hlo import MAX_DEPTH, Array, Instruction, Module

#: HLO opcodes read as the JAX primitive whose formula prices them.
ARITHMETIC = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "negate": "neg",
    "maximum": "max", "minimum": "min", "exponential": "exp",
    "exponential-minus-one": "expm1", "log": "log", "log-plus-one": "log1p",
    "tanh": "tanh", "logistic": "logistic", "sqrt": "sqrt", "rsqrt": "rsqrt",
    "cbrt": "cbrt", "power": "pow", "abs": "abs", "sign": "sign", "sine": "sin",
    "cosine": "cos", "tan": "tan", "atan2": "atan2", "erf": "erf", "remainder": "rem",
    "floor": "floor", "ceil": "ceil", "round-nearest-afz": "round",
    "round-nearest-even": "round", "compare": "eq", "and": "and", "or": "or", "not": "not",
    "xor": "xor", "shift-left": "shift_left", "shift-right-logical": "shift_right_logical",
    "shift-right-arithmetic": "shift_right_arithmetic", "clamp": "clamp",
    "is-finite": "is_finite", "popcnt": "population_count",
    "count-leading-zeros": "clz", "real": "real", "imag": "imag", "complex": "complex"}
#: Opcodes that move, select or lay out data and compute nothing (bytes at the boundary).
MOVES = frozenset({
    "select", "convert", "copy", "bitcast-convert", "transpose", "slice", "dynamic-slice",
    "dynamic-update-slice", "concatenate", "pad", "gather", "reverse", "iota",
    "reduce-precision", "rng-bit-generator", "rng-get-and-update-state", "broadcast",
    "reshape", "bitcast", "get-tuple-element", "tuple", "parameter", "constant",
    "optimization-barrier", "copy-start", "copy-done", "after-all", "partition-id",
    "replica-id", "dynamic-reshape", "domain", "add-dependency"})
#: Opcodes that, run on their own, move nothing (a view, a tuple's element, a token).
FREE = frozenset({"bitcast", "get-tuple-element", "tuple", "parameter", "constant",
                  "after-all", "add-dependency", "domain", "partition-id", "replica-id"})
#: Opcodes through which an operand is read only in part.
SLICING = frozenset({"slice", "dynamic-slice", "gather"})
#: Opcodes whose own ops run as events of their own (loops, calls): timed, never priced
#: twice.
CONTROL = frozenset({"while", "conditional", "call", "async-start", "async-done",
                     "async-update"})
#: A custom call target that is a GEMM (cuBLAS, cuBLASLt, hipBLASLt, rocBLAS).
GEMM_TARGETS = ("gemm", "matmul", "cublas", "hipblas", "rocblas")
ZERO = "zero"  # the op moves no memory and computes nothing
#: A scatter whose combiner is one of these counts a FLOP per update.
_COMBINE = frozenset({"add", "multiply", "maximum", "minimum"})


#: What a formula raises on operands a corrupt program gives it (an axis out of range).
_MISFIT = (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError, OverflowError)


class _Dtype:
    __slots__ = ("itemsize", "name")

    def __init__(self, name: str, itemsize: float) -> None:
        self.name, self.itemsize = name, itemsize


class _Aval:
    __slots__ = ("dtype", "shape")

    def __init__(self, array: Array) -> None:
        self.shape, self.dtype = array.dims, _Dtype(array.dtype, array.itemsize)


class _Value:
    """An HLO value as the tracer's formulas read a jaxpr variable (``.aval``)."""

    __slots__ = ("aval",)

    def __init__(self, array: Array) -> None:
        self.aval = _Aval(array)


def _values(arrays: tuple[Array, ...] | list[Array]) -> list[Any]:
    return [_Value(a) for a in arrays]


def _first(ins: Instruction | None) -> list[Array]:
    return [ins.arrays[0]] if ins is not None and ins.arrays else []


class _Counter:
    """The FLOPs of the ops in one executed op, matrix (per dot) and vector."""

    def __init__(self, module: Module, label: str) -> None:
        self.module, self.label = module, label
        self.matrix: list[Kernel] = []
        self.vector: dict[str, float] = {}
        self.missing: list[str] = []

    def computation(self, uid: int, seen: frozenset[int] = frozenset()) -> None:
        comp = self.module.computations.get(uid)
        if comp is None or uid in seen:
            self.missing.append(f"called computation {uid} is not in the program")
            return
        if len(seen) >= MAX_DEPTH:
            self.missing.append(f"fusions nested deeper than {MAX_DEPTH} levels (a real "
                                f"program's do not)")
            return
        for ins in comp.instructions:
            self.instruction(ins, seen | {uid})

    def instruction(self, ins: Instruction, seen: frozenset[int] = frozenset()) -> None:
        code = ins.opcode
        if ins.unknown_type:
            self.missing.append(f"{code} has an element type of unknown width")
            return
        if code == "fusion":
            for uid in ins.called:
                self.computation(uid, seen)
            return
        if code in MOVES:
            return
        operands = self.module.operands(ins)
        ins_values = _values([a for o in operands for a in _first(o)])
        outs = _values(_first(ins))
        if code == "dot" or (code == "custom-call" and _is_gemm(ins)):
            numbers = ins.dot if code == "dot" else ins.gemm_dims()
            if numbers is None or len(ins_values) < 2 or not outs:
                where = " in its backend_config" if code == "custom-call" else ""
                self.missing.append(f"{ins.name}: a product without its dimension "
                                    f"numbers{where}")
                return
            params = {"dimension_numbers": ((numbers[0], numbers[1]),
                                            (numbers[2], numbers[3]))}
            prim = self._prim("dot_general", params, ins_values[:2], outs)
            try:
                self.matrix.append(tables.jax_kernel(prim))
            except _MISFIT:
                self.missing.append(f"{ins.name}: a product whose dimensions do not fit")
            return
        if code == "convolution" or (code == "custom-call" and _conv_kind(ins)):
            self._convolution(ins, operands)
            return
        name, params = self._primitive(ins)
        if name is None:
            what = f"custom call {ins.target}" if code == "custom-call" else code
            self.missing.append(f"no formula for {what}")
            return
        formula = tables.VECTOR_FLOPS.get(name)
        if formula is None:
            return  # a primitive that moves data only
        prim = self._prim(name, params, ins_values, outs)
        try:
            flops = float(formula(prim))
        except _MISFIT:
            self.missing.append(f"{ins.name}: {code} of operands that do not fit")
            return
        dtype = tables.vector_dtype(tables.jax_precision(outs[0]) if outs else None)
        self.vector[dtype] = self.vector.get(dtype, 0.0) + flops

    def _prim(self, name: str, params: Any, ins: list[Any], outs: list[Any]) -> Any:
        """The tracer's view of one op for its FLOPs formula. Its bytes are not asked: the
        executed op's are its boundary's (:func:`boundary_bytes`), set on the row."""
        return tables.Prim(name=name, label=self.label, params=params, ins=ins, outs=outs,
                           nbytes=0.0, dtype=None)

    def _convolution(self, ins: Instruction, operands: list[Instruction | None]) -> None:
        """A convolution by the tracer's formula (every tap, padding included). A
        backward custom call keeps its forward convolution's window and dimension
        numbers: its data gradient is the forward input, its filter gradient the kernel."""
        arrays = [o.arrays[0] if o is not None and o.arrays else None for o in operands]
        result = ins.arrays[0] if ins.arrays else None
        kind = _conv_kind(ins) or "forward"
        first, second = [*arrays, None, None][:2]
        lhs, rhs, out = {"input": (result, second, first),
                         "filter": (first, result, second)}.get(kind, (first, second, result))
        if ins.conv is None or lhs is None or rhs is None or out is None:
            self.missing.append(f"{ins.name}: a convolution without its window or operands")
            return
        prim = self._prim("conv_general_dilated", ins.conv, _values([lhs, rhs]),
                          _values([out]))
        try:
            kernel = tables.jax_kernel(prim)
        except _MISFIT:
            self.missing.append(f"{ins.name}: a convolution whose dimensions do not fit")
            return
        if kernel.unit == "matrix":
            self.matrix.append(kernel)
        else:  # depthwise: the vector units
            dtype = str(kernel.dtype)
            self.vector[dtype] = self.vector.get(dtype, 0.0) + float(kernel.flops)

    def _primitive(self, ins: Instruction) -> tuple[str | None, dict[str, Any]]:
        code = ins.opcode
        if code in ARITHMETIC:
            return ARITHMETIC[code], {}
        if code == "reduce":
            return "reduce_sum", {}
        if code in ("reduce-window", "select-and-scatter") and ins.window:
            name = "reduce_window" if code == "reduce-window" else "select_and_scatter_add"
            return name, {"window_dimensions": ins.window}
        if code == "sort":
            return "sort", {"dimension": ins.dimensions[0] if ins.dimensions else -1}
        if code == "scatter":
            root = self._root(ins)
            return ("scatter-add" if root in _COMBINE else "scatter"), {}
        return None, {}

    def _root(self, ins: Instruction) -> str:
        for uid in ins.called:
            comp = self.module.computations.get(uid)
            if comp is not None and comp.instructions:
                return comp.instructions[-1].opcode
        return ""


#: Convolution custom calls (cuDNN, MIOpen through XLA's cuDNN names) -> which gradient.
CONV_TARGETS = {"convforward": "forward", "convbiasactivationforward": "forward",
                "convbackwardinput": "input", "convbackwardfilter": "filter"}


def _conv_kind(ins: Instruction) -> str | None:
    target = ins.target.lower().rsplit("$", 1)[-1]
    return CONV_TARGETS.get(target) if ins.conv is not None else None


def _is_gemm(ins: Instruction) -> bool:
    target = ins.target.lower()
    return any(word in target for word in GEMM_TARGETS)


def boundary_bytes(module: Module, ins: Instruction) -> float:
    """Bytes crossing the boundary of *ins* (see the module docstring)."""
    fused = ins.opcode == "fusion"
    partial = _partial_reads(module, ins) if fused else {}
    in_place = _in_place(module, ins)
    reads: dict[int, float] = {}  # operand id -> bytes read of it (an operand read once)
    for index, (uid, operand) in enumerate(zip(ins.operands, module.operands(ins),
                                               strict=True)):
        if operand is None:
            continue
        whole = sum(a.nbytes for a in operand.arrays)
        part = 0.0 if index in in_place else min(whole, partial.get(index, whole))
        reads[uid] = min(whole, reads.get(uid, 0.0) + part)
    read = sum(reads.values())
    scratch = ins.opcode == "custom-call" and (_is_gemm(ins) or _conv_kind(ins) is not None)
    written = list(ins.arrays[:1] if (scratch and ins.tuple_shape) else ins.arrays)
    if ins.opcode in SLICING and ins.arrays:
        read = min(read, sum(a.nbytes for a in ins.arrays) + sum(
            a.nbytes for o in module.operands(ins)[1:] if o is not None for a in o.arrays))
    return read + sum(in_place.get(-1 - i, a.nbytes) for i, a in enumerate(written))


#: Ops that update their first operand in place (XLA reuses its buffer): only the update
#: moves.
IN_PLACE = {"dynamic-update-slice": 1, "scatter": 2}  # opcode -> the update's operand


def _in_place(module: Module, ins: Instruction) -> dict[int, float]:
    """What an in-place update moves: operand index -> 0 for the buffer updated in place
    (not read), and -1 - output index -> the bytes written into it (the update's)."""
    def update(op: Instruction) -> float:
        operands = module.operands(op)
        position = IN_PLACE[op.opcode]
        source = operands[position] if len(operands) > position else None
        return sum(a.nbytes for a in source.arrays) if source is not None else 0.0

    def written(op: Instruction) -> float:
        """The update's bytes, at most the buffer's: a scatter of many updates into the same
        rows (a segment sum) combines them, and writes no more than the buffer holds."""
        size = sum(a.nbytes for a in op.arrays[:1])
        return min(update(op), size) if size > 0 else update(op)

    if ins.opcode in IN_PLACE:
        return {0: 0.0, -1: written(ins)}
    comp = module.computations.get(ins.called[0]) if ins.opcode == "fusion" and ins.called \
        else None
    root = module.by_id.get(comp.root) if comp is not None else None
    if root is None:
        return {}
    outputs = [module.by_id.get(i) for i in root.operands] if root.opcode == "tuple" \
        else [root]
    out: dict[int, float] = {}
    for position, item in enumerate(outputs):
        if item is None or item.opcode not in IN_PLACE or not item.operands:
            continue
        buffer = module.by_id.get(item.operands[0])
        if buffer is not None and buffer.opcode == "parameter":
            out[buffer.parameter] = 0.0
            out[-1 - position] = written(item)
    return out


def _partial_reads(module: Module, fusion: Instruction) -> dict[int, float]:
    """Parameter number -> the bytes read of it, for each parameter of the fusion's
    computation every user of which slices it (what those users output)."""
    out: dict[int, float] = {}
    comp = module.computations.get(fusion.called[0]) if fusion.called else None
    if comp is None:
        return out
    users: dict[int, list[Instruction]] = {
        uid: [] for uid, ins in zip(comp.ids, comp.instructions, strict=True)
        if ins.opcode == "parameter"}
    for ins in comp.instructions:
        for operand in ins.operands:
            if operand in users:
                users[operand].append(ins)
    for uid, found in users.items():
        if found and all(u.opcode in SLICING and u.operands[:1] == (uid,) for u in found):
            out[module.by_id[uid].parameter] = sum(a.nbytes for u in found for a in u.arrays)
    for parameter, nbytes in _root_slice_reads(module, comp, users).items():
        out[parameter] = min(out.get(parameter, nbytes), nbytes)
    return out


#: Opcodes that compute each output element from the same element of their operands: a
#: slice of their result needs only that slice of each operand.
ELEMENTWISE = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder",
    "atan2", "and", "or", "xor", "compare", "select", "clamp", "convert", "negate", "abs",
    "exponential", "exponential-minus-one", "log", "log-plus-one", "sqrt", "rsqrt", "cbrt",
    "tanh", "logistic", "sine", "cosine", "tan", "floor", "ceil", "round-nearest-afz",
    "round-nearest-even", "sign", "not", "is-finite", "copy", "erf"})


def _root_slice_reads(module: Module, comp: Any,
                      users: dict[int, list[Instruction]]) -> dict[int, float]:
    """Parameter number -> bytes read, for a fusion whose root is a slice of elementwise
    work (``(x + y + b)[:, 0]``, a ViT's class token; a bitcast or reshape of it too): each
    parameter of the slice's input shape that reaches it only through elementwise ops is
    read only where the slice keeps (its bytes times the share of elements kept: a lower
    bound, whatever cache lines the strided reads touch); a parameter used anywhere else in
    the fusion, or a path through any other op, keeps its whole read."""
    root = module.by_id.get(comp.root)
    while root is not None and root.opcode in ("bitcast", "reshape") and root.operands:
        root = module.by_id.get(root.operands[0])
    if root is None or root.opcode != "slice" or not root.arrays or not root.operands:
        return {}
    source = module.by_id.get(root.operands[0])
    if source is None or not source.arrays or not source.arrays[0].elements:
        return {}
    shape = source.arrays[0].dims
    share = root.arrays[0].elements / source.arrays[0].elements
    uid_of = {id(ins): uid for uid, ins in zip(comp.ids, comp.instructions, strict=True)}
    path: set[int] = set()
    params: dict[int, Instruction] = {}
    stack = [root.operands[0]]
    while stack:
        uid = stack.pop()
        ins = module.by_id.get(uid)
        if ins is None or uid in path:
            continue
        path.add(uid)
        if ins.opcode == "parameter":
            if ins.arrays and ins.arrays[0].dims == shape:
                params[uid] = ins
        elif ins.opcode == "broadcast":
            continue  # a smaller operand broadcast in: read whole, as it is
        elif ins.opcode in ELEMENTWISE and ins.arrays and ins.arrays[0].dims == shape:
            stack.extend(ins.operands)
        else:
            return {}
    return {ins.parameter: share * sum(a.nbytes for a in ins.arrays)
            for uid, ins in params.items()
            if all(uid_of.get(id(u)) in path for u in users.get(uid, []))}


def _collective(ins: Instruction, opcode: str) -> Workload | str:
    """A collective by the collectives table (:func:`..collectives.price_hlo`): its result
    (an async start's: the second half of its tuple, after its operands, the scalar contexts
    a ``collective-permute-start`` adds left out), over its replica group. Its ``-done`` is
    the wait for it: the work is the start's."""
    if ins.opcode.endswith("-done"):
        return ZERO
    arrays = list(ins.arrays)
    if ins.opcode.endswith("-start") and ins.tuple_shape and len(arrays) > 1:
        # (operands, results[, u32 contexts]): the results, the scalars left out
        arrays = [a for a in arrays if a.dims] or arrays
        arrays = arrays[len(arrays) // 2:]
    arrays = [a for a in arrays if a.elements > 0]
    if not arrays:  # empty tensors (or none): nothing crosses the link
        return ZERO
    if any(not a.dtype for a in arrays):
        return "an element type of unknown width"
    widest = max(arrays, key=lambda a: a.itemsize)
    priced = collectives.price_hlo(opcode, result_bytes=sum(a.nbytes for a in arrays),
                                   dtype=widest.dtype, group=ins.group)
    return ZERO if priced == "zero" else priced


def price(module: Module, ins: Instruction) -> Workload | str:
    """The Workload of one execution of *ins* (one kernel, see the module docstring), or
    the reason it is not priced."""
    if ins.opcode in CONTROL:
        return f"{ins.opcode}: its ops are rows of their own"
    base = ins.opcode.removesuffix("-start").removesuffix("-done")
    if tables.collective_named("hlo", base) is not None:
        return _collective(ins, base)
    if ins.opcode in FREE:
        return ZERO
    if ins.unknown_type:
        return "an element type of unknown width"
    counter = _Counter(module, ins.name)
    counter.instruction(ins)
    if counter.missing:
        return "; ".join(dict.fromkeys(counter.missing))[:120]
    nbytes = boundary_bytes(module, ins)
    kernels: list[Kernel] = []
    for i, kernel in enumerate(counter.matrix):
        kernels.append(kernel.evolve(name=f"{ins.name}.dot{i}" if i else ins.name))
    for dtype, flops in sorted(counter.vector.items()):
        kernels.append(Kernel(f"{ins.name}.{dtype}" if kernels else ins.name, flops, 0.0,
                              unit="vector", dtype=dtype))
    if not kernels:
        first = tables.jax_precision(_Value(ins.arrays[0])) if ins.arrays else None
        out_dtype = tables.vector_dtype(first)
        kernels.append(Kernel(ins.name, 0.0, 0.0, unit="vector", dtype=out_dtype))
    head = kernels[0].evolve(bytes=nbytes)
    rest = [k.evolve(epilogue_of=head.name) for k in kernels[1:]]
    if math.isclose(nbytes, 0.0) and not any(k.total_flops for k in kernels):
        return ZERO
    return Workload(name=ins.name, kernels=[head, *rest])

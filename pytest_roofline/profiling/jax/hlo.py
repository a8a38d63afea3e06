"""A compiled XLA program (an ``HloModuleProto``) read from its wire format.

``jax.profiler`` keeps, for every program XLA compiled in the process, the serialized
``HloProto`` (``xla/service/hlo.proto``) of the program *as it runs*: after fusion, each
executed op an instruction of the entry computation (or of a loop's body) whose name the
trace's events carry (``hlo_op``). What is read of it:

* the module (``HloProto.hlo_module = 1``): its name (1), computations (3), id (5), entry
  computation id (6);
* each computation: name (1), instructions (2), id (5), root instruction id (6);
* each instruction: name (1), opcode (2), shape (3: element type 2, dimensions 3, tuple
  shapes 4), the jaxpr op it came from (metadata 7, ``op_name`` 2), a parameter's
  number (9), its
  ``dimensions`` (14: a sort's axis), ``custom_call_target`` (28), dot dimension numbers
  (30: contracting 1 and 2, batch 3 and 4), id (35), operand ids (36), called computation
  ids (38), ``backend_config`` (43: a GEMM custom call's dot dimension numbers, JSON);
  a convolution's window (15: per spatial axis its size 1, stride 2, padding 3 and 4,
  window dilation 5, base dilation 6), dimension numbers (16) and group counts (50, 58);
  a collective's replica groups (``collective_device_list`` 87: explicit groups 1 or an
  iota list 2 whose ``num_devices_per_group`` is 2; the older ``replica_groups`` 49).

Nothing here prices: :mod:`.hlo_pricing` does, with the JAX tracer's tables.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from ... import dtypes
from .xplane import XPlaneError, _Truncated, integer, message, packed, signed, text

#: XLA's ``PrimitiveType`` numbers -> the framework dtype name the tracer's tables read.
#: A type not listed is not priced (its width is not guessed).
_NAMES: dict[int, str] = {
    1: "bool", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "uint8", 7: "uint16",
    8: "uint32", 9: "uint64", 10: "float16", 11: "float32", 12: "float64", 15: "complex64",
    16: "bfloat16", 18: "complex128", 19: "float8_e5m2", 20: "float8_e4m3fn", 21: "int4",
    22: "uint4", 24: "float8_e5m2fnuz", 25: "float8_e4m3fnuz"}
#: XLA's ``PrimitiveType`` numbers -> (the framework dtype name, bytes per element).
ELEMENT_TYPES: dict[int, tuple[str, float]] = {
    number: (name, dtypes.element_bytes(name)) for number, name in _NAMES.items()}
TUPLE, TOKEN = 13, 17


@dataclass(frozen=True)
class Array:
    """One array of a shape: its dtype name (``float32``), element size and dimensions;
    *dtype* is ``""`` for an element type of unknown width."""

    dtype: str
    itemsize: float
    dims: tuple[int, ...]

    @property
    def elements(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> float:
        return self.elements * self.itemsize

    @property
    def label(self) -> str:
        short = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64",
                 "int32": "s32", "int8": "s8", "bool": "pred"}.get(self.dtype, self.dtype)
        return "x".join(str(d) for d in self.dims) + short


@dataclass(frozen=True)
class Instruction:
    name: str
    opcode: str
    arrays: tuple[Array, ...]  # the shape, a tuple's elements flattened in order
    tuple_shape: bool
    operands: tuple[int, ...]
    called: tuple[int, ...]
    dimensions: tuple[int, ...]
    dot: tuple[tuple[int, ...], ...] | None  # lhs/rhs contracting, lhs/rhs batch
    target: str  # a custom call's target
    backend: str  # backend_config
    op_name: str  # the jaxpr op it came from (metadata), jit(mlp)/dot_general
    parameter: int = 0  # a parameter's number
    conv: dict[str, Any] | None = None  # a convolution's parameters, as jax names them
    window: tuple[int, ...] = ()  # a windowed op's window sizes (reduce-window, conv)
    group: int = 0  # a collective's devices per replica group (0: not in the program)

    @property
    def unknown_type(self) -> bool:
        return any(not a.dtype for a in self.arrays)

    def gemm_dims(self) -> tuple[tuple[int, ...], ...] | None:
        """A GEMM custom call's dot dimension numbers, from its backend_config's
        ``dot_dimension_numbers`` (cuBLAS, cuBLASLt, hipBLASLt); None if it has none."""
        if not self.backend.startswith("{"):
            return None
        try:
            config = json.loads(self.backend)
        except (ValueError, RecursionError):  # not JSON, or nested past the decoder's depth
            return None
        numbers = _find(config, "dot_dimension_numbers")
        if not isinstance(numbers, dict):
            return None
        try:
            return tuple(tuple(int(d) for d in numbers.get(key) or ()) for key in (
                "lhs_contracting_dimensions", "rhs_contracting_dimensions",
                "lhs_batch_dimensions", "rhs_batch_dimensions"))
        except (TypeError, ValueError):
            return None


def _find(value: Any, key: str) -> Any:
    """The first value of *key* in a JSON object, breadth first, at most :data:`MAX_DEPTH`
    levels down (never a recursion as deep as the config nests)."""
    level = [value]
    for _ in range(MAX_DEPTH):
        found = [v for v in level if isinstance(v, dict)]
        for item in found:
            if key in item:
                return item[key]
        level = [v for item in found for v in item.values()]
        if not level:
            break
    return None


@dataclass(frozen=True)
class Computation:
    name: str
    instructions: tuple[Instruction, ...]
    ids: tuple[int, ...]
    root: int = 0  # the id of the instruction whose value it returns


@dataclass(frozen=True)
class Module:
    """A compiled program: its computations by id, every instruction by name and id."""

    name: str
    program_id: int
    computations: dict[int, Computation]
    by_name: dict[str, Instruction]
    by_id: dict[int, Instruction]

    def operands(self, instruction: Instruction) -> list[Instruction | None]:
        return [self.by_id.get(i) for i in instruction.operands]


#: How deep a shape's tuples may nest, and a JSON backend config (a real program's nest a
#: few levels; a deeper one is a corrupt or hostile file, said in one line).
MAX_DEPTH = 64


class _TooDeep(Exception):
    """A field nested deeper than :data:`MAX_DEPTH` (its message names the field)."""


def _shape(data: bytes, depth: int = 0) -> tuple[tuple[Array, ...], bool]:
    if depth > MAX_DEPTH:
        raise _TooDeep("shape (tuples in tuples)")
    parts = message(data)
    kind = integer(parts.get(2))
    if kind == TUPLE:
        arrays: list[Array] = []
        for sub in parts.get(4, ()):
            if isinstance(sub, bytes):
                arrays.extend(_shape(sub, depth + 1)[0])
        return tuple(arrays), True
    if kind == TOKEN:
        return (), False
    dims = tuple(signed(d) for d in packed(parts.get(3, [])))
    name, size = ELEMENT_TYPES.get(kind, ("", 0.0))
    if any(d < 0 for d in dims) or math.prod(dims) > 2 ** 53:  # not a real array's
        name, size = "", 0.0
    return (Array(name, size, dims),), False


def _convolution(parts: dict[int, list[Any]]) -> dict[str, Any] | None:
    """A convolution's window (15) and dimension numbers (16), feature (50) and batch (58)
    group counts, as ``lax.conv_general_dilated``'s parameters: the specs list the batch,
    feature and spatial axes of the input, the output and input features and the spatial
    axes of the kernel, and the batch, feature and spatial axes of the output."""
    if not (parts.get(16) and isinstance(parts[16][0], bytes)):
        return None
    dn = message(parts[16][0])

    def one(number: int) -> int:
        return integer(dn.get(number))

    def many(number: int) -> tuple[int, ...]:
        return tuple(packed(dn.get(number, [])))

    window = message(parts[15][0]) if parts.get(15) and isinstance(parts[15][0], bytes) \
        else {}
    dims = [message(d) for d in window.get(1, []) if isinstance(d, bytes)]

    def field(number: int, default: int) -> tuple[int, ...]:
        return tuple(integer(d.get(number), default) for d in dims)

    def count(number: int) -> int:
        return max(1, integer(parts.get(number), 1))

    return {"dimension_numbers": ((one(7), one(8), *many(11)), (one(4), one(3), *many(6)),
                                  (one(9), one(10), *many(12))),
            "window_strides": field(2, 1),
            "padding": tuple(zip(field(3, 0), field(4, 0), strict=True)),
            "lhs_dilation": field(6, 1), "rhs_dilation": field(5, 1),
            "feature_group_count": count(50), "batch_group_count": count(58)}


def _window(parts: dict[int, list[Any]]) -> tuple[int, ...]:
    """The window's size along each axis (Window 15: dimensions 1, each its size 1)."""
    if not (parts.get(15) and isinstance(parts[15][0], bytes)):
        return ()
    dims = [message(d) for d in message(parts[15][0]).get(1, []) if isinstance(d, bytes)]
    return tuple(integer(d.get(1), 1) for d in dims)


def _group(parts: dict[int, list[Any]]) -> int:
    """A collective's devices per replica group: its ``collective_device_list`` (87), as
    groups (1, each ``replica_ids`` 1) or an iota list (2: ``num_devices_per_group`` 2), or
    the older ``replica_groups`` (49); 0 where none is written (every device)."""
    listed = parts.get(87)
    groups = parts.get(49)
    if listed and isinstance(listed[0], bytes):
        devices = message(listed[0])
        iota = devices.get(2)
        if iota and isinstance(iota[0], bytes):
            return max(0, integer(message(iota[0]).get(2)))
        groups = devices.get(1)
    if groups and isinstance(groups[0], bytes):
        return len(packed(message(groups[0]).get(1, [])))
    return 0


def _instruction(data: bytes) -> tuple[int, Instruction]:
    parts = message(data)
    arrays, is_tuple = _shape(parts[3][0]) if parts.get(3) else ((), False)
    meta = parts.get(7)
    op_name = text(message(meta[0]).get(2)) if meta and isinstance(meta[0], bytes) else ""
    dot = None
    if parts.get(30) and isinstance(parts[30][0], bytes):
        numbers = message(parts[30][0])
        dot = tuple(tuple(packed(numbers.get(k, []))) for k in (1, 2, 3, 4))
    uid = integer(parts.get(35))
    return uid, Instruction(
        name=text(parts.get(1)), opcode=text(parts.get(2)), arrays=arrays,
        tuple_shape=is_tuple, operands=tuple(signed(i) for i in packed(parts.get(36, []))),
        called=tuple(signed(i) for i in packed(parts.get(38, []))),
        dimensions=tuple(packed(parts.get(14, []))), dot=dot, target=text(parts.get(28)),
        backend=text(parts.get(43)), op_name=op_name,
        parameter=integer(parts.get(9)),
        conv=_convolution(parts), window=_window(parts), group=_group(parts))


def parse_module(raw: bytes, where: str = "<hlo>") -> Module:
    """The :class:`Module` of a serialized ``HloProto`` (or a bare ``HloModuleProto``)."""
    try:
        outer = message(raw)
        inner = outer.get(1, [b""])[0]
        body = message(inner) if isinstance(inner, bytes) and inner and not outer.get(2) \
            else outer
        if not any(isinstance(c, bytes) for c in body.get(3, ())):
            body = outer
        computations: dict[int, Computation] = {}
        by_name: dict[str, Instruction] = {}
        by_id: dict[int, Instruction] = {}
        for comp_data in body.get(3, ()):
            if not isinstance(comp_data, bytes):
                continue
            comp = message(comp_data)
            instructions, ids = [], []
            for ins_data in comp.get(2, ()):
                if isinstance(ins_data, bytes):
                    uid, ins = _instruction(ins_data)
                    instructions.append(ins)
                    ids.append(uid)
                    by_id[uid] = ins
                    by_name.setdefault(ins.name, ins)
            computations[integer(comp.get(5))] = Computation(
                text(comp.get(1)), tuple(instructions), tuple(ids), integer(comp.get(6)))
        name = text(body.get(1))
        program = integer(body.get(5))
    except (_Truncated, IndexError, UnicodeDecodeError) as exc:
        raise XPlaneError(f"the compiled program {where} in the trace cannot be read "
                          f"({type(exc).__name__}): a truncated or foreign HLO proto") from None
    except (_TooDeep, RecursionError) as exc:
        field = str(exc) if isinstance(exc, _TooDeep) else "messages"
        raise XPlaneError(f"the compiled program {where[:60]} in the trace: its {field} nest "
                          f"deeper than {MAX_DEPTH} levels (a real program's do not)") from None
    if not by_name:
        raise XPlaneError(f"the compiled program {where} in the trace holds no instruction")
    return Module(name, program, computations, by_name, by_id)

"""A Triton launch counted by running it: what Triton's interpreter (``TRITON_INTERPRET=1``)
computes and moves, program by program, with no formula.

The interpreter runs each program of the grid in Python, every ``tl`` operation a call of
its builder (``triton.runtime.interpreter.interpreter_builder``) on numpy arrays of the
block. While one launch is counted, the builder's methods are wrapped on that instance (and
``tl.reduce``'s and ``tl.associative_scan``'s implementations on their classes); they are
put back when the launch ends, so nothing is slower outside. The wrappers take any
signature (the interpreter calls some by keyword). Every ``create_*`` method is in one of
:mod:`._triton_ops`' tables; one no table names is noted and the launch refused by name.

What is counted, summed over the grid:

* **Matrix FLOPs**, each ``tl.dot`` at the precision of its own operands (the wider of the
  two: fp16 stays fp16 whatever else the launch holds, fp8 stays fp8, int8 int8; fp32
  operands at their ``input_precision``: tf32, Triton's default, or ieee fp32; ``tf32x3``
  is three tf32 products, ``bf16x3`` three and ``bf16x6`` six bf16 ones). 2 FLOPs per
  multiply-accumulate of its tiles, the lanes a masked load left as padding excluded.
  ``tl.dot_scaled`` likewise, at its operands' formats (e4m3/e5m2: fp8, e2m3/e3m2: fp6,
  e2m1: fp4, two values a byte along the packed axis); its scales' traffic is in the bytes.
* **Discarded rows**: the products of output lanes no masked store ever writes (the rows
  and columns past the matrix's edge, which the matmul tutorial computes on wrapped rows)
  are taken back: 2·M·N·K for a matmul whose tiles do not fit its shape. A dot's products
  follow its result through any elementwise epilogue (``acc += tl.dot(a, b)``, an
  activation, a cast, a scale) to the stores; complementary masked stores of one result
  keep all of its products. A result whose lanes move (reshape, transpose, a reduction,
  another dot's operand) keeps all of its products.
* **Vector FLOPs**, at the precision of the operands: one per valid lane of each
  floating-point operation (add, subtract, multiply, divide, remainder, min, max,
  comparison, negation, absolute value, floor, ceil, and each transcendental: exp, exp2,
  log, log2, sqrt, rsqrt, sin, cos, erf), two for a fused multiply-add and a clamp; a
  reduction one per valid element not already an output (``tl.sum``, ``tl.max``: n - 1 for
  a row of n), a scan one per valid element. Arithmetic on constants alone is folded by
  the compiler: no FLOP. Adding a constant 0 (or the max with a
  constant -inf, the min with +inf) is an accumulator's start, a move, not a FLOP: a
  blocked sum of n elements is n - 1 adds, as a reduction of n. Integer arithmetic
  (indices, offsets, masks) and casts are not FLOPs; a float ``tl.atomic_add`` is one FLOP a
  lane (Triton runs a float atomic max or min as integer atomics on the bits: no FLOP).
* **Valid lanes**: a lane a masked load did not read is padding; an operation's lanes are
  valid where all of its operands' are (the mask travels through arithmetic, casts,
  broadcasts, reshapes, transposes, joins, splits and gathers; a dot's output lane with no
  product of loaded values is padding unless its accumulator holds data), but an add, min
  or max holds data where either operand does, a subtract where its first operand does: a
  loop's accumulator keeps the lanes of earlier chunks after a masked last one, and ``x -
  acc`` on ``x``'s padding stays padding. Vector work on lanes loaded unmasked and then
  discarded is counted: the kernel does that work (the rules: :mod:`._triton_lanes`).
* **Bytes**: the distinct addresses its unmasked lanes load, times the element size, plus the
  distinct addresses they store (a tensor read and written counts both ways; an atomic,
  ``tl.atomic_cas`` included, reads and writes). Tensor descriptors' loads and stores are
  the masked loads and stores of the block they cover, counted the same way. A block many
  programs re-read counts once: the unique traffic of the launch, what DRAM sees when the
  cache holds the re-read blocks (the least it can move).
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from typing import Any

import numpy as np

from .. import dtypes
from . import _kernels as K
from . import _triton_lanes as L
from . import _triton_ops as O
from ._triton_ops import CARRY, FLOPS

__all__ = ["CARRY", "FLOPS", "Count", "interpreter", "precision"]

#: Pending addresses before they are folded to their distinct set (bounds memory).
_FOLD = 4_194_304  # 2**22


def interpreter() -> Any:
    """Triton's interpreter module, when triton has imported it (None otherwise)."""
    return sys.modules.get("triton.runtime.interpreter")


def precision(dtype: Any) -> str:
    """The precision a Triton element type is priced in (fp8 variants: fp8; int8 and uint8:
    int8; one the project does not know: fp32)."""
    name = str(getattr(dtype, "scalar", dtype))
    if name.startswith("fp8"):
        return "fp8"
    if name in ("int8", "uint8"):
        return "int8"
    try:
        return dtypes.canonical(name)
    except LookupError:
        return "fp32"


class _Dot:
    """One dot's products in one program, per output lane, and the lanes stored so far."""

    __slots__ = ("escaped", "precision", "stored", "work")

    def __init__(self, precision: str, work: Any) -> None:
        self.precision = precision
        self.work = work
        self.stored: Any = None  # lanes some store wrote (None: none yet)
        self.escaped = False  # its lanes moved: all of its products are kept


def _dots(handle: Any) -> tuple[_Dot, ...]:
    return getattr(handle, "_rl_dots", ())


def _escape(handles: list[Any]) -> None:
    for handle in handles:
        for dot in _dots(handle):
            dot.escaped = True


def _add(table: dict[str, float], key: str, value: float) -> None:
    if value:
        table[key] = table.get(key, 0.0) + value


class Count:
    """One launch's work, counted while entered (see the module docstring)."""

    def __init__(self) -> None:
        self.matrix: dict[str, float] = {}  # precision -> FLOPs
        self.vector: dict[str, float] = {}
        self.loads: dict[int, list[Any]] = {}
        self.stores: dict[int, list[Any]] = {}
        self.pending = 0
        #: ops the counter does not know that the launch ran: name -> calls
        self.refused: Counter[str] = Counter()
        #: kept for the launch path: a descriptor's traffic is counted as its loads/stores
        self._builder: Any = None
        self._names: list[str] = []
        self._classes: list[tuple[type, Any]] = []
        self._quiet = 0  # > 0 inside a reduction's combine function (counted as a whole)
        self._program: list[_Dot] = []
        self._lang: tuple[Any, Any] | None = None

    # -- entering ----------------------------------------------------------------------------

    def __enter__(self) -> Count:
        module = interpreter()
        builder = getattr(module, "interpreter_builder", None)
        if builder is None:
            return self
        self._builder = builder
        wrappers: dict[str, Any] = {
            "create_masked_load": self._load, "create_masked_store": self._store,
            "create_atomic_rmw": self._atomic, "create_atomic_cas": self._cas,
            "create_dot": self._dot, "create_dot_scaled": self._dot_scaled,
            "set_grid_idx": self._next_program,
            "create_descriptor_gather": self._gather,
        }
        for name in dir(type(builder)):
            method = getattr(builder, name, None)
            if not callable(method):
                continue
            if name in wrappers:
                wrapped = wrappers[name](method)
            elif name in FLOPS:
                wrapped = self._arith(name, method)
            elif name in CARRY:
                wrapped = self._carry(method)
            elif name in O.SHAPE:
                wrapped = self._shape(name, method)
            elif name in O.CONSTANTS:
                wrapped = self._constant(method)
            elif name.startswith("create_") and (name not in O.KNOWN or name in O.REFUSED):
                wrapped = self._refuse(name, method)
            else:
                continue
            setattr(builder, name, wrapped)
            self._names.append(name)
        for cls_name, per in (("ReduceOps", self._reduce), ("ScanOps", self._scan)):
            cls = getattr(module, cls_name, None)
            original = getattr(cls, "apply_impl", None)
            if isinstance(cls, type) and original is not None:
                self._classes.append((cls, original))
                setattr(cls, "apply_impl", per(original))  # noqa: B010
        patch = getattr(module, "_patch_lang_tensor", None)
        if callable(patch):  # ``x.T`` transposes without the builder: its mask must follow
            self._lang = (module, patch)
            module._patch_lang_tensor = _transposing(patch)
        return self

    def __exit__(self, *exc: object) -> None:
        self._settle()
        builder, self._builder = self._builder, None
        if builder is not None:
            for name in self._names:
                builder.__dict__.pop(name, None)
        self._names = []
        for cls, original in reversed(self._classes):
            setattr(cls, "apply_impl", original)  # noqa: B010
        self._classes = []
        if self._lang is not None:
            module, patch = self._lang
            module._patch_lang_tensor = patch
            self._lang = None

    def _settle(self) -> None:
        """Take back the products of the lanes no store wrote, of the program just run."""
        for dot in self._program:
            if dot.escaped or dot.stored is None:
                continue
            dropped = float(dot.work[~dot.stored].sum())
            _add(self.matrix, dot.precision, -dropped)
        self._program = []

    def _next_program(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            self._settle()
            return method(*args, **kwargs)
        return run

    # -- the wrapped operations --------------------------------------------------------------

    def _arith(self, name: str, method: Any) -> Any:
        flops = FLOPS[name]
        identity = O.ADDITIVE.get(name)

        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            ops = L.handles(args, kwargs)
            valid = L.joined(ops)
            if not self._quiet and not self._moves(name, ops, identity):
                lanes = L.lanes(out, valid)
                _add(self.vector, precision(ops[0].dtype if ops else out.dtype),
                     flops * lanes)
            if identity is not None:  # a - pad is a; pad - a is padding
                valid = L.either(ops[:1] if name == "create_fsub" else ops, valid)
            self._follow(out, ops)
            return L.mark(out, valid)
        return run

    @staticmethod
    def _moves(name: str, ops: list[Any], identity: float | None) -> bool:
        """An op of constants alone (the compiler folds it), or an add of a constant 0 (max
        with -inf, min with +inf): no FLOP."""
        if ops and all(getattr(h, "_rl_const", False) for h in ops):
            return True
        if identity is None:
            return False
        candidates = ops[1:2] if name == "create_fsub" else ops
        return any(getattr(h, "_rl_const", False) and bool(np.all(h.data == identity))
                   for h in candidates)

    def _follow(self, out: Any, ops: list[Any]) -> None:
        """Hand the dots' products in *ops* on to *out*, an elementwise result (constness and
        spread too: a constant's cast is a constant)."""
        if ops and all(getattr(h, "_rl_const", False) for h in ops):
            out._rl_const = True
        if ops and all(getattr(h, "_rl_spread", False) for h in ops):
            out._rl_spread = True
        found: dict[int, _Dot] = {}
        for handle in ops:
            for dot in _dots(handle):
                found[id(dot)] = dot
        if not found:
            return
        shape = np.shape(out.data)
        kept = []
        for dot in found.values():
            if np.shape(dot.work) == shape:
                kept.append(dot)
            else:
                dot.escaped = True
        if kept:
            out._rl_dots = tuple(kept)

    def _carry(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            ops = L.handles(args, kwargs)
            valid = L.joined(ops)
            self._follow(out, ops)
            if valid is not None and np.shape(valid) != np.shape(out.data):
                valid = None
            return L.mark(out, valid)
        return run

    def _shape(self, name: str, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            ops = L.handles(args, kwargs)
            _escape(ops)
            first = ops[0] if ops else None
            for result in out if isinstance(out, tuple) else (out,):
                if first is not None and getattr(first, "_rl_const", False):
                    result._rl_const = True
                if name in ("create_splat", "create_broadcast") or (
                        first is not None and getattr(first, "_rl_spread", False)
                        and name in ("create_expand_dims", "create_reshape")):
                    result._rl_spread = True
            moved = L.moved(name, ops, args, kwargs)
            if isinstance(out, tuple):
                for result, valid in zip(out, moved or (None,) * len(out), strict=False):
                    L.mark(result, valid)
                return out
            return L.mark(out, moved)
        return run

    def _constant(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            with contextlib.suppress(AttributeError):
                out._rl_const = True
                out._rl_spread = True
            return out
        return run

    def _refuse(self, name: str, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            self.refused[name] += 1
            return method(*args, **kwargs)
        return run

    def _dot(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            a, b = L.arg(args, kwargs, 0, "a"), L.arg(args, kwargs, 1, "b")
            d = L.arg(args, kwargs, 2, "d")
            shape_a, shape_b = np.shape(a.data), np.shape(b.data)
            work = 2.0 * np.matmul(L.ones(shape_a, L.valid_of(a)),
                                   L.ones(shape_b, L.valid_of(b)))
            name, passes = _dot_precision(a, b, L.arg(args, kwargs, 3, "input_precision"))
            self._product(out, [a, b], d, name, passes * work)
            return out
        return run

    def _dot_scaled(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            lhs, rhs = L.arg(args, kwargs, 0, "lhs"), L.arg(args, kwargs, 3, "rhs")
            formats = (L.arg(args, kwargs, 2, "lhs_format_enum"),
                       L.arg(args, kwargs, 5, "rhs_format_enum"))
            packs = (L.arg(args, kwargs, 7, "lhs_k_pack"), L.arg(args, kwargs, 8, "rhs_k_pack"))
            names = [getattr(f, "name", str(f)).split(".")[-1] for f in formats]
            *_, m, n = np.shape(out.data)
            va, vb = L.valid_of(lhs), L.valid_of(rhs)
            if names[0] == "E2M1":  # two values a byte, along K or along M
                va = None if va is None else np.repeat(va, 2, axis=-1 if packs[0] else -2)
            if names[1] == "E2M1":
                vb = None if vb is None else np.repeat(vb, 2, axis=-2 if packs[1] else -1)
            k = np.shape(lhs.data)[-1] * (2 if names[0] == "E2M1" and packs[0] else 1)
            work = 2.0 * np.matmul(L.ones((m, k), va), L.ones((k, n), vb))
            name = K.wider(O.SCALED_FORMATS.get(names[0], "fp32"),
                           O.SCALED_FORMATS.get(names[1], "fp32")) or "fp32"
            self._product(out, [lhs, rhs], L.arg(args, kwargs, 9, "acc_handle"), name, work)
            return out
        return run

    def _product(self, out: Any, operands: list[Any], acc: Any, name: str, work: Any) -> None:
        """Count a dot's products *work* (per output lane) and hand them on with *out*, whose
        lanes hold data where a product of loaded values is, or the accumulator passed in
        holds data (a row of padding times anything is padding)."""
        _add(self.matrix, name, float(work.sum()))
        L.mark(out, _product_lanes(work, acc))
        _escape(operands)  # a result used as an operand: its products are used
        held = [d for d in _dots(acc) if np.shape(d.work) == np.shape(work)]
        if (len(held) == 1 and held[0].precision == name and held[0].stored is None
                and not held[0].escaped):
            held[0].work = held[0].work + work  # acc = tl.dot(a, b, acc): one running product
            out._rl_dots = (held[0],)
            return
        dot = _Dot(name, work)
        self._program.append(dot)
        out._rl_dots = (*held, dot)

    def _gather(self, method: Any) -> Any:
        """A descriptor's gather (its bytes counted by the loads it makes): the rows and
        columns past the tensor's edge are padding in the block it returns."""
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            desc = L.arg(args, kwargs, 0, "desc")
            rows = np.asarray(L.arg(args, kwargs, 1, "x_offsets").data)
            with contextlib.suppress(AttributeError, IndexError, TypeError, ValueError):
                *_, tall, wide = desc.shape  # the tensor's last two dims
                height, width = (int(np.asarray(d.data).item()) for d in (tall, wide))
                cols = int(np.asarray(L.arg(args, kwargs, 2, "y_offset").data).item()) + \
                    np.arange(desc.block_shape[-1])
                valid = (((rows >= 0) & (rows < height))[:, None]
                         & ((cols >= 0) & (cols < width))[None, :])
                if not valid.all():
                    L.mark(out, valid)
            return out
        return run

    def _load(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            ptrs, mask = L.arg(args, kwargs, 0, "ptrs"), L.arg(args, kwargs, 1, "mask")
            lanes = L.mask_lanes(ptrs, mask)
            self._note(self.loads, ptrs, lanes)
            return L.mark(out, None if lanes.all() else lanes)
        return run

    def _store(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            ptrs, value = L.arg(args, kwargs, 0, "ptrs"), L.arg(args, kwargs, 1, "value")
            lanes = L.mask_lanes(ptrs, L.arg(args, kwargs, 2, "mask"))
            self._note(self.stores, ptrs, lanes)
            _stored(value, lanes)
            return method(*args, **kwargs)
        return run

    def _atomic(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            op, ptr = L.arg(args, kwargs, 0, "rmwOp"), L.arg(args, kwargs, 1, "ptr")
            val = L.arg(args, kwargs, 2, "val")
            lanes = L.mask_lanes(ptr, L.arg(args, kwargs, 3, "mask"))
            self._note(self.loads, ptr, lanes)
            self._note(self.stores, ptr, lanes)
            _stored(val, lanes)
            kind = getattr(op, "name", str(op)).split(".")[-1]
            dtype = getattr(val, "dtype", None)
            if kind == "FADD" and dtype is not None and dtype.is_floating():
                _add(self.vector, precision(dtype), float(np.count_nonzero(lanes)))
            return method(*args, **kwargs)
        return run

    def _cas(self, method: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            ptr = L.arg(args, kwargs, 0, "ptr")
            lanes = np.ones(np.shape(ptr.data), dtype=bool)  # no mask: every lane
            self._note(self.loads, ptr, lanes)
            self._note(self.stores, ptr, lanes)
            return method(*args, **kwargs)
        return run

    def _quietly(self, original: Any, ops: Any, inputs: Any) -> Any:
        """*original* (a reduction's or scan's combine) run with the elementwise ops inside it
        not counted: the reduction is counted as a whole by its caller."""
        self._quiet += 1
        try:
            return original(ops, inputs)
        finally:
            self._quiet -= 1

    def _reduce(self, original: Any) -> Any:
        count = self

        def apply_impl(ops: Any, inputs: Any) -> Any:
            out = count._quietly(original, ops, inputs)
            handle = inputs[0].handle
            _escape([i.handle for i in inputs if hasattr(i, "handle")])
            if handle.dtype.scalar.is_floating() and not count._quiet:
                valid = L.valid_of(handle)
                data = np.asarray(handle.data)
                axis = ops.axis
                if valid is None:
                    valid = np.ones(data.shape, dtype=bool)
                kept = valid.any(axis=axis) if axis is not None else valid.any()
                _add(count.vector, precision(handle.dtype),
                     float(np.count_nonzero(valid) - np.count_nonzero(kept)))
                if not np.all(kept):
                    for result in out if isinstance(out, (list, tuple)) else (out,):
                        L.mark(getattr(result, "handle", None), kept)
            return out
        return apply_impl

    def _scan(self, original: Any) -> Any:
        count = self

        def apply_impl(ops: Any, inputs: Any) -> Any:
            out = count._quietly(original, ops, inputs)
            handle = inputs[0].handle
            _escape([i.handle for i in inputs if hasattr(i, "handle")])
            if handle.dtype.scalar.is_floating() and not count._quiet:
                _add(count.vector, precision(handle.dtype),
                     float(L.lanes(handle, L.valid_of(handle))))
            return out
        return apply_impl

    # -- bytes ---------------------------------------------------------------------------

    def _note(self, into: dict[int, list[Any]], ptrs: Any, lanes: Any) -> None:
        element = ptrs.get_element_ty()
        size = max(1, int(getattr(element, "primitive_bitwidth", 8)) // 8)
        addresses = np.asarray(ptrs.data)[lanes] if not lanes.all() else np.ravel(ptrs.data)
        if not addresses.size:
            return
        into.setdefault(size, []).append(addresses.astype(np.uint64, copy=False))
        self.pending += addresses.size
        if self.pending > _FOLD:
            for table in (self.loads, self.stores):
                for key, parts in table.items():
                    table[key] = [np.unique(np.concatenate(parts))]
            self.pending = 0

    def nbytes(self) -> float:
        """The distinct bytes loaded plus the distinct bytes stored."""
        total = 0
        for table in (self.loads, self.stores):
            for size, parts in table.items():
                total += int(np.unique(np.concatenate(parts)).size) * size
        return float(total)



def _product_lanes(work: Any, acc: Any) -> Any:
    """The lanes of a dot's result that hold data (None: all of them)."""
    valid = np.asarray(work) != 0
    if acc is not None and not getattr(acc, "_rl_const", False):  # not the zeroed start
        held = L.valid_of(acc)
        if held is None:
            return None
        with contextlib.suppress(ValueError):
            valid = np.logical_or(valid, held)
    return None if valid.all() else valid


def _stored(value: Any, lanes: Any) -> None:
    """Note the lanes a store wrote on the dots whose products *value* carries."""
    for dot in _dots(value):
        if np.shape(dot.work) != np.shape(lanes):
            dot.escaped = True
        elif dot.stored is None:
            dot.stored = np.array(lanes, dtype=bool)
        else:
            dot.stored |= lanes


def _transposing(original: Any) -> Any:
    """The interpreter's ``_patch_lang_tensor(tensor, scope)``, with the ``T`` property it
    installs (a transpose made on the data, not through the builder) moving the valid lanes
    with the data."""
    def patch(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        plain = tensor.__dict__.get("T")
        if not isinstance(plain, property) or plain.fget is None:
            return
        get = plain.fget

        def transpose(value: Any) -> Any:
            out = get(value)
            handle = getattr(value, "handle", None)
            _escape([handle])
            valid = L.valid_of(handle)
            if valid is not None:
                L.mark(getattr(out, "handle", None), np.transpose(valid))
            return out

        scope.set_attr(tensor, "T", property(transpose))
    return patch


def _dot_precision(a: Any, b: Any, input_precision: Any) -> tuple[str, int]:
    """The precision a ``tl.dot`` of *a* and *b* runs in, and how many passes it makes."""
    name = K.wider(precision(a.dtype), precision(b.dtype)) or "fp32"
    if name == "fp32" and input_precision is not None:
        key = getattr(input_precision, "name", str(input_precision)).split(".")[-1]
        return O.INPUT_PRECISION.get(key, ("fp32", 1))
    return name, 1

"""A Triton launch counted by running it: what Triton's interpreter (``TRITON_INTERPRET=1``)
computes and moves, program by program, with no formula.

The interpreter runs each program of the grid in Python, every ``tl`` operation a call of
its builder (``triton.runtime.interpreter.interpreter_builder``) on numpy arrays of the
block. While one launch is counted, the builder's arithmetic, memory and dot methods are
wrapped on that instance (and ``tl.reduce``'s and ``tl.associative_scan``'s implementations
on their classes); they are put back when the launch ends, so nothing is slower outside.

What is counted, summed over the grid:

* **Matrix FLOPs**: ``tl.dot(a, b)`` is 2 FLOPs per multiply-accumulate of its tiles, the
  lanes a masked load left as padding excluded, and the products of output lanes a masked
  store discards (the rows and columns past the matrix's edge, which the matmul tutorial
  computes on wrapped rows): 2·M·N·K for a matmul whose tiles do not fit its shape.
* **Vector FLOPs**: one per valid lane of each floating-point operation (add, subtract,
  multiply, divide, remainder, min, max, comparison, negation, absolute value, floor, ceil,
  and each transcendental: exp, exp2, log, log2, sqrt, rsqrt, sin, cos, erf), two for a
  fused multiply-add and a clamp; a reduction one per valid element not already an output
  (``tl.sum``, ``tl.max``: n - 1 for a row of n), a scan one per valid element. Integer
  arithmetic (indices, offsets, masks) and casts are not FLOPs.
* **Valid lanes**: a lane a masked load did not read is padding; an operation's lanes are
  valid where all of its operands' are (the mask travels through arithmetic, casts,
  broadcasts and reshapes). Vector work on lanes loaded unmasked and then discarded is
  counted: the kernel does that work.
* **Bytes**: the distinct addresses its unmasked lanes load, times the element size, plus the
  distinct addresses they store (a tensor read and written counts both ways; an atomic reads
  and writes). A block many programs re-read counts once: the unique traffic of the launch,
  what DRAM sees when the cache holds the re-read blocks (the least it can move).
* **Not counted**: tensor descriptors (TMA): a launch that uses one is charged its tensor
  arguments instead, and the launch says so.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import numpy as np

#: Floating-point builder operations and the FLOPs each makes per valid lane.
FLOPS: dict[str, float] = {
    **dict.fromkeys(("create_fadd", "create_fsub", "create_fmul", "create_fdiv",
                     "create_frem", "create_precise_divf", "create_approx_divf",
                     "create_minimumf", "create_minnumf", "create_maximumf", "create_maxnumf",
                     "create_fneg", "create_fabs", "create_floor", "create_ceil",
                     "create_exp", "create_exp2", "create_log", "create_log2", "create_sqrt",
                     "create_precise_sqrt", "create_rsqrt", "create_sin", "create_cos",
                     "create_erf"), 1.0),
    **dict.fromkeys(("create_fcmpOLT", "create_fcmpOGT", "create_fcmpOLE", "create_fcmpOGE",
                     "create_fcmpOEQ", "create_fcmpONE", "create_fcmpULT", "create_fcmpUGT",
                     "create_fcmpULE", "create_fcmpUGE", "create_fcmpUEQ", "create_fcmpUNE"),
                    1.0),
    "create_fma": 2.0, "create_clampf": 2.0,
}
#: Operations that compute nothing but carry their operands' valid lanes on.
CARRY = ("create_fp_to_fp", "create_fp_ext", "create_fp_trunc", "create_si_to_fp",
         "create_ui_to_fp", "create_fp_to_si", "create_fp_to_ui", "create_bitcast",
         "create_select", "create_broadcast", "create_expand_dims", "create_reshape",
         "create_trans", "create_int_cast")
#: Casts: a dot's result cast before it is stored keeps its products.
CASTS = frozenset({"create_fp_to_fp", "create_fp_ext", "create_fp_trunc"})
#: Pending addresses before they are folded to their distinct set (bounds memory).
_FOLD = 1 << 22


def interpreter() -> Any:
    """Triton's interpreter module, when triton has imported it (None otherwise)."""
    return sys.modules.get("triton.runtime.interpreter")


def _valid(handle: Any) -> Any:
    return getattr(handle, "_rl_valid", None)


def _mark(handle: Any, valid: Any) -> Any:
    """Note *valid* (a bool array, or None: every lane) on *handle*."""
    if valid is not None and hasattr(handle, "data"):
        with contextlib.suppress(ValueError, AttributeError):
            handle._rl_valid = np.broadcast_to(valid, np.shape(handle.data))
    return handle


def _joined(args: tuple[Any, ...]) -> Any:
    """The lanes valid in every operand (None: all of them, or shapes that do not
    broadcast, which the operation itself will refuse)."""
    found = None
    for arg in args:
        valid = _valid(arg)
        if valid is None:
            continue
        try:
            found = valid if found is None else np.logical_and(found, valid)
        except ValueError:
            return None
    return found


def _lanes(handle: Any, valid: Any) -> int:
    return int(np.count_nonzero(valid)) if valid is not None else int(np.size(handle.data))


class Count:
    """One launch's work, counted while entered (see the module docstring)."""

    def __init__(self) -> None:
        self.matrix = 0.0
        self.vector = 0.0
        self.loads: dict[int, list[Any]] = {}
        self.stores: dict[int, list[Any]] = {}
        self.pending = 0
        self.descriptors = False
        self._builder: Any = None
        self._classes: list[tuple[type, Any]] = []
        self._quiet = 0  # > 0 inside a reduction's combine function (counted as a whole)

    # -- entering ----------------------------------------------------------------------------

    def __enter__(self) -> Count:
        module = interpreter()
        builder = getattr(module, "interpreter_builder", None)
        if builder is None:
            return self
        self._builder = builder
        for name, flops in FLOPS.items():
            if hasattr(builder, name):
                setattr(builder, name, self._arith(getattr(builder, name), flops))
        for name in CARRY:
            if hasattr(builder, name):
                setattr(builder, name, self._carry(getattr(builder, name), name in CASTS,
                                                   name == "create_trans"))
        builder.create_masked_load = self._load(builder.create_masked_load)
        builder.create_masked_store = self._store(builder.create_masked_store)
        builder.create_dot = self._dot(builder.create_dot)
        builder.create_atomic_rmw = self._atomic(builder.create_atomic_rmw)
        for name in ("create_descriptor_load", "create_descriptor_store",
                     "create_descriptor_gather", "create_descriptor_scatter"):
            if hasattr(builder, name):
                setattr(builder, name, self._descriptor(getattr(builder, name)))
        for cls_name, per in (("ReduceOps", self._reduce), ("ScanOps", self._scan)):
            cls = getattr(module, cls_name, None)
            original = getattr(cls, "apply_impl", None)
            if isinstance(cls, type) and original is not None:
                self._classes.append((cls, original))
                setattr(cls, "apply_impl", per(original))  # noqa: B010
        return self

    def __exit__(self, *exc: object) -> None:
        builder, self._builder = self._builder, None
        if builder is not None:
            for name in [*FLOPS, *CARRY, "create_masked_load", "create_masked_store",
                         "create_dot", "create_atomic_rmw", "create_descriptor_load",
                         "create_descriptor_store", "create_descriptor_gather",
                         "create_descriptor_scatter"]:
                builder.__dict__.pop(name, None)
        for cls, original in reversed(self._classes):
            setattr(cls, "apply_impl", original)  # noqa: B010
        self._classes = []

    # -- the wrapped operations --------------------------------------------------------------

    def _arith(self, method: Any, flops: float) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            valid = _joined(args)
            if not self._quiet:
                self.vector += flops * _lanes(out, valid)
            return _mark(out, valid)
        return run

    def _carry(self, method: Any, cast: bool, transpose: bool = False) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            work = getattr(args[0], "_rl_work", None) if cast and args else None
            if work is not None:
                out._rl_work = work  # a dot's result cast: its products go with it
            valid = _joined(args)
            if valid is not None and transpose and len(args) > 1:
                valid = np.transpose(valid, args[1])  # the mask follows the data
            if valid is not None and np.shape(valid) != np.shape(out.data):
                try:  # a reshape, an added axis, a broadcast
                    valid = np.reshape(valid, np.shape(out.data)) if np.size(valid) == np.size(
                        out.data) else np.broadcast_to(valid, np.shape(out.data))
                except ValueError:
                    valid = None
            return _mark(out, valid)
        return run

    def _dot(self, method: Any) -> Any:
        def run(a: Any, b: Any, d: Any, *rest: Any) -> Any:
            out = method(a, b, d, *rest)
            shape_a, shape_b = np.shape(a.data), np.shape(b.data)
            va, vb = _valid(a), _valid(b)
            va = va if va is not None and np.shape(va) == shape_a else None
            vb = vb if vb is not None and np.shape(vb) == shape_b else None
            ones_a = np.ones(shape_a, dtype=np.float32) if va is None else va.astype(np.float32)
            ones_b = np.ones(shape_b, dtype=np.float32) if vb is None else vb.astype(np.float32)
            work = 2.0 * np.matmul(ones_a, ones_b)  # per output lane: 2 per valid k
            self.matrix += float(work.sum())
            held = getattr(d, "_rl_work", None)
            if held is not None and np.shape(held) == np.shape(work):
                work = work + held
            out._rl_work = work
            return out
        return run

    def _load(self, method: Any) -> Any:
        def run(ptrs: Any, mask: Any, *rest: Any) -> Any:
            out = method(ptrs, mask, *rest)
            lanes = np.broadcast_to(mask.data, np.shape(ptrs.data)).astype(bool)
            self._note(self.loads, ptrs, lanes)
            return _mark(out, None if lanes.all() else lanes)
        return run

    def _store(self, method: Any) -> Any:
        def run(ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
            lanes = np.broadcast_to(mask.data, np.shape(ptrs.data)).astype(bool)
            self._note(self.stores, ptrs, lanes)
            work = getattr(value, "_rl_work", None)
            if work is not None and np.shape(work) == np.shape(lanes) and not lanes.all():
                self.matrix -= float(work[~lanes].sum())  # products of rows never stored
            return method(ptrs, value, mask, *rest)
        return run

    def _atomic(self, method: Any) -> Any:
        def run(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any) -> Any:
            lanes = np.broadcast_to(mask.data, np.shape(ptr.data)).astype(bool)
            self._note(self.loads, ptr, lanes)
            self._note(self.stores, ptr, lanes)
            if getattr(val, "dtype", None) is not None and val.dtype.is_floating():
                self.vector += float(np.count_nonzero(lanes))
            return method(op, ptr, val, mask, *rest)
        return run

    def _descriptor(self, method: Any) -> Any:
        def run(*args: Any) -> Any:
            self.descriptors = True
            return method(*args)
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
            if handle.dtype.scalar.is_floating() and not count._quiet:
                valid = _valid(handle)
                data = np.asarray(handle.data)
                axis = ops.axis
                if valid is None:
                    valid = np.ones(data.shape, dtype=bool)
                kept = valid.any(axis=axis) if axis is not None else valid.any()
                count.vector += float(np.count_nonzero(valid) - np.count_nonzero(kept))
                if not np.all(kept):
                    for result in out if isinstance(out, (list, tuple)) else (out,):
                        _mark(getattr(result, "handle", None), kept)
            return out
        return apply_impl

    def _scan(self, original: Any) -> Any:
        count = self

        def apply_impl(ops: Any, inputs: Any) -> Any:
            out = count._quietly(original, ops, inputs)
            handle = inputs[0].handle
            if handle.dtype.scalar.is_floating() and not count._quiet:
                count.vector += float(_lanes(handle, _valid(handle)))
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

"""Which tensor arguments a Triton kernel reads and which it writes, from its source.

Where no interpreter runs the launch (a GPU, meta tensors), the bytes of a launch are its
tensor arguments: each read once if the kernel loads through it, written once if it stores
through it, both when it does both (an in-place kernel moves the tensor twice). A pointer
argument's uses are followed through the kernel's assignments (``x_ptr += row * stride``,
``ptrs = x_ptr + offsets``) to the ``tl.load`` / ``tl.store`` / ``tl.atomic_*`` calls whose
pointer they are. A tensor argument the source does not show read or written (a helper
function does it, or the source is unavailable) is charged once, as read.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterator
from typing import Any

from .. import dtypes
from . import _kernels as K

_READS = frozenset({"load"})
_WRITES = frozenset({"store"})
_BOTH = frozenset({"atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or",
                   "atomic_xor", "atomic_xchg", "atomic_cas"})
#: kernel function -> (arguments read, arguments written), or None (no source)
_SEEN: dict[Any, tuple[frozenset[str], frozenset[str]] | None] = {}


def directions(fn: Any) -> tuple[frozenset[str], frozenset[str]] | None:
    """The parameters of *fn* it loads through and those it stores through (cached)."""
    if fn in _SEEN:
        return _SEEN[fn]
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        _SEEN[fn] = None
        return None
    found = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if found is None:
        _SEEN[fn] = None
        return None
    params = [a.arg for a in (*found.args.posonlyargs, *found.args.args,
                              *found.args.kwonlyargs)]
    taint: dict[str, set[str]] = {p: {p} for p in params}

    def of(node: ast.AST | None) -> set[str]:
        names: set[str] = set()
        if node is None:
            return names
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                names |= taint.get(sub.id, set())
        return names

    changed = True
    while changed:  # to a fixed point: assignments in loops feed each other
        changed = False
        for target, value in assignments(found):
            source = of(value)
            if not source:
                continue
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    held = taint.setdefault(sub.id, set())
                    if not source <= held:
                        held |= source
                        changed = True
    reads: set[str] = set()
    writes: set[str] = set()
    for node in ast.walk(found):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else "")
        pointer = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "pointer"), None)
        if name in _READS or name in _BOTH:
            reads |= of(pointer)
        if name in _WRITES or name in _BOTH:
            writes |= of(pointer)
    result = (frozenset(reads), frozenset(writes))
    _SEEN[fn] = result
    return result


#: Precisions a kernel's products may run in; index, pointer and count arrays (int16, int32,
#: int64, bool) are not what its arithmetic runs in.
_COMPUTED = frozenset({"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8",
                       "int4"})


def tensor_bytes(kernel: Any, bound: dict[str, Any]) -> tuple[float, str | None]:
    """Bytes of the launch's tensor arguments, each once per direction the kernel moves it
    (see the module docstring), and the precision its FLOPs are priced in where nothing
    says which: the narrowest of its tensors' floating (or int8) precisions, the fastest
    peak among them, so the bound stays a lower bound (an fp8 GEMM writing fp16 is fp8; an
    fp16 attention with an fp32 log-sum-exp is fp16; pointer and index arrays never count);
    None with no such tensor."""
    import torch

    fn = getattr(kernel, "fn", None)
    moves = directions(fn) if fn is not None else None
    ways: dict[int, tuple[bool, bool]] = {}  # tensor -> (read, written)
    sizes: dict[int, int] = {}
    dtype: str | None = None
    for name, value in bound.items():
        tensor = value if isinstance(value, torch.Tensor) else getattr(value, "base", value)
        if not isinstance(tensor, torch.Tensor):
            continue
        key = id(tensor)
        sizes[key] = tensor.numel() * tensor.dtype.itemsize
        found = K.precision(tensor.dtype)
        if found in _COMPUTED and (dtype is None or dtypes.ITEMSIZE[found] < dtypes.ITEMSIZE[
                dtype]):
            dtype = found
        read, written = ways.get(key, (False, False))
        if moves is None:
            ways[key] = (True, written)
        else:
            ways[key] = (read or name in moves[0], written or name in moves[1])
    total = 0
    for key, (read, written) in ways.items():
        total += sizes[key] * (int(read) + int(written) or 1)
    return float(total), dtype


def assignments(tree: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """(target, value) of every assignment in *tree*: ``=`` (each target), ``+=`` and the
    annotated kind; what a kernel's data flows through, for the fixed points over them."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            yield from ((target, node.value) for target in node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            yield node.target, node.value

"""A Triton launch the interpreter did not run, counted by replaying it once in Triton's
interpreter: ``wrap_triton`` under ``torch.compile`` or export and the
``triton_kernel_wrapper_mutation`` operator on meta or fake tensors, a ``triton_op``'s
launches there, and compiled launches on a GPU.

* **The replay** runs the kernel's Python function in the interpreter (its interpreted twin
  where the process compiles kernels: :mod:`._triton_compat`) on CPU tensors of the
  launch's shapes, dtypes, strides and storage offsets (tensors that share storage in the
  launch share it in the replay, so a tensor read twice is read once), with its scalars,
  constexprs and grid as launched, counted as an interpreted launch is
  (:mod:`._triton_count`): the same FLOPs and bytes.
* **Cached** per kernel function, argument signature (each tensor's dtype, shape, strides,
  offset and which storage it shares; each other argument's value), constexprs and grid:
  a launch replays once, the same launch again costs a dictionary look-up. The cache keeps
  a replay's figures, not the addresses it touched.
* **Stand-in data**: the tensors hold 1.0 (floating point; no NaN from a log or a square
  root of it) and 0 (integers and booleans: an index read from them stays in bounds). Where
  the kernel's work depends on values it reads (a loaded value in a pointer, a mask or a
  branch: index and pointer arrays, masks from values), the count is the stand-in data's
  and the launch says so. A kernel that loads pointers from memory (``tl.pointer_type``)
  is not replayed: a stand-in pointer would be read as an address.
* A replay that fails (an operation the interpreter lacks, say) leaves the launch unknown
  by name, and why is noted; so does a launch whose tensors hold more than
  :data:`MAX_BYTES` (64 MiB): the interpreter would take minutes over it.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import inspect
import sys
import textwrap
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from . import _triton_compat as TC
from . import _triton_count as _C
from . import _triton_source as _S

#: Replays kept (least recently used dropped first).
_KEEP = 256
#: The most storage a replay's stand-in tensors may hold: the interpreter runs each program
#: in Python, ~1 s per million elements moved, so a launch past this (a meta trace at a
#: full model's shapes) would run for minutes; it is left unknown, to be given a formula.
MAX_BYTES = 64 << 20
_CACHE: OrderedDict[Any, Replayed] = OrderedDict()
_DEPENDS: dict[Any, tuple[bool, bool]] = {}
_DEPTH = [0]  # > 0 while a replay runs: its own launch is not watched


@dataclasses.dataclass(frozen=True)
class Replayed:
    """One replay's outcome: the count, or why there is none; *standin*: the count is the
    stand-in data's (the kernel's work depends on values it reads)."""

    count: _C.Count | None
    standin: bool = False
    failed: str | None = None


def replaying() -> bool:
    """True while a replay runs (its launch is the replay's, not the program's)."""
    return _DEPTH[0] > 0


@contextlib.contextmanager
def _running() -> Iterator[None]:
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1


def replay(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
           grid: Callable[[], tuple[int, ...]]) -> Replayed:
    """The launch ``kernel[grid()](*args, **kwargs)`` replayed in the interpreter on stand-in
    CPU tensors, or taken from the cache (see the module docstring)."""
    fn = getattr(kernel, "fn", None)
    if not callable(fn):
        return Replayed(None, failed="no Python function to replay")
    try:
        size = grid()
    except Exception as exc:  # the launch's grid function, given its arguments
        return Replayed(None, failed=f"its grid could not be worked out: {_why(exc)}")
    try:
        storages: list[Any] = []
        key = (fn, _signature(args, storages),
               _signature(tuple(sorted(kwargs.items())), storages), size)
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    result = _replay(kernel, fn, args, kwargs, size)
    if key is not None:
        _CACHE[key] = result
        while len(_CACHE) > _KEEP:
            _CACHE.popitem(last=False)
    return result


def _replay(kernel: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
            size: tuple[int, ...]) -> Replayed:
    depends, pointers = dependence(fn)
    if pointers:
        return Replayed(None, failed="it loads pointers from memory (tl.pointer_type)")
    try:
        twin = TC.interpreted(kernel)
    except Exception as exc:  # no source, a Triton without the interpreter
        return Replayed(None, failed=_why(exc))
    held = _held(args, kwargs)
    if held > MAX_BYTES:
        return Replayed(None, failed=f"its tensors hold {held / 2**20:.0f} MiB, past the "
                                     f"{MAX_BYTES >> 20} MiB a replay takes (give it a formula)")
    from ._torch_compat import real_tensors

    with real_tensors():  # inside torch.compile's or export's fake mode too
        standins = _Standins()
        try:
            cpu_args = tuple(standins.of(a) for a in args)
            cpu_kwargs = {k: standins.of(v) for k, v in kwargs.items()}
        except Exception as exc:  # a tensor with no CPU twin (a sparse one, say)
            return Replayed(None, failed=_why(exc))
        count = _C.Count()
        try:
            with _running(), TC.interpreting(), count:
                twin.run(*cpu_args, grid=size, warmup=False, **cpu_kwargs)
        except Exception as exc:  # the interpreter's refusal: the launch stays unknown
            return Replayed(None, failed=_why(exc))
    return Replayed(_settled(count), standin=depends)


def _settled(count: _C.Count) -> _C.Count:
    """*count* as the cache keeps it: its distinct bytes worked out once (every launch
    served from the cache would otherwise sort its addresses again), the addresses let go."""
    moved = count.nbytes()
    setattr(count, "nbytes", lambda: moved)  # noqa: B010
    count.loads, count.stores, count.pending = {}, {}, 0
    return count


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 120 else text[:117] + "..."
    return f"the replay failed: {type(exc).__name__}: {text}"


# -- the stand-in tensors -------------------------------------------------------------------


def _held(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """The bytes of the distinct storages of a launch's tensors."""
    storages: list[Any] = []
    _signature((args, tuple(kwargs.values())), storages)
    return sum(int(storage.nbytes()) for storage in storages)


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _signature(value: Any, storages: list[Any]) -> Any:
    """What a launch's argument contributes to the cache key (*storages*: those seen so
    far, a tensor's entry says which it shares)."""
    if _is_tensor(value):
        storage = value.untyped_storage()
        shared = next((i for i, seen in enumerate(storages) if seen is storage), None)
        if shared is None:
            shared = len(storages)
            storages.append(storage)
        return ("tensor", str(value.dtype), tuple(value.shape), tuple(value.stride()),
                value.storage_offset(), shared, storage.nbytes())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a TensorDescriptor
        return (type(value).__name__, *(_signature(getattr(value, f.name), storages)
                                        for f in dataclasses.fields(value)))
    base = getattr(value, "base", None)
    if base is not None and _is_tensor(base):  # triton.reinterpret's wrapper
        return ("wrapped", str(getattr(value, "dtype", "")), _signature(base, storages))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, *(_signature(v, storages) for v in value))
    return (type(value).__name__, value)


class _Standins:
    """CPU tensors for a launch's tensors: same dtype, shape, strides and offset; one
    buffer per storage of the launch, so aliases stay aliases."""

    def __init__(self) -> None:
        self._buffers: list[tuple[Any, Any]] = []  # (the launch's storage, its stand-in)

    def _buffer(self, tensor: Any) -> Any:
        import torch

        storage = tensor.untyped_storage()
        for seen, buffer in self._buffers:
            if seen is storage:
                return buffer
        filler = torch.empty(-(-storage.nbytes() // tensor.dtype.itemsize), dtype=tensor.dtype)
        if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
            filler.fill_(1.0)
        else:
            filler.zero_()
        buffer = filler.untyped_storage()
        self._buffers.append((storage, buffer))
        return buffer

    def of(self, value: Any) -> Any:
        """*value* with every tensor in it replaced by its stand-in."""
        import torch

        if isinstance(value, torch.Tensor):
            out = torch.empty(0, dtype=value.dtype)
            return out.set_(self._buffer(value), value.storage_offset(), value.shape,
                            value.stride())
        base = getattr(value, "base", None)
        if isinstance(base, torch.Tensor) and hasattr(value, "dtype"):  # triton.reinterpret
            return sys.modules["triton"].reinterpret(self.of(base), value.dtype)
        if dataclasses.is_dataclass(value) and not isinstance(value, type) and isinstance(
                getattr(value, "base", None), torch.Tensor):  # a host TensorDescriptor
            return dataclasses.replace(value, base=self.of(base))  # type: ignore[type-var]
        if isinstance(value, tuple):
            return type(value)(self.of(v) for v in value) if not hasattr(
                value, "_fields") else type(value)(*(self.of(v) for v in value))
        return value


# -- whether the work depends on the data -----------------------------------------------------

_LOADS = frozenset({"load", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                    "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas", "gather"})
_MOVES = _LOADS | {"store"}


def _called(node: ast.AST) -> str:
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else (
        func.id if isinstance(func, ast.Name) else "")


def dependence(fn: Any) -> tuple[bool, bool]:
    """Whether *fn*'s work depends on values it loads (a loaded value reaches a pointer, a
    mask, a branch or a loop bound), and whether it loads pointers from memory; from its
    source, cached (no source: neither)."""
    if fn in _DEPENDS:
        return _DEPENDS[fn]
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        _DEPENDS[fn] = (False, False)
        return _DEPENDS[fn]
    found = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if found is None:
        _DEPENDS[fn] = (False, False)
        return _DEPENDS[fn]
    tainted: set[str] = set()

    def loaded(node: ast.AST | None) -> bool:
        if node is None:
            return False
        return any((isinstance(sub, ast.Name) and sub.id in tainted) or _called(sub) in _LOADS
                   for sub in ast.walk(node))

    changed = True
    while changed:  # to a fixed point: assignments in loops feed each other
        changed = False
        for target, value in _S.assignments(found):
            if not loaded(value):
                continue
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name) and sub.id not in tainted:
                    tainted.add(sub.id)
                    changed = True
    depends = False
    for node in ast.walk(found):
        if (isinstance(node, (ast.If, ast.While)) and loaded(node.test)) or (
                isinstance(node, ast.For) and loaded(node.iter)):
            depends = True
        elif _called(node) in _MOVES:
            assert isinstance(node, ast.Call)
            pointer = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg == "pointer"), None)
            mask = node.args[1] if _called(node) == "load" and len(node.args) > 1 else (
                node.args[2] if _called(node) == "store" and len(node.args) > 2 else next(
                    (k.value for k in node.keywords if k.arg == "mask"), None))
            if loaded(pointer) or loaded(mask):
                depends = True
    pointers = "pointer_type" in source
    _DEPENDS[fn] = (depends, pointers)
    return _DEPENDS[fn]

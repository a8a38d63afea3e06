"""Record what a PyTorch callable runs: one kernel per aten op.

A ``TorchDispatchMode`` sees every aten op below autograd, on real, ``meta`` or fake tensors
(on meta nothing is computed; only shapes and dtypes flow). ``scaled_dot_product_attention``
is caught one level up by a ``TorchFunctionMode``: below it the call decomposes (on meta into
bmm, softmax and masking; on CPU into a fused kernel torch's flop counter does not know), and
``is_causal`` can only be read at the function's own call. Its decomposition is not recorded.

Module paths (``layers.0.mlp.up_proj``) come from global forward pre-hooks and hooks, named
after the modules found in the callable (an ``nn.Module`` or a bound method of one), its
closure and its arguments.

Eager torch runs op by op, so each op's inputs are read from and its outputs written to
memory (fusion policy ``"none"``). View and metadata ops (``view``, ``t``, ``expand``,
``_unsafe_view``, ``detach``, ...) move no data and make no kernel.
"""

from __future__ import annotations

import contextlib
import inspect
import types as types_
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..engine.workload import Kernel
from ..ops import _family as R
from . import _aten as A
from . import _attention as AT
from . import _compiled, _higher_order, _scalar_reads, _torch_mesh, _triton, registry
from . import _kernels as K
from . import _torch_args as T
from . import _torch_compat as C
from . import known_ops as _shipped  # noqa: F401  (registers the shipped formulas)
from ._base import Recording, captured
from ._mesh import AxisLink


class _Pause:
    """While entered, one more pause of *recorder* (*step* 1) or one fewer (*step* -1); the
    count is restored on exit, whether the body returned or raised."""

    __slots__ = ("recorder", "step")

    def __init__(self, recorder: Recorder, step: int) -> None:
        self.recorder, self.step = recorder, step

    def __enter__(self) -> None:
        self.recorder._pauses += self.step

    def __exit__(self, *exc: object) -> None:
        self.recorder._pauses -= self.step


class Recorder:
    """Collects kernels while its modes are active (see :func:`record`).

    ``unknown`` counts the calls of ops with no formula (recorded with their bytes only).
    With ``body=True`` (a ``trace=True`` test body) tensor factories and RNG fills are left
    out, counted in ``left_out``. With ``filtered=True`` only ops run inside a call of a
    traced callable are recorded: while ``inside`` > 0 (a traced module's forward, a traced
    torch function), or while the code of a traced Python function (``codes``) is on the
    calling thread's stack.
    """

    def __init__(self, names: dict[int, str], dtype: str | None,
                 links: dict[str, AxisLink] | None = None, *, body: bool = False,
                 filtered: bool = False, formulas: registry.Formulas | None = None,
                 codes: frozenset[types_.CodeType] = frozenset()) -> None:
        self.kernels: list[Kernel] = []
        self.formulas = formulas  # a Tracer's own (Tracer(formulas=...))
        self.links = links or {}
        self.unknown: dict[str, int] = {}
        self.left_out: dict[str, int] = {}
        self.dtensors = _torch_mesh.DTensors()
        self.names = names
        self.path: list[str] = []
        self._pauses = 0  # > 0 while paused (inside a call recorded at function level)
        self.dtype = dtype
        self.body = body
        self.filtered = filtered
        self.inside = 0
        self.codes = codes  # the code objects of traced Python functions (trace=fn)
        self.launches: Any = None  # the session's Triton launches (see _triton)
        self.assumed: dict[str, int] = {}  # what the trace assumed where a value was unknown
        self.reads = _scalar_reads.Reads()  # values read of meta tensors (the policy there)

    @property
    def is_paused(self) -> bool:
        """Whether the recorder is paused (see :meth:`paused`)."""
        return self._pauses > 0

    def paused(self) -> _Pause:
        """While entered, nothing is recorded: the steps of a call priced at its own level
        (SDPA), a Triton launch's copies, a timing loop's calls, an outer recording while an
        inner one runs. Pauses nest; each is undone on exit, raised or not."""
        return _Pause(self, 1)

    def unpaused(self) -> _Pause:
        """Inside :meth:`paused`, one call recorded all the same (the first call of a timing
        loop): while entered, the innermost pause is lifted."""
        return _Pause(self, -1)

    @property
    def recording(self) -> bool:
        if self.is_paused:
            return False
        if self.inside > 0 or not self.filtered:
            return True
        return bool(self.codes) and running(self.codes)

    # -- module paths ------------------------------------------------------------------------

    def enter(self, module: torch.nn.Module, args: object) -> None:
        name = self.names.get(id(module))
        if name is None:  # a module not reached from fn: named by its class
            parent = self.path[-1] if self.path else ""
            name = f"{parent}.{type(module).__name__}" if parent else type(module).__name__
        self.path.append(name)

    def leave(self, module: torch.nn.Module, args: object, output: object) -> None:
        if self.path:
            self.path.pop()

    def label(self, op: str) -> str:
        """The kernel name of *op* at the current module path (``layers.0.mlp.mm``)."""
        where = self.path[-1] if self.path else ""
        return f"{where}.{op}" if where else op

    def assume(self, what: str) -> None:
        """Note a value the trace could not read and assumed (named on the Workload)."""
        self.assumed[what] = self.assumed.get(what, 0) + 1

    def leave_out(self, what: str, count: int = 1) -> None:
        self.left_out[what] = self.left_out.get(what, 0) + count

    def mark(self) -> tuple[int, dict[str, int], dict[str, int]]:
        """Where the recording stands: its kernel count and what it has named so far."""
        return len(self.kernels), dict(self.unknown), dict(self.assumed)

    def keep_only(self, start: tuple[int, dict[str, int], dict[str, int]],
                  end: tuple[int, dict[str, int], dict[str, int]], what: str) -> None:
        """Keep what was recorded between the marks *start* and *end* (one call: the work
        the test means); the other kernels are counted in ``left_out`` as *what*."""
        def between(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
            return {k: n - before.get(k, 0) for k, n in after.items() if n > before.get(k, 0)}

        outside = len(self.kernels) - (end[0] - start[0])
        self.kernels = self.kernels[start[0]:end[0]]
        self.unknown, self.assumed = between(start[1], end[1]), between(start[2], end[2])
        if outside > 0:
            self.leave_out(what, outside)

    def result(self, *, footprint: float) -> Recording:
        """What it recorded so far, as every recording gives it (*footprint*: the bytes
        resident, at least; 0 where not known)."""
        return Recording(kernels=tuple(self.kernels), footprint=footprint,
                         unknown=self.unknown, assumed=self.assumed, left_out=self.left_out)

    # -- ops ---------------------------------------------------------------------------------

    def op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: object) -> None:
        if self.dtensors.seen and self.dtensors.is_bookkeeping(
                T.operands(args, kwargs),
                list(T.tensors(out))):
            return  # DTensor's host-side work (see _torch_mesh)
        if func.namespace == "prim":  # prim.device and co: metadata
            return
        op = func.overloadpacket.__name__
        namespace = func.namespace
        if namespace in _torch_mesh.NAMESPACES:  # a collective: link bytes
            kernel = _torch_mesh.kernel(self.label(op), op, namespace, args, out, self.links)
            if kernel is not None:
                self.kernels.append(kernel)
            return
        if namespace != "aten":
            self._custom(f"{namespace}::{op}", args, kwargs, out)
            return
        formula = registry.lookup(f"aten::{op}", self.formulas)
        if formula is not None:
            self.record_formula(f"aten::{op}", formula, args, kwargs, out)
            return
        base = op.rstrip("_") if not op.startswith("__") else op.strip("_")
        cls = A.classify(base, pointwise=torch.Tag.pointwise in func.tags,
                         is_view=func.is_view)
        if cls == "view":
            return
        inputs = T.operands(args, kwargs, func)
        if self.body and (base in A.RNG or (not inputs and cls == "copy")):
            self.leave_out("RNG fill" if base in A.RNG else "tensor factory")
            return
        outputs = list(T.tensors(out))
        flops = 0.0
        if cls == "unknown":
            self.unknown[f"aten::{op}"] = self.unknown.get(f"aten::{op}", 0) + 1
        elif cls == "matrix" or cls == "vector":
            call = A.Call(op=op, base=base, func=func, args=args, kwargs=kwargs, inputs=inputs,
                          outputs=outputs, name=self.label(op), dtype=self.dtype)
            if cls == "matrix":
                self.kernels.extend(A.matrix_kernels(call))
                return
            flops = A.vector_flops(call)
        self.kernels.append(K.vector(self.label(op), flops=flops,
                                     nbytes=A.moved(op, base, inputs, outputs),
                                     dtype=T.precision(outputs[0]) if outputs else (
                                         T.precision(inputs[0]) if inputs else None)))

    def _custom(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                out: object) -> None:
        """A ``torch.library`` op: counted by its registered formula, else unknown."""
        formula = registry.lookup(name, self.formulas)
        if formula is not None:
            self.record_formula(name, formula, args, kwargs, out)
            return
        self.unknown[name] = self.unknown.get(name, 0) + 1
        inputs = T.operands(args, kwargs)
        outputs = list(T.tensors(out))
        self.kernels.append(K.vector(self.label(name), flops=0.0,
                                     nbytes=T.nbytes(inputs, outputs),
                                     dtype=T.precision(outputs[0]) if outputs else None))

    def record_formula(self, name: str, formula: registry.Formula, args: tuple[Any, ...],
                 kwargs: dict[str, Any], out: object = None,
                 nbytes: Callable[[], float] | None = None) -> None:
        """The kernels of *formula* for one call; a formula may give FLOPs alone, the bytes
        then those the call implies (*nbytes*, or its tensors in and *out*)."""
        where = self.path[-1] if self.path else ""
        if nbytes is None:
            def nbytes() -> float:
                return T.nbytes(T.operands(args, kwargs), T.tensors(out))
        outputs = list(T.tensors(out))
        inputs = T.operands(args, kwargs)
        dtype = self.dtype or (T.precision(outputs[0]) if outputs else (
            T.precision(inputs[0]) if inputs else None))
        kernels, unknown = registry.apply(name, formula, where, args, kwargs, nbytes=nbytes,
                                          dtype=dtype)
        self.kernels.extend(kernels)
        for op, calls in unknown.items():
            self.unknown[op] = self.unknown.get(op, 0) + calls

    def sdpa(self, args: tuple[Any, ...], kwargs: dict[str, Any], out: object) -> None:
        """``F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, ...)``."""
        bound = dict(zip(("query", "key", "value", "attn_mask", "dropout_p", "is_causal"),
                         args, strict=False)) | kwargs
        q, k, v, mask = bound["query"], bound["key"], bound["value"], bound.get("attn_mask")
        causal = bool(bound.get("is_causal", False))
        inputs = [t for t in (q, k, v, mask) if isinstance(t, torch.Tensor)]
        self.attention("scaled_dot_product_attention", q, k, v, causal=causal,
                       nbytes=T.nbytes(inputs, T.tensors(out)))

    def rmsnorm(self, args: tuple[Any, ...], kwargs: dict[str, Any], out: object) -> None:
        """``F.rms_norm(input, normalized_shape, weight, eps)``: one fused kernel, as
        ``ops.rmsnorm`` prices it (torch decomposes it into fp32 steps on meta and CPU)."""
        bound = dict(zip(("input", "normalized_shape", "weight", "eps"), args,
                         strict=False)) | kwargs
        x, weight = bound["input"], bound.get("weight")
        inputs = [t for t in (x, weight) if isinstance(t, torch.Tensor)]
        flops = R.norm_flops("rmsnorm", float(x.numel()), weight=weight is not None,
                             bias=False)
        self.kernels.append(K.vector(self.label(F.rms_norm.__name__), flops=flops,
                                     nbytes=T.nbytes(inputs, T.tensors(out)),
                                     dtype=T.precision(x)))

    def attention(self, op: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                  causal: bool, nbytes: float) -> None:
        call = A.Call(op=op, base=op, func=None, args=(), kwargs={}, inputs=[], outputs=[],
                      name=self.label(op), dtype=self.dtype)
        pairs = AT.scored(op, q, k, {"is_causal": causal})
        self.kernels.extend(AT.attention(call, q, k, v, pairs=pairs, nbytes=nbytes))


class _Dispatch(C.DispatchMode):  # type: ignore[misc]
    supports_higher_order_operators = True  # cond, while_loop, wrap_triton: _higher_order

    def __init__(self, recorder: Recorder, targets: frozenset[Any] = frozenset()) -> None:
        super().__init__()
        self.recorder = recorder
        self.targets = targets  # ops traced by name (``trace=torch.ops.mylib.fancy``)

    @_compiled.never_compiled
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if _higher_order.is_higher_order(func):
            return _higher_order.dispatch(self, func, args, kwargs)
        if func.namespace == "aten" and not func.is_view:  # aten::matmul in a cond branch
            parts = _higher_order.decomposed(self, func, args, kwargs)
            if parts is not NotImplemented:
                return parts
        if self.recorder.dtensors.declines(args, kwargs):
            return NotImplemented  # DTensor runs it: its local ops come back here
        recorder = self.recorder
        if func in _scalar_reads.FUNCS and _scalar_reads.watches(func, args, kwargs):
            return recorder.reads.answer(recorder, func, args)  # .item() of meta: the policy
        launched = _triton.launches_in(recorder, func)
        if launched is None:
            launches = recorder.launches
            if launches is not None and not launches.watching:
                launches = None  # triton not imported: no launch to watch for
            mark = launches.logged() if launches is not None else 0
            out = func(*args, **kwargs)
            if func.overloadpacket in _scalar_reads.ALL:
                recorder.reads.note(func, out)
            if launches is not None and launches.logged() != mark:
                # an aten op overridden in Python that launched Triton kernels: one count
                if not _counts_itself(recorder, func):
                    return out  # an op the tracer cannot count: its launches are its work
                launches.forget(mark)  # the op's formula covers the kernels it launched
        else:  # a custom op that may launch Triton kernels: they are its kernels
            with launched:
                out = func(*args, **kwargs)
            if launched.ran:
                return out
        if self.targets and (func in self.targets or func.overloadpacket in self.targets):
            recorder.inside += 1
            try:
                if not recorder.is_paused:
                    recorder.op(func, args, kwargs, out)
            finally:
                recorder.inside -= 1
            return out
        if recorder.recording:
            if recorder.body and _in_testing():
                recorder.leave_out("comparison")
            else:
                recorder.op(func, args, kwargs, out)
        return out


def _counts_itself(recorder: Recorder, func: Any) -> bool:
    """Whether the tracer counts the aten op *func* by a formula of its own (a built-in
    one, register_op's or the tracer's), not only by its bytes."""
    op = func.overloadpacket.__name__
    if registry.lookup(f"aten::{op}", recorder.formulas) is not None:
        return True
    base = op.rstrip("_") if not op.startswith("__") else op.strip("_")
    return A.classify(base, pointwise=torch.Tag.pointwise in func.tags,
                      is_view=func.is_view) != "unknown"


def _in_testing() -> bool:
    """True when ``torch.testing`` (``assert_close`` and co) is on the Python call stack."""
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("torch.testing"):
            return True
        frame = frame.f_back
    return False


#: ``torch.overrides.redispatch_function`` (torch >= 2.12): runs a function's body past its
#: own ``__torch_function__`` check, so the mode can stay entered for the calls inside.
_REDISPATCH = getattr(torch.overrides, "redispatch_function", None)

#: Modules of Python-level torch functions that call other torch functions (SDPA inside
#: ``F.multi_head_attention_forward``). Tensor methods written in Python call their C
#: method, which dispatches again: they are left alone.
_NESTING = frozenset({"torch.nn.functional", "torch.functional"})

#: Torch functions priced at their call as one fused op (the recorder's method of that
#: name), not as the steps they decompose into on meta: SDPA (``is_causal`` is read there)
#: and RMS norm.
_FUSED = {F.scaled_dot_product_attention: "sdpa", F.rms_norm: "rmsnorm"}

#: Comparisons a ``trace=True`` body makes to check a result (not the kernel under test).
_COMPARISONS = ("allclose", "isclose", "equal")


class _Functions(TorchFunctionMode):  # type: ignore[misc]
    """SDPA at its call (``is_causal`` is read there); in a test body, reference
    comparisons left out; calls of traced torch functions opened (``trace=fn``).

    torch turns a function mode off while its handler runs: a Python-level function
    (``F.multi_head_attention_forward``) runs with the mode entered again, so the SDPA it
    calls is seen on meta and real tensors alike.
    """

    def __init__(self, recorder: Recorder, targets: frozenset[Any] = frozenset()) -> None:
        super().__init__()
        self.recorder = recorder
        self.targets = targets
        self.comparisons: frozenset[Any] = frozenset()
        if recorder.body:
            self.comparisons = frozenset(
                f for name in _COMPARISONS for f in (getattr(torch, name, None),
                                                     getattr(torch.Tensor, name, None))
                if f is not None)

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        recorder = self.recorder
        fused = _FUSED.get(func)
        if fused is not None and not recorder.is_paused:
            recording = recorder.recording
            with recorder.paused():
                out = func(*args, **kwargs)
            if recording or func in self.targets:
                getattr(recorder, fused)(args, kwargs, out)
            return out
        if func in self.comparisons:
            recorder.leave_out("comparison")
            with recorder.paused():
                return func(*args, **kwargs)
        opened = func in self.targets
        if opened:
            recorder.inside += 1
        try:
            if _REDISPATCH is not None and isinstance(func, types_.FunctionType) and (
                    func.__module__ in _NESTING):
                with self:  # a Python function calls torch functions in turn: keep watching
                    return _REDISPATCH(func, types, args, kwargs)
            return func(*args, **kwargs)
        finally:
            if opened:
                recorder.inside -= 1


def module_names(*roots: object) -> dict[int, str]:
    """``id(module) -> dotted path`` for the modules under each root that is a Module."""
    names: dict[int, str] = {}
    for root in roots:
        if isinstance(root, torch.nn.Module):
            for name, module in root.named_modules():
                names.setdefault(id(module), _compiled.module_path(name))
    return names


def roots_of(fn: Callable[..., Any], args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> list[object]:
    """Objects that may hold the modules *fn* runs: itself, its owner, closure, arguments."""
    return [fn, *captured(fn), *args, *kwargs.values()]


_ACTIVE: list[Recorder] = []


class Session:
    """The modes and hooks of one recording; a context manager (used by ``trace=True``).

    ``body=True``: a test body (factories, RNG fills and reference comparisons left out).
    ``targets``: record only while one of these runs (``trace=fn``): a Python function or
    method while its code is on the stack of the op's call (:func:`running`: no profile
    function is set, so cProfile, coverage and pytest-benchmark, which set their own, are
    left as they are), modules by their forward hooks, torch functions (``torch.softmax``)
    by the function mode, ops (``torch.ops.mylib.fancy``, ``torch.ops.aten.mm``) by the
    dispatch mode.
    """

    def __init__(self, names: dict[int, str], dtype: str | None,
                 links: dict[str, AxisLink] | None = None, *, body: bool = False,
                 targets: Iterable[object] = (),
                 formulas: registry.Formulas | None = None) -> None:
        targets = list(targets)
        codes = frozenset(code for t in targets if (code := _code(t)) is not None)
        self.recorder = Recorder(names, dtype, links, body=body, filtered=bool(targets),
                                 formulas=formulas, codes=codes)
        self._modules = {id(t) for t in targets if isinstance(t, torch.nn.Module)}
        functions = frozenset(t for t in targets if not isinstance(t, torch.nn.Module)
                              and _code(t) is None)
        self._dispatch = _Dispatch(self.recorder, functions)
        self._functions = _Functions(self.recorder, functions)
        self._hooks: list[Any] = []
        self._launches = _triton.Launches(self.recorder)
        self.recorder.launches = self._launches
        self._eager = _compiled.Eager()  # torch.compile'd code runs as its eager code
        self._outer = contextlib.ExitStack()  # the pauses of the recordings it runs inside

    def _enter_module(self, module: torch.nn.Module, args: object) -> None:
        if id(module) in self._modules:
            self.recorder.inside += 1
        self.recorder.enter(module, args)

    def _leave_module(self, module: torch.nn.Module, args: object, output: object) -> None:
        self.recorder.leave(module, args, output)
        if id(module) in self._modules:
            self.recorder.inside -= 1

    def __enter__(self) -> Recorder:
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )

        self._outer = contextlib.ExitStack()
        for outer in _ACTIVE:  # a trace inside a recorded test body is counted once
            self._outer.enter_context(outer.paused())
        _ACTIVE.append(self.recorder)
        self._hooks = [register_module_forward_pre_hook(self._enter_module),
                       register_module_forward_hook(self._leave_module, always_call=True)]
        self._eager.__enter__()
        self._launches.__enter__()
        self._functions.__enter__()
        self._dispatch.__enter__()
        return self.recorder

    def __exit__(self, *exc: object) -> None:
        try:
            self._dispatch.__exit__(*exc)
            self._functions.__exit__(*exc)
        finally:
            self._launches.__exit__(*exc)
            self._eager.__exit__(*exc)
            for hook in self._hooks:
                hook.remove()
            self._hooks = []
            _ACTIVE.remove(self.recorder)
            self._outer.close()


def running(codes: frozenset[types_.CodeType]) -> bool:
    """Whether a frame running one of *codes* is on the calling thread's stack (the caller's
    frames only: a few microseconds an op, paid by ``trace=fn`` alone)."""
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _code(target: object) -> Any:
    """The code object a Python function or method runs (None for anything else)."""
    function = getattr(target, "__func__", target)
    code = getattr(function, "__code__", None)
    return code if isinstance(code, types_.CodeType) else None


def record(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           dtype: str | None, links: dict[str, AxisLink] | None = None,
           formulas: registry.Formulas | None = None) -> Recording:
    """Run ``fn(*args, **kwargs)`` and return what it ran, one kernel per op, with its
    footprint (:func:`footprint`)."""
    session = Session(module_names(*roots_of(fn, args, kwargs)), dtype, links,
                      formulas=formulas)
    with session:
        fn(*args, **kwargs)
    return session.recorder.result(footprint=footprint(fn, args, kwargs))


def footprint(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> float:
    """Bytes resident while *fn* runs, at least: its modules' parameters and buffers and its
    tensor arguments (activations it creates come on top)."""
    seen: set[int] = set()
    total = 0
    tensors: list[torch.Tensor] = []
    for root in roots_of(fn, args, kwargs):
        if isinstance(root, torch.nn.Module):
            tensors.extend(root.parameters())
            tensors.extend(root.buffers())
    tensors.extend(T.tensors(list(args) + list(kwargs.values())))
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.dtype.itemsize
    return float(total)

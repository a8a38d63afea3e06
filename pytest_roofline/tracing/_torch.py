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

import inspect
import math
import sys
import types as types_
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..ops import _family as R
from ..workload import Kernel
from . import _aten as A
from . import _kernels as K
from . import _torch_args as T
from . import _torch_mesh, registry
from ._base import captured
from ._mesh import AxisLink

#: In-place ops that write their first operand without reading it.
_OVERWRITE = frozenset({"copy_", "fill_", "zero_", "normal_", "uniform_", "random_",
                        "bernoulli_", "exponential_", "geometric_", "cauchy_", "log_normal_"})


def _moved(op: str, base: str, inputs: list[torch.Tensor],
           outputs: list[torch.Tensor]) -> float:
    """Bytes a vector, index or copy op moves (see :func:`_nbytes` for the general rule)."""
    if base in A.GATHER and inputs and outputs:
        source, rest = inputs[0], inputs[1:]
        rows = outputs[0].numel() * source.dtype.itemsize  # the gathered rows, read
        return float(rows) + T.nbytes(rest, outputs)
    if op.endswith("_") and base in A.SCATTER and len(inputs) >= 2:
        values = inputs[-1]
        return T.nbytes(inputs[1:], ()) + float(values.numel() * values.dtype.itemsize)
    if op in _OVERWRITE and inputs:
        return T.nbytes(inputs[1:], outputs)
    return T.nbytes(inputs, outputs)


class Recorder:
    """Collects kernels while its modes are active (see :func:`record`).

    ``unknown`` counts the calls of ops with no formula (recorded with their bytes only).
    With ``body=True`` (a ``trace=True`` test body) tensor factories and RNG fills are left
    out, counted in ``left_out``. With ``filtered=True`` only ops run while ``inside`` > 0
    (inside a call of a traced callable) are recorded.
    """

    def __init__(self, names: dict[int, str], dtype: str | None,
                 links: dict[str, AxisLink] | None = None, *, body: bool = False,
                 filtered: bool = False) -> None:
        self.kernels: list[Kernel] = []
        self.links = links or {}
        self.unknown: dict[str, int] = {}
        self.left_out: dict[str, int] = {}
        self.dtensors = _torch_mesh.DTensors()
        self.names = names
        self.path: list[str] = []
        self.hidden = 0  # > 0 inside a call recorded at function level (SDPA)
        self.dtype = dtype
        self.body = body
        self.filtered = filtered
        self.inside = 0

    @property
    def recording(self) -> bool:
        return not self.hidden and (self.inside > 0 or not self.filtered)

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

    def _name(self, op: str) -> str:
        where = self.path[-1] if self.path else ""
        return f"{where}.{op}" if where else op

    def leave_out(self, what: str) -> None:
        self.left_out[what] = self.left_out.get(what, 0) + 1

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
            kernel = _torch_mesh.kernel(self._name(op), op, namespace, args, out, self.links)
            if kernel is not None:
                self.kernels.append(kernel)
            return
        if namespace != "aten":
            self._custom(f"{namespace}::{op}", args, kwargs, out)
            return
        formula = registry.lookup(f"aten::{op}")
        if formula is not None:
            self._formula(f"aten::{op}", formula, args, kwargs)
            return
        base = op.rstrip("_") if not op.startswith("__") else op.strip("_")
        cls = A.classify(base, pointwise=torch.Tag.pointwise in func.tags,
                         is_view=func.is_view)
        if cls == "view":
            return
        inputs = T.operands(args, kwargs)
        if self.body and (base in A.RNG or (not inputs and cls == "copy")):
            self.leave_out("RNG fill" if base in A.RNG else "tensor factory")
            return
        outputs = list(T.tensors(out))
        if cls == "matrix":
            self._matrix(op, base, args, kwargs, func, inputs, outputs)
            return
        if cls == "unknown":
            self.unknown[f"aten::{op}"] = self.unknown.get(f"aten::{op}", 0) + 1
        flops = self._vector_flops(func, base, args, kwargs, inputs, outputs) if (
            cls == "vector" or base in A.SCATTER_ADD) else 0.0
        self.kernels.append(K.vector(self._name(op), flops=flops,
                                     nbytes=_moved(op, base, inputs, outputs),
                                     dtype=T.precision(outputs[0]) if outputs else (
                                         T.precision(inputs[0]) if inputs else None)))

    def _custom(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                out: object) -> None:
        """A ``torch.library`` op: counted by its registered formula, else unknown."""
        formula = registry.lookup(name)
        if formula is not None:
            self._formula(name, formula, args, kwargs)
            return
        self.unknown[name] = self.unknown.get(name, 0) + 1
        inputs = T.operands(args, kwargs)
        outputs = list(T.tensors(out))
        self.kernels.append(K.vector(self._name(name), flops=0.0,
                                     nbytes=T.nbytes(inputs, outputs),
                                     dtype=T.precision(outputs[0]) if outputs else None))

    def _formula(self, name: str, formula: registry.Formula, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        where = self.path[-1] if self.path else ""
        kernels, unknown = registry.apply(name, formula, where, args, kwargs)
        self.kernels.extend(kernels)
        for op, calls in unknown.items():
            self.unknown[op] = self.unknown.get(op, 0) + calls

    def _matrix(self, op: str, base: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                func: Any, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        if base in A.MATMUL:
            self._matmul(op, base, args, inputs, outputs)
        elif base in A.CONV:
            self._conv(op, args, inputs, outputs)
        elif base in A.CONV_BACKWARD:
            self._conv_backward(op, args, inputs, outputs)
        elif base in A.SDPA:
            self._sdpa_aten(op, func, args, kwargs, inputs, outputs)
        else:
            self._sdpa_backward(op, func, args, kwargs, inputs, outputs)

    def _vector_flops(self, func: Any, base: str, args: tuple[Any, ...],
                      kwargs: dict[str, Any], inputs: list[torch.Tensor],
                      outputs: list[torch.Tensor]) -> float:
        if not inputs or not outputs:
            return 0.0
        n_in, n_out = float(inputs[0].numel()), float(outputs[0].numel())
        if base in A.SOFTMAX:
            return R.softmax_flops(n_in)
        if base in A.SOFTMAX_BACKWARD:
            return R.SOFTMAX_BACKWARD_FLOPS * n_out
        if base in A.LAYER_NORMS:
            layer = base in ("native_layer_norm", "layer_norm")
            weight = _arg(args, 2) is not None if layer else _arg(args, 1) is not None
            bias = _arg(args, 3) is not None if layer else _arg(args, 2) is not None
            return R.norm_flops("layernorm", n_in, weight=weight, bias=bias)
        if base in A.BATCH_NORMS:
            return _batch_norm_flops(base, args, kwargs, n_in)
        if base in A.RMS_NORMS:
            return R.norm_flops("rmsnorm", n_in, weight=_arg(args, 2) is not None, bias=False)
        if base in A.NORM_BACKWARD:
            return R.NORM_BACKWARD_FLOPS * n_out
        if base in ("mv", "addmv"):  # a matrix-vector product: vector units, 2 per MAC
            matrix = args[1] if base == "addmv" else args[0]
            return 2.0 * float(matrix.numel())
        if base in ("dot", "vdot"):  # as ops.dot: n multiplies, n - 1 adds
            return 2.0 * n_in - 1.0
        if base in A.REDUCE_ONE:
            return R.reduce_flops(n_in, n_out)
        if base in A.SCAN:
            return R.scan_flops(n_in)
        if base in A.REDUCE_PER_ELEMENT:
            return A.REDUCE_PER_ELEMENT[base] * n_in
        if base in A.MAX_POOL or base in A.AVG_POOL:
            window = float(math.prod(_ints(_arg(args, 1), inputs[0].dim() - 2)))
            return R.pool_flops(n_out, window, average=base in A.AVG_POOL)
        if base in A.ADAPTIVE_POOL:
            return n_in if "avg" in base else R.reduce_flops(n_in, n_out)
        if base in A.UPSAMPLE:
            return R.interpolate_flops(n_out, A.UPSAMPLE[base])
        if base in A.SORT:
            length = inputs[0].shape[_dim(args, kwargs, inputs[0])] if inputs[0].dim() else 1
            return R.sort_flops(n_in, length)
        if base in A.TOPK:
            return R.top_k_flops(n_in)
        if base in A.EMBEDDING_BACKWARD:  # one add per element of grad_output
            return n_in
        if base in A.EMBEDDING_BAG:  # rows gathered (indices · dim), one add each
            return float(inputs[1].numel() * inputs[0].shape[-1]) if len(inputs) > 1 else 0.0
        if base in A.SCATTER_ADD:
            if base in ("index_put", "_index_put_impl") and not bool(
                    _arg(args, 3) or kwargs.get("accumulate")):
                return 0.0  # a plain write: no add
            return float(inputs[-1].numel())
        if base in R.ELEMENT_FLOPS:
            return R.element_flops(base, n_out)
        if torch.Tag.pointwise not in func.tags:
            return max(n_in, n_out)  # the table's other vector ops: 1 per element
        return n_out

    def _matmul(self, op: str, base: str, args: tuple[Any, ...], inputs: list[torch.Tensor],
                outputs: list[torch.Tensor]) -> None:
        # mm(a, b); addmm(bias, a, b); bmm(a, b); baddbmm(bias, a, b); _scaled_mm(a, b, ...);
        # _grouped_mm(a, b, offs); packed-weight products (x, w_packed, ...)
        a, b = (args[1], args[2]) if base in ("addmm", "baddbmm", "_addmm_activation",
                                              "addbmm") else (args[0], args[1])
        out = outputs[0]
        if base in ("_grouped_mm", "_scaled_grouped_mm") or base.startswith(
                ("_weight_int", "_dyn_quant")):
            # every output element is one dot product over the contraction; a 2-D x 2-D
            # grouped product splits the contraction (K) among the groups
            contraction = a.shape[-1] if not (a.dim() == 2 and b.dim() == 2 and out.dim() == 3
                                              ) else a.shape[-1] / max(out.shape[0], 1)
            macs = float(out.numel()) * float(contraction)
            weights = b if not base.startswith(("_weight_int", "_dyn_quant")) else None
        else:
            batch = math.prod(a.shape[:-2])
            macs = float(batch * a.shape[-2] * a.shape[-1] * b.shape[-1])
            weights = b
        dtype = self.dtype or (K.wider(T.precision(a), T.precision(weights)) if weights is not None
                               else T.precision(a))
        if base == "_int_mm" and self.dtype is None:
            dtype = "int8"
        self.kernels.append(K.matrix(self._name(op), macs=macs,
                                     nbytes=T.nbytes(inputs, outputs), dtype=dtype))

    def _conv(self, op: str, args: tuple[Any, ...], inputs: list[torch.Tensor],
              outputs: list[torch.Tensor]) -> None:
        x, w, out = args[0], args[1], outputs[0]
        transposed = bool(_arg(args, 6)) if op in ("convolution", "_convolution") else False
        # torch's count: 2 · batch · prod(weight) · prod(output spatial) (input spatial when
        # transposed); padded taps are counted, as torch counts them.
        spatial = x.shape[2:] if transposed else out.shape[2:]
        macs = float(x.shape[0] * math.prod(w.shape) * math.prod(spatial))
        dtype = self.dtype or K.wider(T.precision(x), T.precision(w))
        nbytes = T.nbytes(inputs, outputs)
        groups = _arg(args, 8) if op in ("convolution", "_convolution") else None
        if not transposed and isinstance(groups, int) and groups > 1 and w.shape[1] == 1:
            # depthwise: no reduction over channels to feed a matrix unit (as ops.conv2d)
            self.kernels.append(K.vector(self._name(op), flops=2.0 * macs, nbytes=nbytes,
                                         dtype=dtype))
            return
        self.kernels.append(K.matrix(self._name(op), macs=macs, nbytes=nbytes, dtype=dtype))

    def _conv_backward(self, op: str, args: tuple[Any, ...], inputs: list[torch.Tensor],
                       outputs: list[torch.Tensor]) -> None:
        """``convolution_backward(grad_out, input, weight, ..., output_mask)``: each gradient
        asked for (input's, weight's) costs the forward's multiply-accumulates, as torch's
        counter counts them; the bias gradient is a reduction of grad_out."""
        grad, x, w = args[0], args[1], args[2]
        transposed = bool(_arg(args, 6))
        spatial = x.shape[2:] if transposed else grad.shape[2:]
        forward = float(x.shape[0] * math.prod(w.shape) * math.prod(spatial))
        mask = _arg(args, 10) or (True, True, False)
        macs = forward * (int(bool(mask[0])) + int(bool(mask[1])))
        dtype = self.dtype or K.wider(T.precision(x), T.precision(w))
        self.kernels.append(K.matrix(self._name(op), macs=macs,
                                     nbytes=T.nbytes(inputs, outputs), dtype=dtype))

    def _sdpa_aten(self, op: str, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                   inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        bound = _bind(func, args, kwargs)
        causal = bool(bound.get("is_causal", False)) or bound.get("custom_mask_type") == 1
        mask = bound.get("attn_mask", bound.get("attn_bias", bound.get("bias")))
        self.attention(op, bound.get("query", args[0]), bound.get("key", args[1]),
                       bound.get("value", args[2]), causal=causal and mask is None,
                       nbytes=T.nbytes(inputs, outputs[:1]))

    def _sdpa_backward(self, op: str, func: Any, args: tuple[Any, ...],
                       kwargs: dict[str, Any], inputs: list[torch.Tensor],
                       outputs: list[torch.Tensor]) -> None:
        """Attention's backward: dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q over the
        scored pairs, twice the forward's products (as torch's counter counts them; a
        kernel that recomputes P adds Q·Kᵀ on top); dS = P·(dP - rowsum) is 3 FLOPs a pair
        on the vector units."""
        bound = _bind(func, args, kwargs)
        q, k, v = bound.get("query"), bound.get("key"), bound.get("value")
        if q is None or k is None or v is None:
            q, k, v = args[1], args[2], args[3]
        causal = bool(bound.get("is_causal", False)) or bound.get("custom_mask_type") == 1
        mask = bound.get("attn_mask", bound.get("attn_bias", bound.get("bias")))
        pairs = R.scored_pairs(q.shape[-2], k.shape[-2], causal=causal and mask is None,
                               align="top_left")
        scored = float(math.prod(q.shape[:-2])) * pairs
        name = self._name(op)
        self.kernels.append(K.matrix(name, macs=2.0 * scored * (q.shape[-1] + v.shape[-1]),
                                     nbytes=T.nbytes(inputs, outputs),
                                     dtype=self.dtype or T.precision(q)))
        self.kernels.append(K.vector(f"{name}.softmax", flops=R.ATTENTION_GRAD_FLOPS * scored,
                                     nbytes=0.0,
                                     dtype=T.precision(q)))

    def sdpa(self, args: tuple[Any, ...], kwargs: dict[str, Any], out: object) -> None:
        """``F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, ...)``."""
        bound = dict(zip(("query", "key", "value", "attn_mask", "dropout_p", "is_causal"),
                         args, strict=False)) | kwargs
        q, k, v, mask = bound["query"], bound["key"], bound["value"], bound.get("attn_mask")
        causal = bool(bound.get("is_causal", False))
        inputs = [t for t in (q, k, v, mask) if isinstance(t, torch.Tensor)]
        self.attention("scaled_dot_product_attention", q, k, v, causal=causal,
                       nbytes=T.nbytes(inputs, T.tensors(out)))

    def attention(self, op: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                  causal: bool, nbytes: float) -> None:
        q_len, kv_len = q.shape[-2], k.shape[-2]
        heads = float(math.prod(q.shape[:-2]))  # batch · query heads
        pairs = R.scored_pairs(q_len, kv_len, causal=causal, align="top_left")
        self.kernels.extend(K.attention(self._name(op), heads=heads, pairs=pairs,
                                        head_dim=q.shape[-1], value_dim=v.shape[-1],
                                        nbytes=nbytes, dtype=self.dtype or T.precision(q),
                                        softmax_dtype=T.precision(q)))


def _bind(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """An op's arguments by their schema names."""
    names = [a.name for a in func._schema.arguments]
    return dict(zip(names, args, strict=False)) | kwargs


def _batch_norm_flops(base: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                      elements: float) -> float:
    """Training batch norm normalises with the batch's statistics (the layer-norm rate, 7 a
    element); in eval it is a per-channel scale and shift (2 a element)."""
    if base in ("_native_batch_norm_legit_no_training", "_batch_norm_no_update"):
        training = False
    elif base == "_native_batch_norm_legit" and len(args) in (5, 6) and not isinstance(
            _arg(args, 3), torch.Tensor):
        training = bool(_arg(args, 3))  # the overload without running statistics
    elif base == "_batch_norm_with_update":
        training = True
    else:
        training = bool(_arg(args, 5) if len(args) > 5 else kwargs.get("training", True))
    if not training:
        return R.EVAL_BATCH_NORM_FLOPS * elements
    return R.norm_flops("layernorm", elements, weight=_arg(args, 1) is not None,
                        bias=_arg(args, 2) is not None)


def _ints(value: object, rank: int) -> list[int]:
    """A kernel size as a list of *rank* ints (an int means the same in every dimension)."""
    if isinstance(value, int):
        return [value] * max(rank, 1)
    if isinstance(value, (list, tuple)) and value:
        items = [int(v) for v in value]
        return items * rank if len(items) == 1 else items
    return [1]


def _dim(args: tuple[Any, ...], kwargs: dict[str, Any], t: torch.Tensor) -> int:
    dim = kwargs.get("dim", _arg(args, 1))
    return int(dim) if isinstance(dim, int) else -1


def _arg(args: tuple[Any, ...], index: int) -> Any:
    return args[index] if len(args) > index else None


class _Dispatch(TorchDispatchMode):  # type: ignore[misc]
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in torch._disable_dynamo, whose first call
        # imports torch._dynamo (1-2 s). Nothing here is compiled: keep the plain method.
        return False

    def __init__(self, recorder: Recorder, targets: frozenset[Any] = frozenset()) -> None:
        super().__init__()
        self.recorder = recorder
        self.targets = targets  # ops traced by name (``trace=torch.ops.mylib.fancy``)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if self.recorder.dtensors.declines(args, kwargs):
            return NotImplemented  # DTensor runs it: its local ops come back here
        out = func(*args, **kwargs)
        recorder = self.recorder
        if self.targets and (func in self.targets or func.overloadpacket in self.targets):
            recorder.inside += 1
            try:
                if not recorder.hidden:
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
        if func is F.scaled_dot_product_attention and not recorder.hidden:
            recording = recorder.recording
            recorder.hidden += 1
            try:
                out = func(*args, **kwargs)
            finally:
                recorder.hidden -= 1
            if recording or func in self.targets:
                recorder.sdpa(args, kwargs, out)
            return out
        if func in self.comparisons:
            recorder.leave_out("comparison")
            recorder.hidden += 1
            try:
                return func(*args, **kwargs)
            finally:
                recorder.hidden -= 1
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
                names.setdefault(id(module), name)
    return names


def roots_of(fn: Callable[..., Any], args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> list[object]:
    """Objects that may hold the modules *fn* runs: itself, its owner, closure, arguments."""
    return [fn, *captured(fn), *args, *kwargs.values()]


_ACTIVE: list[Recorder] = []


class Session:
    """The modes and hooks of one recording; a context manager (used by ``trace=True``).

    ``body=True``: a test body (factories, RNG fills and reference comparisons left out).
    ``targets``: record only while one of these runs (``trace=fn``): Python functions and
    methods are followed by a profile function (``sys.setprofile``), modules by their
    forward hooks, torch functions (``torch.softmax``) by the function mode, ops
    (``torch.ops.mylib.fancy``, ``torch.ops.aten.mm``) by the dispatch mode.
    """

    def __init__(self, names: dict[int, str], dtype: str | None,
                 links: dict[str, AxisLink] | None = None, *, body: bool = False,
                 targets: Iterable[object] = ()) -> None:
        targets = list(targets)
        self.recorder = Recorder(names, dtype, links, body=body, filtered=bool(targets))
        self._modules = {id(t) for t in targets if isinstance(t, torch.nn.Module)}
        self._codes = {code for t in targets if (code := _code(t)) is not None}
        functions = frozenset(t for t in targets if not isinstance(t, torch.nn.Module)
                              and _code(t) is None)
        self._dispatch = _Dispatch(self.recorder, functions)
        self._functions = _Functions(self.recorder, functions)
        self._hooks: list[Any] = []
        self._profile: Any = None

    def _enter_module(self, module: torch.nn.Module, args: object) -> None:
        if id(module) in self._modules:
            self.recorder.inside += 1
        self.recorder.enter(module, args)

    def _leave_module(self, module: torch.nn.Module, args: object, output: object) -> None:
        self.recorder.leave(module, args, output)
        if id(module) in self._modules:
            self.recorder.inside -= 1

    def _follow(self, frame: Any, event: str, arg: object) -> None:
        if frame.f_code in self._codes:
            if event == "call":
                self.recorder.inside += 1
            elif event == "return":
                self.recorder.inside -= 1
        if self._profile is not None:
            self._profile(frame, event, arg)

    def __enter__(self) -> Recorder:
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )

        for outer in _ACTIVE:  # a trace inside a recorded test body is counted once
            outer.hidden += 1
        _ACTIVE.append(self.recorder)
        self._hooks = [register_module_forward_pre_hook(self._enter_module),
                       register_module_forward_hook(self._leave_module, always_call=True)]
        if self._codes:
            self._profile = sys.getprofile()
            sys.setprofile(self._follow)
        self._functions.__enter__()
        self._dispatch.__enter__()
        return self.recorder

    def __exit__(self, *exc: object) -> None:
        try:
            self._dispatch.__exit__(*exc)
            self._functions.__exit__(*exc)
        finally:
            if self._codes:
                sys.setprofile(self._profile)
            for hook in self._hooks:
                hook.remove()
            self._hooks = []
            _ACTIVE.remove(self.recorder)
            for outer in _ACTIVE:
                outer.hidden -= 1


def _code(target: object) -> Any:
    """The code object a Python function or method runs (None for anything else)."""
    function = getattr(target, "__func__", target)
    code = getattr(function, "__code__", None)
    return code if isinstance(code, types_.CodeType) else None


class Recording:
    """What one call ran: its kernels and the ops without a formula."""

    __slots__ = ("kernels", "unknown")

    def __init__(self, kernels: list[Kernel], unknown: dict[str, int]) -> None:
        self.kernels, self.unknown = kernels, unknown


def record(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           dtype: str | None, links: dict[str, AxisLink] | None = None) -> Recording:
    """Run ``fn(*args, **kwargs)`` and return one kernel per op it ran."""
    session = Session(module_names(*roots_of(fn, args, kwargs)), dtype, links)
    with session:
        fn(*args, **kwargs)
    return Recording(session.recorder.kernels, session.recorder.unknown)


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

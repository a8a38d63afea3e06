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
import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..workload import Kernel
from . import _kernels as K
from . import _torch_mesh
from ._mesh import AxisLink

_MATMUL = frozenset({"mm", "addmm", "bmm", "baddbmm", "_addmm_activation", "_scaled_mm",
                     "addbmm"})
_CONV = frozenset({"convolution", "_convolution", "cudnn_convolution", "mkldnn_convolution",
                   "_slow_conv2d_forward", "conv2d", "conv1d", "conv3d"})
_SDPA = frozenset({"_scaled_dot_product_flash_attention",
                   "_scaled_dot_product_efficient_attention",
                   "_scaled_dot_product_cudnn_attention",
                   "_scaled_dot_product_flash_attention_for_cpu",
                   "_scaled_dot_product_fused_attention_overrideable"})
_SOFTMAX = frozenset({"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"})
_REDUCE_ONE = frozenset({"sum", "amax", "amin", "max", "min", "prod", "argmax", "argmin",
                         "any", "all", "nansum", "cumsum", "cumprod", "logcumsumexp"})
_REDUCE_PER_ELEMENT = {"mean": 1.0, "nanmean": 1.0, "var": 3.0, "std": 3.0, "var_mean": 3.0,
                       "std_mean": 3.0, "linalg_vector_norm": 2.0, "norm": 2.0,
                       "logsumexp": 3.0}
#: Pointwise-tagged ops that only move or select data: bytes, no FLOPs.
_MOVE = frozenset({"where", "masked_fill", "clone", "copy", "_to_copy", "to", "fill",
                   "zero", "lift_fresh_copy", "masked_scatter", "_copy_from", "detach_copy",
                   "alias_copy", "view_copy", "_unsafe_index", "_unsafe_index_put",
                   "scalar_tensor"})
#: Non-view ops that change metadata only.
_FREE = frozenset({"_unsafe_view", "detach", "alias", "lift_fresh", "empty", "empty_like",
                   "empty_strided", "new_empty", "new_empty_strided", "_local_scalar_dense",
                   "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "_reshape_alias",
                   "set_", "resize_", "_resize_output", "_assert_async", "_assert_scalar",
                   "_propagate_xla_data", "record_stream", "_has_compatible_shallow_copy_type"})


def _touched(t: torch.Tensor) -> int:
    """Elements a kernel reads of *t*: broadcast (stride-0) dimensions are stored once."""
    if t.dim() == 0:
        return 1
    n = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if stride != 0:
            n *= size
        elif size == 0:
            return 0
    return n


def _tensors(value: object) -> Iterable[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _nbytes(inputs: Iterable[torch.Tensor], outputs: Iterable[torch.Tensor]) -> float:
    seen: set[int] = set()
    total = 0
    for t in inputs:
        if id(t) not in seen:
            seen.add(id(t))
            total += _touched(t) * t.dtype.itemsize
    for t in outputs:
        total += t.numel() * t.dtype.itemsize
    return float(total)


_DTYPES: dict[Any, str | None] = {}


#: Ops that read only the rows they gather from their first operand (a table, a source).
_GATHER = frozenset({"embedding", "index_select", "index", "gather", "_unsafe_index", "take",
                     "take_along_dim"})
#: In-place ops that write only where their last operand (the values) goes.
_SCATTER = frozenset({"index_put_", "_index_put_impl_", "index_copy_", "scatter_",
                      "scatter_add_", "scatter_reduce_", "index_add_", "index_fill_",
                      "masked_scatter_"})
#: In-place ops that write their first operand without reading it.
_OVERWRITE = frozenset({"copy_", "fill_", "zero_", "normal_", "uniform_", "random_"})


def _moved(op: str, base: str, inputs: list[torch.Tensor],
           outputs: list[torch.Tensor]) -> float:
    """Bytes a vector, index or copy op moves (see :func:`_nbytes` for the general rule)."""
    if base in _GATHER and inputs and outputs:
        source, rest = inputs[0], inputs[1:]
        rows = outputs[0].numel() * source.dtype.itemsize  # the gathered rows, read
        return float(rows) + _nbytes(rest, outputs)
    if op in _SCATTER and len(inputs) >= 2:
        values = inputs[-1]
        return _nbytes(inputs[1:], ()) + float(values.numel() * values.dtype.itemsize)
    if op in _OVERWRITE and inputs:
        return _nbytes(inputs[1:], outputs)
    return _nbytes(inputs, outputs)


def _dtype(t: torch.Tensor) -> str | None:
    """The canonical precision of a tensor's storage (None for integer and bool types)."""
    try:
        return _DTYPES[t.dtype]
    except KeyError:
        value = _DTYPES[t.dtype] = K.precision(t.dtype)
        return value


class Recorder:
    """Collects kernels while its modes are active (see :func:`record`)."""

    def __init__(self, names: dict[int, str], dtype: str | None,
                 links: dict[str, AxisLink] | None = None) -> None:
        self.kernels: list[Kernel] = []
        self.links = links or {}
        self.names = names
        self.path: list[str] = []
        self.hidden = 0  # > 0 inside a call recorded at function level (SDPA)
        self.dtype = dtype

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

    # -- ops ---------------------------------------------------------------------------------

    def op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: object) -> None:
        if func.is_view or func.namespace == "prim":  # views; prim.device and co: metadata
            return
        op = func.overloadpacket.__name__
        if func.namespace in _torch_mesh.NAMESPACES:  # a collective: link bytes
            kernel = _torch_mesh.kernel(self._name(op), op, func.namespace, args, out,
                                        self.links)
            if kernel is not None:
                self.kernels.append(kernel)
            return
        base = op.rstrip("_") if not op.startswith("__") else op.strip("_")
        if base in _FREE:
            return
        inputs = list(_tensors(args)) + list(_tensors(list(kwargs.values())))
        outputs = list(_tensors(out))
        if base in _MATMUL:
            self._matmul(op, base, args, inputs, outputs)
        elif base in _CONV:
            self._conv(op, args, inputs, outputs)
        elif base in _SDPA:
            self._sdpa_aten(op, func, args, kwargs, inputs, outputs)
        else:
            self.kernels.append(K.vector(self._name(op), flops=self._vector_flops(
                func, base, args, inputs, outputs), nbytes=_moved(op, base, inputs, outputs),
                dtype=_dtype(outputs[0]) if outputs else (_dtype(inputs[0]) if inputs
                                                          else None)))

    def _vector_flops(self, func: Any, base: str, args: tuple[Any, ...],
                      inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> float:
        if not inputs or not outputs:
            return 0.0
        if base in _SOFTMAX:
            return K.softmax_flops(float(inputs[0].numel()))
        if base in ("native_layer_norm", "layer_norm", "native_group_norm", "group_norm",
                    "native_batch_norm", "_native_batch_norm_legit",
                    "_native_batch_norm_legit_no_training", "batch_norm"):
            weight = _arg(args, 2) is not None if base in ("native_layer_norm",
                                                           "layer_norm") else True
            bias = _arg(args, 3) is not None if base in ("native_layer_norm",
                                                         "layer_norm") else True
            return K.norm_flops("layernorm", float(inputs[0].numel()), weight=weight,
                                bias=bias)
        if base in ("_fused_rms_norm", "rms_norm"):
            return K.norm_flops("rmsnorm", float(inputs[0].numel()),
                                weight=_arg(args, 2) is not None, bias=False)
        if base in ("mv", "addmv"):  # a matrix-vector product: vector units, 2 per MAC
            matrix = args[1] if base == "addmv" else args[0]
            return 2.0 * float(matrix.numel())
        if base in ("dot", "vdot"):  # as ops.dot: n multiplies, n - 1 adds
            return 2.0 * float(inputs[0].numel()) - 1.0
        if base in _REDUCE_ONE:
            return float(max(inputs[0].numel() - outputs[0].numel(), 0))
        if base in _REDUCE_PER_ELEMENT:
            return _REDUCE_PER_ELEMENT[base] * float(inputs[0].numel())
        if base in _MOVE or torch.Tag.pointwise not in func.tags:
            return 0.0  # index, mask, copy, creation and unknown ops: bytes only
        return K.ELEMENT_FLOPS.get(base, 1.0) * float(outputs[0].numel())

    def _matmul(self, op: str, base: str, args: tuple[Any, ...], inputs: list[torch.Tensor],
                outputs: list[torch.Tensor]) -> None:
        # mm(a, b); addmm(bias, a, b); bmm(a, b); baddbmm(bias, a, b); _scaled_mm(a, b, ...)
        a, b = (args[1], args[2]) if base in ("addmm", "baddbmm", "_addmm_activation",
                                              "addbmm") else (args[0], args[1])
        batch = math.prod(a.shape[:-2])
        macs = float(batch * a.shape[-2] * a.shape[-1] * b.shape[-1])
        dtype = self.dtype or K.wider(_dtype(a), _dtype(b))
        self.kernels.append(K.matrix(self._name(op), macs=macs,
                                     nbytes=_nbytes(inputs, outputs), dtype=dtype))

    def _conv(self, op: str, args: tuple[Any, ...], inputs: list[torch.Tensor],
              outputs: list[torch.Tensor]) -> None:
        x, w, out = args[0], args[1], outputs[0]
        transposed = bool(_arg(args, 6)) if op in ("convolution", "_convolution") else False
        # torch's count: 2 · batch · prod(weight) · prod(output spatial) (input spatial when
        # transposed); padded taps are counted, as torch counts them.
        spatial = x.shape[2:] if transposed else out.shape[2:]
        macs = float(x.shape[0] * math.prod(w.shape) * math.prod(spatial))
        dtype = self.dtype or K.wider(_dtype(x), _dtype(w))
        nbytes = _nbytes(inputs, outputs)
        groups = _arg(args, 8) if op in ("convolution", "_convolution") else None
        if not transposed and isinstance(groups, int) and groups > 1 and w.shape[1] == 1:
            # depthwise: no reduction over channels to feed a matrix unit (as ops.conv2d)
            self.kernels.append(K.vector(self._name(op), flops=2.0 * macs, nbytes=nbytes,
                                         dtype=dtype))
            return
        self.kernels.append(K.matrix(self._name(op), macs=macs, nbytes=nbytes, dtype=dtype))

    def _sdpa_aten(self, op: str, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                   inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        names = [a.name for a in func._schema.arguments]
        bound = dict(zip(names, args, strict=False)) | kwargs
        causal = bool(bound.get("is_causal", False))
        mask = bound.get("attn_mask", bound.get("attn_bias"))
        self.attention(op, bound.get("query", args[0]), bound.get("key", args[1]),
                       bound.get("value", args[2]), causal=causal and mask is None,
                       nbytes=_nbytes(inputs, outputs[:1]))

    def sdpa(self, args: tuple[Any, ...], kwargs: dict[str, Any], out: object) -> None:
        """``F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, ...)``."""
        bound = dict(zip(("query", "key", "value", "attn_mask", "dropout_p", "is_causal"),
                         args, strict=False)) | kwargs
        q, k, v, mask = bound["query"], bound["key"], bound["value"], bound.get("attn_mask")
        causal = bool(bound.get("is_causal", False))
        inputs = [t for t in (q, k, v, mask) if isinstance(t, torch.Tensor)]
        self.attention("scaled_dot_product_attention", q, k, v, causal=causal,
                       nbytes=_nbytes(inputs, _tensors(out)))

    def attention(self, op: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                  causal: bool, nbytes: float) -> None:
        q_len, kv_len = q.shape[-2], k.shape[-2]
        heads = float(math.prod(q.shape[:-2]))  # batch · query heads
        pairs = (K.causal_pairs_top_left(q_len, kv_len) if causal
                 else float(q_len) * kv_len)
        self.kernels.extend(K.attention(self._name(op), heads=heads, pairs=pairs,
                                        head_dim=q.shape[-1], value_dim=v.shape[-1],
                                        nbytes=nbytes, dtype=self.dtype or _dtype(q),
                                        softmax_dtype=_dtype(q)))


def _arg(args: tuple[Any, ...], index: int) -> Any:
    return args[index] if len(args) > index else None


class _Dispatch(TorchDispatchMode):  # type: ignore[misc]
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in torch._disable_dynamo, whose first call
        # imports torch._dynamo (1-2 s). Nothing here is compiled: keep the plain method.
        return False

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.recorder.hidden:
            self.recorder.op(func, args, kwargs, out)
        return out


class _Functions(TorchFunctionMode):  # type: ignore[misc]
    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func is not F.scaled_dot_product_attention or self.recorder.hidden:
            return func(*args, **kwargs)
        self.recorder.hidden += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.recorder.hidden -= 1
        self.recorder.sdpa(args, kwargs, out)
        return out


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
    roots: list[object] = [fn, getattr(fn, "__self__", None)]
    for cell in getattr(fn, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # an empty cell has no contents
            roots.append(cell.cell_contents)
    roots.extend(args)
    roots.extend(kwargs.values())
    return roots


_ACTIVE: list[Recorder] = []


class Session:
    """The modes and hooks of one recording; a context manager (used by ``trace=True``)."""

    def __init__(self, names: dict[int, str], dtype: str | None,
                 links: dict[str, AxisLink] | None = None) -> None:
        self.recorder = Recorder(names, dtype, links)
        self._dispatch = _Dispatch(self.recorder)
        self._functions = _Functions(self.recorder)
        self._hooks: list[Any] = []

    def __enter__(self) -> Recorder:
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )

        for outer in _ACTIVE:  # a trace inside a recorded test body is counted once
            outer.hidden += 1
        _ACTIVE.append(self.recorder)
        self._hooks = [register_module_forward_pre_hook(self.recorder.enter),
                       register_module_forward_hook(self.recorder.leave, always_call=True)]
        self._functions.__enter__()
        self._dispatch.__enter__()
        return self.recorder

    def __exit__(self, *exc: object) -> None:
        try:
            self._dispatch.__exit__(*exc)
            self._functions.__exit__(*exc)
        finally:
            for hook in self._hooks:
                hook.remove()
            self._hooks = []
            _ACTIVE.remove(self.recorder)
            for outer in _ACTIVE:
                outer.hidden -= 1


def record(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           dtype: str | None, links: dict[str, AxisLink] | None = None) -> list[Kernel]:
    """Run ``fn(*args, **kwargs)`` and return one kernel per op it ran."""
    session = Session(module_names(*roots_of(fn, args, kwargs)), dtype, links)
    with session:
        fn(*args, **kwargs)
    return session.recorder.kernels


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
    tensors.extend(_tensors(list(args) + list(kwargs.values())))
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.dtype.itemsize
    return float(total)

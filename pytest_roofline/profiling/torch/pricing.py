"""A recorded CPU op priced by the tracer's own op table: the one place profiling meets tracing.

A profiler trace records each aten op's name, its inputs' dims and dtypes, and (torch 2.1
on) the value of each scalar input. :func:`price` rebuilds the call on ``meta`` tensors
(nothing is computed, nothing allocated) and runs ``torch.ops.aten.<op>`` under the public
:class:`~pytest_roofline.Tracer`, so a recorded op is priced by exactly the formula a traced
call of the same op gets: one table, whatever path the op came in by.

What is rebuilt, and what is assumed where the trace does not say:

* an input with a dtype is a meta tensor of its recorded dims, and of its recorded strides
  where the trace has them (a ``contiguous`` of a transposed tensor copies; of a contiguous
  one it does nothing);
* a scalar with a recorded value takes it; one without (a trace from before torch 2.1) takes
  the schema's default where it has one, else the value that asks least of the op (``0``
  for an int, ``[]`` for a list of ints: the whole-tensor reduction, the smallest output),
  so a guess can only lower the bound, never raise it; a convolution's stride, padding and
  dilation are chosen so (a stride as long as the input: one output position an image,
  :data:`UNRECORDED_CONV`), never the schema's stride 1 and padding 0, which would raise it;
* a convolution backward op of torch 1.10 and before (:data:`LEGACY_CONV_BACKWARD`) is
  priced as ``convolution_backward`` of its tensors;
* an input recorded without a type is ``None`` for an optional tensor, and an empty tensor
  (no bytes) for one the schema does not let be ``None`` (an undefined tensor, as flash
  attention's backward is handed for sequences that are not packed);
* a list of tensors takes the dtype of the op's tensor inputs, when it has some; where it
  has none, the element size a GPU kernel of the op states in its name (PyTorch's copy
  kernels name ``OpaqueType<2u>``: 2-byte elements) gives a float dtype of that size
  (*list_dtype*, read by the caller); else the op is not priced (a guessed width could
  raise the bound);
* the overload is the first whose schema accepts the rebuilt inputs (the schema read through
  ``tracing._torch_compat``, where every private torch API the project uses is checked).

An op that cannot be rebuilt, or has no formula in the table (``Workload.unknown``), is not
priced: the reason comes back and the caller names it with its time. An op that moves no
memory (a view) is priced at zero work. Results are cached per (op, dims, dtypes, values,
precision): a trace of 100,000 events holds a few hundred distinct calls.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Any

from ... import dtypes
from ...engine.workload import Kernel, Workload
from ...tracing import TraceError, Tracer, registry
from ...tracing import vendor_ops as _vendor  # noqa: F401  (registers serving engines' ops)
from . import inductor, shapes
from .dtype_names import DTYPES as DTYPES

#: A float dtype (profiler type name) of each element size, for a list of tensors whose
#: dtype only a kernel's name states.
BY_SIZE = {int(dtypes.itemsize(DTYPES[t])): t
           for t in ("c10::Float8_e4m3fn", "c10::BFloat16", "float", "double")}
_MISSING = object()
ZERO = "zero"  # the op moves no memory (a view, a metadata change): zero work

_CACHE: dict[tuple[Any, ...], Workload | str] = {}


def price(name: str, dims: list[Any] | None, types: tuple[str, ...] | None,
          concrete: tuple[str, ...] | None, dtype: str | None = None,
          strides: list[Any] | None = None, list_dtype: str | None = None,
          gradients: tuple[bool, bool] | None = None) -> Workload | str:
    """The Workload of one call of the recorded op *name* (``aten::addmm``), priced in
    *dtype* for its matrix work where given (``"tf32"``), else in its operands' own; or a
    short reason why it cannot be priced (:data:`ZERO` when it does no work).
    *list_dtype* (a profiler type name, ``"c10::BFloat16"``) is the element dtype of a list
    of tensors when the op has no other tensor input to take it from. *gradients*: the
    (input, weight) gradients an old convolution backward op computed, where its child ops
    say (:data:`LEGACY_CONV_BACKWARD`)."""
    key = (name, repr(dims), types, concrete, dtype, repr(strides), list_dtype, gradients)
    hit = _CACHE.get(key)
    if hit is None:
        legacy = LEGACY_CONV_BACKWARD.get(name.removeprefix("aten::"))
        if legacy is not None and dims is not None and types is not None:
            hit = _legacy_conv_backward(legacy, dims, types, dtype, gradients)
        else:
            hit = _price(name, dims, types, concrete, dtype, strides, list_dtype)
        _CACHE[key] = hit
    return hit


#: Convolution backward ops of torch 1.10 and before, one op since (``convolution_backward``):
#: the positions of grad_output, input and weight among their inputs, and whether the
#: convolution is transposed. Each is priced as ``convolution_backward`` of those tensors.
LEGACY_CONV_BACKWARD: dict[str, tuple[int, int, int, bool]] = {
    **dict.fromkeys(("cudnn_convolution_backward", "miopen_convolution_backward",
                     "miopen_depthwise_convolution_backward", "mkldnn_convolution_backward"),
                    (1, 0, 2, False)),
    **dict.fromkeys(("cudnn_convolution_transpose_backward",
                     "miopen_convolution_transpose_backward"), (1, 0, 2, True)),
    **dict.fromkeys(("thnn_conv2d_backward", "slow_conv2d_backward", "thnn_conv3d_backward",
                     "slow_conv3d_backward", "thnn_conv_depthwise2d_backward",
                     "slow_conv_dilated2d_backward", "slow_conv_dilated3d_backward"),
                    (0, 1, 2, False)),
    **dict.fromkeys(("slow_conv_transpose2d_backward", "slow_conv_transpose3d_backward",
                     "thnn_conv_transpose2d_backward"), (0, 1, 2, True)),
}
#: What is assumed for an old convolution backward whose gradients no child op names.
ONE_GRADIENT = ("the gradients an old convolution backward op computed are not recorded: "
                "one counted (the lowest bound)")


def memory_only(workload: Workload) -> Workload:
    """*workload* bounded by its memory alone: its bytes, no FLOPs (a kernel that runs an
    algorithm with fewer multiplies than the formula counts, Winograd or FFT)."""
    kernels = [Kernel(k.name, 0.0, k.bytes, unit="vector", dtype=k.dtype, count=k.count)
               for k in workload.kernels]
    return Workload(kernels, name=workload.name)


def _legacy_conv_backward(where: tuple[int, int, int, bool], dims: list[Any],
                          types: tuple[str, ...], dtype: str | None,
                          gradients: tuple[bool, bool] | None) -> Workload | str:
    g, i, w, transposed = where
    if max(g, i, w) >= min(len(dims), len(types)):
        return "its input shapes were not recorded (record_shapes=True)"
    grad, x, weight = dims[g], dims[i], dims[w]
    if not all(_is_shape(t) and len(t) >= 3 for t in (grad, x, weight)):
        return "its input shapes were not recorded (record_shapes=True)"
    asked = gradients or (False, True)
    # the formula reads the three tensors, `transposed` and the output mask; the stride,
    # padding, dilation and groups an old op did not record are left unrecorded (its FLOPs
    # come from the recorded gradient's shape, whatever they were)
    concrete = ("", "", "", "", "", "", "", str(transposed), "", "",
                str([asked[0], asked[1], False]))
    kinds = (types[g], types[i], types[w], "", "ScalarList", "ScalarList", "ScalarList",
             "Scalar", "ScalarList", "Scalar", "ScalarList")
    return _price("aten::convolution_backward", [grad, x, weight], kinds,
                  concrete, dtype, None)


def _price(name: str, dims: list[Any] | None, types: tuple[str, ...] | None,
           concrete: tuple[str, ...] | None, dtype: str | None,
           strides: list[Any] | None, list_dtype: str | None = None) -> Workload | str:
    _load_shipped(name)
    formula = None if name.startswith("aten::") else registry.lookup(name)
    if formula is None and inductor.is_kernel(name):  # torch.compile's generated kernel
        if dims is None or types is None:
            return "its input shapes were not recorded (record_shapes=True)"
        return inductor.price(name, dims, types, concrete, strides)
    if not name.startswith("aten::") and formula is None:
        return f"{name} is not an aten op"
    if dims is None or types is None:
        return "its input shapes were not recorded (record_shapes=True)"
    quick = shapes.price(name, dims, types, concrete, dtype, strides, list_dtype)
    if quick is not None:  # priced from its shapes as the tracer prices it: no torch started
        return quick
    try:
        import torch
    except ImportError:
        return "pricing a recorded op needs torch installed"
    space, _, base = name.partition("::")
    packet = _packet(torch, space, base)
    if formula is not None and packet is None:  # a formula, and no op of that name here
        return _by_formula(torch, name, formula, dims, types, concrete, strides, dtype,
                           list_dtype)
    if packet is None:  # aten::name is the namespace's
        return f"torch has no op {name}"
    try:
        inputs = _inputs(torch, dims, types, concrete, strides, list_dtype)
    except (RuntimeError, ValueError, TypeError, OverflowError) as exc:  # past torch's sizes
        return f"its recorded sizes do not rebuild a tensor ({type(exc).__name__})"
    if isinstance(inputs, str):
        return inputs
    from ...tracing.tables import schema_arguments as arguments

    fill = _unrecorded_conv(base, dims) if concrete is None else {}
    failure = "no overload takes its inputs"
    for overload in packet.overloads():
        op = getattr(packet, overload)
        call = _bind(arguments(op), inputs, fill)
        if call is None:
            continue
        args, kwargs = call
        result = _trace(op, args, kwargs, name, dtype)
        if not isinstance(result, str) or result == ZERO:
            return result
        failure = result
    return failure


#: Namespaces of the ops :mod:`pytest_roofline.tracing.known_ops` prices (flash-attn's);
#: that module imports torch, so it is loaded when a trace holds one of its ops.
SHIPPED = frozenset({"flash_attn", "flashattn"})


def _load_shipped(name: str) -> None:
    """Register the shipped formulas for *name*'s namespace, once (the tracer registers them
    when it starts; a trace priced before any rebuild must find them too)."""
    if name.partition("::")[0] in SHIPPED:
        # without torch the op cannot be rebuilt, and _price says so
        with contextlib.suppress(ImportError):
            from ...tracing import known_ops  # noqa: F401  (registers its formulas)


def has_formula(name: str) -> bool:
    """Whether a recorded op that is not an aten op has a formula to price it by: one
    ``register_op`` gave its name (a conftest's, a ``--formulas`` file's, a library's), or
    one the tracer ships (:mod:`pytest_roofline.tracing.known_ops`)."""
    _load_shipped(name)
    return registry.lookup(name) is not None or inductor.is_kernel(name)


def formula_of(name: str) -> str:
    """Who prices a recorded op that is not an aten op: ``register_op`` or ``the tracer's
    formula``; '' for an aten op (the tracer's table) or one without a formula."""
    if name.startswith("aten::") or not has_formula(name):
        return ""
    if registry.lookup(name) is None:
        return "the ops its inductor name lists"
    return "register_op" if name in registry.registered() else "the tracer's formula"


def _packet(torch: Any, space: str, base: str) -> Any:
    """``torch.ops.<space>.<base>`` where torch has that op, else None."""
    try:
        packet = getattr(getattr(torch.ops, space), base)
    except (AttributeError, RuntimeError):
        return None
    return packet if hasattr(packet, "overloads") else None


def _by_formula(torch: Any, name: str, formula: registry.Formula, dims: list[Any],
                types: tuple[str, ...], concrete: tuple[str, ...] | None,
                strides: list[Any] | None, dtype: str | None,
                list_dtype: str | None) -> Workload | str:
    """A recorded op torch does not know here (a vendor library's op, its library not
    imported) priced by the formula ``register_op`` gave its name, called with its recorded
    inputs in order (meta tensors, scalars as recorded)."""
    inputs = _inputs(torch, dims, types, concrete, strides, list_dtype)
    if isinstance(inputs, str):
        return inputs
    try:
        kernels, unknown = registry.apply(name, formula, "", inputs, {}, dtype=dtype)
    except TraceError as exc:
        return f"its formula refused its recorded inputs: {str(exc)[:100]}"
    if unknown:
        return f"no formula for {', '.join(sorted(unknown))}"
    return Workload(tuple(kernels), name=name)


def _trace(op: Any, args: list[Any], kwargs: dict[str, Any], name: str,
           dtype: str | None) -> Workload | str:
    """The op's Workload under the public Tracer (the only call into tracing)."""
    call = _PUBLIC.get(name)
    run = op if call is None else _public(call)
    try:
        traced = Tracer(dtype=dtype, name=name)(lambda: run(*args, **kwargs))
    except TraceError as exc:
        if "ran no op that reads or writes memory" in str(exc):
            return ZERO
        return f"the tracer refused it: {str(exc)[:100]}"
    except Exception as exc:  # the rebuilt inputs do not fit the op
        return f"inputs do not rebuild a call ({type(exc).__name__})"
    if traced.unknown:
        return f"no formula for {', '.join(sorted(traced.unknown))}"
    return traced


#: Recorded ops the tracer prices as the public function that runs them (its arguments by
#: the op's schema names): ``aten::scaled_dot_product_attention`` is the fused op, priced as
#: ``trace()`` prices ``F.scaled_dot_product_attention``, never as the math its meta kernel
#: decomposes into (two products, a mask and a softmax over every pair); RMS norm likewise
#: is one kernel (``ops.rmsnorm``), not its fp32 steps.
_PUBLIC = {"aten::scaled_dot_product_attention":
           "torch.nn.functional.scaled_dot_product_attention",
           "aten::rms_norm": "torch.nn.functional.rms_norm",
           "aten::_fused_rms_norm": "torch.nn.functional.rms_norm"}


def _public(path: str) -> Any:
    import importlib

    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _inputs(torch: Any, dims: list[Any], types: tuple[str, ...],
            concrete: tuple[str, ...] | None, strides: list[Any] | None,
            list_dtype: str | None = None) -> list[Any] | str:
    tensor_dtype = next((DTYPES[t] for t in types if t in DTYPES), None) or DTYPES.get(
        list_dtype or "")
    out: list[Any] = []
    for i, kind in enumerate(types):
        shape = dims[i] if i < len(dims) else []
        value = concrete[i] if concrete is not None and i < len(concrete) else ""
        if kind in DTYPES:
            if not _is_shape(shape):
                return f"input {i} has dims {shape!r}"
            kind_dtype = getattr(torch, DTYPES[kind])
            stride = strides[i] if strides is not None and i < len(strides) else None
            if isinstance(stride, list) and _is_shape(stride) and len(stride) == len(shape):
                out.append(torch.empty_strided(shape, stride, dtype=kind_dtype,
                                               device="meta"))
            else:
                out.append(torch.empty(shape, dtype=kind_dtype, device="meta"))
        elif kind in ("TensorList", "GenericList") and isinstance(shape, list) and shape \
                and all(_is_shape(s) for s in shape):
            if tensor_dtype is None:
                return "the dtype of its list of tensors is not recorded"
            out.append([torch.empty(s, dtype=getattr(torch, tensor_dtype), device="meta")
                        for s in shape])
        elif kind == "":
            out.append(None)
        elif value:
            parsed = _literal(value)
            out.append(_MISSING if parsed is _MISSING else parsed)
        else:
            out.append(_MISSING)
    return out


#: Convolution ops whose stride, padding and dilation a trace before torch 2.1 leaves out.
CONVOLUTIONS = frozenset({"conv1d", "conv2d", "conv3d", "convolution", "_convolution",
                          "cudnn_convolution", "miopen_convolution", "mkldnn_convolution",
                          "miopen_depthwise_convolution", "_convolution_mode",
                          "thnn_conv2d", "_slow_conv2d_forward", "slow_conv3d",
                          "slow_conv_dilated2d", "slow_conv_dilated3d",
                          "_conv_depthwise2d"})
#: What is assumed for such a convolution (see :func:`_unrecorded_conv`).
UNRECORDED_CONV = ("convolutions' strides and padding are not recorded (torch before 2.1): "
                   "each priced at one output position an image, the lowest bound")


def _unrecorded_conv(base: str, dims: list[Any]) -> dict[str, Any]:
    """The scalars of a convolution a trace did not record, chosen for the lowest bound: a
    stride as long as the input (one output position an image), no padding, no dilation, not
    transposed; the groups its input and weight channels imply."""
    if base not in CONVOLUTIONS or len(dims) < 2 or not (
            _is_shape(dims[0]) and _is_shape(dims[1]) and len(dims[0]) == len(dims[1]) >= 3):
        return {}
    x, w = dims[0], dims[1]
    rank = len(x) - 2
    return {"stride": [max(int(d), 1) for d in x[2:]], "padding": [0] * rank,
            "dilation": [1] * rank, "output_padding": [0] * rank, "transposed": False,
            "groups": max(x[1] // w[1], 1) if w[1] else 1}


def _is_shape(value: Any) -> bool:
    """Dims (or strides) of a tensor: whole numbers from 0 to 2**53 (as every size)."""
    return isinstance(value, list) and all(
        type(d) is int and 0 <= d <= 2 ** 53 for d in value)


def _literal(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _bind(schema_arguments: list[Any], inputs: list[Any],
          fill: dict[str, Any] | None = None) -> tuple[list[Any], dict[str, Any]] | None:
    """Positional and keyword arguments for *schema* from the recorded *inputs* (by
    position), missing scalars filled (see the module docstring); None when they cannot
    fit. Schema types read as torch prints them (``Tensor``, ``Optional[Tensor]``,
    ``List[Tensor]``, ``List[int]``, ``int``, ``float``, ``number``, ``str``)."""
    arguments = schema_arguments
    if len(inputs) > len(arguments):
        return None
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for argument, value in zip(arguments, inputs, strict=False):
        kind = str(argument.type)
        optional = kind.startswith("Optional[")
        inner = kind[len("Optional["):-1] if optional else kind
        is_tensor = hasattr(value, "shape") and hasattr(value, "dtype")
        if inner == "Tensor":
            if value is None and not optional:
                value = _undefined()  # an undefined tensor (recorded without a type)
            elif not (is_tensor or (value is None and optional)):
                return None
        elif is_tensor or (inner.startswith("List[") and "Tensor" in inner and not (
                isinstance(value, list) or (value is None and optional))):
            return None
        if value is None and not optional:
            value = _MISSING  # a value the profiler did not write (a string, an int list)
        if value is _MISSING and fill and argument.name in fill:
            value = fill[argument.name]  # unrecorded, chosen for the lowest bound
        if value is _MISSING:
            if argument.has_default_value():
                if argument.kwarg_only:
                    continue
                value = argument.default_value
            else:
                value = None if optional else _placeholder(inner)
                if value is _MISSING:
                    return None
        if not _place(argument, value, args, kwargs):
            return None
    rest = arguments[len(inputs):]
    given = fill or {}
    chosen = any(argument.name in given for argument in rest)
    for argument in rest:
        optional = str(argument.type).startswith("Optional[")
        if not argument.has_default_value() and not optional:
            return None
        if chosen:  # a record cut short: its unrecorded scalars still take the lowest bound
            value = given.get(argument.name, argument.default_value
                              if argument.has_default_value() else None)
            if not _place(argument, value, args, kwargs):
                return None
    return args, kwargs


def _place(argument: Any, value: Any, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """Put *value* as *argument*'s: by name when it is keyword-only, else by position;
    False for a positional one after a keyword (no call can pass it)."""
    if argument.kwarg_only:
        kwargs[argument.name] = value
        return True
    if not kwargs:
        args.append(value)
    return not kwargs


def _undefined() -> Any:
    """An undefined tensor a schema takes as a ``Tensor`` (flash attention's backward is
    handed undefined cumulative lengths when its sequences are not packed): an empty one,
    no bytes."""
    import torch

    return torch.empty(0, device="meta")


def _placeholder(kind: str) -> Any:
    """The value that asks least of an op, for a scalar the trace did not record."""
    return {"int": 0, "List[int]": [], "float": 1.0, "number": 1, "bool": False}.get(
        kind, _MISSING)

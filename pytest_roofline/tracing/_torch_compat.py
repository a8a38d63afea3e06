"""Every private torch API the torch tracer uses, in one place.

torch has no public way to do these; each is checked by ``tests/test_trace_compat.py``, which
fails when a torch release moves or changes it (``.ci/newest`` runs the tracing tests against
the newest torch the index serves):

* :class:`DispatchMode`: ``TorchDispatchMode`` (``torch.utils._python_dispatch``, the base
  class torch's own flop counter subclasses) with ``_should_skip_dynamo`` answering False:
  torch would otherwise wrap the mode's ``__torch_dispatch__`` in ``torch._disable_dynamo``,
  whose first call imports torch._dynamo (1-2 s), and nothing here is compiled;
* :func:`argument_names`: an op's argument names, from its ``_schema``; :func:`arguments`
  its schema's arguments themselves (name, type, default, keyword-only, aliasing), and
  :func:`written_keywords` the keyword-only ones it writes (``out=``);
* :func:`process_group`: the ProcessGroup a functional collective's group name stands for
  (``_resolve_process_group``);
* :func:`is_fake`: whether a tensor is a fake tensor (shapes only; ``torch._subclasses``);
* :func:`skip_dynamo`: a code object dynamo neither compiles nor enters (dynamo's C-level
  frame execution strategy, ``torch._C._dynamo.eval_frame``: ``torch._disable_dynamo``
  would import torch._dynamo, seconds, on the first op);
* :func:`is_higher_order`: whether an op is a higher-order operator (``torch._ops``);
* :func:`has_implicit_decomposition`: whether an op has a CompositeImplicitAutograd kernel
  (``torch._C._dispatch_has_kernel_for_dispatch_key``), so ``func.decompose`` applies;
* :func:`profiler_active`: whether a torch profiler records in this process
  (``torch.autograd._profiler_enabled``): starting a second one, or stopping the one that
  records, leaves torch's profiler state broken (its trace export crashes the process);
* :data:`LOCAL_SCALAR_DENSE`, :data:`HOST_COPIES`: the aten ops a value read
  (``.item()``) and a copy to the host dispatch (underscore names of aten);
* :func:`launch_triton_hop`: the dense implementation of ``wrap_triton``'s HOP
  (``torch._higher_order_ops.triton_kernel_wrap``), which launches the kernel;
* :func:`real_tensors`: real tensors made inside a fake-tensor mode
  (``unset_fake_temporarily``), for a Triton launch's replay.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["HOST_COPIES", "LOCAL_SCALAR_DENSE", "TO_COPY", "DispatchMode", "TorchDispatchMode",
           "argument_names", "arguments", "has_implicit_decomposition", "is_fake",
           "is_higher_order", "launch_triton_hop", "process_group", "profiler_active",
           "real_tensors", "skip_dynamo", "written_keywords"]


class DispatchMode(TorchDispatchMode):  # type: ignore[misc]
    """A dispatch mode torch does not wrap in ``torch._disable_dynamo``."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


def argument_names(func: Any) -> list[str]:
    """The names of an aten op's arguments, in order (its schema's)."""
    return [a.name for a in func._schema.arguments]


def arguments(func: Any) -> list[Any]:
    """An op's schema arguments (``torch._C.Argument``: ``name``, ``type``, ``kwarg_only``,
    ``has_default_value()``, ``default_value``, ``alias_info``), in order."""
    return list(func._schema.arguments)


def written_keywords(func: Any) -> set[str]:
    """The keyword-only arguments an op writes (its ``out=`` tensors), by name."""
    return {a.name for a in func._schema.arguments
            if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write}


def process_group(name: str) -> Any:
    """The ProcessGroup a functional collective's group name stands for."""
    from torch.distributed.distributed_c10d import _resolve_process_group

    return _resolve_process_group(name)


def is_fake(tensor: torch.Tensor) -> bool:
    """True for a fake tensor (shapes only, no data): torch has no public test for it."""
    from torch._subclasses.fake_tensor import is_fake as _is_fake

    return bool(_is_fake(tensor))


def skip_dynamo(code: Any) -> None:
    """Have dynamo skip frames of *code* and every frame they call (as
    ``torch._dynamo.disable`` does), without importing torch._dynamo."""
    try:
        from torch._C._dynamo import eval_frame
    except ImportError:  # a torch without dynamo: nothing compiles it
        return
    action = eval_frame._FrameAction
    eval_frame.set_code_exec_strategy(code,
                                      eval_frame._FrameExecStrategy(action.SKIP, action.SKIP))


def is_higher_order(func: object) -> bool:
    """True for a higher-order operator (``torch.cond``'s, ``wrap_triton``'s, ...)."""
    return isinstance(func, torch._ops.HigherOrderOperator)


_IMPLICIT = torch._C.DispatchKey.CompositeImplicitAutograd


def has_implicit_decomposition(func: Any) -> bool:
    """True when *func* has a CompositeImplicitAutograd kernel (``func.decompose`` runs it)."""
    return bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _IMPLICIT))


def profiler_active() -> bool:
    """True while a torch profiler (``torch.profiler.profile``, the autograd profiler)
    records in this process."""
    return bool(torch.autograd._profiler_enabled())


#: ``Tensor.item()``, ``bool()``, ``int()``, ``float()`` dispatch this op.
LOCAL_SCALAR_DENSE = torch.ops.aten._local_scalar_dense.default
#: ``.to(device)``, ``.cpu()``, ``.tolist()``: the copy a value read of a whole tensor makes.
TO_COPY = torch.ops.aten._to_copy.default
HOST_COPIES = frozenset({TO_COPY, torch.ops.aten.copy_.default,
                         torch.ops.aten._copy_from.default})


def launch_triton_hop(hop_kwargs: dict[str, Any]) -> None:
    """Launch the kernel of a ``triton_kernel_wrapper_mutation`` or ``_functional`` call as
    its dense (CPU, CUDA) implementation does, whatever its tensors: on meta or fake ones the
    HOP's own implementation returns without launching."""
    from torch._higher_order_ops.triton_kernel_wrap import (
        triton_kernel_wrapper_mutation_dense,
    )

    names = ("kernel_idx", "constant_args_idx", "grid", "tma_descriptor_metadata", "kwargs")
    triton_kernel_wrapper_mutation_dense(**{k: hop_kwargs[k] for k in names if k in hop_kwargs})


def real_tensors() -> Any:
    """A context in which tensors made are real ones, even inside a fake-tensor mode
    (``torch.compile``'s and export's tracing): a Triton launch's replay runs on them."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()

"""``torch.compile``\\ d code in a trace: traced as the eager code it compiles.

Under a recording, compiled callables run in torch's public ``force_eager`` stance
(``torch.compiler.set_stance``): dynamo neither compiles the callable nor the tracer's own
dispatch mode, so the first trace of a compiled function costs what a trace of the eager one
costs (not a compilation, seconds to minutes), prints no recompile-limit warnings, and
records the same ops with the same FLOPs. Bytes are eager torch's (every op round-trips
memory, fusion ``"none"``): a compiled graph that fuses elementwise ops moves less, which
``fusion=`` policies for torch would have to model.

A compiled module (``torch.compile(model)``) wraps the model as its ``_orig_mod``: its
kernels are named by the model's own module paths (``0.addmm``, not ``_orig_mod.0.addmm``).

Nothing here imports ``torch._dynamo`` (1-2 s): when it is not loaded, nothing was compiled.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

#: The attribute and path segment under which ``torch.compile(module)`` keeps the module.
WRAPPED = "_orig_mod"
#: torch's warning when a compiled module runs while global module hooks are registered
#: (the tracer's, for module paths): they fire once more, for the wrapper, which is unnamed.
_HOOK_WARNING = r"Using `torch.compile\(module\)` when there are global hooks"


def module_path(name: str) -> str:
    """A module's path with the compiled wrapper's segments left out."""
    if WRAPPED not in name:
        return name
    return ".".join(part for part in name.split(".") if part != WRAPPED)


class Eager:
    """While entered: compiled callables run eagerly (see the module docstring)."""

    def __init__(self) -> None:
        self._stance: Any = None
        self._warnings: Any = None

    def __enter__(self) -> None:
        if "torch._dynamo" not in sys.modules:
            return
        import torch

        self._stance = torch.compiler.set_stance("force_eager")
        self._stance.__enter__()
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.filterwarnings("ignore", message=_HOOK_WARNING, category=UserWarning)

    def __exit__(self, *exc: object) -> None:
        if self._warnings is not None:
            self._warnings.__exit__(*exc)
            self._warnings = None
        if self._stance is not None:
            self._stance.__exit__(None, None, None)
            self._stance = None


F = TypeVar("F", bound=Callable[..., Any])


def never_compiled(method: F) -> F:
    """Mark *method* (a dispatch mode's ``__torch_dispatch__``) so that dynamo never compiles
    it nor anything it calls: a compilation that meets the mode with the mode popped
    (``torch.cond`` compiles its call, and torch pops the mode while its handler runs) would
    otherwise compile the tracer itself, slowly and with recompile-limit warnings.

    torch's own way (``torch._disable_dynamo``) imports ``torch._dynamo`` on the first op
    (seconds); this sets the same skip on the code object through dynamo's C extension,
    which ``import torch`` loads already (``_torch_compat.skip_dynamo``).
    """
    from ._torch_compat import skip_dynamo

    skip_dynamo(method.__code__)
    return method

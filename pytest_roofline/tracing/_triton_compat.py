"""The one place Triton's interpreter is used below its public surface: running a kernel
in the interpreter from a process whose kernels are compiled (no ``TRITON_INTERPRET``).

Triton picks the interpreter when a function is decorated (``triton.jit`` returns an
``InterpretedFunction`` when ``TRITON_INTERPRET`` is set, a ``JITFunction`` otherwise), so
a compiled kernel's launch is replayed by building the interpreted twin of its Python
function, and while it runs:

* ``triton.knobs.runtime.interpret`` is on (public: ``tl.constexpr_function``'s results
  follow it);
* a ``@triton.jit`` function the kernel calls (its own helpers, ``tl.cdiv``, ``tl.sum``
  and the rest of ``triton.language``'s, which are ``JITFunction`` objects in such a
  process) runs interpreted, as it would in interpreter mode, with the interpreter's patches
  of ``triton.language`` taken back when it returns (Triton's own ``__call__`` leaves them:
  harmless in interpreter mode, fatal to a later compile in a compiling process).

Used here: ``InterpretedFunction(fn)``, its ``run``/``rewrite``, ``interpreter._patch_lang``
with its scope's ``restore``, and ``JITFunction.__call__``. And :data:`TUNER_TRIAL`, the
``triton.autotune`` method that benchmarks one configuration (its launches and its hooks'
copies are the tuner's, not the program's). ``tests/test_trace_compat.py`` checks each.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

#: ``Autotuner._bench(*args, config, **meta)``: one configuration's benchmark.
TUNER_TRIAL = "_bench"
#: kernel function -> its interpreted twin
_TWINS: dict[Any, Any] = {}


def interpreted(kernel: Any) -> Any:
    """The kernel as Triton's interpreter runs it: itself when it is an
    ``InterpretedFunction``, else one built from its Python function (cached)."""
    InterpretedFunction = importlib.import_module(
        "triton.runtime.interpreter").InterpretedFunction
    if isinstance(kernel, InterpretedFunction):
        return kernel
    fn = kernel.fn
    twin = _TWINS.get(fn)
    if twin is None:
        twin = _TWINS[fn] = InterpretedFunction(fn)
    return twin


@contextlib.contextmanager
def interpreting() -> Iterator[None]:
    """While entered, Triton behaves as in interpreter mode for the kernels run (see the
    module docstring); everything is put back on exit."""
    triton = importlib.import_module("triton")
    interpreter = importlib.import_module("triton.runtime.interpreter")
    JITFunction = importlib.import_module("triton.runtime.jit").JITFunction

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        twin = interpreted(self)
        scope = interpreter._patch_lang(self.fn)
        try:
            return twin.rewrite()(*args, **kwargs)
        finally:
            scope.restore()

    runtime = triton.knobs.runtime
    was_interpreting = runtime.interpret
    original = JITFunction.__dict__["__call__"]
    runtime.interpret = True
    JITFunction.__call__ = call
    try:
        yield
    finally:
        JITFunction.__call__ = original
        runtime.interpret = was_interpreting

"""Profiling a JAX call, or reading a ``jax.profiler`` trace: the JAX ways in to a Profile.

* :func:`profile_call` (``pytest_roofline.profile(fn, *args)`` on a JAX function, jitted or
  not: one that is not is jitted whole) compiles and warms the call up outside the trace,
  then runs it *repeats* times under ``jax.profiler.trace`` at ``host_tracer_level`` 3 (so
  XLA:CPU records each executed op), waiting for each result, writes the XSpace to a
  temporary directory and reads it back through :func:`read_xplane`'s path, so a live
  profile and a saved trace can never disagree. Figures are per call.
* :func:`read_xplane` prices a trace recorded anywhere: a ``jax.profiler.trace``
  directory, or its ``.xplane.pb``; the chip is the device the trace names (a GPU's vendor,
  compute capability and memory), or *hw*.
* :func:`kind_of` tells a JAX trace from a PyTorch one by its content, so each reader
  refuses the other's file with what to do.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...atomic import why_not_written, write_with
from ...hardware import Hardware, get_hardware
from ..model import Profile
from ..rules import ProfileError
from . import jax_trace
from .xplane import is_xspace

_JAX_HINT = "pip install 'pytest-roofline[jax]'"
#: ``jax.profiler``'s perfetto export beside an XSpace: ``<host>.trace.json.gz``.
PERFETTO = ".trace.json.gz"


def is_jax_call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """True when *fn* or an argument is a JAX object (a jitted or compiled function, an
    array), also inside a pytree of arguments (dicts, lists, tuples: a model's parameters)
    or a ``functools.partial`` that holds them."""
    return _holds_jax((fn, *args, *kwargs.values()), depth=0, seen=[0])


def _holds_jax(value: Any, *, depth: int, seen: list[int]) -> bool:
    """Whether *value* is, or holds, a JAX object (walking at most 6 levels and 10,000
    values: a pytree of arrays shows one long before)."""
    seen[0] += 1
    if seen[0] > 10_000 or depth > 6:
        return False
    if type(value).__module__.split(".")[0] in ("jax", "jaxlib"):
        return True
    if isinstance(value, functools.partial):
        return _holds_jax((value.func, *value.args, *value.keywords.values()),
                          depth=depth + 1, seen=seen)
    if isinstance(value, dict):
        value = tuple(value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_jax(v, depth=depth + 1, seen=seen) for v in value)
    return False


def kind_of(path: str | os.PathLike[str]) -> str:
    """``"xspace"`` for a ``jax.profiler`` trace directory or XSpace file, ``"perfetto"``
    for ``jax.profiler``'s perfetto JSON, ``"json"`` for anything else (a PyTorch trace is
    JSON)."""
    where = Path(path)
    if where.is_dir():
        return "xspace"
    if where.name.endswith(".xplane.pb"):
        return "xspace"
    if not where.is_file():  # a FIFO, a device, nothing: never opened here (a FIFO blocks)
        return "json"
    try:
        with open(where, "rb") as handle:
            head = handle.read(64)
    except OSError:
        return "json"
    if is_xspace(head):
        return "xspace"
    if where.name.endswith(PERFETTO) and _names_jax_planes(where):
        return "perfetto"
    return "json"


def _names_jax_planes(where: Path) -> bool:
    """A perfetto JSON whose processes are XSpace planes (``/host:CPU``, ``/device:...``)."""
    import gzip

    try:
        with gzip.open(where, "rb") as handle:
            head = handle.read(4096)
    except (OSError, EOFError):
        return False
    return b'"/host:' in head or b'"/device:' in head


def perfetto_xspace(path: str | os.PathLike[str]) -> Path:
    """The ``.xplane.pb`` written beside ``jax.profiler``'s perfetto JSON *path*, or a
    ProfileError saying what the JSON lacks and what to give instead."""
    where = Path(path)
    sibling = where.with_name(where.name[: -len(PERFETTO)] + ".xplane.pb")
    if sibling.is_file():
        return sibling
    raise ProfileError(f"{str(where)!r} is jax.profiler's perfetto trace: it names the ops "
                       f"XLA ran but not the compiled HLO that prices them; give the "
                       f".xplane.pb jax.profiler.trace wrote beside it (or its directory)")


def read_xplane(path: str | os.PathLike[str], hw: Any = None, *,
                max_bytes: int | None = None) -> Profile:
    """The :class:`Profile` of a ``jax.profiler`` trace (a directory or its ``.xplane.pb``;
    its perfetto ``.trace.json.gz`` when the ``.xplane.pb`` is beside it), of at most
    *max_bytes* bytes."""
    notes: tuple[str, ...] = ()
    if kind_of(path) == "perfetto":
        sibling = perfetto_xspace(path)
        notes = (f"read {sibling.name}, the XSpace beside the perfetto trace",)
        path = sibling
    elif kind_of(path) != "xspace":
        raise ProfileError(f"{os.fspath(path)!r} is not a jax.profiler trace (a directory or "
                           f"an .xplane.pb): a PyTorch profiler trace (JSON) is read by "
                           f"pytest-roofline profile / read_trace, which tells them apart")
    notes += jax_trace.located(path)[1]
    trace = jax_trace.read(path, max_bytes)
    jax_trace.refuse_if_empty(trace)
    if hw is None:
        try:
            chip = jax_trace.chip_of(trace.device)
        except ProfileError as exc:  # said with the file it is about
            raise ProfileError(f"{Path(trace.path).name[:60]}: {exc}") from None
        notes += (f"chip {chip.name} from the trace's device",)
    else:
        chip = _hardware(hw)
    return jax_trace.build(trace, chip, source=Path(trace.path).name, notes=notes)


def gpu_index() -> int | None:
    """The index of the GPU JAX runs on by default (None: a CPU or another accelerator)."""
    import jax

    if jax.default_backend() not in ("gpu", "cuda", "rocm"):
        return None
    return int(jax.devices()[0].id)


def _hardware(hw: Any) -> Any:
    return hw if isinstance(hw, Hardware) else get_hardware(hw)


def profile_call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *,
                 chip: Any, warmup: int, repeats: int,
                 trace_to: Path | None) -> Profile:
    """Profile a JAX call (see the module docstring) against *chip*."""
    try:
        import jax
    except ImportError:
        raise ProfileError(f"profiling a JAX call needs jax: {_JAX_HINT}") from None
    # a jitted function, or one compiled ahead of time (jax.jit(f).lower(x).compile(), a
    # jax.stages.Compiled: called as it is, never jitted again), else jitted whole
    jitted = fn if hasattr(fn, "lower") or isinstance(fn, jax.stages.Compiled) \
        else jax.jit(fn)

    def call() -> None:
        try:
            jax.block_until_ready(jitted(*args, **kwargs))
        except (ValueError, RuntimeError) as exc:
            if "donated" not in str(exc):
                raise
            raise ProfileError(f"profile() calls {_name(fn)} {max(1, warmup) + repeats} "
                               f"times on the same arguments, and it donates them "
                               f"(donate_argnums), so the second call has none: profile "
                               f"it without donation") from None

    for _ in range(max(1, warmup)):  # the first call compiles: never inside the trace
        call()
    options = jax.profiler.ProfileOptions()
    options.host_tracer_level = 3  # XLA:CPU records its executed ops from level 3 only
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory() as folder:
        try:
            jax.profiler.start_trace(folder, profiler_options=options)
        except RuntimeError as exc:
            raise ProfileError(f"profile() runs the call under jax.profiler, which cannot "
                               f"start here: {str(exc).splitlines()[0][:120]} (a trace "
                               f"of your own still running?)") from None
        try:
            for _ in range(repeats):
                call()
        finally:
            jax.profiler.stop_trace()
        path = jax_trace.find(folder)
        trace = jax_trace.read(path)
        if trace_to is not None:
            _keep(path, trace_to)
    return jax_trace.build(trace, chip, source=f"profile({_name(fn)})", repeats=repeats)


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", type(fn).__name__))


def _keep(path: Path, target: Path) -> None:
    try:
        write_with(target, lambda tmp: shutil.copyfile(path, tmp))
    except OSError as exc:
        raise ProfileError(f"Profiler: the trace cannot be kept at {str(target)!r}: "
                           f"{why_not_written(exc, target)}") from None

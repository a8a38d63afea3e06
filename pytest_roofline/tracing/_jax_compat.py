"""Every private JAX API the JAX tracer uses, in one place.

JAX has no public way to read these; each is checked by ``tests/test_trace_compat.py``,
which fails when a JAX release moves or changes it (``.ci/newest`` runs the tracing tests
against the newest JAX the index serves):

* :data:`Literal`: a constant operand of an equation (``jax.extend.core.Literal``; before
  0.4.36, ``jax.core.Literal``), told apart from a variable by :func:`is_var`;
* :data:`CALLS`: the parameter a call-like primitive (``pjit``, ``custom_jvp_call``,
  ``custom_vjp_call``, ``closed_call``, ``remat``, ``shard_map``) keeps its sub-program in;
* :func:`scope`: the named scopes an equation ran in (``source_info.name_stack``);
* :func:`evaluate`: running a closed jaxpr on concrete values (``jax.core.eval_jaxpr``);
* the ``pallas_call`` primitive's parameters (:func:`pallas_name`, :func:`pallas_grid`,
  :func:`pallas_blocks`): the kernel's name (``name``, or its jaxpr's
  ``debug_info.func_name``), ``grid_mapping.grid`` and its ``block_mappings``, each with
  ``array_aval``, ``block_shape`` (ints, or ``Blocked(block_size)``, ``Squeezed`` and
  ``Element`` markers) and ``index_map_jaxpr``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

__all__ = ["CALLS", "Block", "Literal", "evaluate", "is_var", "pallas_blocks", "pallas_grid",
           "pallas_name", "scope"]

try:
    from jax.extend.core import Literal
except ImportError:  # jax < 0.4.36
    Literal = jax.core.Literal  # type: ignore[misc]

#: Parameters that hold a call-like primitive's sub-program.
CALLS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


def is_var(value: Any) -> bool:
    """True for a variable operand (not a constant)."""
    return not isinstance(value, Literal)


def scope(eqn: Any) -> str:
    """The named scopes (``jax.named_scope``, flax modules) an equation ran in, dotted."""
    return str(eqn.source_info.name_stack).replace("/", ".")


def evaluate(closed: Any, *args: Any) -> list[Any]:
    """Run a closed jaxpr on concrete values."""
    return list(jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *args))


def pallas_name(params: Any) -> str:
    """A ``pallas_call``'s kernel name: ``name=`` given to it, else its function's."""
    debug = getattr(params["jaxpr"], "debug_info", None)
    return str(params.get("name") or getattr(debug, "func_name", None) or "pallas_call")


def pallas_grid(params: Any) -> tuple[int, ...]:
    return tuple(int(g) for g in params["grid_mapping"].grid)


class Block(NamedTuple):
    """One operand of a ``pallas_call`` as its pipeline moves it."""

    array_bytes: float  # the whole array
    block_bytes: float  # one block
    index_at: Callable[..., tuple[int, ...]] | None  # grid point -> the block's index


def pallas_blocks(params: Any) -> list[Block]:
    blocks = []
    for mapping in params["grid_mapping"].block_mappings:
        array = mapping.array_aval
        itemsize = np.dtype(array.dtype).itemsize
        dims = [d if isinstance(d, int) else int(getattr(d, "block_size", 1) or 1)
                for d in mapping.block_shape]
        index_map = getattr(mapping, "index_map_jaxpr", None)
        index = None if index_map is None else _indexer(index_map)
        blocks.append(Block(float(math.prod(array.shape) * itemsize),
                            float(math.prod(dims) * itemsize), index))
    return blocks


def _indexer(closed: Any) -> Callable[..., tuple[int, ...]]:
    def index(*point: int) -> tuple[int, ...]:
        return tuple(int(i) for i in evaluate(closed, *point))
    return index

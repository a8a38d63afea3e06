"""Formulas for custom ops users meet most, shipped with the tracer (``register_op`` for the
rest; a registered formula of the same name wins).

**flash-attn** (Dao-AILab/flash-attention, ``flash_attn/flash_attn_interface.py``; the ops
are named ``flash_attn::...`` in 2.6-2.7 and ``flashattn::...`` later, both served):

* ``_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left,
  window_size_right, softcap, alibi_slopes, return_softmax)``, q ``(batch, seqlen_q, heads,
  head_dim)``, k and v ``(batch, seqlen_k, kv_heads, head_dim)``: as ``ops.attention``, the
  products Q·Kᵀ and P·V over the *scored* pairs (causal masks align to the bottom-right
  corner, as flash-attn's do; ``window_size_*`` >= 0 bound each query's keys) on the matrix
  units with all the bytes (Q, K, V read; O and the fp32 log-sum-exp written), and the
  softmax, 5 FLOPs a pair, on the vector units.
* ``_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p,
  softmax_scale, causal, window_size_left, window_size_right, ...)``: attention's backward
  as every path prices it (``ops._family.ATTENTION_BACKWARD_VECTOR_FLOPS``: P recomputed,
  five products over the scored pairs, the recomputed softmax and dS = P·(dP - D), 5 + 3
  FLOPs a pair); bytes: dO, Q, K, V, O, the log-sum-exp read, dQ, dK, dV written.
* ``_flash_attn_varlen_forward`` / ``_flash_attn_varlen_backward``: packed sequences
  (``total, heads, head_dim``) split by ``cu_seqlens_q``/``cu_seqlens_k``; their lengths
  are read when the tensors hold values, else (meta or fake tensors) the sequences are
  taken as equal: for equal query and key lengths that is the fewest pairs the totals allow
  (the bound stays a lower bound).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from ..engine.workload import Workload
from ..ops import _family as R
from . import _kernels as K
from . import _torch_args as T
from . import registry

__all__ = ["NAMES"]


def pairs(q_len: int, kv_len: int, *, causal: bool, left: int = -1, right: int = -1) -> float:
    """Scored (query, key) pairs of one sequence and head, with flash-attn's masks: causal
    aligned to the bottom-right corner; a window of *left* keys before and *right* after the
    query's own position (-1: unbounded)."""
    return R.scored_pairs(q_len, kv_len, causal=causal, left=None if left < 0 else left,
                          right=None if right < 0 else right)


def _lengths(cu: Any, total: int) -> list[int]:
    """Per-sequence lengths from cumulative ones, or equal shares when they hold no values."""
    batch = max(int(cu.numel()) - 1, 1)
    if cu.device.type != "meta":
        try:
            bounds = [int(v) for v in cu.tolist()]
            return [b - a for a, b in itertools.pairwise(bounds)]
        except (RuntimeError, NotImplementedError):  # fake tensors hold no values
            pass
    share, extra = divmod(total, batch)
    return [share + (1 if i < extra else 0) for i in range(batch)]


def _attention(name: str, scored: float, q: Any, v: Any, nbytes: float) -> Workload:
    kernels = K.attention(name, heads=1.0, pairs=scored, head_dim=int(q.shape[-1]),
                          value_dim=int(v.shape[-1]), nbytes=nbytes, dtype=T.precision(q),
                          softmax_dtype=T.precision(q))
    return Workload(kernels, name=name)


def _backward(name: str, scored: float, q: Any, v: Any, nbytes: float) -> Workload:
    kernels = K.attention_backward(name, heads=1.0, pairs=scored, head_dim=int(q.shape[-1]),
                                   value_dim=int(v.shape[-1]), nbytes=nbytes,
                                   dtype=T.precision(q))
    return Workload(kernels, name=name)


def _window(args: tuple[Any, ...], at: int) -> tuple[int, int]:
    return (int(args[at]) if len(args) > at else -1,
            int(args[at + 1]) if len(args) > at + 1 else -1)


def _flash_pairs(q: Any, k: Any, causal: object, rest: tuple[Any, ...],
                 kw: dict[str, Any]) -> float:
    """The (query, key) pairs a dense flash-attn call scores: batch x heads x the pairs its
    causal mask and window (keywords, or the positional pair after ``causal``) leave."""
    left, right = kw.get("window_size_left", -1), kw.get("window_size_right", -1)
    if rest:
        left, right = _window(rest, 0)
    batch, q_len, heads = int(q.shape[0]), int(q.shape[1]), int(q.shape[2])
    return batch * heads * pairs(q_len, int(k.shape[1]), causal=bool(causal), left=left,
                                 right=right)


def flash_forward(q: Any, k: Any, v: Any, dropout_p: float = 0.0, softmax_scale: Any = None,
                  causal: bool = False, *rest: Any, **kw: Any) -> Workload:
    scored = _flash_pairs(q, k, causal, rest, kw)
    # the log-sum-exp: one a query and head
    lse = float(R.lse_bytes(int(q.shape[0]) * int(q.shape[2]) * int(q.shape[1])))
    return _attention("flash_attn_forward", scored, q, v, T.nbytes([q, k, v], [q]) + lse)


def flash_backward(dout: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, dq: Any = None,
                   dk: Any = None, dv: Any = None, dropout_p: float = 0.0,
                   softmax_scale: Any = None, causal: bool = False, *rest: Any,
                   **kw: Any) -> Workload:
    scored = _flash_pairs(q, k, causal, rest, kw)
    moved = T.nbytes([dout, q, k, v, out, lse], [q, k, v])  # dQ, dK, dV written
    return _backward("flash_attn_backward", scored, q, v, moved)


def _varlen_pairs(q: Any, k: Any, cu_q: Any, cu_k: Any, causal: bool, left: int,
                  right: int) -> float:
    heads = int(q.shape[-2])
    q_lengths = _lengths(cu_q, int(q.shape[0]))
    k_lengths = _lengths(cu_k, int(k.shape[0]))
    return heads * sum(pairs(a, b, causal=causal, left=left, right=right)
                       for a, b in zip(q_lengths, k_lengths, strict=False))


def flash_varlen_forward(q: Any, k: Any, v: Any, cu_seqlens_q: Any, cu_seqlens_k: Any,
                         max_seqlen_q: int = 0, max_seqlen_k: int = 0, dropout_p: float = 0.0,
                         softmax_scale: Any = None, causal: bool = False,
                         window_size_left: int = -1, window_size_right: int = -1,
                         *rest: Any, **kw: Any) -> Workload:
    scored = _varlen_pairs(q, k, cu_seqlens_q, cu_seqlens_k, bool(causal),
                           int(window_size_left), int(window_size_right))
    lse = float(R.lse_bytes(int(q.shape[0]) * int(q.shape[1])))
    return _attention("flash_attn_varlen_forward", scored, q, v,
                      T.nbytes([q, k, v, cu_seqlens_q, cu_seqlens_k], [q]) + lse)


def flash_varlen_backward(dout: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, dq: Any,
                          dk: Any, dv: Any, cu_seqlens_q: Any, cu_seqlens_k: Any,
                          max_seqlen_q: int = 0, max_seqlen_k: int = 0,
                          dropout_p: float = 0.0, softmax_scale: Any = None,
                          causal: bool = False, window_size_left: int = -1,
                          window_size_right: int = -1, *rest: Any, **kw: Any) -> Workload:
    scored = _varlen_pairs(q, k, cu_seqlens_q, cu_seqlens_k, bool(causal),
                           int(window_size_left), int(window_size_right))
    moved = T.nbytes([dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k], [q, k, v])
    return _backward("flash_attn_varlen_backward", scored, q, v, moved)


_FLASH: dict[str, Callable[..., Workload]] = {
    "_flash_attn_forward": flash_forward, "_flash_attn_backward": flash_backward,
    "_flash_attn_varlen_forward": flash_varlen_forward,
    "_flash_attn_varlen_backward": flash_varlen_backward}

#: The ops named in the module docstring, each registered as a built-in formula.
NAMES = tuple(f"{namespace}::{op}" for namespace in ("flash_attn", "flashattn") for op in _FLASH)
for _name in NAMES:
    registry.BUILTIN.register(_name, _FLASH[_name.partition("::")[2]], by=__name__)

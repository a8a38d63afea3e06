"""Attention's aten ops, forward and backward: each read in its schema's layout, priced by
``ops.attention``'s builders (the one rule every path calls), registered in ``_aten``'s
matrix table for :data:`~._aten.SDPA` and :data:`~._aten.SDPA_BACKWARD`."""

from __future__ import annotations

import math
from typing import Any

import torch

from ..engine.workload import Kernel
from ..ops import _family as R
from . import _kernels as K
from . import _torch_args as T
from ._aten import MATRIX_KERNELS, SDPA, SDPA_BACKWARD, Call

#: Attention ops whose query, key and value are ``[batch, seq, heads, dim]`` (flash-attn's and
#: xformers' layout; packed ``[total, heads, dim]`` with cumulative lengths), not SDPA's
#: ``[batch, heads, seq, dim]`` (every other op of :data:`SDPA` and :data:`SDPA_BACKWARD`).
BSHD = frozenset({"_flash_attention_forward", "_efficient_attention_forward",
                  "_flash_attention_backward", "_efficient_attention_backward"})


def _causal(bound: dict[str, Any]) -> bool:
    """Causal with no explicit mask (a mask given is scored in full; an empty one is an
    undefined tensor, as a trace records cuDNN's absent bias); xformers' mask types 1 and 2
    are causal from the top-left and from the bottom-right corner."""
    causal = bool(bound.get("is_causal", False)) or bound.get("custom_mask_type") in (1, 2)
    mask = bound.get("attn_mask", bound.get("attn_bias", bound.get("bias")))
    return causal and (mask is None or (isinstance(mask, torch.Tensor) and mask.numel() == 0))


def _window(bound: dict[str, Any]) -> tuple[int | None, int | None]:
    """The keys before and after its own position each query sees (None: all of them)."""
    def side(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
            else None
    return (side(bound.get("window_size_left", bound.get("window_size"))),
            side(bound.get("window_size_right")))


def _shares(total: int, cumulative: object) -> list[int]:
    """Packed sequences' lengths: equal shares of *total* among the sequences the cumulative
    lengths count (a trace records their size, not their values; for equal query and key
    lengths equal shares are the fewest pairs the totals allow)."""
    batch = max(int(cumulative.numel()) - 1, 1) if isinstance(cumulative, torch.Tensor) else 1
    share, extra = divmod(total, batch)
    return [share + (1 if i < extra else 0) for i in range(batch)]


def scored(base: str, q: torch.Tensor, k: torch.Tensor, bound: dict[str, Any]) -> float:
    """Scored (query, key) pairs of an attention op, every sequence and head, read in its
    schema's layout (:data:`BSHD` or SDPA's); torch's ``is_causal`` aligns top-left (for
    fewer queries than keys the fewer pairs: the bound stays a lower bound)."""
    causal, (left, right) = _causal(bound), _window(bound)

    def pairs(q_len: int, kv_len: int) -> float:
        return R.scored_pairs(q_len, kv_len, causal=causal, left=left, right=right,
                              align="top_left")

    if base not in BSHD:
        return float(math.prod(q.shape[:-2])) * pairs(q.shape[-2], k.shape[-2])
    if q.dim() == 3:  # packed: [total, heads, dim]
        cu_q = bound.get("cum_seq_q", bound.get("cu_seqlens_q"))
        cu_k = bound.get("cum_seq_k", bound.get("cu_seqlens_k"))
        return float(q.shape[1]) * sum(pairs(a, b) for a, b in zip(
            _shares(q.shape[0], cu_q), _shares(k.shape[0], cu_k if cu_k is not None else cu_q),
            strict=False))
    return float(q.shape[0] * q.shape[2]) * pairs(q.shape[1], k.shape[1])


def attention(c: Call, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, pairs: float,
              nbytes: float) -> list[Kernel]:
    """Fused attention over *pairs* scored pairs (:func:`scored`)."""
    return K.attention(c.name, heads=1.0, pairs=pairs, head_dim=q.shape[-1],
                       value_dim=v.shape[-1], nbytes=nbytes,
                       dtype=c.dtype or T.precision(q), softmax_dtype=T.precision(q))


def _qkv(c: Call, bound: dict[str, Any], first: int) -> tuple[torch.Tensor, ...]:
    q, k, v = bound.get("query"), bound.get("key"), bound.get("value")
    if q is None or k is None or v is None:
        q, k, v = c.args[first], c.args[first + 1], c.args[first + 2]
    return q, k, v


@MATRIX_KERNELS.rows(SDPA)
def _sdpa(c: Call) -> list[Kernel]:
    bound = c.bind()
    q, k, v = _qkv(c, bound, 0)
    return attention(c, q, k, v, pairs=scored(c.base, q, k, bound),
                     nbytes=T.nbytes(c.inputs, c.outputs[:1]))


@MATRIX_KERNELS.rows(SDPA_BACKWARD)
def _sdpa_backward(c: Call) -> list[Kernel]:
    """Attention's backward, as every path prices it (``ops.attention.backward_kernels``);
    bytes: the recorded tensors (dO, Q, K, V, O, the log-sum-exp read; dQ, dK, dV written)."""
    bound = c.bind()
    q, k, v = _qkv(c, bound, 1)
    return K.attention_backward(c.name, heads=1.0, pairs=scored(c.base, q, k, bound),
                                head_dim=q.shape[-1], value_dim=v.shape[-1],
                                nbytes=T.nbytes(c.inputs, c.outputs),
                                dtype=c.dtype or T.precision(q))

"""Formulas for serving engines' custom ops whose semantics their sources make public, shipped
with the tracer (``register_op`` for the rest; a registered formula of the same name wins).
Each is called with the op's arguments in the order its library declares them (tensors on
meta, fake or real; scalars as values) and counts by the tracer's rules (``ops._family``):

* ``aiter::rmsnorm(out, input, weight, epsilon, ...)`` (ROCm/aiter ``rms_norm``): RMS norm
  of each row with a weight, 4 FLOPs an element (square, mean, rsqrt-scale, weight); bytes:
  the input and the weight read, the output written.
* ``aiter::add_rmsnorm(out, input, residual_in, residual_out, weight, epsilon, ...)``
  (aiter ``rmsnorm2d_fwd_with_add``): residual_out = input + residual_in, out = its RMS
  norm times the weight: 1 + 4 FLOPs an element; bytes: input, residual_in and the weight
  read, out and residual_out written.
* ``sgl_kernel::silu_and_mul(out, input)`` (SGLang's ``act_and_mul_kernel``, vLLM's
  ``silu_and_mul``): out = silu(x[..., :d]) * x[..., d:], 4 + 1 FLOPs an output element;
  bytes: input read, out written.
* ``sgl_kernel::rotary_embedding(positions, query, key, head_size, cos_sin_cache,
  is_neox)`` (vLLM's and SGLang's rotary kernel): the first ``rot_dim`` (the cache's second
  dim) elements of each head of query and key rotated in place, each pair by its cos and
  sin (4 multiplies, 2 adds: 3 FLOPs an element); bytes: positions read, query and key
  read and written, one cache row read per token (at most the cache's rows: the fewest).
* ``sglang::store_cache(k, v, k_cache, v_cache, loc, ...)`` (SGLang's ``store_kvcache``): k
  and v rows written into the caches at ``loc``: a copy, no FLOPs; bytes: k, v and loc
  read, as many cache rows written.
* ``aiter::mha_batch_prefill(q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices,
  max_seqlen_q, max_seqlen_k, p_dropout, softmax_scale, logits_soft_cap, zero_tensors,
  is_causal, window_size_left, window_size_right, ...)`` (aiter's paged prefill attention):
  fused attention (``ops.attention``'s builder) over the scored pairs. The per-sequence
  lengths are values the trace does not record: a causal call scores at least each query's
  own chunk up to itself (bottom-right aligned, a query sees at least the keys of its own
  sequence's queries before it), fewest with the queries split equally among the
  sequences (the sum of l(l+1)/2 is convex), so that is counted; a non-causal one is
  refused (its pairs could be as few as one key a query). Bytes: Q read, O written, and
  K and V rows and their page entries read once for as many keys as the call must have
  (one a query: a causal sequence has no fewer keys than queries; the page table may be
  padded past the keys it uses, so its length is not taken).
"""

from __future__ import annotations

import math
from typing import Any

from ..engine.workload import Kernel, Workload
from ..ops import _family as R
from . import _kernels as K
from . import registry
from ._base import TraceError

__all__ = ["NAMES"]


def _n(t: Any) -> int:
    return math.prod(int(d) for d in t.shape)


def _bytes(*tensors: Any) -> float:
    return float(sum(_n(t) * int(t.dtype.itemsize) for t in tensors if t is not None))


def _precision(t: Any) -> str | None:
    return K.precision(t.dtype)


def rmsnorm(out: Any, x: Any, weight: Any, *rest: Any, **kw: Any) -> Kernel:
    n = float(_n(x))
    return K.vector("rmsnorm", flops=R.norm_flops("rmsnorm", n, weight=True, bias=False),
                    nbytes=_bytes(x, weight, out), dtype=_precision(x))


def add_rmsnorm(out: Any, x: Any, residual_in: Any, residual_out: Any, weight: Any,
                *rest: Any, **kw: Any) -> Kernel:
    n = float(_n(x))
    flops = n + R.norm_flops("rmsnorm", n, weight=True, bias=False)
    return K.vector("add_rmsnorm", flops=flops,
                    nbytes=_bytes(x, residual_in, weight, out, residual_out),
                    dtype=_precision(x))


def silu_and_mul(out: Any, x: Any, *rest: Any, **kw: Any) -> Kernel:
    n = float(_n(out))
    return K.vector("silu_and_mul", flops=R.element_flops("silu", n) + n,
                    nbytes=_bytes(x, out), dtype=_precision(out))


#: FLOPs a rotated element costs: each pair (x1·cos - x2·sin, x2·cos + x1·sin) is 4
#: multiplies and 2 adds.
ROTARY_FLOPS = 3.0


def rotary_embedding(positions: Any, query: Any, key: Any, head_size: int,
                     cos_sin_cache: Any, *rest: Any, **kw: Any) -> Kernel:
    tokens = int(positions.shape[0]) if positions.shape else 1
    rot_dim = int(cos_sin_cache.shape[-1])
    size = int(head_size)
    if size <= 0 or rot_dim > size:
        raise TraceError(f"rotary_embedding: head_size {size} and a cache of rot_dim "
                         f"{rot_dim}: expected 0 < rot_dim <= head_size")
    heads = (_n(query) + (_n(key) if key is not None else 0)) // size
    rows = min(tokens, int(cos_sin_cache.shape[0]))
    nbytes = (_bytes(positions) + 2 * _bytes(query, key)
              + rows * rot_dim * int(cos_sin_cache.dtype.itemsize))
    return K.vector("rotary_embedding", flops=ROTARY_FLOPS * heads * rot_dim,
                    nbytes=float(nbytes), dtype=_precision(query))


def store_cache(k: Any, v: Any, k_cache: Any, v_cache: Any, loc: Any, *rest: Any,
                **kw: Any) -> Kernel:
    return K.vector("store_cache", flops=0.0, nbytes=2 * _bytes(k, v) + _bytes(loc),
                    dtype=_precision(k))


def mha_batch_prefill(q: Any, k: Any, v: Any, cu_seqlens_q: Any, kv_indptr: Any,
                      kv_page_indices: Any, max_seqlen_q: int = 0, max_seqlen_k: int = 0,
                      p_dropout: float = 0.0, softmax_scale: Any = None,
                      logits_soft_cap: float = 0.0, zero_tensors: bool = False,
                      is_causal: bool = False, window_size_left: int = -1,
                      window_size_right: int = -1, *rest: Any, **kw: Any) -> Workload:
    if not is_causal:
        raise TraceError("a non-causal batch prefill: its sequences' key lengths are not "
                         "recorded, and could be as few as one key a query")
    total, heads, head_dim = (int(d) for d in q.shape[:3])
    batch = max(_n(cu_seqlens_q) - 1, 1)
    share, extra = divmod(total, batch)
    left = None if int(window_size_left) < 0 else int(window_size_left)
    per_head = sum(R.scored_pairs(length, length, causal=True, left=left)
                   for length in [share + 1] * extra + [share] * (batch - extra))
    # keys: at least one a query (causal, bottom-right: a sequence has no fewer keys than
    # queries), at most the page table's entries (it may be padded past the keys used)
    tokens = min(_n(kv_page_indices), total)
    kv_heads, value_dim = int(k.shape[-2]), int(v.shape[-1])
    width = int(k.dtype.itemsize)
    nbytes = (_bytes(q, cu_seqlens_q, kv_indptr)
              + tokens * int(kv_page_indices.dtype.itemsize)
              + tokens * kv_heads * (head_dim + value_dim) * width
              + total * heads * value_dim * int(q.dtype.itemsize))  # O written
    kernels = K.attention("mha_batch_prefill", heads=1.0, pairs=heads * per_head,
                          head_dim=head_dim, value_dim=value_dim, nbytes=float(nbytes),
                          dtype=_precision(q), softmax_dtype=_precision(q))
    return Workload(kernels, name="mha_batch_prefill")


_FORMULAS: dict[str, registry.Formula] = {
    "aiter::rmsnorm": rmsnorm, "aiter::add_rmsnorm": add_rmsnorm,
    "sgl_kernel::silu_and_mul": silu_and_mul, "sgl_kernel::rotary_embedding": rotary_embedding,
    "sglang::store_cache": store_cache, "aiter::mha_batch_prefill": mha_batch_prefill}
#: The ops named in the module docstring, each registered as a built-in formula.
NAMES = tuple(_FORMULAS)
for _name, _formula in _FORMULAS.items():
    registry.BUILTIN.register(_name, _formula, by=__name__)

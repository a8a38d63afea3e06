"""Higher-order operators in a torch trace: ``torch.cond``, ``while_loop``, ``wrap_triton``,
``flex_attention`` and whatever else the dispatch mode meets.

torch hands a dispatch mode that declares ``supports_higher_order_operators`` every
higher-order operator (HOP) with the mode popped; what the mode records is its choice, as
torch's own ``FlopCounterMode`` does:

* **cond(pred, true_fn, false_fn, operands)**: on real tensors the branch the predicate takes
  is run and recorded. On meta or fake tensors the predicate has no value: both branches are
  traced and the cheaper one (fewer FLOPs, then fewer bytes) is kept, so the bound stays a
  lower bound (FlopCounterMode keeps the larger); the assumption is named on the Workload.
* **while_loop(cond_fn, body_fn, carried, additional)**: on real tensors the loop runs here,
  its condition and body recorded each trip. On meta the trip count has no value: the body is
  recorded once and the Workload says so.
* **triton_kernel_wrapper_mutation / _functional** (``wrap_triton(kernel)[grid](...)``): the
  kernel is launched as the HOP's own implementation does; the launch is recorded by the
  Triton watcher (:mod:`._triton`), one kernel named after the kernel function. On meta or
  fake tensors torch's HOP launches nothing: its dense implementation is run for the
  watcher, which replays the launch in Triton's interpreter (:mod:`._triton_replay`).
* **flex_attention**: one attention kernel over the (query, key) pairs its block mask makes it
  compute: every pair of each block it visits (partial blocks, where ``mask_mod`` is applied,
  and full ones), cut at the sequence ends; Q·Kᵀ and P·V at 2 FLOPs a multiply-accumulate on
  the matrix units, its softmax at 5 FLOPs a pair on the vector units (``score_mod``'s own
  arithmetic is not counted: less, never more). Bytes: query, key, value and the outputs once.
  On meta the block counts have no value: every block is counted, and the Workload says so.
* **Any other** HOP runs as torch runs it, unrecorded inside, and is listed in
  ``Workload.unknown`` as ``higher_order::<name>`` with the bytes of its tensors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from . import _kernels as K
from . import _torch_args as T
from . import _torch_compat as C

#: The HOPs of ``wrap_triton``: their launches are recorded by the Triton watcher.
_TRITON = frozenset({"triton_kernel_wrapper_mutation", "triton_kernel_wrapper_functional"})


def _valued(t: object) -> bool:
    """True when *t* has a value to read: a real tensor, or a plain Python value."""
    if not isinstance(t, torch.Tensor):
        return True
    return not (t.is_meta or type(t).__name__ == "FakeTensor")


def dispatch(mode: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run and record one HOP (see the module docstring); the mode is popped on entry."""
    name = str(getattr(func, "_name", None) or func.name())
    recorder = mode.recorder
    if name == "cond":
        return _cond(mode, *args, **kwargs)
    if name == "while_loop":
        return _while_loop(mode, *args, **kwargs)
    if name in _TRITON:
        if recorder.recording and not all(_valued(t) for t in T.tensors(
                list(dict(kwargs.get("kwargs") or {}).values()))):
            C.launch_triton_hop(kwargs)  # on meta or fake the HOP launches nothing: replay
        return func(*args, **kwargs)
    out = func(*args, **kwargs)
    if not recorder.recording:
        return out
    if name == "flex_attention":
        _flex_attention(recorder, args, out)
        return out
    key = f"higher_order::{name}"
    recorder.unknown[key] = recorder.unknown.get(key, 0) + 1
    outputs = list(T.tensors(out))
    recorder.kernels.append(K.vector(recorder.label(key), flops=0.0,
                                     nbytes=T.nbytes(T.tensors(list(args)), outputs),
                                     dtype=None))
    return out



def _cond(mode: Any, pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
          operands: Any = ()) -> Any:
    recorder = mode.recorder
    operands = tuple(operands)
    if _valued(pred):
        taken = true_fn if bool(pred) else false_fn
        with mode:
            return taken(*operands)
    start = len(recorder.kernels)
    with mode:
        out = true_fn(*operands)
    first = recorder.kernels[start:]
    del recorder.kernels[start:]
    with mode:
        false_fn(*operands)
    second = recorder.kernels[start:]
    del recorder.kernels[start:]

    def cost(kernels: list[Any]) -> tuple[float, float]:
        return (sum(k.flops * k.count for k in kernels), sum(k.bytes * k.count for k in kernels))

    kept = first if cost(first) <= cost(second) else second
    recorder.kernels.extend(kept)
    if recorder.recording:
        which = "true" if kept is first else "false"
        recorder.assume(f"torch.cond predicate on meta: the cheaper branch ({which}) counted")
    return out


def _while_loop(mode: Any, cond_fn: Callable[..., Any], body_fn: Callable[..., Any],
                carried: Any, additional: Any = (), **kwargs: Any) -> Any:
    recorder = mode.recorder
    carry = tuple(carried)
    extra = tuple(additional)
    with mode:
        test = cond_fn(*carry, *extra)
    if not _valued(test):
        with mode:
            out = body_fn(*carry, *extra)
        if recorder.recording:
            recorder.assume("torch.while_loop trip count on meta: the body counted once")
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)
    while bool(test):  # read with the mode popped: the loop's own test, not an op
        with mode:
            out = body_fn(*carry, *extra)
            carry = tuple(out) if isinstance(out, (list, tuple)) else (out,)
            test = cond_fn(*carry, *extra)
    return carry


#: Whether an op has a CompositeImplicitAutograd kernel, per op (asked once each).
_IMPLICIT: dict[Any, bool] = {}


def decomposed(mode: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """An op that reaches the mode undecomposed (``aten::matmul`` inside a ``cond`` branch,
    which runs below autograd): its decomposition run under the mode, so its parts are
    recorded as they are everywhere else (as FlopCounterMode does); NotImplemented for an
    op that has none."""
    implicit = _IMPLICIT.get(func)
    if implicit is None:
        implicit = _IMPLICIT[func] = C.has_implicit_decomposition(func)
    if not implicit:
        return NotImplemented
    with mode:
        return func.decompose(*args, **kwargs)


is_higher_order = C.is_higher_order


def _flex_attention(recorder: Any, args: tuple[Any, ...], out: Any) -> None:
    """One attention kernel for ``flex_attention(query, key, value, score_mod, block_mask,
    ...)`` (see the module docstring)."""
    q, k, v = args[0], args[1], args[2]
    block_mask = args[4] if len(args) > 4 else None
    q_len, kv_len = q.shape[-2], k.shape[-2]
    pairs_per_head = scored_pairs(block_mask, q_len, kv_len)
    if pairs_per_head is None:
        pairs_per_head = float(q_len) * kv_len
        recorder.assume("flex_attention block mask on meta: every block counted")
    heads = float(math.prod(q.shape[:-2]))
    inputs = [q, k, v]
    recorder.kernels.extend(K.attention(
        recorder.label("flex_attention"), heads=heads, pairs=pairs_per_head,
        head_dim=q.shape[-1], value_dim=v.shape[-1], nbytes=T.nbytes(inputs, T.tensors(out)),
        dtype=recorder.dtype or K.precision(q.dtype), softmax_dtype=K.precision(q.dtype)))


def scored_pairs(block_mask: Any, q_len: int, kv_len: int) -> float | None:
    """Pairs per (batch, head) that a flex_attention block mask makes the kernel compute, on
    average over the batch and heads; None when its counts have no value (meta).

    The HOP takes the mask as ``BlockMask.as_tuple()``: ``(q_length, kv_length,
    kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, ..., Q_BLOCK_SIZE,
    KV_BLOCK_SIZE, mask_mod)`` (checked by tests/test_trace_higher_order.py).
    """
    if not isinstance(block_mask, tuple) or len(block_mask) < 7:
        return float(q_len) * kv_len
    kv_num, kv_idx, full_num, full_idx = block_mask[2:6]
    q_block, kv_block = int(block_mask[-3]), int(block_mask[-2])
    if not isinstance(kv_num, torch.Tensor) or not _valued(kv_num):
        return None
    total = _visited(kv_num, kv_idx, q_block, kv_block, q_len, kv_len)
    if isinstance(full_num, torch.Tensor):
        if not _valued(full_num):
            return None
        total = total + _visited(full_num, full_idx, q_block, kv_block, q_len, kv_len)
    groups = float(math.prod(kv_num.shape[:-1])) or 1.0
    return float(total.sum().item()) / groups


def _visited(num: torch.Tensor, indices: torch.Tensor, q_block: int, kv_block: int,
             q_len: int, kv_len: int) -> torch.Tensor:
    """Pairs in the visited blocks, per (batch, head, query block), cut at the ends."""
    num, indices = num.cpu().long(), indices.cpu().long()
    q_blocks = num.shape[-1]
    rows = torch.clamp(q_len - torch.arange(q_blocks) * q_block, min=0, max=q_block)
    widths = torch.clamp(kv_len - indices * kv_block, min=0, max=kv_block)
    used = torch.arange(indices.shape[-1]) < num.unsqueeze(-1)
    cols = (widths * used).sum(-1)
    return (rows * cols).to(torch.float64)

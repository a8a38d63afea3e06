"""Scaled dot-product attention, fused (FlashAttention-style) or unfused.

Shapes: *batch* sequences, *q_len* queries and *kv_len* keys per sequence, *heads* query
heads of size *head_dim*, *kv_heads* key/value heads (grouped-query attention: kv_heads divides
heads; multi-query attention: kv_heads = 1). Queries are the last q_len positions of the
kv_len-long sequence, so with ``causal=True`` query i sees kv_len - q_len + i + 1 keys.

Formulas (per sequence and query head; P = scored (query, key) pairs):

* P = q_len·kv_len; causal: P = q_len·(kv_len - q_len) + q_len·(q_len + 1)/2, about half
  of q_len·kv_len in prefill (q_len = kv_len), all of it in decode (q_len = 1).
* Sliding window of W keys (causal, as in Mistral 7B v0.1): query i sees
  min(kv_len - q_len + i + 1, W) keys, so P = sum of those counts, and only the last
  min(kv_len, q_len - 1 + W) positions of K and V are read: a decode step reads min(context, W).
* Matrix FLOPs: 2·P·head_dim for Q·Kᵀ plus 2·P·v_head_dim for P·V (= 4·P·head_dim when the
  value heads are as wide as the query/key heads).
* Value heads may be narrower or wider than query/key heads (``v_head_dim``, DeepSeek's
  multi-head latent attention): Q and K are priced with ``head_dim``, V and O with
  ``v_head_dim``. ``shared_kv``: V is the leading ``v_head_dim`` columns of K, one tensor read
  once (MLA decoding from its latent cache with the up-projections absorbed: one KV head of
  kv_lora_rank + qk_rope_head_dim, V its first kv_lora_rank columns).
* Softmax: 5 FLOPs per score (see ``ops.vector``), vector units.

Fused (one pass, scores stay on chip) is modelled as two kernels timed as one: the two
products on the matrix units, carrying all the off-chip traffic (Q read, K and V read with the
**KV** head count, O written; each once, the ideal tiling), and the softmax on the vector
units with no off-chip bytes, in the products' epilogue (``Kernel.epilogue_of``). Keeping the
softmax apart prices it at the vector peak of its precision (bf16 where the chip lists one,
else the chip's documented fallback, fp32 on most) rather than the tensor-core peak. The
kernel's time is the larger of the matrix time, the softmax's vector time and the memory time,
not the sum of the first two: the matrix and vector units are separate hardware, and
FlashAttention-3 (Hopper) and -4 (Blackwell) run the softmax of one tile while the tensor
cores multiply the next (ping-pong warpgroups, fully asynchronous MMA), so no schedule can be
bounded by the sum. FlashAttention-2 overlaps them less, and sits further below this bound.
:mod:`pytest_roofline.engine.fusion` lists every kernel timed this way.

Unfused (three kernels): Q·Kᵀ writes the full score matrix, softmax reads and writes it, P·V
reads it. The score matrix is materialized in full even when causal, so unfused FLOPs and
bytes count every q_len x kv_len score. K and V are read with the KV head count.
"""

from __future__ import annotations

from .. import dtypes
from ..engine.workload import Kernel, Knob, Number, Workload
from ..errors import WorkloadError, brief
from . import _family
from ._common import (
    array_precision,
    dtype_of,
    flag,
    input_error,
    is_arraylike,
    is_sweep,
    precision,
    shape_of,
    show,
    size,
    sized_precision,
    sweep_size,
)
from ._family import SOFTMAX_FLOPS

_LAYOUTS = {"bshd": (0, 1, 2, 3), "bhsd": (0, 2, 1, 3)}  # positions of (b, s, h, d)


def scored_pairs(q_len: int, kv_len: int, causal: bool, window: int | None = None) -> float:
    """Scored (query, key) pairs per sequence and head (see the module docstring): queries
    are the last q_len positions; a window of W keys includes the query's own."""
    return _family.scored_pairs(q_len, kv_len, causal=causal,
                                left=None if window is None else window - 1)


def keys_read(q_len: int, kv_len: int, window: int | None) -> int:
    """Positions of K and V a call reads: all of them, or the span the window reaches."""
    return kv_len if window is None else min(kv_len, q_len - 1 + window)


def attention_kernels(prefix: str, batch: Number, q_len: int, kv_len: int, heads: int,
                      kv_heads: int, head_dim: int, causal: bool, fused: bool, dtype: str,
                      kv_dtype: str, count: Number = 1.0,
                      window: int | None = None, compute: str | None = None, *,
                      v_head_dim: int | None = None, shared_kv: bool = False) -> list[Kernel]:
    """The kernels of one attention call (no checks; shared with the model builders).

    *dtype* and *kv_dtype* price the bytes of Q/O and K/V; *compute* (default *dtype*) is the
    precision the two products are computed in (an override prices the products only, as the
    tracer does: the softmax stays in *dtype*). *v_head_dim* (default *head_dim*) sizes V
    and O; *shared_kv* reads V as the leading v_head_dim columns of K (see the module
    docstring)."""
    work = compute or dtype
    dv = head_dim if v_head_dim is None else v_head_dim
    item, kv_item = dtypes.ITEMSIZE[dtype], dtypes.ITEMSIZE[kv_dtype]
    q_bytes = batch * q_len * heads * head_dim * item  # Q read
    o_bytes = batch * q_len * heads * dv * item  # O written
    read = kv_len if window is None else keys_read(int(q_len), int(kv_len), window)
    k_bytes = batch * read * kv_heads * head_dim * kv_item  # KV heads only
    v_bytes = 0.0 if shared_kv else batch * read * kv_heads * dv * kv_item
    if fused:
        pairs = batch * heads * scored_pairs(q_len, kv_len, causal, window)
        return fused_kernels(prefix, pairs=pairs, head_dim=head_dim, value_dim=dv,
                             nbytes=q_bytes + o_bytes + k_bytes + v_bytes, dtype=work,
                             softmax_dtype=dtype, count=count, out_bytes=o_bytes)
    scores = batch * heads * q_len * kv_len
    score_bytes = scores * item
    if shared_kv:  # unfused, the second product reads V (a slice of K) on its own
        v_bytes = batch * read * kv_heads * dv * kv_item
    return [
        Kernel(f"{prefix}.qk", 2.0 * scores * head_dim, q_bytes + k_bytes + score_bytes,
               unit="matrix", dtype=work, count=count),
        Kernel(f"{prefix}.softmax", SOFTMAX_FLOPS * scores, 2.0 * score_bytes, unit="vector",
               dtype=dtype, count=count),
        Kernel(f"{prefix}.pv", 2.0 * scores * dv, score_bytes + v_bytes + o_bytes,
               unit="matrix", dtype=work, count=count),
    ]


def fused_kernels(name: str, *, pairs: Number, head_dim: int, value_dim: int,
                  nbytes: Number, dtype: str, softmax_dtype: str, count: Number = 1.0,
                  out_bytes: Number = 0.0) -> list[Kernel]:
    """Fused attention over *pairs* scored (query, key) pairs, every sequence and head
    together: the two products on the matrix units in *dtype* with all *nbytes* off-chip
    bytes, and the softmax (5 FLOPs a pair) on the vector units in *softmax_dtype*, no bytes,
    in the products' epilogue (see the module docstring). Every path builds it here: the
    model builders, the torch tracer, flash-attn's ops and recorded traces."""
    return [
        Kernel(name, 2.0 * _family.attention_forward_macs(pairs, head_dim, value_dim), nbytes,
               unit="matrix", dtype=dtype, count=count, out_bytes=out_bytes),
        Kernel(f"{name}.softmax", SOFTMAX_FLOPS * pairs, 0.0, unit="vector",
               dtype=softmax_dtype, count=count, epilogue_of=name),
    ]


def backward_kernels(name: str, *, pairs: Number, head_dim: int, value_dim: int,
                     nbytes: Number, dtype: str, softmax_dtype: str,
                     count: Number = 1.0) -> list[Kernel]:
    """Fused attention's backward over *pairs* scored pairs (``ops._family``'s one decision:
    the scores recomputed, five products, 2.5x the forward's matrix FLOPs when the value
    heads are as wide as the query heads; the recomputed softmax and dS, 8 FLOPs a pair, in
    the products' epilogue). *nbytes*: :func:`~pytest_roofline.ops._family.
    attention_backward_bytes` of the forward's tensors, or the recorded tensors' own bytes.
    Every path builds it here: the model's training step, the torch tracer's SDPA backward
    ops, flash-attn's backward ops and recorded traces."""
    return [
        Kernel(name, 2.0 * _family.attention_backward_macs(pairs, head_dim, value_dim), nbytes,
               unit="matrix", dtype=dtype, count=count),
        Kernel(f"{name}.softmax", _family.ATTENTION_BACKWARD_VECTOR_FLOPS * pairs, 0.0,
               unit="vector", dtype=softmax_dtype, count=count, epilogue_of=name),
    ]


def check_heads(heads: int, kv_heads: int, what: str) -> None:
    if heads % kv_heads:
        raise WorkloadError(f"{what}: kv_heads={kv_heads} must divide heads={heads} "
                            f"(grouped-query attention shares each KV head among "
                            f"heads / kv_heads query heads)")


def attention(
    batch: object,
    q_len: object = None,
    kv_len: object = None,
    heads: object = None,
    kv_heads: object = None,
    head_dim: object = None,
    *,
    causal: bool = False,
    fused: bool = True,
    dtype: object = None,
    kv_dtype: object = None,
    layout: str | None = None,
    window: object = None,
    v_head_dim: object = None,
    shared_kv: bool = False,
) -> Workload:
    """Attention of *batch* sequences (see the module docstring for every formula).

    ``kv_heads`` defaults to ``heads`` (multi-head attention); ``kv_dtype`` (default *dtype*)
    prices a quantized KV cache; ``window`` (causal only) is a sliding window of that many
    keys; ``v_head_dim`` (default *head_dim*) sizes the value heads, ``shared_kv=True`` reads
    V as the leading v_head_dim columns of K (multi-head latent attention decoding from its
    latent cache: ``kv_heads=1, head_dim=kv_lora_rank + qk_rope_head_dim,
    v_head_dim=kv_lora_rank``). The knob is q_len: one query (decode) reads all of K and V
    for 4·heads/kv_heads FLOPs per KV element pair, prefill reuses them across queries.

    Arrays: ``attention(q, k, v, layout="bshd")`` (flash-attn, JAX) or ``layout="bhsd"``
    (``torch.nn.functional.scaled_dot_product_attention``); the layout must be named since
    both are common. Bytes then follow q's and k's storage dtypes; ``dtype=`` sets the
    precision of the two products (the softmax stays in q's), and ``kv_dtype=`` is refused (k
    and v already give the KV storage).
    """
    __tracebackhide__ = input_error
    flag(causal, "attention: causal")
    flag(fused, "attention: fused")
    flag(shared_kv, "attention: shared_kv")
    span = None if window is None else size(window, "attention: window")
    if span is not None and not causal:
        raise WorkloadError(f"attention: window={span} needs causal=True (a sliding window "
                            f"looks back from each query)")
    if is_arraylike(batch) and (is_arraylike(q_len) or q_len is None):
        return _from_arrays(batch, q_len, kv_len, layout, causal, fused, dtype, kv_dtype, span)
    dv = None if v_head_dim is None else size(v_head_dim, "attention: v_head_dim")
    if heads is None or head_dim is None or q_len is None or kv_len is None:
        raise WorkloadError("attention needs batch, q_len, kv_len, heads, kv_heads and "
                            "head_dim (or arrays: attention(q, k, v, layout=...))")
    b = sweep_size(batch, "attention: batch")
    q, kv = size(q_len, "attention: q_len"), size(kv_len, "attention: kv_len")
    h, d = size(heads, "attention: heads"), size(head_dim, "attention: head_dim")
    kvh = h if kv_heads is None else size(kv_heads, "attention: kv_heads")
    p = sized_precision(dtype)
    kvp = p if kv_dtype is None else precision(kv_dtype, "kv_dtype")
    if shared_kv and (dv or d) > d:
        raise WorkloadError(f"attention: shared_kv=True reads V as the first v_head_dim "
                            f"columns of K, so v_head_dim={dv} must be at most head_dim={d}")
    return _attention(b, q, kv, h, kvh, d, causal, fused, p, kvp, span, dv=dv or d,
                      shared_kv=shared_kv)


def _attention(b: Number, q: int, kv: int, h: int, kvh: int, d: int, causal: bool,
               fused: bool, p: str, kvp: str, window: int | None = None,
               compute: str | None = None, dv: int | None = None,
               shared_kv: bool = False) -> Workload:
    dv = d if dv is None else dv
    check_heads(h, kvh, "attention")
    if causal and q > kv:
        raise WorkloadError(f"attention: causal attention needs q_len <= kv_len (queries are "
                            f"the last q_len positions), got q_len={q}, kv_len={kv}")
    flags = ", ".join(f for f, on in (("causal", causal), (f"window={window}", window),
                                      ("fused" if fused else "unfused", True)) if on)
    kv_label = p if kvp == p else f"{p}, kv {kvp}"
    if compute is not None and compute != p:
        kv_label += f", as {compute}"
    dims = f"d={d}" if dv == d else f"d={d}/v{dv}"
    if shared_kv:
        dims += " shared kv"
    name = (f"attention(b={show(b)}, q={q}, kv={kv}, heads={h}/{kvh}, {dims}, {flags}, "
            f"{kv_label})")
    kernels = attention_kernels(name, b, q, kv, h, kvh, d, causal, fused, p, kvp,
                                window=window, compute=compute, v_head_dim=dv,
                                shared_kv=shared_kv)
    item, kv_item = dtypes.ITEMSIZE[p], dtypes.ITEMSIZE[kvp]
    footprint = b * q * h * (d + dv) * item + b * kv * kvh * (
        d if shared_kv else d + dv) * kv_item
    if not fused:
        footprint = footprint + b * h * q * kv * item
    knob = None if is_sweep(b) else Knob(
        "q_len", q, lambda x: _attention(b, x, kv, h, kvh, d, causal, fused, p, kvp, window,
                                         compute, dv, shared_kv),
        hi=kv if causal else 1 << 24)
    return Workload(kernels, footprint=footprint, name=name, knob=knob)


def _from_arrays(q: object, k: object, v: object, layout: str | None, causal: bool,
                 fused: bool, dtype: object, kv_dtype: object, window: int | None) -> Workload:
    __tracebackhide__ = input_error
    if not isinstance(layout, str) or layout not in _LAYOUTS:
        raise WorkloadError(f"attention(q, k, v) with arrays needs layout='bshd' (flash-attn, "
                            f"JAX) or layout='bhsd' (torch scaled_dot_product_attention), got "
                            f"layout={brief(layout)}")
    if kv_dtype is not None:
        raise WorkloadError(f"attention: kv_dtype={brief(kv_dtype)} prices the KV cache's "
                            f"storage, which the arrays k and v already give; pass them in "
                            f"that dtype, or dtype= to set the compute precision")
    where = _LAYOUTS[layout]
    dims = {}
    for label, array in (("q", q), ("k", k), ("v", v)):
        if array is None or not is_arraylike(array):
            raise WorkloadError(f"attention: {label} must be an array, got {brief(array)}")
        shape = shape_of(array, f"attention: {label}")
        if len(shape) != 4:
            raise WorkloadError(f"attention: {label} must have 4 dimensions ({layout}), got "
                                f"shape {shape}")
        dims[label] = tuple(shape[i] for i in where)  # (b, s, h, d)
    (bq, sq, hq, dq), (bk, sk, hk, dk) = dims["q"], dims["k"]
    if dims["v"][:3] != dims["k"][:3] or bq != bk or dq != dk:
        raise WorkloadError(f"attention: shapes do not match in layout {layout!r}: "
                            f"q {shape_of(q, 'q')}, k {shape_of(k, 'k')}, v {shape_of(v, 'v')}")
    p, compute = array_precision(q, dtype, "attention: q")
    kvp = dtype_of(k, "attention: k")
    return _attention(float(size(bq, "attention: batch")), size(sq, "attention: q_len"),
                      size(sk, "attention: kv_len"), size(hq, "attention: heads"),
                      size(hk, "attention: kv_heads"), size(dq, "attention: head_dim"),
                      causal, fused, p, kvp, window, compute,
                      size(dims["v"][3], "attention: v_head_dim"))

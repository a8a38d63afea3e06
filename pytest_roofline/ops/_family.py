"""The FLOP and byte rules shared by every formula: ``ops``, ``models`` and both tracers.

One home, so that no rule is written twice. The op formulas (``ops.*``), the model builders
(``models``) and the tracers' op tables (``tracing._aten`` for torch, ``tracing._jax_ops``
for JAX) call these; each framework table only says which of its op names belongs to which
family.

**Per element** (an exp or a divide counts as one operation, like an add): softmax 5, layernorm
7 (5 without the affine pair), rmsnorm 4 (3 without weight), :data:`ELEMENT_FLOPS` for
elementwise ops that are not one operation each (silu 4, gelu 8, ...), any other arithmetic
op 1 per output element.

**Families over many elements**:

* reduction: one FLOP per input element not already an output (a comparison or an add);
  a pool is a reduction over each window (max: window - 1 per output), an average adds its
  divide (window per output);
* scan: one FLOP per element;
* sort: n·log2(length) comparisons; top-k: one pass, n comparisons against the running k-th;
* interpolation: ``taps`` multiplies and ``taps - 1`` adds per output element (linear in d
  dimensions: 2^d taps; bicubic: 16).

**Scored attention pairs** (:func:`scored_pairs`): the (query, key) pairs a mask leaves, for
either alignment of a causal mask and any sliding window, in closed form.

**The optimizer**: Adam(W)'s work and state per parameter.

**Collectives** (:data:`COLLECTIVES`): one row per kind, with the bytes each device sends and
holds, the adds, the sequential steps of each algorithm and the names the kind goes by in
torch, in a jaxpr and in compiled HLO. Adding a kind is one row plus its closed form; both
tracers and ``ops.collectives`` read the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .. import dtypes
from ..engine.workload import Number
from ..hardware.chip import IN_NETWORK_ALGORITHMS, LINK_ALGORITHMS

# -- per element --------------------------------------------------------------------------------

SOFTMAX_FLOPS = 5.0
LAYERNORM_FLOPS = 7.0
RMSNORM_FLOPS = 4.0
#: FLOPs per element of silu(gate)·up (negate, exp, add, divide, multiply).
GLU_FLOPS = 5.0
#: FLOPs per output element of elementwise ops that are not one operation each (torch and
#: JAX names; gelu: the tanh approximation: cube, 2 multiply-adds, tanh, add, 2 multiplies).
ELEMENT_FLOPS: dict[str, float] = {
    "silu": 4.0, "sigmoid": 4.0, "logistic": 4.0, "gelu": 8.0, "softplus": 3.0, "mish": 5.0,
    "elu": 3.0, "selu": 4.0, "hardswish": 4.0, "hardsigmoid": 3.0, "log_sigmoid": 4.0,
    "logaddexp": 4.0, "erfinv": 1.0, "lerp": 2.0, "addcmul": 2.0, "addcdiv": 2.0,
}
GELU_FLOPS = ELEMENT_FLOPS["gelu"]
#: Softmax backward: dx = y·(dy - sum(dy·y)): multiply, reduce, subtract, multiply; log_softmax's
#: dx = dy - exp(y)·sum(dy): exp, multiply, subtract, reduce. Per element.
SOFTMAX_BACKWARD_FLOPS = 4.0
#: dS = P·(dP - rowsum) in attention's backward, per scored pair.
ATTENTION_GRAD_FLOPS = 3.0
#: Attention's backward, one decision for every path (``ops.attention.backward_kernels``):
#: the kernel is handed Q, K, V, O, dO and the log-sum-exp, never the scores (storing them
#: would cost a q_len x kv_len round trip), so it **recomputes** P = softmax(Q·Kᵀ) and runs
#: dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q: five products over the scored pairs
#: (FlashAttention-2, Dao 2023, §3.2: 2.5x the forward's FLOPs when value heads are as wide
#: as the query heads), and on the vector units the recomputed softmax and dS = P·(dP - D).
ATTENTION_BACKWARD_VECTOR_FLOPS = SOFTMAX_FLOPS + ATTENTION_GRAD_FLOPS
#: Eval-mode batch norm: a per-channel scale and shift (multiply, add) per element.
EVAL_BATCH_NORM_FLOPS = 2.0
#: Backward of a layer, group, batch or RMS norm, per element of the input gradient:
#: x̂ recomputed (subtract, multiply), g·dy and x̂·g·dy (2), their two row means (2), the
#: combination (subtract, subtract, multiply: 3), and the weight and bias gradients' sums (2).
NORM_BACKWARD_FLOPS = 11.0


def softmax_flops(elements: Number) -> Number:
    return SOFTMAX_FLOPS * elements


def norm_flops(kind: str, elements: float, *, weight: bool, bias: bool) -> float:
    """FLOPs of a layernorm or rmsnorm of *elements* elements, with or without its weight and
    bias."""
    if kind == "rmsnorm":
        return elements * (RMSNORM_FLOPS - (0.0 if weight else 1.0))
    return elements * (LAYERNORM_FLOPS - (0.0 if weight else 1.0) - (0.0 if bias else 1.0))


def conv_unit(groups: int, in_per_group: int) -> str:
    """The unit a convolution runs on: a depthwise one (one input channel a group, more than
    one group) has no reduction over channels to feed a matrix unit, so the vector units;
    any other the matrix units."""
    return "vector" if groups > 1 and in_per_group == 1 else "matrix"


def dot_flops(n: float) -> float:
    """A dot product of two length-n vectors: n multiplies, n - 1 adds. A product with a
    vector operand (a dot, a matrix times a vector) runs on the vector units: each element of
    the larger operand is used once, no tile a matrix unit could reuse."""
    return 2.0 * n - 1.0


def attention_forward_macs(pairs: Number, head_dim: int, value_dim: int) -> Number:
    """Multiply-accumulates of attention's two products, Q·Kᵀ and P·V, over *pairs*."""
    return pairs * (head_dim + value_dim)


def attention_backward_macs(pairs: Number, head_dim: int, value_dim: int) -> Number:
    """Multiply-accumulates of attention's backward over *pairs* (see
    :data:`ATTENTION_BACKWARD_VECTOR_FLOPS`): Q·Kᵀ, dQ and dK over head_dim, dV and dP over
    value_dim."""
    return pairs * (3 * head_dim + 2 * value_dim)


#: Fused attention's log-sum-exp: one a query and head, in fp32 whatever the inputs' dtype
#: (FlashAttention's ``softmax_lse``; SDPA's ``logsumexp``), written by the forward and read
#: by the backward.
LSE_DTYPE = "fp32"


def lse_bytes(rows: Number) -> Number:
    """Bytes of the log-sum-exp of *rows* (query, head) rows: :data:`LSE_DTYPE` each."""
    return rows * dtypes.ITEMSIZE[LSE_DTYPE]


def attention_backward_bytes(*, q: Number, k: Number, v: Number, o: Number,
                             lse: Number) -> Number:
    """Bytes of attention's backward, given the forward's tensors' sizes: Q, K, V, O, dO (O's
    size) and the log-sum-exp read, dQ, dK, dV written, each once."""
    return 2.0 * (q + k + v + o) + lse


def element_flops(name: str, elements: float) -> float:
    """An elementwise op's FLOPs: :data:`ELEMENT_FLOPS`, else 1 per output element."""
    return ELEMENT_FLOPS.get(name, 1.0) * elements


# -- families over many elements ----------------------------------------------------------------


def reduce_flops(n_in: float, n_out: float) -> float:
    """A reduction: one FLOP per input element not already an output."""
    return max(n_in - n_out, 0.0)


def scan_flops(n_in: float) -> float:
    """A scan (cumulative sum, product, max ...): one FLOP per element."""
    return n_in


def sort_flops(n: float, length: int) -> float:
    """Sorting *n* elements in rows of *length*: n·log2(length) comparisons."""
    return n * math.log2(max(length, 2))


def top_k_flops(n: float) -> float:
    """Top-k (k-th value, median): one pass, n comparisons against the running k-th."""
    return n


def pool_flops(n_out: float, window: float, *, average: bool) -> float:
    """A pool: a reduction over each window (window - 1 per output), plus the average's
    divide."""
    return n_out * (window if average else window - 1.0)


def interpolate_flops(n_out: float, taps: int) -> float:
    """Interpolation: *taps* multiplies and taps - 1 adds per output element."""
    return n_out * (2.0 * taps - 1.0)


# -- scored attention pairs ---------------------------------------------------------------------

#: Where a causal mask's diagonal sits when there are fewer queries than keys: queries are the
#: last ones (``bottom_right``: flash-attn, a KV cache, ``ops.attention``) or the first ones
#: (``top_left``: torch's ``is_causal``).
ALIGNMENTS = ("bottom_right", "top_left")


def _below(t: int, kv_len: int) -> float:
    """sum over x <= t of clip(x, 0, kv_len)."""
    if t <= 0:
        return 0.0
    if t <= kv_len:
        return t * (t + 1) / 2.0
    return kv_len * (kv_len + 1) / 2.0 + float(t - kv_len) * kv_len


def _within(q_len: int, kv_len: int, c: int) -> float:
    """Pairs (i, j) of the q_len x kv_len rectangle with j - i <= c."""
    return _below(c + q_len, kv_len) - _below(c, kv_len)


def scored_pairs(q_len: int, kv_len: int, *, causal: bool = False, left: int | None = None,
                 right: int | None = None, align: str = "bottom_right") -> float:
    """Scored (query, key) pairs of one sequence and head.

    Query i sits at key position i + offset (offset kv_len - q_len bottom-right aligned, 0
    top-left) and sees the keys from *left* before to *right* after its position (None:
    unbounded); ``causal`` means ``right=0``. A sliding window of W keys (the query's own
    included) is ``left=W - 1``. Closed form: the pairs of the rectangle with
    offset - left <= j - i <= offset + right.
    """
    if causal:
        right = 0
    if left is None and right is None:
        return float(q_len) * kv_len
    offset = kv_len - q_len if align == "bottom_right" else 0
    upper = float(q_len) * kv_len if right is None else _within(q_len, kv_len, offset + right)
    lower = 0.0 if left is None else _within(q_len, kv_len, offset - left - 1)
    return upper - lower


# -- the optimizer ------------------------------------------------------------------------------

#: FLOPs per parameter of an Adam(W) update, as torch's AdamW runs it (the bias corrections
#: are per step, scalars, not per parameter): weight decay p - lr*wd*p 2, the first moment
#: b1*m + (1-b1)*g 3, the second b2*v + (1-b2)*g*g 4, the denominator sqrt(v) / sqrt(1-b2^t)
#: + eps 3, the step p - step_size * m / denom 3: 2 + 3 + 4 + 3 + 3 = 15.
ADAM_FLOPS = 15.0
#: fp32 master weights and Adam's two moments: bytes of optimizer state per parameter.
ADAM_STATE_BYTES = 12.0


def adam_step_bytes(grad_bytes: float) -> float:
    """DRAM bytes per parameter of one Adam(W) update: its state read and written
    (2 x :data:`ADAM_STATE_BYTES`), the gradient read and the working weight written, each
    *grad_bytes* wide (the activations' dtype)."""
    return 2.0 * ADAM_STATE_BYTES + 2.0 * grad_bytes


# -- collectives --------------------------------------------------------------------------------

#: Collective algorithms (``ops.collectives`` has the table): ``auto`` is the lower envelope.
ALGORITHMS = ("auto", *LINK_ALGORITHMS)
#: Algorithms that reduce in the network's switches (``hardware.chip.IN_NETWORK_ALGORITHMS``,
#: the names), and the bytes each device sends (and
#: receives) with them, a fraction of D: NVLink SHARP (N+1)/N, InfiniBand SHARP 1
#: (``ops.collectives`` derives both). Two sequential steps each; a kind takes them only where
#: its row lists them, and ``auto`` only on a link whose spec lists them.
IN_NETWORK: dict[str, Callable[[int], float]] = {"nvls": lambda n: (n + 1) / n,
                                                 "sharp": lambda n: 1.0}
IN_NETWORK_STEPS = 2.0


def _one(n: int) -> float:
    return 1.0


@dataclass(frozen=True)
class Collective:
    """One kind of collective over N devices, D the size of the full tensor (its convention:
    the gathered size of an all-gather, the unreduced one of a reduce-scatter).

    * ``sent(N)``: bytes each device sends on a ring, a fraction of D;
    * ``adds(N)``: vector adds, a fraction of D's elements;
    * ``parts_in(N)``, ``parts_out(N)``: how many shares D is held in before and after (1:
      each device holds all of it; N: a 1/N share; 0: none, the peer's);
    * ``ring_steps(N)``: the ring's sequential steps; ``one_shot(N)``: one-shot's bytes as a
      multiple of the ring's; ``tree``: whether the tree algorithm applies; ``in_network``:
      the algorithms of :data:`IN_NETWORK` that apply (the switch adds);
    * ``torch``, ``jax``, ``hlo``: the names it goes by (torch's functional and ``c10d``
      ops, jaxpr primitives, compiled HLO opcodes).
    """

    kind: str
    sent: Callable[[int], float]
    adds: Callable[[int], float]
    parts_in: Callable[[int], int]
    parts_out: Callable[[int], int]
    ring_steps: Callable[[int], float]
    one_shot: Callable[[int], float] = _one
    tree: bool = False
    in_network: tuple[str, ...] = ()
    torch: tuple[str, ...] = ()
    jax: tuple[str, ...] = ()
    hlo: tuple[str, ...] = ()

    def held(self, devices: int) -> tuple[float, float]:
        """(input, output) each device holds, as fractions of D."""
        a, b = self.parts_in(devices), self.parts_out(devices)
        return (1.0 / a if a else 0.0), (1.0 / b if b else 0.0)

    def steps(self, devices: int, algorithm: str) -> tuple[float, float]:
        """(bytes sent as a multiple of the ring's, sequential steps) of *algorithm*."""
        if algorithm == "auto":
            return 1.0, 1.0
        if algorithm == "one_shot":
            return self.one_shot(devices), 1.0
        if algorithm == "tree":
            return 1.0, 2.0 * math.ceil(math.log2(devices))
        if algorithm in IN_NETWORK:
            return IN_NETWORK[algorithm](devices) / self.sent(devices), IN_NETWORK_STEPS
        return 1.0, self.ring_steps(devices)


COLLECTIVES: dict[str, Collective] = {row.kind: row for row in (
    Collective("all_reduce", sent=lambda n: 2.0 * (n - 1) / n, adds=lambda n: (n - 1) / n,
               parts_in=lambda n: 1, parts_out=lambda n: 1,
               ring_steps=lambda n: float(2 * (n - 1)), one_shot=lambda n: n / 2.0, tree=True,
               in_network=IN_NETWORK_ALGORITHMS,
               torch=("all_reduce", "all_reduce_", "all_reduce_coalesced",
                      "all_reduce_coalesced_"),
               jax=("psum", "psum_invariant", "psum2", "pmax", "pmin"), hlo=("all-reduce",)),
    Collective("all_gather", sent=lambda n: (n - 1) / n, adds=lambda n: 0.0,
               parts_in=lambda n: n, parts_out=lambda n: 1, ring_steps=lambda n: float(n - 1),
               torch=("all_gather_into_tensor", "all_gather_into_tensor_out",
                      "all_gather_into_tensor_coalesced", "broadcast", "broadcast_",
                      "_allgather_base_"),
               jax=("all_gather", "all_gather_invariant"), hlo=("all-gather",)),
    Collective("reduce_scatter", sent=lambda n: (n - 1) / n, adds=lambda n: (n - 1) / n,
               parts_in=lambda n: 1, parts_out=lambda n: n, ring_steps=lambda n: float(n - 1),
               torch=("reduce_scatter_tensor", "reduce_scatter_tensor_coalesced",
                      "_reduce_scatter_base_"),
               jax=("reduce_scatter",), hlo=("reduce-scatter",)),
    Collective("all_to_all", sent=lambda n: (n - 1) / n, adds=lambda n: 0.0,
               parts_in=lambda n: 1, parts_out=lambda n: 1, ring_steps=lambda n: float(n - 1),
               torch=("all_to_all_single",), jax=("all_to_all",), hlo=("all-to-all",)),
    Collective("point_to_point", sent=lambda n: 1.0, adds=lambda n: 0.0,
               parts_in=lambda n: 1, parts_out=lambda n: 0, ring_steps=lambda n: 1.0,
               jax=("ppermute",), hlo=("collective-permute",)),
)}


def collective(kind: str) -> Collective:
    """The row of *kind* (a KeyError for a kind the table lacks)."""
    return COLLECTIVES[kind]


def collective_named(framework: str, name: str) -> Collective | None:
    """The row whose *framework* (``"torch"``, ``"jax"``, ``"hlo"``) names include *name*."""
    for row in COLLECTIVES.values():
        if name in getattr(row, framework):
            return row
    return None

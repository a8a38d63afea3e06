"""Transformer language models and encoders, built kernel by kernel from ``ops``.

One layer's kernels are built once and repeated with ``count=layers``, so a model workload
has a few dozen kernels whatever its depth. What each phase reads (per chip):

* **Weights**: every linear layer's weights, once per step. The input embedding table is
  never read in full, only the distinct rows of the step's tokens (a gather: at most
  min(tokens, vocab) rows, and likewise for learned positions and token types); the lm_head
  reads its whole [hidden, vocab] matrix (for tied embeddings, that matrix is the table).
* **KV cache**: decode reads ``context`` positions of K and V per sequence, with the KV head
  count, in ``kv_dtype`` (with a sliding window of W, the last min(context, W), and the cache
  keeps only those; ``local_layers`` limits the window to some layers); prefill reads the K
  and V it has just written. Latent attention (DeepSeek-V2/V3) caches one latent of
  kv_lora_rank + qk_rope_head_dim per position and layer instead (see ``_mla_ops``).
* **Activations**: each kernel reads its inputs and writes its outputs once (see ``ops``).

Fusion follows :mod:`pytest_roofline.engine.fusion`. With ``fusion="epilogue"`` (the default, what
inference engines and compilers do) the residual add runs in the next norm, the MLP's
activation (GELU, or the SwiGLU/GeGLU gate act(gate)·up) in the epilogue of the up/gate
projection (per expert for a mixture of experts, and in the shared experts' projection),
rotary embeddings and biases in the neighbouring kernels. ``fusion="none"`` is eager PyTorch:
each residual add (two a layer in a parallel block) and each activation is a kernel of its
own, reading and writing off-chip memory. Either way attention is FlashAttention-style
(``fused=False`` for the unfused form), and these tensors are handed straight to their only
reader (kept on chip where they fit, see the fusion module): a sequential block's
attention-norm output to qkv_proj (not in a parallel block, where the MLP reads it too), the
MLP norm's output to gate/up (when every layer runs that MLP), the attention output to o_proj
(one length, FlashAttention-style; not through the absorbed latent path's per-head v_up), the
activated intermediate to down_proj (per expert too); in latent attention q_a_proj's output
to q_a_norm and on to q_b_proj. Nothing else is assumed kept.

Mixed lengths: ``prefill``, ``decode`` and ``forward`` take one length for every sequence, or
a list (or 1-D array) of per-sequence lengths, one per sequence of the batch (prompt lengths
for prefill and forward, cached contexts for decode). Padding-free by default (as serving
engines batch): linear layers see the sum of the lengths, attention scores each sequence's
own causal pairs and reads its own context, the KV cache holds each sequence's own positions.
``padded=True`` charges the padded batch instead: every sequence at the longest length.

Quantization: ``weight_dtype`` applies to the linear
layers of the blocks (attention, MLP, experts); embeddings, lm_head, router, norms and biases
stay in ``dtype``, as GPTQ/AWQ/FP8 checkpoints keep them. Each linear layer multiplies in the
wider of ``dtype`` and ``weight_dtype`` (``ops.matmul``'s rule). Group scales of quantized
weights are ignored.

Mixture of experts: each token goes to ``experts_per_token`` (k) of E experts. With uniform
routing, a step of T tokens touches E·(1 - (1 - k/E)^T) distinct experts on average, each read
once: about k experts' weights at batch 1, all E once T is large. FLOPs follow the k experts
per token.

Tensor parallelism over ``tp`` chips (Megatron-style): QKV and gate/up are split by columns,
O and down by rows, the vocabulary of embedding and lm_head by rows; each layer then
all-reduces its attention output and its MLP output (T x hidden activations), the embedding
one more, and the logits are all-gathered. Heads and intermediate sizes must divide by tp; KV
heads are split, or replicated when there are fewer of them than chips. The workload and its
footprint are per chip. A training step adds sequence parallelism by default
(:mod:`pytest_roofline.models.training`).

Expert parallelism over ``ep`` chips (decode and prefill of a mixture of experts, as DeepSeek
serves V3): every chip holds the attention, the dense layers, the shared experts, the
embedding and the lm_head whole, and E/ep of the routed experts; the batch is spread over the
chips (each runs attention for batch/ep sequences, data-parallel), and each layer sends every
token to the chips of its k experts and back (two all-to-alls of tokens x k x hidden, (ep-1)/ep
of it over the links). With uniform routing each chip computes as many (token, expert) pairs
as its own tokens make, on the experts of its own that the whole step touches.

The package's rooms: :mod:`.options` (a phase's checked options and the per-chip plan they
make), :mod:`.params` (parameter counts), :mod:`.footprint` (bytes resident per chip),
:mod:`.graph` (one layer's kernels, fused), :mod:`.phases` (decode, prefill, forward, a
training step).
"""

from __future__ import annotations

from ...ops._family import ADAM_FLOPS, ADAM_STATE_BYTES, GELU_FLOPS, GLU_FLOPS
from .footprint import Footprint
from .options import PhaseOptions
from .phases import Transformer

__all__ = ["ADAM_FLOPS", "ADAM_STATE_BYTES", "GELU_FLOPS", "GLU_FLOPS", "Footprint",
           "PhaseOptions", "Transformer"]

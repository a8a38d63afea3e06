"""Published single-kernel timings the bounds must never beat, and how each is modelled.

One level below ``published.py`` (whole models): each case is one kernel someone else timed
and published (a README table, a paper figure, a benchmark CSV, a maintainer's comment), the
convention its authors used to turn the time into a rate, and the roofline bound of the same
work on the same chip built with :mod:`pytest_roofline.ops`. Every published rate is turned
back into a time with the source's own convention (``Case.convention``), so ``efficiency =
bound time / measured time``: it must never exceed 1. Where the source's FLOP or byte count
differs from the formula's, the convention is still the source's: the measured time is what
the kernel took, whatever its authors counted.

Chips: ``h100-sxm``, ``a100-80gb-sxm``, ``b200``, ``gb300``, ``mi300x`` and ``h200`` as built in,
and the H800 SXM5 as ``tests/data/h800-sxm.yaml``: the H100 SXM5's peaks, memory and NVLink
latency with 8 NVLink links instead of 18 (400 GB/s per GPU), cited there.

How the work is modelled, per family:

* **GEMM, grouped GEMM** (DeepGEMM's FP8 kernels: A and B in FP8 E4M3 with fine-grained
  scales, D in BF16): ``ops.matmul(m, k, n, dtype="fp8", out_dtype="bf16")``, or
  ``ops.batched_matmul(groups, m, k, n, ...)`` with per-group weights (every expert reads
  its own B). The scale factors (1 fp32 per 128 or 128 x 128 elements) are not charged, so
  the bound charges less. hipBLASLt's ``-r f8_r`` runs A, B, C and D in FP8.
* **Attention forward and backward** (FlashAttention 2/3/4, cuDNN, NVIDIA's MHA kernels in
  FlashMLA): ``ops.attention`` (Q, K, V read once, O written, the scores on chip; the two
  products at the matrix peak, the softmax's 5 FLOPs per scored pair at the vector peak, the
  two summed). The backward is
  flash-attn's own formula from the tracer (``_flash_attn_backward``: five products over the
  scored pairs, the recomputed softmax and dS on the vector units; dO, Q, K, V, O, the
  log-sum-exp read, dQ, dK, dV written), evaluated on meta tensors of the benchmark's shapes.
* **Decode attention** (FlashMLA, DeepSeek's multi-head latent attention decoding from its
  latent cache: one KV head of 576 = 512 + 64 positions, V its first 512 columns, 128 query
  heads): ``ops.attention(..., kv_heads=1, head_dim=576, v_head_dim=512, shared_kv=True)``.
  The sparse kernel attends each query token to its own top-k cache entries, so it is
  ``batch x s_q`` one-query calls over ``topk`` keys, the cache in FP8 (576 bytes a token
  charged; the kernel reads 656 with its scales and BF16 RoPE part: the bound charges less).
* **Memory-bound** (norms, softmax, cross-entropy, embeddings): ``ops.rmsnorm``,
  ``ops.layernorm`` (a group norm over groups of ``channels_per_group x H`` is a layer norm
  of that width, one row a group), ``ops.softmax``, ``ops.embedding``. Liger's cross-entropy
  forward writes the logits' gradient in place while it computes the loss (two passes over
  the logits, one write), so it is bounded by a softmax's read and write of the logits; the
  bound charges one read less.
* **Collectives** (NCCL ``all_reduce_perf``, ``all_gather_perf``, ``reduce_scatter_perf`` on
  one node): ``ops.all_reduce`` / ``all_gather`` / ``reduce_scatter`` over
  the chip's NVLink, per GPU. nccl-tests reports algbw = S / t and busbw = algbw x 2(n-1)/n
  (all-reduce) or x (n-1)/n (all-gather, reduce-scatter), so t = S / algbw. Each source
  quotes the peak busbw, which nccl-tests reaches at its largest sizes: the bound is taken at
  S = 8 GiB, where the links' per-step latencies (0.6 us on NVLink) add under 0.1%.

Cases marked ``needs`` are known to beat the bound until a formula is corrected (the test
expects them to fail, strictly, and says why); none is now. The all-reduces that NVSwitch
reduces in the switch (NVLink SHARP: (n+1)/n x S on each GPU's links, not the ring's
2(n-1)/n x S) hold since the H100, H200, B200 and H800 NVLink specs list ``nvls``; the
embeddings of more tokens than the table has rows hold since each distinct row is read once
(at most ``vocab`` rows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_roofline import analyze, ops
from pytest_roofline.engine.workload import Workload

H800 = str(Path(__file__).resolve().parent / "data" / "h800-sxm.yaml")
GIB = 2**30

DEEPGEMM = ("DeepGEMM README, Performance (H800 SXM5, NVCC 12.8), https://github.com/"
            "deepseek-ai/DeepGEMM/blob/55ab91f72f76e8a6db0e86282c3169a88d93df1b/README.md")
DEEPGEMM_CONV = ("TFLOPS = 2·m·n·k / t (grouped: 2·groups·m·n·k / t), as printed by "
                 "tests/test_core.py at the same commit; t = that count / the table's TFLOPS")
FA3_FIG = ("FlashAttention-3 forward speed on H100 80GB SXM5, FP16 (FlashAttention-3 paper, "
           "Shah et al. 2024, https://arxiv.org/abs/2407.08608, Figure 5; the figure "
           "assets/flash3_fp16_fwd.png of https://github.com/Dao-AILab/flash-attention at "
           "commit 0251105a), sequence 16k, batch 1, hidden 2048")
FA_CONV = ("TFLOPs/s = 4·b·h·s²·d / t non-causal, halved when causal "
           "(benchmarks/benchmark_flash_attention.py, flops()); batch 16k / seqlen, "
           "heads 2048 / head dim")
FA2_FIG = ("FlashAttention-2 forward + backward speed on A100 80GB SXM4, FP16 (flash-attention "
           "README, section Performance/A100, assets/flash2_a100_fwd_bwd_benchmark.png at "
           "commit 0251105a, https://github.com/Dao-AILab/flash-attention), sequence 16k, "
           "batch 1, hidden 2048")
FA2_CONV = ("TFLOPs/s = 3.5 x 4·b·h·s²·d / t for forward + backward (the forward's count "
            "x 3.5: backward 2.5x), halved when causal (benchmarks/benchmark_flash_attention.py"
            ", flops(mode='fwd_bwd'))")
FA4_2605 = ("FlashAttention-4 and cuDNN forward on B200 (one GPU, BF16), the B200 table of "
            "https://github.com/Dao-AILab/flash-attention/pull/2605 (FWD ms / TFLOPS / MFU, MFU "
            "over 2,250 TFLOPS), hdim 64, batch 2, seqlen 16384, 32 heads (the table's ms and "
            "TFLOPS agree at hidden 2048)")
FA4_2605_GB300 = ("FlashAttention-4 and cuDNN forward on GB300 (BF16, clock locked at 1965 "
                  "MHz), the GB300 tables of https://github.com/Dao-AILab/flash-attention/pull/"
                  "2605 (FWD ms / TFLOPS / MFU, MFU over 2,500 TFLOPS), batch 2, seqlen 16384, "
                  "hidden 2048")
FA4_PAPER = ("FlashAttention-4 (Zadouri et al. 2026, https://arxiv.org/abs/2603.05451), abstract: "
             "'on B200 GPUs with BF16, reaching up to 1613 TFLOPs/s (71% utilization)'; taken "
             "at head dim 128, non-causal, 16k tokens (the head dim of the paper's headline "
             "forward figure), batch 1, 16 heads")
FLASHMLA_MHA = ("FlashMLA README, Test & benchmark MHA prefill (Dense): 'up to 1460 TFlops in "
                "forward and 1000 TFlops in backward computation on B200, as reported by NVIDIA', "
                "https://github.com/deepseek-ai/FlashMLA/blob/066b5ba6f63d9d0840eac008fe58a1f70acf"
                "ac78/README.md; tests/test_fmha_sm100.py sweeps b 2, s 4096 and 8192, heads 128, "
                "(d, dv) (128, 128) and (192, 128), causal or not: taken at b 2, s 8192, 128 "
                "heads, d = dv = 128, non-causal, the point where the bound is tightest")
FLASHMLA_MHA_CONV = ("tests/test_fmha_sm100.py: TFLOP/s = pairs·h·2·(d + dv) / t forward, "
                     "pairs·h·2·(3d + 2dv) / t backward, pairs = the scored (query, key) pairs")
PRINTED_MS = "the time as printed (ms); the printed TFLOPS is 4·b·h·s²·d / t (x2.5 backward)"
FLASHMLA_README = ("FlashMLA README, Performance: 'up to 3000 GB/s in memory-bound "
                   "configuration and 660 TFLOPS in computation-bound configuration on H800 "
                   "SXM5', https://github.com/deepseek-ai/FlashMLA/blob/c2067be3eaa0f2e98e10854c"
                   "30898139d5d01d36/README.md")
FLASHMLA_CONV = ("tests/test_flash_mla.py at the same commit: FLOPS = 2·s_q·total_seqlens·h_q·"
                 "(d + dv), bytes = 2·(total_seqlens·h_kv·d + b·s_q·h_q·d + b·s_q·h_q·dv), "
                 "d = 576, dv = 512, h_kv = 1, b = 128 (its benchmark sweep)")
FLASHMLA_SPARSE = ("FlashMLA FP8 sparse decoding deep-dive, https://github.com/deepseek-ai/"
                   "FlashMLA/blob/066b5ba6f63d9d0840eac008fe58a1f70acfac78/docs/"
                   "20250929-hopper-fp8-sparse-deep-dive.md: H800 SXM5, batch_size 128, "
                   "num_heads 128, s_q 2")
SPARSE_CONV = ("TFLOPS = 2·b·s_q·h_q·topk·(576 + 512) / t (the deep-dive's count, 2·h_q·s_q·s_k"
               "·(d_k + d_v) per request, with s_k = topk)")
QUACK = ("QuACK, 'Getting Memory-bound Kernels to Speed-of-Light' (Guo, Zadouri, Dao, "
         "2025-07-10), https://github.com/Dao-AILab/quack/blob/ca5369be78b5c10f7e95449b26788d8e5"
         "df470af/media/2025-07-10-membound-sol.md, H100 80GB HBM3")
QUACK_CONV = "GB/s = (read x + write y) / t = 2·M·N·4 B / t (fp32)"
LIGER = ("Liger-Kernel benchmark/data/all_benchmark_data.csv (speed, forward, y_value_50 = "
         "median ms), https://github.com/linkedin/Liger-Kernel/blob/ead96b618e5c67bddc6a6e9bcb"
         "99bfe6b5ab661c/benchmark/data/all_benchmark_data.csv")
LIGER_CONV = "the median time as recorded (ms)"
NCCL_212 = ("NCCL maintainer (sjeaugey) in https://github.com/NVIDIA/nccl-tests/issues/212 "
            "(8 x H100 SXM, NVSwitch)")
BUSBW_AR = "nccl-tests: busbw = algbw x 2(n-1)/n, algbw = S / t (doc/PERFORMANCE.md)"
BUSBW_AG = "nccl-tests: busbw = algbw x (n-1)/n, algbw = S / t (doc/PERFORMANCE.md)"
HIPBLASLT = ("hipBLASLt issue https://github.com/ROCm/hipBLASLt/issues/1721: hipblaslt-bench "
             "-r f8_r -m 8192 -n 8192 -k 8192 on MI300X (clock fixed at 1005 MHz) reports "
             "907 TFLOPS")


@dataclass(frozen=True)
class Case:
    """One published kernel timing and the bound of the same work on the same chip."""

    name: str
    family: str
    hw: str  # a built-in chip name, or the H800 spec file
    measured: float  # seconds
    source: str
    convention: str  # how the published figure becomes a time
    workload: Callable[[], Workload]
    needs: str | None = None  # the formula correction this case waits for (see the docstring)

    @property
    def chip(self) -> str:
        return "h800-sxm" if self.hw == H800 else self.hw

    def bound(self) -> float:
        """The roofline time of the same work on the same chip, in seconds."""
        return float(analyze(self.workload(), self.hw).time)

    def efficiency(self) -> float:
        """bound time / measured time (<= 1 for a bound that holds)."""
        return self.bound() / self.measured


GEMM, GROUPED, FWD, BWD, DECODE, MEMORY, COLLECTIVE = (
    "gemm", "grouped gemm", "attention forward", "attention backward", "decode attention",
    "memory-bound", "collective")


# -- GEMM and grouped GEMM -----------------------------------------------------------------------


def _deepgemm(m: int, n: int, k: int, tflops: float) -> Case:
    return Case(f"deepgemm fp8 gemm m{m} n{n} k{k} h800", GEMM, H800,
                2.0 * m * n * k / (tflops * 1e12),
                f"{DEEPGEMM}, Normal GEMMs for dense models: {tflops:g} TFLOPS", DEEPGEMM_CONV,
                lambda: ops.matmul(m, k, n, dtype="fp8", out_dtype="bf16"))


def _grouped(layout: str, groups: int, m: int, n: int, k: int, tflops: float) -> Case:
    return Case(f"deepgemm fp8 grouped {layout} {groups}x m{m} n{n} k{k} h800", GROUPED, H800,
                2.0 * groups * m * n * k / (tflops * 1e12),
                f"{DEEPGEMM}, Grouped GEMMs for MoE models ({layout} layout): {tflops:g} "
                f"TFLOPS", DEEPGEMM_CONV,
                lambda: ops.batched_matmul(groups, m, k, n, dtype="fp8", out_dtype="bf16"))


# -- attention -----------------------------------------------------------------------------------


def _pairs_flops(batch: int, heads: int, seq: int, dim: int, causal: bool) -> float:
    """flash-attn's benchmark count: 4·b·h·s²·d, halved when causal."""
    return 4.0 * batch * heads * seq * seq * dim / (2.0 if causal else 1.0)


def _forward(batch: int, seq: int, heads: int, dim: int, causal: bool,
             dtype: str) -> Workload:
    return ops.attention(batch, seq, seq, heads, heads, dim, causal=causal, dtype=dtype)


def _backward(batch: int, seq: int, heads: int, dim: int, causal: bool,
              dtype: str) -> Workload:
    """flash-attn's backward (the tracer's formula) on meta tensors of these shapes."""
    import torch

    from pytest_roofline.tracing.known_ops import flash_backward

    kind = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]

    def meta(*shape: int, of: torch.dtype = kind) -> torch.Tensor:
        return torch.empty(*shape, dtype=of, device="meta")

    q, k, v, o, do = (meta(batch, seq, heads, dim) for _ in range(5))
    lse = meta(batch, heads, seq, of=torch.float32)
    return flash_backward(do, q, k, v, o, lse, causal=causal)


def _fa3(impl: str, dim: int, causal: bool, tflops: float) -> Case:
    seq, heads = 16384, 2048 // dim
    mask = "causal" if causal else "non-causal"
    return Case(f"{impl} fwd hd{dim} {mask} s16k h100 fp16", FWD, "h100-sxm",
                _pairs_flops(1, heads, seq, dim, causal) / (tflops * 1e12),
                f"{FA3_FIG}: {impl}, head dim {dim}, {mask}, {tflops:g} TFLOPs/s", FA_CONV,
                lambda: _forward(1, seq, heads, dim, causal, "fp16"))


def _fa2_a100(dim: int, causal: bool, tflops: float) -> Case:
    seq, heads = 16384, 2048 // dim
    mask = "causal" if causal else "non-causal"
    return Case(f"flashattention-2 fwd+bwd hd{dim} {mask} s16k a100 fp16", BWD,
                "a100-80gb-sxm", 3.5 * _pairs_flops(1, heads, seq, dim, causal) / (tflops * 1e12),
                f"{FA2_FIG}: head dim {dim}, {mask}, {tflops:g} TFLOPs/s", FA2_CONV,
                lambda: _forward(1, seq, heads, dim, causal, "fp16")
                + _backward(1, seq, heads, dim, causal, "fp16"))


def _b200(impl: str, causal: bool, ms: float) -> Case:
    mask = "causal" if causal else "non-causal"
    return Case(f"{impl} fwd hd64 {mask} s16384 b200 bf16", FWD, "b200", ms * 1e-3,
                f"{FA4_2605}: {impl}, {mask}, {ms:g} ms", PRINTED_MS,
                lambda: _forward(2, 16384, 32, 64, causal, "bf16"))


def _gb300(impl: str, dim: int, ms: float) -> Case:
    heads = 2048 // dim
    return Case(f"{impl} fwd hd{dim} non-causal s16384 gb300 bf16", FWD, "gb300", ms * 1e-3,
                f"{FA4_2605_GB300}: {impl}, head dim {dim} ({heads} heads), non-causal, "
                f"{ms:g} ms", PRINTED_MS, lambda: _forward(2, 16384, heads, dim, False, "bf16"))


def _fa4_paper() -> Case:
    return Case("flashattention-4 fwd hd128 non-causal s16k b200 bf16 (paper)", FWD, "b200",
                _pairs_flops(1, 16, 16384, 128, False) / 1613e12, FA4_PAPER, FA_CONV,
                lambda: _forward(1, 16384, 16, 128, False, "bf16"))


def _flashmla_mha(backward: bool, tflops: float) -> Case:
    b, s, h, d = 2, 8192, 128, 128
    per_pair = 2.0 * (3 * d + 2 * d) if backward else 2.0 * (d + d)
    phase, build = ("bwd", _backward) if backward else ("fwd", _forward)
    return Case(f"flashmla mha {phase} hd128 non-causal s8192 b200 bf16",
                BWD if backward else FWD, "b200", b * s * s * h * per_pair / (tflops * 1e12),
                f"{FLASHMLA_MHA}: {tflops:g} TFLOPS", FLASHMLA_MHA_CONV,
                lambda: build(b, s, h, d, False, "bf16"))


# -- decode attention ------------------------------------------------------------------------------


def _mla(batch: int, s_q: int, s_k: int, heads: int) -> Workload:
    return ops.attention(batch, s_q, s_k, heads, 1, 576, v_head_dim=512, shared_kv=True,
                         causal=True, dtype="bf16")


def _mla_sparse(batch: int, s_q: int, topk: int, heads: int) -> Workload:
    return ops.attention(batch * s_q, 1, topk, heads, 1, 576, v_head_dim=512, shared_kv=True,
                         dtype="bf16", kv_dtype="fp8")


def _flashmla_memory() -> Case:
    b, s_q, s_k, h = 128, 1, 16384, 16
    moved = 2.0 * (b * s_k * 576 + b * s_q * h * 576 + b * s_q * h * 512)
    return Case("flashmla dense decode memory-bound h16 s_q1 16k h800", DECODE, H800,
                moved / 3000e9,
                f"{FLASHMLA_README}: 3000 GB/s, taken at the sweep's most memory-bound point "
                f"(h_q 16, s_q 1, cache 16384)", FLASHMLA_CONV, lambda: _mla(b, s_q, s_k, h))


def _flashmla_compute() -> Case:
    b, s_q, s_k, h = 128, 2, 16384, 128
    flops = 2.0 * s_q * b * s_k * h * (576 + 512)
    return Case("flashmla dense decode compute-bound h128 s_q2 16k h800", DECODE, H800,
                flops / 660e12,
                f"{FLASHMLA_README}: 660 TFLOPS, taken at the sweep's most compute-bound point "
                f"(h_q 128, s_q 2, cache 16384)", FLASHMLA_CONV, lambda: _mla(b, s_q, s_k, h))


def _flashmla_sparse(topk: int, tflops: float) -> Case:
    b, s_q, h = 128, 2, 128
    return Case(f"flashmla fp8 sparse decode topk{topk} h800", DECODE, H800,
                2.0 * b * s_q * h * topk * (576 + 512) / (tflops * 1e12),
                f"{FLASHMLA_SPARSE}, topk {topk}: {tflops:g} TFLOPS", SPARSE_CONV,
                lambda: _mla_sparse(b, s_q, topk, h))


# -- memory-bound ----------------------------------------------------------------------------------


def _quack_softmax(impl: str, rows: int, cols: int, tbps: float, what: str) -> Case:
    return Case(f"{impl} softmax fp32 {rows}x{cols} h100", MEMORY, "h100-sxm",
                2.0 * rows * cols * 4 / (tbps * 1e12), f"{QUACK}: {what}", QUACK_CONV,
                lambda: ops.softmax(rows, cols, dtype="fp32"))


def _liger(kernel: str, hw: str, row: str, ms: float, build: Callable[[], Workload],
           needs: str | None = None) -> Case:
    return Case(f"liger {kernel} {hw}", MEMORY, hw, ms * 1e-3, f"{LIGER}, row {row}",
                LIGER_CONV, build, needs)


def _liger_embedding(tokens: int, dim: int, vocab: int, ms: float) -> Case:
    needs = None  # more tokens than rows: each distinct row is read once (formerly failing)
    return _liger(f"embedding fp32 {tokens} ids x {dim} vocab {vocab}", "a100-80gb-sxm",
                  f"embedding/liger/forward V={vocab}, B x T = {tokens}, D={dim}, float32, "
                  f"A100-SXM4-80GB, 2024-09-03: {ms:g} ms", ms,
                  lambda: ops.embedding(tokens, dim, vocab=vocab, dtype="fp32"), needs)


# -- collectives -----------------------------------------------------------------------------------


def _nccl(kind: str, hw: str, busbw: float, source: str, *, devices: int = 8,
          algorithm: str = "auto", needs: str | None = None) -> Case:
    n, size = devices, 8 * GIB
    factor = 2.0 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n
    formula = {"all_reduce": ops.all_reduce, "all_gather": ops.all_gather,
               "reduce_scatter": ops.reduce_scatter}[kind]
    label = "" if algorithm == "auto" else f" {algorithm}"
    chip = hw.rsplit("/", 1)[-1].removesuffix(".yaml")
    return Case(f"nccl {kind}{label} {n}x {chip} busbw {busbw:g}", COLLECTIVE, hw,
                size / (busbw * 1e9 / factor), f"{source}: busbw {busbw:g} GB/s",
                BUSBW_AR if kind == "all_reduce" else BUSBW_AG,
                lambda: formula(size // 4, n, dtype="fp32", link="nvlink", algorithm=algorithm),
                needs)


CASES: tuple[Case, ...] = (
    # DeepGEMM normal FP8 GEMMs (H800)
    *(_deepgemm(m, n, k, t) for m, n, k, t in (
        (64, 2112, 7168, 206), (64, 24576, 1536, 289), (64, 32768, 512, 219),
        (64, 7168, 16384, 336), (64, 4096, 7168, 287), (64, 7168, 2048, 295),
        (128, 2112, 7168, 352), (128, 24576, 1536, 535), (128, 32768, 512, 358),
        (128, 7168, 16384, 645), (128, 4096, 7168, 533), (128, 7168, 2048, 510),
        (4096, 2112, 7168, 1009), (4096, 24576, 1536, 1125), (4096, 32768, 512, 751),
        (4096, 7168, 16384, 1426), (4096, 4096, 7168, 1265), (4096, 7168, 2048, 1168))),
    Case("hipblaslt fp8 gemm 8192^3 mi300x", GEMM, "mi300x", 2.0 * 8192**3 / 907e12,
         HIPBLASLT, "TFLOPS = 2·m·n·k / t (hipblaslt-bench)",
         lambda: ops.matmul(8192, 8192, 8192, dtype="fp8")),
    # DeepGEMM grouped FP8 GEMMs (H800)
    *(_grouped("contiguous", g, m, n, k, t) for g, m, n, k, t in (
        (4, 8192, 4096, 7168, 1346), (4, 8192, 7168, 2048, 1214),
        (8, 4096, 4096, 7168, 1346), (8, 4096, 7168, 2048, 1214))),
    *(_grouped("masked", g, m, n, k, t) for g, m, n, k, t in (
        (1, 1024, 4096, 7168, 1233), (1, 1024, 7168, 2048, 925),
        (2, 512, 4096, 7168, 1040), (2, 512, 7168, 2048, 916),
        (4, 256, 4096, 7168, 932), (4, 256, 7168, 2048, 815))),
    # Attention forward: FlashAttention-3 paper figure (H100, FP16, sequence 16k)
    _fa3("flashattention-3", 64, False, 497),
    _fa3("flashattention-3", 64, True, 473),
    _fa3("flashattention-3", 128, False, 648),
    _fa3("flashattention-3", 128, True, 616),
    _fa3("flashattention-3", 256, False, 756),
    _fa3("flashattention-3", 256, True, 642),
    _fa3("cudnn", 128, False, 595),
    _fa3("flashattention-2", 128, False, 370),
    # Attention forward on B200 (FlashAttention-4, cuDNN, NVIDIA's MHA prefill in FlashMLA)
    _b200("flashattention-4", False, 5.01),
    _b200("cudnn", False, 4.85),
    _b200("flashattention-4", True, 2.58),
    _b200("cudnn", True, 2.52),
    _fa4_paper(),
    _gb300("flashattention-4", 128, 2.34),
    _gb300("flashattention-4", 64, 3.54),
    _gb300("cudnn", 64, 3.80),
    _flashmla_mha(False, 1460),
    # Attention backward: FlashAttention-2 forward + backward (A100), MHA backward (B200)
    _fa2_a100(64, False, 176),
    _fa2_a100(128, False, 203),
    _fa2_a100(64, True, 171),
    _fa2_a100(128, True, 189),
    _flashmla_mha(True, 1000),
    # Decode attention: FlashMLA (H800)
    _flashmla_memory(),
    _flashmla_compute(),
    _flashmla_sparse(2048, 410),
    _flashmla_sparse(32768, 460),
    # Memory-bound: QuACK (H100), Liger (A100, H100, B200)
    _quack_softmax("quack", 16384, 131072, 3.01,
                   "NCU profile of the softmax, batch 16K x reduction 131K, fp32: DRAM "
                   "throughput 3.01 TB/s"),
    _quack_softmax("torch.compile", 16384, 262144, 1.89,
                   "torch.compile's fp32 softmax at reduction dim 262k: 1.89 TB/s model memory "
                   "throughput (batch 8k-32k; 16k taken)"),
    _liger("rms_norm bf16 2048x32768", "a100-80gb-sxm",
           "rms_norm/liger/forward H=32768, M=2048, bfloat16, A100-SXM4-80GB: 0.18224 ms",
           0.18223999440670013, lambda: ops.rmsnorm(2048, 32768, dtype="bf16")),
    _liger("rms_norm bf16 2048x16384", "a100-80gb-sxm",
           "rms_norm/liger/forward H=16384, M=2048, bfloat16, A100-SXM4-80GB: 0.095264 ms",
           0.0952640026807785, lambda: ops.rmsnorm(2048, 16384, dtype="bf16")),
    _liger("layer_norm fp32 4096x16384", "a100-80gb-sxm",
           "layer_norm/liger/forward N=16384, M=4096, float32, A100-SXM4-80GB: 0.322304 ms",
           0.32230401039123535, lambda: ops.layernorm(4096, 16384, dtype="fp32")),
    _liger("cross_entropy fp32 16384x131072", "a100-80gb-sxm",
           "cross_entropy/liger/forward V=131072, B=8, T=2048, float32 (torch.randn's default)"
           ", A100-SXM4-80GB: 15.00936 ms", 15.009359359741211,
           lambda: ops.softmax(16384, 131072, dtype="fp32")),
    _liger("cross_entropy fp32 16384x32768", "a100-80gb-sxm",
           "cross_entropy/liger/forward V=32768, B=8, T=2048, float32, A100-SXM4-80GB: "
           "2.837824 ms", 2.8378241062164307,
           lambda: ops.softmax(16384, 32768, dtype="fp32")),
    _liger_embedding(16384, 4096, 131072, 0.31988799571990967),
    _liger_embedding(16384, 4096, 1024, 0.18961599469184875),
    _liger_embedding(16384, 768, 131072, 0.07091200351715088),
    _liger_embedding(16384, 768, 1024, 0.04262400045990944),
    _liger("layer_norm fp32 4096x16384", "h100-sxm",
           "layer_norm/liger/forward N=16384, M=4096, float32, H100 80GB HBM3, 2025-07-17: "
           "0.184768 ms", 0.18476800620555878, lambda: ops.layernorm(4096, 16384, dtype="fp32")),
    _liger("fused_add_rms_norm fp32 2048x32768", "h100-sxm",
           "fused_add_rms_norm/liger_fused_add_rms_norm/forward H=32768, M=2048, float32, "
           "H100 80GB HBM3, 2026-04-07: 0.433808 ms", 0.43380799889564514,
           lambda: ops.rmsnorm(2048, 32768, dtype="fp32", residual=True)),
    _liger("fused_add_rms_norm fp32 2048x16384", "h100-sxm",
           "fused_add_rms_norm/liger_fused_add_rms_norm/forward H=16384, M=2048, float32, "
           "H100 80GB HBM3, 2026-04-07: 0.18384 ms", 0.18384000658988953,
           lambda: ops.rmsnorm(2048, 16384, dtype="fp32", residual=True)),
    _liger("group_norm fp32 128x2048x512", "b200",
           "group_norm/liger/forward C=2048, M=128, H=512, channels_per_group=4, float32, "
           "NVIDIA B200: 0.219104 ms", 0.21910400688648224,
           lambda: ops.layernorm(128 * 2048 // 4, 4 * 512, dtype="fp32")),
    _liger("group_norm fp32 128x1024x512", "b200",
           "group_norm/liger/forward C=1024, M=128, H=512, channels_per_group=4, float32, "
           "NVIDIA B200: 0.114752 ms", 0.11475200206041336,
           lambda: ops.layernorm(128 * 1024 // 4, 4 * 512, dtype="fp32")),
    # Collectives: NCCL on one 8-GPU NVSwitch node
    _nccl("all_reduce", "h100-sxm", 370,
          f"{NCCL_212}: 'NCCL can get an effective NVLink bandwidth of 370GB/s, which you can "
          f"observe as BusBw ... when running with NCCL_ALGO=RING'", algorithm="ring"),
    _nccl("all_gather", "h100-sxm", 370,
          f"{NCCL_212}: the same 370 GB/s 'BusBw when running non-allreduce operations'"),
    _nccl("reduce_scatter", "h100-sxm", 370,
          f"{NCCL_212}: the same 370 GB/s 'BusBw when running non-allreduce operations'"),
    _nccl("all_reduce", "b200", 830,
          "all_reduce_perf on 8 x B200 in one machine (NCCL 2.27.1), https://github.com/NVIDIA/"
          "nccl/issues/1807: 'Ours is 830+'"),
    _nccl("all_reduce", "a100-80gb-sxm", 208,
          "all_reduce_perf -b 8 -e 12G -f 2 -g 1 -t 2 on two A100 joined by 12 NVLinks (NV12),"
          " https://github.com/NVIDIA/nccl-tests/issues/178: 'Bus_BW: 208 GBps'", devices=2),
    _nccl("all_reduce", "h100-sxm", 480,
          f"{NCCL_212}: 'allreduce uses NVLink SHARP by default ... On 8 GPUs, you should "
          f"reach a peak busBw of ~480GB/s'"),
    _nccl("all_reduce", "h200", 475,
          "all_reduce_perf -b 64k -e 4G on 8 x H200 (NVLink 4, NCCL 2.20.3, NVLS by default),"
          " https://github.com/NVIDIA/nccl-tests/issues/272: peak"),
    _nccl("all_reduce", H800, 215,
          "all_reduce_perf on 8 x H800 (NVLS), https://github.com/NVIDIA/nccl/issues/1374: "
          "'the reported allreduce busBW is 215 GB/s'"),
)

#: Why each ``needs`` value beats the bound today (the test's expected-failure reason).
NEEDS: dict[str, str] = {}

"""Published measurements the bounds must never beat, and how each is modelled.

Each case is a result someone else measured and published (MLPerf Inference, NVIDIA's
TensorRT-LLM performance tables), the source it comes from, and the roofline bound of the same
work on the same chip, in the same unit. ``efficiency = bound / measured`` for a time, and
``measured / bound`` for a throughput: it must never exceed 1, and on cases that model exactly
the measured work it should sit between 40% and 90% for the bounds to be useful.

How the work is modelled:

* **ResNet-50, MLPerf Inference offline and server** (int8, 224 x 224, one GPU, fusion and
  on-chip handoffs as :mod:`pytest_roofline.engine.fusion` states): the scenario lets the system
  choose its batch, so the bound is the best throughput over batches 1 to 4096. **Single
  stream**: one image; the bound is compared with the fastest query of the run.
* **BERT, TensorRT demoBERT** (NVIDIA/TensorRT ``demo/BERT``, fixed-length engines: every
  sequence padded to the benchmark's length, so the work is exactly batch x length tokens):
  one forward pass of the batch in INT8 or FP16 on A100 40 GB, against the average latency.
  BERT-Large is the BERT-Base configuration at Devlin et al.'s large sizes (24 layers, 1024
  hidden, 16 heads, 4096 intermediate).
* **LLM serving, TensorRT-LLM ``trtllm-bench throughput``** (uniform input and output lengths
  ISL/OSL, the table's precision and tensor parallelism; an FP8 engine keeps an FP8 KV cache,
  as the document says): the system holds at most B sequences at once, B being what fits in
  memory beside the weights at the full ISL + OSL context (activations ignored, so B is if
  anything too large: the bound charges less). B requests cost one prefill of ISL tokens and
  OSL - 1 decode steps at contexts ISL + 1 .. ISL + OSL - 1 (attention is linear in the context,
  so the mean context ISL + OSL/2 gives the same FLOPs and bytes). Prefill and decode are
  merged kernel by kernel before the roofline is taken, which is a lower bound for any
  schedule that mixes them (in-flight batching, chunked prefill): a sum of per-kernel maxima
  is never below the maximum of the sums. Throughput = B x OSL over that time.
* **LLM pre-training, the Llama 3 paper's Table 4** (Llama 3 405B, 8192-token sequences,
  16M tokens a step, bf16 on H100, TP 8, PP 16, DP 64 or 128, the per-GPU TFLOPs it
  reports): the measured step time per GPU is taken as 6·N·tokens / (GPUs x TFLOPs/GPU), the
  smallest FLOP count the paper's figure can stand for (dense matmuls, no attention), hence
  the shortest time. The bound is ``train_step`` per chip with the most favourable schedule
  the paper leaves open: one sequence a microbatch, an interleaved pipeline of one layer a
  virtual stage (8), ZeRO 1 (the least data-parallel traffic), collectives hidden behind the
  matrix work (``overlap="full"``), all on NVLink (the 400 Gb/s network is slower, so the
  bound stays a bound). Not exact: the paper states neither its FLOP count nor its schedule.
* **LLM pre-training, MLPerf Training v4.0 GPT-3 175B** (NVIDIA's closed-division NeMo runs
  on H100-SXM5-80GB, each a run that reached the target log perplexity, 2.69): the
  measured time is the run's training time, the sum of its ``block_start`` to
  ``block_stop`` intervals in the MLPerf log (the run time without the evaluations between
  blocks; the scored run time adds them, so it is longer still). The work is what the log
  records: ``train_samples`` tokens at ``run_stop`` (the benchmark counts tokens: 24 or 23
  or 22 blocks of ``epoch_count`` tokens, a whole number of steps of ``global_batch_size``
  sequences of ``max_sequence_length`` 2048), and ``gradient_accumulation_steps``
  microbatches a step. The bound is that many ``train_step``s at the submission's
  configuration (its ``config_DGXH100_*.sh``: tensor and pipeline parallelism, interleaved
  virtual stages, micro-batch size; sequence parallelism on; the distributed optimizer,
  ZeRO 1), every tensor in fp8 at the fp8 peak (the run multiplies in fp8 and keeps the
  rest in bf16, so this charges less), collectives hidden behind the matrix work on NVLink
  (the 400 Gb/s InfiniBand between nodes is slower). In bf16 the bound of the 512-GPU run
  would be 95% of its measured time: the fp8 is what it ran. Not exact in precision.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from pytest_roofline import analyze, fusion, get_hardware, models
from pytest_roofline.engine.workload import Kernel, Workload

MLPERF_V40 = ("MLPerf Inference v4.0, closed division, NVIDIA, https://github.com/mlcommons/"
              "inference_results_v4.0 (commit 3c4a1cf1), closed/NVIDIA/results/")
MLPERF_V31 = ("MLPerf Inference v3.1, closed division, NVIDIA, https://github.com/mlcommons/"
              "inference_results_v3.1 (commit eaf622a2), closed/NVIDIA/results/")
TRTLLM_V014 = ("TensorRT-LLM performance overview, v0.14.0 throughput table (tokens/s, "
               "trtllm-bench, uniform ISL/OSL), docs/source/performance/perf-overview.md, "
               "https://nvidia.github.io/TensorRT-LLM/performance/perf-overview.html; as "
               "stored at https://github.com/arthurrasmusson/TensorRT-LLM (commit e00d4e65)")
DEMOBERT = ("TensorRT demoBERT, Inference performance: NVIDIA A100 (40GB), average latency "
            "(ms), https://github.com/NVIDIA/TensorRT (commit 007c3470) demo/BERT/README.md")
LLAMA3 = ("The Llama 3 Herd of Models, Meta, 2024, https://arxiv.org/abs/2407.21783, Table 4 "
          "(scaling configurations of Llama 3 405B pre-training)")
MLPERF_TRAINING_V40 = ("MLPerf Training v4.0, closed division, NVIDIA, https://github.com/"
                      "mlcommons/training_results_v4.0 (commit 6fe95437)")
TRTLLM_V10 = ("TensorRT-LLM performance overview, v1.0 throughput table (tokens/s, "
              "trtllm-bench, PyTorch backend), https://github.com/NVIDIA/TensorRT-LLM "
              "(commit 00f37686), docs/source/performance/perf-overview.md")


@dataclass(frozen=True)
class Case:
    """One published measurement and the bound of the same work."""

    name: str
    family: str
    hw: str
    measured: float
    unit: str  # "1/s" (a throughput) or "s" (a latency)
    source: str
    bound: Callable[[], float]
    exact: bool = True  # the model is exactly the measured work

    def efficiency(self) -> float:
        """bound time / measured time (<= 1 for a bound that holds)."""
        value = self.bound()
        return value / self.measured if self.unit == "s" else self.measured / value


# -- ResNet-50 ---------------------------------------------------------------------------------


def resnet_throughput(hw: str) -> float:
    """The best images/s of int8 ResNet-50 on *hw* over batches 1..4096."""
    resnet, chip = models.load("resnet-50"), get_hardware(hw)
    return max(b / float(analyze(resnet.forward(b, dtype="int8"), chip).time)
               for b in (2 ** i for i in range(13)))


def resnet_latency(hw: str) -> float:
    """Seconds for one int8 image on *hw*."""
    return float(analyze(models.load("resnet-50").forward(1, dtype="int8"), hw).time)


# -- BERT --------------------------------------------------------------------------------------


def bert(size: str) -> models.Transformer:
    """BERT-Base as built in, or BERT-Large from it (Devlin et al., table 1)."""
    base = models.load("bert-base")
    if size == "base":
        return base
    return models.Transformer(dataclasses.replace(
        base.config, name="bert-large", hidden=1024, layers=24, heads=16, kv_heads=16,
        intermediate=4096, head_dim=64, published_params=None,
        published_params_source=None))


def bert_latency(size: str, hw: str, batch: int, seq: int, dtype: str) -> float:
    return float(analyze(bert(size).forward(batch, seq, dtype=dtype), hw).time)


# -- LLM serving -------------------------------------------------------------------------------


def _merge(parts: list[Workload], capacity: float) -> Workload:
    """Kernels of the same name, unit, precision and link summed into one (see the module
    docstring); bytes kept on chip by the handoff rule are left out first."""
    Key = tuple[str, str, "str | None", "str | None", "str | None"]
    totals: dict[Key, list[float]] = {}
    for workload in parts:
        for k in workload.kernels:
            kept = float(fusion.kept_on_chip(k, capacity)) * float(k.count)
            key = (k.name, k.unit, k.dtype, k.link, k.epilogue_of)
            row = totals.setdefault(key, [0.0, 0.0, 0.0])
            row[0] += float(k.total_flops)
            row[1] += float(k.total_bytes) - kept
            row[2] += float(k.total_link_bytes)
    return Workload([Kernel(name, flops, nbytes, link_bytes=link_bytes, unit=unit, dtype=dtype,
                            link=link, epilogue_of=host)
                     for (name, unit, dtype, link, host), (flops, nbytes, link_bytes)
                     in totals.items()], name="serving")


def serving_throughput(model: str, hw: str, isl: int, osl: int, *, tp: int = 1,
                       dtype: str = "fp8") -> float:
    """Output tokens/s bound of trtllm-bench's throughput run (see the module docstring)."""
    llm, chip = models.load(model), get_hardware(hw)
    resident = llm.footprint(1, isl + osl, tp=tp, dtype=dtype, kv_dtype=dtype)
    batch = math.floor((chip.capacity - float(resident.weights)) / float(resident.kv_cache))
    if batch < 1:
        raise ValueError(f"{model} at tp={tp} does not fit on {hw}")
    parts = [llm.prefill(batch, isl, tp=tp, dtype=dtype, kv_dtype=dtype)]
    if osl > 1:
        step = llm.decode(batch, isl + osl // 2, tp=tp, dtype=dtype, kv_dtype=dtype)
        parts.append(step.repeat(float(osl - 1)))
    program = _merge(parts, fusion.onchip_capacity(chip))
    return batch * osl / float(analyze(program, chip).time)


# -- the table ---------------------------------------------------------------------------------


def _resnet(name: str, hw: str, measured: float, source: str) -> Case:
    return Case(name, "cnn: resnet-50", hw, measured, "1/s", source,
                lambda: resnet_throughput(hw))


def _serving(model: str, family: str, hw: str, dtype: str, tp: int, isl: int, osl: int,
             measured: float, source: str) -> Case:
    name = f"{model} {hw} {dtype} tp{tp} {isl}/{osl}"
    return Case(name, family, hw, measured, "1/s", source,
                lambda: serving_throughput(model, hw, isl, osl, tp=tp, dtype=dtype))


DENSE, MOE = "llm: dense decoder", "llm: mixture of experts"


def llama3_step(gpus: int, dp: int, tflops_per_gpu: float) -> Case:
    """A Llama 3 405B pre-training step of Table 4 (see the module docstring)."""
    model = models.load("llama-3-405b")
    seq, batch = 8192, 16 * 2**20 // 8192  # 16M tokens: 2048 sequences
    per_replica = batch // dp
    measured = 6.0 * model.params * batch * seq / gpus / (tflops_per_gpu * 1e12)

    def bound() -> float:
        step = model.train_step(batch, seq, tp=8, pp=16, dp=dp, microbatches=per_replica,
                                virtual_stages=8, zero=1, link="nvlink", overlap="full")
        return float(analyze(step, "h100").time)

    return Case(f"llama-3-405b training {gpus} h100 tp8 pp16 dp{dp}", "llm: training",
                "h100", measured, "s", f"{LLAMA3}: {gpus} GPUs, TP 8, CP 1, PP 16, DP {dp}, "
                f"{tflops_per_gpu:g} TFLOPs/GPU", bound, exact=False)


def gpt3_175b() -> models.Transformer:
    """GPT-3 175B (Brown et al. 2020, https://arxiv.org/abs/2005.14165, Table 2.1: 96 layers,
    d_model 12288, 96 heads of 128, an MLP of 4 x d_model; GPT-2's architecture, vocabulary
    of 50,257 and learned positions, here over 2048), as MLPerf's GPT-3 benchmark trains it
    (NVIDIA's NeMo configuration, conf/custom.yaml: 96 layers, hidden 12288, 96 heads, ffn
    4 x hidden, sequence 2048, no dropout)."""
    return models.Transformer(dataclasses.replace(
        models.load("gpt-2").config, name="gpt-3-175b", hidden=12288, layers=96, heads=96,
        kv_heads=96, intermediate=4 * 12288, head_dim=128, v_head_dim=128,
        max_positions=2048, published_params=None, published_params_source=None))


def mlperf_gpt3(result: str, gpus: int, *, tp: int, pp: int, virtual_stages: int,
                micro_batch: int, global_batch: int, tokens: int, seconds: float,
                run_seconds: float) -> Case:
    """An MLPerf Training GPT-3 175B run (see the module docstring)."""
    seq = 2048
    steps, left = divmod(tokens, global_batch * seq)
    assert not left, f"{result}: {tokens} tokens are not whole steps"
    dp = gpus // (tp * pp)
    microbatches = global_batch // dp // micro_batch

    def bound() -> float:
        step = gpt3_175b().train_step(global_batch, seq, tp=tp, pp=pp, dp=dp,
                                      microbatches=microbatches,
                                      virtual_stages=virtual_stages, zero=1, dtype="fp8",
                                      link="nvlink", overlap="full")
        return steps * float(analyze(step, "h100").time)

    return Case(f"gpt-3-175b mlperf training {gpus} h100 tp{tp} pp{pp} dp{dp}",
                "llm: training", "h100", seconds, "s",
                f"{MLPERF_TRAINING_V40}, {result}: global_batch_size {global_batch}, "
                f"max_sequence_length {seq}, gradient_accumulation_steps {microbatches}, "
                f"train_samples {tokens:,} tokens ({steps} steps) at run_stop, training "
                f"blocks {seconds:g} s of a {run_seconds:g} s run; TP {tp}, PP {pp}, "
                f"interleaved {virtual_stages}, micro-batch {micro_batch}, fp8",
                bound, exact=False)


def _bert(size: str, seq: int, batch: int, dtype: str, milliseconds: float) -> Case:
    return Case(f"bert-{size} a100-40gb {dtype} batch {batch} seq {seq}", "encoder: bert",
                "a100-40gb", milliseconds * 1e-3, "s", DEMOBERT,
                lambda: bert_latency(size, "a100-40gb", batch, seq, dtype))


CASES: tuple[Case, ...] = (
    # MLPerf ResNet-50, int8, one GPU
    _resnet("resnet-50 offline h100", "h100", 88714.3,
            MLPERF_V40 + "DGX-H100_H100-SXM-80GBx1_TRT/resnet50/Offline: 88,714.3 samples/s"),
    _resnet("resnet-50 server h100", "h100", 72975.89,
            MLPERF_V40 + "DGX-H100_H100-SXM-80GBx1_TRT/resnet50/Server: 72,975.89 completed "
            "samples/s"),
    _resnet("resnet-50 offline l4", "l4", 12881.7,
            MLPERF_V31 + "L4x1_TRT/resnet50/Offline: 12,881.7 samples/s"),
    Case("resnet-50 single-stream l4", "cnn: resnet-50", "l4", 332975e-9, "s",
         MLPERF_V31 + "L4x1_TRT/resnet50/SingleStream: min latency 332,975 ns",
         lambda: resnet_latency("l4")),
    # BERT, TensorRT demoBERT on A100 40 GB (average latency)
    _bert("base", 128, 128, "int8", 8.18),
    _bert("base", 384, 128, "int8", 29.34),
    _bert("base", 384, 128, "fp16", 51.26),
    _bert("base", 384, 8, "int8", 2.22),
    _bert("base", 128, 1, "int8", 0.58),
    _bert("large", 384, 128, "int8", 89.01),
    _bert("large", 384, 128, "fp16", 163.70),
    _bert("large", 128, 32, "int8", 7.09),
    _bert("large", 384, 1, "fp16", 3.12),
    # Llama 3.1 8B (the llama-3-8b architecture), TensorRT-LLM v0.14.0, TP1
    _serving("llama-3-8b", DENSE, "h200", "fp8", 1, 128, 128, 27778.8885, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "h200", "fp8", 1, 2048, 2048, 11032.9729, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "h200", "fp8", 1, 20000, 2000, 1649.5453, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "h100", "fp8", 1, 128, 2048, 18995.2523, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "h100", "fp8", 1, 2048, 128, 3460.3545, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "h100", "fp8", 1, 5000, 500, 3258.2001, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "h100", "fp16", 1, 128, 128, 15571.6549, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "h100", "fp16", 1, 500, 2000, 7498.3331, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "a100-80gb-sxm", "fp16", 1, 128, 128, 6701.7958,
             TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "a100-80gb-sxm", "fp16", 1, 1000, 1000, 3634.3886,
             TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "a100-80gb-sxm", "fp16", 1, 128, 4096, 3011.3335,
             TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "l40s", "fp8", 1, 128, 128, 8639.7933, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "l40s", "fp8", 1, 2048, 2048, 2018.303, TRTLLM_V014),
    _serving("llama-3-8b", DENSE, "l40s", "fp8", 1, 5000, 500, 855.9822, TRTLLM_V014),
    # Llama 3.1 70B (the llama-3-70b architecture), v0.14.0, tensor parallel
    _serving("llama-3-70b", DENSE, "h100", "fp8", 2, 128, 128, 5194.8171, TRTLLM_V014),
    _serving("llama-3-70b", DENSE, "h100", "fp8", 2, 2048, 2048, 2445.0093, TRTLLM_V014),
    _serving("llama-3-70b", DENSE, "h200", "fp8", 1, 1000, 1000, 2585.0953, TRTLLM_V014),
    _serving("llama-3-70b", DENSE, "a100-80gb-sxm", "fp16", 4, 128, 128, 2420.8665,
             TRTLLM_V014),
    # Llama 3.1 8B, TensorRT-LLM v1.0 (PyTorch backend), TP1
    _serving("llama-3-8b", DENSE, "h100", "fp8", 1, 1000, 1000, 15220.0, TRTLLM_V10),
    _serving("llama-3-8b", DENSE, "h200", "fp8", 1, 128, 4096, 18027.0, TRTLLM_V10),
    # Mixtral 8x7B, v0.14.0
    _serving("mixtral-8x7b", MOE, "h100", "fp8", 2, 128, 128, 24321.9927, TRTLLM_V014),
    _serving("mixtral-8x7b", MOE, "h100", "fp8", 2, 128, 2048, 20945.7816, TRTLLM_V014),
    _serving("mixtral-8x7b", MOE, "h200", "fp8", 2, 2048, 128, 2958.0873, TRTLLM_V014),
    _serving("mixtral-8x7b", MOE, "a100-80gb-sxm", "fp16", 4, 500, 2000, 8930.3495,
             TRTLLM_V014),
    _serving("mixtral-8x7b", MOE, "l40s", "fp8", 4, 1000, 1000, 5060.8399, TRTLLM_V014),
    # Llama 3 405B pre-training (the Llama 3 paper's Table 4)
    llama3_step(8192, 64, 430),
    llama3_step(16384, 128, 400),
    # GPT-3 175B pre-training to the target perplexity (MLPerf Training v4.0): the fastest
    # of each system's logged runs; the configuration from NVIDIA/benchmarks/gpt3/
    # implementations/nemo/config_DGXH100_64x8x128x4x8_mbs2.sh and _1344x8x6x4x6_mbs1_cg.sh
    mlperf_gpt3("NVIDIA/results/eos_n64_ngc24.04_nemo/gpt3/result_2.txt", 512, tp=4, pp=8,
                virtual_stages=4, micro_batch=2, global_batch=2304, tokens=1_193_803_776,
                seconds=2778.412, run_seconds=3038.246),
    mlperf_gpt3("NVIDIA/results/eos-dfw_n1344_ngc24.04_nemo/gpt3/result_2.txt", 10752, tp=4,
                pp=6, virtual_stages=8, micro_batch=1, global_batch=2688,
                tokens=1_211_105_280, seconds=202.703, run_seconds=222.488),
)

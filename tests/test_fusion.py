"""The fusion model (epilogue fusion, on-chip handoffs) and the mixed-precision peaks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_roofline import WorkloadError, analyze, fusion, get_hardware, list_hardware, models, ops
from pytest_roofline import sweep as analyze_sweep
from pytest_roofline.engine.breakdown import format_breakdown
from pytest_roofline.engine.workload import Kernel, Workload
from pytest_roofline.hardware import MemoryLevel
from pytest_roofline.ops.matmul import matmul_kernel
from pytest_roofline.ops.vector import elementwise_kernel


def _up_and_gelu(tokens: float = 512.0) -> tuple[Kernel, Kernel]:
    up = matmul_kernel("up_proj", tokens, 768, 3072, "bf16", "bf16", "bf16", "bf16")
    gelu = elementwise_kernel("gelu", tokens * 3072, 1, 1, 8.0, "bf16")
    return up, gelu


def test_epilogue_removes_the_intermediate_write_and_read() -> None:
    # [512, 768] @ [768, 3072] in bf16 writes 512·3072·2 B; GELU reads them back and writes
    # as many. Fused, neither the write nor the read happens: 2 x 3.1 MB fewer bytes. Each op
    # stays a kernel with its own FLOPs; GELU names the kernel it runs in.
    up, gelu = _up_and_gelu()
    host, epilogue = fusion.epilogue(up, gelu)
    intermediate = 512 * 3072 * 2
    assert up.out_bytes == intermediate
    assert host.bytes == up.bytes - intermediate
    assert epilogue.bytes == gelu.bytes - intermediate  # writes its output only
    assert (host.flops, epilogue.flops) == (up.flops, gelu.flops)
    assert epilogue.epilogue_of == "up_proj" and host.epilogue_of is None
    assert fusion.chain("none", up, gelu) == [up, gelu]
    assert fusion.chain("epilogue", up, gelu) == [host, epilogue]


def test_fused_epilogue_overlaps_the_vector_work() -> None:
    # H100: the matmul's 2·512·768·3072 FLOPs at 989.4 TFLOP/s and GELU's 8·512·3072 at the
    # bf16 vector peak (133.8 TFLOP/s) run side by side: the kernel takes the larger time.
    up, gelu = _up_and_gelu()
    result = analyze(Workload(fusion.chain("epilogue", up, gelu)), "h100")
    row, epilogue = result.kernels
    matrix = 2 * 512 * 768 * 3072 / 989.4e12
    vector = 8 * 512 * 3072 / 133.8e12
    memory = (row.bytes + epilogue.bytes) / 3.35e12
    assert row.t_compute == pytest.approx(max(matrix, vector))
    assert row.time == pytest.approx(max(matrix, vector, memory))
    assert result.time == pytest.approx(row.time)
    assert epilogue.time == 0 and epilogue.flops == 8 * 512 * 3072
    assert epilogue.regime == row.regime and epilogue.epilogue_of == "up_proj"
    assert row.peak_label == "matrix:bf16 + vector:bf16"
    assert row.fused == ("gelu",)
    lines = format_breakdown(result)
    assert lines[1].startswith("up_proj + gelu") and lines[2].startswith("gelu (in up_proj)")


def test_fusion_errors_name_the_mistake() -> None:
    up, gelu = _up_and_gelu()
    with pytest.raises(WorkloadError, match="fusion must be one of 'none', 'epilogue'"):
        fusion.policy("full")
    with pytest.raises(WorkloadError, match="must run equally often"):
        fusion.epilogue(up, gelu.scaled(2))
    with pytest.raises(WorkloadError, match="only vector kernels"):
        fusion.epilogue(gelu, up)
    no_output = Kernel("raw", 1.0, 10.0, unit="vector")
    with pytest.raises(WorkloadError, match="declares no output bytes"):
        fusion.epilogue(no_output, gelu)


@given(tokens=st.integers(1, 1 << 16))
def test_fusion_never_adds_time(tokens: int) -> None:
    up, gelu = _up_and_gelu(float(tokens))
    eager = analyze(Workload(fusion.chain("none", up, gelu)), "h100")
    fused = analyze(Workload(fusion.chain("epilogue", up, gelu)), "h100")
    assert fused.time <= eager.time * (1 + 1e-12)
    assert fused.bytes < eager.bytes
    assert fused.flops == pytest.approx(eager.flops)


def test_a_handed_tensor_stays_on_chip_only_where_it_fits() -> None:
    # conv -> relu handoff of 64 x 56 x 56 x batch int8 elements: 6.4 MB at batch 32 fits
    # in H100's 50 MB L2; 102.8 MB at batch 512 does not. A chip without on-chip memory in
    # its spec keeps nothing.
    for batch, kept in ((32.0, True), (512.0, False)):
        conv = ops.conv2d(batch, 64, 64, 56, 3, padding=1, dtype="int8").kernels[0]
        relu = elementwise_kernel("relu", batch * 64 * 56 * 56, 1, 1, 1.0, "int8")
        handed = fusion.handoffs([conv, relu])
        assert handed[0].handoff_out == handed[1].handoff_in[0] == batch * 64 * 56 * 56
        result = analyze(Workload(handed), "h100")
        charged = conv.bytes + relu.bytes - (2 * conv.out_bytes if kept else 0)
        assert result.bytes == pytest.approx(charged)
        assert result.kernels[0].onchip_bytes == (conv.out_bytes if kept else 0)
    bare = get_hardware("h100").replace(onchip=())
    assert analyze(Workload(handed), bare).bytes == pytest.approx(
        sum(k.bytes for k in handed))


def test_every_builtin_chip_lists_its_onchip_memory() -> None:
    for name in list_hardware():
        chip = get_hardware(name)
        assert chip.onchip, name
        assert fusion.onchip_capacity(chip) >= 4e6, name  # T4's 4 MB L2 is the smallest


# -- ResNet-50 under both policies ---------------------------------------------------------------


def test_resnet_epilogue_fusion_keeps_flops_and_drops_the_round_trips() -> None:
    resnet = models.load("resnet-50")
    fused = resnet.forward(256, dtype="int8")
    eager = resnet.forward(256, dtype="int8", fusion="none")
    # eager runs batch norm as its own kernel (2 FLOPs per element); folded when fused
    assert fused.flops < eager.flops < fused.flops * 1.01
    assert resnet.macs == pytest.approx(4.09e9, rel=0.01)  # torchvision's card: 4.09 GMACs
    # Per image, int8 (1 B an element), the weights shared by the 256 images: the
    # convolutions' weights are 25,557,032 parameters less the batch norms' 53,120 (folded)
    # and the fc's 2,049,000: 23,454,912 / 256 = 91,620.75 B an image.
    # Fused, 28,504,332.75 B: each conv reads its input once, 10,662,400 (the stem's
    #   150,528; stage 1, 3,211,264; stage 2, 3,913,728; stage 3, 2,558,976; stage 4, 827,904,
    #   a block's conv1 and downsample reading its input, conv2 and conv3 their
    #   predecessor's output), and writes its output only where no epilogue does: the four
    #   downsample outputs, 802,816 + 401,408 + 200,704 + 100,352 = 1,505,280; with the
    #   weights, 12,259,300.75. The ReLU epilogues write every activated output once,
    #   9,608,704 (the stem's 802,816; stages 1-4: 3,612,672, 2,709,504, 1,956,864,
    #   526,848); the residual adds read the shortcut once, 5,519,360 (16 block outputs);
    #   the max pool reads 64 x 112 x 112 and writes 64 x 56 x 56, 1,003,520; the average
    #   pool reads 2048 x 49 and writes 2048, 102,400; the fc reads 2048 and its weights
    #   (2,048,000 / 256 = 8,000, its 1,000 biases not counted) and writes 1000, 11,048.
    # Eager, 80,988,428.75 B: each conv writes its whole output too, 11,113,984 (the
    #   activated outputs and the downsample ones): 21,868,004.75; batch norm reads and
    #   writes every conv output, 22,227,968; ReLU reads and writes each, 2 x 9,608,704;
    #   the adds read two and write one, 3 x 5,519,360; pools and fc as fused, 1,116,968.
    assert fused.bytes / 256 == pytest.approx(28_504_332.75, rel=1e-12)
    assert eager.bytes / 256 == pytest.approx(80_988_428.75, rel=1e-12)
    assert 21_868_004.75 + 22_227_968 + 2 * 9_608_704 + 3 * 5_519_360 + 1_116_968 == \
        80_988_428.75 and 12_259_300.75 + 9_608_704 + 5_519_360 + 1_003_520 + 102_400 + \
        11_048 == 28_504_332.75  # the sums above
    add = next(k for k in fused.kernels if k.name == "stage1.block1.conv3.add")
    assert add.epilogue_of == "stage1.block1.conv3"
    assert any(k.name == "stage1.block1.conv3.bn" for k in eager.kernels)
    lines = format_breakdown(analyze(fused, "h100"))
    assert any("stage1.block1.conv3 + add + relu" in line for line in lines)


def test_resnet_intermediates_stay_in_l4_l2_one_image_at_a_time() -> None:
    # Every tensor ResNet-50 hands between kernels is at most 256 x 56 x 56 int8 = 0.8 MB an
    # image, so on L4 (48 MB L2) an engine running sub-batches keeps them all on chip: only
    # the images (150.5 kB each), the weights (25.5 MB a run) and the logits cross GDDR6.
    # Batch 1 is memory-bound on the weights; from batch 8 on the network is compute-bound.
    resnet = models.load("resnet-50")
    weights = resnet.params  # int8: one byte a parameter
    for batch in (32, 1024):
        result = analyze(resnet.forward(batch, dtype="int8"), "l4")
        assert result.regime == "compute"
        assert result.bytes / batch == pytest.approx(
            3 * 224 * 224 + 1000 + weights / batch, rel=0.01)
    assert analyze(resnet.forward(1, dtype="int8"), "l4").regime == "memory"
    # with a 100 kB on-chip memory nothing fits and the batch is memory-bound again
    tiny = get_hardware("l4").replace(onchip=(MemoryLevel("l2", 1e5),))
    assert analyze(resnet.forward(1024, dtype="int8"), tiny).regime == "memory"


# -- mixed precision -----------------------------------------------------------------------------


def test_fp32_matmul_prices_at_the_cuda_core_peak_on_h100() -> None:
    # H100 has no fp32 tensor-core path: the spec's vector_matmul entry prices fp32 GEMMs at
    # the fp32 CUDA-core peak (66.9 TFLOP/s), and the ridge is that peak over 3.35 TB/s.
    # TF32 (494.7 TFLOP/s) only when asked for.
    hw = get_hardware("h100")
    sizes = analyze(ops.matmul(4096, 4096, 4096, dtype="fp32"), hw)
    arrays = analyze(ops.matmul(np.empty((4096, 4096), np.float32),
                                np.empty((4096, 4096), np.float32)), hw)
    assert sizes.dtype == arrays.dtype == "fp32"
    assert sizes.ridge == arrays.ridge == pytest.approx(66.9e12 / 3.35e12)
    assert sizes.kernels[0].peak_label == "vector:fp32"
    assert sizes.time == pytest.approx(arrays.time)
    assert sizes.t_compute == pytest.approx(2 * 4096**3 / 66.9e12)
    tf32 = analyze(ops.matmul(4096, 4096, 4096, dtype="tf32"), hw)
    assert tf32.kernels[0].peak_label == "matrix:tf32"


def test_fp32_matmul_on_tpu_is_one_bf16_mxu_pass() -> None:
    chip = get_hardware("tpu-v5e")
    assert chip.peak_key("fp32") == ("matrix:fp32", chip.matrix["bf16"])


def test_mixed_precision_matmul_peaks() -> None:
    hw = get_hardware("h100")
    fp8 = analyze(ops.matmul(8192, 8192, 8192, dtype="fp8"), hw)
    assert fp8.kernels[0].peak_label == "matrix:fp8"
    # fp8 weights with bf16 activations: no mixed path on H100, so the bf16 peak
    mixed = analyze(ops.matmul(8192, 8192, 8192, dtype="bf16", b_dtype="fp8"), hw)
    assert mixed.kernels[0].peak_label == "matrix:bf16"


def test_vector_work_of_an_int8_resnet_runs_at_the_16_bit_vector_peak() -> None:
    result = analyze(models.load("resnet-50").forward(8, dtype="int8", fusion="none"), "h100")
    relu = next(k for k in result.kernels if k.name.endswith(".relu"))
    assert relu.peak_label == "vector:bf16"


def test_fuse_ops_workloads() -> None:
    up = ops.matmul(4096, 768, 3072)
    gelu = ops.elementwise(4096 * 3072, flops_per_element=8, name="gelu")
    fused = fusion.fuse(up, gelu)
    host, epilogue = fused.kernels
    assert host.bytes + epilogue.bytes == up.bytes + gelu.bytes - 2 * 4096 * 3072 * 2
    assert epilogue.epilogue_of == host.name
    assert fused.name.startswith("fused(matmul(")
    assert len(fusion.fuse(up, gelu, fusion="none").kernels) == 2
    with pytest.raises(WorkloadError, match="takes workloads"):
        fusion.fuse(up, "gelu")  # type: ignore[arg-type]
    with pytest.raises(WorkloadError, match="one elementwise kernel"):
        fusion.fuse(up, gelu + gelu)


def test_a_published_onchip_bandwidth_is_a_roof_of_its_own() -> None:
    # TPU v5e: VMEM 17.8 TB/s, HBM 0.819 TB/s. A handoff kept in VMEM still crosses VMEM, so
    # a kernel moving little off chip but much on chip is bounded by the VMEM bandwidth.
    conv = ops.conv2d(64.0, 256, 256, 28, 1, dtype="bf16").kernels[0]
    relu = elementwise_kernel("relu", 64.0 * 256 * 28 * 28, 1, 1, 1.0, "bf16")
    handed = fusion.handoffs([conv, relu])
    result = analyze(Workload(handed), "tpu-v5e")
    relu_row = result.kernels[1]
    assert relu_row.bytes == pytest.approx(relu.bytes - conv.out_bytes)  # input kept in VMEM
    assert relu_row.t_memory == pytest.approx(
        max(relu_row.bytes / 819e9, (relu_row.bytes + relu_row.onchip_bytes) / 17.8e12))
    bare = get_hardware("tpu-v5e").replace(onchip=())
    assert analyze(Workload(handed), bare).time >= result.time


@given(batch=st.integers(1, 4096))
def test_onchip_reuse_never_adds_time(batch: int) -> None:
    resnet = models.load("resnet-50").forward(batch, dtype="int8")
    chip = get_hardware("l4")
    assert analyze(resnet, chip).time <= analyze(resnet, chip.replace(onchip=())).time


@pytest.mark.parametrize("chip", ["l4", "h100", "tpu-v5e"])
def test_sweeps_with_onchip_reuse_match_single_points(chip: str) -> None:
    batches = np.array([1, 8, 32, 256])
    resnet = models.load("resnet-50")
    llama = models.load("llama-3-8b")
    for build in (lambda b: resnet.forward(b, dtype="int8"), lambda b: llama.prefill(b, 512)):
        sweep = analyze_sweep(build(batches), chip)
        points = [float(analyze(build(int(b)), chip).time) for b in batches]
        assert sweep.time == pytest.approx(points, rel=1e-12)


@pytest.mark.parametrize(("fields", "message"), [
    ({"out_bytes": -1.0}, r"kernel 'k': out_bytes: -1.0 is not allowed"),
    ({"handoff_pieces": float("nan")}, r"kernel 'k': handoff_pieces"),
    ({"handoff_in": [1.0]}, r"handoff_in must be a tuple"),
    ({"handoff_in": (-2.0,)}, r"kernel 'k': handoff_in: -2.0 is not allowed"),
    ({"handoff_out": "3 GB/s"}, r"handoff_out"),
    ({"epilogue_of": 3}, r"epilogue_of must be the name of the kernel"),
])
def test_kernel_fusion_fields_are_checked(fields: dict[str, object], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        Kernel("k", 1.0, 1.0, **fields)  # type: ignore[arg-type]
    assert Kernel("k", 1.0, 10.0, out_bytes="4 B").out_bytes == 4.0  # units parsed once




# -- transformers: fusion and mixed lengths ------------------------------------------------------


def test_bert_gelu_runs_in_the_up_projection_epilogue() -> None:
    # BERT-base, 8 x 128 tokens: eager writes the [1024, 3072] MLP intermediate, reads it for
    # GELU, writes it again and down_proj reads it (4 passes of 6.3 MB per layer); fused, the
    # up projection writes GELU's output once: 2 passes saved. Eager also runs each residual
    # add apart (read 2, write 1, then the norm reads 1, writes 1: 5 passes) where the fused
    # model adds in the norm (read 2, write 2: 4 passes): 1 pass per site, 2 sites a layer.
    bert = models.load("bert-base")
    fused, eager = bert.forward(8, 128), bert.forward(8, 128, fusion="none")
    assert fused.flops == pytest.approx(eager.flops, rel=1e-12)  # fusion moves bytes only
    tokens, inter, hidden, layers = 8 * 128, 3072, 768, 12
    mlp_saved = 2 * tokens * inter * 2 * layers
    residual_extra = tokens * hidden * 2 * 2 * layers
    assert eager.bytes - fused.bytes == pytest.approx(mlp_saved + residual_extra, rel=1e-9)
    act = next(k for k in fused.kernels if k.name == "act")
    assert act.epilogue_of == "up_proj" and act.flops == 8 * tokens * inter  # per layer
    assert act.count == layers
    assert "fusion=none" in eager.name and "fusion" not in fused.name


def test_swiglu_gate_is_fused_and_eager_decode_pays_the_round_trips() -> None:
    # Llama 3 8B, one decode token at 2048: eager writes gate/up's [1, 2·14336] output and the
    # SwiGLU reads it back (2 passes of 57 344 B a layer, 32 layers), and runs the residual add
    # before each of 2·32 + 1 norms apart (1 extra pass of 4096·2 B each, see the BERT test):
    # 32·114 688 + 65·8192 = 4 202 496 B more than the fused step.
    llama = models.load("llama-3-8b")
    fused, eager = llama.decode(1, 2048), llama.decode(1, 2048, fusion="none")
    act = next(k for k in fused.kernels if k.name == "act")
    assert act.epilogue_of == "gate_up_proj"
    assert eager.bytes - fused.bytes == pytest.approx(32 * 114_688 + 65 * 8192, rel=1e-12)
    assert [k.name for k in eager.kernels].count("attn_residual") == 1
    # handed on: the attention norm's output to qkv_proj, the attention output (past the
    # softmax's vector work) to o_proj, the MLP norm's to gate/up, the SwiGLU output to down
    handed = {k.name: k.handoff_out for k in fused.kernels if k.handoff_out}
    assert handed == {"attn_norm": 8192.0, "attention": 8192.0, "mlp_norm": 8192.0,
                      "act": 28_672.0}
    o_proj = next(k for k in fused.kernels if k.name == "o_proj")
    assert o_proj.handoff_in == (8192.0,)


def test_parallel_block_fusion_and_its_shared_norm() -> None:
    # GPT-J 6B (parallel block, one layernorm a layer, plain GELU MLP), prefill 2 x 256:
    # T = 512 tokens, h = 4096, inter = 16 384, L = 28. Eager adds attention and MLP outputs
    # to the residual in two kernels (3 passes each: 6 a layer) and the final norm's add
    # apart (3 passes), where the fused norms add in place (2 passes more than a plain norm,
    # L + 1 of them): (6L + 3) - (2L + 2) = 4L + 1 passes of T·h·2 B; GELU saves 2 passes of
    # T·inter·2 B a layer.
    gptj = models.load("gpt-j-6b")
    fused, eager = gptj.prefill(2, 256), gptj.prefill(2, 256, fusion="none")
    t, h, inter, layers = 512, 4096, 16_384, 28
    expected = (4 * layers + 1) * t * h * 2 + 2 * layers * t * inter * 2
    assert eager.bytes - fused.bytes == pytest.approx(expected, rel=1e-12)
    # FLOPs: the fused norm counts one residual add of the two (1 FLOP per element), eager
    # runs both: L·T·h more, the only FLOP difference
    assert eager.flops - fused.flops == pytest.approx(layers * t * h, rel=1e-9)
    act = next(k for k in fused.kernels if k.name == "act")
    assert act.epilogue_of == "up_proj"
    # the MLP reads the attention norm's output too: it is not handed to qkv_proj alone
    norm = next(k for k in fused.kernels if k.name == "attn_norm")
    assert norm.handoff_out == 0.0
    assert next(k for k in eager.kernels if k.name == "attn_residual").count == 2 * layers


def test_latent_attention_and_experts_fuse_under_expert_parallelism() -> None:
    # DeepSeek-V3 decode, 64 sequences at 1024 over ep=8: each chip's touched experts run the
    # SwiGLU in the gate/up epilogue, as often as the projection (count L·touched); the
    # shared expert and the 3 dense layers likewise. FLOPs do not move with fusion.
    v3 = models.load("deepseek-v3")
    fused, eager = v3.decode(64, 1024, ep=8), v3.decode(64, 1024, ep=8, fusion="none")
    assert fused.flops == pytest.approx(eager.flops, rel=1e-12)
    hosts = {k.name: k.epilogue_of for k in fused.kernels if k.epilogue_of}
    assert hosts == {"act": "gate_up_proj", "experts.act": "experts.gate_up_proj",
                     "shared.act": "shared.gate_up_proj", "attention.softmax": "attention"}
    experts = {k.name: k for k in fused.kernels if k.name.startswith("experts.")}
    assert experts["experts.act"].count == experts["experts.gate_up_proj"].count
    # the MLP norm feeds 3 dense layers and 58 MoE routers: it hands nothing; q_a_proj's
    # [8, 1536] output is handed to q_a_norm and on to q_b_proj (8 local sequences)
    handed = {k.name: k.handoff_out for k in fused.kernels if k.handoff_out}
    assert "mlp_norm" not in handed and handed["q_a_proj"] == handed["q_a_norm"] == 8 * 1536 * 2
    # expert-parallel decode stays below what eager pays, and the bound holds either way
    assert analyze(fused, "h200").time <= analyze(eager, "h200").time


def test_mixed_lengths_are_padding_free_unless_padded() -> None:
    # Linear layers and attention are per token / per sequence, so a batch of prompts of
    # 100, 200 and 300 tokens costs the sum of three single prefills; padded, three of 300.
    llama = models.load("llama-3-8b")
    mixed = llama.prefill(3, [100, 200, 300])
    assert mixed.flops == pytest.approx(sum(llama.prefill(1, s).flops for s in (100, 200, 300)),
                                        rel=1e-12)
    assert llama.prefill(3, [100, 200, 300], padded=True).flops == pytest.approx(
        llama.prefill(3, 300).flops, rel=1e-12)
    assert "seqs=[100, 200, 300]" in mixed.name
    # attention per sequence: each length's kernel scores its own causal pairs and reads its
    # own K and V, so the attention kernels' FLOPs and bytes are the single prefills' own

    def attention(w: Workload) -> tuple[float, float]:
        kernels = [k for k in w.kernels if k.name.startswith("attention")]
        return (sum(k.total_flops for k in kernels), sum(k.total_bytes for k in kernels))

    singles = [attention(llama.prefill(1, s)) for s in (100, 200, 300)]
    assert attention(mixed) == pytest.approx((sum(f for f, _ in singles),
                                              sum(b for _, b in singles)), rel=1e-12)
    assert {k.name for k in mixed.kernels if k.unit == "matrix" and "attention" in k.name} == {
        "attention[kv=100]", "attention[kv=200]", "attention[kv=300]"}
    # decode: each sequence reads its own context from the KV cache:
    # 32 layers x (K, V) x 8 KV heads x 128 x 2 B = 131 072 B per position
    kv_per_position = 32 * 2 * 8 * 128 * 2
    step = llama.decode(3, [100, 200, 300])
    assert step.bytes == pytest.approx(llama.decode(3, 200).bytes, rel=1e-12)  # 600 positions
    assert llama.decode(3, [100, 200, 900]).bytes - step.bytes == pytest.approx(
        600 * kv_per_position, rel=1e-12)
    assert step.footprint == pytest.approx(llama.decode(3, 200).footprint, rel=1e-12)
    # BERT serving without padding: forward over per-sequence lengths, a list or an array
    bert = models.load("bert-base")
    assert bert.forward(2, [64, 128]).flops < bert.forward(2, 128).flops
    assert bert.forward(2, np.array([64, 128])).flops == bert.forward(2, [64, 128]).flops


def test_mixed_lengths_through_latent_attention_and_expert_parallelism() -> None:
    # DeepSeek-V3 caches one latent of 512 + 64 values per position and layer (61 layers,
    # bf16): 600 more cached positions read 600·61·576·2 B more in an absorbed decode step.
    v3 = models.load("deepseek-v3")
    step = v3.decode(3, [100, 200, 300])
    assert v3.decode(3, [100, 200, 900]).bytes - step.bytes == pytest.approx(
        600 * 61 * 576 * 2, rel=1e-12)
    # attention FLOPs and cache reads are linear in each context, linear layers in tokens: 16
    # sequences at 512 and 1536 cost what 16 at 1024 do, per chip under ep=8
    lengths = [512] * 8 + [1536] * 8
    mixed, even = v3.decode(16, lengths, ep=8), v3.decode(16, 1024, ep=8)
    assert mixed.flops == pytest.approx(even.flops, rel=1e-12)
    assert mixed.bytes == pytest.approx(even.bytes, rel=1e-12)
    assert "ep=8" in mixed.name
    # prefill, up-projecting per-head K and V: the sum of single prompts' FLOPs
    assert v3.prefill(2, [300, 700]).flops == pytest.approx(
        v3.prefill(1, 300).flops + v3.prefill(1, 700).flops, rel=1e-12)
    # un-absorbed decode up-projects each sequence's own cache: 600 more positions through
    # kv_b_proj ([512] -> 128 heads x (128 + 128)), 2 FLOPs per multiply-add, 61 layers
    extra = (v3.decode(3, [100, 200, 900], absorb=False).flops
             - v3.decode(3, [100, 200, 300], absorb=False).flops)
    attention = 2 * 600 * 128 * (192 + 128) * 61 + 600 * 128 * 61 * 5  # QK, PV; softmax
    assert extra == pytest.approx(2 * 600 * 512 * 128 * 256 * 61 + attention, rel=1e-3)


def test_mixed_contexts_on_windowed_layers() -> None:
    # Gemma 2 9B: 21 global layers and 21 with a 4096-position window; 8 KV heads x (256 + 256)
    # x 2 B = 8192 B per position and layer. Growing one context from 5000 to 7000 adds 2000
    # positions on the global layers only (the windowed ones keep and read their last 4096
    # either way): 21·2000·8192 B more cache and more read, the other sequence unchanged.
    gemma = models.load("gemma-2-9b")
    short, long = gemma.decode(2, [1000, 5000]), gemma.decode(2, [1000, 7000])
    assert long.footprint - short.footprint == pytest.approx(21 * 2000 * 8192, rel=1e-12)
    assert long.bytes - short.bytes == pytest.approx(21 * 2000 * 8192, rel=1e-12)


def test_gpt_j_mixed_forward_costs_its_sequences() -> None:
    # a parallel block with mixed lengths: each sequence's causal pairs, tokens summed
    gptj = models.load("gpt-j-6b")
    mixed = gptj.forward(2, [128, 512], fusion="none")
    assert mixed.flops == pytest.approx(gptj.forward(1, 128, fusion="none").flops
                                        + gptj.forward(1, 512, fusion="none").flops, rel=1e-12)


@pytest.mark.parametrize(("call", "message"), [
    (lambda m: m.prefill(2, [10, 20, 30]), r"3 per-sequence lengths for batch=2"),
    (lambda m: m.prefill(1, 10, padded=True), r"padded=True needs a list"),
    (lambda m: m.prefill(2, [10, 0]), r"prefill: seq\[1\] must be a whole number >= 1"),
    (lambda m: m.decode(2, [10, -3]), r"decode: context\[1\] must be a whole number >= 1"),
    (lambda m: m.forward(2, [10, 2.5]), r"forward: seq\[1\] must be a whole number"),
    (lambda m: m.decode(0, []), r"decode: context: give at least one sequence length"),
    (lambda m: m.decode(np.array([1, 2]), [10, 20]), r"the batch must be the number"),
    (lambda m: m.decode(1, 10, fusion="eager"), r"fusion must be one of"),
    (lambda m: m.decode(2, [10, 20], padded="yes"), r"padded must be True or False"),
])
def test_mixed_length_and_fusion_errors(call, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(WorkloadError, match=message) as info:
        call(models.load("llama-3-8b"))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("chip", ["h100", "tpu-v5e"])
def test_transformer_sweeps_over_batch_match_single_points(chip: str) -> None:
    batches = np.array([1, 8, 64, 256])
    v3, gptj = models.load("deepseek-v3"), models.load("gpt-j-6b")
    for build in (lambda b: v3.decode(b * 8, 1024, ep=8), lambda b: gptj.decode(b, 2048),
                  lambda b: gptj.prefill(b, 512, fusion="none")):
        sweep = analyze_sweep(build(batches), chip)
        points = [float(analyze(build(int(b)), chip).time) for b in batches]
        assert sweep.time == pytest.approx(points, rel=1e-12)


@given(lengths=st.lists(st.integers(1, 4096), min_size=1, max_size=6))
def test_a_mixed_length_batch_costs_the_sum_of_its_sequences(lengths: list[int]) -> None:
    llama = models.load("llama-3-8b")
    mixed = llama.forward(len(lengths), lengths)
    assert mixed.flops == pytest.approx(sum(llama.forward(1, s).flops for s in lengths),
                                        rel=1e-9)
    padded = llama.forward(len(lengths), lengths, padded=True)
    assert padded.flops >= mixed.flops * (1 - 1e-12)

"""The fusion model (epilogue fusion, on-chip handoffs) and the mixed-precision peaks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_roofline import WorkloadError, analyze, fusion, get_hardware, list_hardware, models, ops
from pytest_roofline.breakdown import format_breakdown
from pytest_roofline.hardware import MemoryLevel
from pytest_roofline.ops.matmul import matmul_kernel
from pytest_roofline.ops.vector import elementwise_kernel
from pytest_roofline.workload import Kernel, Workload


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
    assert resnet.macs == pytest.approx(4.09e9, rel=0.01)
    # per image: 28.5 MB fused (every conv writes its activated output once, reads its input,
    # the residual read once), 81 MB eager (bn, add, relu each read and write)
    assert fused.bytes / 256 == pytest.approx(28.5e6, rel=0.01)
    assert eager.bytes / 256 == pytest.approx(81.0e6, rel=0.01)
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
        sweep = analyze(build(batches), chip)
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



"""The roofline rules: per-kernel bounds, program totals, conventions, sweeps, crossover."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from pytest_roofline import (
    Kernel,
    RooflineError,
    Workload,
    WorkloadError,
    analyze,
    crossover,
    list_hardware,
    ops,
    sweep,
)
from pytest_roofline import get_hardware as hw


def gemm(b: object, d: int = 8192, f: int = 8192, itemsize: int = 2) -> Workload:
    """X[B,D] @ Y[D,F] -> Z[B,F]: 2BDF FLOPs; X, Y read and Z written once."""
    return Workload(flops=2 * b * d * f, bytes=itemsize * (b * d + d * f + b * f), dtype="bf16",
                    name="gemm")


def test_dot_product_intensity_tends_to_half_a_flop_per_byte() -> None:
    # x.y in bf16: N multiplies + N-1 adds = 2N-1 FLOPs; 2N + 2N bytes read, 2 written.
    for n in (1e3, 1e6, 1e9):
        result = analyze(Workload(flops=2 * n - 1, bytes=4 * n + 2, dtype="bf16"), "h100")
        assert result.intensity == pytest.approx(0.5, rel=2e-3)
        assert result.regime == "memory"


def test_matmul_intensity_is_about_the_batch_when_it_is_small() -> None:
    # BDF / (BD + DF + BF) -> B when B << D, F.
    result = analyze(gemm(16, 65536, 65536), "h100")
    assert result.intensity == pytest.approx(16, rel=1e-3)


def test_single_kernel_figures() -> None:
    # 4096^3 bf16 GEMM on H100: 1.374e11 FLOP over 1.006e8 B = 1365.3 FLOP/B > 295.3.
    result = analyze(gemm(4096, 4096, 4096), "h100")
    assert result.flops == 2 * 4096**3
    assert result.bytes == 3 * 2 * 4096**2
    assert result.intensity == pytest.approx(4096 / 3, rel=1e-9)
    assert result.ridge == pytest.approx(989.4e12 / 3.35e12, rel=1e-9)
    assert result.regime == "compute"
    assert result.t_compute == pytest.approx(2 * 4096**3 / 989.4e12, rel=1e-9)
    assert result.t_memory == pytest.approx(6 * 4096**2 / 3.35e12, rel=1e-9)
    assert result.time == result.t_compute
    assert result.attainable == pytest.approx(989.4e12, rel=1e-9)
    assert result.fits is None  # no footprint declared


BF16_CHIPS = [n for n in list_hardware() if "bf16" in hw(n).matrix]


@pytest.mark.parametrize("chip", BF16_CHIPS)
def test_batch_at_which_a_bf16_matmul_turns_compute_bound(chip: str) -> None:
    # Intensity BDF/(BD+DF+BF) = R (the ridge) solves to B* = R*D*F / (D*F - R*(D+F)); the
    # first whole batch at or above it is compute-bound.
    d = f = 8192
    ridge = hw(chip).ridge("bf16")
    expected = math.ceil(ridge * d * f / (d * f - ridge * (d + f)))
    assert crossover(lambda b: gemm(b, d, f), chip) == expected
    assert analyze(gemm(expected - 1, d, f), chip).regime == "memory"


def test_crossover_matches_the_scaling_book_figures() -> None:
    # Scaling book: B > ~240 on TPU v5e and B > ~295 on H100 when D, F >> B.
    assert crossover(lambda b: gemm(b, 1 << 20, 1 << 20), "tpu-v5e") == pytest.approx(241, abs=1)
    assert crossover(lambda b: gemm(b, 1 << 20, 1 << 20), "h100") == pytest.approx(296, abs=1)


def test_crossover_edges() -> None:
    assert crossover(lambda b: gemm(b), "h100", lo=4096, hi=8192) == 4096
    assert crossover(lambda b: gemm(b), "h100", lo=1, hi=8) is None
    with pytest.raises(RooflineError, match="regime must be one of"):
        crossover(lambda b: gemm(b), "h100", regime="cpu")


def test_program_time_is_the_sum_of_kernel_bounds_and_regime_the_largest_share() -> None:
    h100 = hw("h100")
    big = Kernel("gemm", flops=2 * 4096**3, bytes=6 * 4096**2, dtype="bf16")      # compute
    norm = Kernel("norm", flops=5e6, bytes=4e8, unit="vector", dtype="bf16")      # memory
    result = analyze(Workload([big, norm]), h100)
    t_gemm = 2 * 4096**3 / 989.4e12
    t_norm = 4e8 / 3.35e12
    assert result.time == pytest.approx(t_gemm + t_norm, rel=1e-9)
    assert result.shares["compute"] == pytest.approx(t_gemm)
    assert result.shares["memory"] == pytest.approx(t_norm)
    assert result.regime == ("compute" if t_gemm > t_norm else "memory")
    assert result.intensity == pytest.approx((2 * 4096**3 + 5e6) / (6 * 4096**2 + 4e8))
    # Bounded kernel by kernel, the program is slower than one kernel with the same totals.
    lumped = analyze(Workload(flops=result.flops, bytes=result.bytes, dtype="bf16"), h100)
    assert result.time > lumped.time
    shares = {k.name: k.share for k in result.kernels}
    assert sum(shares.values()) == pytest.approx(1.0)


def test_vector_work_is_priced_at_the_vector_peak() -> None:
    # 1e12 FLOP of bf16 elementwise work on H100 CUDA cores: 1e12 / 133.8e12 s, not / 989.4e12.
    kernel = Kernel("softmax", flops=1e12, bytes=1.0, unit="vector", dtype="bf16")
    result = analyze(Workload([kernel]), "h100")
    assert result.t_compute == pytest.approx(1e12 / 133.8e12, rel=1e-3)
    assert result.kernels[0].peak_label == "vector:bf16"


def test_network_roof() -> None:
    # 9 GB over NVLink 4 (450 GB/s per direction in all) takes 20 ms.
    kernel = Kernel("all-reduce", flops=0.0, bytes=1.0, link_bytes=9e9, link="nvlink")
    result = analyze(Workload([kernel]), "h100")
    assert result.t_network == pytest.approx(9e9 / 450e9, rel=1e-3)
    assert result.regime == "network"


def test_flop_convention_halves_intensity_and_ridge_but_not_time_or_regime() -> None:
    two = analyze(gemm(64), "h100")
    one = analyze(gemm(64), "h100", flops_per_mac=1)
    assert one.flops == two.flops / 2
    assert one.intensity == pytest.approx(two.intensity / 2)
    assert one.ridge == pytest.approx(two.ridge / 2)
    assert one.time == pytest.approx(two.time)
    assert one.regime == two.regime


def test_derate_applies_to_every_roof_alike() -> None:
    for batch in (64, 300, 4096):
        full = analyze(gemm(batch), "h100")
        derated = analyze(gemm(batch), "h100", derate=0.5)
        assert derated.time == pytest.approx(2 * full.time)
        assert derated.regime == full.regime
        assert derated.ridge == full.ridge
    with pytest.raises(RooflineError, match=r"derate must be a fraction of peak in \(0, 1\]"):
        analyze(gemm(1), "h100", derate=1.5)


def test_dtype_argument_applies_to_kernels_that_name_none() -> None:
    raw = Workload(flops=1e12, bytes=1e9)
    assert analyze(raw, "h100", dtype="fp8").t_compute == pytest.approx(1e12 / 1978.9e12, rel=1e-3)
    assert analyze(raw, "h100").dtype == "bf16"  # the chip's default
    with pytest.raises(LookupError, match="no dense fp8 peak"):
        analyze(raw, "a100", dtype="fp8")


def test_the_ridge_is_that_of_the_precision_the_matrix_work_is_priced_in() -> None:
    """A bf16 matmul analyzed with dtype="fp8" keeps its bf16 price, and so does its ridge:
    h100-sxm's dense bf16 peak over its bandwidth, 989.4 TFLOP/s / 3.35 TB/s = 295.3 FLOP/B
    (datasheet figures in specs/hardware/h100-sxm.yaml), not the fp8 ridge of 590.7, which
    would call an intensity of 364.4 (2*400*8192*8192 / (2*(400*8192*2 + 8192*8192)) bytes)
    memory-side while its time is compute-bound."""
    work = ops.matmul(400, 8192, 8192)
    result = analyze(work, "h100", dtype="fp8")
    assert result.ridge == pytest.approx(989.4e12 / 3.35e12, rel=1e-3)
    assert result.dtype == "bf16" and result.regime == "compute"
    assert (result.intensity > result.ridge) == (result.regime == "compute")
    assert analyze(ops.matmul(400, 8192, 8192, dtype="fp8"), "h100").ridge == pytest.approx(
        1978.9e12 / 3.35e12, rel=1e-3)


def test_sparse_peaks_only_when_asked() -> None:
    raw = Workload(flops=1e12, bytes=1.0, dtype="bf16")
    assert analyze(raw, "h100", sparse=True).time == pytest.approx(
        analyze(raw, "h100").time / 2, rel=1e-3)


def test_capacity_check() -> None:
    small = Workload(flops=1.0, bytes=1.0, footprint="70 GB")
    large = Workload(flops=1.0, bytes=1.0, footprint="141 GB")
    assert analyze(small, "h100").fits is True
    assert analyze(large, "h100").fits is False
    assert analyze(large, "h200").fits is True  # 141 GB of HBM3e


def test_vectorized_sweep_returns_arrays() -> None:
    batch = np.arange(1, 4097, dtype=float)
    result = sweep(gemm(batch), "h100")
    assert result.regime.shape == (4096,) and len(result) == 4096
    first_compute = int(batch[np.argmax(result.regime == "compute")])
    assert first_compute == crossover(lambda b: gemm(b), "h100")
    assert np.all(result.regime[: first_compute - 1] == "memory")
    scalar = analyze(gemm(100), "h100")
    assert result.time[99] == pytest.approx(scalar.time)


def test_workload_composition() -> None:
    a = Workload(flops=10.0, bytes=5.0, footprint=100.0, name="a")
    b = Workload(flops=2.0, bytes=1.0, footprint=50.0, name="b")
    both = a + b
    assert (both.flops, both.bytes, both.footprint) == (12.0, 6.0, 150.0)
    thrice = 3 * a
    assert (thrice.flops, thrice.bytes, thrice.footprint) == (30.0, 15.0, 100.0)
    assert Workload(flops="4.3 GFLOP", bytes="1 MB").flops == 4.3e9


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"flops": -1.0, "bytes": 1.0}, "flops: -1.0 is not allowed"),
     ({"flops": float("nan"), "bytes": 1.0}, "flops: nan"),
     ({"flops": "4 GB", "bytes": 1.0}, "not a FLOP count"),
     ({"flops": 1.0, "bytes": "3 TFLOP"}, "not a data size"),
     ({"flops": 1.0, "bytes": 1.0, "unit": "tensor"}, "unit must be 'matrix' or 'vector'"),
     ({"flops": 1.0, "bytes": 1.0, "dtype": "bf61"}, "unknown precision 'bf61'"),
     ({}, "is empty")],
)
def test_bad_workloads_are_refused_with_the_reason(kwargs: dict[str, object],
                                                   fragment: str) -> None:
    with pytest.raises(WorkloadError) as info:
        Workload(**kwargs)  # type: ignore[arg-type]
    assert fragment in str(info.value)


def test_results_are_deterministic_and_immutable() -> None:
    w = gemm(300)
    first, second = analyze(w, "h100"), analyze(w, "h100")
    assert first.to_dict() == second.to_dict()
    with pytest.raises(AttributeError):
        w.name = "x"  # type: ignore[misc]


def test_results_hold_floats_and_sweeps_hold_arrays() -> None:
    """A Result's figures are plain floats and its regime a string, so ``r.regime ==
    "compute"`` is a bool; a workload of arrays is a sweep's, which analyze() refuses by
    name, and a Sweep's figures are arrays of the sweep's shape, each point the Result of
    that point (the same rules, one vectorized pass)."""
    from pytest_roofline import Result, Sweep

    r = analyze(gemm(300), "h100")
    assert isinstance(r, Result) and type(r.time) is float and type(r.regime) is str
    assert type(r.kernels[0].time) is float and (r.regime == "compute") in (True, False)
    with pytest.raises(AttributeError):
        r.time = 1.0  # type: ignore[misc]
    batches = np.array([1, 300, 4096])
    with pytest.raises(WorkloadError, match=r"holds arrays \(a sweep\).*sweep\(\) takes"):
        analyze(gemm(batches), "h100")
    s = sweep(gemm(batches), "h100")
    assert isinstance(s, Sweep) and s.time.shape == s.regime.shape == (3,)
    assert s.fits is None  # the workload declares no footprint
    for i, b in enumerate(batches):
        point = analyze(gemm(int(b)), "h100")
        assert s.time[i] == point.time and s.regime[i] == point.regime
        assert s.intensity[i] == point.intensity and s.attainable[i] == point.attainable
    assert sweep(gemm(300), "h100").time.shape == ()  # plain numbers: a sweep of one point
    with pytest.raises(WorkloadError, match="must be an array of shape"):
        Sweep(**{**vars(s), "time": 1.0})


def test_an_explicit_bf16_is_the_default_precision_by_value() -> None:
    """dtype=None is every op's default; an explicit "bf16" gives the same sized workload."""
    from pytest_roofline import ops

    assert ops.matmul(64, 64, 64).kernels == ops.matmul(64, 64, 64, dtype="bf16").kernels


def test_an_expected_kernel_count_reads_as_one() -> None:
    """Mixtral 8x7B decoding 8 tokens, top-2 of 8 experts: each layer runs on average
    8 x (1 - (1 - 2/8)^8) = 7.199 distinct experts, 32 layers 230.37 expert kernels. The
    breakdown writes it ~230.4 and says what that is, not '230.371'."""
    from pytest_roofline import models
    from pytest_roofline.engine.breakdown import format_breakdown

    result = analyze(models.load("mixtral-8x7b").decode(8, 4096), "h100")
    lines = format_breakdown(result, sort=False)
    experts = next(line for line in lines if line.startswith("experts.down_proj"))
    assert experts.split()[1] == f"~{32 * 8 * (1 - 0.75 ** 8):.1f}" == "~230.4"
    assert lines[-1].startswith("~N: an expected count")
    whole = format_breakdown(analyze(models.load("llama-3-8b").decode(8, 4096), "h100"))
    assert not any(line.startswith("~N") for line in whole)


def test_kernel_fields_past_bytes_are_keywords_and_evolve_checks() -> None:
    from pytest_roofline import Kernel, WorkloadError

    with pytest.raises(TypeError):
        Kernel("k", 1.0, 1.0, 0.0, "vector")  # type: ignore[misc]
    kernel = Kernel("k", 1.0, 2.0, unit="vector")
    assert kernel.evolve(bytes=1.0).bytes == 1.0 and kernel.evolve(bytes=3).bytes == 3.0
    for bad in ({"bytes": -1.0}, {"bytes": "lots"}, {"epilogue_of": 3}, {"unit": "tensor"},
                {"handoff_in": (-1.0,)}):
        with pytest.raises(WorkloadError):
            kernel.evolve(**bad)


def test_the_workload_and_the_dram_intensity_are_told_apart() -> None:
    """ResNet-50 at batch 32 (bf16): 262 GFLOP over 1.87 GB of tensor traffic is 140.3 FLOP/B
    on any chip; an H100's 50 MB L2 keeps the activations, so its DRAM carries 60.7 MB:
    4320.1 FLOP/B. The JSON record carries both, labelled (intensity keeps its meaning).

    FLOPs, 32 images: the convolutions and the fc, 2 x 4,089,184,256 MACs (torchvision's
    4.09 GMACs) = 261,707,792,384; the ReLUs, one an element of the activated outputs,
    9,608,704 an image (the stem's 802,816, each block's conv1 and conv2 outputs and its
    output after the residual add): 307,478,528; the 16 residual adds, 5,519,360 an image:
    176,619,520; the 3 x 3 max pool, 8 comparisons an output, 64 x 56 x 56 outputs:
    51,380,224; the average pool, an add an input, 2048 x 49: 3,211,264. Sum:
    262,246,481,920. Bytes: the fused kernels' tensors, derived element by element in
    tests/test_fusion.py's ResNet test (28,504,332.75 B an image in int8, of which
    99,620.75 the weights' share): 28,404,712 elements an image x 2 B x 32 = 1,817,901,568,
    plus the weights read once, 25,502,912 x 2 B = 51,005,824 (below): 1,868,907,392, so
    262,246,481,920 / 1,868,907,392 = 140.3207 FLOP/B.
    DRAM on H100: what crosses it is the weights, the images and the logits: the convolution
    weights, 25,557,032 parameters less the batch norms' 53,120 (folded) and the fc's
    2,049,000 = 23,454,912, and the fc's 2,048,000 weights (its 1,000 biases not counted),
    25,502,912 x 2 B = 51,005,824; the images, 32 x 3 x 224 x 224 x 2 B = 9,633,792; the
    logits, 32 x 1000 x 2 B = 64,000: 60,703,616 B, and 262,246,481,920 / 60,703,616 =
    4320.113 FLOP/B."""
    from pytest_roofline import models, ops

    workload = models.load("resnet-50").forward(32)
    result = analyze(workload, "h100")
    assert workload.flops == 262_246_481_920 and workload.bytes == 1_868_907_392
    assert float(result.bytes) == 60_703_616
    assert result.workload_intensity == pytest.approx(workload.intensity) == pytest.approx(
        140.3207, rel=1e-6)
    assert float(result.intensity) == pytest.approx(4320.113, rel=1e-6)
    kept = sum(k.onchip_bytes for k in result.kernels)
    assert result.tensor_bytes == pytest.approx(float(result.bytes) + kept)
    assert result.tensor_bytes == pytest.approx(workload.bytes)
    record = result.to_dict()
    assert record["dram_intensity"] == record["intensity"] == result.intensity
    assert record["workload_intensity"] == result.workload_intensity
    plain = analyze(ops.matmul(64, 64, 64), "h100")  # nothing kept on chip: one intensity
    assert plain.workload_intensity == plain.intensity


@pytest.mark.parametrize(("name", "bad"), [("derate", "170%"), ("derate", 0),
                                            ("flops_per_mac", "3"), ("margin", "1")])
def test_every_layer_checks_a_setting_by_the_one_rule(name: str, bad: object) -> None:
    """derate, flops_per_mac and margin are checked by pytest_roofline.engine.settings alone: the
    engine, the plugin's options, the command line and the marker refuse the same values
    and say the same allowed range, each naming the setting its own way."""
    import argparse

    from pytest_roofline.cli import common
    from pytest_roofline.engine import settings
    from pytest_roofline.judging.marker import MarkerError, _margin
    from pytest_roofline.plugin import settings as options

    allowed = settings.ALLOWED[name]
    with pytest.raises(settings.BadSetting, match=re.escape(allowed)):
        settings.check(name, bad, text=True)
    parse = getattr(options, f"parse_{name}")
    with pytest.raises(options.SettingsError, match=re.escape(f"expected {allowed}")):
        parse(bad, "--roofline-x")
    if name in ("derate", "flops_per_mac"):
        reader = common.fraction if name == "derate" else common.flops_per_mac
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(allowed)):
            reader(str(bad))
        number = 0 if name == "derate" else 3
        with pytest.raises(RooflineError, match=re.escape(f"{name} must be {allowed}")):
            analyze(gemm(8), "h100", **{name: number})
    else:
        with pytest.raises(MarkerError, match=re.escape(allowed)):
            _margin(bad)
    assert settings.check("derate", "70%", text=True) == pytest.approx(0.7)
    assert settings.check("flops_per_mac", "1", text=True) == 1


def test_the_record_keys_have_one_owner() -> None:
    """A Result's record keys, the report reader's required fields and a Sweep's keys all
    come from pytest_roofline.fields."""
    from pytest_roofline import fields
    from pytest_roofline.report import records

    r = analyze(gemm(64), "h100")
    assert list(r.to_dict()) == [key for _, key in fields.RESULT]
    assert records.REQUIRED is fields.REQUIRED and records.NUMBERS is fields.NUMBERS
    assert set(fields.REQUIRED) <= {key for _, key in fields.RESULT} | {"nodeid", "outcome"}
    assert set(sweep(gemm(np.array([1, 2])), "h100").to_dict()) <= set(r.to_dict())

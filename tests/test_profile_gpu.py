"""The per-kernel profile on real GPU traces of this project's own acceptance run (an H200,
tests/data/traces/README.md), and the parts of ``profile()`` that only a GPU reaches, checked
here on the CPU with the device calls replaced."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware
from pytest_roofline.profiling import ProfileError
from pytest_roofline.profiling import run as profile_run
from pytest_roofline.profiling.torch.join import element_dtype

DATA = Path(__file__).parent / "data" / "traces"
H200 = sorted(DATA.glob("h200_*.json.gz"))


def test_the_h200_traces_are_there() -> None:
    assert [p.name for p in H200] == ["h200_llama3_8b_layer_decode.json.gz",
                                      "h200_llama3_8b_layer_prefill.json.gz",
                                      "h200_matmul_gelu_sdpa.json.gz"]


@pytest.mark.parametrize("path", H200, ids=lambda p: p.name)
def test_every_kernel_of_an_h200_trace_is_priced_and_none_beats_its_bound(path: Path) -> None:
    profile = rl.read_trace(path)
    assert profile.hw == "h200"  # from the trace's deviceProperties: "NVIDIA H200"
    assert profile.on_device
    assert not profile.unpriced, profile.unpriced
    assert profile.priced_share == pytest.approx(1.0, abs=1e-9)
    assert not profile.faster  # a lower bound: no kernel may run faster than it
    assert all(r.efficiency is not None and 0 < r.efficiency <= 1 for r in profile.rows)


def test_prefill_gemms_run_at_what_cublas_reaches_on_an_h200() -> None:
    # The measurement itself (2026-11-27 run, docs/measure.md): the layer's large bf16 GEMMs
    # (4096 tokens) ran at 78-81% of the published 989 TFLOP/s dense peak. A bound several
    # times looser or a formula off by 2x would put them far outside 60-95%.
    profile = rl.read_trace(DATA / "h200_llama3_8b_layer_prefill.json.gz")
    gemms = [r for r in profile.rows if r.op == "aten::mm"]
    assert len(gemms) == 4
    for row in gemms:
        assert 0.6 <= (row.efficiency or 0) <= 0.95, (row.shapes, row.efficiency)
        assert row.precision == "matrix:bf16"


def test_cudnn_attention_is_priced_by_its_parent_with_the_tracers_formula() -> None:
    # aten::_cudnn_attention_forward has no meta kernel, so it cannot be rebuilt; its parent
    # aten::_scaled_dot_product_cudnn_attention launched nothing else and can: it owns the
    # cuDNN kernel, priced exactly as a traced SDPA call of the same inputs.
    import torch
    import torch.nn.functional as F

    profile = rl.read_trace(DATA / "h200_llama3_8b_layer_decode.json.gz")
    rows = [r for r in profile.rows if "attention" in r.op]
    assert [r.op for r in rows] == ["aten::_scaled_dot_product_cudnn_attention"]
    row = rows[0]
    assert any(k.startswith("cudnn_generated") for k in row.kernels)
    q = torch.empty(16, 32, 1, 128, dtype=torch.bfloat16, device="meta")
    kv = torch.empty(16, 8, 4096, 128, dtype=torch.bfloat16, device="meta")
    traced = rl.trace(lambda: F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True))
    assert row.count == 3
    assert row.flops / row.count == pytest.approx(float(traced.flops), rel=1e-12)
    # 4·b·h·s_q·s_k·d matrix FLOPs (QK^T and PV): 4·16·32·1·4096·128, plus the softmax
    assert float(traced.flops) >= 4 * 16 * 32 * 1 * 4096 * 128


def test_a_tensor_list_of_unrecorded_dtype_takes_its_kernels_element_size() -> None:
    # The KV cache's torch.cat((past, new), dim=2): the profiler records the list's dims but
    # not its dtype; cat's CUDA kernel is instantiated on OpaqueType<2u> (2-byte elements),
    # so its bytes are 2 B x (both inputs read + the output written).
    profile = rl.read_trace(DATA / "h200_llama3_8b_layer_decode.json.gz")
    row = next(r for r in profile.rows
               if r.op == "aten::cat" and r.shapes == "[16x8x4095x128,16x8x1x128]")
    elements = 16 * 8 * 4095 * 128 + 16 * 8 * 1 * 128 + 16 * 8 * 4096 * 128
    assert row.bytes / row.count == pytest.approx(2.0 * elements, rel=1e-12)
    assert row.flops == 0


@pytest.mark.parametrize(("names", "expected"), [
    (["void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::"
      "(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 128, 1, 16, 8>(...)"],
     "c10::BFloat16"),
    (["CatArrayBatchedCopy<OpaqueType<4u>, unsigned int, 4, 64, 64>"], "float"),
    (["index_elementwise_kernel<OpaqueType<8>>"], "double"),
    (["CatArrayBatchedCopy<OpaqueType<1u>, unsigned int, 1>"], "c10::Float8_e4m3fn"),
    (["a<OpaqueType<2u>>", "b<OpaqueType<4u>>"], None),  # they disagree: unknown
    (["ampere_bf16_s16816gemm_bf16_128x128_ldg8"], None),
    ([], None),
])
def test_element_size_from_kernel_names(names: list[str], expected: str | None) -> None:
    assert element_dtype(names) == expected


# -- profile() on a GPU, with the device calls replaced ---------------------------------------

class _FakeProfile:
    """torch.profiler.profile's part profile() uses: records the activities it was given and
    exports a recorded trace (a CPU one, or a GPU one) as if it had recorded it."""

    seen: ClassVar[list[Any]] = []
    trace = DATA / "cpu_mlp.json.gz"

    def __init__(self, *, activities: list[Any], record_shapes: bool) -> None:
        _FakeProfile.seen.append(list(activities))
        assert record_shapes

    def __enter__(self) -> _FakeProfile:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def export_chrome_trace(self, path: str) -> None:
        with gzip.open(self.trace) as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)


class _CudaArg:
    """An argument that says it lives on cuda:0 (device index 0)."""

    device = type("Device", (), {"type": "cuda", "index": 0})()


OWN_CHIP = Hardware(name="my-gpu", memory_bandwidth=3e12, memory_capacity=80e9,
                    matrix={"bf16": 9e14, "fp32": 6e13}, vector={"fp32": 6e13})


def _fake_profiler(monkeypatch: pytest.MonkeyPatch, trace: Path) -> None:
    import torch.profiler

    _FakeProfile.seen = []
    _FakeProfile.trace = trace
    monkeypatch.setattr(torch.profiler, "profile", _FakeProfile)
    monkeypatch.setattr("pytest_roofline.measuring.timing.synchronize", lambda *a: None)


def test_a_call_on_cuda_device_0_records_cuda_activity(monkeypatch: pytest.MonkeyPatch) -> None:
    # cuda:0's index is 0, which is falsy: the CUDA activity must still be asked for (the
    # GPU run found profiles of cuda:0 calls holding host ops only)
    from torch.profiler import ProfilerActivity

    _fake_profiler(monkeypatch, DATA / "h200_matmul_gelu_sdpa.json.gz")
    profile = rl.Profiler(hw=OWN_CHIP, warmup=0, repeats=3)(lambda x: None, _CudaArg())
    assert _FakeProfile.seen == [[ProfilerActivity.CPU, ProfilerActivity.CUDA]]
    assert profile.on_device and profile.hw == "my-gpu"


def test_a_cuda_call_whose_trace_holds_no_kernel_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_profiler(monkeypatch, DATA / "cpu_mlp.json.gz")
    with pytest.raises(ProfileError, match=r"no CUDA kernel of a call on cuda:0.*measure"):
        rl.Profiler(hw=OWN_CHIP, warmup=0, repeats=1)(lambda x: None, _CudaArg())


@pytest.mark.parametrize("name", ["kept.json", "kept.json.gz"])
def test_trace_to_keeps_the_recorded_trace(tmp_path: Path, name: str) -> None:
    import torch

    target = tmp_path / "sub" / name
    x = torch.randn(64, 64)
    profile = rl.Profiler(hw=OWN_CHIP, warmup=0, repeats=2, trace_to=target)(torch.mm, x, x)
    opener = gzip.open if name.endswith(".gz") else open
    with opener(target, "rt") as handle:  # type: ignore[operator]
        assert "traceEvents" in json.load(handle)
    again = rl.read_trace(target, hw=OWN_CHIP)
    assert [r.op for r in again.rows] == [r.op for r in profile.rows]


def test_trace_to_must_name_a_trace_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"trace_to='.*trace.txt' must end in \.json"):
        rl.Profiler(trace_to=tmp_path / "trace.txt")


def test_trace_to_an_unwritable_place_says_why(tmp_path: Path) -> None:
    import torch

    (tmp_path / "file").write_text("")
    x = torch.randn(8, 8)
    with pytest.raises(ProfileError, match=r"cannot be kept at .*is a file, not a folder"):
        rl.Profiler(hw=OWN_CHIP, warmup=0, repeats=1,
                    trace_to=tmp_path / "file" / "t.json")(torch.mm, x, x)


def test_on_cuda_reads_the_device_index(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    assert profile_run._on_cuda(torch, (_CudaArg(),), {}) == 0
    assert profile_run._on_cuda(torch, (torch.empty(2),), {}) is None
    assert profile_run._on_cuda(torch, ([torch.empty(2), _CudaArg()],), {}) == 0


@pytest.mark.parametrize("device", ["cuda:0", "cpu"])
def test_a_kernel_beyond_a_calibrated_limit_names_the_theoretical_peak(device: str) -> None:
    # A calibration's roof is what a few kernels reached; its alarm reads against the
    # theoretical peak it keeps (provenance.limits), and a spec's against its datasheet.
    from pytest_roofline.profiling.rows import likely

    chip = OWN_CHIP.replace(name="calibrated", provenance={"device": device})
    said = likely("compute", 1e9, chip, "matrix:bf16")
    assert said.startswith("it beat calibrated's theoretical peak (matrix:bf16)")
    spec = likely("compute", 1e9, OWN_CHIP, "matrix:bf16")
    assert "datasheet peak" in spec and "FLOPs are overcounted" in spec

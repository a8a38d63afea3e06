"""A host copy whose event records no bytes (ROCm's) takes them from its op's recorded
inputs (``copies.op_bytes``): the rule checked against every ``aten::copy_`` of CUDA traces
whose copies do record their bytes, and on HolisticTraceAnalysis's MI250 trace (two 5x128
fp32 batches copied in: 2,560 bytes each, as its launches' ``size`` says)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_roofline.profiling import read_trace
from pytest_roofline.profiling.torch import copies, trace_file

TRACES = Path(__file__).parent / "data" / "traces"


def _ops(op: Any) -> Any:
    yield op
    for child in op.children:
        yield from _ops(child)


def test_the_rule_gives_the_bytes_cuda_traces_record() -> None:
    checked = 0
    for name in ("a100_hta_negative_queue_rank0.json.gz", "v100_hta_trace_diff_test.json.gz",
                 "h200_llama3_8b_layer_decode.json.gz"):
        trace = trace_file.read(TRACES / name)
        for root in trace.roots:
            for op in _ops(root):
                stated = copies.op_bytes(op.name, op.dims, op.types)
                if stated is None:
                    continue
                for device in op.launched:
                    if copies.is_host_copy(device) and "bytes" in device.args:
                        assert device.args["bytes"] == stated, (name, op.dims, op.types)
                        checked += 1
    assert checked >= 3


def test_a_rocm_trace_s_host_copies_are_priced_on_the_link() -> None:
    profile = read_trace(TRACES / "hta_mi250_minitoy_train.json.gz")
    copied = [r for r in profile.rows if r.regime == "network"]
    assert copied and all(r.bytes / r.count == 5 * 128 * 4 for r in copied)
    assert not [u for u in profile.unpriced if "host copy" in u.reason]
    assert profile.priced_share >= 0.81  # 65.2% before; TraceLens prices 81.4%


def test_what_the_rule_does_not_know_stays_unknown() -> None:
    assert copies.op_bytes("aten::copy_", [[5, 128], [5, 128], []], ("float", "float", "")
                           ) == 2560
    # a conversion (the dtypes differ), a broadcast (the shapes differ), another op: None
    assert copies.op_bytes("aten::copy_", [[5, 128], [5, 128]], ("float", "c10::Half")) is None
    assert copies.op_bytes("aten::copy_", [[5, 128], [128]], ("float", "float")) is None
    assert copies.op_bytes("aten::_to_copy", [[5, 128]], ("float",)) is None

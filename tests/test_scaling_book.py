"""The worked figures of "How to Scale Your Model" (Austin et al.), part 1: Rooflines,
https://jax-ml.github.io/scaling-book/roofline/ (chapter text and its worked problems).

The book's chip figures for TPU v5e: 1.97e14 bf16 FLOP/s, 3.94e14 int8 OP/s, HBM 8.1e11 B/s in
the worked problems (8.2e11 in the chapter text) and ICI 4.5e10 B/s one way per link; for the
H100: 9.89e14 dense bf16 FLOP/s and 3.35e12 B/s. ``BOOK_V5E`` carries exactly those numbers so
the book's answers are reproduced to the integer; the built-in ``tpu-v5e`` spec (Google's
819 GB/s) and ``h100`` spec give the same answers within the rounding the book states.

Every threshold below is derived in the test from the exact intensity, then compared with the
book's B << D limit.
"""

from __future__ import annotations

import math

import pytest

from pytest_roofline import (
    Hardware,
    Link,
    Workload,
    analyze,
    crossover,
    get_hardware,
    knob_hint,
    ops,
)

BOOK_V5E = Hardware(
    name="scaling-book-v5e",
    memory_bandwidth=8.1e11,
    memory_capacity=16e9,
    matrix={"bf16": 1.97e14, "int8": 3.94e14},
    vector={"fp32": 1.97e14 / 32},
    links={"ici": Link("ici", 4.5e10, 4)},
)

D = F = 1 << 20  # "D and F large": the book's answers are the B << D, F limit


def smallest_b_above(threshold: float) -> int:
    """The first whole batch strictly above the book's real-valued threshold."""
    return math.floor(threshold) + 1


def test_dot_product_intensity_is_one_half():
    # ch. 1: bf16 x·y of length N: (2N - 1) FLOPs / (4N + 2) bytes -> 1/2, memory-bound
    w = ops.dot(1 << 24)
    assert w.intensity == pytest.approx(0.5, rel=1e-6)
    assert analyze(w, BOOK_V5E).regime == "memory"


def test_bf16_matmul_critical_batch_on_v5e_and_h100():
    # ch. 1: intensity ~ B, so B > 1.97e14 / 8.2e11 = 240 on v5e and 9.89e14 / 3.35e12 = 295
    # on H100. Exact: B·D·F / (B·D + D·F + B·F) >= r  <=>  B >= r / (1 - 2r/D) for D = F.
    for hw, book in ((get_hardware("tpu-v5e"), 240), (get_hardware("h100"), 295)):
        r = hw.peak("bf16") / hw.bandwidth
        exact = r / (1 - 2 * r / D)
        assert crossover(lambda b, hw=hw: ops.matmul(b, D, F), hw) == math.ceil(exact)
        assert exact == pytest.approx(book, rel=0.01)


def test_problem_1_int8_matmul_needs_b_above_243():
    # int8[B,D] @ int8[D,F] -> int8[B,F]: bytes BD + DF + BF, 2BDF OPs, intensity
    # 2BDF / (BD + DF + BF) ~ 2B; compute-bound when 2B > 3.94e14 / 8.1e11 = 486.4, i.e. B > 243.
    r = BOOK_V5E.peak("int8") / BOOK_V5E.bandwidth
    exact = (r / 2) / (1 - r / D)  # 2BD/(2B + D) >= r for D = F
    batch = crossover(lambda b: ops.matmul(b, D, F, dtype="int8"), BOOK_V5E)
    assert batch == math.ceil(exact) == smallest_b_above(243.2)
    w = ops.matmul(256, D, F, dtype="int8")
    assert w.bytes == 256 * D + D * F + 256 * F
    assert w.flops == 2 * 256 * D * F
    # the built-in chip (394 TOP/s, 819 GB/s): B > 240.5
    v5e = get_hardware("tpu-v5e")
    at = crossover(lambda b: ops.matmul(b, D, F, dtype="int8"), v5e)
    assert at == pytest.approx(243, rel=0.015)


def test_problem_2_int8_weights_with_bf16_activations_need_half_the_batch():
    # bf16[B,D] @ int8[D,F] -> bf16[B,F]: bytes 2BD + DF + 2BF, 2BDF FLOPs in bf16;
    # intensity ~ 2B, so B > (1.97e14 / 8.1e11) / 2 = 121.6: about 120, half of bf16's 243.
    r = BOOK_V5E.peak("bf16") / BOOK_V5E.bandwidth
    exact = (r / 2) / (1 - 2 * r / D)  # 2BD / (4B + D) >= r for D = F
    build = lambda b: ops.matmul(b, D, F, b_dtype="int8")  # noqa: E731
    batch = crossover(build, BOOK_V5E)
    assert batch == math.ceil(exact) == smallest_b_above(121.6)
    bf16 = crossover(lambda b: ops.matmul(b, D, F), BOOK_V5E)
    assert bf16 is not None and batch / bf16 == pytest.approx(0.5, rel=0.01)
    assert crossover(build, get_hardware("tpu-v5e")) == pytest.approx(120, rel=0.02)
    assert knob_hint(build(32), BOOK_V5E, "compute") == f"compute-bound from m >= {batch}"


def test_problem_4_per_batch_weights_keep_intensity_at_two():
    # int8[B,D] @ int8[B,D,F] -> int8[B,F]: 2BDF / (BD + BDF + BF) ~ 2, whatever B
    d = f = 8192
    for batch in (1, 256, 65536):
        w = ops.batched_matmul(batch, 1, d, f, dtype="int8")
        assert w.intensity == pytest.approx(2.0, rel=1e-3)
        assert analyze(w, BOOK_V5E).regime == "memory"


def test_problem_5_h100_critical_intensity():
    # 9.89e14 dense bf16 FLOP/s / 3.35e12 B/s ~ 295 FLOP/B
    assert get_hardware("h100").ridge("bf16") == pytest.approx(295, rel=0.005)


@pytest.mark.parametrize("chip", [BOOK_V5E, "tpu-v5e"])
def test_two_chip_network_roofline(chip):
    # X[B,D] @ Y[D,F] split over D on 2 TPUs joined by one ICI link (W = 4.5e10 B/s one way):
    #   T_math  = 2·B·(D/2)·F / peak = B·D·F / peak
    #   T_comms = 2·B·F / W   (the bf16 partial sums [B,F]; a 2-device ring all-reduce sends
    #             2·(N-1)/N x 2BF bytes = 2BF)
    # compute-bound when B·D·F / peak > 2·B·F / W  <=>  D > 2·peak / W = 8755.6:
    # B cancels; the per-chip contraction D/2 must exceed peak / W = 4377.8. The built-in chip's
    # ICI link also waits the book's ~1 us per hop once (one step, `auto`): T_comms gains L, so
    # D/2 must exceed peak / W + L·peak / (2·B·F), one more at these sizes.
    hw = chip if isinstance(chip, Hardware) else get_hardware(chip)
    ici = hw.link("ici")
    peak, w_ici, latency = hw.peak("bf16"), ici.bandwidth, ici.latency
    critical_d = 2 * peak / w_ici
    assert critical_d == pytest.approx(8755.6, rel=1e-4)
    batch, f = 8192, 16384

    def split(k_per_chip: int) -> Workload:
        return ops.sharded_matmul(batch, 2 * k_per_chip, f, shards=2, link="ici", link_count=1)

    per_chip = crossover(split, hw, lo=1, hi=1 << 20)
    assert per_chip == smallest_b_above(critical_d / 2 + latency * peak / (2 * batch * f))
    small = analyze(split(1024), hw)  # D = 2048: network-bound
    assert small.regime == "network"
    assert small.t_network == pytest.approx(2 * batch * f / w_ici + latency)  # 2BF bytes, 1 hop
    assert small.kernels[0].t_compute == pytest.approx(batch * 2048 * f / peak)
    assert knob_hint(split(1024), hw, "compute") == f"compute-bound from k_per_chip >= {per_chip}"

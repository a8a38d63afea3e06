"""Kernel-level bounds against the published kernels that once beat them: fused attention's
units overlap, embeddings read only the rows that exist, and an all-reduce on a switch that
reduces in the network moves fewer bytes than a ring.

Each anchor states its source, the convention that turns the published rate into a time, and
the window the bound must sit in (below 100%: a lower bound; above it: a useful one)."""

from __future__ import annotations

import pytest

from pytest_roofline import RooflineError, Workload, analyze, get_hardware, models, ops

# -- overlap inside a fused kernel ---------------------------------------------------------

#: FlashAttention-4 (Zadouri, Hoehnerbach, Shah, Liu, Thakkar, Dao, 2026,
#: https://arxiv.org/abs/2603.05451, abstract): "up to 1613 TFLOPs/s (71% utilization)" on
#: B200 in BF16, forward. The convention: FLOPs = 4·batch·heads·seq²·head_dim (non-causal),
#: time = FLOPs / 1613 TFLOP/s; "up to" is the best any head dim reached, so it is a rate
#: the head-dim-64 kernel did not beat.
FA4_RATE = 1613e12


@pytest.mark.parametrize("head_dim", [64, 128, 192])
@pytest.mark.parametrize("vector", ["bf16", "fp32"])
def test_fa4_on_b200_does_not_beat_the_fused_attention_bound(head_dim: int, vector: str) -> None:
    # The products take 4·P·d / 2.25 PFLOP/s; the softmax 5·P at B200's bf16 vector peak (160
    # TFLOP/s, packed HFMA2), or at its fp32 peak (80) on a spec without 16-bit vector peaks.
    # At d = 64 the fp32-priced softmax is 55% of the products' time, and their sum put FA4
    # at 111% of its bound. The units overlap (FA4 runs the softmax beside asynchronous
    # MMAs), so the bound is the products' time either way: 1613 / 2250 = 71.7% at every
    # head dim. Window 60-90%.
    chip = get_hardware("b200")
    if vector == "fp32":
        chip = chip.replace(vector={"fp64": 40e12, "fp32": 80e12})
    b, h, s = 16, 16, 8192
    bound = analyze(ops.attention(b, s, s, h, h, head_dim), chip)
    measured = 4.0 * b * h * s * s * head_dim / FA4_RATE
    assert bound.time / measured == pytest.approx(FA4_RATE / 2250e12, rel=1e-9)
    assert 0.6 < bound.time / measured < 0.9
    assert bound.kernels[0].peak_label == f"matrix:bf16 + vector:{vector}"


def test_the_softmax_is_priced_at_the_vector_peak_of_its_precision() -> None:
    # A bf16 softmax runs at the chip's bf16 vector peak where the spec lists one (H100:
    # 133.8 TFLOP/s; B200: 160, packed HFMA2), and at the spec's fallback where it does not
    # (MI300X, and a B200 spec without 16-bit vector peaks: fp32): the label says which.
    # B200's packed peak is twice its fp32 one, so the softmax takes half the time.
    h100 = analyze(ops.softmax(4096, 4096), "h100")
    assert h100.kernels[0].peak_label == "vector:bf16"
    assert analyze(ops.softmax(4096, 4096), "mi300x").kernels[0].peak_label == "vector:fp32"
    b200 = get_hardware("b200")
    packed = analyze(ops.softmax(4096, 4096), b200).kernels[0]
    plain = analyze(ops.softmax(4096, 4096), b200.replace(
        vector={"fp64": 40e12, "fp32": 80e12})).kernels[0]
    assert (plain.peak_label, packed.peak_label) == ("vector:fp32", "vector:bf16")
    assert plain.t_compute / packed.t_compute == pytest.approx(2.0, rel=1e-12)


def test_fused_attention_is_timed_as_the_larger_of_its_units() -> None:
    # one kernel: max(matrix, vector, memory), on every path that builds fused attention: the
    # op, a model's prefill, and the training step's backward (its softmax sits inside the
    # backward's products)
    w = ops.attention(4, 2048, 2048, 32, 8, 128, causal=True)
    r = analyze(w, "h100")
    products, softmax = r.kernels
    assert softmax.time == 0.0 and products.fused == (softmax.name,)
    assert products.time == pytest.approx(max(
        w.kernels[0].flops / 989.4e12, w.kernels[1].flops / 133.8e12,
        w.kernels[0].bytes / 3.35e12), rel=1e-9)
    step = models.load("llama-3-8b").train_step(8, 2048)
    hosts = {k.name: k.epilogue_of for k in step.kernels if k.epilogue_of}
    assert hosts["attention.softmax"] == "attention"
    assert hosts["attention.bwd.softmax"] == "attention.bwd"  # as every path names it


# -- distinct rows -------------------------------------------------------------------------

#: Liger-Kernel's embedding forward sweep on an A100-SXM4-80GB (linkedin/Liger-Kernel,
#: benchmark/data/all_benchmark_data.csv, rows "embedding,liger,forward,speed" with B=8,
#: T=2048, D=4096, fp32, Liger 0.2.1, 2024-09-03): vocabulary -> median ms. 16,384 ids drawn
#: with torch.randint from V rows (benchmark/benchmark_embedding.py).
LIGER_A100_MS = {1024: 0.18961599469184875, 2048: 0.21296000480651855,
                 4096: 0.2367040067911148, 8192: 0.26335999369621277,
                 16384: 0.2850880026817322, 32768: 0.30460798740386963,
                 65536: 0.31569600105285645, 131072: 0.31988799571990967}


@pytest.mark.parametrize("vocab", sorted(LIGER_A100_MS))
def test_liger_embedding_sweep_does_not_beat_the_distinct_row_bound(vocab: int) -> None:
    # One row a token read would be 2·16384·4096·4 B = 537 MB: 263 us on the A100's
    # 2.039 TB/s, 139% of the measured 190 us at V = 1024 (it "moved" 2.83 TB/s). Each
    # distinct row is read once: (min(16384, V) + 16384)·16 KiB, 285 MB at V = 1024, 140 us,
    # 73.8%. Across the sweep 69-93% (the most where V = tokens, where random ids still repeat
    # a third of the rows that min(tokens, V) charges). Window 60-95%.
    bound = analyze(ops.embedding(16384, 4096, vocab=vocab, dtype="fp32"), "a100-80gb")
    assert bound.bytes == pytest.approx((min(16384, vocab) + 16384) * 4096 * 4, rel=1e-12)
    efficiency = bound.time / (LIGER_A100_MS[vocab] * 1e-3)
    assert 0.6 < efficiency < 0.95
    if vocab == 1024:
        assert efficiency == pytest.approx(285278208 / 2.039e12 / 189.616e-6, rel=1e-3)


def test_embedding_of_arrays_counts_the_distinct_ids() -> None:
    # ids [1, 2, 2, 3, 3, 3] into a [10, 8] fp32 table: 3 distinct rows read, 6 written
    import numpy as np

    ids, table = np.array([1, 2, 2, 3, 3, 3]), np.zeros((10, 8), dtype=np.float32)
    assert ops.embedding(ids, table).bytes == (3 + 6) * 8 * 4
    assert ops.embedding(6, 8, dtype="fp32", distinct=2).bytes == (2 + 6) * 8 * 4
    with pytest.raises(RooflineError, match="distinct=7 ids, but there are 6 tokens"):
        ops.embedding(6, 8, distinct=7)


def test_a_model_reads_at_most_its_vocabulary_and_positions() -> None:
    # BERT-base (vocab 30,522, 512 learned positions, 2 token types) on 64 x 512 = 32,768
    # tokens: the rows read are min(32768, 30522) + 512 + 2, each of 768 bf16, and one row a
    # token written
    bert = models.load("bert-base")
    embedding = next(k for k in bert.forward(64, 512).kernels if k.name == "embedding")
    assert embedding.bytes == pytest.approx((30522 + 512 + 2 + 32768) * 768 * 2, rel=1e-12)


def test_traced_gathers_read_each_row_at_most_once() -> None:
    # torch's embedding and jax's gather of 16,384 ids from a [1024, 4096] fp32 table: the
    # table once (16 MiB), the ids, and the [16384, 4096] output
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    from pytest_roofline import trace

    table_bytes, out_bytes = 1024 * 4096 * 4, 16384 * 4096 * 4
    w = trace(torch.nn.functional.embedding, torch.zeros(16384, dtype=torch.long),
              torch.zeros(1024, 4096))
    assert w.bytes == table_bytes + out_bytes + 16384 * 8
    w = trace(lambda t, i: t[i], jnp.zeros((1024, 4096), jnp.float32),
              jnp.zeros((16384,), jnp.int32))
    gather = next(k for k in w.kernels if k.name.endswith("gather"))
    assert gather.bytes == table_bytes + out_bytes + 16384 * 4


# -- labels --------------------------------------------------------------------------------


@pytest.mark.parametrize(("workload", "chip", "label", "ridge"), [
    # fp32 vector work on an H100: 66.9 TFLOP/s / 3.35 TB/s = 19.97 FLOP/B (not bf16's 295.3)
    (ops.layernorm(4096, 8192, dtype="fp32"), "h100", "vector:fp32", 66.9e12 / 3.35e12),
    # a bf16 softmax: H100's bf16 vector peak, 133.8 / 3.35 = 39.9
    (ops.softmax(4096, 8192), "h100", "vector:bf16", 133.8e12 / 3.35e12),
    # MI300X lists fp32 only: a bf16 softmax runs at it (163.4 / 5.3 = 30.8), and says so
    (ops.softmax(4096, 8192), "mi300x", "vector:fp32", 163.4e12 / 5.3e12),
    # matrix work keeps its matrix ridge, vector work beside it included
    (ops.attention(1, 1024, 1024, 8, 8, 128), "h100", "matrix:bf16", 989.4e12 / 3.35e12),
])
def test_a_result_names_the_precision_whose_ridge_it_is_compared_with(
        workload: object, chip: str, label: str, ridge: float) -> None:
    r = analyze(workload, chip)  # type: ignore[arg-type]
    assert (r.peak_label, r.dtype) == (label, label.split(":")[1])
    assert r.ridge == pytest.approx(ridge, rel=1e-9)


# -- in-network reduction ----------------------------------------------------------------

#: nccl-tests' bus bandwidth of an all-reduce: busbw = algbw x 2(n-1)/n, algbw = S / t
#: (nccl-tests doc/PERFORMANCE.md). The NCCL maintainer in
#: https://github.com/NVIDIA/nccl-tests/issues/212 (8 x H100 SXM on NVSwitch): "allreduce
#: uses NVLink SHARP by default ... On 8 GPUs, you should reach a peak busBw of ~480GB/s"
#: (the same peak as https://github.com/NVIDIA/nccl/issues/1455), and ~370 GB/s "when
#: running with NCCL_ALGO=RING".


def _busbw_time(size: float, busbw: float, n: int = 8) -> float:
    return size / (busbw / (2.0 * (n - 1) / n))


def test_nccl_nvls_all_reduce_on_h100_does_not_beat_the_in_switch_bound() -> None:
    # 8 GiB of fp32 on 8 H100s, 18 NVLink 4 links of 25 GB/s each way (450 GB/s). A ring
    # sends 2·7/8·S: 33.4 ms, and NCCL's NVLS run (480 GB/s busbw: 31.3 ms) beat it (107%).
    # NVLink SHARP sends (8+1)/8·S each way (see ops.collectives): 21.5 ms, and the run
    # reaches 480 / (450·2·7/9) = 68.6% of it. The ring run (370 GB/s) reaches 82.2% of the
    # ring's bound, and 52.9% of the in-switch one (auto: the least the link runs).
    # Window 60-75%.
    size = 8 * 2**30
    auto = analyze(ops.all_reduce(size // 4, 8, dtype="fp32", link="nvlink"), "h100")
    ring = analyze(ops.all_reduce(size // 4, 8, dtype="fp32", link="nvlink",
                                  algorithm="ring"), "h100")
    assert auto.link_bytes == pytest.approx(9 / 8 * size, rel=1e-12)
    assert auto.time / _busbw_time(size, 480e9) == pytest.approx(480 / (450 * 2 * 7 / 9),
                                                                 rel=1e-4)
    assert 0.60 < auto.time / _busbw_time(size, 480e9) < 0.75
    assert ring.time / _busbw_time(size, 480e9) > 1.0  # the formula this replaces
    assert ring.time / _busbw_time(size, 370e9) == pytest.approx(370 / 450, rel=1e-3)


def test_only_a_fabric_that_reduces_in_the_switch_gets_the_in_switch_bound() -> None:
    # A100's NVSwitch (second generation) has no SHARP: its spec lists no nvls, so auto
    # stays at the ring's 2(n-1)/n·S. Naming nvls prices it anywhere; naming it for a
    # collective other than an all-reduce is refused.
    size = 1 << 30
    a100 = analyze(ops.all_reduce(size // 2, 8, link="nvlink"), "a100")
    assert a100.link_bytes == pytest.approx(2 * 7 / 8 * size, rel=1e-12)
    named = analyze(ops.all_reduce(size // 2, 8, link="nvlink", algorithm="nvls"), "a100")
    assert named.link_bytes == pytest.approx(9 / 8 * size, rel=1e-12)
    sharp = ops.all_reduce(size // 2, 8, algorithm="sharp")
    assert sharp.link_bytes == pytest.approx(size, rel=1e-12) and sharp.flops == 0
    assert "nvls" in get_hardware("h100").link("nvlink").algorithms
    assert "nvls" not in get_hardware("h100").link("pcie").algorithms
    with pytest.raises(RooflineError, match="algorithm='nvls' is an all-reduce algorithm"):
        ops.all_gather(1024, 8, algorithm="nvls")


def test_models_training_and_traced_collectives_take_the_same_choice() -> None:
    # Llama 3 8B with tp=8: each layer's all-reduce of T x 4096 bf16 activations; data
    # parallelism over 8 chips: the gradients' all-reduce; the traced collective (the mesh
    # tracers' shared builder). On H100 NVLink each sends 9/8 of its data; on A100 2·7/8.
    llama = models.load("llama-3-8b")
    for chip, fraction in (("h100", 9 / 8), ("a100", 2 * 7 / 8)):
        prefill = analyze(llama.prefill(1, 2048, tp=8, link="nvlink"), chip)
        attn = next(k for k in prefill.kernels if k.name == "attn.all_reduce")
        assert attn.link_bytes == pytest.approx(fraction * 2048 * 4096 * 2 * 32, rel=1e-12)
        step = analyze(llama.train_step(8, 2048, dp=8, link="nvlink"), chip)
        grads = next(k for k in step.kernels if k.name == "dp.grads.all_reduce")
        assert grads.link_bytes == pytest.approx(fraction * llama.params * 2, rel=1e-3)
    from pytest_roofline.tracing import _mesh

    traced = _mesh.collective("all_reduce", name="psum", elements=1 << 20, dtype="bf16",
                              devices=8, axes=("x",), links={"x": ("nvlink", None)})
    on = analyze(Workload((traced,), name="traced"), "h100")
    assert on.link_bytes == pytest.approx(9 / 8 * 2**21, rel=1e-12)


@pytest.mark.parametrize(("link", "message"), [
    ({"algorithms": ["ring", "nvlx"]}, r"links.nvlink.algorithms': got \['ring', 'nvlx'\], "
                                       r"expected a list of ring, tree, one_shot, nvls, sharp"),
    ({"algorithms": ["nvls"]}, r"links.nvlink.algorithms_source': got None"),
    ({"algorithms": ["nvls"], "algorithms_source": "nowhere"}, r"one of the keys of 'sources'"),
])
def test_a_spec_lists_a_links_algorithms_with_a_source(tmp_path: object, link: dict[str, object],
                                                       message: str) -> None:
    # a user spec extending the A100 (whose NVSwitch runs rings) with an in-switch link
    import yaml

    from pytest_roofline import SpecError

    path = tmp_path / "chip.yaml"  # type: ignore[operator]
    spec = {"name": "a100-nvls", "extends": "a100", "sources": {"lab": "our notes, https://x"},
            "links": {"nvlink": link}}
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match=message):
        get_hardware(str(path))
    spec["links"] = {"nvlink": {"algorithms": ["nvls"], "algorithms_source": "lab"}}
    path.write_text(yaml.safe_dump(spec))
    chip = get_hardware(str(path))
    assert chip.link("nvlink").algorithms == ("ring", "tree", "one_shot", "nvls")
    r = analyze(ops.all_reduce(1 << 20, 8, link="nvlink"), chip)
    assert r.link_bytes == pytest.approx(9 / 8 * 2**21, rel=1e-12)

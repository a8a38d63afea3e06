"""Model workloads (pytest_roofline.models): parameter counts, phases, footprints, errors.

Sources: parameter counts from the model cards cited in specs/models/*.yaml. Chip figures from
the built-in specs: H100 SXM dense bf16 989.4 TFLOP/s and 3.35 TB/s HBM3, 80 GB (NVIDIA
datasheet / whitepaper); A100 80 GB SXM dense bf16 312 TFLOP/s and 2,039 GB/s (datasheet).
Expected values are derived from ``hw.peak`` and ``hw.bandwidth``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_roofline import (
    SpecError,
    UnknownModelError,
    WorkloadError,
    analyze,
    crossover,
    get_hardware,
    knob_hint,
    models,
)
from pytest_roofline import sweep as analyze_sweep
from pytest_roofline.models import ResNetConfig, TransformerConfig

REQUIRED_MODELS = ["llama-2-7b", "llama-3-8b", "llama-3-70b", "llama-3-405b", "mistral-7b",
                   "mixtral-8x7b", "gpt-2", "bert-base", "resnet-50", "qwen2.5-7b",
                   "gpt-j-6b", "llama-2-70b", "bert-large", "deepseek-v3", "gemma-2-9b",
                   "qwen2.5-72b", "mixtral-8x22b"]

# Llama-3-8B shapes (config.json): hidden 4096, 32 layers, 32 heads, 8 KV heads, head_dim 128,
# intermediate 14336, vocab 128256, untied lm_head.
H, L, HEADS, KVH, HD, INTER, VOCAB = 4096, 32, 32, 8, 128, 14336, 128256


@pytest.fixture(scope="module")
def llama8b():
    return models.load("llama-3-8b")


# -- catalog and parameter counts --------------------------------------------------------------


def test_every_required_model_is_built_in():
    assert set(REQUIRED_MODELS) <= set(models.list_models())


@pytest.mark.parametrize("name", REQUIRED_MODELS)
def test_parameter_count_within_one_percent_of_the_model_card(name):
    model = models.load(name)
    config = model.config
    assert config.published_params is not None, f"{name} cites no published count"
    assert config.published_params_source  # the citation travels with the figure
    assert model.params == pytest.approx(config.published_params, rel=0.01)
    if isinstance(config, models.TransformerConfig) and config.published_active_params:
        active = (model.active_params if config.published_active_embedding
                  else model.active_params_no_embedding)
        assert active == pytest.approx(config.published_active_params, rel=0.01)


def test_llama_3_8b_parameters_from_the_config():
    # 2·V·H (untied embedding and lm_head) + L·(attention + SwiGLU MLP + 2 norms) + final norm
    attention = H * (HEADS + 2 * KVH) * HD + HEADS * HD * H
    expected = 2 * VOCAB * H + L * (attention + 3 * H * INTER + 2 * H) + H
    assert expected == 8_030_261_248  # the checkpoint's count (model card: 8.03B)
    assert models.load("llama-3-8b").params == expected


def test_tied_embeddings_are_counted_once_and_never_assumed():
    # GPT-2: wte 50257x768 + wpe 1024x768 + 12 blocks of 7,087,872 + ln_f 1,536
    gpt2 = models.load("gpt-2")
    assert gpt2.config.tie_embeddings is True
    assert gpt2.params == 50257 * 768 + 1024 * 768 + 12 * 7_087_872 + 1536 == 124_439_808
    assert gpt2.params_breakdown()["lm_head"] == 0
    config = TransformerConfig(name="tiny", hidden=64, layers=2, heads=4, intermediate=128,
                               vocab=1000)
    assert config.tie_embeddings is False  # the default is untied
    assert models.load(config).params_breakdown()["lm_head"] == 64 * 1000


def test_mixtral_active_parameters():
    # 2 of 8 experts per token: about 12.9B active of 46.7B (Mistral AI's announcement)
    mixtral = models.load("mixtral-8x7b")
    assert mixtral.active_params == pytest.approx(12.9e9, rel=0.01)


def test_resnet_50_macs_and_flops_per_image():
    # torchvision lists 4.09 GFLOPS for resnet50, counting multiply-accumulates:
    # 4.09 G MACs, i.e. 8.18 GFLOP with 2 FLOPs per MAC (our default).
    resnet = models.load("resnet-50")
    assert resnet.macs == pytest.approx(4.09e9, rel=0.01)
    matrix_flops = sum(k.total_flops for k in resnet.forward(1).kernels if k.unit == "matrix")
    assert matrix_flops == pytest.approx(8.18e9, rel=0.01)
    one = analyze(resnet.forward(1), "h100", flops_per_mac=1)
    assert one.flops == pytest.approx(resnet.forward(1).flops / 2)


def test_resnet_50_workload_is_layer_by_layer_with_counts():
    w = models.load("resnet-50").forward(32)
    assert 30 <= len(w.kernels) <= 80  # stages folded with count=, not one kernel per block
    counts = {k.name: k.count for k in w.kernels}
    assert counts["stage3.blocks2-6.conv2"] == 5


# -- Llama-3-8B on H100 and A100 ---------------------------------------------------------------


def test_llama_3_8b_decode_batch_1_is_memory_bound_at_weights_plus_kv(llama8b):
    # A decode step reads every weight once except the input embedding table (one row per
    # token is gathered), plus the KV cache: 2048 positions x 32 layers x K and V x 8 KV
    # heads x 128 x 2 B. Time within 5% of those bytes / 3.35 TB/s; intensity about 1.
    hw = get_hardware("h100")
    w = llama8b.decode(1, 2048)
    result = analyze(w, hw)
    weights_read = (llama8b.params - VOCAB * H) * 2
    kv_cache = 2048 * L * 2 * KVH * HD * 2
    assert result.regime == "memory"
    assert result.intensity == pytest.approx(1.0, rel=0.1)
    assert result.time == pytest.approx((weights_read + kv_cache) / hw.bandwidth, rel=0.05)
    assert result.fits is True


def test_llama_3_8b_prefill_of_2048_tokens_is_compute_bound(llama8b):
    result = analyze(llama8b.prefill(1, 2048), "h100")
    assert result.regime == "compute"
    assert result.intensity > result.ridge


@pytest.mark.parametrize("chip", ["h100", "a100"])
def test_decode_turns_compute_bound_where_the_weight_matmuls_cross_the_ridge(llama8b, chip):
    # Each bf16 linear layer [b, k] @ [k, n] is compute-bound once
    # b >= r·kn / (kn - r(k + n)), r = peak / bandwidth (H100: 295.3, A100: 153.0).
    # With a short context (128) the attention and vector kernels are a small share, so the
    # step turns compute-bound between the smallest and the largest of those thresholds
    # (H100: 319..346; A100: 160..166). That derivation reads every activation from memory,
    # so it is checked on the chip without its L2 (no on-chip handoffs).
    chip_l2 = get_hardware(chip)
    hw = chip_l2.replace(onchip=())
    r = hw.peak("bf16") / hw.bandwidth
    shapes = [(H, (HEADS + 2 * KVH) * HD), (HEADS * HD, H), (H, 2 * INTER), (INTER, H),
              (H, VOCAB)]
    thresholds = [r * k * n / (k * n - r * (k + n)) for k, n in shapes]
    batch = crossover(lambda b: llama8b.decode(b, 128), hw, hi=1 << 16)
    assert batch is not None and math.ceil(min(thresholds)) <= batch <= math.ceil(
        max(thresholds))
    w = llama8b.decode(8, 128)
    assert knob_hint(w, hw, "compute") == f"compute-bound from batch >= {batch}"
    # With the L2 the norms' outputs, the attention output and the MLP intermediate stay on
    # chip, so the projections reading them need fewer bytes: compute-bound earlier, but never
    # before b = r (a projection that moves only its weights: 2·b·k·n / (2·k·n) = b).
    on_chip = crossover(lambda b: llama8b.decode(b, 128), chip_l2, hi=1 << 16)
    assert on_chip is not None and math.ceil(r) <= on_chip <= batch


@pytest.mark.parametrize("chip", ["h100", "a100"])
def test_long_context_decode_never_turns_compute_bound(llama8b, chip):
    # Per sequence, once the matmuls are compute-bound, a step costs F / peak of compute
    # (F = 2 x linear weights = FLOPs per token) and C·kv / bandwidth of memory for C cached
    # positions (kv = 131,072 B per position). Compute can win only while
    # C < (F / peak)·bandwidth / kv: about 388 positions on H100, 748 on A100.
    hw = get_hardware(chip)
    flops_per_token = 2 * (llama8b.params - VOCAB * H)
    kv_per_position = L * 2 * KVH * HD * 2
    limit = flops_per_token / hw.peak("bf16") * hw.bandwidth / kv_per_position
    assert crossover(lambda b: llama8b.decode(b, int(0.8 * limit)), hw) is not None
    assert crossover(lambda b: llama8b.decode(b, math.ceil(1.05 * limit)), hw) is None
    assert crossover(lambda b: llama8b.decode(b, 2048), hw) is None


def test_decode_sweep_over_batch_matches_single_points(llama8b):
    batches = np.array([1, 64, 512])
    sweep = analyze_sweep(llama8b.decode(batches, 128), "h100")
    for i, b in enumerate(batches):
        single = analyze(llama8b.decode(int(b), 128), "h100")
        assert sweep.time[i] == pytest.approx(single.time)
        assert sweep.regime[i] == single.regime
        assert sweep.footprint[i] == pytest.approx(single.footprint)


def test_lm_head_carries_the_factor_two(llama8b):
    w = llama8b.decode(4, 1024)
    lm_head = next(k for k in w.kernels if k.name == "lm_head")
    assert lm_head.flops == 2 * 4 * H * VOCAB
    assert lm_head.bytes == 2 * (4 * H + H * VOCAB + 4 * VOCAB)


def test_decode_attention_reads_the_kv_cache_with_kv_heads(llama8b):
    b, ctx = 8, 4096
    w = llama8b.decode(b, ctx)
    attention = next(k for k in w.kernels if k.name == "attention")
    assert attention.count == L
    assert attention.bytes == 2 * (2 * b * HEADS * HD + 2 * b * ctx * KVH * HD)


def test_workloads_have_tens_of_kernels_not_thousands():
    w = models.load("llama-3-70b").decode(8, 4096, tp=8)
    assert len(w.kernels) < 30
    assert {k.name: k.count for k in w.kernels}["o_proj"] == 80


# -- quantization ------------------------------------------------------------------------------


def test_quantized_weights_and_kv_cache(llama8b):
    # int8 weights halve the blocks' linear weights; embeddings and lm_head stay bf16
    bf16 = llama8b.footprint(1, 2048)
    int8 = llama8b.footprint(1, 2048, weight_dtype="int8")
    int4 = llama8b.footprint(1, 2048, weight_dtype="int4")
    linear = L * (H * (HEADS + 2 * KVH) * HD + HEADS * HD * H + 3 * H * INTER)
    assert bf16.weights - int8.weights == pytest.approx(linear * 1.0)
    assert bf16.weights - int4.weights == pytest.approx(linear * 1.5)
    fp8_kv = llama8b.footprint(1, 2048, kv_dtype="fp8")
    assert fp8_kv.kv_cache == bf16.kv_cache / 2
    w = llama8b.decode(1, 2048, weight_dtype="int8")
    down = next(k for k in w.kernels if k.name == "down_proj")
    assert down.dtype == "bf16"  # dequantized and multiplied in bf16
    assert down.bytes == 2 * 1 * INTER + INTER * H + 2 * 1 * H


def test_int8_weights_halve_the_decode_batch_to_compute_bound(llama8b):
    hw = get_hardware("h100")
    bf16 = crossover(lambda b: llama8b.decode(b, 16), hw, hi=1 << 14)
    int8 = crossover(lambda b: llama8b.decode(b, 16, weight_dtype="int8"), hw, hi=1 << 14)
    assert bf16 is not None and int8 is not None
    assert int8 / bf16 == pytest.approx(0.5, rel=0.1)


# -- mixture of experts ------------------------------------------------------------------------


def test_distinct_experts_touched_grow_with_the_batch():
    # uniform top-2 routing over 8 experts: T tokens touch E_T = 8·(1 - (6/8)^T) experts per
    # layer (2 at T = 1, nearly all 8 at T = 64), each read once and fed T·2/E_T tokens
    mixtral = models.load("mixtral-8x7b")
    h, inter, layers = 4096, 14336, 32
    for batch in (1, 4, 64):
        touched = 8 * (1 - (6 / 8) ** batch)
        rows = batch * 2 / touched
        # unfused, so the projection's own bytes (fused, it also writes the SwiGLU output)
        gate_up = next(k for k in mixtral.decode(batch, 512, fusion="none").kernels
                       if k.name == "experts.gate_up_proj")
        assert gate_up.count == pytest.approx(layers * touched)
        assert gate_up.bytes == pytest.approx(2 * (rows * h + h * 2 * inter + rows * 2 * inter))
        # FLOPs follow the 2 experts of every token, whatever the number touched
        assert gate_up.total_flops == pytest.approx(2 * batch * 2 * h * 2 * inter * layers)


# -- capacity and tensor parallelism -----------------------------------------------------------


def test_llama_3_70b_needs_tensor_parallelism_on_h100():
    # bf16 weights alone are 70.55e9 x 2 B = 141 GB > 80 GB; split over 2 chips: 70.6 GB each
    model = models.load("llama-3-70b")
    hw = get_hardware("h100")
    alone = analyze(model.decode(1, 8192), hw)
    assert alone.fits is False
    assert alone.footprint > 2 * model.params
    fits = {tp: analyze(model.decode(1, 8192, tp=tp), hw) for tp in (2, 4, 8)}
    assert all(result.fits for result in fits.values())
    assert fits[2].footprint == pytest.approx(model.params + 8192 * 80 * 2 * 4 * 128 * 2,
                                              rel=0.01)
    assert alone.t_network == 0
    assert fits[8].t_network > 0
    assert fits[8].time < alone.time / 4  # each chip reads an eighth of the weights


def test_tensor_parallel_all_reduces_per_layer():
    # two all-reduces per layer (attention out, MLP out) of T x hidden bf16 activations, plus
    # one for the vocab-parallel embedding: ring bytes 2·(N-1)/N of each
    model = models.load("llama-3-70b")
    tp, batch, hidden = 8, 16, 8192
    w = model.decode(batch, 4096, tp=tp)
    reduces = [k for k in w.kernels if k.name.endswith("all_reduce")]
    assert sum(k.count for k in reduces) == 2 * 80 + 1
    per_reduce = 2 * (tp - 1) / tp * batch * hidden * 2
    assert sum(k.total_link_bytes for k in reduces) == pytest.approx(161 * per_reduce)
    qkv = next(k for k in w.kernels if k.name == "qkv_proj")
    assert qkv.flops == 2 * batch * hidden * (64 // tp + 2 * (8 // tp)) * 128


def test_tp_over_more_chips_than_kv_heads_replicates_them():
    w = models.load("llama-3-70b").decode(1, 1024, tp=16)
    qkv = next(k for k in w.kernels if k.name == "qkv_proj")
    assert qkv.flops == 2 * 8192 * (64 // 16 + 2 * 1) * 128


# -- training ----------------------------------------------------------------------------------


def test_train_step_is_three_forward_matmuls(llama8b):
    # forward + input gradient + weight gradient: 3 x 2 x tokens x (linear weights), exactly
    batch, seq = 2, 2048
    tokens = batch * seq
    w = llama8b.train_step(batch, seq)
    linear_flops = sum(k.total_flops for k in w.kernels
                       if k.name.split(".")[0].endswith(("proj", "lm_head")))
    linear_params = llama8b.params - VOCAB * H - (2 * L + 1) * H
    assert linear_flops == pytest.approx(6 * tokens * linear_params)
    footprint = llama8b.footprint(batch, seq, phase="train")
    assert footprint.weights + footprint.optimizer == pytest.approx(16 * llama8b.params,
                                                                    rel=1e-6)
    assert analyze(w, "h100").regime == "compute"


# -- encoders ----------------------------------------------------------------------------------


def test_bert_encoder_forward_and_no_decode():
    bert = models.load("bert-base")
    w = bert.forward(8, 128)
    assert any(k.name == "pooler" for k in w.kernels)
    assert not any(k.name == "lm_head" for k in w.kernels)
    attention = next(k for k in w.kernels if k.name == "attention")
    assert attention.flops == 4 * 8 * 12 * 64 * 128 * 128  # bidirectional: every pair
    with pytest.raises(WorkloadError, match="bert-base is an encoder"):
        bert.decode(1, 128)
    with pytest.raises(WorkloadError, match="512"):
        bert.forward(1, 1024)


# -- breakdown ---------------------------------------------------------------------------------


def test_breakdown_rows(llama8b):
    result = analyze(llama8b.decode(1, 2048), "h100")
    rows = models.breakdown(result, sort=True)
    assert rows[0].name == "gate_up_proj"  # the largest weights
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    softmax = next(r for r in rows if r.name == "attention.softmax")
    assert softmax.peak_label == "vector:bf16"
    lines = models.format_breakdown(result)
    assert lines[0].split() == ["kernel", "count", "FLOPs", "DRAM", "bytes", "on", "chip",
                                "FLOP/B", "peak", "time", "regime", "share"]
    assert lines[1].startswith("gate_up_proj") and any(" lm_head " in f" {line} "
                                                       for line in lines)
    assert models.breakdown(llama8b.decode(1, 2048), "h100")[0].name == "embedding"


# -- configs and errors ------------------------------------------------------------------------


def test_unknown_model_suggests_close_matches():
    with pytest.raises(UnknownModelError, match=r"unknown model 'llama-3-7b'.*'llama-3-70b'"):
        models.load("llama-3-7b")
    with pytest.raises(LookupError):
        models.load("no-such-model")


def test_aliases_and_custom_configs(tmp_path, monkeypatch):
    from pytest_roofline.models.catalog import Catalog

    monkeypatch.setattr(models, "CATALOG", Catalog())  # registrations stay in this test
    assert models.load("Llama3-8B").name == "llama-3-8b"
    path = tmp_path / "tiny.yaml"
    path.write_text(
        "name: tiny-moe\nfamily: transformer\nsources: {mine: internal design note}\n"
        "hidden: 256\nlayers: 2\nheads: 4\nkv_heads: 2\nintermediate: 512\nvocab: 1000\n"
        "tie_embeddings: true\nexperts: 4\nexperts_per_token: 2\n")
    direct = models.load(str(path))
    assert direct.name == "tiny-moe"
    models.register(path)
    assert models.load("tiny-moe").params == direct.params
    resnet18 = models.load(ResNetConfig(name="resnet-18", depths=(2, 2, 2, 2),
                                        widths=(64, 128, 256, 512), block="basic"))
    assert resnet18.params == 11_689_512  # torchvision resnet18


@pytest.mark.parametrize(("text", "message"), [
    ("name: m\nfamily: transformer\nsources: {a: b}\nhidden: 64\nlayers: 2\nheads: 4\n"
     "intermediate: 128\nvocab: 10\ntie_embeddings: false\n", r"missing field 'kv_heads'"),
    ("name: m\nfamily: transformer\nsources: {a: b}\nhidden: 64\nlayers: 2\nheads: 4\n"
     "kv_heads: 3\nintermediate: 128\nvocab: 10\ntie_embeddings: false\n",
     r"field 'kv_heads': got 3, expected a divisor of heads=4"),
    ("name: m\nfamily: transformer\nsources: {a: b}\nhidden: 64\nlayers: 2\nheads: 4\n"
     "kv_heads: 4\nintermediate: 128\nvocab: 10\ntie_embeddings: false\nexperts: 4\n"
     "experts_per_token: 5\n", r"field 'experts_per_token': got 5, expected top-k between 1 "
                               r"and experts=4"),
    ("name: m\nfamily: transformer\nsources: {a: b}\nhidden: 64\nlayers: 0\nheads: 4\n"
     "kv_heads: 4\nintermediate: 128\nvocab: 10\ntie_embeddings: false\n",
     r"field 'layers': got 0"),
    ("name: m\nfamily: transformer\nsources: {a: b}\nhiden: 64\n", r"unknown field 'hiden'.*"
                                                                  r"'hidden'"),
    ("name: m\nfamily: cnn\nsources: {a: b}\n", r"field 'family': got 'cnn'"),
    ("name: m\nfamily: resnet\ndepths: [1]\nwidths: [8]\n", r"missing field 'sources'"),
    ("name: m\nfamily: resnet\nsources: {a: b}\ndepths: [1, 2]\nwidths: [8]\n",
     r"one entry per stage"),
])
def test_bad_model_files_name_the_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=message) as info:
        models.load(str(path))
    assert "bad.yaml" in str(info.value)


@pytest.mark.parametrize(("call", "message"), [
    (lambda m: m.decode(0, 128), r"decode: batch must be a whole number >= 1, got 0"),
    (lambda m: m.decode(1, 12.5), r"decode: context must be a whole number >= 1, got 12.5"),
    (lambda m: m.decode(1, 128, tp=3), r"tp=3 must divide llama-3-8b's heads=32"),
    (lambda m: m.decode(1, 128, tp=0), r"tp must be a whole number >= 1, got 0"),
    (lambda m: m.decode(1, 128, weight_dtype="int3"), r"weight_dtype: unknown precision"),
    (lambda m: m.footprint(1, 128, phase="serve"), r"phase must be"),
])
def test_bad_phase_arguments(llama8b, call, message):
    with pytest.raises(WorkloadError, match=message):
        call(llama8b)


def test_config_from_a_hugging_face_config_json():
    # meta-llama/Llama-3.1-8B config.json (the fields that shape the model)
    llama = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
             "vocab_size": 128256, "hidden_act": "silu", "tie_word_embeddings": False,
             "attention_bias": False}
    assert models.load(models.from_hf_config(llama, "my-llama")).params == 8_030_261_248
    # openai-community/gpt2 config.json has no tie_word_embeddings: GPT2Config's default
    # (True) applies, as transformers loads it
    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
            "n_positions": 1024, "vocab_size": 50257, "n_inner": None}
    config = models.from_hf_config(gpt2, "my-gpt2")
    assert config.tie_embeddings is True
    assert models.load(config).params == 124_439_808
    untied = models.from_hf_config(gpt2, "my-gpt2", tie_embeddings=False)
    assert models.load(untied).params == 124_439_808 + 50257 * 768


def test_mistral_decode_reads_at_most_its_sliding_window() -> None:
    # Mistral 7B v0.1 config.json: sliding_window 4096. Beyond 4096 tokens of context a decode
    # step reads, and the rolling cache keeps, 4096 positions: 32 layers x 2 (K, V) x 8 KV
    # heads x 128 x 2 B = 131072 B per position.
    mistral = models.load("mistral-7b")
    at_4k = mistral.decode(1, 4096)
    at_32k = mistral.decode(1, 32768)
    assert at_32k.bytes == pytest.approx(at_4k.bytes)
    assert at_32k.footprint == pytest.approx(at_4k.footprint)
    kv_per_position = 32 * 2 * 8 * 128 * 2
    assert mistral.decode(1, 2048).bytes == pytest.approx(at_4k.bytes - 2048 * kv_per_position,
                                                          rel=1e-3)
    # Llama 3 8B has no window: its KV reads keep growing with the context.
    llama = models.load("llama-3-8b")
    assert llama.decode(1, 32768).bytes > llama.decode(1, 4096).bytes


def test_hf_config_window_only_when_used() -> None:
    # Qwen2 config.json files list "sliding_window": 131072 with "use_sliding_window": false;
    # Mistral v0.1's lists 4096 and uses it.
    base = {"model_type": "qwen2", "hidden_size": 512, "num_hidden_layers": 2,
            "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 1024,
            "vocab_size": 1000,
            "tie_word_embeddings": False}
    qwen = models.from_hf_config({**base, "sliding_window": 131072,
                                  "use_sliding_window": False}, "tiny-qwen")
    mistral = models.from_hf_config({**base, "model_type": "mistral", "sliding_window": 4096},
                                    "tiny-mistral")
    assert qwen.sliding_window is None
    assert mistral.sliding_window == 4096


def test_a_phase_checks_its_options_once_into_one_value() -> None:
    """PhaseOptions.of turns what a user writes into checked values (the errors name the
    argument); the constructor refuses what is not already in that form, so a phase holding
    one never checks again (its batch knob rebuilds from the same options)."""
    import numpy as np

    from pytest_roofline.models.transformer import PhaseOptions

    options = PhaseOptions.of("decode", tp=np.int64(2), dtype="bfloat16", kv_dtype="fp8")
    assert (options.tp, options.dtype, options.kv_dtype, options.ep) == (2, "bf16", "fp8", 1)
    for bad, message in ((dict(tp=0), "tp must be a whole number >= 1"),
                         (dict(dtype="bfloat16"), "dtype: unknown precision 'bfloat16'"),
                         (dict(fused=1), "fused must be True or False"),
                         (dict(overlap="half"), "overlap must be one of 'none', 'full'"),
                         (dict(fusion="all"), "fusion must be one of")):
        with pytest.raises(WorkloadError, match=message):
            PhaseOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(WorkloadError, match="decode: overlap must be one of"):
        PhaseOptions.of("decode", overlap="half")
    model = models.load("llama-3-8b")
    step = model.decode(4, 1024, tp=2, kv_dtype="fp8", overlap="full")
    assert step.knob is not None
    assert step.knob.build(16).name == model.decode(16, 1024, tp=2, kv_dtype="fp8",
                                                    overlap="full").name

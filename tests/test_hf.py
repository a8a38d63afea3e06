"""Models from Hugging Face config.json files: every covered family, from a copy of a real file.

The files under tests/data/hf/ are copies of published config.json files (sources in that
folder's README). Expected parameter counts come from the model cards and papers named beside
each case, with the tolerance stated there; counts derived by hand say so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_roofline import SpecError, WorkloadError, analyze, knob_hint, models, ops
from pytest_roofline.models import hf

DATA = Path(__file__).parent / "data" / "hf"


def load(name: str) -> models.Transformer:
    model = models.load(str(DATA / f"{name}.json"))
    assert isinstance(model, models.Transformer)
    return model


# (file, published total, published active or None, convention of the active figure, where
# the figure is published). Tolerance 1% unless the case says otherwise.
PUBLISHED = [
    ("llama-2-70b", 69.0e9, None, "", "HF meta-llama/Llama-2-70b-hf safetensors: 69B"),
    ("mistral-7b-v0.1", 7.24e9, None, "", "HF mistralai/Mistral-7B-v0.1 safetensors: 7.24B"),
    ("mixtral-8x22b-v0.1", 141e9, 39e9, "with",
     "Mistral AI, Cheaper, Better, Faster, Stronger (2024): 39B active of 141B"),
    ("qwen2.5-72b", 72.7e9, None, "", "HF Qwen/Qwen2.5-72B card: 72.7B"),
    ("gpt2", 124_439_808, None, "", "HF openai-community/gpt2: GPT2LMHeadModel, tied"),
    ("deepseek-v3", 671e9, 36.6e9, "without",
     "DeepSeek-V3 README_WEIGHTS.md: 671B main model, 36.6B activated incl. output head"),
    ("deepseek-v2", 236e9, 21e9, "without",
     "DeepSeek-V2 paper (arXiv 2405.04434), abstract: 236B total, 21B activated"),
    ("deepseek-v2-lite", 15.7e9, None, "", "HF deepseek-ai/DeepSeek-V2-Lite card: 15.7B"),
    ("gpt-j-6b", 6_053_381_344, None, "", "HF EleutherAI/gpt-j-6b card: 6,053,381,344"),
    ("pythia-1b", 1_011_781_632, None, "",
     "Biderman et al., Pythia (arXiv 2304.01373), table 1: 1,011,781,632 total"),
    ("gemma-7b", 8_537_680_896, None, "",
     "Gemma report (arXiv 2403.08295), table 2: 786,432,000 embedding + 7,751,248,896"),
    ("gemma-2-9b", 9.24e9, None, "", "HF google/gemma-2-9b safetensors: 9.24B"),
    ("gemma-3-1b-it", 1.0e9, None, "", "HF google/gemma-3-1b-it card: 1B"),
    ("phi-3-mini-4k-instruct", 3.82e9, None, "",
     "HF microsoft/Phi-3-mini-4k-instruct safetensors: 3.82B"),
    ("qwen1.5-moe-a2.7b", 14.3e9, 2.7e9, "with",
     "Qwen blog, Qwen1.5-MoE: 14.3B total, 2.7B activated"),
    ("qwen3-8b", 8.2e9, None, "", "HF Qwen/Qwen3-8B card: 8.2B (non-embedding 6.95B)"),
    ("qwen3-30b-a3b", 30.5e9, 3.3e9, "with",
     "HF Qwen/Qwen3-30B-A3B card: 30.5B total, 3.3B activated (2%: the card rounds 3.35)"),
    ("bert-large-uncased", 336e6, None, "",
     "HF google-bert/bert-large-uncased safetensors: 336M (BertForMaskedLM; we count "
     "BertModel, 1.08M fewer)"),
    ("roberta-base", 125e6, None, "", "Liu et al., RoBERTa (arXiv 1907.11692): 125M"),
]


@pytest.mark.parametrize(("name", "total", "active", "convention", "source"), PUBLISHED)
def test_every_family_loads_from_its_config_json_with_the_published_count(
        name: str, total: float, active: float | None, convention: str, source: str) -> None:
    model = load(name)
    assert model.params == pytest.approx(total, rel=0.01), source
    if active is not None:
        got = model.active_params if convention == "with" else model.active_params_no_embedding
        tolerance = 0.02 if name == "qwen3-30b-a3b" else 0.01
        assert got == pytest.approx(active, rel=tolerance), source


def test_every_covered_model_type_has_a_real_file() -> None:
    covered = {json.loads(p.read_text())["model_type"] for p in DATA.glob("*.json")}
    assert covered == set(hf.MODEL_TYPES)


def test_deepseek_v3_total_and_activated_from_its_shapes() -> None:
    # Derivation: per layer, MLA = q_a 7168x1536 + q_b 1536x128x192 + kv_a 7168x576
    # + kv_b 512x128x256 + o 128x128x7168; 3 dense layers of 3x7168x18432; 58 MoE layers of
    # 257 experts (256 routed + 1 shared) x 3x7168x2048 + router 7168x256; embedding and head
    # 129280x7168 each; RMSNorms. MTP (num_nextn_predict_layers) left out, as in the 671B.
    v3 = load("deepseek-v3")
    parts = v3.params_breakdown()
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    assert parts["attention"] == 61 * mla
    assert parts["mlp"] == 3 * 3 * 7168 * 18432 + 58 * 257 * 3 * 7168 * 2048
    assert parts["router"] == 58 * 7168 * 256
    assert v3.params == pytest.approx(671.03e9, rel=1e-4)
    # activated: 8 routed + 1 shared expert per MoE layer; the input embedding not counted
    assert v3.active_params_no_embedding == pytest.approx(36.63e9, rel=1e-3)
    assert v3.active_params - v3.active_params_no_embedding == 129280 * 7168
    assert v3.config.weight_dtype == "fp8"  # from quantization_config


def test_kv_cache_bytes_per_token_mla_against_gqa() -> None:
    # Zhao et al., Insights into DeepSeek-V3 (ISCA 2025, arXiv 2505.09343), table 1, bf16:
    # DeepSeek-V3 (MLA) 70.272 KB, Qwen-2.5 72B (GQA) 327.680 KB, LLaMA-3.1 405B (GQA)
    # 516.096 KB per token. MLA: (512 + 64) x 61 layers x 2 B; GQA: 2 x 8 x 128 x layers x 2 B.
    assert load("deepseek-v3").kv_bytes_per_token("bf16") == 70_272
    assert load("qwen2.5-72b").kv_bytes_per_token("bf16") == 327_680
    assert load("llama-3.1-405b").kv_bytes_per_token("bf16") == 516_096
    assert load("deepseek-v3").kv_bytes_per_token("fp8") == 35_136


def test_mla_cache_is_what_decode_keeps_and_what_tensor_parallel_chips_replicate() -> None:
    v3 = load("deepseek-v3")
    one = v3.footprint(4, 1000, tp=1)
    eight = v3.footprint(4, 1000, tp=8)
    assert one.kv_cache == 4 * 1000 * 70_272
    assert eight.kv_cache == one.kv_cache  # the latent serves every head: each chip keeps it


def test_mla_decode_absorbed_reads_the_latent_once() -> None:
    # Absorbed: one KV head of 576 (512 latent + 64 rope), V = its first 512 columns.
    # Per layer and sequence: scores 128 heads x ctx; FLOPs 2 x 128 x ctx x (576 + 512);
    # bytes: the latent ctx x 576 x 2 B, Q 128 x 576 x 2 B read, O 128 x 512 x 2 B written.
    v3 = load("deepseek-v3")
    b, ctx = 2, 1000
    kernel = next(k for k in v3.decode(b, ctx).kernels if k.name == "attention")
    assert kernel.count == 61
    assert kernel.flops == pytest.approx(b * 2 * 128 * ctx * (576 + 512))
    assert kernel.bytes == pytest.approx(b * (ctx * 576 * 2 + 128 * 576 * 2 + 128 * 512 * 2))
    # Not absorbed: kv_b_proj up-projects every cached position, then 128-head attention
    # with head_dim 192 for Q.K and 128 for P.V.
    naive = v3.decode(b, ctx, absorb=False)
    up = next(k for k in naive.kernels if k.name == "kv_b_proj")
    assert up.flops == pytest.approx(2 * b * ctx * 512 * 128 * (128 + 128))
    attn = next(k for k in naive.kernels if k.name == "attention")
    assert attn.flops == pytest.approx(b * 2 * 128 * ctx * (192 + 128))
    assert naive.flops > 20 * v3.decode(b, ctx).flops
    # an fp8 cache is read as fp8 by the up-projection (1 B per latent element, not 2)
    fp8 = next(k for k in v3.decode(b, ctx, absorb=False, kv_dtype="fp8").kernels
               if k.name == "kv_b_proj")
    assert up.bytes - fp8.bytes == pytest.approx(b * ctx * 512 * (2 - 1))
    with pytest.raises(WorkloadError, match="absorb=False applies to latent attention only"):
        load("llama-2-70b").decode(1, 128, absorb=False)


def test_deepseek_v3_decode_on_8_h200_names_the_knob() -> None:
    # fp8 weights (from the file) over 8 chips: 671 GB / 8 fits a 141 GB H200 with the cache.
    v3 = load("deepseek-v3")
    for workload in (v3.decode(64, 4096, tp=8), v3.decode(64, 4096, tp=8, absorb=False)):
        result = analyze(workload, "h200")
        assert result.fits and result.regime in ("memory", "compute")
    assert analyze(v3.decode(64, 256, tp=8), "h200").regime == "memory"
    hint = knob_hint(v3.decode(64, 256, tp=8), "h200", "compute")
    assert hint is not None and re.fullmatch(r"compute-bound from batch >= \d+", hint)
    at = int(hint.rsplit(" ", 1)[1])
    assert analyze(v3.decode(at, 256, tp=8), "h200").regime == "compute"
    assert analyze(v3.decode(at - 1, 256, tp=8), "h200").regime == "memory"
    # At 4096 positions no batch makes it compute-bound: under tensor parallelism every chip
    # reads the whole latent cache for its 16 of 128 heads (about 30 FLOP/B in attention).
    assert knob_hint(v3.decode(64, 4096, tp=8), "h200", "compute") is None
    # Expert parallelism (attention data-parallel, 32 experts a chip) reads each sequence's
    # latent once for all 128 heads: there a batch turns it compute-bound.
    ep = v3.decode(256, 4096, ep=8)
    assert analyze(ep, "h200").fits and not analyze(v3.decode(256, 4096, tp=8), "h200").fits
    hint = knob_hint(ep, "h200", "compute")
    assert hint is not None and re.fullmatch(r"compute-bound from batch >= \d+", hint)


def test_expert_parallelism_spreads_experts_and_batch() -> None:
    # ep=8: each chip keeps 256 / 8 = 32 routed experts and decodes 64 / 8 = 8 sequences;
    # each MoE layer sends its 8 tokens x 8 experts x 7168 bf16 values out and back, 7/8 of
    # them over the links (all-to-all on a switch).
    v3 = load("deepseek-v3")
    one, eight = v3.footprint(64, 4096), v3.footprint(64, 4096, ep=8)
    assert eight.kv_cache == one.kv_cache / 8
    experts = 58 * 256 * 3 * 7168 * 2048  # fp8: one byte each
    assert one.weights - eight.weights == pytest.approx(experts * 7 / 8)
    kernels = {k.name: k for k in v3.decode(64, 4096, ep=8).kernels}
    dispatch = kernels["experts.dispatch"]
    assert dispatch.count == 58
    assert dispatch.link_bytes == pytest.approx(8 * 8 * 7168 * 2 * 7 / 8)
    assert "experts.combine_all_to_all" in kernels
    # the same (token, expert) pairs are computed, spread over 8 chips
    whole = next(k for k in v3.decode(64, 4096).kernels if k.name == "experts.gate_up_proj")
    spread = kernels["experts.gate_up_proj"]
    assert 8 * spread.flops * spread.count == pytest.approx(whole.flops * whole.count)
    with pytest.raises(WorkloadError, match="ep=8 with tp=2 is not modelled"):
        v3.decode(64, 4096, ep=8, tp=2)
    with pytest.raises(WorkloadError, match="has no experts to spread"):
        load("llama-2-70b").decode(8, 128, ep=8)
    with pytest.raises(WorkloadError, match="ep=3 must divide deepseek-v3's experts=256"):
        v3.decode(8, 128, ep=3)


def test_weight_precision_from_quantization_config_is_overridable() -> None:
    v3 = load("deepseek-v3")
    fp8 = v3.footprint(1, 1, tp=8)
    bf16 = v3.footprint(1, 1, tp=8, weight_dtype="bf16")
    assert bf16.weights > 1.9 * fp8.weights
    assert "fp8 weights" in v3.decode(1, 16).name
    config = models.from_hf_config(DATA / "deepseek-v3.json", weight_dtype=None)
    assert config.weight_dtype is None


def test_missing_keys_take_the_model_types_defaults() -> None:
    # falcon-7b and gemma-7b's files carry no tie_word_embeddings: FalconConfig and
    # GemmaConfig default it to True, so the lm_head is the embedding table.
    assert load("falcon-7b").config.tie_embeddings is True
    assert load("gemma-7b").config.tie_embeddings is True
    assert load("gpt-j-6b").config.intermediate == 4 * 4096  # n_inner null: 4 x n_embd
    # a mapping with only model_type is transformers' default config of that type
    # (DeepseekV3Config's defaults are DeepSeek-V3's shapes)
    bare = models.load({"model_type": "deepseek_v3"})
    assert bare.params == load("deepseek-v3").params
    assert bare.config.weight_dtype is None  # no quantization_config: nothing assumed


def test_parallel_blocks_and_norms_per_block() -> None:
    gptj, falcon7, falcon40 = load("gpt-j-6b"), load("falcon-7b"), load("falcon-40b")
    assert gptj.config.parallel_block and gptj.config.block_norms == 1
    assert falcon7.config.parallel_block and falcon7.config.block_norms == 1
    assert falcon7.config.kv_heads == 1  # multi_query
    assert falcon40.config.block_norms == 2 and falcon40.config.kv_heads == 8  # ln_attn, ln_mlp
    assert load("pythia-1b").config.parallel_block  # use_parallel_residual
    names = [k.name for k in gptj.decode(1, 128, tp=2).kernels]
    assert "mlp_norm" not in names  # the MLP reads the attention's normalized input
    assert names.count("block.all_reduce") == 1 and "attn.all_reduce" not in names
    # Falcon-7B by hand: embedding 65024 x 4544 (tied); per layer fused qkv 4544 x (4544 +
    # 2 x 64), dense 4544^2, MLP 2 x 4544 x 18176, one LayerNorm (2 x 4544); final LayerNorm.
    layer = 4544 * 4672 + 4544 ** 2 + 2 * 4544 * 18176 + 2 * 4544
    assert falcon7.params == 65024 * 4544 + 32 * layer + 2 * 4544


def test_gemma_local_and_global_layers() -> None:
    # Gemma 2: even layers use the 4096 window, odd layers attend globally (21 and 21 of 42).
    g2 = load("gemma-2-9b")
    assert (g2.config.sliding_window, g2.config.local_layers) == (4096, 21)
    per_position = 2 * 8 * 256 * 2  # K and V, 8 KV heads of 256, bf16
    at_8k = g2.footprint(1, 8192).kv_cache
    assert at_8k == per_position * (21 * 8192 + 21 * 4096)
    names = [k.name for k in g2.decode(1, 8192).kernels]
    assert "attention" in names and "attention.local" in names
    # Gemma 3 1B: sliding_window_pattern 6, so 5 of every 6 layers are local (22 of 26)
    g3 = load("gemma-3-1b-it")
    assert (g3.config.sliding_window, g3.config.local_layers) == (512, 22)
    assert g3.config.qk_norm and g3.config.block_norms == 4


def test_gemma_3_multimodal_loads_the_text_model_and_says_so() -> None:
    config = models.get_config(str(DATA / "gemma-3-4b-it.json"))
    assert config.name == "gemma-3-4b-it"
    assert "vision tower" in config.description and "left out" in config.description
    assert (config.hidden, config.layers, config.head_dim) == (2560, 34, 256)  # text_config
    assert config.vocab == 262208 and config.sliding_window == 1024  # defaults, then the file


def test_shared_experts_of_their_own_width() -> None:
    qwen = load("qwen1.5-moe-a2.7b")
    assert (qwen.config.shared_width, qwen.config.expert_intermediate) == (5632, 1408)
    assert qwen.config.shared_expert_gate
    assert load("qwen3-30b-a3b").config.shared_experts == 0


def test_sliding_window_honoured_only_where_used() -> None:
    assert load("mistral-7b-v0.1").config.sliding_window == 4096
    assert load("phi-3-mini-4k-instruct").config.sliding_window == 2047
    assert load("qwen2.5-72b").config.sliding_window is None  # use_sliding_window false
    assert load("mixtral-8x22b-v0.1").config.sliding_window is None  # null in the file


def test_encoders_load_as_encoders() -> None:
    bert = load("bert-large-uncased")
    assert bert.config.architecture == "encoder" and bert.config.pooler
    with pytest.raises(WorkloadError, match="no decode phase"):
        bert.decode(1, 16)
    assert bert.forward(8, 512).flops > 0


@pytest.mark.parametrize(("patch", "message"), [
    ({"model_type": "t5"}, r"model_type='t5' is not covered; covered: bert, deepseek_v2"),
    ({"model_type": None}, r"no 'model_type' key"),
    ({"moe_layer_freq": 2}, r"moe_layer_freq=2 is not covered"),
    ({"attention_bias": True}, r"attention_bias=True is not covered"),
    ({"quantization_config": {"quant_method": "bitsandbytes"}},
     r"quantization_config.quant_method='bitsandbytes' .*is not covered"),
    ({"hidden_size": 0}, r"field 'hidden': got 0.*\(config.json key 'hidden_size'\)"),
    ({"qk_rope_head_dim": 0}, r"qk_rope_head_dim.*got 0.*config.json key 'qk_rope_head_dim'"),
])
def test_unknown_or_uncovered_input_names_the_key_and_value(patch: dict[str, object],
                                                           message: str) -> None:
    data = {**json.loads((DATA / "deepseek-v3.json").read_text()), **patch}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(SpecError, match=message):
        models.from_hf_config(data)


def test_bad_files_are_named(tmp_path: Path) -> None:
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    with pytest.raises(SpecError, match=r"config.json: not valid JSON"):
        models.load(str(broken))
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(SpecError, match=r"list.json: expected a JSON object"):
        models.from_hf_config(listed)


def test_names_come_from_the_folder_of_a_config_json(tmp_path: Path) -> None:
    folder = tmp_path / "DeepSeek-V3"
    folder.mkdir()
    (folder / "config.json").write_text((DATA / "deepseek-v3.json").read_text())
    assert models.get_config(str(folder / "config.json")).name == "deepseek-v3"
    assert models.from_hf_config({"model_type": "gpt2"}).name == "gpt2"
    assert models.from_hf_config({"model_type": "gpt2"}, "mine").name == "mine"


def test_value_heads_of_their_own_width_in_ops_attention() -> None:
    # Q.K^T: 2 P d_qk; P.V: 2 P d_v. Bytes: Q (d_qk) read, O (d_v) written, K (d_qk) and
    # V (d_v) read once per KV head.
    b, q, kv, h, d, dv = 2, 1, 4096, 16, 192, 128
    w = ops.attention(b, q, kv, h, h, d, v_head_dim=dv, causal=True)
    pairs = b * h * q * kv
    assert w.flops == pytest.approx(2 * pairs * (d + dv) + 5 * pairs)
    item = 2
    assert w.bytes == pytest.approx(item * (b * q * h * (d + dv) + b * kv * h * (d + dv)))
    np = pytest.importorskip("numpy")
    query = np.zeros((b, q, h, d), dtype=np.float16)
    value = np.zeros((b, kv, h, dv), dtype=np.float16)
    key = np.zeros((b, kv, h, d), dtype=np.float16)
    arrays = ops.attention(query, key, value, layout="bshd", causal=True)
    assert arrays.flops == pytest.approx(w.flops)
    # MLA decoding from its latent, absorbed: one KV head of 576, V its first 512 columns
    latent = ops.attention(1, 1, 1000, 128, 1, 576, v_head_dim=512, shared_kv=True)
    assert latent.bytes == pytest.approx(2 * (128 * 576 + 128 * 512 + 1000 * 576))
    with pytest.raises(WorkloadError, match="v_head_dim=640 must be at most head_dim=576"):
        ops.attention(1, 1, 1000, 128, 1, 576, v_head_dim=640, shared_kv=True)


def test_defaults_table_in_the_docs_matches_the_code() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "models.md").read_text()
    assert hf.defaults_table() in docs
    assert f"transformers {hf.TRANSFORMERS_VERSION}" in docs


@pytest.mark.parametrize(("builtin", "file"), [
    ("gpt-j-6b", "gpt-j-6b"), ("llama-2-70b", "llama-2-70b"), ("bert-large", "bert-large-uncased"),
    ("deepseek-v3", "deepseek-v3"), ("gemma-2-9b", "gemma-2-9b"), ("qwen2.5-72b", "qwen2.5-72b"),
    ("mixtral-8x22b", "mixtral-8x22b-v0.1"),
])
def test_built_in_files_agree_with_the_config_json_they_cite(builtin: str, file: str) -> None:
    ours, theirs = models.load(builtin), load(file)
    assert isinstance(ours, models.Transformer)
    assert ours.params_breakdown() == theirs.params_breakdown()
    assert ours.active_params == theirs.active_params
    assert ours.kv_bytes_per_token() == theirs.kv_bytes_per_token()
    assert ours.config.weight_dtype == theirs.config.weight_dtype
    decode = (lambda m: m.decode(4, 512)) if ours.config.architecture == "decoder" else (
        lambda m: m.forward(4, 512))
    assert decode(ours).flops == pytest.approx(decode(theirs).flops)
    assert decode(ours).bytes == pytest.approx(decode(theirs).bytes)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-4, 1 << 20) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6)
FILES = sorted(p.stem for p in DATA.glob("*.json"))


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(FILES), data=st.data(), value=JSON_VALUES)
def test_any_value_under_any_key_gives_a_config_or_a_spec_error(name: str, data: st.DataObject,
                                                                 value: object) -> None:
    # Property: whatever one key of a real file holds, loading returns a valid config or
    # raises SpecError; never another exception, never a silently odd model.
    config = json.loads((DATA / f"{name}.json").read_text())
    key = data.draw(st.sampled_from(sorted(config)))
    config[key] = value
    try:
        result = models.from_hf_config(config, "fuzzed")
    except SpecError as exc:
        assert str(exc)
    else:
        assert isinstance(result, models.TransformerConfig)
        assert models.load(result).params > 0


def test_unknown_override_is_named() -> None:
    with pytest.raises(SpecError, match=r"unknown field 'kv_head'. Did you mean 'kv_heads'"):
        models.from_hf_config({"model_type": "llama"}, kv_head=2)


def test_register_a_config_json_then_load_it_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "Phi-3-mini"
    folder.mkdir()
    (folder / "config.json").write_text((DATA / "phi-3-mini-4k-instruct.json").read_text())
    models.register(str(folder / "config.json"))
    assert models.load("phi-3-mini").params == load("phi-3-mini-4k-instruct").params


@settings(max_examples=50, deadline=None)
@given(layers=st.integers(1, 96), kv_heads=st.sampled_from([1, 2, 4, 8]),
       group=st.integers(1, 8), head_dim=st.sampled_from([64, 80, 128, 256]),
       hidden=st.sampled_from([512, 2048, 4096]), inter=st.integers(1, 30000),
       vocab=st.integers(1, 200000), tied=st.booleans(), batch=st.integers(1, 64),
       context=st.integers(1, 8192))
def test_llama_mapping_counts_and_caches_in_closed_form(layers, kv_heads, group, head_dim,
                                                        hidden, inter, vocab, tied, batch,
                                                        context):
    # Property: a Llama config.json gives params = V·H·(1 or 2) + L·(attention + 3·H·I +
    # 2·H) + H and a cache of 2·L·kv_heads·head_dim bytes per position per element byte.
    heads = kv_heads * group
    model = models.load({"model_type": "llama", "hidden_size": hidden,
                         "num_hidden_layers": layers, "num_attention_heads": heads,
                         "num_key_value_heads": kv_heads, "head_dim": head_dim,
                         "intermediate_size": inter, "vocab_size": vocab,
                         "tie_word_embeddings": tied})
    attention = hidden * (heads + 2 * kv_heads) * head_dim + heads * head_dim * hidden
    expected = vocab * hidden * (1 if tied else 2) + layers * (
        attention + 3 * hidden * inter + 2 * hidden) + hidden
    assert model.params == expected
    per_position = 2 * layers * kv_heads * head_dim * 2  # bf16
    assert model.kv_bytes_per_token() == per_position
    assert model.footprint(batch, context).kv_cache == batch * context * per_position


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(FILES), data=st.data())
def test_dropping_keys_falls_back_to_defaults_or_a_spec_error(name: str,
                                                              data: st.DataObject) -> None:
    # Property: a file missing any keys still loads (transformers' defaults fill them) or
    # raises SpecError (say, kv heads that no longer divide the default head count).
    config = json.loads((DATA / f"{name}.json").read_text())
    dropped = data.draw(st.sets(st.sampled_from(sorted(set(config) - {"model_type"})),
                                max_size=4))
    for key in dropped:
        del config[key]
    try:
        result = models.from_hf_config(config, "trimmed")
    except SpecError as exc:
        assert str(exc)
    else:
        assert models.load(result).params > 0


def test_a_model_file_mapping_loads_beside_config_json_mappings() -> None:
    yaml_like = {"name": "tiny", "family": "transformer", "sources": {"made-up": "a test"},
                 "hidden": 64, "layers": 2, "heads": 4, "kv_heads": 4, "intermediate": 128,
                 "vocab": 100, "tie_embeddings": True}
    assert models.load(yaml_like).name == "tiny"
    assert models.get_config({"model_type": "gpt2", "n_layer": 2}).layers == 2

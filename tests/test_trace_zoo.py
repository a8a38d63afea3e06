"""Model code nobody here wrote, traced unchanged on meta tensors: torchvision's classifiers,
every transformers model type the config path covers (2 layers, batch 1 x 256 tokens), and
flax modules.

Expected numbers:
* torchvision: each classifier's published ``weights.meta["_ops"]`` (GFLOPs as torchvision
  counts them: multiply-accumulates, rounded to 3 decimals, at the weights' own input size)
  times 2 FLOPs per multiply-accumulate, to torchvision's rounding; and torch's
  ``FlopCounterMode`` exactly.
* transformers: the config path's ``forward`` (``models.load(cfg.to_dict())``) within 1%,
  and ``FlopCounterMode`` exactly for the projections (``mm``, ``addmm``); its ``bmm`` holds
  attention at every pair, where the trace counts the causal pairs (``test_trace_hf.py``
  checks that scaling), and it has no formula for ``_grouped_mm`` (MoE experts: 0).
* flax: XLA's cost analysis of the lowered program, for the products and convolutions.
No op in any of these runs may be unknown.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import pytest_roofline as rl  # noqa: E402
from pytest_roofline import models  # noqa: E402
from pytest_roofline.models import hf  # noqa: E402

CLASSIFIERS = ("alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "googlenet",
               "inception_v3", "mobilenet_v2", "mobilenet_v3_small", "regnet_y_400mf",
               "resnet18", "resnet50", "shufflenet_v2_x1_0", "squeezenet1_0", "swin_t",
               "vgg11", "vit_b_16")
#: Product ops FlopCounterMode counts, by the name the trace gives their kernels.
PRODUCTS = ("convolution", "mm", "addmm", "bmm", "scaled_dot_product_attention")


def _products(w: rl.Workload) -> float:
    return sum(float(k.total_flops) for k in w.kernels if k.name.split(".")[-1] in PRODUCTS)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_torchvision_classifier_matches_its_published_ops(name: str) -> None:
    tvm = pytest.importorskip("torchvision.models")
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with torch.device("meta"):
            model = tvm.get_model(name).eval()
    except NotImplementedError:  # RegNet computes its widths with tensors: build on CPU
        model = tvm.get_model(name).eval().to("meta")
    meta = tvm.get_model_weights(name).DEFAULT.meta
    size = meta.get("min_size", (224, 224))
    side = 299 if name == "inception_v3" else max(224, size[0])
    x = torch.empty(1, 3, side, side, device="meta")
    traced = rl.trace(model, x)
    assert not traced.unknown, dict(traced.unknown)
    assert _products(traced) / 2e9 == pytest.approx(meta["_ops"], abs=5e-4)
    with FlopCounterMode(display=False) as counter:
        model(x)
    assert _products(traced) == counter.get_total_flops()


def _hf_model(model_type: str, **extra: object):  # type: ignore[no-untyped-def]
    transformers = pytest.importorskip("transformers")
    layers = {"n_layer": 2} if model_type in ("gpt2", "gptj") else {"num_hidden_layers": 2}
    if model_type == "deepseek_v2":  # its config class defaults to no experts
        extra = {**extra, "n_routed_experts": 16, "num_experts_per_tok": 6, "n_shared_experts": 2,
                 "first_k_dense_replace": 1, "moe_intermediate_size": 1408}
    if model_type == "gemma3":
        config = transformers.AutoConfig.for_model(model_type, text_config=layers)
    else:
        config = transformers.AutoConfig.for_model(model_type, **layers, **extra)
    # SDPA where transformers offers it for the type (gemma2 and gptj: eager attention)
    impl = "eager" if model_type in ("gemma2", "gptj") else "sdpa"
    for part in (config, getattr(config, "text_config", None)):
        if part is not None:
            part._attn_implementation = impl
    encoder = model_type in ("bert", "roberta")
    auto = transformers.AutoModel if encoder else transformers.AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(config).to(torch.bfloat16)
    return model, config


@pytest.mark.parametrize("model_type", hf.MODEL_TYPES)
def test_whole_transformers_model_traces_on_meta_and_agrees(model_type: str) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    model, config = _hf_model(model_type)
    ids = torch.zeros(1, 256, dtype=torch.long, device="meta")
    traced = rl.trace(model, ids)  # token ids only: no mask tensor to read on meta
    assert not traced.unknown, dict(traced.unknown)
    declared = models.load(config.to_dict()).forward(1, 256)
    assert traced.flops == pytest.approx(declared.flops, rel=0.01)
    with FlopCounterMode(display=False) as counter:
        model(ids)
    counts = {str(op).split(".")[-1]: n
              for op, n in counter.get_flop_counts()["Global"].items()}
    for op in ("mm", "addmm"):
        mine = sum(float(k.total_flops) for k in traced.kernels if k.name.split(".")[-1] == op)
        assert mine == counts.get(op, 0), op


@pytest.mark.parametrize("model_type", hf.MODEL_TYPES)
def test_use_cache_false_traces_on_meta_with_each_read_named(model_type: str) -> None:
    """``use_cache=False`` (what training steps and prefill benchmarks pass) makes some types
    read a value of a meta tensor (transformers' packed-sequence check); the trace answers
    it by the documented policy, names it, and agrees with the config path as the default
    call does."""
    model, config = _hf_model(model_type)
    ids = torch.zeros(1, 256, dtype=torch.long, device="meta")
    traced = rl.trace(model, ids, use_cache=False)
    assert not traced.unknown, dict(traced.unknown)
    for read in traced.assumed:  # every read named with its call site and the value taken
        assert " at " in read and "assumed " in read, read
    declared = models.load(config.to_dict()).forward(1, 256)
    assert traced.flops == pytest.approx(declared.flops, rel=0.01)
    assert traced.flops == pytest.approx(rl.trace(model, ids).flops, rel=1e-6)


@pytest.mark.parametrize("model_type", ["mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2",
                                        "deepseek_v3"])
def test_mixture_of_experts_counts_its_grouped_products(model_type: str) -> None:
    # DeepSeek's published first_k_dense_replace (3) would leave 2 layers dense: one here
    extra = {"first_k_dense_replace": 1} if model_type.startswith("deepseek") else {}
    model, config = _hf_model(model_type, **extra)
    traced = rl.trace(model, torch.zeros(1, 256, dtype=torch.long, device="meta"))
    assert traced.flops == pytest.approx(models.load(config.to_dict()).forward(1, 256).flops,
                                         rel=0.01)
    grouped = [k for k in traced.kernels if k.name.endswith("_grouped_mm")]
    assert grouped and all(k.unit == "matrix" and k.flops > 0 for k in grouped)


def test_deepseek_v3_with_fewer_layers_than_its_dense_prefix_loads_as_transformers_builds_it(
        ) -> None:
    # the published first_k_dense_replace=3 with 2 layers: transformers builds two dense layers
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model("deepseek_v3", num_hidden_layers=2)
    assert config.first_k_dense_replace == 3
    loaded = models.load(config.to_dict())
    assert loaded.config.dense_layers == 2 and loaded.config.moe_layers == 0


FLAX_CASES = ("mlp", "conv", "attention")


@pytest.mark.parametrize("case", FLAX_CASES)
def test_flax_module_products_equal_xla_cost_analysis(case: str) -> None:
    jax = pytest.importorskip("jax")
    nn = pytest.importorskip("flax.linen")
    jnp = jax.numpy

    if case == "mlp":
        module = nn.Sequential([nn.Dense(512), nn.gelu, nn.Dense(128)])
        x = jnp.zeros((8, 256), jnp.float32)
    elif case == "conv":
        module = nn.Sequential([nn.Conv(32, (3, 3)), nn.relu, nn.Conv(16, (3, 3),
                                                                       strides=2)])
        x = jnp.zeros((2, 32, 32, 8), jnp.float32)
    else:
        module = nn.MultiHeadDotProductAttention(num_heads=4, qkv_features=64)
        x = jnp.zeros((2, 16, 64), jnp.float32)
    params = module.init(jax.random.PRNGKey(0), x)
    traced = rl.trace(module.apply, params, x)
    assert not traced.unknown, dict(traced.unknown)
    cost = jax.jit(module.apply).lower(params, x).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    products = sum(float(k.total_flops) for k in traced.kernels
                   if k.name.split(".")[-1] in ("dot_general", "conv_general_dilated"))
    if case == "conv":
        # every tap, padding included (docs/bounds.md): 3x3 SAME over 32 x 32 (8 -> 32
        # channels), then stride 2 over 16 x 16 (32 -> 16), batch 2; XLA counts only the
        # taps on the input, fewer at the borders
        assert products == 2 * 2 * 9 * (32 * 32 * 8 * 32 + 16 * 16 * 32 * 16)
        assert products == pytest.approx(cost["flops"], rel=0.05)
        return
    # XLA's total also counts the elementwise ops its own way: the products must be within it
    assert products <= cost["flops"]
    assert products == pytest.approx(cost["flops"], rel=0.05)


@pytest.mark.parametrize("model_type", ["llama", "mixtral", "gpt2"])
def test_a_training_step_traces_with_no_unknown_op(model_type: str) -> None:
    # forward and backward of a whole model: every product's backward is two products of
    # its size (input and weight gradients; attention's dV, dP, dQ, dK over the same scored
    # pairs), so the step's matrix FLOPs are 3x the forward's
    model, _ = _hf_model(model_type)
    ids = torch.zeros(1, 128, dtype=torch.long, device="meta")

    def step() -> None:
        model(ids).logits.sum().backward()

    def matrix(w: rl.Workload) -> float:
        return sum(float(k.total_flops) for k in w.kernels if k.unit == "matrix")

    trained = rl.trace(step)
    assert not trained.unknown, dict(trained.unknown)
    assert matrix(trained) == pytest.approx(3 * matrix(rl.trace(model, ids)), rel=0.01)

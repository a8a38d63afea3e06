"""Transformer configs from Hugging Face ``config.json`` files, chosen by ``model_type``.

A key the file omits takes the default of that ``model_type``'s config class in
``transformers`` (version :data:`TRANSFORMERS_VERSION`, table :data:`DEFAULTS` in
:mod:`.hf_defaults`, rendered in ``docs/models.md``); nothing else is assumed. An unknown
``model_type``, or a feature the models do not cover, is a
:class:`~pytest_roofline.SpecError` naming the key and its value.
Only the file (or the mapping) is read: no network, no ``transformers`` import.

Conventions: the parameter count is the base model's plus its lm_head (BERT and RoBERTa:
``BertModel`` with its pooler, no masked-LM head); DeepSeek-V3's multi-token-prediction
module (``num_nextn_predict_layers``) is not counted, as in its 671B; ``quantization_config``
sets :attr:`TransformerConfig.weight_dtype` (fp8 for DeepSeek-V3), which a phase's
``weight_dtype`` argument overrides; a ``sliding_window`` the model uses is honoured (with
Gemma's ``layer_types``, on those layers only); a multimodal wrapper (Gemma 3) loads its
``text_config`` and leaves the vision tower out. Layer-pattern keys are read as
``transformers`` builds the model: ``first_k_dense_replace`` larger than the layer count
makes every layer dense, ``mlp_only_layers`` may name layers past the last.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..errors import SpecError, did_you_mean
from .config import TransformerConfig
from .hf_defaults import DEFAULTS, TRANSFORMERS_VERSION, defaults_table

__all__ = ["DEFAULTS", "MODEL_TYPES", "TRANSFORMERS_VERSION", "defaults_table",
           "from_hf_config", "read_config_json"]

class _Keys:
    """The file's keys over the model_type's defaults; remembers which key fed which field."""

    def __init__(self, data: Mapping[str, Any], model_type: str, origin: str) -> None:
        self.data, self.model_type, self.origin = data, model_type, origin
        self.defaults = DEFAULTS[model_type]
        self.fed: dict[str, str] = {}

    def __call__(self, key: str, field: str | None = None) -> Any:
        value = self.data[key] if key in self.data else self.defaults[key]
        if field is not None:
            self.fed[field] = key
        return value

    def whole(self, key: str, field: str | None = None, minimum: int = 1) -> int:
        """A key that sizes something: a whole number >= *minimum*, else a clear error."""
        value = self(key, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise SpecError(f"{self.origin}: {key}={value!r}: expected a whole number >= "
                            f"{minimum}")
        return value

    def flag(self, key: str) -> bool:
        """A true/false key; anything else is refused rather than read as truthy."""
        value = self(key)
        if not isinstance(value, bool):
            raise SpecError(f"{self.origin}: {key}={value!r}: expected true or false")
        return value

    def refuse(self, key: str, what: str) -> SpecError:
        return SpecError(f"{self.origin}: {key}={self(key)!r} is not covered: {what}")


def _decoder(k: _Keys, *, head_dim: bool = True, activation: str = "hidden_act",
             kv_heads: bool = True) -> dict[str, Any]:
    """Llama-style keys: RMSNorm, gated MLP, rotary positions."""
    values = {"hidden": k("hidden_size", "hidden"),
              "layers": k.whole("num_hidden_layers", "layers"),
              "heads": k("num_attention_heads", "heads"),
              "kv_heads": k("num_key_value_heads", "kv_heads") if kv_heads else None,
              "intermediate": k("intermediate_size", "intermediate"),
              "vocab": k("vocab_size", "vocab"),
              "tie_embeddings": k("tie_word_embeddings", "tie_embeddings"),
              "activation": str(k(activation))}
    if head_dim:
        values["head_dim"] = k("head_dim", "head_dim")
    return values


def _attention_bias(k: _Keys, values: dict[str, Any]) -> dict[str, Any]:
    if k.flag("attention_bias"):
        values.update(qkv_bias=True, o_bias=True)
    return values


def _window_all_layers(k: _Keys, values: dict[str, Any]) -> dict[str, Any]:
    values["sliding_window"] = k("sliding_window", "sliding_window")
    return values


def _window_by_layer_types(k: _Keys, values: dict[str, Any], default: list[bool]) -> None:
    """Windows on the layers ``layer_types`` marks "sliding_attention" (else *default*)."""
    types = k("layer_types")
    if types is None:
        local = default
    elif isinstance(types, list) and len(types) == values["layers"]:
        local = [t == "sliding_attention" for t in types]
    else:
        raise SpecError(f"{k.origin}: layer_types={types!r}: expected a list of "
                        f"{values['layers']} entries such as 'sliding_attention'")
    if any(local) and k("sliding_window") is not None:
        values.update(sliding_window=k("sliding_window", "sliding_window"),
                      local_layers=sum(local))


def _qwen_window(k: _Keys, values: dict[str, Any], every_other: bool) -> None:
    """Qwen2's window: only with use_sliding_window, on the layers from max_window_layers."""
    if not k.flag("use_sliding_window"):
        return
    first = k.whole("max_window_layers", minimum=0)
    layers = int(values["layers"])
    _window_by_layer_types(k, values, [i >= first if not every_other else
                                       bool((i + 1) % 2) and i < first
                                       for i in range(layers)])


def _moe_layers(k: _Keys, values: dict[str, Any]) -> None:
    """Qwen-MoE: a layer is sparse unless listed in mlp_only_layers or off decoder_sparse_step."""
    step, only = k.whole("decoder_sparse_step"), k("mlp_only_layers") or []
    if not isinstance(only, list):
        raise k.refuse("mlp_only_layers", "expected a list of layer indices")
    if not k("num_experts"):  # no experts: every layer is dense
        return
    sparse = sum(1 for i in range(int(values["layers"]))
                 if i not in only and (i + 1) % step == 0)
    values.update(experts=k("num_experts", "experts"),
                  experts_per_token=k("num_experts_per_tok", "experts_per_token"),
                  moe_intermediate=k("moe_intermediate_size", "moe_intermediate"),
                  dense_layers=int(values["layers"]) - sparse)


def _llama(k: _Keys) -> dict[str, Any]:
    values = _attention_bias(k, _decoder(k))
    if k.flag("mlp_bias"):
        values["mlp_bias"] = True
    return values


def _mistral(k: _Keys) -> dict[str, Any]:
    return _window_all_layers(k, _decoder(k))


def _mixtral(k: _Keys) -> dict[str, Any]:
    values = _window_all_layers(k, _decoder(k))
    values.update(experts=k("num_local_experts", "experts"),
                  experts_per_token=k("num_experts_per_tok", "experts_per_token"))
    return values


def _qwen2(k: _Keys) -> dict[str, Any]:
    values = _decoder(k, head_dim=False)
    values["qkv_bias"] = True  # Qwen2's q, k and v projections always have biases
    _qwen_window(k, values, every_other=False)
    return values


def _qwen3(k: _Keys) -> dict[str, Any]:
    values = _attention_bias(k, _decoder(k))
    values["qk_norm"] = True
    _qwen_window(k, values, every_other=False)
    return values


def _phi3(k: _Keys) -> dict[str, Any]:
    return _window_all_layers(k, _decoder(k, head_dim=False))


def _gemma(k: _Keys) -> dict[str, Any]:
    return _attention_bias(k, _decoder(k))


def _gemma2(k: _Keys) -> dict[str, Any]:
    values = _attention_bias(k, _decoder(k, activation="hidden_activation"))
    values["block_norms"] = 4  # pre and post norms around attention and around the MLP
    _window_by_layer_types(k, values, [bool((i + 1) % 2) for i in range(values["layers"])])
    return values


def _gemma3_text(k: _Keys) -> dict[str, Any]:
    values = _attention_bias(k, _decoder(k, activation="hidden_activation"))
    values.update(block_norms=4, qk_norm=True)
    pattern = k.whole("sliding_window_pattern")
    _window_by_layer_types(k, values, [bool((i + 1) % pattern)
                                       for i in range(values["layers"])])
    return values


def _qwen2_moe(k: _Keys) -> dict[str, Any]:
    values = _decoder(k, head_dim=False)
    values["qkv_bias"] = k.flag("qkv_bias")
    _qwen_window(k, values, every_other=True)
    _moe_layers(k, values)
    shared = k("shared_expert_intermediate_size", "shared_intermediate")
    if shared and values.get("experts"):
        values.update(shared_experts=1, shared_intermediate=shared, shared_expert_gate=True)
    return values


def _qwen3_moe(k: _Keys) -> dict[str, Any]:
    values = _attention_bias(k, _decoder(k))
    if k.flag("use_sliding_window"):
        raise k.refuse("use_sliding_window", "Qwen3-MoE's windowed layers are not modelled")
    values["qk_norm"] = True
    _moe_layers(k, values)
    return values


def _deepseek(k: _Keys) -> dict[str, Any]:
    values = _decoder(k, head_dim=False, kv_heads=False)
    if k.flag("attention_bias"):
        raise k.refuse("attention_bias", "latent attention is modelled without biases")
    if k.data.get("moe_layer_freq", 1) != 1:
        raise SpecError(f"{k.origin}: moe_layer_freq={k.data['moe_layer_freq']!r} is not "
                        f"covered: expected 1 (every layer after first_k_dense_replace is "
                        f"a mixture of experts)")
    nope = k.whole("qk_nope_head_dim", "head_dim")
    rope = k.whole("qk_rope_head_dim", "qk_rope_head_dim", minimum=0)
    values.update(kv_heads=values["heads"], head_dim=nope + rope,
                  v_head_dim=k("v_head_dim", "v_head_dim"),
                  q_lora_rank=k("q_lora_rank", "q_lora_rank"),
                  kv_lora_rank=k("kv_lora_rank", "kv_lora_rank"), qk_rope_head_dim=rope)
    if k("num_experts_per_tok") is not None and k("n_routed_experts"):
        moe = k("moe_intermediate_size", "moe_intermediate")
        values.update(experts=k("n_routed_experts", "experts"),
                      experts_per_token=k("num_experts_per_tok", "experts_per_token"),
                      moe_intermediate=moe, shared_experts=k("n_shared_experts") or 0,
                      dense_layers=min(k.whole("first_k_dense_replace", "dense_layers",
                                               minimum=0), int(values["layers"])))
    return values


def _gpt2(k: _Keys) -> dict[str, Any]:
    if k.flag("add_cross_attention"):
        raise k.refuse("add_cross_attention", "cross-attention layers are not modelled")
    hidden = k.whole("n_embd", "hidden")
    return {"hidden": hidden, "layers": k("n_layer", "layers"), "heads": k("n_head", "heads"),
            "intermediate": k("n_inner", "intermediate") or 4 * hidden,
            "vocab": k("vocab_size", "vocab"), "max_positions": k("n_positions", "max_positions"),
            "tie_embeddings": k("tie_word_embeddings", "tie_embeddings"), "mlp": "plain",
            "norm": "layernorm", "position": "learned", "bias": True,
            "activation": str(k("activation_function"))}


def _gptj(k: _Keys) -> dict[str, Any]:
    hidden = k.whole("n_embd", "hidden")
    return {"hidden": hidden, "layers": k("n_layer", "layers"), "heads": k("n_head", "heads"),
            "intermediate": k("n_inner", "intermediate") or 4 * hidden,
            "vocab": k("vocab_size", "vocab"),
            "tie_embeddings": k("tie_word_embeddings", "tie_embeddings"), "mlp": "plain",
            "norm": "layernorm", "parallel_block": True, "block_norms": 1, "mlp_bias": True,
            "activation": str(k("activation_function"))}


def _gpt_neox(k: _Keys) -> dict[str, Any]:
    values = _decoder(k, head_dim=False, kv_heads=False)
    values.update(mlp="plain", norm="layernorm", mlp_bias=True,
                  parallel_block=k.flag("use_parallel_residual"))
    return _attention_bias(k, values)


def _falcon(k: _Keys) -> dict[str, Any]:
    hidden, heads = k.whole("hidden_size", "hidden"), k("num_attention_heads", "heads")
    new = k.flag("new_decoder_architecture")
    if new:
        kv_heads = k("num_kv_heads", "kv_heads")
    else:
        kv_heads = 1 if k.flag("multi_query") else heads
    parallel = k.flag("parallel_attn") or new
    in_parallel = k("num_ln_in_parallel_attn")  # None: 2 with the new architecture, else 1
    norms = 2 if not parallel or in_parallel == 2 or (in_parallel is None and new) else 1
    return {"hidden": hidden, "layers": k("num_hidden_layers", "layers"), "heads": heads,
            "kv_heads": kv_heads, "intermediate": k("ffn_hidden_size", "intermediate")
            or 4 * hidden, "vocab": k("vocab_size", "vocab"),
            "tie_embeddings": k("tie_word_embeddings", "tie_embeddings"), "mlp": "plain",
            "norm": "layernorm", "parallel_block": parallel, "block_norms": norms,
            "bias": k.flag("bias"), "position": "none" if k.flag("alibi") else "rope",
            "activation": str(k("activation"))}


def _encoder(k: _Keys) -> dict[str, Any]:
    if k.flag("is_decoder"):
        raise k.refuse("is_decoder", "BERT-style models are modelled as encoders")
    return {"architecture": "encoder", "hidden": k("hidden_size", "hidden"),
            "layers": k("num_hidden_layers", "layers"),
            "heads": k("num_attention_heads", "heads"),
            "intermediate": k("intermediate_size", "intermediate"),
            "vocab": k("vocab_size", "vocab"), "tie_embeddings": False, "mlp": "plain",
            "norm": "layernorm", "position": "learned",
            "max_positions": k("max_position_embeddings", "max_positions"),
            "token_types": k("type_vocab_size", "token_types"), "embedding_norm": True,
            "pooler": True, "bias": True, "activation": str(k("hidden_act"))}


_MAPPINGS: dict[str, Callable[[_Keys], dict[str, Any]]] = {
    "llama": _llama, "mistral": _mistral, "mixtral": _mixtral, "qwen2": _qwen2, "qwen3": _qwen3,
    "phi3": _phi3, "gemma": _gemma, "gemma2": _gemma2, "gemma3_text": _gemma3_text,
    "qwen2_moe": _qwen2_moe, "qwen3_moe": _qwen3_moe, "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek, "gpt2": _gpt2, "gptj": _gptj, "gpt_neox": _gpt_neox,
    "falcon": _falcon, "bert": _encoder, "roberta": _encoder,
}

#: model_type values a file can name (gemma3: the multimodal wrapper of gemma3_text).
MODEL_TYPES = tuple(sorted([*_MAPPINGS, "gemma3"]))

_QUANT_BITS = {4: "int4", 8: "int8"}


def _weight_dtype(quant: object, origin: str) -> str:
    """The weight precision a ``quantization_config`` stores the blocks' linear layers in."""
    if not isinstance(quant, Mapping):
        raise SpecError(f"{origin}: quantization_config={quant!r}: expected a mapping")
    method = quant.get("quant_method")
    if method == "fp8":
        return "fp8"
    bits = quant.get("bits")
    if method in ("gptq", "awq") and isinstance(bits, int) and bits in _QUANT_BITS:
        return _QUANT_BITS[bits]
    raise SpecError(f"{origin}: quantization_config.quant_method={method!r} (bits="
                    f"{quant.get('bits')!r}) is not covered: expected fp8, or gptq/awq with "
                    f"4 or 8 bits; pass weight_dtype=... to say what the weights are")


def read_config_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The mapping in a ``config.json`` file; errors name the file."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{file}: cannot read config.json ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SpecError(f"{file}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{file}: expected a JSON object of config keys, got "
                        f"{type(data).__name__}")
    return data


def _default_name(data: Mapping[str, Any], path: Path | None) -> str:
    if path is not None:  # .../DeepSeek-V3/config.json -> deepseek-v3; else the file's stem
        return (path.parent.name if path.name == "config.json" and path.parent.name
                else path.stem).lower()
    where = data.get("_name_or_path")
    if isinstance(where, str) and where.strip("/"):
        return where.strip("/").rsplit("/", 1)[-1].lower()
    return str(data.get("model_type", "model"))


def from_hf_config(config: Mapping[str, Any] | str | os.PathLike[str], name: str | None = None,
                   **overrides: Any) -> TransformerConfig:
    """A :class:`TransformerConfig` from a Hugging Face ``config.json`` (a path, or its
    mapping), for the model types in :data:`MODEL_TYPES`. *overrides* set or correct any field
    (``weight_dtype="bf16"``, ``sliding_window=None``, ...). *name* defaults to the folder the
    file is in, else ``_name_or_path``, else the model_type."""
    path = None
    if isinstance(config, Mapping):
        data: Mapping[str, Any] = config
        origin = "config.json mapping"
    else:
        path = Path(config)
        data, origin = read_config_json(path), str(path)
    model_type = data.get("model_type")
    if model_type is None:
        raise SpecError(f"{origin}: no 'model_type' key; it picks the mapping of keys (one of "
                        f"{', '.join(MODEL_TYPES)})")
    if model_type not in MODEL_TYPES:
        raise SpecError(f"{origin}: model_type={model_type!r} is not covered; covered: "
                        f"{', '.join(MODEL_TYPES)}")
    title = name or _default_name(data, path)
    description = f"from {origin} (model_type {model_type})"
    if model_type == "gemma3":
        text = data.get("text_config") or {}
        if not isinstance(text, Mapping):
            raise SpecError(f"{origin}: text_config={text!r}: expected a mapping")
        text = {"tie_word_embeddings": data.get("tie_word_embeddings", True), **text}
        data, model_type = {**text, "model_type": "gemma3_text"}, "gemma3_text"
        description += "; the text model only: the vision tower (vision_config) is left out"
    keys = _Keys(data, str(model_type), origin)
    values = _MAPPINGS[str(model_type)](keys)
    if data.get("is_encoder_decoder"):
        raise keys.refuse("is_encoder_decoder", "encoder-decoder models are not modelled")
    if data.get("quantization_config") is not None:
        values["weight_dtype"] = _weight_dtype(data["quantization_config"], origin)
        keys.fed["weight_dtype"] = "quantization_config"
    allowed = {f.name for f in fields(TransformerConfig)} - {"name", "origin"}
    for key in overrides:
        if key not in allowed:
            raise SpecError(f"from_hf_config: unknown field {key!r}." + did_you_mean(
                key, allowed) + f" Fields: {', '.join(sorted(allowed))}")
    values.update(overrides)
    try:
        return TransformerConfig(name=str(title).lower(), description=description,
                                 sources={"config": origin}, **values)
    except SpecError as exc:
        raise SpecError(_name_the_key(str(exc), keys.fed)) from None


def _name_the_key(message: str, fed: Mapping[str, str]) -> str:
    """A config error, with the config.json key behind the field it names."""
    found = re.search(r"field '(\w+)'", message)
    if found and found.group(1) in fed:
        return f"{message} (config.json key {fed[found.group(1)]!r})"
    return message

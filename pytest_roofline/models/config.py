"""Model configurations: frozen, validated value objects, and their YAML form.

The schema of ``specs/models/*.yaml`` is documented in ``specs/models/README.md``. A config
built in Python validates the same way as one read from a file, and every error names the
field and the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from ..dtypes import canonical
from ..errors import SpecError, UnsupportedPrecisionError, brief, did_you_mean
from ..ops._common import MAX_SIZE
from ..specfiles import check_shape

_MLPS = ("gated", "plain")
_NORMS = ("rmsnorm", "layernorm")
_POSITIONS = ("rope", "learned", "none")
_ARCHITECTURES = ("decoder", "encoder")
_BLOCKS = ("bottleneck", "basic")


def _whole(value: object, where: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not (
            minimum <= value <= MAX_SIZE):
        raise SpecError(f"{where}: got {brief(value)}, expected a whole number from {minimum} "
                        f"to 2**53")
    return value


def _choice(value: object, where: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise SpecError(f"{where}: got {brief(value)}, expected one of {', '.join(allowed)}")
    return str(value)


def _flag(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"{where}: got {value!r}, expected true or false")
    return value


@dataclass(frozen=True)
class TransformerConfig:
    """A transformer language model (decoder) or encoder, with the shapes of Hugging Face's
    ``config.json`` under plain names.

    ``kv_heads`` defaults to ``heads`` (multi-head attention), ``head_dim`` (the query/key
    head size) to ``hidden // heads``, ``v_head_dim`` (the value head size) to ``head_dim``.
    ``tie_embeddings`` is False unless the model says otherwise: most large models (Llama,
    Mistral, Qwen2.5-7B) keep a separate lm_head. ``experts > 0`` makes the MLP of every layer
    but ``dense_layers`` of them a mixture of experts with ``experts_per_token`` (top-k)
    routing, each expert a gated MLP of ``moe_intermediate`` (default ``intermediate``), plus
    ``shared_experts`` always-on experts, together ``shared_intermediate`` wide (default
    ``shared_experts x moe_intermediate``), optionally behind a sigmoid gate
    (``shared_expert_gate``, Qwen2-MoE).

    Multi-head latent attention (DeepSeek-V2/V3) is on when ``kv_lora_rank`` is set: queries
    go through a rank-``q_lora_rank`` bottleneck (none when unset), keys and values are
    up-projected from a cached latent of ``kv_lora_rank`` plus a shared rotary key of
    ``qk_rope_head_dim``; ``head_dim`` is then the query/key head size (nope + rope) and
    ``v_head_dim`` the value head size.

    ``parallel_block``: attention and MLP read the same block input and their outputs are added
    (GPT-J, GPT-NeoX, Falcon). ``block_norms``: hidden-sized norms per layer (2 for a pre-norm
    block, 1 for GPT-J and Falcon-7B's shared norm, 4 for Gemma 2/3's pre and post norms).
    ``qk_norm``: a norm on each query and key head (Qwen3, Gemma 3). ``local_layers``: how many
    layers use ``sliding_window`` (the others attend globally; all of them when unset).
    ``weight_dtype``: the default precision of the blocks' linear weights (fp8 for DeepSeek-V3's
    checkpoint); a phase's ``weight_dtype`` argument overrides it.
    """

    name: str
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int
    kv_heads: int | None = None
    head_dim: int | None = None
    architecture: str = "decoder"
    mlp: str = "gated"
    activation: str = "silu"
    norm: str = "rmsnorm"
    tie_embeddings: bool = False
    position: str = "rope"
    max_positions: int = 0
    token_types: int = 0
    embedding_norm: bool = False
    pooler: bool = False
    qkv_bias: bool = False
    bias: bool = False
    experts: int = 0
    experts_per_token: int = 0
    moe_intermediate: int | None = None
    shared_experts: int = 0
    sliding_window: int | None = None
    v_head_dim: int | None = None
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int = 0
    parallel_block: bool = False
    block_norms: int = 2
    qk_norm: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    dense_layers: int = 0
    shared_intermediate: int | None = None
    shared_expert_gate: bool = False
    local_layers: int | None = None
    weight_dtype: str | None = None
    published_active_params: float | None = None
    published_active_embedding: bool = True
    aliases: tuple[str, ...] = ()
    description: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    published_params: float | None = None
    published_params_source: str = ""
    origin: str = "<python>"

    def __post_init__(self) -> None:
        where = f"model {self.name!r}" if self.origin == "<python>" else (
            f"{self.origin}: model {self.name!r}")
        if not isinstance(self.name, str) or not self.name:
            raise SpecError(f"{where}: field 'name': got {self.name!r}, expected a name")
        for key in ("hidden", "layers", "heads", "intermediate", "vocab"):
            _whole(getattr(self, key), f"{where}: field {key!r}")
        set_ = object.__setattr__
        set_(self, "kv_heads", self.heads if self.kv_heads is None else _whole(
            self.kv_heads, f"{where}: field 'kv_heads'"))
        assert self.kv_heads is not None
        if self.heads % self.kv_heads:
            raise SpecError(f"{where}: field 'kv_heads': got {self.kv_heads!r}, expected a "
                            f"divisor of heads={self.heads} (grouped-query attention)")
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise SpecError(f"{where}: field 'head_dim' is needed: hidden={self.hidden} is "
                                f"not a multiple of heads={self.heads}")
            set_(self, "head_dim", self.hidden // self.heads)
        else:
            _whole(self.head_dim, f"{where}: field 'head_dim'")
        _choice(self.architecture, f"{where}: field 'architecture'", _ARCHITECTURES)
        _choice(self.mlp, f"{where}: field 'mlp'", _MLPS)
        _choice(self.norm, f"{where}: field 'norm'", _NORMS)
        _choice(self.position, f"{where}: field 'position'", _POSITIONS)
        for key in ("tie_embeddings", "embedding_norm", "pooler", "qkv_bias", "bias",
                    "parallel_block", "qk_norm", "o_bias", "mlp_bias", "shared_expert_gate"):
            _flag(getattr(self, key), f"{where}: field {key!r}")
        for key in ("max_positions", "token_types", "experts", "experts_per_token",
                    "shared_experts", "qk_rope_head_dim", "dense_layers"):
            _whole(getattr(self, key), f"{where}: field {key!r}", minimum=0)
        if self.position == "learned" and self.max_positions < 1:
            raise SpecError(f"{where}: field 'max_positions': got {self.max_positions!r}, "
                            f"expected the size of the learned position table (>= 1)")
        if self.experts:
            if not 1 <= self.experts_per_token <= self.experts:
                raise SpecError(f"{where}: field 'experts_per_token': got "
                                f"{self.experts_per_token!r}, expected top-k between 1 and "
                                f"experts={self.experts}")
            if self.mlp != "gated":
                raise SpecError(f"{where}: field 'mlp': experts are gated MLPs, got "
                                f"{self.mlp!r}")
        elif self.experts_per_token or self.shared_experts:
            raise SpecError(f"{where}: field 'experts_per_token'/'shared_experts' set but "
                            f"experts is 0")
        if self.moe_intermediate is not None:
            _whole(self.moe_intermediate, f"{where}: field 'moe_intermediate'")
        if self.sliding_window is not None:
            _whole(self.sliding_window, f"{where}: field 'sliding_window'")
        self._check_extensions(where)
        if self.published_params is not None and (
                isinstance(self.published_params, bool)
                or not isinstance(self.published_params, (int, float))
                or self.published_params <= 0):
            raise SpecError(f"{where}: field 'params.value': got {self.published_params!r}, "
                            f"expected a number of parameters > 0")
        set_(self, "aliases", tuple(str(a).lower() for a in self.aliases))
        set_(self, "sources", MappingProxyType(dict(self.sources)))

    def _check_extensions(self, where: str) -> None:
        """Latent attention, expert layout, windows on some layers, default weight precision."""
        set_ = object.__setattr__
        assert self.head_dim is not None
        for key in ("v_head_dim", "q_lora_rank", "kv_lora_rank", "shared_intermediate",
                    "local_layers"):
            if getattr(self, key) is not None:
                _whole(getattr(self, key), f"{where}: field {key!r}")
        set_(self, "v_head_dim", self.head_dim if self.v_head_dim is None else self.v_head_dim)
        _whole(self.block_norms, f"{where}: field 'block_norms'")
        if self.kv_lora_rank is None:
            for key in ("q_lora_rank", "qk_rope_head_dim"):
                if getattr(self, key):
                    raise SpecError(f"{where}: field {key!r}: got {getattr(self, key)!r}, but "
                                    f"kv_lora_rank is not set (latent attention needs it)")
        elif not 0 < self.qk_rope_head_dim < self.head_dim:
            raise SpecError(f"{where}: field 'qk_rope_head_dim': got {self.qk_rope_head_dim!r}, "
                            f"expected the rotary part of head_dim={self.head_dim} (between 1 "
                            f"and {self.head_dim - 1})")
        elif self.sliding_window is not None:
            raise SpecError(f"{where}: field 'sliding_window': got {self.sliding_window!r}; "
                            f"latent attention with a sliding window is not modelled")
        elif self.kv_heads != self.heads:
            raise SpecError(f"{where}: field 'kv_heads': got {self.kv_heads!r}; latent "
                            f"attention up-projects keys and values for every head "
                            f"(kv_heads = heads = {self.heads})")
        if self.dense_layers and not self.experts:
            raise SpecError(f"{where}: field 'dense_layers': got {self.dense_layers!r}, but "
                            f"experts is 0 (every layer is already dense)")
        if self.dense_layers > self.layers:
            raise SpecError(f"{where}: field 'dense_layers': got {self.dense_layers!r}, "
                            f"expected at most layers={self.layers}")
        if (self.shared_intermediate is not None or self.shared_expert_gate) and not (
                self.shared_experts):
            raise SpecError(f"{where}: field 'shared_intermediate'/'shared_expert_gate' set "
                            f"but shared_experts is 0")
        if self.local_layers is not None:
            if self.sliding_window is None:
                raise SpecError(f"{where}: field 'local_layers': got {self.local_layers!r}, "
                                f"but sliding_window is not set")
            if self.local_layers > self.layers:
                raise SpecError(f"{where}: field 'local_layers': got {self.local_layers!r}, "
                                f"expected at most layers={self.layers}")
        if self.weight_dtype is not None:
            try:
                set_(self, "weight_dtype", canonical(self.weight_dtype))
            except UnsupportedPrecisionError as exc:
                raise SpecError(f"{where}: field 'weight_dtype': {exc}") from None

    @property
    def family(self) -> str:
        return "transformer"

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3)."""
        return self.kv_lora_rank is not None

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts."""
        return self.layers - self.dense_layers if self.experts else 0

    @property
    def shared_width(self) -> int:
        """Inner width of the shared experts of one layer, all together."""
        if self.shared_intermediate is not None:
            return self.shared_intermediate
        return self.shared_experts * self.expert_intermediate

    @property
    def windowed_layers(self) -> int:
        """Layers that attend within ``sliding_window`` (0 without a window)."""
        if self.sliding_window is None:
            return 0
        return self.layers if self.local_layers is None else self.local_layers

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def expert_intermediate(self) -> int:
        return self.intermediate if self.moe_intermediate is None else self.moe_intermediate


@dataclass(frozen=True)
class ResNetConfig:
    """A ResNet: a 7x7/2 stem, a 3x3/2 max pool, four stages of residual blocks (the first
    block of stages 2-4 downsampling by 2 in its 3x3 convolution, torchvision's "v1.5"), global
    average pooling and a fully connected classifier."""

    name: str
    depths: tuple[int, ...]
    widths: tuple[int, ...]
    block: str = "bottleneck"
    expansion: int = 4
    stem_channels: int = 64
    classes: int = 1000
    image_size: int = 224
    in_channels: int = 3
    aliases: tuple[str, ...] = ()
    description: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    published_params: float | None = None
    published_params_source: str = ""
    origin: str = "<python>"

    def __post_init__(self) -> None:
        where = f"model {self.name!r}" if self.origin == "<python>" else (
            f"{self.origin}: model {self.name!r}")
        set_ = object.__setattr__
        for key in ("depths", "widths"):
            value = getattr(self, key)
            if not isinstance(value, (list, tuple)) or not value:
                raise SpecError(f"{where}: field {key!r}: got {value!r}, expected a list of "
                                f"whole numbers, one per stage")
            set_(self, key, tuple(_whole(v, f"{where}: field {key!r}") for v in value))
        if len(self.depths) != len(self.widths):
            raise SpecError(f"{where}: fields 'depths' and 'widths' must have one entry per "
                            f"stage, got {len(self.depths)} and {len(self.widths)}")
        _choice(self.block, f"{where}: field 'block'", _BLOCKS)
        for key in ("expansion", "stem_channels", "classes", "image_size", "in_channels"):
            _whole(getattr(self, key), f"{where}: field {key!r}")
        set_(self, "aliases", tuple(str(a).lower() for a in self.aliases))
        set_(self, "sources", MappingProxyType(dict(self.sources)))

    @property
    def family(self) -> str:
        return "resnet"


ModelConfig = TransformerConfig | ResNetConfig

_COMMON = {"name", "family", "aliases", "description", "sources", "params", "active_params",
           "notes"}
_REQUIRED = {
    "transformer": ("hidden", "layers", "heads", "kv_heads", "intermediate", "vocab",
                    "tie_embeddings"),
    "resnet": ("depths", "widths"),
}
_CLASSES: dict[str, type[TransformerConfig] | type[ResNetConfig]] = {
    "transformer": TransformerConfig, "resnet": ResNetConfig}
_INFORMATIONAL = {"rope_theta", "context", "norm_eps", "hf_config"}


def from_dict(data: Mapping[str, Any], origin: str = "<dict>") -> ModelConfig:
    """A config from a model-file mapping (schema: ``specs/models/README.md``)."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{origin}: a model file must be a mapping of fields, got "
                        f"{type(data).__name__}")
    check_shape(data, origin, SpecError)
    family = data.get("family")
    if not isinstance(family, str) or family not in _CLASSES:
        raise SpecError(f"{origin}: field 'family': got {brief(family)}, expected one of "
                        f"{', '.join(_CLASSES)}")
    cls = _CLASSES[str(family)]
    own = {f.name for f in fields(cls)} - {"aliases", "description", "sources",
                                           "published_params", "published_params_source",
                                           "published_active_params",
                                           "published_active_embedding", "origin", "name"}
    allowed = own | _COMMON | _INFORMATIONAL
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        raise SpecError(f"{origin}: unknown field {unknown[0]!r} for a {family} model."
                        + did_you_mean(unknown[0], allowed)
                        + f" Allowed fields: {', '.join(sorted(allowed))}")
    for key in ("name", "sources", *_REQUIRED[str(family)]):
        if key not in data:
            raise SpecError(f"{origin}: missing field {key!r} (a {family} model needs "
                            f"{', '.join(('name', 'sources', *_REQUIRED[str(family)]))})")
    if not isinstance(data["name"], str) or not data["name"]:
        raise SpecError(f"{origin}: field 'name': got {brief(data['name'])}, expected the "
                        f"model's name")
    sources = data["sources"]
    if not isinstance(sources, dict) or not sources:
        raise SpecError(f"{origin}: field 'sources': got {sources!r}, expected a mapping of "
                        f"citation keys to the model card or config file it comes from")
    aliases = data.get("aliases") or []
    if not isinstance(aliases, list):
        raise SpecError(f"{origin}: field 'aliases': got {aliases!r}, expected a list")
    published, published_source = _published(data.get("params"), sources, origin)
    kwargs: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v)
                              for k, v in data.items() if k in own}
    if "active_params" in data:
        if family != "transformer":
            raise SpecError(f"{origin}: field 'active_params' is for a mixture of experts")
        raw = data["active_params"]
        kwargs["published_active_params"] = _published(raw, sources, origin)[0]
        kwargs["published_active_embedding"] = _flag(
            raw.get("input_embedding"), f"{origin}: field 'active_params.input_embedding'")
    return cls(name=str(data["name"]).lower(), aliases=tuple(aliases),
               description=str(data.get("description", "")),
               sources={str(k): str(v) for k, v in sources.items()},
               published_params=published, published_params_source=published_source,
               origin=origin, **kwargs)


def _published(raw: object, sources: Mapping[str, Any], origin: str) -> tuple[float | None, str]:
    if raw is None:
        return None, ""
    if not isinstance(raw, dict) or "value" not in raw:
        raise SpecError(f"{origin}: field 'params': got {raw!r}, expected {{value: ..., "
                        f"source: ...}}, the published parameter count and where it is "
                        f"published")
    source = raw.get("source")
    if source is None or (str(source) not in sources and not str(source).startswith("http")):
        raise SpecError(f"{origin}: field 'params.source': got {source!r}, expected one of "
                        f"the keys of 'sources': {', '.join(map(str, sources))}")
    value = raw["value"]
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise SpecError(f"{origin}: field 'params.value': got {value!r}, expected a "
                            f"number such as 8.03e9") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SpecError(f"{origin}: field 'params.value': got {value!r}, expected a number "
                        f"of parameters > 0")
    return float(value), str(sources.get(str(source), source))

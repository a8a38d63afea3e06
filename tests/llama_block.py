"""A Llama-style decoder block written as ordinary torch modules (no project code), for the
trace tests and the trace benchmark: RMSNorm, rotary embeddings, grouped-query attention
through ``F.scaled_dot_product_attention`` with a KV cache, SwiGLU MLP, residual adds.
It follows the structure of Hugging Face's ``modeling_llama`` (q/k/v/o projections,
gate/up/down projections, fp32 RMSNorm)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5, **factory: object) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, **factory))  # type: ignore[arg-type]
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x: torch.Tensor, times: int) -> torch.Tensor:
    """[b, kv_heads, s, d] -> [b, kv_heads * times, s, d], as Hugging Face's Llama does."""
    b, kv_heads, s, d = x.shape
    return x[:, :, None].expand(b, kv_heads, times, s, d).reshape(b, kv_heads * times, s, d)


class Attention(nn.Module):
    #: False: repeat K and V to every query head before SDPA (a copy), as older code does
    enable_gqa = True

    def __init__(self, hidden: int, heads: int, kv_heads: int, **factory: object) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False, **factory)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False, **factory)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False, **factory)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False, **factory)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                past: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past is not None:
            k = torch.cat((past[0], k), dim=2)
            v = torch.cat((past[1], v), dim=2)
        if not self.enable_gqa:
            k = repeat_kv(k, self.heads // self.kv_heads)
            v = repeat_kv(v, self.heads // self.kv_heads)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=s > 1,
                                             enable_gqa=self.enable_gqa)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, hidden: int, intermediate: int, **factory: object) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False, **factory)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False, **factory)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False, **factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int, intermediate: int,
                 **factory: object) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(hidden, **factory)
        self.self_attn = Attention(hidden, heads, kv_heads, **factory)
        self.post_attention_layernorm = RMSNorm(hidden, **factory)
        self.mlp = MLP(hidden, intermediate, **factory)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                past: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, past)
        return x + self.mlp(self.post_attention_layernorm(x))


class Model(nn.Module):
    """Layers under ``layers.<i>``, as in Hugging Face checkpoints."""

    def __init__(self, layers: int, **kwargs: object) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(**kwargs) for _ in range(layers))  # type: ignore[arg-type]

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                past: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, cos, sin, past)
        return x


def inputs(batch: int, seq: int, context: int, *, hidden: int, heads: int, kv_heads: int,
           device: str = "meta", dtype: torch.dtype = torch.bfloat16
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                      tuple[torch.Tensor, torch.Tensor] | None]:
    """Hidden states, rotary tables and, when context > seq, a KV cache of context - seq
    positions, so that attention sees *context* keys."""
    head_dim = hidden // heads
    x = torch.empty(batch, seq, hidden, device=device, dtype=dtype)
    cos = torch.empty(1, 1, seq, head_dim, device=device, dtype=dtype)
    sin = torch.empty(1, 1, seq, head_dim, device=device, dtype=dtype)
    past = None
    if context > seq:
        shape = (batch, kv_heads, context - seq, head_dim)
        past = (torch.empty(shape, device=device, dtype=dtype),
                torch.empty(shape, device=device, dtype=dtype))
    return x, cos, sin, past

"""Record the CPU traces of this folder: an MLP and a transformer block, with shapes.

Run from the repository root: ``python tests/data/traces/record_cpu.py``. Each trace is one
call after one warm-up, exported with ``prof.export_chrome_trace()`` and gzip-compressed.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))


def mlp() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(),
                                torch.nn.Linear(2048, 512), torch.nn.LayerNorm(512))
    return model, torch.randn(256, 512)


def block() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                             batch_first=True, dropout=0.0)
    return layer.eval(), torch.randn(4, 128, 256)


def record(name: str, model: torch.nn.Module, x: torch.Tensor) -> None:
    with torch.no_grad():
        model(x)
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            model(x)
    with tempfile.TemporaryDirectory() as folder:
        raw = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as src, gzip.open(os.path.join(HERE, f"{name}.json.gz"),
                                               "wb") as dst:
            shutil.copyfileobj(src, dst)


if __name__ == "__main__":
    torch.set_num_threads(1)
    record("cpu_mlp", *mlp())
    record("cpu_transformer_block", *block())

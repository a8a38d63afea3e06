"""Record the CPU jax.profiler trace of tests/data/jax_traces (see README.md).

    python tests/data/jax_traces/record_cpu.py

An MLP 64x256 -> 512 (bias, ReLU) -> 128 (bias) in fp32, jitted, compiled and run once
before the trace, then three calls under ``jax.profiler.trace`` at ``host_tracer_level``
3 (XLA:CPU records each executed op) without the Python tracer; the arguments are numpy
arrays of fixed values, so no other program (a random-number one) runs in the trace.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent


def mlp(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
    return jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def main() -> None:
    shapes = [(64, 256), (256, 512), (512,), (512, 128), (128,)]
    args = [np.full(s, 0.01 * (i + 1), np.float32) for i, s in enumerate(shapes)]
    call = jax.jit(mlp)
    jax.block_until_ready(call(*args))
    options = jax.profiler.ProfileOptions()
    options.host_tracer_level = 3
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder, profiler_options=options):
            for _ in range(3):
                jax.block_until_ready(call(*args))
        found = next(Path(folder).rglob("*.xplane.pb"))
        shutil.copyfile(found, HERE / "cpu_mlp.xplane.pb")


if __name__ == "__main__":
    main()

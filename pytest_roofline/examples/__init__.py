"""Real profiler traces of other people's runs, installed with the package, to try
``pytest-roofline profile --example NAME`` on without a GPU or a clone of the repository.

Each is copied unchanged from a public repository; README.md beside this file names the
source, the commit and the license of each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import RooflineError


@dataclass(frozen=True)
class Example:
    """One bundled trace: its *file* (beside this module), the device it was recorded on,
    and where it comes from."""

    file: str
    device: str
    source: str

    @property
    def path(self) -> Path:
        return Path(__file__).with_name(self.file)


EXAMPLES: dict[str, Example] = {
    "v100-hta": Example(
        file="v100_hta_trace_diff_test.json.gz",
        device="Tesla V100-SXM2-16GB, one rank of a 2-GPU training run (PyTorch, Kineto)",
        source="HolisticTraceAnalysis tests/data/trace_diff/test/test.json.gz (MIT)"),
    "mi300x-jax-gemm": Example(
        file="mi300x_tracelens_jax08_gemm.xplane.pb",
        device="AMD Instinct MI300X, jitted bf16 GEMMs (JAX 0.8, XSpace)",
        source="AMD TraceLens tests/traces/mi300/jax08_gemm/tw003.xplane.pb (MIT)"),
}


def example_path(name: str) -> Path:
    """The installed file of the bundled trace *name* (one of :data:`EXAMPLES`)."""
    example = EXAMPLES.get(name) if isinstance(name, str) else None
    if example is None:
        raise RooflineError(f"no bundled example trace {name!r:.40}; the examples are "
                            f"{', '.join(EXAMPLES)}")
    return example.path

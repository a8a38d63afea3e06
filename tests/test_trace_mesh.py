"""Sharded programs traced per chip: the collectives' link bytes.

The JAX checks (``tests/mesh_jax/check_*.py``) need 8 CPU devices, which JAX sets up once, as
it initialises, from ``XLA_FLAGS``; they run in a pytest process of their own so that the
flag reaches no other test. Their expected figures are stated in that file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_roofline.tracing import TraceError, Tracer

HERE = Path(__file__).parent


def test_shard_map_programs_on_eight_cpu_devices():
    pytest.importorskip("jax")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-o", "python_files=check_*.py", "-o", "addopts=", str(HERE / "mesh_jax")],
        capture_output=True, text=True, timeout=600, cwd=HERE.parent, check=False)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout


@pytest.mark.parametrize("links", [
    "nvlink", {"x": 3}, {"x": ("nvlink", 0)}, {1: "nvlink"}, {"x": ("nvlink", True)},
])
def test_a_bad_links_option_names_what_is_allowed(links):
    with pytest.raises(TraceError, match=r"Tracer: links"):
        Tracer(links=links)

"""The guard on a busy and a quiet machine: profiled MLPs never read faster than physics.

The examples at the top of docs/profile.md (a torch MLP, a JAX MLP), the docs/measure.md
timing example, and a torch and a JAX MLP profiled with ``min_kernel_efficiency=1e-6`` (so
only the faster-than-physics check can fail them) run as one pytest session, RUNS times
with every core busy (``yes > /dev/null`` on each) and RUNS times quiet, against a host
calibration taken once quiet and once busy. Every session must pass: a kernel above its
calibrated roof is a finding (``% cache``, ``% peak``), never a failure; only one beyond
the physical limit (the last-level cache, the theoretical peak) is.

    python benchmarks/guard_under_load.py [--runs 20] [--busy N]

Prints, per condition, the sessions that passed, and the rows seen above the roof (the
findings) and beyond the limit (alarms) across all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _docs_block(page: str, after: str) -> str:
    """The first ```python block of docs/*page* after the line *after*."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    rest = text[text.index(after):]
    start = rest.index("```python\n") + len("```python\n")
    return rest[start:rest.index("```", start)]


MLPS = '''
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import pytest_roofline as rl
from pytest_roofline.measuring import diagnose


@pytest.mark.roofline(hw="host", min_kernel_efficiency=1e-6)
def test_torch_mlp_guard(roofline):
    x, w1, w2 = torch.randn(256, 512), torch.randn(512, 1024), torch.randn(1024, 512)
    roofline.profile(lambda a, b, c: torch.relu(a @ b) @ c, x, w1, w2)


@jax.jit
def _mlp(x, w1, w2):
    return jnp.maximum(x @ w1, 0.0) @ w2


@pytest.mark.roofline(hw="host", min_kernel_efficiency=1e-6)
def test_jax_mlp_guard(roofline):
    x, w1, w2 = jnp.ones((256, 512)), jnp.ones((512, 1024)), jnp.ones((1024, 512))
    roofline.profile(_mlp, x, w1, w2)


def test_measure_example():
    a, b, c = np.ones((2048, 2048)), np.ones((2048, 2048)), np.empty((2048, 2048))
    m = rl.measure(np.matmul, a, b, out=c)
    r = rl.analyze(rl.ops.matmul(2048, 2048, 2048, dtype="fp64"), "host", measured=m)
    assert not diagnose.is_faster(r, m.spread), r.notes
'''


def _suite(folder: Path) -> Path:
    tests = folder / "tests"
    tests.mkdir()
    (tests / "test_docs_torch.py").write_text(_docs_block("profile.md", "## In a test"))
    (tests / "test_docs_jax.py").write_text(_docs_block("profile.md", "## JAX"))
    (tests / "test_guard.py").write_text(MLPS)
    return tests


def _busy(cores: int) -> list[subprocess.Popen[bytes]]:
    loops = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(cores)]
    time.sleep(0.5)
    return loops


def _stop(loops: list[subprocess.Popen[bytes]]) -> None:
    for loop in loops:
        loop.kill()
        loop.wait()


def _calibrate(env: dict[str, str], busy: int) -> None:
    loops = _busy(busy)
    try:
        subprocess.run([sys.executable, "-m", "pytest_roofline", "calibrate", "--quick"],
                       env=env, check=True, capture_output=True)
    finally:
        _stop(loops)


def _session(tests: Path, env: dict[str, str], report: Path) -> tuple[bool, int, int, str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tests), f"--roofline-json={report}"],
                          env=env, capture_output=True, text=True)
    above = faster = 0
    if report.exists():
        for record in json.loads(report.read_text())["results"]:
            for profile in record.get("profile") or []:
                above += len(profile.get("above_roof") or [])
                faster += len(profile.get("faster") or [])
    failed = re.findall(r"^(?:FAILED|ERROR) .*$", done.stdout, re.MULTILINE)
    if done.returncode != 0:  # kept whole beside the report, for a look
        report.with_suffix(".log").write_text(done.stdout + done.stderr)
        failed = failed or [f"exit {done.returncode}: {done.stdout[-200:]!r}"]
    return done.returncode == 0, above, faster, "; ".join(failed)[:300]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    print(f"{args.runs} sessions a condition, {args.busy} busy loops when busy; "
          f"torch and JAX MLPs, min_kernel_efficiency=1e-6, and the docs' examples")
    print(f"{'calibrated':<12}{'timed':<8}{'passed':>8}{'above roof':>12}{'beyond limit':>14}")
    worst = 0
    with tempfile.TemporaryDirectory() as tmp:
        tests = _suite(Path(tmp))
        for calibrated in ("quiet", "busy"):
            cache = Path(tmp) / f"cache-{calibrated}"
            env = {**os.environ, "XDG_CACHE_HOME": str(cache), "COLUMNS": "100"}
            _calibrate(env, args.busy if calibrated == "busy" else 0)
            for timed in ("quiet", "busy"):
                loops = _busy(args.busy) if timed == "busy" else []
                passed = above = faster = 0
                failures: list[str] = []
                try:
                    for i in range(args.runs):
                        report = Path(tmp) / f"r-{calibrated}-{timed}-{i}.json"
                        ok, seen, beyond, failed = _session(tests, env, report)
                        passed += ok
                        above += seen
                        faster += beyond
                        if failed:
                            failures.append(failed)
                finally:
                    _stop(loops)
                worst = max(worst, args.runs - passed)
                print(f"{calibrated:<12}{timed:<8}{passed:>5}/{args.runs:<2}{above:>12}"
                      f"{faster:>14}")
                for line in failures[:3]:
                    print(f"    {line}")
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())

"""profile() beside other torch profilers, its counts, and roofline.profile in a traced
body: one clear error before torch's profiler state breaks, never a crashed process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import pytest_roofline as rl
from pytest_roofline.profiling import ProfileError

torch = pytest.importorskip("torch")
pytest_plugins = ("pytester",)

#: a spec of the user's own (taken at its word: no calibration)
MINE = rl.Hardware(name="my-cpu", memory_bandwidth=20e9, memory_capacity=16e9,
                   matrix={"fp32": 1e11}, default_dtype="fp32", vector_fallback="matrix")

NESTED = textwrap.dedent("""
    import torch, pytest_roofline as rl
    from torch.profiler import profile

    x = torch.ones(16, 16)

    def own_profiler(a):
        with profile():
            return a @ a

    def nested(a):
        return rl.profile(torch.mm, a, a)

    def inside_users():
        with profile(record_shapes=True) as prof:
            try:
                rl.profile(torch.mm, x, x)
            finally:
                torch.mm(x, x)
        return prof

    for case in (lambda: rl.profile(own_profiler, x), lambda: rl.profile(nested, x),
                 inside_users):
        try:
            out = case()
        except rl.RooflineError as exc:
            print("ERROR", exc)
        else:
            print("KEPT", sum(e.name == "aten::mm" for e in out.events()))
    print("ALIVE", rl.profile(torch.mm, x, x).rows[0].op)
""")


def test_a_second_torch_profiler_is_one_error_not_a_crash() -> None:
    """Run in a child process: before the guard, torch crashed it (SIGSEGV in the trace
    export) where the function profiled ran a profiler of its own, or profile() itself."""
    done = subprocess.run([sys.executable, "-c", NESTED], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.split(" ")[0] in
             ("ERROR", "KEPT", "ALIVE")]
    assert lines[0].startswith("ERROR profile(fn): fn ran a torch profiler of its own")
    assert lines[1].startswith("ERROR profile() cannot run while another torch profiler")
    # inside the user's own profiler: refused before torch is touched, so the user's
    # profile keeps its ops (before, profile() emptied it)
    assert lines[2].startswith("ERROR profile() cannot run while another torch profiler")
    assert lines[3] == "ALIVE aten::mm"  # the process profiles again afterwards
    assert all(len(line) <= 200 for line in lines)


@pytest.mark.parametrize("name", ["warmup", "repeats"])
def test_counts_past_2_to_the_53_are_refused_not_a_hang(name: str) -> None:
    with pytest.raises(ProfileError, match=f"{name} must be a whole number"):
        rl.Profiler(**{name: 10 ** 30})


def test_roofline_profile_in_a_traced_body_adds_the_call_once(
        pytester: pytest.Pytester) -> None:
    """A 32x32 @ 32x32 matmul is 2 * 32**3 = 65,536 FLOPs, the body's own a + 1 one FLOP per
    element (1,024); the profiler's warm-up (1) and repeats (5) were traced into the
    workload too (7 matmuls in all) before they were kept out, as roofline.measure keeps its
    timed calls out."""
    pytester.makepyfile(test_traced="""
        import pytest, torch

        @pytest.mark.roofline(hw="host", trace=True)
        def test_mm(roofline):
            a = torch.ones(32, 32)
            b = a + 1
            roofline.profile(torch.mm, a, b)
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly",
                                          "--roofline-json=r.json")
    result.assert_outcomes(passed=1)
    record = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert record["flops"] == 2 * 32 ** 3 + 32 * 32


def test_a_failed_kernel_check_reads_failed_in_the_breakdown(
        pytester: pytest.Pytester) -> None:
    """The test passes its own check (a time bound far above) and fails its per-kernel one
    on a chip a million times faster than anything real: its report section said
    "workload ...: passed" beside the failure."""
    from test_profile_plugin import FAST

    pytester.makefile(".yaml", fast=FAST)
    pytester.makepyfile(test_kernel="""
        import pytest, torch

        @pytest.mark.roofline(hw="fast.yaml", max_time="1 s", min_kernel_efficiency=0.5)
        def test_mm(roofline):
            a = torch.ones(64, 64)
            roofline.add(flops=1, bytes=1)
            roofline.profile(torch.mm, a, a)
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "passed" not in [line.rsplit(": ", 1)[-1] for line in result.outlines
                            if "workload" in line]
    assert any(line.startswith("fastchip (fp32), workload") and line.endswith(": failed")
               for line in result.outlines), text[-3000:]
    assert "  FAIL: kernel mm(64x64f32,64x64f32) ran at" in text


def test_an_export_that_wrote_nothing_is_torchs_failure_not_a_missing_file(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the reader named profile()'s own temporary file as "does not exist"."""
    import torch.profiler

    class Silent:
        def __init__(self, **_: object) -> None:
            pass

        def __enter__(self) -> Silent:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def export_chrome_trace(self, path: str) -> None:
            return None  # as a profiler whose session was lost writes nothing

    monkeypatch.setattr(torch.profiler, "profile", Silent)
    with pytest.raises(ProfileError, match="torch.profiler wrote no trace") as info:
        rl.Profiler(hw=MINE, warmup=0, repeats=1)(torch.ones(2).add, 1)
    assert "does not exist" not in str(info.value) and "trace.json" not in str(info.value)

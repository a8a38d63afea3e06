"""Triton launches the interpreter does not run (meta and fake tensors, ``wrap_triton``'s
higher-order op, ``triton_op``, compiled launches), counted by replaying them once in
Triton's interpreter on stand-in CPU tensors of the same shapes, dtypes and strides.

The expected count of each replay is the interpreted count of the same launch, taken in
this process on real CPU tensors (``TRITON_INTERPRET=1``, tests/conftest.py): a replay
must count exactly what the interpreter counts. The hand counts of those launches are
tests/test_trace_triton.py's. A replay with no interpreter mode in the process is checked in
a subprocess without ``TRITON_INTERPRET``, whose kernels are compiled-mode ``JITFunction``s.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402

import pytest_roofline as rl  # noqa: E402
from pytest_roofline.tracing import TraceError, _triton_replay  # noqa: E402

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent


def _kernels() -> Any:
    if not triton.knobs.runtime.interpret:
        pytest.skip("Triton kernels run here in interpreter mode only", allow_module_level=True)
    sys.path.insert(0, str(DATA))
    return importlib.import_module("triton_kernels")


tk: Any = _kernels()


def _meta(*tensors: Any) -> tuple[Any, ...]:
    """Meta twins of *tensors*, a tensor passed twice staying one tensor."""
    seen: dict[int, Any] = {}
    return tuple(seen.setdefault(id(t), t.to("meta")) for t in tensors)


def _figures(work: Any) -> list[tuple[Any, ...]]:
    return [(k.name, k.flops, k.bytes, k.unit, k.dtype, k.epilogue_of) for k in work.kernels]


def _cases() -> list[tuple[str, Any, tuple[Any, ...]]]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(98432, generator=gen)
    a = torch.randn(100, 200, dtype=torch.float16, generator=gen)
    b = torch.randn(200, 150, dtype=torch.float16, generator=gen)
    return [("add", tk.add, (x, torch.randn(98432, generator=gen))),
            ("add, one tensor twice", tk.add, (x, x)),
            ("softmax", tk.softmax, (torch.randn(37, 781, generator=gen),)),
            ("matmul with overhanging tiles", tk.matmul, (a, b)),
            ("in place", tk.scale_, (torch.ones(5000),)),
            ("transposed operand", tk.matmul_bt, (torch.randn(40, 50), torch.randn(30, 50)))]


@pytest.mark.parametrize("case", range(len(_cases())), ids=[c[0] for c in _cases()])
def test_a_launch_on_meta_is_counted_by_replay_as_the_interpreter_counts_it(case: int) -> None:
    _, fn, args = _cases()[case]
    interpreted = rl.trace(fn, *args)
    replayed = rl.Tracer(strict=True)(fn, *_meta(*args))
    assert _figures(replayed) == _figures(interpreted)
    assert replayed.flops > 0 and not replayed.unknown
    (note,) = replayed.assumed
    assert note.endswith(": counted by replay")


def _wrapped_add(x: Any, y: Any) -> Any:
    out = torch.empty_like(x)
    n = out.numel()
    torch.library.wrap_triton(tk.add_kernel)[(triton.cdiv(n, 1024),)](x, y, out, n,
                                                                       BLOCK_SIZE=1024)
    return out


def test_wrap_triton_and_its_higher_order_op_on_meta_are_counted_by_replay() -> None:
    """``wrap_triton`` on meta launches the kernel; the HOP torch.compile and export record
    (``triton_kernel_wrapper_mutation``) does not on meta: both count as the interpreter
    counts the launch (4,096 adds; x, y read and out written: 3 · 4,096 · 4 B)."""
    from torch._higher_order_ops.triton_kernel_wrap import (
        kernel_side_table,
        triton_kernel_wrapper_mutation,
    )

    x, y = torch.randn(4096), torch.randn(4096)
    expected = [("add_kernel", 4096.0, 3 * 4096 * 4.0, "vector", "fp32", None)]
    assert _figures(rl.trace(_wrapped_add, x, y)) == expected
    assert _figures(rl.trace(_wrapped_add, *_meta(x, y))) == expected

    def hop(x: Any, y: Any) -> Any:
        out = torch.empty_like(x)
        triton_kernel_wrapper_mutation(
            kernel_idx=kernel_side_table.add_kernel(tk.add_kernel),
            constant_args_idx=kernel_side_table.add_constant_args(
                {"n_elements": 4096, "BLOCK_SIZE": 1024}),
            grid=[(4, 1, 1)], tma_descriptor_metadata={},
            kwargs={"x_ptr": x, "y_ptr": y, "output_ptr": out})
        return out

    work = rl.Tracer(strict=True)(hop, *_meta(x, y))
    assert _figures(work) == expected
    assert dict(work.assumed) == {"Triton add_kernel: counted by replay": 1}
    work = rl.trace(hop, x, y)  # on real tensors the HOP launches it: counted as it runs
    assert _figures(work) == expected
    assert dict(work.assumed) == {"Triton add_kernel: counted in the interpreter": 1}


def test_a_triton_op_on_meta_is_counted_by_replay() -> None:
    @torch.library.triton_op("rlreplay::add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return _wrapped_add(x, y)  # type: ignore[no-any-return]

    x, y = torch.randn(4096), torch.randn(4096)
    interpreted = rl.trace(add, x, y)
    replayed = rl.trace(add, *_meta(x, y))
    assert _figures(replayed) == _figures(interpreted) == [
        ("add_kernel", 4096.0, 3 * 4096 * 4.0, "vector", "fp32", None)]


def test_a_replay_is_cached_per_kernel_signature_constexprs_and_grid() -> None:
    x = torch.empty(4096, device="meta")
    _triton_replay._CACHE.clear()
    first = rl.trace(_wrapped_add, x, x)
    assert len(_triton_replay._CACHE) == 1
    (entry,) = _triton_replay._CACHE.values()
    again = rl.trace(_wrapped_add, x, torch.empty(4096, device="meta"))  # a second tensor
    assert len(_triton_replay._CACHE) == 2  # two storages are not one: a new key
    assert again.bytes == 3 * 4096 * 4 and first.bytes == 2 * 4096 * 4  # x read once
    rl.trace(_wrapped_add, x, x)
    assert len(_triton_replay._CACHE) == 2 and entry in _triton_replay._CACHE.values()
    # another grid, another constexpr, another shape, another stride: new replays
    rl.trace(tk.add, torch.empty(2048, device="meta"), torch.empty(2048, device="meta"))
    assert len(_triton_replay._CACHE) == 3
    strided = torch.empty(8192, device="meta")[::2]
    work = rl.trace(tk.add, strided, strided)
    assert len(_triton_replay._CACHE) == 4
    assert work.bytes == 2 * 4096 * 4  # every other element read, the output written


@triton.jit
def gather_kernel(out_ptr, table_ptr, index_ptr, n, BLOCK: tl.constexpr):
    """out[i] = table[index[i]]: the addresses it reads come from the data it reads."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    index = tl.load(index_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.load(table_ptr + index, mask=mask), mask=mask)


def _gather(table: Any, index: Any) -> Any:
    out = torch.empty(index.shape, dtype=table.dtype, device=table.device)
    gather_kernel[(triton.cdiv(index.numel(), 128),)](out, table, index, index.numel(),
                                                      BLOCK=128)
    return out


def test_a_count_that_depends_on_the_data_says_the_replay_used_stand_in_data() -> None:
    """A gather through an index array: the stand-in indices are 0, so the table is read at
    one address (4 B), where the real indices 0..999 read all of it (4,000 B)."""
    table, index = torch.randn(1000), torch.arange(1000)
    real = rl.trace(_gather, table, index)
    assert real.bytes == 1000 * 8 + 1000 * 4 + 1000 * 4  # index, table, out
    replayed = rl.trace(_gather, *_meta(table, index))
    assert replayed.bytes == 1000 * 8 + 4 + 1000 * 4
    assert dict(replayed.assumed) == {"Triton gather_kernel: counted by replay (stand-in "
                                      "data: its work depends on values it reads)": 1}
    assert _triton_replay.dependence(gather_kernel.fn) == (True, False)
    assert _triton_replay.dependence(tk.add_kernel.fn) == (False, False)
    assert _triton_replay.dependence(tk.matmul_kernel.fn) == (False, False)


@triton.jit
def through_pointers(ptrs, out):
    p = tl.load(ptrs).to(tl.pointer_type(tl.float32))
    tl.store(out, tl.load(p))


def test_a_launch_no_replay_can_count_stays_unknown_by_name_and_says_why() -> None:
    ptrs, out = torch.empty(1, dtype=torch.int64, device="meta"), torch.empty(1, device="meta")
    work = rl.trace(lambda: through_pointers[(1,)](ptrs, out))
    assert dict(work.unknown) == {"through_pointers": 1}
    assert dict(work.assumed) == {"Triton through_pointers: not counted, it loads pointers "
                                  "from memory (tl.pointer_type)": 1}
    with pytest.raises(TraceError, match="through_pointers x1"):
        rl.Tracer(strict=True)(lambda: through_pointers[(1,)](ptrs, out))


_SCRIPT = """
import json, sys
sys.path.insert(0, {data!r})
import torch, triton
from triton.runtime.jit import JITFunction
import triton.language as tl
import pytest_roofline as rl
import triton_kernels as tk

assert not triton.knobs.runtime.interpret and isinstance(tk.add_kernel, JITFunction)
def state():
    spaces = (tl, tl.core, tl.math, tl.tensor, tl.core.dtype, tl.core.tensor_descriptor_base)
    return [JITFunction.__call__] + [
        {{name: getattr(space, name) for name in dir(space)
         if not isinstance(getattr(space, name), type(tl))}} for space in spaces]

before = state()

def wrapped_add(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    torch.library.wrap_triton(tk.add_kernel)[(triton.cdiv(n, 1024),)](x, y, out, n,
                                                                       BLOCK_SIZE=1024)
    return out

def meta(*shapes, dtype=torch.float32):
    return [torch.empty(s, device="meta", dtype=dtype) for s in shapes]

works = {{
    "add": rl.trace(wrapped_add, *meta(98432, 98432)),
    "softmax": rl.trace(tk.softmax, *meta((37, 781))),
    "matmul": rl.trace(tk.matmul, *meta((100, 200), (200, 150), dtype=torch.float16)),
}}
print(json.dumps({{
    "restored": state() == before and not triton.knobs.runtime.interpret,
    "works": {{name: [[[k.name, k.flops, k.bytes, k.unit, k.dtype] for k in w.kernels],
                      dict(w.assumed), dict(w.unknown)] for name, w in works.items()}},
}}))
"""


def test_a_process_without_the_interpreter_counts_by_replay_what_the_interpreter_counts(
        ) -> None:
    """Run the way a GPU suite runs (no ``TRITON_INTERPRET``: the kernels are compiled-mode
    ``JITFunction``s, ``tl.cdiv`` and ``tl.sum`` too), on meta tensors: each launch counts
    what the interpreter counts here, and Triton is left as it was (its language not
    patched, interpreter mode off)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    result = subprocess.run([sys.executable, "-c", _SCRIPT.format(data=str(DATA))],
                            capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["restored"]
    gen = torch.Generator().manual_seed(0)
    expected = {
        "add": rl.trace(_wrapped_add, torch.randn(98432), torch.randn(98432)),
        "softmax": rl.trace(tk.softmax, torch.randn(37, 781)),
        "matmul": rl.trace(tk.matmul, torch.randn(100, 200, dtype=torch.float16, generator=gen),
                           torch.randn(200, 150, dtype=torch.float16, generator=gen)),
    }
    for name, work in expected.items():
        kernels, assumed, unknown = found["works"][name]
        assert kernels == [[k.name, k.flops, k.bytes, k.unit, k.dtype] for k in work.kernels]
        assert not unknown
        (note,) = assumed
        assert note.endswith("counted by replay"), name


def test_wrap_triton_under_torch_compile_on_meta_is_counted_by_replay() -> None:
    """``torch.compile`` (here its eager backend) hands the launch to the HOP; on meta the
    launch counts as the interpreter counts it on CPU."""
    compiled = torch.compile(_wrapped_add, backend="eager")
    x = torch.randn(4096)
    interpreted = rl.trace(compiled, x, x)
    replayed = rl.trace(compiled, *_meta(x, x))
    assert _figures(replayed) == _figures(interpreted) == [
        ("add_kernel", 4096.0, 2 * 4096 * 4.0, "vector", "fp32", None)]  # x read once
    assert dict(replayed.assumed) == {"Triton add_kernel: counted by replay": 1}


def test_a_launch_too_large_to_replay_is_unknown_and_says_so() -> None:
    """A replay runs the interpreter (~1 s per million elements here): a launch whose
    tensors hold more than 64 MiB (3 x 8 Mi fp32 = 96 MiB) is not replayed, nothing is
    allocated, and the launch says why."""
    x = torch.empty(8 << 20, device="meta")
    work = rl.trace(tk.add, x, torch.empty(8 << 20, device="meta"))
    assert dict(work.unknown) == {"add_kernel": 1}
    assert dict(work.assumed) == {"Triton add_kernel: not counted, its tensors hold 96 MiB, "
                                  "past the 64 MiB a replay takes (give it a formula)": 1}
    (k,) = work.kernels
    assert k.bytes == 3 * (8 << 20) * 4  # its implied bytes all the same


def test_a_launch_on_fake_tensors_is_counted_by_replay() -> None:
    """Inside a fake-tensor mode (what torch.compile and export trace with) the replay's
    stand-ins are real CPU tensors all the same."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(4096)
    interpreted = rl.trace(_wrapped_add, x, x)
    with FakeTensorMode():
        fake = torch.empty(4096)
        replayed = rl.trace(_wrapped_add, fake, fake)
    assert _figures(replayed) == _figures(interpreted)
    assert dict(replayed.assumed) == {"Triton add_kernel: counted by replay": 1}


def test_a_replays_key_tells_tensor_descriptors_apart() -> None:
    """Two descriptors of one tensor with other block shapes are two launches' worth of
    work: their keys differ; the same descriptor twice is one key."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.empty(64, 32, device="meta")

    def key(*values: Any) -> Any:
        return _triton_replay._signature(values, [])

    small, large = TensorDescriptor.from_tensor(x, [16, 32]), TensorDescriptor.from_tensor(
        x, [32, 32])
    assert key(small) != key(large)
    assert key(small) == key(TensorDescriptor.from_tensor(x, [16, 32]))
    assert key(x, x) != key(x, torch.empty(64, 32, device="meta"))  # shared or not


_SUITE = """
import pytest
import torch
import triton_kernels as tk

@pytest.mark.roofline(hw="h100", trace=True, strict=True)
def test_matmul():
    a = torch.empty(100, 200, dtype=torch.float16, device="meta")
    tk.matmul(a, torch.empty(200, 150, dtype=torch.float16, device="meta"))

@pytest.mark.roofline(hw="h100", trace=True, strict=True)
def test_softmax():
    tk.softmax(torch.empty(37, 781, device="meta"))
"""


def test_a_traced_suite_run_as_a_gpu_suite_runs_counts_what_the_interpreter_counts(
        tmp_path: Path) -> None:
    """A ``trace=True`` suite run with no ``TRITON_INTERPRET`` (compiled-mode kernels, as on
    a GPU; meta tensors here, nothing to run them on): strict, and each test's figures are
    the interpreted launch's."""
    from test_plugin import ISOLATE, plugin_args

    (tmp_path / "test_suite.py").write_text(_SUITE)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(DATA), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *plugin_args(), *ISOLATE, "-q",
         "--roofline-json=r.json", "test_suite.py"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    records = {r["nodeid"].split("::")[1]: r for r in json.loads(
        (tmp_path / "r.json").read_text())["results"]}
    gen = torch.Generator().manual_seed(0)
    expected = {
        "test_matmul": rl.trace(tk.matmul, torch.randn(100, 200, dtype=torch.float16,
                                                       generator=gen),
                                torch.randn(200, 150, dtype=torch.float16, generator=gen)),
        "test_softmax": rl.trace(tk.softmax, torch.randn(37, 781, generator=gen))}
    for name, work in expected.items():
        assert (records[name]["flops"], records[name]["bytes"]) == (work.flops, work.bytes)
        assert not records[name].get("unknown")

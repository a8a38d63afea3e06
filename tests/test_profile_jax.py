"""JAX measured per op: a jitted call profiled under jax.profiler, and jax.profiler traces
(.xplane.pb) read, each executed XLA fusion priced as one kernel by the JAX tracer's table.

Data: tests/data/jax_traces (README.md there): an MLP recorded on XLA:CPU by
``record_cpu.py``, and AMD TraceLens's JAX GEMM test trace recorded on an MI300X.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware
from pytest_roofline.profiling import ProfileError
from pytest_roofline.profiling.jax.hlo import parse_module
from pytest_roofline.profiling.jax.xplane import XPlaneError, parse_space, read_space

pytest_plugins = ("pytester",)

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

DATA = Path(__file__).parent / "data" / "jax_traces"
CPU_MLP = DATA / "cpu_mlp.xplane.pb"
MI300X = DATA / "mi300x_tracelens_jax08_gemm.xplane.pb"
#: Roofs no CPU reaches (10 TFLOP/s, 1 TB/s): a real CPU timing never beats them, so every
#: row has an efficiency, whatever machine runs the test.
ROOMY = Hardware(name="roomy-cpu", memory_bandwidth=1e12, memory_capacity=16e9,
                 matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")
#: What a call on XLA:CPU runs with no event of its own (views, tuples).
_SILENT = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}


def mlp(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    return jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def block(x: Any, wq: Any, wk: Any, wv: Any, wo: Any, w1: Any, w2: Any, g1: Any,
          g2: Any) -> Any:
    """A pre-norm transformer block: layer norm, 4-head causal attention, layer norm, a
    GELU MLP, two residual adds."""
    def norm(h: Any, g: Any) -> Any:
        mean = h.mean(-1, keepdims=True)
        var = ((h - mean) ** 2).mean(-1, keepdims=True)
        return (h - mean) * jax.lax.rsqrt(var + 1e-5) * g

    batch, seq, dim = x.shape
    heads = 4
    h = norm(x, g1)
    q, k, v = ((h @ w).reshape(batch, seq, heads, dim // heads) for w in (wq, wk, wv))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dim // heads)
    scores = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), scores, -1e9)
    attended = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
    x = x + attended.reshape(batch, seq, dim) @ wo
    return x + jax.nn.gelu(norm(x, g2) @ w1) @ w2


def _arrays(*shapes: tuple[int, ...]) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    return tuple(jnp.asarray((rng.standard_normal(s) * 0.05).astype(np.float32))
                 for s in shapes)


MLP_ARGS = ((64, 256), (256, 512), (512,), (512, 128), (128,))
BLOCK_ARGS = ((2, 64, 128), (128, 128), (128, 128), (128, 128), (128, 128), (128, 512),
              (512, 128), (128,), (128,))


def _executed(fn: Any, args: tuple[Any, ...]) -> set[str]:
    """The instructions of the compiled entry computation that run as ops of their own."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    entry = text[text.index("\nENTRY "):]
    found = re.findall(r"^\s+(?:ROOT )?%([\w.\-]+) = \S+ ([\w\-]+)\(", entry, re.MULTILINE)
    return {name for name, opcode in found if opcode not in _SILENT}


# -- a jitted call, profiled --------------------------------------------------------------------


@pytest.mark.parametrize(("fn", "shapes"), [(mlp, MLP_ARGS), (block, BLOCK_ARGS)],
                         ids=["mlp", "transformer_block"])
def test_a_jitted_call_gets_one_priced_row_per_executed_fusion(
        fn: Any, shapes: tuple[tuple[int, ...], ...]) -> None:
    args = _arrays(*shapes)
    profile = rl.Profiler(hw=ROOMY, repeats=3)(jax.jit(fn), *args)
    assert profile.repeats == 3 and not profile.unpriced
    assert profile.priced_share == pytest.approx(1.0)
    # one row per op of the compiled program, each once a call
    assert {r.op for r in profile.rows} == _executed(fn, args)
    assert all(r.count == 1 and (r.flops > 0 or r.bytes > 0) for r in profile.rows)
    # the fused program's FLOPs are the traced primitives' (XLA may recompute a cheap
    # producer in two fusions, hence 1%); none of the rows beats its bound
    traced = float(rl.trace(fn, *args).flops)
    assert sum(r.flops for r in profile.rows) == pytest.approx(traced, rel=0.01)
    assert not profile.faster and not profile.check({}, allow_faster=False)
    assert all(r.efficiency is not None and 0 < r.efficiency <= 1 for r in profile.rows)


def test_the_mlp_rows_hold_its_closed_form() -> None:
    """x [64, 256] @ w1 [256, 512] + b1, ReLU, @ w2 [512, 128] + b2, fp32, not jitted by
    the caller (profile jits it whole)."""
    profile = rl.Profiler(hw=ROOMY, repeats=2)(mlp, *_arrays(*MLP_ARGS))
    products = 2 * 64 * 256 * 512 + 2 * 64 * 512 * 128
    elementwise = 64 * 512 * 2 + 64 * 128  # bias add and max, bias add
    assert sum(r.flops for r in profile.rows) == products + elementwise


def test_a_flax_model_rows_name_its_modules() -> None:
    """Each row carries the module path its ops ran in, so a pattern can pick a layer."""
    nn = pytest.importorskip("flax.linen")
    from pytest_roofline.profiling.rules import minimum_for

    class MLP(nn.Module):  # type: ignore[misc]
        @nn.compact
        def __call__(self, x: Any) -> Any:
            hidden = nn.relu(nn.Dense(512, name="up")(x))
            return nn.Dense(128, name="down")(hidden)

    model, (x,) = MLP(), _arrays((64, 256))
    params = model.init(jax.random.key(0), x)
    profile = rl.Profiler(hw=ROOMY)(jax.jit(model.apply), params, x)
    (up,) = [r for r in profile.rows if "MLP/up/dot_general" in r.kernels]
    assert up.flops == 2 * 64 * 256 * 512
    assert minimum_for(up, {"*down*": 0.9, "*/up/*": 0.3}) == 0.3
    assert sum(r.flops for r in profile.rows) == float(rl.trace(model.apply, params, x).flops)


def test_a_fusion_reading_a_slice_is_charged_the_slice() -> None:
    """x[:8] * 2 of a 1024 x 1024 fp32 array fuses the slice into the multiply: it reads
    8 rows (32 KiB), never the 4 MiB array, and writes 8 rows."""
    x = np.ones((1024, 1024), np.float32)
    profile = rl.Profiler(hw=ROOMY)(jax.jit(lambda a: a[:8] * 2.0), x)
    (row,) = profile.rows
    assert row.bytes == 2 * 8 * 1024 * 4 and row.flops == 8 * 1024


def test_a_buffer_updated_in_place_moves_its_update_only() -> None:
    """dynamic_update_slice(buf, u * 2, (i, 0)) of a 1024 x 1024 fp32 buffer and an 8-row
    update: XLA copies the caller's buffer (read and written whole, a row of its own), then
    writes the update into the copy in place: it reads u and i (4 bytes) and writes 8 rows,
    never the whole buffer again."""
    buf, update = jnp.zeros((1024, 1024)), jnp.ones((8, 1024))
    profile = rl.Profiler(hw=ROOMY)(
        jax.jit(lambda b, u, i: jax.lax.dynamic_update_slice(b, u * 2.0, (i, 0))),
        buf, update, 3)
    (dus,) = [r for r in profile.rows if "dynamic_update_slice" in r.kernels]
    assert dus.bytes == 2 * 8 * 1024 * 4 + 4 and dus.flops >= 8 * 1024
    assert sum(r.bytes for r in profile.rows) <= 2 * 1024 * 1024 * 4 + dus.bytes


def test_a_call_that_donates_its_arguments_is_refused_in_one_line() -> None:
    donating = jax.jit(lambda b: b * 2.0, donate_argnums=0)
    with pytest.raises(ProfileError, match="donate_argnums") as info:
        rl.Profiler(hw=ROOMY)(donating, jnp.zeros((64, 64)))
    assert "\n" not in str(info.value)


def test_a_profile_inside_a_running_trace_is_refused_in_one_line(tmp_path: Path) -> None:
    with jax.profiler.trace(str(tmp_path)), pytest.raises(ProfileError,
                                                          match="jax.profiler") as info:
        rl.Profiler(hw=ROOMY)(jax.jit(mlp), *_arrays(*MLP_ARGS))
    assert "\n" not in str(info.value)


def test_an_op_without_a_formula_is_named_with_its_time() -> None:
    x = np.ones((64, 256), np.complex64)
    profile = rl.Profiler(hw=ROOMY)(jax.jit(jnp.fft.fft), jnp.asarray(x))
    assert any("no formula for fft" in u.reason and u.seconds > 0 for u in profile.unpriced)
    assert profile.priced_share < 1.0


def test_a_convolution_is_priced_over_every_tap_as_trace_counts_it() -> None:
    """Stride 2 x 1, uneven padding, a dilated kernel, two feature groups (NHWC), output 2 x
    9 x 16 x 6: every tap of every output element, padding included (docs/bounds.md), 2 · 2
    · (8/2) · 6 · (9 · 16) · (3 · 3) = 124,416 FLOPs, the traced primitive's; XLA's cost
    analysis counts only the taps on the input, fewer."""
    def conv(a: Any, b: Any) -> Any:
        return jax.lax.conv_general_dilated(
            a, b, (2, 1), ((1, 2), (0, 1)), rhs_dilation=(1, 2), feature_group_count=2,
            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    a, b = _arrays((2, 17, 19, 8), (3, 3, 4, 6))
    profile = rl.Profiler(hw=ROOMY)(jax.jit(conv), a, b)
    assert not profile.unpriced
    xla = jax.jit(conv).lower(a, b).compile().cost_analysis()
    xla = xla[0] if isinstance(xla, list) else xla
    flops = sum(r.flops for r in profile.rows) / profile.rows[0].count
    assert flops == float(rl.trace(conv, a, b).flops) == 2 * 2 * 4 * 6 * 9 * 16 * 9
    assert flops > xla["flops"]
    # its gradients: XLA runs them as convolutions of their own. The filter's (a window of
    # the output's 9 x 16 over the input, its groups base-dilated apart: the holes are no
    # taps) meets each pair the forward does: 124,416. The input's (the output base-dilated
    # by the stride, padded 1 and 4-3) every tap of the convolution XLA wrote: per axis 27
    # (as the forward) and 3 x 19 (the forward's 3 x 16 and the wider padding's taps):
    # 2 · 2 · 4 · 6 · 27 · 57 = 147,744
    grad = jax.jit(jax.grad(lambda a, b: jnp.sum(conv(a, b) ** 2), argnums=(0, 1)))
    profile = rl.Profiler(hw=ROOMY)(grad, a, b)
    assert not profile.unpriced
    convs = sorted(r.flops / r.count for r in profile.rows if "conv" in r.op)
    assert convs == [124_416, 124_416, 2 * 2 * 4 * 6 * 27 * 57]


def test_a_loop_counts_its_own_time_apart_from_its_body() -> None:
    """fori_loop(0, 5, tanh(v) * 2): the body's fusion runs 5 times a call, each a row's
    call; the while op's own time (outside its body) is named, never priced twice."""
    def loop(a: Any) -> Any:
        return jax.lax.fori_loop(0, 5, lambda i, v: jnp.tanh(v) * 2.0, a)

    x = np.ones((256, 256), np.float32)
    profile = rl.Profiler(hw=ROOMY, repeats=2)(jax.jit(loop), x)
    body = max(profile.rows, key=lambda r: r.flops)
    assert body.count == 5 and body.flops == 5 * 2 * 256 * 256
    loops = [u for u in profile.unpriced if u.name.startswith("while")]
    assert loops and "rows of their own" in loops[0].reason
    # the loop's span holds its body's five runs: counted whole it would hold more than them
    assert loops[0].seconds < body.measured
    assert profile.total == pytest.approx(profile.priced + sum(
        u.seconds for u in profile.unpriced))


def test_a_jax_trace_is_kept_and_reads_back_the_same(tmp_path: Path) -> None:
    args = _arrays(*MLP_ARGS)
    kept = tmp_path / "mlp.xplane.pb"
    live = rl.Profiler(hw=ROOMY, trace_to=kept)(jax.jit(mlp), *args)
    again = rl.read_trace(kept, hw=ROOMY)
    assert {(r.op, r.flops, r.bytes) for r in again.rows} == {
        (r.op, r.flops * 5, r.bytes * 5) for r in live.rows}  # 5 repeats, read as one
    with pytest.raises(ProfileError, match="xplane.pb for a JAX call"):
        rl.Profiler(hw=ROOMY, trace_to=tmp_path / "t.json")(jax.jit(mlp), *args)
    torch = pytest.importorskip("torch")
    with pytest.raises(ProfileError, match="chrome trace"):
        rl.Profiler(hw=ROOMY, trace_to=kept)(torch.relu, torch.ones(4))


# -- traces from files --------------------------------------------------------------------------


def test_a_cpu_trace_prices_each_fusion_at_its_boundary() -> None:
    """The recorded MLP: three calls of four fusions. A fusion's bytes are its operands
    and result: x@w1 reads 64x256 and 256x512 and writes 64x512 fp32; the bias-ReLU fusion
    reads 64x512 and 512, writes 64x512, and does 2 FLOPs (add, max) an element."""
    profile = rl.read_trace(CPU_MLP, hw=ROOMY)
    rows = {r.op: r for r in profile.rows}
    assert set(rows) == {"ynn_fusion.1", "broadcast_maximum_fusion", "ynn_fusion",
                         "broadcast_add_fusion"}
    assert all(r.count == 3 for r in rows.values()) and not profile.unpriced
    assert rows["ynn_fusion.1"].bytes == 3 * 4 * (64 * 256 + 256 * 512 + 64 * 512)
    assert rows["ynn_fusion.1"].flops == 3 * 2 * 64 * 256 * 512
    assert rows["broadcast_maximum_fusion"].bytes == 3 * 4 * (64 * 512 + 512 + 64 * 512)
    assert rows["broadcast_maximum_fusion"].flops == 3 * 2 * 64 * 512
    assert "dot_general" in rows["ynn_fusion.1"].kernels  # the jaxpr op it came from
    with pytest.raises(ProfileError, match="--hw"):
        rl.read_trace(CPU_MLP)  # XLA:CPU names no chip


def test_a_public_gpu_trace_is_priced_on_the_chip_it_names() -> None:
    """TraceLens's MI300X trace of jitted bf16 GEMMs (hipBLASLt custom calls) and
    broadcasts: the chip from the device plane (AMD, gfx 9.4, 192 GiB), each GEMM's FLOPs
    2·M·N·K from its operands' shapes, and no real kernel faster than its bound."""
    profile = rl.read_trace(MI300X)
    assert profile.hw == "mi300x" and profile.on_device
    assert profile.priced_share == pytest.approx(1.0)
    planes = read_space(MI300X)
    meta = next(p for p in planes if p.name == "/host:metadata")
    gemms = [r for r in profile.rows if r.op.endswith("custom-call.1")]
    assert len(gemms) == 5
    for name, stats in meta.metadata.items():
        module = parse_module(stats["Hlo Proto"], name)
        call = module.by_name.get("custom-call.1")
        if call is None:
            continue
        (m, k), (_, n) = (op.arrays[0].dims for op in module.operands(call))  # type: ignore[union-attr]
        row = next(r for r in gemms if r.shapes.startswith(f"{m}x{n}bf16")
                   and r.flops == 3 * 2 * m * n * k)
        assert row.regime == "compute" and row.precision == "matrix:bf16"
        # bf16 operands read and result written, three calls; hipBLASLt's s8 workspace
        # (the custom call's second result) is scratch, not charged
        assert call.tuple_shape and row.bytes == 3 * 2 * (m * k + k * n + m * n)
    assert not profile.faster
    best = max(gemms, key=lambda r: r.flops)  # 8192^3: hipBLASLt's best kernel
    assert best.efficiency is not None and 0.5 < best.efficiency <= 1


def test_a_pool_is_priced_as_trace_prices_it() -> None:
    """A 3 x 3 max pool, stride 2, over 2 x 32 x 32 x 16 (NHWC): 8 comparisons a window
    (window - 1), 2 x 15 x 15 x 16 windows."""
    def pool(a: Any) -> Any:
        return jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                                     "VALID")

    (a,) = _arrays((2, 32, 32, 16))
    profile = rl.Profiler(hw=ROOMY)(jax.jit(pool), a)
    assert not profile.unpriced
    flops = sum(r.flops for r in profile.rows)
    assert flops == float(rl.trace(pool, a).flops) == 8 * 2 * 15 * 15 * 16


def test_a_public_gpu_convolution_is_priced_over_every_tap() -> None:
    """TraceLens's MI300X trace of a 3-D convolution (MIOpen through XLA's cuDNN custom
    call, ``__cudnn$convForward``): input 1 x 16 x 32 x 60 x 104 bf16, kernel 5120 x 16 x
    1 x 2 x 2, strides 1, 2, 2, padding 1 on every side, output 1 x 5120 x 34 x 31 x 53.
    Every tap of every output element, padding included, as torch's counter and ``trace()``
    of the same convolution count it (docs/bounds.md): 2 · 16 · 5120 · (1 · 2 · 2) · (34 ·
    31 · 53) = 3.661e10 FLOPs a call (the taps on the input alone, XLA's count: 3.27e10)."""
    profile = rl.read_trace(DATA / "mi300x_tracelens_jax08_conv.xplane.pb")
    assert profile.priced_share == pytest.approx(1.0) and not profile.faster
    (conv,) = [r for r in profile.rows if r.op.endswith("cudnn-conv.1")]
    assert conv.flops == conv.count * 2 * 16 * 5120 * 4 * (34 * 31 * 53) == conv.count * (
        36_609_720_320)
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        torch.nn.functional.conv3d(torch.zeros(1, 16, 32, 60, 104, device="meta"),
                                   torch.zeros(5120, 16, 1, 2, 2, device="meta"),
                                   stride=(1, 2, 2), padding=1)
    assert conv.flops == conv.count * counter.get_total_flops()
    # its bf16 input and kernel read, its output written; the 7 MB workspace not charged
    assert conv.bytes == conv.count * 2 * (16 * 32 * 60 * 104 + 5120 * 16 * 4
                                           + 5120 * 34 * 31 * 53)


def test_the_cli_reads_a_jax_trace_directory_and_gates_on_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_roofline.cli import main

    run = tmp_path / "plugins" / "profile" / "2026_01_01"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(CPU_MLP.read_bytes())
    assert main(["profile", str(tmp_path), "--hw", "h100"]) == 0
    out = capsys.readouterr().out
    assert "host.xplane.pb on h100-sxm" in out and "ynn_fusion.1(64x512f32)" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert main(["profile", str(MI300X), "--json", "--min-kernel-efficiency", "0.99"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["hw"] == "mi300x" and report["failures"]


def test_a_perfetto_trace_is_read_through_the_xspace_beside_it(tmp_path: Path) -> None:
    import gzip

    perfetto = gzip.compress(json.dumps({"traceEvents": [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "X", "pid": 1, "tid": 2, "ts": 1, "dur": 5, "name": "ynn_fusion",
         "args": {"hlo_op": "ynn_fusion", "hlo_module": "jit_mlp"}}]}).encode())
    (tmp_path / "vm.trace.json.gz").write_bytes(perfetto)
    with pytest.raises(ProfileError, match=r"perfetto trace.*\.xplane\.pb"):
        rl.read_trace(tmp_path / "vm.trace.json.gz", hw=ROOMY)
    (tmp_path / "vm.xplane.pb").write_bytes(CPU_MLP.read_bytes())
    profile = rl.read_trace(tmp_path / "vm.trace.json.gz", hw=ROOMY)
    assert len(profile.rows) == 4 and "vm.xplane.pb" in profile.notes[0]


def test_each_reader_names_the_others_trace(tmp_path: Path) -> None:
    from pytest_roofline.profiling.jax.jax_run import read_xplane

    torch_trace = tmp_path / "torch.json"
    torch_trace.write_text(json.dumps({"traceEvents": []}))
    with pytest.raises(ProfileError, match="PyTorch profiler trace"):
        read_xplane(torch_trace, hw=ROOMY)
    # an XSpace under any name goes to the JAX reader, never to the JSON parser
    renamed = tmp_path / "trace.json"
    renamed.write_bytes(CPU_MLP.read_bytes())
    assert len(rl.read_trace(renamed, hw=ROOMY).rows) == 4


def test_a_trace_without_executed_ops_or_programs_says_what_to_record() -> None:
    from pytest_roofline.profiling.jax import jax_trace

    planes = read_space(CPU_MLP)
    # the ops' events cut out: what a trace of XLA:CPU below host_tracer_level 3 may hold
    no_ops = jax_trace.collect([p for p in planes if p.name != "/host:CPU"], "no-ops")
    with pytest.raises(ProfileError, match="host_tracer_level = 3"):
        jax_trace.build(no_ops, ROOMY, source="no-ops")
    # a GPU's kernels without their op's name: the host's launches are no kernel times
    gpu = read_space(MI300X)
    for plane in gpu:
        if plane.name.startswith("/device:"):
            for event in plane.events:
                event.stats.pop("hlo_op", None)
    with pytest.raises(ProfileError, match="device kernels name no HLO op"):
        jax_trace.build(jax_trace.collect(gpu, "unnamed"), ROOMY, source="unnamed")
    # the executed ops without the compiled programs: the HLO protos cut out
    no_hlo = jax_trace.collect([p for p in planes if p.name != "/host:metadata"], "no-hlo")
    with pytest.raises(ProfileError, match="holds no compiled program"):
        jax_trace.build(no_hlo, ROOMY, source="no-hlo")


@pytest.mark.parametrize("content", [b"", b"\x0a", b"\x0a\x05\x12\x03abc", b"x" * 100,
                                     b"{\"traceEvents\": []}", b"\x1f\x8b\x08\x00"])
def test_bad_xspace_files_are_one_line_errors(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(content)
    with pytest.raises(rl.RooflineError) as info:
        rl.read_trace(path, hw=ROOMY)
    assert "\n" not in str(info.value) and "bad.xplane.pb" in str(info.value)
    with pytest.raises(ProfileError, match="does not exist"):
        rl.read_trace(tmp_path / "missing.xplane.pb", hw=ROOMY)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_read_as_planes_or_one_error(raw: bytes) -> None:
    try:
        planes = parse_space(raw)
    except XPlaneError:
        return
    assert all(isinstance(p.name, str) for p in planes)


_REAL = CPU_MLP.read_bytes()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(_REAL)), st.integers(0, 255), st.integers(0, len(_REAL) - 1))
def test_a_cut_or_flipped_real_trace_reads_or_fails_in_one_line(cut: int, byte: int,
                                                                 where: int) -> None:
    from pytest_roofline.profiling.jax import jax_trace

    raw = bytearray(_REAL[:cut])
    if where < len(raw):
        raw[where] = byte
    try:
        trace = jax_trace.collect(parse_space(bytes(raw)), "cut")
        profile = jax_trace.build(trace, ROOMY, source="cut")
    except (XPlaneError, ProfileError) as exc:
        assert "\n" not in str(exc)
        return
    assert all(math.isfinite(r.bound) and r.bound >= 0 for r in profile.rows)


# -- in a test: min_kernel_efficiency and the guard -----------------------------------------------


PLUGIN_TESTS = """
import jax, jax.numpy as jnp, pytest

def mlp(x, w1, w2):
    return jnp.maximum(x @ w1, 0.0) @ w2

def args():
    return jnp.ones((64, 128)), jnp.ones((128, 256)), jnp.ones((256, 128))

@pytest.mark.roofline(hw="fast.yaml", min_kernel_efficiency={"*dot_general*": 0.5})
def test_below(roofline):
    assert roofline.profile(jax.jit(mlp), *args()).rows

@pytest.mark.roofline(hw="fast.yaml", min_kernel_efficiency={"*softmax*": 0.5})
def test_no_kernel_matches(roofline):
    roofline.profile(jax.jit(mlp), *args())

@pytest.mark.roofline(hw="slow.yaml")
def test_faster(roofline):
    roofline.profile(jax.jit(mlp), *args())
"""


def test_min_kernel_efficiency_judges_jax_rows_as_torch_rows(
        pytester: pytest.Pytester) -> None:
    """The chips are made up: one a million times faster than anything real, one a million
    times slower, so no verdict turns on noise."""
    from importlib.metadata import entry_points

    from wrapped import ours_too_wide, unwrap

    chip = ("name: {name}\ndefault_dtype: fp32\nvector_fallback: matrix\n"
            "sources: {{made-up: a chip for tests}}\n"
            "memory: {{capacity: 80 GB, bandwidth: {bandwidth}, source: made-up}}\n"
            "matrix: {{fp32: {peak}, source: made-up}}\n")
    pytester.makefile(".yaml", fast=chip.format(name="fastchip", bandwidth="1 PB/s",
                                                peak="1 EFLOP/s"),
                      slow=chip.format(name="slowchip", bandwidth="1 MB/s",
                                       peak="1 GFLOP/s"))
    pytester.makepyfile(test_jax_kernels=PLUGIN_TESTS)
    installed = any(ep.value == "pytest_roofline.plugin.hooks"
                    for ep in entry_points(group="pytest11"))
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark",
        "-p", "no:randomly", *([] if installed else ["-p", "pytest_roofline.plugin.hooks"]),
        "--roofline-json=report.json")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 2 and outcomes.get("passed") == 1
    assert not ours_too_wide(result.outlines)
    text = "\n".join(unwrap(result.outlines))
    assert re.search(r"roofline: kernel ynn_fusion[.\d]*\(64x\d+f32\) ran at \S+ of its "
                     r"roof on fastchip, below 50%", text)
    assert "roofline: faster than physics on slowchip: " in text
    assert "Profiled kernels losing the most time" in text
    report = json.loads((pytester.path / "report.json").read_text())
    records = {r["nodeid"].split("::")[1]: r for r in report["results"]}
    rows = records["test_below"]["profile"][0]["rows"]
    assert {r["op"].split(".")[0] for r in rows} >= {"ynn_fusion"}
    assert records["test_no_kernel_matches"]["outcome"] == "passed"


# -- every way a JAX call is written --------------------------------------------------------


def _mlp_params(params: dict[str, Any], x: Any) -> Any:
    return jnp.maximum(x @ params["w1"], 0.0) @ params["w2"]


def _params() -> tuple[dict[str, Any], Any]:
    return {"w1": jnp.ones((64, 128)), "w2": jnp.ones((128, 32))}, jnp.ones((16, 64))


def test_a_call_on_a_pytree_a_partial_or_compiled_ahead_of_time_is_profiled() -> None:
    # the two dots of a 16x64 @ 64x128 and 16x128 @ 128x32 MLP: 2*16*64*128 + 2*16*128*32
    # = 393,216 FLOPs a call, whichever way the call is written
    import functools

    params, x = _params()
    dots = 2 * 16 * 64 * 128 + 2 * 16 * 128 * 32
    for fn, args in ((lambda d: _mlp_params(d["p"], d["x"]), ({"p": params, "x": x},)),
                     (functools.partial(_mlp_params, params), (x,)),
                     (jax.jit(_mlp_params).lower(params, x).compile(), (params, x))):
        profile = rl.Profiler(hw=ROOMY, repeats=2)(fn, *args)
        assert profile.rows and profile.priced_share == pytest.approx(1.0)
        matrix = sum(r.flops for r in profile.rows if "dot" in r.op or "dot" in str(r.kernels))
        assert matrix == pytest.approx(dots, rel=0.01), [r.label for r in profile.rows]


def test_a_call_that_ran_nothing_is_refused_never_an_empty_profile() -> None:
    pytest.importorskip("torch")
    with pytest.raises(ProfileError, match=r"ran no torch op the profiler records"):
        rl.Profiler(hw=ROOMY)(lambda: sum(range(10)))


def test_an_op_xla_cpu_runs_as_two_events_is_one_call_an_execution() -> None:
    # XLA:CPU runs a sort as a copy then the sort, both events naming the sort's HLO op:
    # read per event, the sort was counted twice a call, each event judged against the
    # whole sort's bound; the events of one execution (its run_id) are one call
    x = jnp.arange(1 << 16, dtype=jnp.float32)[::-1]
    profile = rl.Profiler(hw=ROOMY, repeats=4)(jax.jit(lambda v: jnp.sort(v) * 2), x)
    [row] = [r for r in profile.rows if r.op.startswith("sort")]
    assert row.count == 1 and not row.faster
    from pytest_roofline.profiling.jax import jax_trace

    events = [e for e, _ in jax_trace.read(_kept_sort(x)).ops
              if str(e.stats.get("hlo_op")).startswith("sort")]
    runs = {e.stats["run_id"] for e in events}
    assert len(runs) == 4 and len(events) == 8  # two events an execution, one call each


def _kept_sort(x: Any) -> Path:
    import tempfile

    folder = Path(tempfile.mkdtemp())
    path = folder / "sort.xplane.pb"
    rl.Profiler(hw=ROOMY, repeats=4, trace_to=path)(jax.jit(lambda v: jnp.sort(v) * 2), x)
    return path


def test_a_slice_at_a_fusions_root_reads_only_what_it_keeps() -> None:
    # (x + y + b)[:, 0] on 4096 x 4096 fp32 (a ViT's class token): XLA fuses the slice into
    # the adds, which then run on column 0 alone. Charged: 4096 elements of x and of y
    # (16 kB each), b whole (a broadcast operand, 16 kB) and the 16 kB written: 65,536 B,
    # where the whole inputs are 134 MB (what XLA's cost analysis charges: never more)
    x, y, b = jnp.ones((4096, 4096)), jnp.ones((4096, 4096)), jnp.ones((4096,))
    fn = jax.jit(lambda x, y, b: (x + y + b)[:, 0])
    profile = rl.Profiler(hw=ROOMY, repeats=2)(fn, x, y, b)
    [row] = profile.rows
    assert row.bytes == 4 * 4096 * 4
    assert row.bytes <= fn.lower(x, y, b).compile().cost_analysis()["bytes accessed"]


def test_a_segment_sum_scatter_writes_no_more_than_its_buffer() -> None:
    # segment_sum of 16,384 x 8 fp32 rows into 1,024 segments: the scatter reads its
    # 16,384 int32 ids (64 kB) and its updates (512 kB), and writes at most the 1,024 x 8
    # buffer (32 kB), updated in place (not read): 622,592 B. Writing every update (512 kB)
    # charged 1,114,112 B, above XLA's cost analysis
    rng = np.random.default_rng(0)
    data = jnp.ones((16384, 8))
    ids = jnp.asarray(rng.integers(0, 1024, 16384), dtype=jnp.int32)
    fn = jax.jit(lambda d, i: jax.ops.segment_sum(d, i, num_segments=1024))
    profile = rl.Profiler(hw=ROOMY, repeats=2)(fn, data, ids)
    [row] = [r for r in profile.rows if "scatter" in r.op]
    assert row.bytes == 16384 * 4 + 16384 * 8 * 4 + 1024 * 8 * 4
    assert row.bytes <= fn.lower(data, ids).compile().cost_analysis()["bytes accessed"]

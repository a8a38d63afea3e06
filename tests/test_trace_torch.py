"""Tracing PyTorch code: a Llama-style decoder block (tests/llama_block.py, ordinary torch
modules) against torch's own FlopCounterMode, against ``models`` and against ``ops``.

Expected numbers come from torch.utils.flop_counter (the matmul family), from the ``models``
and ``ops`` formulas for the same shapes (vector ops, causal attention), and from the shapes
themselves (bytes of one product). Tolerances are stated where a figure is not exact.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from llama_block import Model, inputs  # noqa: E402

import pytest_roofline as rl  # noqa: E402
from pytest_roofline import models, ops  # noqa: E402
from pytest_roofline.tracing import TraceError, Tracer  # noqa: E402

LLAMA3_8B = {"hidden": 4096, "heads": 32, "kv_heads": 8, "intermediate": 14336}
#: models' names of one decoder layer's kernels
LAYER = ("attn_norm", "qkv_proj", "attention", "attention.softmax", "o_proj", "mlp_norm",
         "gate_up_proj", "act", "down_proj")


@pytest.fixture(scope="module")
def block() -> Model:
    return Model(1, device="meta", dtype=torch.bfloat16, **LLAMA3_8B)


def _args(batch: int, seq: int, context: int) -> tuple[object, ...]:
    return inputs(batch, seq, context, hidden=4096, heads=32, kv_heads=8)


def _matrix(workload: rl.Workload, attention: bool) -> float:
    return sum(k.total_flops for k in workload.kernels if k.unit == "matrix"
               and ("attention" in k.name) == attention)


def _torch_counts(module: Model, args: tuple[object, ...]) -> dict[str, float]:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        module(*args)
    counts = counter.get_flop_counts()["Global"]
    return {str(op).split(".")[-1]: float(n) for op, n in counts.items()}


@pytest.mark.parametrize(("batch", "seq", "context"), [(2, 256, 256), (4, 1, 1024),
                                                       (1, 64, 512)])
@pytest.mark.parametrize("enable_gqa", [True, False])
def test_llama_block_matmul_flops_equal_torch_flop_counter(block, batch, seq, context,
                                                           enable_gqa, monkeypatch):
    from llama_block import Attention

    monkeypatch.setattr(Attention, "enable_gqa", enable_gqa)
    args = _args(batch, seq, context)
    traced = rl.trace(block, *args)
    counts = _torch_counts(block, args)
    # torch counts the projections as mm, exactly as ops does (2 FLOPs per MAC)
    assert _matrix(traced, attention=False) == counts.pop("mm")
    # torch's counter sees SDPA on meta as its decomposition (two bmm over every pair) and
    # ignores is_causal; the trace counts the scored pairs only (top-left alignment)
    full = counts.pop("bmm")
    assert not counts, counts  # nothing else counted by torch
    q, kv = seq, context
    if seq > 1:  # is_causal=True in the block
        pairs = q * (q + 1) / 2 + (q - min(q, kv)) * kv if q <= kv else None
        assert _matrix(traced, attention=True) == pytest.approx(full * pairs / (q * kv),
                                                                rel=1e-12)
    else:
        assert _matrix(traced, attention=True) == full


@pytest.mark.parametrize(("phase", "batch", "seq"), [("prefill", 1, 2048), ("prefill", 4, 512),
                                                     ("decode", 8, 4096), ("decode", 1, 128)])
def test_llama_block_total_flops_within_2_percent_of_models(block, phase, batch, seq):
    model = models.load("llama-3-8b")
    if phase == "prefill":
        declared = model.prefill(batch, seq)
        traced = rl.trace(block, *_args(batch, seq, seq))
    else:
        declared = model.decode(batch, seq)
        traced = rl.trace(block, *_args(batch, 1, seq))
    layer = sum(k.flops for k in declared.kernels if k.name in LAYER)  # one layer's worth
    assert traced.flops == pytest.approx(layer, rel=0.02)
    # the matrix family alone agrees to float rounding: same shapes, same convention
    declared_matrix = sum(k.flops for k in declared.kernels if k.name in LAYER
                          and k.unit == "matrix")
    assert _matrix(traced, True) + _matrix(traced, False) == pytest.approx(declared_matrix,
                                                                           rel=1e-9)


class FusedBlock(torch.nn.Module):
    """The same layer written another way: fused QKV and gate/up weights split after the
    product, torch's nn.RMSNorm, K and V repeated to every head, causal attention by an
    explicit call per phase."""

    def __init__(self, hidden=4096, heads=32, kv_heads=8, inter=14336):
        super().__init__()
        self.h, self.kv, self.d, self.inter = heads, kv_heads, hidden // heads, inter
        meta = {"device": "meta", "dtype": torch.bfloat16}
        self.norms = torch.nn.ModuleList(torch.nn.RMSNorm(hidden, **meta) for _ in range(2))
        self.wqkv = torch.nn.Parameter(torch.empty((heads + 2 * kv_heads) * self.d, hidden,
                                                   **meta))
        self.wo = torch.nn.Parameter(torch.empty(hidden, hidden, **meta))
        self.w13 = torch.nn.Parameter(torch.empty(2 * inter, hidden, **meta))
        self.w2 = torch.nn.Parameter(torch.empty(hidden, inter, **meta))

    def forward(self, x):
        F = torch.nn.functional
        qkv = F.linear(self.norms[0](x), self.wqkv)
        q, k, v = qkv.split([self.h * self.d, self.kv * self.d, self.kv * self.d], dim=-1)
        q = q.unflatten(-1, (self.h, self.d)).transpose(1, 2)
        k, v = (t.unflatten(-1, (self.kv, self.d)).transpose(1, 2)
                .repeat_interleave(self.h // self.kv, dim=1) for t in (k, v))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + F.linear(o.transpose(1, 2).flatten(2), self.wo)
        gate, up = F.linear(self.norms[1](x), self.w13).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, self.w2)


@pytest.mark.parametrize(("batch", "seq"), [(1, 2048), (4, 256)])
def test_a_block_written_another_way_agrees_too(batch, seq):
    block = FusedBlock()
    x = torch.empty(batch, seq, 4096, device="meta", dtype=torch.bfloat16)
    traced = rl.trace(block, x)
    counts = _torch_counts(block, (x,))
    assert _matrix(traced, attention=False) == counts["mm"]
    pairs = seq * (seq + 1) / 2
    assert _matrix(traced, attention=True) == counts["bmm"] * pairs / (seq * seq)
    declared = models.load("llama-3-8b").prefill(batch, seq)
    layer = sum(k.flops for k in declared.kernels if k.name in LAYER)
    assert traced.flops == pytest.approx(layer, rel=0.02)
    # nn.RMSNorm is one fused kernel (as ops.rmsnorm), not its fp32 decomposition
    assert "norms.0.rms_norm" in {k.name for k in traced.kernels}


def test_llama_block_is_memory_bound_decoding_and_compute_bound_prefilling(block):
    decode = rl.analyze(rl.trace(block, *_args(1, 1, 4096)), "h100")
    prefill = rl.analyze(rl.trace(block, *_args(1, 2048, 2048)), "h100")
    assert decode.regime == "memory"
    assert prefill.regime == "compute"


def test_kernels_are_named_after_the_op_and_the_module_path(block):
    names = [k.name for k in rl.trace(block, *_args(1, 4, 4)).kernels]
    for expected in ("layers.0.mlp.up_proj.mm", "layers.0.self_attn.q_proj.mm",
                     "layers.0.self_attn.scaled_dot_product_attention",
                     "layers.0.self_attn.scaled_dot_product_attention.softmax",
                     "layers.0.input_layernorm.rsqrt", "layers.0.mlp.silu"):
        assert expected in names
    assert not any(n.endswith((".view", ".t", ".transpose", "._unsafe_view")) for n in names)


def test_modules_not_reached_from_fn_are_named_by_their_class():
    from pytest_roofline.tracing._torch import Session

    layer = torch.nn.Sequential(torch.nn.Linear(8, 8, device="meta"), torch.nn.ReLU())
    with Session({}, None) as recorder:
        layer(torch.empty(2, 8, device="meta"))
    assert [k.name for k in recorder.kernels] == ["Sequential.Linear.addmm",
                                                  "Sequential.ReLU.relu"]


def test_one_product_moves_its_operands_once_as_ops_matmul_counts():
    a = torch.empty(64, 256, device="meta", dtype=torch.bfloat16)
    b = torch.empty(256, 512, device="meta", dtype=torch.bfloat16)
    (kernel,) = rl.trace(torch.mm, a, b).kernels
    expected = ops.matmul(64, 256, 512)
    assert (kernel.flops, kernel.bytes, kernel.unit, kernel.dtype) == (
        expected.flops, expected.bytes, "matrix", "bf16")


@pytest.mark.parametrize(("groups", "unit"), [(1, "matrix"), (2, "matrix"), (16, "vector")])
def test_convolutions_count_as_ops_conv2d_and_torch(groups, unit):
    from torch.utils.flop_counter import FlopCounterMode

    conv = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=groups, bias=False,
                           device="meta", dtype=torch.bfloat16)
    x = torch.empty(4, 16, 56, 56, device="meta", dtype=torch.bfloat16)
    (kernel,) = rl.trace(conv, x).kernels
    declared = ops.conv2d(4, 16, 32, 56, 3, stride=2, padding=1, groups=groups)
    with FlopCounterMode(display=False) as counter:
        conv(x)
    assert kernel.flops == declared.flops == counter.get_total_flops()  # padded taps too
    assert (kernel.bytes, kernel.unit) == (declared.bytes, unit)
    assert declared.kernels[0].unit == unit  # depthwise runs on the vector units


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 300), k=st.integers(1, 300), n=st.integers(1, 300),
       batch=st.sampled_from([(), (3,), (2, 5)]))
def test_any_product_counts_as_ops_matmul(m, k, n, batch):
    a = torch.empty(*batch, m, k, device="meta", dtype=torch.bfloat16)
    b = torch.empty(*batch, k, n, device="meta", dtype=torch.bfloat16)
    traced = rl.trace(torch.matmul, a, b)
    declared = ops.matmul(a, b)
    assert (traced.flops, traced.bytes) == (declared.flops, declared.bytes)


def test_real_cpu_tensors_count_like_meta_tensors():
    layer = torch.nn.Linear(32, 16)
    x = torch.randn(8, 32)
    real = rl.trace(layer, x)
    meta = rl.trace(layer.to("meta"), x.to("meta"))
    assert [(k.name, k.flops, k.bytes) for k in real.kernels] == [
        (k.name, k.flops, k.bytes) for k in meta.kernels]
    (kernel,) = real.kernels  # addmm: the bias add rides along, as in torch's count
    assert kernel.name == "addmm" and kernel.flops == 2 * 8 * 32 * 16
    assert kernel.bytes == (8 * 32 + 32 * 16 + 16 + 8 * 16) * 4


def test_fake_tensors_count_like_meta_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        layer = torch.nn.Linear(32, 16)
        fake = rl.trace(layer, torch.empty(8, 32))
    meta = rl.trace(torch.nn.Linear(32, 16, device="meta"), torch.empty(8, 32, device="meta"))
    assert [(k.name, k.flops, k.bytes) for k in fake.kernels] == [
        (k.name, k.flops, k.bytes) for k in meta.kernels]


def test_causal_attention_counts_the_scored_pairs_as_ops_attention():
    q = torch.empty(2, 8, 128, 64, device="meta", dtype=torch.float16)
    k = torch.empty(2, 2, 128, 64, device="meta", dtype=torch.float16)
    v = torch.empty(2, 2, 128, 64, device="meta", dtype=torch.float16)

    def attend(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                enable_gqa=True)

    traced = rl.trace(attend, q, k, v)
    declared = ops.attention(2, 128, 128, 8, 2, 64, causal=True, dtype="fp16")
    assert [(k.unit, k.flops, k.bytes) for k in traced.kernels] == [
        (k.unit, k.flops, k.bytes) for k in declared.kernels]


def test_a_fused_attention_op_reached_below_the_function_counts_the_same():
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    fused = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    below = rl.trace(lambda q, k, v: fused(q, k, v, is_causal=True)[0], q, k, v)
    above = rl.trace(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True), q, k, v)
    assert [(k.unit, k.flops, k.bytes) for k in below.kernels] == [
        (k.unit, k.flops, k.bytes) for k in above.kernels]


def test_torch_is_causal_aligns_queries_top_left():
    # 4 queries, 10 keys: torch's is_causal lets query i see keys 0..i: 1+2+3+4 = 10 pairs
    q = torch.empty(1, 1, 4, 16, device="meta")
    k = torch.empty(1, 1, 10, 16, device="meta")
    traced = rl.trace(lambda q, k: torch.nn.functional.scaled_dot_product_attention(
        q, k, k, is_causal=True), q, k)
    assert traced.kernels[0].flops == 4 * 10 * 16
    assert traced.kernels[1].flops == 5 * 10


def test_a_backward_pass_traces_too_three_products_per_linear_layer():
    layer = torch.nn.Linear(64, 32, bias=False, device="meta")
    x = torch.empty(8, 64, device="meta", requires_grad=True)
    step = rl.trace(lambda x: layer(x).sum().backward(), x)
    products = [k for k in step.kernels if k.unit == "matrix"]
    # forward, input gradient and weight gradient: 3x the forward's FLOPs (the 6·N·T rule)
    assert [k.flops for k in products] == [2 * 8 * 64 * 32] * 3
    assert products[0].name == "mm" and products[1].name == "mm"


def test_vector_ops_count_as_ops_vector():
    x = torch.empty(64, 1000, device="meta", dtype=torch.bfloat16)
    (softmax,) = rl.trace(lambda x: torch.softmax(x, -1), x).kernels
    assert (softmax.flops, softmax.bytes) == (ops.softmax(64, 1000).flops,
                                              ops.softmax(64, 1000).bytes)
    norm = torch.nn.LayerNorm(1000, device="meta", dtype=torch.bfloat16)
    (layernorm,) = rl.trace(norm, x).kernels
    assert layernorm.flops == ops.layernorm(64, 1000).flops
    # torch's own RMSNorm decomposes on meta (fp32 upcast, pow, mean, rsqrt, two muls); it is
    # priced at F.rms_norm's call as the one fused kernel ops.rmsnorm prices: 4 FLOPs an
    # element, x read and written once in bf16 plus the weight (2·64·1000 + 1000)·2 bytes
    rms = rl.trace(torch.nn.RMSNorm(1000, device="meta", dtype=torch.bfloat16), x)
    assert rms.flops == ops.rmsnorm(64, 1000).flops == 4 * 64 * 1000
    assert rms.bytes == ops.rmsnorm(64, 1000).bytes == (2 * 64 * 1000 + 1000) * 2


def test_vector_products_run_on_the_vector_units():
    x = torch.empty(4096, device="meta", dtype=torch.bfloat16)
    y = torch.empty(4096, device="meta", dtype=torch.bfloat16)
    a = torch.empty(1024, 4096, device="meta", dtype=torch.bfloat16)
    dot, mv = rl.trace(lambda x, y, a: (torch.dot(x, y), torch.mv(a, x)), x, y, a).kernels
    assert (dot.unit, dot.flops, dot.bytes) == ("vector", ops.dot(4096).flops,
                                                ops.dot(4096).bytes)
    assert (mv.unit, mv.flops) == ("vector", 2 * 1024 * 4096)


def test_index_mask_and_copy_ops_move_bytes_only():
    x = torch.empty(16, 32, device="meta")
    mask = torch.empty(16, 32, device="meta", dtype=torch.bool)
    ids = torch.empty(8, device="meta", dtype=torch.int64)

    def f(x, mask, ids):
        return x.masked_fill(mask, 0.0), x[ids], x.t().contiguous(), torch.cat([x, x])

    kernels = rl.trace(f, x, mask, ids).kernels
    assert [k.flops for k in kernels] == [0.0] * len(kernels)
    fill = kernels[0]
    assert fill.bytes == 16 * 32 * (4 + 1 + 4)  # x and the mask read, the result written


def test_a_gather_reads_only_the_rows_it_gathers():
    table = torch.nn.Embedding(128256, 4096, device="meta", dtype=torch.bfloat16)
    ids = torch.empty(8, 3, device="meta", dtype=torch.int64)
    (lookup,) = rl.trace(table, ids).kernels
    # ids read (8 B each), 24 rows read and 24 rows written: never the 1 GB table
    assert (lookup.name, lookup.flops) == ("embedding", 0.0)
    assert lookup.bytes == 24 * 8 + 2 * 24 * 4096 * 2
    assert lookup.bytes == ops.embedding(24, 4096).bytes + 24 * 8


def test_a_cache_update_writes_the_new_positions_only():
    cache = torch.empty(1, 8, 4096, 128, device="meta", dtype=torch.bfloat16)
    new = torch.empty(1, 8, 1, 128, device="meta", dtype=torch.bfloat16)
    position = torch.empty(1, device="meta", dtype=torch.int64)

    def update(cache, new, position):
        cache[:, :, 7:8] = new                      # copy_ into a slice
        cache.index_copy_(2, position, new)         # a scatter

    copy, scatter = rl.trace(update, cache, new, position).kernels
    assert copy.bytes == 2 * 8 * 128 * 2            # read new, write its slot
    assert scatter.bytes == 8 + 2 * 8 * 128 * 2     # the index too


def test_integer_and_bool_arithmetic_is_priced_at_the_fp32_vector_peak():
    ids = torch.empty(1000, device="meta", dtype=torch.int64)
    (kernel,) = rl.trace(lambda i: i + 1, ids).kernels
    assert (kernel.unit, kernel.dtype, kernel.flops, kernel.bytes) == ("vector", "fp32",
                                                                      1000.0, 16000.0)


def test_a_dtype_override_prices_the_matrix_units_and_keeps_the_bytes():
    a = torch.empty(256, 256, device="meta", dtype=torch.float32)
    b = torch.empty(256, 256, device="meta", dtype=torch.float32)
    plain = rl.trace(torch.mm, a, b)
    tf32 = Tracer(dtype="tf32")(torch.mm, a, b)
    assert tf32.kernels[0].dtype == "tf32" and plain.kernels[0].dtype == "fp32"
    assert tf32.bytes == plain.bytes == 3 * 256 * 256 * 4
    q = torch.empty(1, 2, 16, 8, device="meta")
    products, softmax = Tracer(dtype="tf32")(
        torch.nn.functional.scaled_dot_product_attention, q, q, q).kernels
    assert (products.dtype, softmax.dtype) == ("tf32", "fp32")


def test_a_trace_inside_a_recording_is_counted_once():
    from pytest_roofline.tracing._torch import Session

    a = torch.empty(8, 8, device="meta")
    b = torch.empty(8, 8, device="meta")
    with Session({}, None) as outer:
        inner = rl.trace(torch.mm, a, b)
        torch.add(a, b)
    assert len(inner.kernels) == 1
    assert [k.name for k in outer.kernels] == ["add"]


def test_trace_and_measure_are_plain_functions_whatever_was_imported_first():
    import inspect

    import pytest_roofline.measuring
    import pytest_roofline.tracing as module

    assert not callable(module) and not callable(pytest_roofline.measuring)
    assert inspect.isfunction(rl.trace) and inspect.isfunction(rl.measure)
    assert list(inspect.signature(rl.trace).parameters) == ["fn", "args", "kwargs"]
    assert "Workload" in (rl.trace.__doc__ or "")
    assert "fn" in inspect.signature(rl.measure).parameters
    a = torch.empty(4, 4, device="meta")
    assert rl.trace(torch.mm, a, a).flops == 128


def test_errors_name_the_problem():
    with pytest.raises(TraceError, match="no torch tensor or jax array"):
        rl.trace(lambda x: x, 3)
    a = torch.empty(4, 4, device="meta")
    with pytest.raises(TraceError, match="fusion='none'"):
        Tracer(fusion="epilogue")(torch.mm, a, a)
    with pytest.raises(TraceError, match="fusion='fused'"):
        Tracer(fusion="fused")
    with pytest.raises(TraceError, match="ran no op"):
        rl.trace(lambda x: x.view(16), a)
    with pytest.raises(TraceError, match="must be callable"):
        rl.trace(a, a)


def test_the_dispatch_mode_keeps_its_method_out_of_dynamo():
    # The torch-private pieces of the recorder (tracing/_torch_compat.DispatchMode, the base of
    # tracing/_torch._Dispatch): the mode subclasses
    # torch.utils._python_dispatch.TorchDispatchMode and overrides its _should_skip_dynamo,
    # or torch wraps __torch_dispatch__ in torch._disable_dynamo (functools.wraps: a
    # __wrapped__ attribute), whose first call imports torch._dynamo (1-2 s a session). If
    # torch renames the hook, the override stops working and this fails.
    from torch.utils._python_dispatch import TorchDispatchMode

    from pytest_roofline.tracing._torch import _Dispatch

    assert issubclass(_Dispatch, TorchDispatchMode)
    assert callable(getattr(TorchDispatchMode, "_should_skip_dynamo", None))
    assert not hasattr(_Dispatch.__dict__["__torch_dispatch__"], "__wrapped__")

    class Plain(TorchDispatchMode):  # the same without the override: torch does wrap it
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    assert hasattr(Plain.__dict__["__torch_dispatch__"], "__wrapped__")


def test_a_pause_is_undone_when_its_body_raises() -> None:
    """``paused()`` and ``unpaused()`` restore the recorder's pauses on the way out of a
    body that raised, at every depth; an error inside a recorded call leaves the recorder
    recording."""
    from pytest_roofline.tracing._torch import Recorder

    recorder = Recorder({}, None)
    assert recorder.recording
    with pytest.raises(ValueError, match="inner"), recorder.paused():
        assert not recorder.recording
        with recorder.paused():
            raise ValueError("inner")
    assert recorder.recording and not recorder.is_paused
    with recorder.paused():
        with pytest.raises(ValueError, match="first"), recorder.unpaused():
            assert recorder.recording  # the one call a timing loop records
            raise ValueError("first")
        assert not recorder.recording  # the loop's other calls stay paused
    assert recorder.recording


def test_an_outer_recording_resumes_after_an_inner_trace_raised() -> None:
    """A trace inside a recorded body pauses the outer recorder; a trace whose function
    raises gives it back, so what the body runs next is recorded."""
    from pytest_roofline.tracing._torch import Session

    x = torch.ones(4, 4, device="meta")
    with Session({}, None) as outer:
        with pytest.raises(RuntimeError, match="inside"), Session({}, None) as inner:
            torch.mm(x, x)
            raise RuntimeError("inside")
        assert outer.recording and not outer.kernels  # the inner mm is not the outer's
        torch.mm(x, x)
    assert [k.name for k in inner.kernels] == [k.name for k in outer.kernels] == ["mm"]

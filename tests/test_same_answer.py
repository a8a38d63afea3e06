"""The same op, the same answer by every path: ``ops``, the torch tracer's table, the JAX
tracer's table, the shipped flash-attn formulas (``known_ops``), a recorded trace's op priced
by the profile (``profiling.torch.pricing``; a JAX profile's executed HLO op by
``profiling.jax.hlo_pricing``), the model graph, the planners and the hardware catalog. Each
test prices one set of shapes through every path that can take it and compares the OUTPUTS
(FLOPs, bytes, unit), so that a rule copied and changed in any one place fails here; each
also checks the count against a closed form written in the test."""

from __future__ import annotations

import pytest

import pytest_roofline as rl
from pytest_roofline import dtypes, ops
from pytest_roofline.engine.workload import Workload

torch = pytest.importorskip("torch")
F = torch.nn.functional

from pytest_roofline.profiling.torch import pricing  # noqa: E402
from pytest_roofline.tracing import known_ops  # noqa: E402

BF = "c10::BFloat16"


def meta(*shape: int, dtype: object = None) -> object:
    return torch.empty(*shape, dtype=dtype or torch.bfloat16, device="meta")


def totals(workload: object, unit: str | None = None) -> tuple[float, float]:
    """(FLOPs, bytes) of a workload's kernels (on *unit* only, where given)."""
    kernels = [k for k in workload.kernels if unit is None or k.unit == unit]
    return (sum(float(k.flops) * float(k.count) for k in kernels),
            sum(float(k.bytes) * float(k.count) for k in kernels))


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protocol buffer field (wire type 2)."""
    out = bytearray()
    for value in (number << 3 | 2, len(payload)):
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                break
    return bytes(out) + payload


def executed(fn: object, *args: object, opcode: str) -> object:
    """The HLO op *opcode* of *fn*'s program (the lowered module, before XLA's fusion passes,
    so one op is one instruction), priced as a JAX profile prices an executed op."""
    jax = pytest.importorskip("jax")
    from pytest_roofline.profiling.jax import hlo, hlo_pricing

    proto = jax.jit(fn).lower(*args).compiler_ir("hlo").as_serialized_hlo_module_proto()
    module = hlo.parse_module(_field(1, proto), "test")  # an HloProto: field 1, the module
    (op,) = [i for i in module.by_name.values() if i.opcode == opcode]
    result = hlo_pricing.price(module, op)
    assert not isinstance(result, str), (opcode, result)
    return result


def recorded(name: str, tensors: list[list[int]], rest: list[tuple[str, str]],
             dtype: str = BF) -> object:
    """A recorded op priced by the profile: tensors of *dtype*, then (type, value) scalars."""
    dims = [*tensors, *([[]] * len(rest))]
    types = (*([dtype] * len(tensors)), *(t for t, _ in rest))
    concrete = (*([""] * len(tensors)), *(v for _, v in rest))
    result = pricing.price(name, dims, types, concrete)
    assert not isinstance(result, str), (name, result)
    return result


# -- attention, forward and backward --------------------------------------------------------

B, H, S, D = 2, 8, 512, 64
PAIRS = B * H * S * (S + 1) // 2  # causal, every sequence and head
FORWARD = 4 * PAIRS * D  # Q·Kᵀ and P·V: 2·pairs·d each
BACKWARD = 2 * PAIRS * (3 * D + 2 * D)  # the scores recomputed, then dV, dP, dQ, dK
QKV = B * S * H * D * 2  # bytes of one of Q, K, V, O in bf16
LSE = B * H * S * 4  # the fp32 log-sum-exp


def _attention_forward_paths() -> dict[str, object]:
    # distinct tensors: one read each (a tensor passed twice is read once)
    q, k, v = (meta(B, H, S, D) for _ in range(3))
    qs, ks, vs = (meta(B, S, H, D) for _ in range(3))
    return {
        "ops": ops.attention(B, S, S, H, H, D, causal=True, dtype="bf16"),
        "torch sdpa": rl.trace(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
        "torch flash op": rl.trace(lambda: torch.ops.aten._flash_attention_forward(
            qs, ks, vs, None, None, S, S, 0.0, True, False)),
        "known_ops flash-attn": known_ops.flash_forward(qs, ks, vs, causal=True),
        "profile sdpa": recorded("aten::scaled_dot_product_attention", [[B, H, S, D]] * 3, [
            ("", ""), ("Scalar", "0."), ("Scalar", "True"), ("", ""), ("Scalar", "False")]),
        "profile flash op": recorded("aten::_flash_attention_forward", [[B, S, H, D]] * 3, [
            ("", ""), ("", ""), ("Scalar", str(S)), ("Scalar", str(S)), ("Scalar", "0."),
            ("Scalar", "True"), ("Scalar", "False")]),
    }


def test_attention_forward_is_one_answer_on_every_path() -> None:
    paths = _attention_forward_paths()
    for name, workload in paths.items():
        flops, _ = totals(workload, "matrix")
        softmax, _ = totals(workload, "vector")
        assert flops == FORWARD, name
        assert softmax == 5 * PAIRS, name  # 5 FLOPs a scored pair
    # bytes: Q, K, V read and O written, each once (flash-attn's formula adds its fp32
    # log-sum-exp, which it documents writing)
    for name in ("ops", "torch sdpa", "torch flash op", "profile sdpa", "profile flash op"):
        assert totals(paths[name])[1] == 4 * QKV, name
    assert totals(paths["known_ops flash-attn"])[1] == 4 * QKV + LSE


def test_the_model_graph_prices_attention_as_ops_does() -> None:
    # Llama-3-8B: 32 query heads of 128, 8 KV heads; one sequence of 1,024, causal
    heads, kv_heads, d, seq = 32, 8, 128, 1024
    step = rl.models.load("llama-3-8b").train_step(1, seq)
    by_name = {k.name: k for k in step.kernels}
    forward = ops.attention(1, seq, seq, heads, kv_heads, d, causal=True, dtype="bf16")
    pairs = heads * seq * (seq + 1) // 2
    (products,) = [k for k in forward.kernels if k.unit == "matrix"]
    assert float(by_name["attention"].flops) == float(products.flops) == 4 * pairs * d
    assert float(by_name["attention"].bytes) == float(products.bytes)
    # its backward: the one rule, as the torch tracer prices SDPA's backward op
    grad, q, out = (meta(1, heads, seq, d) for _ in range(3))
    k, v = meta(1, kv_heads, seq, d), meta(1, kv_heads, seq, d)
    lse = meta(1, heads, seq, dtype=torch.float32)
    traced = rl.trace(lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        grad, q, k, v, out, lse, 0.0, True))
    assert float(by_name["attention.bwd"].flops) == totals(traced, "matrix")[0] == (
        2 * pairs * (3 * d + 2 * d))
    assert float(by_name["attention.bwd.softmax"].flops) == totals(traced, "vector")[0] == (
        8 * pairs)  # the recomputed softmax (5) and dS = P·(dP - D) (3)
    # bytes: dO, Q, K, V, O and the fp32 log-sum-exp read; dQ, dK, dV written, each once
    q_bytes, kv_bytes, lse_bytes = heads * seq * d * 2, kv_heads * seq * d * 2, heads * seq * 4
    expected = 2 * (2 * q_bytes + 2 * kv_bytes) + lse_bytes
    assert float(by_name["attention.bwd"].bytes) == totals(traced)[1] == expected


def _attention_backward_paths() -> dict[str, object]:
    bhsd = [meta(B, H, S, D) for _ in range(5)]  # dO, Q, K, V, O
    bshd = [meta(B, S, H, D) for _ in range(5)]
    lse = meta(B, H, S, dtype=torch.float32)
    seed = torch.empty(2, dtype=torch.uint64, device="meta")
    return {
        "torch sdpa cpu op": rl.trace(
            lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                *bhsd, lse, 0.0, True)),
        "torch flash op": rl.trace(lambda: torch.ops.aten._flash_attention_backward(
            *bshd, lse, meta(0), meta(0), S, S, 0.0, True, seed, meta(0))),
        "known_ops flash-attn": known_ops.flash_backward(*bshd, lse, causal=True),
        # as torch 2.13's profiler records it: undefined cumulative lengths (no type), a
        # uint64 rng state
        "profile sdpa flash op": pricing.price(
            "aten::_scaled_dot_product_flash_attention_backward",
            [[B, H, S, D]] * 5 + [[B, H, S], [], [], [], [], [], [], [2], [], []],
            (BF,) * 5 + ("float", "", "", "Scalar", "Scalar", "Scalar", "Scalar",
                        "long unsigned int", "long unsigned int", "Scalar"),
            ("",) * 8 + (str(S), str(S), "0.", "True", "", "", "")),
    }


def test_attention_backward_is_one_answer_on_every_path() -> None:
    paths = _attention_backward_paths()
    for name, workload in paths.items():
        assert not isinstance(workload, str), (name, workload)
        assert totals(workload, "matrix")[0] == BACKWARD, name
        assert totals(workload, "vector")[0] == 8 * PAIRS, name
        # 2.5x the forward's products (FlashAttention-2, Dao 2023, §3.2)
        assert totals(workload, "matrix")[0] / FORWARD == 2.5
        # dO, Q, K, V, O and the log-sum-exp read; dQ, dK, dV written (+ the rng state's
        # 16 + 8 bytes where the op takes it)
        nbytes = totals(workload)[1]
        assert 8 * QKV + LSE <= nbytes <= 8 * QKV + LSE + 24, name


# -- norms, reductions, dot, depthwise convolution ------------------------------------------


def test_rms_norm_is_one_fused_kernel_on_every_path() -> None:
    rows, hidden = 64, 1024
    expected = (4 * rows * hidden, (2 * rows * hidden + hidden) * 2)  # x read, y written, w
    x, w = meta(rows, hidden), meta(hidden)
    graph = rl.ops.vector.norm_kernel("n", "rmsnorm", rows, hidden, "bf16")
    paths = {
        "ops": totals(ops.rmsnorm(rows, hidden, dtype="bf16")),
        "model graph": (float(graph.flops), float(graph.bytes)),
        "torch": totals(rl.trace(lambda: F.rms_norm(x, [hidden], w, 1e-6))),
        "profile _fused_rms_norm": totals(pricing.price(
            "aten::_fused_rms_norm", [[rows, hidden], [], [hidden], []],
            (BF, "ScalarList", BF, "Scalar"), ("", f"[{hidden}]", "", "1e-06"))),
    }
    for name, got in paths.items():
        assert got == expected, name


def test_layer_norm_flops_agree_on_every_path() -> None:
    rows, hidden = 64, 1024
    x, w = meta(rows, hidden), meta(hidden)
    graph = rl.ops.vector.norm_kernel("n", "layernorm", rows, hidden, "bf16")
    got = {
        "ops": totals(ops.layernorm(rows, hidden, dtype="bf16"))[0],
        "model graph": float(graph.flops),
        "torch": totals(rl.trace(lambda: F.layer_norm(x, [hidden], w, w)))[0],
        "profile": totals(pricing.price(
            "aten::layer_norm", [[rows, hidden], [], [hidden], [hidden], [], []],
            (BF, "ScalarList", BF, BF, "Scalar", "Scalar"),
            ("", f"[{hidden}]", "", "", "1e-05", "True")))[0],
    }
    assert set(got.values()) == {7 * rows * hidden}, got  # mean, var, normalize, affine


def test_reduction_dot_and_depthwise_agree_on_every_path() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    n, rows = 4096, 16
    # a row sum in fp32 (jnp.sum of bf16 upcasts first, a step of its own): n - 1 adds a
    # row; bytes: the input read and the sums written
    x = meta(rows, n, dtype=torch.float32)
    sums = {
        "ops": totals(ops.reduction(rows * n, outputs=rows, dtype="fp32")),
        "torch": totals(rl.trace(lambda: x.sum(dim=-1))),
        "jax": totals(rl.trace(lambda a: jnp.sum(a, axis=-1),
                               jax.ShapeDtypeStruct((rows, n), jnp.float32))),
        "profile": totals(recorded("aten::sum", [[rows, n]], [
            ("ScalarList", "[-1]"), ("Scalar", "False"), ("", "")], dtype="float")),
    }
    assert set(sums.values()) == {(rows * (n - 1), (rows * n + rows) * 4)}, sums
    # an executed HLO reduce: the same FLOPs; its bytes add the init value, an fp32 scalar
    # operand that the profile charges (4 bytes) and the tracer rides in the arguments
    flops, nbytes = totals(executed(lambda a: jnp.sum(a, axis=-1),
                                    jax.ShapeDtypeStruct((rows, n), jnp.float32),
                                    opcode="reduce"))
    assert (flops, nbytes) == (rows * (n - 1), (rows * n + rows) * 4 + 4)
    # a dot of two vectors: n multiplies and n - 1 adds, on the vector units
    u, v = meta(n), meta(n)
    dots = {
        "ops": ops.dot(n, dtype="bf16"),
        "torch": rl.trace(lambda: torch.dot(u, v)),
        "jax": rl.trace(lambda a, b: jnp.dot(a, b), jax.ShapeDtypeStruct((n,), jnp.bfloat16),
                        jax.ShapeDtypeStruct((n,), jnp.bfloat16)),
        "profile": recorded("aten::dot", [[n], [n]], []),
        "jax profile": executed(jnp.dot, jax.ShapeDtypeStruct((n,), jnp.bfloat16),
                                jax.ShapeDtypeStruct((n,), jnp.bfloat16), opcode="dot"),
    }
    for name, workload in dots.items():
        flops, nbytes = totals(workload, "vector")
        assert flops == 2 * n - 1, name
        # both vectors read, the result written; the JAX tracer counts no bytes for a rank-0
        # value (it rides in the kernel's arguments), its one policy for scalars
        assert nbytes == (2 * n + (0 if name == "jax" else 1)) * 2, name
        assert totals(workload, "matrix") == (0, 0), name
    # a depthwise 3x3 convolution, stride 1, padding 1: 2·9 FLOPs an output element, on the
    # vector units (no reduction over channels for a matrix unit)
    c, size = 32, 28
    expected = 2 * 9 * c * size * size
    image, weight = meta(1, c, size, size), meta(c, 1, 3, 3)
    convs = {
        "ops": ops.conv2d(1, c, c, size, 3, padding=1, groups=c, dtype="bf16"),
        "torch": rl.trace(lambda: F.conv2d(image, weight, padding=1, groups=c)),
        "jax": rl.trace(lambda a, b: jax.lax.conv_general_dilated(
            a, b, (1, 1), ((1, 1), (1, 1)), feature_group_count=c),
            jax.ShapeDtypeStruct((1, c, size, size), jnp.bfloat16),
            jax.ShapeDtypeStruct((c, 1, 3, 3), jnp.bfloat16)),
        "profile": recorded("aten::convolution", [[1, c, size, size], [c, 1, 3, 3]], [
            ("", ""), ("ScalarList", "[1, 1]"), ("ScalarList", "[1, 1]"),
            ("ScalarList", "[1, 1]"), ("Scalar", "False"), ("ScalarList", "[0, 0]"),
            ("Scalar", str(c))]),
        "jax profile": executed(lambda a, b: jax.lax.conv_general_dilated(
            a, b, (1, 1), ((1, 1), (1, 1)), feature_group_count=c),
            jax.ShapeDtypeStruct((1, c, size, size), jnp.bfloat16),
            jax.ShapeDtypeStruct((c, 1, 3, 3), jnp.bfloat16), opcode="convolution"),
    }
    for name, workload in convs.items():
        flops = totals(workload, "vector")[0]
        # every tap, padding included, on every path (docs/bounds.md)
        assert flops == expected, (name, flops)
        assert totals(workload, "matrix") == (0, 0), name
    # the image and the filter read, the output written, each once, in bf16
    assert {totals(w)[1] for w in convs.values()} == {(2 * c * size * size + c * 9) * 2}


# -- the fused attention pair ---------------------------------------------------------------


def test_fused_attention_is_one_pair_on_every_path() -> None:
    """Forward and backward alike, every path builds the same pair: the products one matrix
    kernel holding every byte, the softmax (5 FLOPs a pair; 8 in the backward) a vector
    kernel of no bytes in the products' epilogue, both in the inputs' bf16."""
    step = rl.models.load("llama-3-8b").train_step(1, 256)
    graph = {k.name: k for k in step.kernels}
    paths = {**_attention_forward_paths(),
             **{f"{name} (backward)": w for name, w in _attention_backward_paths().items()},
             "model graph": [graph["attention"], graph["attention.softmax"]],
             "model graph (backward)": [graph["attention.bwd"],
                                        graph["attention.bwd.softmax"]]}
    for name, workload in paths.items():
        products, softmax = getattr(workload, "kernels", workload)
        assert (products.unit, softmax.unit) == ("matrix", "vector"), name
        assert softmax.epilogue_of == products.name and products.epilogue_of is None, name
        assert float(softmax.bytes) == 0 and float(products.bytes) > 0, name
        assert products.dtype == softmax.dtype == "bf16", name
        per_pair = 8 if "backward" in name else 5
        macs = float(products.flops) / 2 / (5 if "backward" in name else 2)  # pairs·d
        d = 128 if name.startswith("model") else D
        assert float(softmax.flops) == per_pair * macs / d, name


# -- norms with and without their weight ----------------------------------------------------


def test_norms_without_affine_agree_on_every_path() -> None:
    """Without its weight (and bias) a norm skips the scale (and shift): RMSNorm 3 FLOPs an
    element, LayerNorm 5; bytes x read and y written only."""
    rows, hidden = 64, 1024
    n = rows * hidden
    x = meta(rows, hidden)
    rms = {
        "ops": totals(ops.rmsnorm(rows, hidden, dtype="bf16", affine=False)),
        "model graph": totals(Workload([rl.ops.vector.norm_kernel(
            "n", "rmsnorm", rows, hidden, "bf16", affine=False)])),
        "torch": totals(rl.trace(lambda: F.rms_norm(x, [hidden], None, 1e-6))),
        "profile": totals(pricing.price(
            "aten::_fused_rms_norm", [[rows, hidden], [], [], []],
            (BF, "ScalarList", "", "Scalar"), ("", f"[{hidden}]", "", "1e-06"))),
    }
    assert set(rms.values()) == {(3 * n, 2 * n * 2)}, rms
    # the torch table's row for the op a GPU dispatches whole (on meta and CPU torch runs it
    # as its fp32 steps, which the tracer never sees as one op): with and without the weight
    from pytest_roofline.tracing import _aten

    row = _aten.VECTOR_FLOPS.get("_fused_rms_norm")
    # one formula for the fused op and the public one (the rule has one home in the table)
    assert row is _aten.VECTOR_FLOPS.get("rms_norm") is _aten._rms_norm
    for weight, per in ((None, 3), (meta(hidden), 4)):
        call = _aten.Call(op="_fused_rms_norm", base="_fused_rms_norm", func=None,
                          args=(x, [hidden], weight, 1e-6), kwargs={}, inputs=[x],
                          outputs=[x], name="n", dtype=None)
        assert row(call) == per * n == totals(ops.rmsnorm(
            rows, hidden, dtype="bf16", affine=weight is not None))[0]
    layer = {
        "ops": totals(ops.layernorm(rows, hidden, dtype="bf16", affine=False)),
        "model graph": totals(Workload([rl.ops.vector.norm_kernel(
            "n", "layernorm", rows, hidden, "bf16", affine=False)])),
        "torch": totals(rl.trace(lambda: F.layer_norm(x, [hidden]))),
        "profile": totals(pricing.price(
            "aten::layer_norm", [[rows, hidden], [], [], [], [], []],
            (BF, "ScalarList", "", "", "Scalar", "Scalar"),
            ("", f"[{hidden}]", "", "", "1e-05", "True"))),
    }
    # torch's op (native_layer_norm) also writes each row's mean and 1/std in fp32, which
    # the op it runs returns; ops and the model graph price the norm alone
    stats = 2 * rows * 4
    for name, got in layer.items():
        extra = stats if name in ("torch", "profile") else 0
        assert got == (5 * n, 2 * n * 2 + extra), name


def test_layer_norm_bytes_agree_on_every_path() -> None:
    rows, hidden = 64, 1024
    x, w, b = meta(rows, hidden), meta(hidden), meta(hidden)  # distinct: each read once
    graph = rl.ops.vector.norm_kernel("n", "layernorm", rows, hidden, "bf16")
    got = {
        "ops": totals(ops.layernorm(rows, hidden, dtype="bf16"))[1],
        "model graph": float(graph.bytes),
        "torch": totals(rl.trace(lambda: F.layer_norm(x, [hidden], w, b)))[1],
        "profile": totals(pricing.price(
            "aten::layer_norm", [[rows, hidden], [], [hidden], [hidden], [], []],
            (BF, "ScalarList", BF, BF, "Scalar", "Scalar"),
            ("", f"[{hidden}]", "", "", "1e-05", "True")))[1],
    }
    # x read, y written, the scale and the shift read; torch's op adds its fp32 statistics
    for name, nbytes in got.items():
        extra = 2 * rows * 4 if name in ("torch", "profile") else 0
        assert nbytes == (2 * rows * hidden + 2 * hidden) * 2 + extra, name


# -- dtype widths ---------------------------------------------------------------------------


def test_every_torch_dtype_the_profile_reads_is_as_wide_on_every_path() -> None:
    """A copy of n elements reads n and writes n: through the torch tracer and a recorded op
    alike, at torch's own element size (a table independent of ours) for every profiler type
    name the profile reads; the one width rule (``dtypes.element_bytes``) says the same."""
    n = 100
    for profiler, name in pricing.DTYPES.items():
        dtype = getattr(torch, name)
        x = torch.empty(n, dtype=dtype, device="meta")
        traced = totals(rl.trace(lambda x=x: x.clone()))[1]
        priced = totals(recorded("aten::clone", [[n]], [("", "")], dtype=profiler))[1]
        assert traced == priced == 2 * n * dtype.itemsize, profiler
        assert dtypes.element_bytes(name) == dtype.itemsize, name
    # a list of tensors whose dtype only its kernels' element size states: a float that wide
    for size in (1, 2, 4, 8):  # every width a kernel's name states (OpaqueType<2u>, ...)
        dtype = getattr(torch, pricing.DTYPES[pricing.BY_SIZE[size]])
        assert dtype.itemsize == size and dtype.is_floating_point, size


#: XLA's spelling of each element type in HLO text (``f32[8,128]``), for the SPMD reader.
HLO_TEXT = {"pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
            "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
            "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
            "c64": "complex64", "c128": "complex128", "f8e5m2": "float8_e5m2",
            "f8e4m3fn": "float8_e4m3fn", "s4": "int4", "u4": "uint4",
            "f8e5m2fnuz": "float8_e5m2fnuz", "f8e4m3fnuz": "float8_e4m3fnuz"}


def test_every_xla_element_type_is_as_wide_on_every_jax_path() -> None:
    """An elementwise op of n elements of each type a compiled program names: the JAX tracer
    and the profile's executed HLO op charge the same bytes, numpy's element size (a table
    independent of ours; a 4-bit type half of numpy's byte, as XLA packs two to a byte);
    the SPMD reader's widths of HLO text are the same."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from pytest_roofline.profiling.jax import hlo
    from pytest_roofline.tracing import _jax_spmd

    n = 128
    widths = dict(hlo.ELEMENT_TYPES.values())
    for name, width in widths.items():
        packed = name in ("int4", "uint4")
        assert width == jnp.dtype(name).itemsize / (2 if packed else 1), name
        dtype = jax.dtypes.canonicalize_dtype(name)  # without x64: 64-bit types run as 32
        arg = jax.ShapeDtypeStruct((n,), dtype)
        fn, opcode = ((jnp.negative, "negate") if jnp.issubdtype(dtype, jnp.inexact)
                      else (jnp.invert, "not"))
        expected = 2 * n * dtype.itemsize / (2 if packed else 1)
        traced = totals(rl.trace(fn, arg))[1]
        assert traced == totals(executed(fn, arg, opcode=opcode))[1] == expected, name
    assert set(HLO_TEXT.values()) == set(widths)
    for spelled, name in HLO_TEXT.items():
        assert _jax_spmd._width(spelled, None) == widths[name], spelled


def test_width_tables_by_size_name_a_type_of_that_size() -> None:
    """Tables from a width to a type (Triton's ``flops<bits>`` keys, a dtype known only by
    its width) name types of that width in the one table."""
    from pytest_roofline.tracing import _kernels, _triton

    # ({precision: FLOPs}, bytes): a 2-byte width is bf16, the table's last 2-byte float
    named = {"8": "fp8", "16": "bf16", "32": "fp32", "64": "fp64"}
    for bits, precision in named.items():
        assert _triton._flops_stated({f"flops{bits}": 1.0}) == ({precision: 1.0}, None), bits
        assert dtypes.element_bytes(precision) * 8 == int(bits), bits
    for floating in (True, False):
        for size in (0.5, 1, 2, 4, 8):
            assert dtypes.element_bytes(_kernels.by_width(size, floating=floating)) == size


# -- collective algorithm names -------------------------------------------------------------


def test_algorithm_names_are_one_list_for_specs_ops_and_the_analysis(
        capsys: pytest.CaptureFixture[str]) -> None:
    """B200's NVLink lists NVLink SHARP (``nvls``): ``ops`` prices every algorithm a spec may
    list, and on that link ``auto`` takes in-network reduction's link bytes, (N+1)/N of the
    tensor a device instead of the ring's 2·(N-1)/N; the hardware listing names it."""
    from pytest_roofline.cli import main
    from pytest_roofline.errors import WorkloadError
    from pytest_roofline.hardware.chip import IN_NETWORK_ALGORITHMS, LINK_ALGORITHMS

    chip = rl.get_hardware("b200")
    link = chip.link("nvlink")
    assert set(link.algorithms) & set(IN_NETWORK_ALGORITHMS) == {"nvls"}
    devices, elements = 8, 1 << 26
    tensor = elements * 2  # bf16
    kernels = {a: ops.all_reduce(elements, devices, dtype="bf16", link="nvlink",
                                 algorithm=a).kernels[0] for a in ("auto", *LINK_ALGORITHMS)}
    times = {a: float(rl.analyze(Workload([k]), chip).time) for a, k in kernels.items()}
    assert float(kernels["ring"].link_bytes) == tensor * 2 * (devices - 1) / devices
    assert float(kernels["nvls"].link_bytes) == tensor * (devices + 1) / devices
    on_link = kernels["auto"].on_link(link.algorithms)
    assert float(on_link.link_bytes) == float(kernels["nvls"].link_bytes)
    assert times["auto"] <= min(times[a] for a in link.algorithms) < times["ring"]
    with pytest.raises(WorkloadError) as refused:
        ops.all_reduce(elements, devices, dtype="bf16", algorithm="nvlink_sharp")
    assert all(repr(a) in str(refused.value) for a in LINK_ALGORITHMS)
    assert main(["hw", "show", "b200"]) == 0
    assert "reduces in the switch (nvls)" in " ".join(capsys.readouterr().out.split())


# -- the pipeline bubble --------------------------------------------------------------------


def test_the_pipeline_bubble_is_one_rule_for_the_step_and_the_planner() -> None:
    """A pipeline of pp stages over m microbatches (1F1B) runs each stage's kernels, 1/pp of
    the model's work, for 1 + (pp - 1)/m slots a slot of work (Narayanan et al. 2021, §2.2):
    the planner's step time, the training step's and that closed form agree."""
    model = rl.models.load("gpt-2")
    batch, seq = 16, 512
    plan = rl.plan_training(model, "h100", chips=4, batch=batch, seq=seq, link="nvlink")
    piped = [c for c in plan.configs if c.pp > 1 and c.microbatches > 1][:3]
    assert piped
    for c in piped:
        common = {"tp": c.tp, "dp": c.dp, "pp": c.pp, "zero": c.zero,
                  "recompute": c.recompute, "link": "nvlink"}
        parts = model.train_parts(batch, seq, **common)
        stage = float(rl.analyze(Workload(list(parts.stage)), "h100").time)
        rest = float(rl.analyze(Workload(list(parts.rest)), "h100").time)
        closed = stage * (1 + (c.pp - 1) / c.microbatches) / c.pp + rest
        step = model.train_step(batch, seq, microbatches=c.microbatches, **common)
        assert float(rl.analyze(step, "h100").time) == pytest.approx(closed, rel=1e-9)
        assert c.step_time == pytest.approx(closed, rel=1e-9), c.label()


def test_eval_batch_norm_flops_agree_on_every_path() -> None:
    """An eval-mode batch norm is a per-channel scale and shift: 2 FLOPs an element (the
    running statistics folded in), in the ResNet graph (eager, unfused: ResNet-50's stem,
    64 channels of 112 x 112), the torch tracer and a recorded op."""
    c, side = 64, 112
    x, stats = meta(1, c, side, side), [meta(c) for _ in range(4)]
    graph = {k.name: k for k in rl.models.load("resnet-50").forward(1, fusion="none").kernels}
    got = {
        "model graph": float(graph["stem.conv.bn"].flops),
        "torch": totals(rl.trace(lambda: F.batch_norm(x, *stats, training=False)))[0],
        "profile": totals(pricing.price(
            "aten::batch_norm", [[1, c, side, side], [c], [c], [c], [c], [], [], [], []],
            (BF,) * 5 + ("Scalar",) * 4, ("",) * 5 + ("False", "0.1", "1e-05", "True")))[0],
    }
    assert set(got.values()) == {2 * c * side * side}, got


# -- what the mutation run over the HLO pricer found no test for -----------------------------

def test_a_depthwise_convolution_runs_on_the_vector_units_on_both_paths() -> None:
    # 3x3 depthwise over 8 channels of 10x10 (8 groups of one channel): a multiply and an
    # add a tap, 2·8·9·(8·8) = 9,216 FLOPs, on the vector units (no matrix to multiply)
    jax = pytest.importorskip("jax")
    x, w = jax.numpy.ones((1, 8, 10, 10)), jax.numpy.ones((8, 1, 3, 3))

    def depthwise(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=8)

    for work in (executed(depthwise, x, w, opcode="convolution"), rl.trace(depthwise, x, w)):
        assert [(k.unit, k.flops) for k in work.kernels] == [("vector", 2 * 8 * 9 * 64)]


@pytest.mark.parametrize(("axis", "flops"), [(1, 4 * 8 * 3), (0, 8 * 4 * 2)])
def test_a_sort_is_priced_along_its_own_dimension(axis: int, flops: int) -> None:
    # n·log2(n) comparisons a row sorted: 4 rows of 8 (axis 1) 4·8·3 = 96; 8 columns of 4
    # (axis 0) 8·4·2 = 64
    jax = pytest.importorskip("jax")
    a = jax.numpy.ones((4, 8))

    def sort(a):
        return jax.numpy.sort(a, axis=axis)

    assert executed(sort, a, opcode="sort").flops == rl.trace(sort, a).flops == flops

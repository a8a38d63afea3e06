"""The torch tracer's op table: formulas for the ops real models run, unknown ops named, and
formulas for your own kernels (``register_op``).

Expected numbers are derived in each test from the op's definition (a multiply-accumulate is
2 FLOPs; bytes are the tensors' storage sizes); tolerances are exact unless stated."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import pytest_roofline as rl  # noqa: E402
from pytest_roofline import ops  # noqa: E402
from pytest_roofline.tracing import _aten  # noqa: E402

META = {"device": "meta"}


def _empty(*shape: int, dtype: object = None) -> torch.Tensor:
    return torch.empty(*shape, device="meta", dtype=dtype or torch.bfloat16)


def test_grouped_mm_counts_every_routed_row_once() -> None:
    # 2-D tokens x 3-D experts (the MoE layout of transformers): 512 routed rows of K=256,
    # each meeting one expert's 256x1024 weight: 512·256·1024 MACs.
    a, b = _empty(512, 256), _empty(8, 256, 1024)
    offs = torch.empty(8, device="meta", dtype=torch.int32)
    w = rl.trace(lambda: torch._grouped_mm(a, b, offs=offs))
    assert w.flops == 2 * 512 * 256 * 1024
    assert w.kernels[0].unit == "matrix"
    # bytes: a, b, offs read, output written
    assert w.bytes == (512 * 256 + 8 * 256 * 1024 + 512 * 1024) * 2 + 8 * 4
    assert not w.unknown
    # 3-D x 3-D: a batch of products
    w3 = rl.trace(torch._grouped_mm, _empty(4, 64, 128), _empty(4, 128, 32))
    assert w3.flops == 2 * 4 * 64 * 128 * 32


def test_int8_and_packed_weight_products_are_matrix_kernels() -> None:
    x = torch.empty(64, 128, dtype=torch.int8, device="meta")
    w = rl.trace(lambda: torch._int_mm(x, torch.empty(128, 32, dtype=torch.int8,
                                                       device="meta")))
    assert w.flops == 2 * 64 * 128 * 32 and w.kernels[0].dtype == "int8"
    packed = rl.trace(torch._weight_int8pack_mm, _empty(16, 128),
                      torch.empty(32, 128, dtype=torch.int8, device="meta"), _empty(32))
    assert packed.flops == 2 * 16 * 128 * 32  # every output element: one 128-long dot
    assert packed.kernels[0].dtype == "bf16"  # dequantised into the activations' precision


def test_fp8_products_are_priced_in_fp8() -> None:
    # _scaled_mm (64x128 by 128x256, fp8 e4m3 operands, bf16 out): 64·128·256 MACs; its
    # grouped form over 4 experts' 128x256 weights: each of the 64 rows meets one expert
    fp8 = torch.float8_e4m3fn
    a = torch.empty(64, 128, device="meta", dtype=fp8)
    b = torch.empty(256, 128, device="meta", dtype=fp8).t()
    scale = torch.empty((), device="meta")
    w = rl.trace(torch._scaled_mm, a, b, scale, scale, out_dtype=torch.bfloat16)
    assert w.flops == 2 * 64 * 128 * 256 and w.kernels[0].dtype == "fp8"
    experts = torch.empty(4, 256, 128, device="meta", dtype=fp8).transpose(-2, -1)
    g = rl.trace(torch._scaled_grouped_mm, a, experts, torch.empty(64, device="meta"),
                 torch.empty(4, 256, device="meta"),
                 offs=torch.empty(4, device="meta", dtype=torch.int32), out_dtype=torch.bfloat16)
    assert g.flops == 2 * 64 * 128 * 256 and g.kernels[0].dtype == "fp8" and not g.unknown


@pytest.mark.parametrize(("training", "per_element"), [(False, 2.0), (True, 7.0)])
def test_batch_norm_eval_is_a_scale_and_shift(training: bool, per_element: float) -> None:
    # eval: y = x·a + b per channel (2 FLOPs an element); training normalises with the
    # batch's statistics at the layer-norm rate (ops.vector: 7 with weight and bias)
    bn = torch.nn.BatchNorm2d(32, device="meta").train(training)
    x = torch.empty(4, 32, 16, 16, device="meta")
    w = rl.trace(bn, x)
    norm = [k for k in w.kernels if "batch_norm" in k.name]
    assert sum(k.total_flops for k in norm) == per_element * x.numel()


def test_pooling_upsampling_sorting_and_scans() -> None:
    x = torch.empty(2, 8, 32, 32, device="meta")
    # max pool 3x3 stride 2: 8 comparisons per output of 15x15
    w = rl.trace(lambda: torch.nn.functional.max_pool2d(x, 3, 2))
    assert w.flops == 2 * 8 * 15 * 15 * 8
    # average pool 2x2: 3 adds and a divide per output of 16x16
    assert rl.trace(lambda: torch.nn.functional.avg_pool2d(x, 2)).flops == 2 * 8 * 16 * 16 * 4
    # adaptive average to 1x1: every input element once
    assert rl.trace(lambda: torch.nn.functional.adaptive_avg_pool2d(x, 1)).flops == x.numel()
    # bilinear upsampling x2: 7 per output element (4 taps: 4 multiplies, 3 adds)
    up = rl.trace(lambda: torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"))
    assert up.flops == 7 * 2 * 8 * 64 * 64
    nearest = rl.trace(lambda: torch.nn.functional.interpolate(x, scale_factor=2))
    assert nearest.flops == 0 and nearest.bytes > 0 and not nearest.unknown
    v = torch.empty(4, 1024, device="meta")
    assert rl.trace(lambda: torch.sort(v, dim=-1)).flops == 4 * 1024 * 10  # n·log2(1024)
    assert rl.trace(lambda: torch.topk(v, 8)).flops == 4 * 1024
    assert rl.trace(lambda: torch.cumsum(v, -1)).flops == 4 * 1024


def test_scatter_add_index_add_and_embedding_bag() -> None:
    dest, src = torch.empty(100, 64, device="meta"), torch.empty(30, 64, device="meta")
    index = torch.empty(30, dtype=torch.long, device="meta")
    w = rl.trace(lambda: dest.index_add_(0, index, src))
    assert w.flops == 30 * 64  # one add per value
    # in place: indices and values read, the values' positions written (never the table)
    assert w.bytes == 30 * 8 + 30 * 64 * 4 + 30 * 64 * 4
    idx2 = torch.empty(30, 64, dtype=torch.long, device="meta")
    assert rl.trace(lambda: dest.scatter_add(0, idx2, src)).flops == 30 * 64
    table = torch.empty(1000, 64, device="meta")
    ids = torch.empty(40, dtype=torch.long, device="meta")
    offsets = torch.empty(8, dtype=torch.long, device="meta")
    bag = rl.trace(lambda: torch.nn.functional.embedding_bag(ids, table, offsets))
    assert bag.flops == 40 * 64  # 40 rows gathered, one add each
    assert not bag.unknown


def test_attention_backward_recomputes_the_scores() -> None:
    # the fused backward is handed Q, K, V, O, dO and the log-sum-exp, never P: it recomputes
    # Q·Kᵀ, then dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q: five products over the scored
    # pairs, 2·pairs·(3·d + 2·dv) FLOPs (FlashAttention-2, Dao 2023, §3.2: 2.5x the forward)
    q = torch.empty(1, 4, 128, 64, requires_grad=True)
    k = torch.empty(1, 4, 128, 64, requires_grad=True)
    v = torch.empty(1, 4, 128, 64, requires_grad=True)

    def step() -> None:
        torch.nn.functional.scaled_dot_product_attention(q, k, v).sum().backward()

    w = rl.trace(step)
    pairs = 4 * 128 * 128
    backward = [k for k in w.kernels if k.unit == "matrix" and "backward" in k.name]
    assert sum(k.total_flops for k in backward) == 2 * pairs * (3 * 64 + 2 * 64)
    assert not w.unknown


def test_sdpa_inside_multi_head_attention_is_seen_on_meta_and_cpu_alike() -> None:
    # nn.MultiheadAttention calls F.multi_head_attention_forward, which calls SDPA: with
    # is_causal and no weights asked it drops the mask, so only the scored pairs count
    counts = {}
    for device in ("meta", "cpu"):
        mha = torch.nn.MultiheadAttention(64, 4, batch_first=True, device=device)
        x = torch.zeros(2, 32, 64, device=device)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(32, device=device)
        w = rl.trace(lambda m=mha, x=x, mask=mask: m(x, x, x, attn_mask=mask, is_causal=True,
                                                     need_weights=False))
        counts[device] = w.flops
        attention = [k for k in w.kernels if k.name.endswith("scaled_dot_product_attention")]
        pairs = 2 * 4 * 32 * 33 / 2  # batch · heads · causal pairs
        assert sum(k.total_flops for k in attention) == 2 * pairs * (16 + 16)
    assert counts["meta"] == counts["cpu"]


def test_closures_are_traced_like_arguments() -> None:
    layer = torch.nn.Linear(64, 32, device="meta")
    x = torch.empty(8, 64, device="meta")
    assert rl.trace(lambda: layer(x)).flops == rl.trace(layer, x).flops == 2 * 8 * 64 * 32
    with pytest.raises(rl.TraceError, match="closes over"):
        rl.trace(lambda: 1 + 1)


def test_every_aten_class_is_one_of_the_documented_classes() -> None:
    assert set(_aten._NAMED.values()) <= set(_aten.CLASSES)
    assert _aten.classify("no_such_op", pointwise=False, is_view=False) == "unknown"
    assert _aten.classify("add", pointwise=True, is_view=False) == "vector"
    assert _aten.classify("where", pointwise=True, is_view=False) == "copy"


# -- custom ops: unknown until registered -------------------------------------------------------

@torch.library.custom_op("rooflinetest::fancy", mutates_args=())
def fancy(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x @ w


@fancy.register_fake
def _(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape[0], w.shape[1])


def test_a_custom_op_is_unknown_until_registered_then_counted_by_its_formula() -> None:
    x, w = _empty(64, 128), _empty(128, 256)
    before = rl.trace(fancy, x, w)
    assert dict(before.unknown) == {"rooflinetest::fancy": 1}
    assert before.flops == 0  # not known: reported, not priced
    assert before.bytes == (64 * 128 + 128 * 256 + 64 * 256) * 2  # its tensors, read/written
    with pytest.raises(rl.TraceError, match=r"1 op without a formula: rooflinetest::fancy x1"
                                            r".*register_op\('rooflinetest::fancy'"):
        rl.Tracer(strict=True)(fancy, x, w)
    try:
        @rl.register_op("rooflinetest::fancy")
        def fancy_formula(x: torch.Tensor, w: torch.Tensor) -> rl.Workload:
            return ops.matmul(x.shape[0], w.shape[1], x.shape[1], dtype="bf16")

        after = rl.trace(fancy, x, w)
        assert not after.unknown
        assert after.flops == 2 * 64 * 256 * 128
        assert after.kernels[0].name.startswith("rooflinetest::fancy")
        assert rl.Tracer(strict=True)(fancy, x, w).flops == after.flops
    finally:
        rl.unregister_op("rooflinetest::fancy")
    # a CPU run counts the same as a meta one
    real = rl.trace(fancy, torch.zeros(4, 8), torch.zeros(8, 2))
    assert dict(real.unknown) == {"rooflinetest::fancy": 1}


def test_a_formula_that_returns_the_wrong_thing_is_named() -> None:
    try:
        rl.register_op("rooflinetest::fancy", lambda x, w: "42")
        with pytest.raises(rl.TraceError, match="rooflinetest::fancy.*returned str.*or a "
                                                "number"):
            rl.trace(fancy, _empty(4, 8), _empty(8, 2))
    finally:
        rl.unregister_op("rooflinetest::fancy")
    with pytest.raises(rl.TraceError, match="fancy.*returned nan FLOPs.*finite"):
        rl.Tracer(formulas={"rooflinetest::fancy": lambda x, w: float("nan")})(
            fancy, _empty(4, 8), _empty(8, 2))


def test_a_formula_may_give_flops_alone_the_bytes_are_the_ops() -> None:
    # a number is the op's FLOPs; its bytes are those the call implies: its tensors read
    # and its output written, bf16: (4·8 + 8·2 + 4·2) · 2 B = 112 B
    work = rl.Tracer(strict=True, formulas={"rooflinetest::fancy": lambda x, w: 2 * 4 * 2 * 8})(
        fancy, _empty(4, 8), _empty(8, 2))
    (k,) = work.kernels
    assert (k.flops, k.bytes) == (128, (4 * 8 + 8 * 2 + 4 * 2) * 2)
    with pytest.raises(rl.TraceError, match="formula must be callable"):
        rl.register_op("rooflinetest::fancy", 3)  # type: ignore[call-overload]


def test_unknown_ops_add_up_when_workloads_compose() -> None:
    a = rl.Workload(flops=1.0, bytes=1.0, unknown={"x::y": 2})
    b = rl.Workload(flops=1.0, bytes=1.0, unknown={"x::y": 1, "z::w": 1})
    assert dict((a + b).unknown) == {"x::y": 3, "z::w": 1}
    assert dict((3 * a).unknown) == {"x::y": 2}
    with pytest.raises(rl.WorkloadError, match="unknown must map names"):
        rl.Workload(flops=1.0, bytes=1.0, unknown={"x": 0})


def test_a_session_records_only_the_calls_of_its_targets() -> None:
    # trace=fn: what runs inside a call of a target, wherever it is called from; the rest of
    # the body (the fills, the reference) is not recorded
    from pytest_roofline.tracing._torch import Session

    def my_softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1)

    layer = torch.nn.Linear(64, 32, device="meta")
    x = torch.empty(8, 64, device="meta")
    for targets, flops in (([my_softmax], 5 * 8 * 64), ([layer], 2 * 8 * 64 * 32),
                           ([torch.softmax], 5 * 8 * 64),
                           ([torch.ops.rooflinetest.fancy], 0.0)):
        with Session({}, None, body=True, targets=targets) as recorder:
            torch.ones(8, 64, device="meta") + 1
            my_softmax(x)
            layer(x)
            fancy(x, torch.empty(64, 4, device="meta"))
        assert sum(k.total_flops for k in recorder.kernels) == flops, targets
        assert len(recorder.kernels) >= 1


# -- shipped formulas: flash-attn's ops, under their own names ----------------------------------
# Stand-ins with flash-attn's schemas (flash_attn/flash_attn_interface.py) and fake kernels, so
# that the formulas shipped for "flashattn::..." are exercised without the CUDA package.

@torch.library.custom_op("flashattn::_flash_attn_forward", mutates_args=())
def _fa_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout_p: float,
                softmax_scale: float, causal: bool, window_size_left: int,
                window_size_right: int, softcap: float, alibi_slopes: torch.Tensor | None,
                return_softmax: bool) -> tuple[torch.Tensor, torch.Tensor]:
    raise NotImplementedError  # a CUDA kernel in flash-attn


@_fa_forward.register_fake
def _(q, k, v, *rest):  # type: ignore[no-untyped-def]
    return torch.empty_like(q), q.new_empty(q.shape[0], q.shape[2], q.shape[1],
                                            dtype=torch.float32)


@torch.library.custom_op("flashattn::_flash_attn_varlen_forward", mutates_args=())
def _fa_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
               cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int,
               dropout_p: float, softmax_scale: float, causal: bool) -> torch.Tensor:
    return torch.empty_like(q)  # a CUDA kernel in flash-attn; its shape here


@_fa_varlen.register_fake
def _(q, *rest):  # type: ignore[no-untyped-def]
    return torch.empty_like(q)


def test_flash_attn_forward_counts_the_scored_pairs_of_its_masks() -> None:
    # q (batch 2, 256 queries, 8 heads, 64), k/v 8 KV heads: non-causal every pair,
    # 2·8·256·256 pairs x (64 + 64) MACs x 2 FLOPs, + 5 softmax FLOPs a pair
    q, k, v = _empty(2, 256, 8, 64), _empty(2, 256, 8, 64), _empty(2, 256, 8, 64)
    full = rl.trace(_fa_forward, q, k, v, 0.0, 0.125, False, -1, -1, 0.0, None, False)
    assert not full.unknown
    pairs = 2 * 8 * 256 * 256
    assert full.flops == pairs * (2 * 128 + 5)
    # bytes: Q, K, V read, O written (bf16), the fp32 log-sum-exp written
    assert full.bytes == 4 * 2 * 256 * 8 * 64 * 2 + 2 * 8 * 256 * 4
    causal = rl.trace(_fa_forward, q, k, v, 0.0, 0.125, True, -1, -1, 0.0, None, False)
    assert causal.flops == 2 * 8 * (256 * 257 / 2) * (2 * 128 + 5)
    # a sliding window of 63 keys back (and causal): 64 keys a query once past the start
    window = rl.trace(_fa_forward, q, k, v, 0.0, 0.125, True, 63, 0, 0.0, None, False)
    per_head = sum(min(i + 1, 64) for i in range(256))
    assert window.flops == 2 * 8 * per_head * (2 * 128 + 5)


def test_flash_attn_varlen_reads_sequence_lengths_or_takes_them_equal() -> None:
    # 3 sequences of 100, 50, 10 tokens (160 packed), 4 heads of 32, causal
    q = torch.zeros(160, 4, 32)
    cu = torch.tensor([0, 100, 150, 160], dtype=torch.int32)
    w = rl.trace(_fa_varlen, q, q, q, cu, cu, 100, 100, 0.0, 0.1, True)
    per_head = sum(n * (n + 1) / 2 for n in (100, 50, 10))
    assert w.flops == 4 * per_head * (2 * 64 + 5)
    # on meta the lengths are unknown: equal shares, the fewest pairs 160 tokens allow
    meta = rl.trace(_fa_varlen, q.to("meta"), q.to("meta"), q.to("meta"), cu.to("meta"),
                    cu.to("meta"), 100, 100, 0.0, 0.1, True)
    equal = sum(n * (n + 1) / 2 for n in (54, 53, 53))
    assert meta.flops == 4 * equal * (2 * 64 + 5) < w.flops


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pytest_roofline.engine.workload import describe_unknown, merge_unknown  # noqa: E402
from pytest_roofline.tracing.known_ops import pairs  # noqa: E402


@given(q_len=st.integers(1, 40), kv_len=st.integers(1, 40), causal=st.booleans(),
       left=st.integers(-1, 40), right=st.integers(-1, 40))
def test_flash_attn_pairs_count_the_mask_it_describes(q_len: int, kv_len: int, causal: bool,
                                                      left: int, right: int) -> None:
    # the mask written out: query i at key position i + kv_len - q_len (bottom-right)
    offset = kv_len - q_len
    right_bound = 0 if causal else right
    brute = sum(1 for i in range(q_len) for j in range(kv_len)
                if (right_bound < 0 or j <= i + offset + right_bound)
                and (left < 0 or j >= i + offset - left))
    assert pairs(q_len, kv_len, causal=causal, left=left, right=right) == brute


names = st.text("abcxyz:", min_size=1, max_size=6)


@given(parts=st.lists(st.dictionaries(names, st.integers(1, 5), max_size=4), max_size=4))
def test_unknown_ops_merge_by_adding_calls(parts: list[dict[str, int]]) -> None:
    merged = merge_unknown(parts)
    assert sum(merged.values()) == sum(sum(p.values()) for p in parts)
    text = describe_unknown(merged)
    assert (text == "") == (not merged)
    if merged:
        assert text.startswith(f"{sum(merged.values())} op")
        assert all(f"{op} x{n}" in text for op, n in merged.items())


def test_norm_and_softmax_backward_follow_their_stated_rates() -> None:
    # layer norm's backward: 11 FLOPs per element of the input gradient (_kernels: x̂ again,
    # g·dy and x̂·g·dy, two row means, the combination, the weight and bias sums); softmax's
    # backward: dx = y·(dy - sum(dy·y)), 4 per element
    x = torch.empty(8, 512, device="meta", requires_grad=True)
    norm = torch.nn.LayerNorm(512, device="meta")

    def norm_step() -> None:
        norm(x).sum().backward()

    w = rl.trace(norm_step)
    backward = [k for k in w.kernels if "native_layer_norm_backward" in k.name]
    assert sum(k.total_flops for k in backward) == 11 * 8 * 512

    def softmax_step() -> None:
        torch.softmax(x, -1).sum().backward()

    s = rl.trace(softmax_step)
    grads = [k for k in s.kernels if "_softmax_backward_data" in k.name]
    assert sum(k.total_flops for k in grads) == 4 * 8 * 512
    assert not w.unknown and not s.unknown


def test_an_embedding_gradient_adds_each_row_once() -> None:
    # the weight gradient of a 1000 x 64 table for 40 tokens: 40 rows of 64 added in
    table = torch.nn.Embedding(1000, 64, device="meta")
    ids = torch.zeros(40, dtype=torch.long, device="meta")

    def step() -> None:
        table(ids).sum().backward()

    w = rl.trace(step)
    grads = [k for k in w.kernels if "embedding_dense_backward" in k.name]
    assert sum(k.total_flops for k in grads) == 40 * 64 and not w.unknown

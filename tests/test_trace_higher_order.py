"""Higher-order operators, values read on meta, and the op classes the tracer settles.

Hand counts: a 64 x 64 fp32 matmul is 2 · 64³ = 524,288 FLOPs; flex_attention over batch 2,
4 heads, 256 positions and head size 64 scores 2·4·256² = 524,288 pairs densely, each
2 · (64 + 64) = 256 matrix FLOPs and 5 softmax FLOPs; a causal block mask of 128-wide blocks
visits 3 of the 4 blocks (the diagonal ones partly masked but computed): 3/4 of the pairs.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import pytest_roofline as rl  # noqa: E402
from pytest_roofline.tracing import TraceError, _higher_order  # noqa: E402

MATMUL_64 = 2 * 64**3


def _branches(x):  # type: ignore[no-untyped-def]
    return torch.cond(x.sum() > 0, lambda x: (x @ x).sin(), lambda x: x.cos(), (x,))


def test_hop_api_the_tracer_relies_on() -> None:
    from torch._higher_order_ops.while_loop import while_loop

    assert _higher_order.is_higher_order(torch.ops.higher_order.cond)
    assert not _higher_order.is_higher_order(torch.ops.aten.mm.default)
    assert callable(while_loop)
    from torch.nn.attention.flex_attention import create_block_mask

    mask = create_block_mask(lambda b, h, q, k: q >= k, None, None, 256, 256, device="cpu")
    flat = mask.as_tuple()  # the order scored_pairs reads
    assert flat[0] == flat[1] == 256 and flat[2] is mask.kv_num_blocks
    assert flat[4] is mask.full_kv_num_blocks and flat[-3:-1] == (128, 128)


def test_cond_on_real_tensors_records_the_branch_taken() -> None:
    x = torch.randn(64, 64).abs()
    work = rl.trace(_branches, x)
    assert [k.name for k in work.kernels] == ["sum", "gt", "mm", "sin"]
    assert work.flops == MATMUL_64 + 4096 + 4095 + 1 and not work.unknown
    other = rl.trace(_branches, -x)
    assert [k.name for k in other.kernels][-1] == "cos" and not other.assumed


def test_cond_on_meta_keeps_the_cheaper_branch_and_says_so() -> None:
    work = rl.trace(_branches, torch.empty(64, 64, device="meta"))
    assert [k.name for k in work.kernels][-1] == "cos"
    (assumed,) = work.assumed
    assert "torch.cond" in assumed and "cheaper branch (false)" in assumed


def test_while_loop_runs_each_trip_on_real_tensors_and_marks_meta() -> None:
    from torch._higher_order_ops.while_loop import while_loop

    def loop(i, x):  # type: ignore[no-untyped-def]
        return while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x @ x), (i, x))

    work = rl.trace(loop, torch.tensor(0), torch.randn(32, 32))
    assert sum(k.name == "mm" for k in work.kernels) == 3 and not work.assumed
    once = rl.trace(loop, torch.tensor(0, device="meta"), torch.empty(32, 32, device="meta"))
    assert sum(k.name == "mm" for k in once.kernels) == 1
    assert any("trip count" in a for a in once.assumed)


def test_flex_attention_counts_the_pairs_its_block_mask_computes() -> None:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q = torch.randn(2, 4, 256, 64)
    pairs = 2 * 4 * 256 * 256
    dense = rl.trace(lambda q: flex_attention(q, q, q), q)
    (kernel,) = [k for k in dense.kernels if k.name == "flex_attention"]
    assert kernel.flops == 256 * pairs and not dense.unknown
    mask = create_block_mask(lambda b, h, i, j: i >= j, None, None, 256, 256, device="cpu")
    causal = rl.trace(lambda q: flex_attention(q, q, q, block_mask=mask), q)
    (kernel,) = [k for k in causal.kernels if k.name == "flex_attention"]
    assert kernel.flops == 256 * pairs * 3 / 4
    (softmax,) = [k for k in causal.kernels if k.name == "flex_attention.softmax"]
    assert softmax.flops == 5 * pairs * 3 / 4


def test_a_partial_last_block_is_cut_at_the_sequence_end() -> None:
    num = torch.tensor([[[1, 2]]])
    indices = torch.tensor([[[0, 0], [0, 1]]])
    flat = (200, 200, num, indices, None, None, None, None, None, None, 128, 128, None)
    # query block 0 (128 rows) sees kv block 0 (128); query block 1 (72 rows) sees
    # kv blocks 0 and 1 (128 + 72)
    assert _higher_order.scored_pairs(flat, 200, 200) == 128 * 128 + 72 * (128 + 72)


def test_scalar_reads_on_meta_follow_the_policy_and_are_named() -> None:
    x = torch.empty(4, 3, device="meta", dtype=torch.long)

    def branches(x):  # type: ignore[no-untyped-def]
        y = x * 2 if (x == 0).all() else x * 3 + 1
        return y.sum() if (x > 5).any() else y

    work = rl.trace(branches, x)
    assert [k.name for k in work.kernels] == ["eq", "all", "mul", "gt", "any"]
    reads = sorted(work.assumed)
    assert reads[0].startswith("aten::_local_scalar_dense of all() on meta at ")
    assert reads[0].endswith("in branches: assumed True")
    assert reads[1].endswith("in branches: assumed False") and "any()" in reads[1]
    for sized in (lambda x: torch.zeros(int(x[0, 0])), lambda x: x.sum().item(),
                  lambda x: x.tolist()):
        with pytest.raises(TraceError, match=r"test_trace_higher_order.py:\d+ in <lambda>: "
                                             r"(reads|copies).*Trace with real tensors"):
            rl.trace(sized, x)


def test_assertion_ops_are_no_work_and_nearest_upsampling_reads_its_input_once() -> None:
    x = torch.randn(8)
    work = rl.trace(lambda x: (torch._is_all_true(x > -100), x * 2), x)
    assert [k.name for k in work.kernels] == ["gt", "mul"] and not work.unknown
    import torch.nn.functional as F

    image = torch.empty(2, 16, 32, 32, device="meta")
    size = image.numel() * 4
    for mode in ("nearest", "nearest-exact", "bilinear"):  # input once plus 4x the output
        scaled = rl.trace(F.interpolate, image, scale_factor=2, mode=mode)
        assert scaled.bytes == size + 4 * size, mode
    # a gather smaller than its source still reads only the rows it gathers
    table = torch.empty(1000, 64, device="meta")
    rows = rl.trace(lambda t, i: t[i], table, torch.zeros(10, dtype=torch.long, device="meta"))
    assert rows.bytes == 10 * 64 * 4 + 10 * 8 + 10 * 64 * 4


class Net(torch.nn.Module):  # a class of the user's own module, not torch's
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x))


MODEL = Net()


def test_module_globals_reached_through_a_lambda_are_named_by_path() -> None:
    work = rl.trace(lambda x: MODEL(x), torch.randn(2, 16))
    assert [k.name for k in work.kernels] == ["proj.addmm", "relu"]

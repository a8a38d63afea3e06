"""A recorded op priced as ``trace()`` prices the same call: fused ops as fused ops, every
attention op in its schema's layout, traces of older torch by their op names."""

from __future__ import annotations

import pytest

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware

torch = pytest.importorskip("torch")
F = torch.nn.functional

from pytest_roofline.profiling.torch import pricing  # noqa: E402

#: Roofs no CPU reaches, so a real timing is never faster than its bound.
ROOMY = Hardware(name="roomy-cpu", memory_bandwidth=1e12, memory_capacity=16e9,
                 matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")


def test_sdpa_profiled_on_a_cpu_is_priced_as_the_fused_op() -> None:
    # causal attention of 1 x 4 heads x 1,024 x 64 in fp32: 4·H·S(S+1)/2·D for the two
    # products, 5 a scored pair for the softmax; Q, K, V read and O written once. Its meta
    # kernel decomposes into the math (two bmm over every pair, a mask, a softmax of the
    # full score matrix): twice the products and 64x the bytes.
    h, s, d = 4, 1024, 64
    q, k, v = (torch.randn(1, h, s, d) for _ in range(3))
    profile = rl.Profiler(hw=ROOMY, repeats=1)(
        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    (sdpa,) = [r for r in profile.rows if r.op == "aten::scaled_dot_product_attention"]
    pairs = h * s * (s + 1) / 2
    assert sdpa.flops == 4 * pairs * d + 5 * pairs
    assert sdpa.bytes == 4 * h * s * d * 4
    traced = rl.trace(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (sdpa.flops, sdpa.bytes) == (traced.flops, traced.bytes)


@pytest.mark.parametrize(("op", "layout"), [
    ("aten::_scaled_dot_product_flash_attention", "bhsd"),
    ("aten::_scaled_dot_product_efficient_attention", "bhsd"),
    ("aten::_scaled_dot_product_cudnn_attention", "bhsd"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "bhsd"),
    ("aten::_flash_attention_forward", "bshd"),
    ("aten::_efficient_attention_forward", "bshd"),
])
@pytest.mark.parametrize("causal", [False, True])
def test_every_attention_forward_reads_its_schemas_layout(op, layout, causal) -> None:
    # batch 2, 8 heads, 256 queries and keys of 64: 4·B·H·Sq·Sk·D, halved (with the
    # diagonal) when causal; the softmax's 5 a pair beside it
    b, h, s, d = 2, 8, 256, 64
    dims = [b, h, s, d] if layout == "bhsd" else [b, s, h, d]
    tensors = [torch.empty(dims, dtype=torch.bfloat16, device="meta") for _ in range(3)]
    flag = {"is_causal": causal}
    if op.endswith("_efficient_attention_forward"):
        call = lambda: torch.ops.aten._efficient_attention_forward(  # noqa: E731
            *tensors, None, None, None, None, None, 0.0, int(causal), False)
    elif op.endswith("_flash_attention_forward"):
        call = lambda: torch.ops.aten._flash_attention_forward(  # noqa: E731
            *tensors, None, None, s, s, 0.0, causal, False)
    elif "cudnn" in op:
        call = lambda: torch.ops.aten._scaled_dot_product_cudnn_attention(  # noqa: E731
            *tensors, None, False, 0.0, causal, False)
    elif "efficient" in op:
        call = lambda: torch.ops.aten._scaled_dot_product_efficient_attention(  # noqa: E731
            *tensors, None, False, 0.0, causal)
    else:
        packet = getattr(torch.ops.aten, op.removeprefix("aten::"))
        call = lambda: packet(*tensors, 0.0, **flag)  # noqa: E731
    traced = rl.trace(call)
    pairs = b * h * (s * (s + 1) / 2 if causal else s * s)
    products = sum(kernel.flops for kernel in traced.kernels if kernel.unit == "matrix")
    assert products == 4 * pairs * d
    assert products == pytest.approx(4 * b * h * s * s * d / (2 if causal else 1), rel=0.02)


@pytest.mark.parametrize(("op", "layout"), [
    ("aten::_flash_attention_backward", "bshd"),
    ("aten::_efficient_attention_backward", "bshd"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "bhsd"),
    ("aten::_scaled_dot_product_cudnn_attention_backward", "bhsd"),
])
def test_every_attention_backward_is_two_and_a_half_forwards(op, layout) -> None:
    # the scores recomputed and four gradient products: 2·pairs·(3d + 2d), 2.5x the
    # forward's 4·pairs·d (FlashAttention-2, Dao 2023, §3.2); causal, 2 x 8 x 256 x 64
    b, h, s, d = 2, 8, 256, 64
    dims = [b, h, s, d] if layout == "bhsd" else [b, s, h, d]
    t = [torch.empty(dims, dtype=torch.bfloat16, device="meta") for _ in range(5)]
    lse = torch.empty(b, h, s, device="meta")
    seed = torch.empty(2, dtype=torch.uint64, device="meta")
    none = torch.empty(0, device="meta")
    calls = {
        "aten::_flash_attention_backward": lambda: torch.ops.aten._flash_attention_backward(
            *t, lse, none, none, s, s, 0.0, True, seed, none),
        "aten::_efficient_attention_backward":
            lambda: torch.ops.aten._efficient_attention_backward(
                t[0], t[1], t[2], t[3], None, t[4], None, None, s, s, lse, 0.0, seed, seed, 1,
                False),
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward":
            lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                *t, lse, 0.0, True),
        "aten::_scaled_dot_product_cudnn_attention_backward":
            lambda: torch.ops.aten._scaled_dot_product_cudnn_attention_backward(
                *t, lse, seed, seed, none, none, none, s, s, 0.0, True),
    }
    traced = rl.trace(calls[op])
    pairs = b * h * s * (s + 1) / 2
    products = sum(kernel.flops for kernel in traced.kernels if kernel.unit == "matrix")
    assert products == 2 * pairs * (3 * d + 2 * d) == 2.5 * (4 * pairs * d)


def test_flash_backward_as_torch_2_13_records_it_is_priced() -> None:
    # the profiler writes undefined cumulative lengths with no type and the rng state as
    # "long unsigned int": each rebuilt (an empty tensor, a uint64 one), the op priced
    b, h, s, d = 1, 4, 512, 64
    result = pricing.price(
        "aten::_scaled_dot_product_flash_attention_backward",
        [[b, h, s, d]] * 5 + [[b, h, s], [], [], [], [], [], [], [2], [], []],
        ("c10::BFloat16",) * 5 + ("float", "", "", "Scalar", "Scalar", "Scalar", "Scalar",
                                  "long unsigned int", "long unsigned int", "Scalar"),
        ("",) * 8 + (str(s), str(s), "0.", "False", "", "", ""))
    assert not isinstance(result, str), result
    matrix = sum(k.flops for k in result.kernels if k.unit == "matrix")
    assert matrix == 2 * (b * h * s * s) * (3 * d + 2 * d)


# -- traces of older torch: what they leave out, assumed for the lowest bound ----------------


def _trace(tmp_path, events):
    import gzip
    import json

    path = tmp_path / "old.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump({"traceEvents": events, "deviceProperties": [
            {"name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16945512448}]}, handle)
    return path


def _op(name, ts, dur, dims, types):
    # torch before 2.1: no "Concrete Inputs", int lists typed ""
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {"Input Dims": dims, "Input type": types}}


def _launch(ts, corr):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": ts, "dur": 1, "args": {"correlation": corr}}


def _kernel(name, ts, dur, corr):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts,
            "dur": dur, "args": {"correlation": corr}}


STEM = [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], [], [], [], [], []]
STEM_TYPES = ["float", "float", "", "", "", "", "", "", "Scalar", "", "Scalar", "Scalar",
              "Scalar", "Scalar"]


def test_an_unrecorded_stride_never_raises_a_convolutions_bound(tmp_path) -> None:
    # ResNet-50's stem in a trace before torch 2.1: stride 2 and padding 3 are not recorded.
    # Taking the schema's stride 1 and padding 0 priced 2·32·64·147·218² = 28.6 GFLOP, more
    # than the 7.55 it does (2·32·64·147·112²), a false "faster than physics"; the lowest
    # bound is one output position an image: 2·32·64·(3·7·7) FLOPs, and the notes say so
    path = _trace(tmp_path, [
        _op("aten::_convolution", 0, 3000, STEM, STEM_TYPES[:13]), _launch(10, 1),
        _kernel("void implicit_convolve_sgemm<float, float>(int)", 100, 2000, 1)])
    profile = rl.read_trace(path, hw="v100")
    (r,) = profile.rows
    assert r.flops == 2 * 32 * 64 * (3 * 7 * 7)
    assert r.flops < 7.55e9 and not r.faster
    assert any("strides and padding are not recorded" in note for note in profile.notes)


def test_torch_1_10_convolution_backward_names_are_priced(tmp_path) -> None:
    # torch 1.10: cudnn_convolution_backward(self, grad_output, weight, ...) runs its input
    # and weight gradients as child ops; a 3x3 convolution 64 -> 64 channels, 56x56, batch
    # 32: each gradient 2 · 32 · (64·64·9) · 56·56 FLOPs
    x, grad, w = [32, 64, 56, 56], [32, 64, 56, 56], [64, 64, 3, 3]
    path = _trace(tmp_path, [
        _op("aten::cudnn_convolution_backward", 0, 5000, [x, grad, w] + [[]] * 8,
            ["float"] * 3 + [""] * 3 + ["Scalar"] * 4 + [""]),
        _op("aten::cudnn_convolution_backward_input", 10, 2000, [[], grad, w] + [[]] * 7,
            ["", "float", "float"] + [""] * 3 + ["Scalar"] * 4),
        _launch(20, 1),
        _op("aten::cudnn_convolution_backward_weight", 2100, 2000, [[], grad, x] + [[]] * 7,
            ["", "float", "float"] + [""] * 3 + ["Scalar"] * 4),
        _launch(2110, 2),
        _kernel("void cudnn::detail::dgrad_engine<float>(int)", 100, 1500, 1),
        _kernel("void cudnn::detail::wgrad_alg0_engine<float>(int)", 1700, 1500, 2)])
    profile = rl.read_trace(path, hw="v100")
    (r,) = profile.rows
    assert r.op == "aten::cudnn_convolution_backward" and r.count == 1
    assert r.flops == 2 * (2 * 32 * (64 * 64 * 9) * 56 * 56)
    assert r.measured == pytest.approx(3000e-6)  # both gradients' kernels
    assert not profile.unpriced and not r.faster


def test_a_winograd_kernel_is_bounded_by_its_memory_alone(tmp_path) -> None:
    # cuDNN's Winograd 3x3 convolution does 2.25x-4x fewer multiplies than the direct one
    # the formula counts: its bound is its bytes (x, weight and y once), never "overcounts"
    x, w = [32, 64, 56, 56], [64, 64, 3, 3]
    dims = [x, w] + [[]] * 11
    path = _trace(tmp_path, [
        {**_op("aten::_convolution", 0, 300, dims, []),
         "args": {"Input Dims": dims, "Input type": [
             "float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar",
             "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"],
             "Concrete Inputs": ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]",
                                 "1", "False", "False", "True", "True"]}},
        _launch(10, 1),
        # 100 us: above the bytes' 57 us at the V100's 900 GB/s, below the direct count's
        # 2·32·64·576·56² = 7.4 GFLOP at its 15.7 TFLOP/s (473 us)
        _kernel("void cudnn::winograd_nonfused::winogradForwardData4x4<float>(int)", 100, 100,
                1)])
    profile = rl.read_trace(path, hw="v100")
    (r,) = profile.rows
    assert r.flops == 0 and r.bytes == (2 * 32 * 64 * 56 * 56 + 64 * 64 * 9) * 4
    assert not r.faster
    assert any("Winograd" in note for note in profile.notes)


# -- whatever a trace records, a price or a reason ------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KINDS = st.sampled_from(["float", "c10::BFloat16", "long unsigned int", "int", "", "Scalar",
                          "ScalarList", "TensorList", "weird"])
_DIMS = st.one_of(st.lists(st.integers(0, 6), max_size=4), st.just([]), st.none(),
                  st.integers(-3, 3))


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(["aten::_flash_attention_forward", "aten::convolution",
                             "aten::cudnn_convolution_backward", "aten::_fused_rms_norm",
                             "aten::scaled_dot_product_attention", "aten::conv2d",
                             "aten::_scaled_dot_product_flash_attention_backward"]),
       dims=st.lists(_DIMS, max_size=12), types=st.lists(_KINDS, max_size=12),
       concrete=st.one_of(st.none(), st.lists(st.sampled_from(
           ["", "1", "[1, 1]", "True", "0.", "[-1]", "x"]), max_size=12)),
       gradients=st.one_of(st.none(), st.tuples(st.booleans(), st.booleans())))
def test_any_recorded_inputs_give_a_price_or_a_reason(name, dims, types, concrete,
                                                      gradients) -> None:
    result = pricing.price(name, dims, tuple(types),
                           None if concrete is None else tuple(concrete),
                           gradients=gradients)
    if isinstance(result, str):
        assert result
    else:
        assert result.flops >= 0 and result.bytes >= 0


def test_who_prices_a_recorded_op_is_said_only_where_a_formula_does() -> None:
    # what the mutation run found no test for: an op with no formula is priced by nobody
    # ('', then named unpriced), an aten op by the tracer's table (''), never "the ops its
    # inductor name lists" for a name that is no inductor kernel's
    assert pricing.formula_of("mylib::no_formula_here") == ""
    assert pricing.formula_of("aten::mm") == ""
    assert pricing.formula_of("triton_poi_fused_add_0") == "the ops its inductor name lists"


@pytest.mark.parametrize("strides", [[], [[1, 4]], None])
def test_an_op_rebuilt_with_fewer_strides_than_tensors_is_priced(strides) -> None:
    # a trace may record strides for some inputs only (or none): the rest are contiguous.
    # cumsum of 4 x 4 floats (rebuilt on meta tensors: no shape rule of its own): one add
    # an element, 16 FLOPs; 64 B read, 64 B written
    result = pricing.price("aten::cumsum", [[4, 4], []], ("float", "Scalar"), ("", "0"),
                           strides=strides)
    assert not isinstance(result, str), result
    assert (result.flops, result.bytes) == (16, 128)


@pytest.mark.parametrize(("name", "dims", "flops"), [
    # a 7x7 convolution 3 -> 64 channels of 32 images of 224^2: 2·32·64·(3·7·7) at one
    # output position an image (not 218^2 of them, stride 1's, 47,524x as many)
    ("aten::conv2d", [[32, 3, 224, 224], [64, 3, 7, 7]], 2 * 32 * 64 * 147),
    ("aten::conv2d", [[32, 3, 224, 224], [64, 3, 7, 7], [64]], 2 * 32 * 64 * 147),
    # conv1d, 4 -> 16 channels, width 5, of 8 sequences of 100: 2·8·16·(4·5)
    ("aten::conv1d", [[8, 4, 100], [16, 4, 5]], 2 * 8 * 16 * 20)])
def test_a_convolution_recorded_without_its_scalars_takes_the_lowest_bound(
        name: str, dims: list, flops: int) -> None:
    """A record of a convolution's tensors alone (no strides, no padding; torch before 2.1,
    or a record cut short) is priced at one output position an image, the bound no stride
    or padding can go below, whether the record lists the scalars' places or not."""
    result = pricing.price(name, dims, ("float",) * len(dims), None)
    assert not isinstance(result, str), result
    assert result.flops == flops


@pytest.mark.parametrize(("first", "said"), [
    ([-1, 4], "input 0 has dims [-1, 4]"),      # a negative size
    ([4.0, 4], "input 0 has dims [4.0, 4]"),    # a float: no size is one
    ([True, 4], "input 0 has dims [True, 4]"),  # a JSON true
    ([2 ** 53 + 1, 1], "input 0 has dims [9007199254740993, 1]"),  # past any float's whole
    # 2**53 is a size (the largest every float holds whole); torch then refuses the tensor
    ([2 ** 53, 1], "inputs do not rebuild a call (RuntimeError)")])
def test_a_recorded_size_is_a_whole_number_from_0_to_2_to_the_53(first, said) -> None:
    assert pricing.price("aten::cumsum", [first, []], ("float", "Scalar"), ("", "0")) == said


def test_a_record_cut_short_of_a_required_argument_fits_no_overload() -> None:
    # cumsum's dim has no default: a record of its tensor alone binds no overload (said
    # so), never a call torch refuses for another reason
    assert pricing.price("aten::cumsum", [[4, 4]], ("float",), ("",)) == (
        "no overload takes its inputs")


@pytest.mark.parametrize(("dims", "flops"), [
    # depthwise, 8 groups of one channel: 2·2·(8·1·9) at one position; any other group
    # count does not fit 8 channels to a weight of 1
    ([[2, 8, 10, 10], [8, 1, 3, 3]], 2 * 2 * 72),
    # 1x1 over a 1x1 image: one position (a padding of 1 would make it 3x3 of them)
    ([[2, 3, 1, 1], [4, 3, 1, 1]], 2 * 2 * 12),
    # 3x3 over 3x3: one position (a dilation of 2 would not fit the image)
    ([[1, 1, 3, 3], [1, 1, 3, 3]], 2 * 9)])
def test_the_unrecorded_scalars_are_the_lowest_bounds_that_fit(dims: list, flops: int) -> None:
    """The scalars chosen for a convolution recorded without them (see above): a stride as
    long as the image, no padding, no dilation, the groups its channels imply."""
    result = pricing.price("aten::conv2d", dims, ("float", "float"), None)
    assert not isinstance(result, str), result
    assert result.flops == flops


def test_an_optional_tensor_recorded_as_a_number_fits_no_overload() -> None:
    # nll_loss's weight is a Tensor?: recorded as the number 1.0 it binds no overload (said
    # so), never a call torch refuses for another reason; unrecorded, it is None: priced
    dims = [[4, 10], [4], [], [], []]
    concrete = ("", "", "1.0", "1", "-100")
    assert pricing.price("aten::nll_loss", dims, ("float", "long int", "Scalar", "Scalar",
                                                  "Scalar"), concrete) == (
        "no overload takes its inputs")
    priced = pricing.price("aten::nll_loss", dims, ("float", "long int", "", "Scalar",
                                                    "Scalar"), ("", "", "", "1", "-100"))
    assert not isinstance(priced, str), priced

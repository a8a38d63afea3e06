"""2-D convolution and pooling.

Output size (per spatial axis): ``out = floor((size + 2·padding - dilation·(kernel - 1) - 1)
/ stride) + 1``, PyTorch's rule.

conv2d FLOPs = 2·batch·out_h·out_w·out_channels·(in_channels/groups)·kernel_h·kernel_w (a
multiply-accumulate per weight tap and output element). Bytes: the input, the weights and the
output, each once (implicit-GEMM kernels with ideal tiling). Convolutions run on the matrix
units, except depthwise ones (one input channel per group), which have no reduction over
channels to feed a matrix unit and run on the vector units.

pool2d: kernel_h·kernel_w - 1 compares (max) or adds (avg, plus one divide) per output
element on the vector units; input read once, output written once.
"""

from __future__ import annotations

from .. import dtypes
from ..engine.workload import Kernel, Knob, Number, Workload
from ..errors import WorkloadError, brief
from . import _family
from ._common import (
    array_precision,
    choice,
    dtype_of,
    is_arraylike,
    is_sweep,
    pair,
    shape_of,
    show,
    sized_precision,
    sweep_size,
)
from ._common import size as whole


def out_size(length: int, kernel: int, stride: int, padding: int, dilation: int,
             what: str) -> int:
    span = dilation * (kernel - 1) + 1
    if length + 2 * padding < span:
        raise WorkloadError(f"{what}: kernel {kernel} (dilation {dilation}) does not fit an "
                            f"input of {length} with padding {padding}")
    return (length + 2 * padding - span) // stride + 1


def _padding(padding: object, kernel: tuple[int, int], dilation: tuple[int, int],
             what: str) -> tuple[int, int]:
    if isinstance(padding, str):
        if padding == "valid":
            return 0, 0
        if padding == "same":
            return tuple(d * (k - 1) // 2 for k, d in zip(kernel, dilation, strict=True))  # type: ignore[return-value]
        raise WorkloadError(f"{what}: padding must be a number, a pair, 'same' or 'valid', "
                            f"got {brief(padding)}")
    return pair(padding, f"{what}: padding", minimum=0)


def conv_kernel(name: str, batch: Number, cin: int, cout: int, hw: tuple[int, int],
                kernel: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int],
                dilation: tuple[int, int], groups: int, dtype: str,
                count: Number = 1.0, *, compute: str | None = None,
                weight_dtype: str | None = None) -> tuple[Kernel, tuple[int, int]]:
    """The conv2d kernel and its output (height, width); no checks beyond the output size.

    Input and output are stored in *dtype*, the weights in *weight_dtype* (default *dtype*);
    the product is computed in *compute* (default *dtype*)."""
    ho = out_size(hw[0], kernel[0], stride[0], padding[0], dilation[0], name)
    wo = out_size(hw[1], kernel[1], stride[1], padding[1], dilation[1], name)
    per_group = cin // groups
    item = dtypes.ITEMSIZE[dtype]
    weights = cout * per_group * kernel[0] * kernel[1]
    flops = 2.0 * batch * ho * wo * cout * per_group * kernel[0] * kernel[1]
    w_item = item if weight_dtype is None else dtypes.ITEMSIZE[weight_dtype]
    written = batch * cout * ho * wo * item
    nbytes = batch * cin * hw[0] * hw[1] * item + written + weights * w_item
    unit = _family.conv_unit(groups, per_group)
    return Kernel(name, flops, nbytes, unit=unit, dtype=compute or dtype, count=count,
                  out_bytes=written), (ho, wo)


def pool_kernel(name: str, batch: Number, channels: int, hw: tuple[int, int],
                kernel: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int],
                kind: str, dtype: str, count: Number = 1.0, *,
                compute: str | None = None) -> tuple[Kernel, tuple[int, int]]:
    ho = out_size(hw[0], kernel[0], stride[0], padding[0], 1, name)
    wo = out_size(hw[1], kernel[1], stride[1], padding[1], 1, name)
    outputs = batch * channels * ho * wo
    per = kernel[0] * kernel[1] - 1 + (1 if kind == "avg" else 0)
    item = dtypes.ITEMSIZE[dtype]
    nbytes = (batch * channels * hw[0] * hw[1] + outputs) * item
    return Kernel(name, outputs * per, nbytes, unit="vector", dtype=compute or dtype,
                  count=count, out_bytes=outputs * item), (ho, wo)


def conv2d(
    batch: object,
    in_channels: object,
    out_channels: object = None,
    size: object = None,
    kernel: object = None,
    *,
    stride: object = 1,
    padding: object = 0,
    dilation: object = 1,
    groups: object = 1,
    dtype: object = None,
    layout: str = "nchw",
) -> Workload:
    """A 2-D convolution of *batch* images (see the module docstring for the formula).

    ``size`` and ``kernel`` are a number or a pair (height, width); ``padding`` a number, a
    pair, ``"same"`` or ``"valid"``. The knob is the batch, which may be a numpy array.

    Arrays: ``conv2d(x, w, stride=..., padding=...)`` with x [N, C, H, W] and weights
    [out, in/groups, kh, kw] (PyTorch, ``layout="nchw"``), or x [N, H, W, C] and weights
    [kh, kw, in/groups, out] (``layout="nhwc"``, JAX/TensorFlow). Bytes then follow x's and
    w's storage dtypes; ``dtype=`` sets the compute precision. *dtype* defaults to bf16 for
    sizes.
    """
    if is_arraylike(batch) and is_arraylike(in_channels):
        return _from_arrays(batch, in_channels, stride, padding, dilation, groups, layout, dtype)
    if out_channels is None or size is None or kernel is None:
        raise WorkloadError("conv2d needs batch, in_channels, out_channels, size and kernel "
                            "(or arrays: conv2d(x, w))")
    n = sweep_size(batch, "conv2d: batch")
    cin, cout = whole(in_channels, "conv2d: in_channels"), whole(out_channels,
                                                               "conv2d: out_channels")
    hw, k = pair(size, "conv2d: size"), pair(kernel, "conv2d: kernel")
    st, dil = pair(stride, "conv2d: stride"), pair(dilation, "conv2d: dilation")
    g = whole(groups, "conv2d: groups")
    pad = _padding(padding, k, dil, "conv2d")
    p = sized_precision(dtype)
    return _conv(n, cin, cout, hw, k, st, pad, dil, g, (p, p, p))


def _conv(n: Number, cin: int, cout: int, hw: tuple[int, int], k: tuple[int, int],
          st: tuple[int, int], pad: tuple[int, int], dil: tuple[int, int], g: int,
          dts: tuple[str, str, str]) -> Workload:
    p, wp, compute = dts  # storage of x and y, of the weights; compute precision
    for label, channels in (("in_channels", cin), ("out_channels", cout)):
        if channels % g:
            raise WorkloadError(f"conv2d: groups={g} must divide {label}={channels}")
    extra = "" if st == (1, 1) else f", stride {st[0]}"
    extra += "" if g == 1 else f", groups {g}"
    label = p if wp == p else f"{p}, weights {wp}"
    label += "" if compute == p else f", as {compute}"
    name = (f"conv2d({show(n)}x{cin}x{hw[0]}x{hw[1]} -> {cout}, {k[0]}x{k[1]}{extra}, {label})")
    kernel, _ = conv_kernel(name, n, cin, cout, hw, k, st, pad, dil, g, p, compute=compute,
                            weight_dtype=wp)
    knob = None if is_sweep(n) else Knob(
        "batch", int(n), lambda x: _conv(float(x), cin, cout, hw, k, st, pad, dil, g, dts))
    return Workload((kernel,), footprint=kernel.bytes, name=name, knob=knob)


def _from_arrays(x: object, w: object, stride: object, padding: object, dilation: object,
                 groups: object, layout: str, dtype: object) -> Workload:
    choice(layout, "conv2d: layout", ("nchw", "nhwc"))
    xs, ws = shape_of(x, "conv2d: x"), shape_of(w, "conv2d: w")
    if len(xs) != 4 or len(ws) != 4:
        raise WorkloadError(f"conv2d: x and w must have 4 dimensions, got {xs} and {ws}")
    if layout == "nchw":
        n, cin, h, wd = xs
        cout, per_group, kh, kw = ws
    else:
        n, h, wd, cin = xs
        kh, kw, per_group, cout = ws
    g = whole(groups, "conv2d: groups")
    if per_group * g != cin:
        raise WorkloadError(f"conv2d: weights take {per_group} input channels per group x "
                            f"{g} groups, but x has {cin} channels ({layout})")
    k, dil = (whole(kh, "conv2d: kernel"), whole(kw, "conv2d: kernel")), pair(dilation,
                                                                          "conv2d: dilation")
    p, compute = array_precision(x, dtype, "conv2d: x")
    return _conv(float(whole(n, "conv2d: batch")), cin, whole(cout, "conv2d: out_channels"),
                 (whole(h, "conv2d: height"), whole(wd, "conv2d: width")), k,
                 pair(stride, "conv2d: stride"), _padding(padding, k, dil, "conv2d"), dil, g,
                 (p, dtype_of(w, "conv2d: w"), compute))


def pool2d(batch: object, channels: object, size: object = None, kernel: object = None, *,
           stride: object = None, padding: object = 0, kind: str = "max",
           dtype: object = None, layout: str = "nchw") -> Workload:
    """Max or average pooling (see the module docstring); ``stride`` defaults to ``kernel``.

    ``pool2d(x, kernel, ...)`` takes an array-like x ([N, C, H, W], or [N, H, W, C] with
    ``layout="nhwc"``); ``dtype=`` then sets the compute precision.
    """
    choice(kind, "pool2d: kind", ("max", "avg"))
    compute = None
    if is_arraylike(batch):
        choice(layout, "pool2d: layout", ("nchw", "nhwc"))
        shape = shape_of(batch, "pool2d: x")
        if len(shape) != 4:
            raise WorkloadError(f"pool2d: x must have 4 dimensions, got shape {shape}")
        n_, c_, h_, w_ = shape if layout == "nchw" else (shape[0], shape[3], shape[1], shape[2])
        stored, compute = array_precision(batch, dtype, "pool2d: x")
        batch, channels, size, kernel, dtype = n_, c_, (h_, w_), channels, stored
    if size is None or kernel is None:
        raise WorkloadError("pool2d needs batch, channels, size and kernel (or an array: "
                            "pool2d(x, kernel))")
    n = sweep_size(batch, "pool2d: batch")
    c = whole(channels, "pool2d: channels")
    hw, k = pair(size, "pool2d: size"), pair(kernel, "pool2d: kernel")
    st = k if stride is None else pair(stride, "pool2d: stride")
    pad = _padding(padding, k, (1, 1), "pool2d")
    p = sized_precision(dtype)
    compute = compute or p
    label = p if compute == p else f"{p} as {compute}"
    name = f"{kind}pool({show(n)}x{c}x{hw[0]}x{hw[1]}, {k[0]}x{k[1]}, {label})"
    kern, _ = pool_kernel(name, n, c, hw, k, st, pad, kind, p, compute=compute)
    return Workload((kern,), footprint=kern.bytes, name=name)

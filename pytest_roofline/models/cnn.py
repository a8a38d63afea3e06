"""ResNets built layer by layer from ``ops.conv2d``.

Inference as deployed: batch norm folded into the preceding convolution and ReLU fused into
its epilogue, so a block is its convolutions plus one vector kernel for the residual add and
ReLU (2 FLOPs per element, two inputs read, one output written). The stem's 3x3/2 max pool,
the global average pool and the fully connected classifier complete the network. Blocks after
the first of each stage are identical and folded into one set of kernels with a count.

Parameters are counted like ``torchvision``: convolution and classifier weights, classifier
bias, and the two learned parameters of every batch norm channel (running statistics are
buffers, not parameters).
"""

from __future__ import annotations

from .. import dtypes
from ..errors import WorkloadError
from ..ops._common import precision, show, size, sweep_size
from ..ops.conv import conv_kernel, pool_kernel
from ..ops.matmul import matmul_kernel
from ..ops.vector import elementwise_kernel
from ..workload import Kernel, Knob, Number, Workload, is_array
from .config import ResNetConfig


class _Builder:
    """Walks the network once, collecting kernels, parameters and the largest activations."""

    def __init__(self, batch: Number, dtype: str) -> None:
        self.batch, self.dtype = batch, dtype
        self.kernels: list[Kernel] = []
        self.params = 0
        self.largest = 0.0  # elements per image of the largest input + output pair

    def conv(self, name: str, cin: int, cout: int, hw: int, k: int, stride: int,
             count: float = 1.0) -> int:
        kernel, (out, _) = conv_kernel(name, self.batch, cin, cout, (hw, hw), (k, k),
                                       (stride, stride), (k // 2, k // 2), (1, 1), 1,
                                       self.dtype, count)
        self.kernels.append(kernel)
        self.params += cout * cin * k * k + 2 * cout  # weights + batch-norm scale, shift
        self.largest = max(self.largest, cin * hw * hw + cout * out * out)
        return out

    def add_relu(self, name: str, channels: int, hw: int, count: float = 1.0) -> None:
        self.kernels.append(elementwise_kernel(name, self.batch * channels * hw * hw, 2, 1, 2.0,
                                               self.dtype, count))


class ResNet:
    """A ResNet (see the module docstring): exact parameter count, MACs, inference workload."""

    def __init__(self, config: ResNetConfig) -> None:
        if not isinstance(config, ResNetConfig):
            raise WorkloadError(f"ResNet needs a ResNetConfig, got {type(config).__name__}")
        self.config = config

    def __repr__(self) -> str:
        return f"ResNet({self.name!r}, params={self.params / 1e6:.3g}M)"

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def params(self) -> int:
        """Trainable parameters, counted as torchvision does."""
        return self._build(1.0, "bf16", self.config.image_size).params

    @property
    def macs(self) -> float:
        """Multiply-accumulates per image at the configured image size: the convolutions' and
        the classifier's FLOPs / 2 (pooling and residual adds are not multiply-accumulates)."""
        return sum(float(k.total_flops) for k in self.forward(1).kernels
                   if k.unit == "matrix") / 2.0

    def forward(self, batch: object, *, dtype: object = "bf16",
                image_size: object = None) -> Workload:
        """Inference on *batch* images (a numpy array sweeps it). Knob: the batch."""
        b = sweep_size(batch, "forward: batch")
        p = precision(dtype, "dtype")
        side = self.config.image_size if image_size is None else size(image_size,
                                                                      "forward: image_size")
        built = self._build(b, p, side)
        item = dtypes.ITEMSIZE[p]
        footprint = built.params * item + b * built.largest * item
        name = f"{self.name} forward(batch={show(b)}, {side}x{side}, {p})"

        def build(x: int) -> Workload:
            return self.forward(x, dtype=dtype, image_size=image_size)

        knob: Knob | None = None if is_array(b) else Knob("batch", int(b), build)
        return Workload(built.kernels, footprint=footprint, name=name, knob=knob)

    def _build(self, batch: Number, dtype: str, side: int) -> _Builder:
        c = self.config
        net = _Builder(batch, dtype)
        hw = net.conv("stem.conv", c.in_channels, c.stem_channels, side, 7, 2)
        pool, (hw, _) = pool_kernel("stem.maxpool", batch, c.stem_channels, (hw, hw), (3, 3),
                                    (2, 2), (1, 1), "max", dtype)
        net.kernels.append(pool)
        channels = c.stem_channels
        expansion = c.expansion if c.block == "bottleneck" else 1
        for index, (depth, width) in enumerate(zip(c.depths, c.widths, strict=True), start=1):
            stride = 1 if index == 1 else 2
            out = width * expansion
            block = self._bottleneck if c.block == "bottleneck" else self._basic
            first = f"stage{index}.block1"
            new_hw = block(net, first, channels, width, out, hw, stride, 1.0)
            if stride != 1 or channels != out:
                net.conv(f"{first}.downsample", channels, out, hw, 1, stride)
            net.add_relu(f"{first}.add_relu", out, new_hw)
            if depth > 1:
                rest = f"stage{index}.blocks2-{depth}" if depth > 2 else f"stage{index}.block2"
                block(net, rest, out, width, out, new_hw, 1, float(depth - 1))
                net.add_relu(f"{rest}.add_relu", out, new_hw, float(depth - 1))
                net.params += (depth - 2) * self._block_params(out, width, out)
            channels, hw = out, new_hw
        pool, _ = pool_kernel("avgpool", batch, channels, (hw, hw), (hw, hw), (1, 1), (0, 0),
                              "avg", dtype)
        net.kernels.append(pool)
        net.kernels.append(matmul_kernel("fc", batch, channels, c.classes, dtype, dtype, dtype,
                                         dtype))
        net.params += channels * c.classes + c.classes
        return net

    def _bottleneck(self, net: _Builder, name: str, cin: int, width: int, cout: int, hw: int,
                    stride: int, count: float) -> int:
        net.conv(f"{name}.conv1", cin, width, hw, 1, 1, count)
        out = net.conv(f"{name}.conv2", width, width, hw, 3, stride, count)
        net.conv(f"{name}.conv3", width, cout, out, 1, 1, count)
        return out

    def _basic(self, net: _Builder, name: str, cin: int, width: int, cout: int, hw: int,
               stride: int, count: float) -> int:
        out = net.conv(f"{name}.conv1", cin, width, hw, 3, stride, count)
        net.conv(f"{name}.conv2", width, cout, out, 3, 1, count)
        return out

    def _block_params(self, cin: int, width: int, cout: int) -> int:
        """Parameters of one non-downsampling block (the repeats beyond the counted one)."""
        if self.config.block == "bottleneck":
            return (cin * width + 2 * width + width * width * 9 + 2 * width + width * cout
                    + 2 * cout)
        return cin * width * 9 + 2 * width + width * cout * 9 + 2 * cout


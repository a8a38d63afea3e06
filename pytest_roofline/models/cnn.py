"""ResNets built layer by layer from ``ops.conv2d``.

Inference under the fusion model of :mod:`pytest_roofline.engine.fusion`:

* ``fusion="epilogue"`` (default, as TensorRT and torch.compile deploy it): batch norm folded
  into the convolution's weights; ReLU (1 FLOP per element) and, after a block's last
  convolution, the residual add (1 FLOP per element, the residual read) run in the
  convolution's epilogue (kernels of their own, timed with it), so each convolution's
  activated output is written once;
* ``fusion="none"`` (eager PyTorch): every convolution is followed by a batch-norm kernel
  (2 FLOPs per element), then the residual add and the ReLU, each its own kernel reading and
  writing off-chip memory.

The tensors a block hands on are marked as handoffs (one image a piece): conv1 -> conv2 ->
conv3 (and, unfused, each conv -> bn -> relu), the block's input to conv1 and to the
residual add or the downsample, the downsample's output to the add, the stem to the max
pool and the last block to the classifier. On a chip whose on-chip memory holds one image's
tensor, it is not charged to off-chip memory (an engine may run the batch in sub-batches that
fit; the weights it then reads again are not charged). Only the images, the weights and the
logits are always charged. The stem's 3x3/2 max pool, the global average pool and the fully
connected classifier complete the network. Blocks after the first of each stage are
identical and folded into one set of kernels with a count.

Parameters are counted like ``torchvision``: convolution and classifier weights, classifier
bias, and the two learned parameters of every batch norm channel (running statistics are
buffers, not parameters).
"""

from __future__ import annotations

from .. import dtypes
from ..engine import fusion as _fusion
from ..engine.workload import Kernel, Knob, Number, Workload, is_array
from ..errors import WorkloadError
from ..ops import _family
from ..ops._common import precision, show, size, sweep_size
from ..ops.conv import conv_kernel, pool_kernel
from ..ops.matmul import matmul_kernel
from ..ops.vector import elementwise_kernel
from .config import ResNetConfig


class _Builder:
    """Walks the network once, collecting kernels, parameters and the largest activations."""

    def __init__(self, batch: Number, dtype: str, fusion: str) -> None:
        self.batch, self.dtype, self.fusion = batch, dtype, fusion
        self.kernels: list[Kernel] = []
        self.params = 0
        self.largest = 0.0  # elements per image of the largest input + output pair

    def conv(self, name: str, cin: int, cout: int, hw: int, k: int, stride: int,
             count: float = 1.0, *, relu: bool = True,
             add: bool = False) -> tuple[int, list[Kernel]]:
        """A convolution and its epilogue (batch norm, residual add, ReLU) under the fusion
        policy; returns the output side and the kernels, not yet added to the network."""
        kernel, (out, _) = conv_kernel(name, self.batch, cin, cout, (hw, hw), (k, k),
                                       (stride, stride), (k // 2, k // 2), (1, 1), 1,
                                       self.dtype, count)
        self.params += cout * cin * k * k + 2 * cout  # weights + batch-norm scale, shift
        self.largest = max(self.largest, cin * hw * hw + cout * out * out)
        elements = self.batch * cout * out * out
        post: list[Kernel] = []
        if self.fusion == "none":
            post.append(elementwise_kernel(f"{name}.bn", elements, 1, 1,
                                           _family.EVAL_BATCH_NORM_FLOPS, self.dtype, count))
        if add:
            post.append(elementwise_kernel(f"{name}.add", elements, 2, 1, 1.0, self.dtype, count))
        if relu:
            post.append(elementwise_kernel(f"{name}.relu", elements, 1, 1, 1.0, self.dtype,
                                           count))
        return out, _fusion.chain(self.fusion, kernel, *post)

    def handoffs(self, kernels: list[Kernel]) -> list[Kernel]:
        """A straight chain of handoffs of this batch's tensors (one image a piece)."""
        return _fusion.handoffs(kernels, pieces=self.batch)

    def hand(self, producer: int, consumer: int) -> None:
        """Mark the output of kernel *producer* as handed to kernel *consumer* (indices)."""
        self.kernels[producer], self.kernels[consumer] = _fusion.handoff(
            self.kernels[producer], self.kernels[consumer], pieces=self.batch)

    def add(self, kernels: list[Kernel]) -> int:
        """Append *kernels*; the index of the first."""
        self.kernels += kernels
        return len(self.kernels) - len(kernels)


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
        return self._build(1.0, "bf16", self.config.image_size, "epilogue").params

    @property
    def macs(self) -> float:
        """Multiply-accumulates per image at the configured image size: the convolutions' and
        the classifier's FLOPs / 2 (pooling and residual adds are not multiply-accumulates)."""
        return sum(float(k.total_flops) for k in self.forward(1).kernels
                   if k.unit == "matrix") / 2.0

    def forward(self, batch: object, *, dtype: object = "bf16", image_size: object = None,
                fusion: str = _fusion.MODEL_DEFAULT) -> Workload:
        """Inference on *batch* images (a numpy array sweeps it). Knob: the batch.
        *fusion*: ``"epilogue"`` (default) or ``"none"`` (see the module docstring)."""
        b = sweep_size(batch, "forward: batch")
        p = precision(dtype, "dtype")
        policy = _fusion.policy(fusion)
        side = self.config.image_size if image_size is None else size(image_size,
                                                                      "forward: image_size")
        built = self._build(b, p, side, policy)
        item = dtypes.ITEMSIZE[p]
        footprint = built.params * item + b * built.largest * item
        extra = "" if policy == _fusion.MODEL_DEFAULT else f", fusion={policy}"
        name = f"{self.name} forward(batch={show(b)}, {side}x{side}, {p}{extra})"

        def build(x: int) -> Workload:
            return self.forward(x, dtype=dtype, image_size=image_size, fusion=fusion)

        knob: Knob | None = None if is_array(b) else Knob("batch", int(b), build)
        return Workload(built.kernels, footprint=footprint, name=name, knob=knob)

    def _build(self, batch: Number, dtype: str, side: int, policy: str) -> _Builder:
        c = self.config
        net = _Builder(batch, dtype, policy)
        hw, stem = net.conv("stem.conv", c.in_channels, c.stem_channels, side, 7, 2)
        pool, (hw, _) = pool_kernel("stem.maxpool", batch, c.stem_channels, (hw, hw), (3, 3),
                                    (2, 2), (1, 1), "max", dtype)
        net.add(net.handoffs([*stem, pool]))
        tail = len(net.kernels) - 1  # the kernel that wrote the current block's input
        channels = c.stem_channels
        expansion = c.expansion if c.block == "bottleneck" else 1
        for index, (depth, width) in enumerate(zip(c.depths, c.widths, strict=True), start=1):
            stride = 1 if index == 1 else 2
            out = width * expansion
            block = self._bottleneck if c.block == "bottleneck" else self._basic
            first = f"stage{index}.block1"
            down: int | None = None
            if stride != 1 or channels != out:
                _, kernels = net.conv(f"{first}.downsample", channels, out, hw, 1, stride,
                                      relu=False)
                down = net.add(net.handoffs(kernels)) + len(kernels) - 1
                net.hand(tail, down - len(kernels) + 1)
            start = len(net.kernels)
            new_hw, add = block(net, first, channels, width, out, hw, stride, 1.0)
            net.hand(tail, start)
            net.hand(tail if down is None else down, add)
            tail = len(net.kernels) - 1
            if depth > 1:
                rest = f"stage{index}.blocks2-{depth}" if depth > 2 else f"stage{index}.block2"
                start = len(net.kernels)
                _, add = block(net, rest, out, width, out, new_hw, 1, float(depth - 1))
                net.hand(tail, start)
                net.hand(tail, add)
                tail = len(net.kernels) - 1
                net.params += (depth - 2) * self._block_params(out, width, out)
            channels, hw = out, new_hw
        pool, _ = pool_kernel("avgpool", batch, channels, (hw, hw), (hw, hw), (1, 1), (0, 0),
                              "avg", dtype)
        net.hand(tail, net.add(net.handoffs([
            pool, matmul_kernel("fc", batch, channels, c.classes, dtype, dtype, dtype, dtype)])))
        net.params += channels * c.classes + c.classes
        return net

    def _bottleneck(self, net: _Builder, name: str, cin: int, width: int, cout: int, hw: int,
                    stride: int, count: float) -> tuple[int, int]:
        """Adds the block's kernels; returns its output side and the index of the kernel
        that adds the residual."""
        _, first = net.conv(f"{name}.conv1", cin, width, hw, 1, 1, count)
        out, second = net.conv(f"{name}.conv2", width, width, hw, 3, stride, count)
        _, third = net.conv(f"{name}.conv3", width, cout, out, 1, 1, count, add=True)
        start = net.add(net.handoffs([*first, *second, *third]))
        return out, start + len(first) + len(second) + _adder(third)

    def _basic(self, net: _Builder, name: str, cin: int, width: int, cout: int, hw: int,
               stride: int, count: float) -> tuple[int, int]:
        out, first = net.conv(f"{name}.conv1", cin, width, hw, 3, stride, count)
        _, second = net.conv(f"{name}.conv2", width, cout, out, 3, 1, count, add=True)
        start = net.add(net.handoffs([*first, *second]))
        return out, start + len(first) + _adder(second)

    def _block_params(self, cin: int, width: int, cout: int) -> int:
        """Parameters of one non-downsampling block (the repeats beyond the counted one)."""
        if self.config.block == "bottleneck":
            return (cin * width + 2 * width + width * width * 9 + 2 * width + width * cout
                    + 2 * cout)
        return cin * width * 9 + 2 * width + width * cout * 9 + 2 * cout


def _adder(kernels: list[Kernel]) -> int:
    """Index of the kernel that adds the residual (in the convolution's epilogue or not)."""
    for i, kernel in enumerate(kernels):
        if kernel.name.endswith(".add"):
            return i
    raise AssertionError("no residual add among the block's last kernels")  # pragma: no cover

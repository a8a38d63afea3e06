"""torchvision beside the CPU build of torch, for the model-zoo tests.

The torchvision wheels on PyPI for Linux x86-64 are built against the CUDA build of torch:
their C extension (``torchvision/_C.so``, the detection ops ``nms``, ``roi_align``, ...)
links ``libtorch_cuda.so`` and fails to load beside the CPU build. torchvision then still
imports its pure-Python parts, except that ``torchvision._meta_registrations`` registers
fake kernels for ``torchvision::nms`` and ``torchvision::qnms`` without checking that the
ops exist, so ``import torchvision`` (and ``transformers``, which imports it when it is
installed) fails with "operator torchvision::nms does not exist".

:func:`allow_torchvision_without_extension` declares the schemas of those two ops, as the
extension would, through the public ``torch.library.define``, before torchvision is first
imported, and only when the extension cannot load. The classifiers in
``torchvision.models`` are pure Python and run on meta tensors; calling a detection op then
fails with torch's "no kernel" error instead of a wrong answer.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

#: The two ops ``torchvision._meta_registrations`` registers unconditionally.
SCHEMAS = {"torchvision::nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
           "torchvision::qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"}


def allow_torchvision_without_extension() -> bool:
    """Declare the ops torchvision's import needs when its C extension cannot load; True
    when it did so. Nothing happens when torchvision is absent or its extension loads."""
    if "torchvision" in sys.modules:
        return False
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return False
    import torch

    extension = next(Path(spec.origin).parent.glob("_C*.so"), None)
    if extension is not None:
        try:
            torch.ops.load_library(str(extension))
            return False
        except OSError:
            pass
    for name, schema in SCHEMAS.items():
        namespace, op = name.split("::")
        if not hasattr(getattr(torch.ops, namespace), op):
            torch.library.define(name, schema)
    return True

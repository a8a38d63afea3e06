"""What the torch recorder and the torch formulas read of an op's arguments: its tensors,
the bytes they hold and their precision (one rule for every torch op)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from . import _kernels as K
from ._torch_compat import written_keywords


def tensors(value: object) -> Iterable[torch.Tensor]:
    """The tensors of an argument, a list or tuple of them (nested), or none."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors(item)


def operands(args: tuple[Any, ...], kwargs: dict[str, Any],
             func: Any = None) -> list[torch.Tensor]:
    """The tensors among an op's positional and keyword arguments, in order. With the op
    (*func*), an ``out=`` tensor (a keyword-only argument its schema marks written) is left
    out: the op writes it (it is among the op's outputs), it never reads it."""
    found = list(tensors(args))
    if kwargs:
        written = written_keywords(func) if func is not None else set()
        found += tensors([v for k, v in kwargs.items() if k not in written])
    return found


def touched(t: torch.Tensor) -> int:
    """Elements a kernel reads of *t*: broadcast (stride-0) dimensions are stored once."""
    if t.dim() == 0:
        return 1
    n = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if stride != 0:
            n *= size
        elif size == 0:
            return 0
    return n


def nbytes(inputs: Iterable[torch.Tensor], outputs: Iterable[torch.Tensor] = ()) -> float:
    """Bytes an op moves: each distinct input read once (its stored elements: a broadcast
    view reads what it holds), each output written once."""
    seen: set[int] = set()
    total = 0
    for t in inputs:
        if t is not None and id(t) not in seen:
            seen.add(id(t))
            total += touched(t) * t.dtype.itemsize
    for t in outputs:
        total += t.numel() * t.dtype.itemsize
    return float(total)


def precision(t: torch.Tensor) -> str | None:
    """The canonical precision of a tensor's storage (None for a dtype the project does not
    know)."""
    return K.precision(t.dtype)

"""Which lanes of a Triton block hold data, as the launch counter (:mod:`._triton_count`)
follows them through the interpreter's values.

A lane a masked load did not read is padding; the counter notes the lanes that hold data on
the interpreter's value (``TensorHandle._rl_valid``: a bool array, absent for every lane).
An operation's lanes are valid where all of its operands' are (:func:`joined`); an add,
min or max holds data where either operand does, a subtract where its first operand does
(``acc - pad`` is ``acc``; ``pad - acc`` is padding), but a value broadcast from fewer lanes
or a constant adds none (:func:`either`: a loop's accumulator keeps the lanes of its
earlier chunks); lane-moving operations move the mask with the data (:func:`moved`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np


def arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    """An argument of a builder call, by keyword where it was passed so, else by position."""
    if name in kwargs:
        return kwargs[name]
    return args[index] if index < len(args) else None


def handles(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The interpreter values among a builder call's arguments."""
    return [a for a in (*args, *kwargs.values()) if hasattr(a, "data") and hasattr(a, "dtype")]


def valid_of(handle: Any) -> Any:
    """The lanes of *handle* that hold data (None: every lane)."""
    return getattr(handle, "_rl_valid", None)


def mark(handle: Any, valid: Any) -> Any:
    """Note *valid* (a bool array, or None: every lane) on *handle*."""
    if valid is not None and hasattr(handle, "data"):
        with contextlib.suppress(ValueError, AttributeError):
            handle._rl_valid = np.broadcast_to(valid, np.shape(handle.data))
    return handle


def joined(handles: list[Any]) -> Any:
    """The lanes valid in every operand (None: all of them, or shapes that do not
    broadcast, which the operation itself will refuse)."""
    found = None
    for handle in handles:
        valid = valid_of(handle)
        if valid is None:
            continue
        try:
            found = valid if found is None else np.logical_and(found, valid)
        except ValueError:
            return None
    return found


def either(handles: list[Any], joined: Any) -> Any:
    """The lanes holding data in an add's result: where any operand of the block's own
    lanes (not a constant, not a value broadcast from fewer lanes) holds data."""
    if joined is None:
        return None
    found = joined
    for handle in handles:
        if getattr(handle, "_rl_spread", False):
            continue
        valid = valid_of(handle)
        if valid is None:
            return None  # every lane of this operand holds data
        try:
            found = np.logical_or(found, valid)
        except ValueError:
            return None
    return found


def lanes(handle: Any, valid: Any) -> int:
    return int(np.count_nonzero(valid)) if valid is not None else int(np.size(handle.data))


def ones(shape: tuple[int, ...], valid: Any) -> Any:
    if valid is None or np.shape(valid) != shape:
        return np.ones(shape, dtype=np.float32)
    return np.asarray(valid, dtype=np.float32)


def mask_lanes(ptrs: Any, mask: Any) -> Any:
    shape = np.shape(ptrs.data)
    if mask is None:
        return np.ones(shape, dtype=bool)
    return np.broadcast_to(np.asarray(mask.data), shape).astype(bool)


def moved(name: str, ops: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The valid lanes of a lane-moving op's result (a tuple of two for a split), moved as
    the data is; None: every lane."""
    masks = [valid_of(h) for h in ops]
    if all(m is None for m in masks):
        return None
    first = masks[0]
    try:
        if name == "create_broadcast":
            return None if first is None else np.broadcast_to(first, arg(args, kwargs, 1,
                                                                          "shape"))
        if name == "create_expand_dims":
            return None if first is None else np.expand_dims(first, arg(args, kwargs, 1,
                                                                         "axis"))
        if name == "create_reshape":
            return None if first is None else np.reshape(first, arg(args, kwargs, 1, "shape"))
        if name == "create_trans":
            return None if first is None else np.transpose(first, arg(args, kwargs, 1,
                                                                       "perm"))
        if name == "create_split":
            return None if first is None else (first[..., 0], first[..., 1])
        if name == "create_join":
            parts = [np.broadcast_to(m, np.shape(h.data)) if m is not None
                     else np.ones(np.shape(h.data), dtype=bool) for h, m in zip(ops, masks,
                                                                               strict=False)]
            return np.stack(parts, axis=-1)
        if name == "create_cat":
            parts = [np.broadcast_to(m, np.shape(h.data)) if m is not None
                     else np.ones(np.shape(h.data), dtype=bool) for h, m in zip(ops, masks,
                                                                               strict=False)]
            return np.concatenate(parts)
        if name == "create_gather":
            src, index = ops[0], ops[1]
            lanes = np.take_along_axis(
                np.broadcast_to(first, np.shape(src.data)) if first is not None
                else np.ones(np.shape(src.data), dtype=bool),
                np.asarray(index.data), axis=arg(args, kwargs, 2, "axis"))
            return lanes if masks[1] is None else np.logical_and(lanes, masks[1])
    except (ValueError, TypeError, IndexError):
        return None
    return None  # splat, unsplat: a scalar's value, every lane

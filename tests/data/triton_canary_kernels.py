"""Kernels for tests/test_trace_compat.py's Triton canaries: one of each kind of operation
the launch counter wraps (masked loads and stores, elementwise floating-point arithmetic, a
transcendental, a reduction, a scan, an atomic, a dot), and one that calls a
``@triton.jit`` helper and ``tl.cdiv``. Written for these tests."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def lanes(x_ptr, y_ptr, out_ptr, scan_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    z = tl.exp(x * y + x)
    tl.store(out_ptr + offsets, z, mask=mask)
    tl.store(scan_ptr + offsets, tl.cumsum(z, axis=0), mask=mask)
    tl.atomic_add(total_ptr, tl.sum(z, axis=0))


@triton.jit
def dot(a_ptr, b_ptr, c_ptr, S: tl.constexpr):
    rows = tl.arange(0, S)[:, None] * S + tl.arange(0, S)[None, :]
    tl.store(c_ptr + rows, tl.dot(tl.load(a_ptr + rows), tl.load(b_ptr + rows)))


@triton.jit
def twice(x):
    return x * 2.0


@triton.jit
def helped(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < tl.cdiv(n, 1)
    tl.store(x_ptr + offsets, twice(tl.load(x_ptr + offsets, mask=mask)), mask=mask)

"""Kernels of the vector units: dot, elementwise, reduction, softmax, norms, embedding lookup.

These run on the vector (SIMD, CUDA-core, VPU) units, never on the matrix units: their FLOPs
are priced at the chip's vector peak. Each reads its inputs once and writes its outputs once.
FLOPs per element (an exp or a divide counts as one operation, like an add):

=============  =====  =====================================================================
kernel         FLOPs  per element
=============  =====  =====================================================================
softmax        5      max, subtract, exp, sum, divide (one pass, online softmax)
layernorm      7      mean (add), variance (subtract, square, add), normalize (multiply),
                      affine (multiply, add); 5 without the affine scale and shift
rmsnorm        4      square, add, normalize (multiply), scale (multiply); 3 without weight
residual add   +1     a norm that also adds the residual stream (``residual=True``, the
                      fused add-and-norm of inference engines) reads and writes it too
=============  =====  =====================================================================
"""

from __future__ import annotations

import math
import operator

from .. import dtypes
from ..engine.workload import Kernel, Number, Workload, is_array
from ..errors import WorkloadError, brief
from . import _family
from ._common import (
    array_precision,
    flag,
    is_arraylike,
    number,
    shape_of,
    size,
    sized_precision,
)

# -- kernels (no checks; shared with the model builders) -------------------------------------


def elementwise_kernel(name: str, n: Number, inputs: float, outputs: float, flops: float,
                       dtype: str, count: Number = 1.0, *, compute: str | None = None) -> Kernel:
    """n elements: ``flops`` FLOPs each, ``inputs`` tensors read and ``outputs`` written, stored
    in *dtype* and computed in *compute* (default: *dtype*)."""
    item = dtypes.ITEMSIZE[dtype]
    return Kernel(name, n * flops, n * (inputs + outputs) * item, unit="vector",
                  dtype=compute or dtype, count=count, out_bytes=n * outputs * item)


def norm_kernel(name: str, kind: str, rows: Number, hidden: int, dtype: str, *,
                affine: bool = True, residual: bool = False, count: Number = 1.0,
                compute: str | None = None) -> Kernel:
    """A layernorm or rmsnorm of rows x hidden (see the module table)."""
    per = _family.norm_flops(kind, 1.0, weight=affine, bias=affine)
    params = (2.0 if kind == "layernorm" else 1.0) if affine else 0.0
    streams = 2.0
    if residual:
        per += 1.0
        streams = 4.0  # read x and the residual, write the new residual and the normalized x
    elements = rows * hidden
    item = dtypes.ITEMSIZE[dtype]
    return Kernel(name, elements * per, (elements * streams + params * hidden) * item,
                  unit="vector", dtype=compute or dtype, count=count, out_bytes=elements * item)


def softmax_kernel(name: str, rows: Number, cols: Number, dtype: str,
                   count: Number = 1.0, *, compute: str | None = None) -> Kernel:
    elements = rows * cols
    item = dtypes.ITEMSIZE[dtype]
    return Kernel(name, _family.softmax_flops(elements), 2.0 * elements * item, unit="vector",
                  dtype=compute or dtype, count=count, out_bytes=elements * item)


def distinct_rows(tokens: Number, rows: Number | None) -> Number:
    """Rows a gather of *tokens* ids reads from a table of *rows* rows: each distinct row
    once, so at most min(tokens, rows) (*rows* None: unknown, every token's row)."""
    if rows is None:
        return tokens
    if is_array(tokens) or is_array(rows):
        import numpy as np

        return np.minimum(tokens, rows)
    return min(tokens, rows)


def embedding_kernel(name: str, tokens: Number, hidden: int, dtype: str,
                     count: Number = 1.0, *, vocab: Number | None = None) -> Kernel:
    """A gather of one table row per token: reads each distinct row once (at most
    min(tokens, vocab) of them), writes one row per token; no FLOPs."""
    read = distinct_rows(tokens, vocab)
    return Kernel(name, 0.0, (read + tokens) * hidden * dtypes.ITEMSIZE[dtype], unit="vector",
                  dtype=dtype, count=count)


def _one(kernel: Kernel, footprint: Number) -> Workload:
    return Workload((kernel,), footprint=footprint, name=kernel.name)


def _label(stored: str, compute: str) -> str:
    return stored if stored == compute else f"{stored} as {compute}"


def _array(x: object, dtype: object, what: str) -> tuple[int, str, str, str]:
    """(elements, storage, compute, label) of an array operand of a vector op."""
    stored, compute = array_precision(x, dtype, what)
    return size(math.prod(shape_of(x, what)), f"{what}: elements"), stored, compute, _label(
        stored, compute)


def _sized(dtype: object) -> tuple[str, str, str]:
    p = sized_precision(dtype)
    return p, p, p


def _rows_cols(x: object, axis: object, what: str) -> tuple[int, int]:
    """(rows, cols) of an array normalized or reduced along *axis*."""
    shape = shape_of(x, what)
    try:
        index = range(len(shape))[operator.index(axis)]  # type: ignore[arg-type]
    except TypeError:
        raise WorkloadError(f"{what}: axis must be a whole number, got {brief(axis)}") from None
    except IndexError:
        raise WorkloadError(f"{what}: axis {axis!r} is out of range for shape {shape}") from None
    if isinstance(axis, bool):
        raise WorkloadError(f"{what}: axis must be a whole number, got {brief(axis)}")
    cols = size(shape[index], f"{what}: dimension {index}")
    return math.prod(shape) // cols, cols


# -- public formulas ---------------------------------------------------------------------------


def dot(n: object, y: object = None, *, dtype: object = None) -> Workload:
    """``x · y`` of two length-n vectors: n multiplies and n - 1 adds = 2n - 1 FLOPs.

    Bytes: both vectors read (2n elements) and one element written: (2n + 1)·|dtype|. The
    intensity tends to 1/2 FLOP/B in bf16 however long the vectors (the scaling book's first
    example): always memory-bound. ``dot(x, y)`` reads an array's size and dtype (``dtype=``
    then sets the compute precision).
    """
    if is_arraylike(n):
        length, p, compute, label = _array(n, dtype, "dot: x")
        if y is not None and is_arraylike(y) and math.prod(shape_of(y, "dot: y")) != length:
            raise WorkloadError(f"dot: x has {length} elements but y has "
                                f"{math.prod(shape_of(y, 'dot: y'))}")
    else:
        (p, compute, label), length = _sized(dtype), size(n, "dot: n")
    item = dtypes.ITEMSIZE[p]
    kernel = Kernel(f"dot({length}, {label})", _family.dot_flops(length),
                    (2.0 * length + 1.0) * item,
                    unit="vector", dtype=compute)
    return _one(kernel, kernel.bytes)


def elementwise(n: object, *, inputs: int = 1, outputs: int = 1, flops_per_element: float = 1.0,
                dtype: object = None, name: str = "elementwise") -> Workload:
    """An elementwise op over n elements: n·flops_per_element FLOPs,
    n·(inputs + outputs)·|dtype| bytes (each input read once, each output written once).

    ``elementwise(x, ...)`` reads n and the precision from an array-like (bool and integer
    arrays too: masks, indices); ``dtype=`` then sets the compute precision.
    """
    if not isinstance(name, str):
        raise WorkloadError(f"elementwise: name must be a string, got {brief(name)}")
    if is_arraylike(n):
        count, p, compute, label = _array(n, dtype, f"{name}: x")
    else:
        (p, compute, label), count = _sized(dtype), size(n, f"{name}: n")
    ins = size(inputs, f"{name}: inputs", minimum=0)
    outs = size(outputs, f"{name}: outputs", minimum=0)
    if ins + outs == 0:
        raise WorkloadError(f"{name}: inputs + outputs must be >= 1, got inputs={brief(inputs)}, "
                            f"outputs={brief(outputs)}")
    per = number(flops_per_element, f"{name}: flops_per_element")
    title = f"{name}({count}, {ins} in, {outs} out, {label})"
    kernel = elementwise_kernel(title, float(count), ins, outs, per, p,
                                compute=compute)
    return _one(kernel, kernel.bytes)


def reduction(n: object, *, outputs: int = 1, axis: object = None,
              dtype: object = None) -> Workload:
    """A sum of n elements into *outputs* results: n - outputs adds, (n + outputs)·|dtype| B.

    ``reduction(x, axis=-1)`` reduces an array-like along *axis* (all axes when None);
    ``dtype=`` then sets the compute precision.
    """
    if is_arraylike(n):
        total, p, compute, label = _array(n, dtype, "reduction: x")
        outs = 1 if axis is None else _rows_cols(n, axis, "reduction")[0]
    else:
        p, compute, label = _sized(dtype)
        total, outs = size(n, "reduction: n"), size(outputs, "reduction: outputs")
        if total % outs:
            raise WorkloadError(f"reduction: outputs={outs} does not divide n={total}")
    kernel = Kernel(f"reduction({total} -> {outs}, {label})",
                    _family.reduce_flops(float(total), float(outs)),
                    float(total + outs) * dtypes.ITEMSIZE[p], unit="vector", dtype=compute)
    return _one(kernel, kernel.bytes)


def softmax(rows: object, cols: object = None, *, axis: int = -1,
            dtype: object = None) -> Workload:
    """Softmax over *cols* for each of *rows*: 5 FLOPs per element on the vector units,
    one read and one write of rows·cols elements. ``softmax(x, axis=-1)`` takes an array-like;
    ``dtype=`` then sets the compute precision (bytes stay at x's storage dtype).
    """
    if is_arraylike(rows):
        r, c = _rows_cols(rows, axis, "softmax")
        _, p, compute, label = _array(rows, dtype, "softmax: x")
    else:
        if cols is None:
            raise WorkloadError("softmax needs rows and cols (or an array: softmax(x))")
        (p, compute, label), r, c = _sized(dtype), size(rows, "softmax: rows"), size(
            cols, "softmax: cols")
    kernel = softmax_kernel(f"softmax({r}x{c}, {label})", float(r), float(c), p,
                            compute=compute)
    return _one(kernel, kernel.bytes)


def _norm(kind: str, rows: object, hidden: object, dtype: object, affine: bool,
          residual: bool) -> Workload:
    flag(affine, f"{kind}: affine")
    flag(residual, f"{kind}: residual")
    if is_arraylike(rows):
        r, h = _rows_cols(rows, -1, kind)
        _, p, compute, label = _array(rows, dtype, f"{kind}: x")
    else:
        if hidden is None:
            raise WorkloadError(f"{kind} needs rows and hidden (or an array: {kind}(x))")
        (p, compute, label), r, h = _sized(dtype), size(rows, f"{kind}: rows"), size(
            hidden, f"{kind}: hidden")
    extra = " + residual" if residual else ""
    kernel = norm_kernel(f"{kind}({r}x{h}{extra}, {label})", kind, float(r), h, p,
                         affine=affine, residual=residual, compute=compute)
    return _one(kernel, kernel.bytes)


def layernorm(rows: object, hidden: object = None, *, dtype: object = None,
              affine: bool = True, residual: bool = False) -> Workload:
    """LayerNorm of rows x hidden: 7 FLOPs per element (5 without affine) on the vector units.

    Bytes: x read and y written (2·rows·hidden elements) plus the scale and shift
    (2·hidden); ``residual=True`` also reads and writes the residual stream (+1 FLOP and
    +2 elements per element). ``layernorm(x)`` normalizes an array-like's last axis.
    """
    return _norm("layernorm", rows, hidden, dtype, affine, residual)


def rmsnorm(rows: object, hidden: object = None, *, dtype: object = None,
            affine: bool = True, residual: bool = False) -> Workload:
    """RMSNorm of rows x hidden: 4 FLOPs per element (3 without weight), vector units.

    Bytes: x read and y written plus the weight (hidden elements); ``residual=True`` as for
    :func:`layernorm`. ``rmsnorm(x)`` normalizes an array-like's last axis.
    """
    return _norm("rmsnorm", rows, hidden, dtype, affine, residual)


def embedding(tokens: object, hidden: object = None, *, vocab: object = None,
              dtype: object = None, distinct: object = None) -> Workload:
    """Embedding lookup: one table row gathered per token. No FLOPs; bytes = (rows read +
    tokens)·hidden elements: each distinct row read once, one row written per token. Only the
    gathered rows move: the table is never read in full, and a row two tokens share is read
    once (the second read hits the cache), so with a *vocab* of fewer rows than tokens at most
    vocab rows are read (16,384 ids from 1,024 rows read 1,024). *distinct* states how many
    distinct ids there are when known (default min(tokens, vocab), or tokens without a
    vocab). The footprint includes the table when *vocab* is given.

    ``embedding(ids, table)`` takes the token ids and the [vocab, hidden] table as arrays;
    ids whose values can be read (numpy, a CPU tensor) give the distinct count exactly.
    """
    known = None if distinct is None else size(distinct, "embedding: distinct")
    if is_arraylike(tokens) and is_arraylike(hidden):
        table = shape_of(hidden, "embedding: table")
        if len(table) != 2:
            raise WorkloadError(f"embedding: table must be [vocab, hidden], got shape {table}")
        n = size(math.prod(shape_of(tokens, "embedding: ids")), "embedding: tokens")
        v, h = size(table[0], "embedding: vocab"), size(table[1], "embedding: hidden")
        p = array_precision(hidden, None, "embedding: table")[0]
        if known is None:
            known = _unique_count(tokens)
    else:
        if hidden is None:
            raise WorkloadError("embedding needs tokens and hidden (or arrays: "
                                "embedding(ids, table))")
        n, h, p = size(tokens, "embedding: tokens"), size(hidden, "embedding: hidden"), \
            _sized(dtype)[0]
        v = 0 if vocab is None else size(vocab, "embedding: vocab")
    if known is not None and known > min(n, v or n):
        raise WorkloadError(f"embedding: distinct={known} ids, but there are {n} tokens"
                            + (f" and {v} rows" if v else ""))
    rows = float(known) if known is not None else (float(v) if v else None)
    kernel = embedding_kernel(f"embedding({n} tokens x {h}, {p})", float(n), h, p, vocab=rows)
    return _one(kernel, (2.0 * n + v) * h * dtypes.ITEMSIZE[p])  # ids' rows, output, table


def _unique_count(ids: object) -> int | None:
    """Distinct values of an array of ids whose values can be read (None otherwise: a GPU,
    meta or fake tensor, or anything numpy cannot read without a copy off the device)."""
    try:
        import numpy as np

        values = np.asarray(ids)
        if values.dtype.kind not in "iu":
            return None
        return int(np.unique(values).size)
    except Exception:  # any array type that will not give its values
        return None


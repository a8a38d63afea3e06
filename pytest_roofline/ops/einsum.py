"""``einsum``: any contraction, written in Einstein notation.

Formula: operands are contracted pairwise from left to right (numpy's order without
``optimize``). A pairwise step over the index set I of both operands costs 2·prod(I) FLOPs
when it sums over at least one index (one multiply and one add per point of I, on the matrix
units); a step that sums over nothing (an outer or elementwise product) costs prod(I)
multiplies on the vector units. Each step reads its two operands once and writes its result
once (the matmul traffic model). A single operand (a trace, a sum over axes, a transpose) is
vector work: one add per input element when it sums, none otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import dtypes
from ..engine.workload import Kernel, Workload
from ..errors import WorkloadError, brief
from ._common import dtype_of, given, is_arraylike, precision, shape_of, size, sized_precision

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse(subscripts: str, ranks: list[int]) -> tuple[list[str], str, str]:
    text = subscripts.replace(" ", "")
    if "->" in text:
        inputs_text, output = text.split("->", 1)
        if "->" in output:
            raise WorkloadError(f"einsum: {subscripts!r} has more than one '->'")
    else:
        inputs_text, output = text, None  # type: ignore[assignment]
    inputs = inputs_text.split(",")
    if len(inputs) != len(ranks):
        raise WorkloadError(f"einsum: {subscripts!r} names {len(inputs)} operand(s) but "
                            f"{len(ranks)} were given")
    used = set(text) - set(".,->")
    spare = [c for c in _LETTERS if c not in used]
    extras = [rank - (len(term) - 3) if "..." in term else 0
              for term, rank in zip(inputs, ranks, strict=True)]
    for term, extra, rank in zip(inputs, extras, ranks, strict=True):
        if extra < 0:
            raise WorkloadError(f"einsum: term {term!r} needs more dimensions than the "
                                f"operand's {rank}")
    widest = max(extras)
    expanded = [term.replace("...", "".join(spare[widest - extra:widest]))
                for term, extra in zip(inputs, extras, strict=True)]
    ellipsis = "".join(spare[:widest])
    for term in expanded:
        bad = [c for c in term if c not in _LETTERS]
        if bad:
            raise WorkloadError(f"einsum: {subscripts!r}: {bad[0]!r} is not an index letter")
    if output is None:
        counts: dict[str, int] = {}
        for term in expanded:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        output = ellipsis + "".join(sorted(c for c, n in counts.items()
                                           if n == 1 and c not in ellipsis))
    else:
        output = output.replace("...", ellipsis)
        missing = [c for c in output if not any(c in t for t in expanded)]
        if missing:
            raise WorkloadError(f"einsum: output index {missing[0]!r} of {subscripts!r} "
                                f"appears in no input")
    return expanded, output, ellipsis


def einsum(subscripts: str, *operands: object, dtype: object = None,
           out_dtype: object = None) -> Workload:
    """Any contraction: ``einsum("bd,df->bf", (B, D), (D, F))`` or with arrays.

    Each operand is a shape (a sequence of whole numbers, stored in *dtype*, default bf16) or
    an array-like (its shape and ``.dtype``). The product runs in the widest input precision,
    or in *dtype* when it is given (an override, as in every op: bytes follow the arrays'
    storage); the result is written in *out_dtype* (default: the storage of the compute
    precision). See the module docstring for the formula.
    """
    if not isinstance(subscripts, str):
        raise WorkloadError(f"einsum: subscripts must be a string such as 'ij,jk->ik', "
                            f"got {brief(subscripts)}")
    if not operands:
        raise WorkloadError("einsum: give at least one operand (a shape or an array)")
    base = sized_precision(dtype)
    shapes: list[tuple[int, ...]] = []
    precisions: list[str] = []
    for i, operand in enumerate(operands):
        what = f"einsum: operand {i}"
        if is_arraylike(operand):
            shapes.append(shape_of(operand, what))
            precisions.append(dtype_of(operand, what))
        elif isinstance(operand, Sequence) and not isinstance(operand, str):
            shapes.append(tuple(size(d, f"{what} dimension") for d in operand))
            precisions.append(base)
        else:
            raise WorkloadError(f"{what} must be a shape (a tuple of sizes) or an array, "
                                f"got {brief(operand)}")
    terms, output, broadcast = _parse(subscripts, [len(s) for s in shapes])
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        if len(term) != len(shape):
            raise WorkloadError(f"einsum: operand {i} has shape {shape} but its term "
                                f"{term!r} names {len(term)} dimension(s)")
        for letter, dim in zip(term, shape, strict=True):
            known = sizes.setdefault(letter, dim)
            if letter in broadcast and 1 in (known, dim):
                sizes[letter] = max(known, dim)  # ellipsis dimensions broadcast
            elif known != dim:
                raise WorkloadError(f"einsum: index {letter!r} is {sizes[letter]} in one "
                                    f"operand and {dim} in operand {i}")
    widest = max(precisions, key=lambda p: dtypes.ITEMSIZE[p])
    compute = base if given(dtype) else widest
    out = dtypes.storage(compute) if out_dtype is None else precision(out_dtype, "out_dtype")
    label = compute if all(p == compute for p in precisions) and out == compute else (
        " x ".join(precisions) + f" -> {out}")
    label += "" if compute == widest else f" as {compute}"
    name = f"einsum({subscripts.replace(' ', '')}, {label})"

    def elements(term: str) -> float:
        return float(math.prod(sizes[c] for c in term))

    def nbytes(term: str, p: str) -> float:
        return elements(term) * dtypes.ITEMSIZE[p]

    inputs = [float(math.prod(s)) * dtypes.ITEMSIZE[p] for s, p in
              zip(shapes, precisions, strict=True)]
    kernels: list[Kernel] = []
    footprint = sum(inputs) + nbytes(output, out)
    if len(terms) == 1:
        summed = bool(set(terms[0]) - set(output))
        kernels.append(Kernel(name, elements(terms[0]) if summed else 0.0,
                              inputs[0] + nbytes(output, out), unit="vector", dtype=compute))
        return Workload(kernels, footprint=footprint, name=name)
    current, current_bytes = terms[0], inputs[0]
    steps = len(terms) - 1
    for step in range(1, len(terms)):
        other = terms[step]
        union = "".join(dict.fromkeys(current + other))
        later = set(output).union(*terms[step + 1:])
        last = step == steps
        result = output if last else "".join(c for c in union if c in later)
        result_p = out if last else compute
        contracted = set(union) - set(result)
        step_name = name if steps == 1 else f"{name}[{current},{other}->{result}]"
        points = elements(union)
        kernels.append(Kernel(
            step_name, 2.0 * points if contracted else points,
            current_bytes + inputs[step] + nbytes(result, result_p),
            unit="matrix" if contracted else "vector", dtype=compute))
        current, current_bytes = result, nbytes(result, result_p)
    return Workload(kernels, footprint=footprint, name=name)

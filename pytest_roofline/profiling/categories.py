"""The category of a profiled op: where the time of a step goes, as TraceLens and XProf show
it (GEMM, attention, normalization, elementwise, communication, copies ...).

An op is named by its recorded name and the kernels it ran; the first category whose
pattern one of them matches, in :data:`CATEGORIES` order, is its own (an attention
kernel's GEMMs are attention; a collective's reduction is communication). Priced rows
that match none are ``communication`` when their bound is set by a link, ``elementwise``
when by memory or compute, else ``other``; unpriced time that matches none is ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["CATEGORIES", "category_of"]

#: (category, pattern), first match wins.
CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE)) for name, pattern in (
        ("communication", r"nccl|rccl|c10d::|all_?reduce|all_?gather|reduce_?scatter|"
                          r"all_?to_?all|all-reduce|all-gather|reduce-scatter|all-to-all|"
                          r"collective-permute|record_param_comms|\bsend\b|\brecv\b|"
                          r"(^|[^a-z])(psum(_invariant|_scatter|2)?|pmax|pmin|ppermute)($|[^a-z])"),
        ("attention", r"attention|sdpa|flash|fmha|fused_attn|scaled_dot_product"),
        ("convolution", r"convolution|(^|[^a-z])conv(\d+d|_transpose\w*|_depthwise\w*)?"
                        r"($|[^a-z])|\$conv|winograd|implicit_?gemm|fft2d"),
        ("GEMM", r"(^|[^a-z])(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|einsum|dot|"
                 r"dot_general)($|[^a-z])|gemm|cublas|hipblas|nvjet|cutlass|xmma|"
                 r"splitkreduce"),
        ("normalization", r"norm"),
        ("copies", r"copy|memcpy|memset|(^|[^a-z])(to|clone|contiguous|cat|fill_?|zero_?|"
                   r"index_select|gather|scatter|transpose|permute)($|[^a-z])|transpose"),
        ("reduction", r"(^|[^a-z])(sum|mean|softmax|log_softmax|max|min|amax|argmax|"
                      r"prod|var|std|cumsum)($|[^a-z])|reduce"),
    ))

NAMES = (*(name for name, _ in CATEGORIES), "elementwise", "other")


def category_of(names: Iterable[str], *, regime: str | None = None) -> str:
    """The category of an op named *names* (its op, then its kernels), priced in *regime*
    (None: unpriced)."""
    items = [str(n) for n in names]
    for name, pattern in CATEGORIES:
        if any(pattern.search(item) for item in items):
            return name
    if regime == "network":  # priced on a link: a collective, whatever it is called
        return "communication"
    return "elementwise" if regime in ("memory", "compute") else "other"

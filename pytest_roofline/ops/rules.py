"""The rule book every formula shares, as other layers read it: the FLOPs an elementwise
op spends an element (:func:`element_flops`), a reduction's (:func:`reduce_flops`), and
the check every size goes through (:func:`size`). One public face over the private homes
(``_family``, ``_common``), so that a profile reader prices an op by the very rule a
formula and a trace use."""

from __future__ import annotations

from ._common import size
from ._family import element_flops, reduce_flops

__all__ = ["element_flops", "reduce_flops", "size"]

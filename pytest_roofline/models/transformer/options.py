"""The options of a transformer phase, checked once, and the per-chip plan they make.

:class:`PhaseOptions` holds what every phase takes (tensor and expert parallelism, the
precisions, fusion, the link, padding, overlap) as checked values: a phase checks its
arguments once, by making one, and the batch knob of the workload it returns rebuilds the
phase from the same checked options. :func:`plan_for` sets them against a model: the per-chip
shapes (heads, widths, vocabulary split over tp) and the precision the matrix work runs in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ... import dtypes
from ...engine import fusion as _fusion
from ...engine.overlap import OVERLAP
from ...engine.workload import Number
from ...errors import WorkloadError
from ...ops._common import precision, size
from ...ops.matmul import resolve_dtypes
from ..config import TransformerConfig


@dataclass(frozen=True)
class PhaseOptions:
    """The options of one phase call, each checked: whole chip counts, canonical precision
    names (None: the model's or the activations' own), a fusion policy, an overlap mode.

    Make one from a user's arguments with :meth:`of`, which turns what a user may write
    (``tp=np.int64(2)``, ``dtype="bfloat16"``) into these values and names the argument in
    its error; the constructor refuses anything not already in that form."""

    tp: int = 1
    dtype: str = "bf16"
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    fused: bool = True
    link: str | None = None
    link_count: int | None = None
    ep: int = 1
    fusion: str = _fusion.MODEL_DEFAULT
    padded: bool = False
    overlap: str = "none"

    def __post_init__(self) -> None:
        for name in ("tp", "ep", "link_count"):
            value = getattr(self, name)
            if not (value is None and name == "link_count") and (
                    type(value) is not int or size(value, name) != value):
                raise WorkloadError(f"{name} must be a whole number >= 1, got {value!r}")
        for name in ("dtype", "weight_dtype", "kv_dtype"):
            value = getattr(self, name)
            if not (value is None and name != "dtype") and value not in dtypes.ITEMSIZE:
                raise WorkloadError(f"{name}: unknown precision {value!r}; known precisions: "
                                    f"{', '.join(dtypes.ITEMSIZE)}")
        for name in ("fused", "padded"):
            if not isinstance(getattr(self, name), bool):
                raise WorkloadError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.link is not None and not isinstance(self.link, str):
            raise WorkloadError(f"link must be a link name such as 'nvlink', or None, got "
                                f"{self.link!r}")
        _fusion.policy(self.fusion)
        if not isinstance(self.overlap, str) or self.overlap not in OVERLAP:
            raise WorkloadError(f"overlap must be one of {', '.join(map(repr, OVERLAP))}, got "
                                f"{self.overlap!r:.40}")

    @classmethod
    def of(cls, phase: str, *, tp: object = 1, dtype: object = "bf16",
           weight_dtype: object = None, kv_dtype: object = None, fused: object = True,
           link: object = None, link_count: object = None, ep: object = 1,
           fusion: object = _fusion.MODEL_DEFAULT, padded: object = False,
           overlap: object = "none") -> PhaseOptions:
        """The checked options of a *phase* call from a user's arguments; an error names the
        argument, the value and what is allowed."""
        if not isinstance(padded, bool):
            raise WorkloadError(f"padded must be True or False, got {padded!r}")
        chips = size(tp, "tp")
        policy = _fusion.policy(fusion)
        if not isinstance(fused, bool):
            raise WorkloadError(f"fused must be True or False, got {fused!r}")
        if link is not None and not isinstance(link, str):
            raise WorkloadError(f"link must be a link name such as 'nvlink', or None, got "
                                f"{link!r}")
        count = None if link_count is None else size(link_count, "link_count")
        act = precision(dtype, "dtype")
        weight = None if weight_dtype is None else precision(weight_dtype, "weight_dtype")
        kv = None if kv_dtype is None else precision(kv_dtype, "kv_dtype")
        experts = size(ep, "ep")
        if not isinstance(overlap, str) or overlap not in OVERLAP:
            raise WorkloadError(f"{phase}: overlap must be one of "
                                f"{', '.join(map(repr, OVERLAP))}, got {overlap!r:.40}")
        return cls(tp=chips, dtype=act, weight_dtype=weight, kv_dtype=kv, fused=fused,
                   link=link, link_count=count, ep=experts, fusion=policy, padded=padded,
                   overlap=overlap)


@dataclass(frozen=True)
class Plan:
    """Per-chip shapes and the precisions of one call."""

    tp: int
    act: str
    weight: str
    kv: str
    compute: str
    heads: int
    kv_heads: int
    inter: int
    expert_inter: int
    vocab: int
    fused: bool
    link: str | None
    link_count: int | None
    shared_inter: int = 0
    absorb: bool = False  # latent attention: decode with the up-projections absorbed
    ep: int = 1  # expert parallelism (data-parallel attention, experts split over ep chips)
    fusion: str = _fusion.MODEL_DEFAULT
    sp: bool = False  # sequence parallelism over the tp chips (training)


#: (sequences, q_len, kv_len) of one length of a batch; a mixed-length batch has several.
Group = tuple[Number, int, int]


def plan_for(config: TransformerConfig, options: PhaseOptions, *,
             expert_parallel: bool = True) -> Plan:
    """*options* set against *config*: the per-chip shapes, checked (tp must divide the heads
    and widths; ep the experts). ``expert_parallel=False`` leaves ep out (a training step
    checks it against its own parallelism)."""
    c, chips = config, options.tp
    act = options.dtype
    weight = (c.weight_dtype or act) if options.weight_dtype is None else options.weight_dtype
    kv = act if options.kv_dtype is None else options.kv_dtype
    compute = resolve_dtypes(act, act, weight, act)[3]
    kv_heads = c.kv_heads or c.heads
    for label, value in (("heads", c.heads), ("intermediate", c.intermediate)):
        if value % chips:
            raise WorkloadError(f"tp={chips} must divide {c.name}'s {label}={value}")
    if kv_heads % chips and chips % kv_heads:
        raise WorkloadError(f"tp={chips} and {c.name}'s kv_heads={kv_heads}: one must "
                            f"divide the other (KV heads are split or replicated)")
    if c.is_moe and c.expert_intermediate % chips:
        raise WorkloadError(f"tp={chips} must divide {c.name}'s "
                            f"moe_intermediate={c.expert_intermediate}")
    if c.shared_width % chips:
        raise WorkloadError(f"tp={chips} must divide {c.name}'s shared experts' width "
                            f"{c.shared_width}")
    plan = Plan(chips, act, weight, kv, compute, c.heads // chips,
                max(1, kv_heads // chips), c.intermediate // chips,
                c.expert_intermediate // chips, -(-c.vocab // chips), options.fused,
                options.link, options.link_count, c.shared_width // chips,
                fusion=options.fusion)
    return expert_parallel_plan(config, plan, options.ep) if expert_parallel else plan


def expert_parallel_plan(config: TransformerConfig, plan: Plan, chips: int) -> Plan:
    """*plan* over *chips* of expert parallelism (checked)."""
    if chips == 1:
        return plan
    c = config
    if not c.is_moe:
        raise WorkloadError(f"ep={chips}: {c.name} has no experts to spread; use tp")
    if plan.tp > 1:
        raise WorkloadError(f"ep={chips} with tp={plan.tp} is not modelled: expert "
                            f"parallelism here runs attention data-parallel, one chip "
                            f"per replica")
    if c.experts % chips:
        raise WorkloadError(f"ep={chips} must divide {c.name}'s experts={c.experts}")
    return replace(plan, ep=chips)

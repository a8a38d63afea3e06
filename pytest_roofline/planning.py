"""Which configuration serves a model within latency targets? ``plan(model, hw, chips=8, ...)``.

The search covers tensor parallelism (tp), pipeline parallelism (pp), expert parallelism (ep,
mixtures of experts) and the batch, for every split of *chips* into replicas of tp x pp x ep
chips, and keeps the configurations that fit in memory and meet the targets, ranked by
output tokens per second per chip. Each figure is a roofline bound (no configuration runs
faster), per chip:

* **TPOT** (time per output token): one decode step of the replica's batch at the mean
  context of a request, ISL + OSL/2 (the mean over its decode steps; attention is linear in
  the context). A pipeline of pp stages runs pp batches at once, one in each stage; each
  token passes every stage, so a token takes the whole model's step time, and a chip holds
  1/pp of the weights and the KV cache of its layers for every sequence in flight: the same
  per-chip cache as one batch of the whole model.
* **TTFT** (time to first token): the prefill of one request of ISL tokens on the replica
  (the best case: no queueing, no other request in the batch).
* **Throughput per chip**: batch x pp sequences each receive a token per TPOT, over the
  replica's tp x pp x ep chips (so batch / (TPOT x tp x ep)).
* **Fits**: weights / pp (pp at most the layers + 2: a stage holds a layer, the embedding or
  the output layer), the KV cache
  at the full context ISL + OSL, and the activations of a step, within the chip's memory.

Vectorized: one decode, prefill and footprint per (tp, pp, ep), on a numpy array of every
batch from 1 to ``max_batch``; the rest is array arithmetic (``benchmarks/bench_plan.py``
measures it beside one configuration at a time). The limit of each configuration is the
constraint that stops its batch from growing: ``memory`` (the next batch does not fit),
``tpot`` (the next misses the TPOT target) or ``max_batch`` (the end of the search).

**Headroom** (``memory_fraction``, default 1): the share of each chip's memory a
configuration may fill, as serving engines reserve some (vLLM's ``gpu_memory_utilization``,
0.9 by default; SGLang's ``mem_fraction_static``) for the runtime, its CUDA graphs and
fragmentation. The default keeps the bound a bound: no configuration that fits in less
memory is left out.

**Bounds of the search**, so that every call answers in well under a second or is refused
at once: ``chips`` at most :data:`MAX_CHIPS` (2**24), ``max_batch`` at most
:data:`MAX_BATCH` (16,384 sequences a replica), ``max_microbatches`` at most
:data:`MAX_MICROBATCHES` (4,096). The splits of the chips are enumerated from their
divisors, and those with more pipeline stages than the model can hold are counted in one
line, not analyzed. Sizes follow the rule of every size in the package (whole numbers,
numpy integers and whole floats included: :func:`pytest_roofline.ops._common.size`).
"""

from __future__ import annotations

import numbers
import textwrap
from dataclasses import dataclass
from typing import Any

from . import dtypes, units
from .engine.analysis import analyze
from .engine.sweeps import sweep
from .engine.workload import Workload
from .errors import RooflineError, WorkloadError, brief
from .hardware import Hardware, get_hardware
from .models import Transformer, load
from .models.training import stage_scale
from .ops._common import size
from .text_table import render

LIMITS = ("memory", "tpot", "max_batch")
#: The largest chip count searched (2**24 chips: past any machine built).
MAX_CHIPS = 1 << 24
#: The largest batch of one replica searched (every batch from 1 is evaluated on one array).
MAX_BATCH = 1 << 14
#: The largest microbatch count a training search tries.
MAX_MICROBATCHES = 1 << 12


@dataclass(frozen=True)
class Config:
    """One serving configuration and its bounds (times in s, throughput in tokens/s/chip)."""

    tp: int
    pp: int
    ep: int
    batch: int  # sequences decoded together in one stage (pp x batch in flight a replica)
    replicas: int
    ttft: float
    tpot: float
    throughput: float  # output tokens per second per chip
    footprint: float  # bytes per chip
    regime: str  # the decode step's regime
    limit: str  # what stops the batch from growing: one of LIMITS

    @property
    def chips(self) -> int:
        return self.tp * self.pp * self.ep

    def label(self) -> str:
        parts = [f"tp={self.tp}", f"pp={self.pp}"]
        if self.ep > 1:
            parts.append(f"ep={self.ep}")
        flight = f" (x{self.pp} in flight)" if self.pp > 1 else ""
        return ", ".join(parts) + f", batch={self.batch}{flight}"


@dataclass(frozen=True)
class Plan:
    """The configurations that fit and meet the targets, best first, and what was searched."""

    model: str
    hw: str
    chips: int
    ttft_target: float | None
    tpot_target: float | None
    isl: int
    osl: int
    configs: tuple[Config, ...]
    searched: int  # configurations evaluated
    rejected: tuple[str, ...]  # (tp, pp, ep) splits with no configuration, and why

    @property
    def best(self) -> Config | None:
        return self.configs[0] if self.configs else None

    def table(self, top: int = 10, width: int | None = None) -> str:
        """The ranked configurations as text, in *width* columns when given (each
        configuration then on a line of its own above its figures, where one row is too
        wide)."""

        top = _whole(top, "top", where="Plan.table")
        fmt = units.format_time
        rows = [[str(i + 1), c.label(), str(c.replicas), fmt(c.ttft), fmt(c.tpot),
                 f"{c.throughput:,.0f}", units.si(c.footprint, "B"), c.regime, c.limit]
                for i, c in enumerate(self.configs[:top])]
        head = (f"{self.model} on {self.chips} x {self.hw}, ISL {self.isl} / OSL {self.osl}"
                + (f", TTFT <= {fmt(self.ttft_target)}" if self.ttft_target else "")
                + (f", TPOT <= {fmt(self.tpot_target)}" if self.tpot_target else "")
                + f": {len(self.configs)} of {self.searched} configurations qualify")
        if not rows:
            return "\n".join([*_wrap(head, width),
                              *(line for why in self.rejected
                                for line in _wrap(why, width, indent="  "))])
        body = _fitted(["#", "configuration", "replicas", "TTFT", "TPOT", "tok/s/chip",
                        "memory/chip", "regime", "limit"], rows, width)
        return "\n".join([*_wrap(head, width), *body])


def _wrap(text: str, width: int | None, indent: str = "") -> list[str]:
    """*text* as lines of at most *width* columns (one line when None)."""
    if width is None:
        return [indent + text]
    return textwrap.wrap(text, width, initial_indent=indent,
                         subsequent_indent=indent + "  ") or [indent]


def _fitted(headers: list[str], rows: list[list[str]], width: int | None) -> list[str]:
    """The table; in *width* columns, the configuration (column 1) on a line of its own
    above the figures when one row would be wider: never cut, as it is the answer."""
    if width is None:
        return render(headers, rows)
    longest = max(len(r[1]) for r in rows)
    return render(headers, rows, width=width, shrink=1, min_shrunk=max(longest, 13))


def _target(value: object, what: str) -> float | None:
    if value is None:
        return None
    try:
        return units.parse(value, "time", what=what)
    except (ValueError, OverflowError) as exc:
        raise RooflineError(str(exc)) from None


def _whole(value: object, what: str, where: str = "plan", most: int | None = None) -> int:
    """A size (the package's one rule: :func:`pytest_roofline.ops._common.size`), at most
    *most* when the search must stay bounded."""
    try:
        number = size(value, f"{where}: {what}")
    except WorkloadError as exc:
        raise RooflineError(str(exc)) from None
    if most is not None and number > most:
        raise RooflineError(f"{where}: {what} must be at most {most:,} (the search is "
                            f"bounded), got {brief(value)}")
    return number


def _fraction(value: object, where: str) -> float:
    """``memory_fraction``: a number in (0, 1]."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not 0 < float(value) <= 1):
        raise RooflineError(f"{where}: memory_fraction must be a number in (0, 1] (the share "
                            f"of each chip's memory a configuration may fill, e.g. 0.9), got "
                            f"{brief(value)}")
    return float(value)


def _links(chip: Hardware, where: str, **given: object) -> None:
    """Refuse a link that is not a name of one of *chip*'s links: every split over more than
    one chip would reject it, and an empty plan would hide the mistake."""
    for name, value in given.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise RooflineError(f"{where}: {name} must be a link name of {chip.name} such as "
                                f"{next(iter(chip.links), 'nvlink')!r}, or None for its "
                                f"default link, got {brief(value)}")
        try:
            chip.link(value)
        except RooflineError as exc:
            raise RooflineError(f"{where}: {name}={value!r}: {exc}") from None


def _precisions(what: str, required: tuple[str, ...] = ("dtype",), **given: object) -> None:
    """Refuse an unknown precision up front: every configuration would reject it, and an
    empty plan would hide the typo. The *required* ones may not be None."""
    for name, value in given.items():
        if value is None and name in required:
            raise RooflineError(f"{what}: {name} must be a precision such as 'bf16' or "
                                f"'fp8', got None")
        if value is not None:
            try:
                dtypes.canonical(value)
            except (RooflineError, TypeError) as exc:
                raise RooflineError(f"{what}: {name}: {exc}") from None


def _divisors(n: int, most: int | None = None) -> list[int]:
    """The divisors of *n* up to *most* (all when None), ascending: trial division up to
    min(sqrt(n), most), so a bound of a few thousand costs microseconds whatever *n*."""
    top = n if most is None else min(n, most)
    small: list[int] = []
    large: list[int] = []
    d = 1
    while d * d <= n and d <= top:
        if n % d == 0:
            small.append(d)
            if d * d != n and n // d <= top:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def _splits(chips: int, moe: bool) -> list[tuple[int, int, int]]:
    """(tp, pp, ep) with tp x pp x ep dividing *chips*; ep only for experts, without tp."""
    out: list[tuple[int, int, int]] = []
    for tp in _divisors(chips):
        for pp in _divisors(chips // tp):
            eps = _divisors(chips // (tp * pp)) if moe and tp == 1 else [1]
            out.extend((tp, pp, ep) for ep in eps)
    return out


def plan(model: Any, hw: Hardware | str, *, chips: int, ttft: object = None,
         tpot: object = None, isl: int = 1024, osl: int = 256, dtype: str = "bf16",
         weight_dtype: str | None = None, kv_dtype: str | None = None,
         max_batch: int = 1024, link: str | None = None,
         memory_fraction: float = 1.0) -> Plan:
    """Search serving configurations of *model* (a name or a Transformer) on *chips* x *hw*
    (see the module docstring); targets are seconds or strings such as ``"50 ms"``; a
    configuration may fill *memory_fraction* of each chip's memory."""
    import numpy as np

    transformer = load(model) if isinstance(model, str) else model
    if not isinstance(transformer, Transformer) or transformer.config.architecture != "decoder":
        raise RooflineError(f"plan: the model must be a decoder LLM (a name such as "
                            f"'llama-3-70b' or a models.Transformer), got {brief(model)}")
    chip = hw if isinstance(hw, Hardware) else get_hardware(hw)
    chips = _whole(chips, "chips", most=MAX_CHIPS)
    isl, osl = _whole(isl, "isl"), _whole(osl, "osl")
    max_batch = _whole(max_batch, "max_batch", most=MAX_BATCH)
    ttft_s, tpot_s = _target(ttft, "plan: ttft"), _target(tpot, "plan: tpot")
    _precisions("plan", dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    _links(chip, "plan", link=link)
    capacity = chip.memory_capacity * _fraction(memory_fraction, "plan")
    batches = np.arange(1, max_batch + 1, dtype=float)
    mean_ctx, full_ctx = isl + osl // 2, isl + osl
    found: list[Config] = []
    rejected: list[str] = []
    searched = 0
    common: dict[str, Any] = {"dtype": dtype, "weight_dtype": weight_dtype,
                              "kv_dtype": kv_dtype}
    deep = 0
    # the decode step, the prefill and the footprint depend on (tp, ep), not on pp (a stage
    # holds 1/pp of the weights, priced below): each is built and analyzed once per pair
    shared: dict[tuple[int, int], Any] = {}
    for tp, pp, ep in _splits(chips, transformer.config.is_moe):
        where = f"tp={tp}, pp={pp}" + (f", ep={ep}" if ep > 1 else "")
        if pp > transformer.config.layers + 2:
            deep += 1
            continue
        if (tp, ep) not in shared:
            try:
                step = transformer.decode(batches * ep, mean_ctx, tp=tp, ep=ep, link=link,
                                          **common)
                first = transformer.prefill(1, isl, tp=tp, link=link, **common)
                fp = transformer.footprint(batches * ep, full_ctx, phase="decode", tp=tp,
                                           ep=ep, **common)
                shared[tp, ep] = (sweep(step, chip), analyze(first, chip).time, fp)
            except WorkloadError as exc:
                shared[tp, ep] = str(exc)
        if isinstance(shared[tp, ep], str):
            rejected.append(f"{where}: {shared[tp, ep]}")
            continue
        r, t_first, fp = shared[tp, ep]
        searched += len(batches)
        t_step = r.time
        memory = np.asarray(fp.weights / pp + fp.kv_cache + fp.activations, dtype=float)
        fits = np.asarray(memory <= capacity)
        fast = np.asarray(t_step <= tpot_s) if tpot_s is not None else np.ones_like(fits)
        ok = fits & fast
        if ttft_s is not None and t_first > ttft_s:
            rejected.append(f"{where}: TTFT bound {units.format_time(t_first)} > target")
            continue
        if not ok.any():
            why = "does not fit" if not fits.any() else "misses the TPOT target at every batch"
            rejected.append(f"{where}: {why}")
            continue
        throughput = batches * ep / (t_step * tp * ep)
        best = int(np.argmax(np.where(ok, throughput, -1.0)))
        nxt = best + 1
        limit = ("max_batch" if nxt >= len(batches) else "memory" if not fits[nxt]
                 else "tpot" if not fast[nxt] else "max_batch")
        regimes = str(r.regime[best])
        found.append(Config(tp=tp, pp=pp, ep=ep, batch=int(batches[best]) * ep,
                            replicas=chips // (tp * pp * ep), ttft=t_first,
                            tpot=float(t_step[best]), throughput=float(throughput[best]),
                            footprint=float(memory[best]), regime=regimes, limit=limit))
    if deep:
        rejected.append(f"{deep} split(s) with pp > {transformer.config.layers + 2}: more "
                        f"stages than {transformer.name}'s {transformer.config.layers} layers, "
                        f"its embedding and its output layer (a stage holds at least one)")
    found.sort(key=lambda c: (-c.throughput, c.tpot, c.chips))
    return Plan(model=transformer.name, hw=chip.name, chips=chips, ttft_target=ttft_s,
                tpot_target=tpot_s, isl=isl, osl=osl, configs=tuple(found), searched=searched,
                rejected=tuple(rejected))


def decode_step(model: Any, config: Config, *, isl: int, osl: int, dtype: str = "bf16",
                weight_dtype: str | None = None, kv_dtype: str | None = None,
                link: str | None = None) -> Workload:
    """The per-chip decode step a configuration stands for: what a test marked with
    ``max_time=`` (the TPOT target) checks on a chip."""
    transformer: Any = load(model) if isinstance(model, str) else model
    isl, osl = _whole(isl, "isl", "decode_step"), _whole(osl, "osl", "decode_step")
    step: Workload = transformer.decode(config.batch, isl + osl // 2, tp=config.tp, ep=config.ep,
                              dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                              link=link)
    return step


# -- training ---------------------------------------------------------------------------------

RECOMPUTES = ("none", "selective", "full")


@dataclass(frozen=True)
class TrainingConfig:
    """One training configuration and its bound (s a step, tokens/s per chip)."""

    dp: int
    tp: int
    pp: int
    zero: int
    microbatches: int
    recompute: str
    step_time: float
    throughput: float  # training tokens per second per chip
    footprint: float  # bytes per chip
    regime: str  # the step's regime: the resource that holds most of its time

    def label(self) -> str:
        parts = [f"dp={self.dp}", f"tp={self.tp}", f"pp={self.pp}", f"zero={self.zero}"]
        if self.microbatches > 1:
            parts.append(f"microbatches={self.microbatches}")
        if self.recompute != "none":
            parts.append(f"recompute={self.recompute}")
        return ", ".join(parts)


@dataclass(frozen=True)
class TrainingPlan:
    """The training configurations that fit (and meet the step-time target), best first."""

    model: str
    hw: str
    chips: int
    batch: int
    seq: int
    step_target: float | None
    configs: tuple[TrainingConfig, ...]
    searched: int

    @property
    def best(self) -> TrainingConfig | None:
        return self.configs[0] if self.configs else None

    def table(self, top: int = 10, width: int | None = None) -> str:
        """The ranked configurations as text (in *width* columns: see :meth:`Plan.table`)."""
        top = _whole(top, "top", where="TrainingPlan.table")
        fmt = units.format_time
        head = (f"{self.model} training on {self.chips} x {self.hw}, batch {self.batch} x "
                f"{self.seq} tokens" + (f", step <= {fmt(self.step_target)}"
                                        if self.step_target else "")
                + f": {len(self.configs)} of {self.searched} configurations qualify")
        rows = [[str(i + 1), c.label(), fmt(c.step_time), f"{c.throughput:,.0f}",
                 units.si(c.footprint, "B"), c.regime] for i, c in enumerate(self.configs[:top])]
        if not rows:
            return "\n".join(_wrap(head, width))
        body = _fitted(["#", "configuration", "step", "tok/s/chip", "memory/chip", "regime"],
                       rows, width)
        return "\n".join([*_wrap(head, width), *body])


def plan_training(model: Any, hw: Hardware | str, *, chips: int, batch: int, seq: int,
                  step_time: object = None, dtype: str = "bf16", link: str | None = None,
                  max_microbatches: int = 64, memory_fraction: float = 1.0) -> TrainingPlan:
    """Search training configurations of *model* on *chips* x *hw* for a global *batch* of
    *seq*-token sequences: dp x tp x pp = chips, ZeRO 0-3, microbatches dividing each
    replica's batch (up to *max_microbatches*), and recomputation; keep those that fit in
    *memory_fraction* of each chip's memory (and
    take at most *step_time*), ranked by tokens per second per chip
    (:meth:`Transformer.train_step` prices each; ``models.training`` states its rules).

    One step is analyzed per (dp, tp, pp, zero, recompute); the microbatches change only the
    pipeline bubble, which scales the stage's kernels (their times are linear in their
    counts), and the activations, so each count costs a footprint and no analysis."""
    transformer = load(model) if isinstance(model, str) else model
    if not isinstance(transformer, Transformer) or transformer.config.architecture != "decoder":
        raise RooflineError(f"plan_training: the model must be a decoder LLM, got "
                            f"{brief(model)}")
    chip = hw if isinstance(hw, Hardware) else get_hardware(hw)
    where = "plan_training"
    chips = _whole(chips, "chips", where=where, most=MAX_CHIPS)
    batch, seq = _whole(batch, "batch", where=where), _whole(seq, "seq", where=where)
    max_microbatches = _whole(max_microbatches, "max_microbatches", where=where,
                              most=MAX_MICROBATCHES)
    target = _target(step_time, "plan_training: step_time")
    _precisions("plan_training", dtype=dtype)
    _links(chip, where, link=link)
    capacity = chip.memory_capacity * _fraction(memory_fraction, where)
    found: list[TrainingConfig] = []
    searched = 0
    for tp, pp, _ in _splits(chips, False):
        dp = chips // (tp * pp)
        if batch % dp:
            continue
        counts = _divisors(batch // dp, max_microbatches)
        for zero in (0, 1, 2, 3):
            for recompute in RECOMPUTES:
                try:
                    parts = transformer.train_parts(batch, seq, tp=tp, dp=dp, pp=pp,
                                                    zero=zero, recompute=recompute,
                                                    dtype=dtype, link=link)
                except WorkloadError:
                    break
                # the stage's kernels once (no bubble) and the once-a-step kernels, in one
                # analysis: the stage's share is its kernels' times
                r = analyze(Workload([*parts.stage, *parts.rest]), chip)
                stage = sum(k.time for k in r.kernels[:len(parts.stage)])
                rest = r.time - stage
                for m in counts:
                    searched += 1
                    fp = transformer.train_footprint(batch, seq, tp=tp, dp=dp, pp=pp,
                                                     zero=zero, microbatches=m,
                                                     recompute=recompute, dtype=dtype)
                    memory = float(fp.total)
                    seconds = stage * stage_scale(pp, m) + rest
                    if memory > capacity or (target is not None
                                                         and seconds > target):
                        continue
                    found.append(TrainingConfig(
                        dp=dp, tp=tp, pp=pp, zero=zero, microbatches=m, recompute=recompute,
                        step_time=seconds, throughput=batch * seq / (seconds * chips),
                        footprint=memory, regime=r.regime))
    found.sort(key=lambda c: (-c.throughput, c.footprint))
    return TrainingPlan(model=transformer.name, hw=chip.name, chips=chips, batch=batch,
                        seq=seq, step_target=target, configs=tuple(found), searched=searched)

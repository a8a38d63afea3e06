"""One roofline test: its expectation, its declared, traced and measured workloads, and its
verdict. The ``roofline`` fixture gives a test this object::


    @pytest.mark.roofline(hw=["h100", "a100"], regime="memory")
    def test_decode(roofline):
        roofline.add(models.load("llama-3-8b").decode(batch=8, context=4096))
        assert roofline.result("h100").time < 5e-3       # the test's own assertion

After the test body passes, the plugin checks the marker's expectations against the same
workload (the marker's, plus everything added here) on every chip.

``roofline.measure(fn, *args, **kwargs)`` times a call of the kernel (warm-up, repeats,
accelerator sync) against that workload: the results then carry ``measured`` and
``efficiency`` (roofline time / measured time), reported always and asserted only with the
marker's ``min_efficiency=``. Several calls add up, like ``add()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..engine.analysis import Result
from ..engine.workload import Knob, Workload, total
from ..errors import RooflineError, WorkloadError
from ..hardware import Hardware, foreign_to_this_machine
from .marker import Expectation, MarkerError, _check_scalar
from .verdict import Judgement, analyze_all, analyze_each, judge

if TYPE_CHECKING:
    from ..measuring.timing import Measurement
    from ..profiling.model import Profile


class TestError(RooflineError):
    """What keeps a test from being judged (no workload, a cross-check with one side
    missing): the test fails with this one line."""


class RooflineTest:
    """Workloads declared by one test, and their roofline on the test's chips.

    The marker's workload is the start; :meth:`add` declares more, :meth:`trace` traces a
    call, :meth:`measure` times one, and a test body run under ``trace=True`` is recorded as
    :attr:`body`. :meth:`judge` gives the verdict on all of it.
    """

    __test__ = False  # not a test class for pytest to collect

    def __init__(self, expectation: Expectation, *, flops_per_mac: int = 2,
                 derate: float = 1.0, name: str = "test",
                 shared: Judgement | None = None) -> None:
        self._expectation = expectation
        self._shared = shared  # the verdict on the marker's workload, shared by its tests
        self.body: Workload | None = None  # what trace=True recorded of the test body
        self._flops_per_mac = flops_per_mac
        self._derate = derate
        self._name = name
        self._added: list[Workload] = []
        self._traced: list[Workload] = []
        self._results: tuple[Result, ...] | None = None
        self._workload: Workload | None = None  # what self.workload last built
        self._measurements: list[Measurement] = []
        self.measured_by: str | None = None  # where the measured time came from
        self._asked = False  # a measurement the test asked for (roofline.measure)
        self._profiles: list[Profile] = []

    def __repr__(self) -> str:
        chips = ", ".join(c.name for c in self.hardware)
        return f"<roofline test {self._name}: {len(self._added)} workload(s) added; hw: {chips}>"

    @property
    def expectation(self) -> Expectation:
        """The test's checked marker arguments (chips, regimes, limits)."""
        return self._expectation

    @property
    def hardware(self) -> tuple[Hardware, ...]:
        """The chips the workload is analyzed on, in order."""
        return self._expectation.hw

    def add(self, workload: Workload | None = None, /, *, flops: object = None,
            bytes: object = None, link_bytes: object = None,
            footprint: object = None, name: str | None = None) -> Workload:
        """Declare (part of) the test's workload; several calls add up.

        Pass a Workload (from ``ops`` or ``models``), or ``flops=``/``bytes=``/``link_bytes=``
        as numbers or strings with units (``"4 GB"``). Returns the workload added.
        """
        if workload is not None:
            if flops is not None or bytes is not None or link_bytes is not None:
                raise WorkloadError("roofline.add(): give a Workload or flops=/bytes=, not both")
            if not isinstance(workload, Workload):
                raise WorkloadError(f"roofline.add() takes a Workload (from pytest_roofline.ops "
                                    f"or models), got {type(workload).__name__}: {workload!r}")
            if footprint is not None or name is not None:
                workload = workload.with_(footprint=footprint, name=name)
        else:
            if flops is None and bytes is None and link_bytes is None:
                raise WorkloadError("roofline.add() needs a Workload, or flops=/bytes= (numbers "
                                    "or strings such as '4 GB')")
            workload = Workload(flops=flops, bytes=bytes, link_bytes=link_bytes,
                                footprint=0.0 if footprint is None else footprint,
                                name=name or self._name)
        try:
            _check_scalar(workload, "roofline.add()")
        except MarkerError as exc:
            raise WorkloadError(str(exc)) from None
        self._added.append(workload)
        self._results = self._workload = None
        return workload

    def measure(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Measurement:
        """Time ``fn(*args, **kwargs)`` (see :func:`pytest_roofline.measure`) against the
        test's workload; returns the Measurement. Several calls add up."""
        from ..measuring.timing import measure
        from ..tracing import untraced

        with untraced():  # in a trace=True body the timed calls are not the workload
            measurement = measure(fn, *args, **kwargs)
        return self.take_measurement(measurement, by="roofline.measure median")

    def take_measurement(self, measurement: Measurement, *, by: str,
                         asked: bool = True) -> Measurement:
        """Judge the test against a time measured elsewhere (pytest-benchmark's rounds);
        *by* says where it came from (the record's ``measured_by``). A measurement the test
        did not ask for (``asked=False``: pytest-benchmark times every benchmark) is set
        against the chips this machine is only; the test's other chips keep their analytic
        verdict (see ``verdict.analyze_each``)."""
        self._asked = self._asked or asked
        self._measurements.append(measurement)
        self.measured_by = by if self.measured_by in (None, by) else "several"
        self._results = None
        return measurement

    @property
    def measured(self) -> float | None:
        """Seconds measured with :meth:`measure` (summed over calls), or None."""
        if not self._measurements:
            return None
        return sum(m.time for m in self._measurements)

    def _timing(self) -> Measurement | None:
        """The measurements as one (times summed; see ``measure.timing.combined``)."""
        if not self._measurements:
            return None
        from ..measuring.timing import combined

        return combined(self._measurements)

    def _how(self) -> dict[str, Any]:
        """How the calls were timed on a GPU and what their figures are read with: the
        ``method`` (several joined by "; ") and ``notes`` of the measurements, each once."""
        if not self._measurements:  # the analytic path pays nothing for this
            return {}
        methods = dict.fromkeys(m.method for m in self._measurements if m.method)
        notes = dict.fromkeys(n for m in self._measurements for n in m.notes)
        return {"method": "; ".join(methods) or None, "notes": tuple(notes)}

    def _other_cores(self) -> float | None:
        """The most cores other processes kept busy while a measurement ran (None: unknown)."""
        known = [m.other_cores for m in self._measurements if m.other_cores is not None]
        return max(known) if known else None

    @property
    def spread(self) -> float:
        """The largest relative spread of the measurements (0 when none)."""
        if not self._measurements:
            return 0.0
        return max(m.spread for m in self._measurements)

    def profile(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Profile:
        """Profile ``fn(*args, **kwargs)`` per kernel (``pytest_roofline.profile``) on the
        first of the test's chips this machine holds, and trace the same call into the
        test's workload (as :meth:`trace`). The marker's ``min_kernel_efficiency=`` asserts
        each kernel's efficiency; a kernel faster than its bound fails the test unless
        ``allow_faster=True``. Returns the Profile."""
        from ..profiling.rules import ProfileError
        from ..profiling.run import Profiler

        reasons = [foreign_to_this_machine(chip) for chip in self.hardware]
        chip = next((c for c, why in zip(self.hardware, reasons, strict=True)
                     if why is None), None)
        if chip is None:
            raise ProfileError(f"roofline.profile(): none of the test's chips "
                               f"({', '.join(c.name for c in self.hardware)}) is this "
                               f"machine: {reasons[0]}")
        from ..tracing import untraced

        with untraced():  # in a trace=True body the profiled calls are not the workload
            result = Profiler(hw=chip)(fn, *args, **kwargs)
        self._profiles.append(result)
        self.trace(fn, *args, **kwargs)
        return result

    @property
    def profiles(self) -> list[Profile]:
        """The profiles of :meth:`profile`, in call order."""
        return list(self._profiles)

    def trace(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Workload:
        """Trace ``fn(*args, **kwargs)`` (torch or jax, see ``pytest_roofline.trace``) and add
        the workload it ran to the test's. With the marker's ``cross_check=``, the traced
        workload is kept apart and checked against the declared one instead. Returns it."""
        from ..tracing import Tracer

        workload = Tracer(strict=self._expectation.strict)(fn, *args, **kwargs)
        if self._expectation.cross_check is not None:
            self._traced.append(workload)
            return workload
        return self.add(workload)

    @property
    def traced(self) -> list[Workload]:
        """Workloads traced for the cross-check (with ``cross_check=`` only)."""
        return list(self._traced)

    @property
    def workload(self) -> Workload | None:
        """Everything declared so far (the marker's workload plus added ones), or None."""
        if self._workload is None:
            self._workload = self._declared()
        return self._workload

    def _declared(self) -> Workload | None:
        parts = ([self._expectation.workload] if self._expectation.workload is not None
                 else []) + self._added
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        name = " + ".join(w.name for w in parts)
        program = total(parts, name=name)
        with_knob = [i for i, w in enumerate(parts) if w.knob is not None]
        if len(with_knob) != 1:
            return program
        # One part has a size knob: the program's knob rebuilds that part and keeps the rest.
        index = with_knob[0]
        knob = parts[index].knob
        assert knob is not None
        rest = parts[:index] + parts[index + 1:]

        def build(x: int) -> Workload:
            return total([knob.build(x), *rest], name=name)

        return program.with_(knob=Knob(knob.name, knob.value, build, knob.lo, knob.hi))

    def _each(self, workload: Workload) -> list[Result | str]:
        """The results the test saw (:attr:`results`), or, where a chip could not price the
        measured workload (a measurement refused), each chip's Result or reason: every chip
        keeps its row in the reports."""
        if self._results is not None:
            return list(self._results)
        return analyze_each(self._expectation, workload, flops_per_mac=self._flops_per_mac,
                            derate=self._derate, measured=self._timing(),
                            here_only=not self._asked)

    @property
    def results(self) -> tuple[Result, ...]:
        """The declared workload analyzed on each chip, in the order of :attr:`hardware`."""
        if self._results is None:
            workload = self.workload
            if workload is None:
                raise WorkloadError("no workload declared yet: call roofline.add(...) first, or "
                                    "give workload= or flops=/bytes= to the marker")
            self._results = analyze_all(self._expectation, workload,
                                        flops_per_mac=self._flops_per_mac, derate=self._derate,
                                        measured=self._timing(),
                                        here_only=not self._asked)
        return self._results

    def result(self, hw: str | None = None) -> Result:
        """The Result on one chip (the first one when *hw* is None); names and aliases work."""
        results = self.results
        if hw is None:
            return results[0]
        if not isinstance(hw, str):
            raise LookupError(f"roofline[{hw!r}]: a chip is looked up by name (such as "
                              f"{self.hardware[0].name!r}), got {type(hw).__name__}")
        wanted = hw.lower()
        for chip, result in zip(self.hardware, results, strict=True):
            if wanted == chip.name or wanted in chip.aliases:
                return result
        raise LookupError(f"roofline.result({hw!r}): the test is analyzed on "
                          f"{', '.join(c.name for c in self.hardware)} only")

    def __getitem__(self, hw: str) -> Result:
        return self.result(hw)

    # -- the verdict -------------------------------------------------------------------------

    @property
    def declared_only(self) -> bool:
        """True when the test judges the marker's workload as it is: nothing added, traced
        or measured (every test sharing the marker then shares one verdict)."""
        return not (self._added or self._traced or self._measurements or self._profiles
                    ) and self.body is None

    def judge(self) -> tuple[Judgement, list[str]]:
        """The verdict, and the cross-check's failure lines (see docs/trace.md); raises
        :class:`TestError` when the test cannot be judged."""
        if self._shared is not None and self.declared_only \
                and self._expectation.cross_check is None:
            return self._shared, []
        workload, crosscheck = self._judged_workload()
        if workload is not None and workload is self.workload and (
                self._results is not None or self._measurements):
            return judge(self._expectation, workload, flops_per_mac=self._flops_per_mac,
                         derate=self._derate, analyzed=lambda: self._each(workload),
                         spread=self.spread, other_cores=self._other_cores(),
                         measured_by=self.measured_by, **self._how()), crosscheck
        if workload is not None and self._measurements:  # trace=True's body and a timing
            judged = workload
            return judge(self._expectation, judged, flops_per_mac=self._flops_per_mac,
                         derate=self._derate, analyzed=lambda: analyze_each(
                             self._expectation, judged, flops_per_mac=self._flops_per_mac,
                             derate=self._derate, measured=self._timing(),
                             here_only=not self._asked),
                         spread=self.spread, other_cores=self._other_cores(),
                         measured_by=self.measured_by, **self._how()), crosscheck
        return judge(self._expectation, workload, flops_per_mac=self._flops_per_mac,
                     derate=self._derate), crosscheck

    def _judged_workload(self) -> tuple[Workload | None, list[str]]:
        expectation, body = self._expectation, self.body
        declared = self.workload
        traced = ([body] if body is not None else []) + self._traced
        if expectation.cross_check is None:
            if body is None:
                return declared, []
            if declared is None and expectation.fits is not None:
                raise TestError(f"fits={expectation.fits!r} needs a footprint, and trace=True "
                                f"records none: declare a workload too, or trace a call with "
                                f"roofline.trace(fn, *args)")
            parts = [w for w in (declared, body) if w is not None]  # trace=True adds
            return total(parts, name=" + ".join(w.name for w in parts)), []
        from .crosscheck import compare

        if declared is None or not traced:
            missing = ("a declared workload (workload=, flops=/bytes= or roofline.add())"
                       if declared is None else
                       "a traced workload (trace=True, or roofline.trace(fn, *args))")
            raise TestError(f"cross_check={expectation.cross_check!r} needs {missing}")
        program = traced[0] if len(traced) == 1 else total(traced, name=" + ".join(
            w.name for w in traced))
        return declared, compare(declared, program, expectation.cross_check)


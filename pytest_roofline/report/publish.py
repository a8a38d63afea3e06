"""Publishing a run's report: compared with a baseline, rendered as Markdown (a file, the CI
job summary) and drawn as charts. The one sequence behind the pytest gate
(``--roofline-compare``, ``--roofline-md``, ``--roofline-github-summary``,
``--roofline-plot``) and the command line (``markdown``, ``plot``): both hand it the report
object and word what it returns. Every file is written atomically; a file that cannot be
written is an outcome saying why, never an exception, so that one failed output does not stop
the others.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..atomic import why_not_written
from ..errors import RooflineError
from . import markdown
from .compare import compare

if TYPE_CHECKING:
    from .records import Report

WRITTEN, APPENDED, UNSET, EMPTY = "written", "appended", "unset", "empty"
FAILED, REFUSED = "failed", "refused"  # not written: the file (why), or the chart itself


@dataclass(frozen=True)
class Outcome:
    """What became of one output: *what* is ``markdown``, ``github-summary`` or ``plot``;
    *status* one of ``written``, ``appended`` (the job summary), ``unset`` (no job summary
    file named), ``empty`` (a chart of no results), ``failed`` (the file could not be written:
    *why* says why) or ``refused`` (the chart could not be drawn: *why* says why)."""

    what: str
    status: str
    target: str = ""
    why: str = ""


@dataclass
class Publication:
    """The comparison (None without a baseline) and the outcome of each output asked for."""

    comparison: Any = None
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(o.status in (FAILED, REFUSED) for o in self.outcomes)


def publish(report: Report, *, base: Report | None = None,
            rules: Iterable[Any] = (), base_name: str = "", comparison: Any = None,
            md: str | os.PathLike[str] | None = None, github_summary: bool = False,
            plots: Iterable[str | os.PathLike[str]] = (), title: str | None = None
            ) -> Publication:
    """Compare *report* with *base* (or take *comparison*), then write the Markdown file
    *md*, append the job summary when *github_summary*, and draw each chart of *plots*."""
    if comparison is None and base is not None:
        comparison = compare(base, report, tuple(rules), base=base_name)
    done = Publication(comparison)
    if md is not None or github_summary:
        text = markdown.render(report, comparison)
        if md is not None:
            try:
                markdown.write(md, text)
                done.outcomes.append(Outcome("markdown", WRITTEN, str(md)))
            except OSError as exc:
                done.outcomes.append(Outcome("markdown", FAILED, str(md),
                                             why_not_written(exc, md)))
        if github_summary:
            target = os.environ.get(markdown.STEP_SUMMARY, "")
            try:
                written = markdown.append_step_summary(text)
                done.outcomes.append(Outcome("github-summary", APPENDED, str(written))
                                     if written else Outcome("github-summary", UNSET))
            except OSError as exc:
                done.outcomes.append(Outcome("github-summary", FAILED, target,
                                             why_not_written(exc, target)))
    for chart in plots:
        done.outcomes.append(_plot(report, chart, comparison, title))
    return done


def _plot(report: Report, target: str | os.PathLike[str], comparison: Any,
          title: str | None) -> Outcome:
    from . import plot  # the chart's module, loaded when a chart is asked for

    if not report["results"]:
        return Outcome("plot", EMPTY, str(target))
    try:
        path = plot.write(report, target, comparison, title=title)
    except RooflineError as exc:
        return Outcome("plot", REFUSED, str(target), str(exc))
    except OSError as exc:
        return Outcome("plot", FAILED, str(target), why_not_written(exc, target))
    return Outcome("plot", WRITTEN, str(path))

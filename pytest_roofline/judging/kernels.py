"""A test's profiled calls judged per kernel: ``min_kernel_efficiency`` and the
faster-than-physics guard, and the profile carried in the test's record.

A record carries, under ``"profile"``, the profile's JSON form with every row, so that a
baseline and its compare rules see each kernel (``efficiency:10%`` names the kernel that
lost its roof); the summary and Markdown show the rows that lose the most time. The record
of the chip the calls were profiled on takes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import fields as F
from ..fields import Record

if TYPE_CHECKING:
    from ..profiling.model import Profile
    from .marker import Expectation

def failures(expectation: Expectation, profiles: Sequence[Profile]) -> list[str]:
    """The failure lines of the test's profiles: kernels below ``min_kernel_efficiency``
    (naming the kernel, its efficiency and its bound) and kernels faster than their bound
    (unless ``allow_faster``)."""
    minimum = expectation.min_kernel_efficiency
    if minimum is not None and not profiles:
        return [f"min_kernel_efficiency={minimum!r} needs a profiled call: profile the "
                f"kernel with roofline.profile(fn, *args) in the test"]
    out: list[str] = []
    for profile in profiles:
        out.extend(profile.check(minimum if minimum is not None else {},
                                 allow_faster=expectation.allow_faster))
    return out


def attach(records: list[tuple[str, Record]], profiles: Sequence[Profile],
           failed: list[str]) -> list[tuple[str, Record]]:
    """*records* with each profile on the record of its chip (the first record when no
    record is of that chip); records of a test failed by its profile say so."""
    out = [(hw, fields.copy()) for hw, fields in records]
    for profile in profiles:
        index = next((i for i, (hw, _) in enumerate(out) if hw == profile.hw), 0)
        if not out:
            break
        fields = out[index][1]
        fields.setdefault(F.PROFILE, [])
        fields[F.PROFILE].append(profile.to_dict())
    if failed and out:
        for _, fields in out:
            if fields.get("outcome") in ("passed", "report"):
                fields["outcome"] = "failed"
                fields["message"] = failed[0]
    return out

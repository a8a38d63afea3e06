"""Which chips a time measured on this machine may be set against.

A measured efficiency (roofline time / measured time) means something only against the roofs
of the machine that ran the call. A call timed here is set against this machine's
calibrations (``host``; ``cuda:N`` for a GPU torch sees), a published chip this machine
holds (an H100 that torch sees as a CUDA device), or a spec of the user's own (taken at its
word: it may describe this machine). A built-in chip this machine does not hold, and a
calibration of another machine, are refused, with the reason. Comparing this machine with
another chip is a separate question: analyze the workload on both, without a measurement.
A number of seconds given to ``analyze`` is the caller's own figure (a published
measurement, say) and is not checked.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from ..hardware import builtin_spec_dir
from . import probe


def _visible_gpus() -> list[str]:
    """Names of the CUDA devices torch sees, when torch is already imported (never imported
    here: a CPU-only suite does not pay for it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    try:
        if not torch.cuda.is_available():
            return []
        return [str(torch.cuda.get_device_name(i)) for i in range(torch.cuda.device_count())]
    except Exception:
        return []


def _model_token(chip: Any) -> str:
    """The model word of a published chip: ``h100`` of ``h100-sxm``, ``mi300x``."""
    return re.split(r"[-_.]", str(chip.name).lower())[0]


def _published(chip: Any) -> bool:
    """Whether *chip* is one of the built-in specs of published chips."""
    origin = str(getattr(chip, "origin", "") or "")
    try:
        return Path(origin).resolve().parent == builtin_spec_dir().resolve()
    except (OSError, ValueError):
        return False


def foreign(chip: Any) -> str | None:
    """Why a call timed on this machine cannot be set against *chip*, or None when it can."""
    provenance = getattr(chip, "provenance", None) or {}
    device = str(provenance.get("device") or "")
    here = probe.cpu_model() or "this machine's CPU"
    if device == "cpu":
        model = str(provenance.get("model") or "")
        if model and model != "unknown" and probe.cpu_model() and model != probe.cpu_model():
            return (f"{chip.name} is a calibration of another machine's CPU ({model}); this "
                    f"one is {here}: measure on the machine it describes, or calibrate this "
                    f"one (hw=\"host\")")
        return None
    gpus = _visible_gpus()
    if device.startswith("cuda"):
        model = str(provenance.get("model") or "")
        if not gpus or (model and model not in gpus):
            return (f"{chip.name} is a calibration of a GPU ({model or 'unknown'}) that this "
                    f"machine does not show to torch")
        return None
    if not _published(chip):
        return None  # the user's own spec (a file, a mapping, a Hardware): taken at its word
    token = _model_token(chip)
    if any(re.search(rf"\b{re.escape(token)}\b", name.lower()) for name in gpus):
        return None
    seen = f"; torch sees {', '.join(gpus)}" if gpus else ""
    return (f"the call was timed on this machine ({here}{seen}), not on {chip.name}: use "
            f"hw=\"host\" or \"cuda:N\" (docs/measure.md, In tests)")

"""Shared set-up of the test suite.

pytester's in-process runs restore ``sys.modules`` afterwards, dropping every module first
imported during the run. The engine is imported lazily, so a module first used inside such a
run would come back as a second copy (with its own ``Workload`` class) in the next one. The
engine and the libraries it loads on demand are therefore imported here, once, up front.
"""

from __future__ import annotations

import pint  # noqa: F401
import yaml  # noqa: F401

import pytest_roofline.analysis
import pytest_roofline.hardware
import pytest_roofline.measure.calibration
import pytest_roofline.measure.diagnose
import pytest_roofline.measure.timing
import pytest_roofline.models
import pytest_roofline.ops
import pytest_roofline.report.compare
import pytest_roofline.report.markdown
import pytest_roofline.workload  # noqa: F401

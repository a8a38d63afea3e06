"""Defaults that the pytest options, the reports and the command line share.

Kept in a module that imports nothing, so that registering the pytest options loads nothing else.
"""

from __future__ import annotations

#: Where named baselines are stored, under the rootdir, and the name used when none is given.
BASELINE_FOLDER = ".roofline"
BASELINE_NAME = "baseline"
#: One-line help text of the compare-rule option (pytest's and the command line's).
RULES_HELP = ("fail when METRIC worsens by more than LIMIT against the baseline: intensity:10% "
              "(intensity fell by more than 10%), time:5% (bound time rose by more than 5%), "
              "intensity:5 (FLOP/B), time:2us, flops:1%, bytes:10%, footprint:5%, efficiency:10% "
              "(measured efficiency fell by more than 10%). May be "
              "repeated, or comma-separated; every rule applies. A regime change always fails.")

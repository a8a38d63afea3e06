"""The three regimes of a roofline: which resource's time bounds the work (its FLOPs on the
compute roof, its bytes on the memory roof, its link bytes on the network roof). The one
definition; a module of its own so that report readers name them without the engine."""

from __future__ import annotations

REGIMES = ("compute", "memory", "network")

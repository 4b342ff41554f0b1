"""Why a pod cannot run somewhere, as data: one rule name and one sentence per reason.

Why a module of its own: the label algebra (:mod:`.requirements`) and the fit
(:mod:`.fit`) both produce these reasons, and the renderers and DaemonSet coverage read
them, so none of those should own the vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Rule = Literal[
    "nodeName",
    "taint",
    "nodeSelector",
    "nodeAffinity",
    "resources",
    "devices",
    "requirement",
    "limits",
    "static",
    "notReady",
    "kueue",
]


@dataclass(frozen=True, slots=True)
class Unmet:
    """One requirement a node or template does not meet, as a sentence."""

    rule: Rule
    message: str

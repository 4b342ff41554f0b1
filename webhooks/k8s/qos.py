"""The one QoS question admission asks: is a pod BestEffort?

PodTolerationRestriction gives every pod that is *not* BestEffort a memory-pressure
toleration; upstream ``ComputePodQOS`` calls a pod BestEffort when no container, init
container or pod-level ``resources`` has a positive cpu or memory request or limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from webhooks.k8s.podspec import containers

QOS_RESOURCES = ("cpu", "memory")

_NUMBER_RE = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def is_positive_quantity(value: Any) -> bool:
    """Whether a resource quantity (``"500m"``, ``"1Gi"``, ``2``) is greater than zero.

    Why only the number part: every suffix multiplies by a positive factor, and quantities
    are rounded *up* to the nano, so a positive mantissa is a positive quantity. Text that is
    not a quantity counts as zero; API validation rejects it anyway.
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value > 0
    if not isinstance(value, str):
        return False
    match = _NUMBER_RE.match(value.strip())
    if match is None or match.group(1) == "-":
        return False
    try:
        return Decimal(match.group(2)) > 0
    except InvalidOperation:  # pragma: no cover - the pattern only admits decimals
        return False


def _resource_maps(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    sources: list[Any] = [c.get("resources") for c in containers(spec)]
    sources.append(spec.get("resources"))
    for resources in sources:
        if not isinstance(resources, Mapping):
            continue
        for section in ("requests", "limits"):
            values = resources.get(section)
            if isinstance(values, Mapping):
                yield values


def is_best_effort(spec: Mapping[str, Any]) -> bool:
    """Whether a pod spec is in the BestEffort QoS class (no positive cpu/memory anywhere).

    Why pod-level resources count too: with PodLevelResources (beta, on by default since
    v1.34) upstream derives the class from them.
    """
    for values in _resource_maps(spec):
        if any(is_positive_quantity(values.get(name)) for name in QOS_RESOURCES):
            return False
    return True

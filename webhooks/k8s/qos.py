"""The one QoS question admission asks: is a pod BestEffort?

PodTolerationRestriction gives every pod that is *not* BestEffort a memory-pressure
toleration; upstream ``ComputePodQOS`` calls a pod BestEffort when no container, init
container or pod-level ``resources`` has a positive cpu or memory request or limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from webhooks.k8s.podspec import containers
from webhooks.k8s.quantity import QuantityError, quantity

QOS_RESOURCES = ("cpu", "memory")


def is_positive_quantity(value: Any) -> bool:
    """Whether a resource quantity (``"500m"``, ``"1Gi"``, ``2``) is greater than zero.

    Why exact parsing: upstream compares with ``Quantity.Cmp`` after rounding up to the nano,
    so ``0.1n`` counts as positive. A value that is not a quantity counts as zero; API
    validation rejects it anyway.
    """
    try:
        return quantity(value) > 0
    except QuantityError:
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

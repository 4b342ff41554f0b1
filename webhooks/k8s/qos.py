"""The one QoS question admission asks: is a pod BestEffort?

PodTolerationRestriction gives every pod that is *not* BestEffort a memory-pressure
toleration, deciding with upstream's ``GetPodQOS``: the class recorded in ``status.qosClass``
when there is one (every pod the API server has stored), otherwise ``ComputePodQOS``. A pod
is BestEffort when the resources that decide have no positive cpu or memory request or limit;
with pod-level resources (``spec.resources``, PodLevelResources, on by default since v1.34)
those alone decide and the containers are not read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.podspec import containers
from webhooks.k8s.quantity import QuantityError, quantity

QOS_RESOURCES = ("cpu", "memory")
BEST_EFFORT: Final = "BestEffort"


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
    pod_level = spec.get("resources")
    if isinstance(pod_level, MAPPING):
        sources: list[Any] = [pod_level]  # present (even empty): the containers do not count
    else:
        sources = [c.get("resources") for c in containers(spec)]
    for resources in sources:
        if not isinstance(resources, MAPPING):
            continue
        for section in ("requests", "limits"):
            values = resources.get(section)
            if isinstance(values, MAPPING):
                yield values


def computed_best_effort(spec: Mapping[str, Any]) -> bool:
    """``ComputePodQOS(pod) == BestEffort`` for a pod spec: no positive cpu/memory that counts.

    Why pod-level resources replace the containers' rather than add to them: upstream
    derives the class from ``spec.resources`` alone whenever the pod sets it.
    """
    for values in _resource_maps(spec):
        if any(is_positive_quantity(values.get(name)) for name in QOS_RESOURCES):
            return False
    return True


def is_best_effort(pod: Mapping[str, Any]) -> bool:
    """``GetPodQOS(pod) == BestEffort``: the recorded class if any, else the computed one.

    Why the recorded class first: on UPDATE the stored pod carries it, and upstream trusts it
    over the spec.
    """
    status = pod.get("status")
    recorded = status.get("qosClass") if isinstance(status, MAPPING) else None
    if isinstance(recorded, str) and recorded:
        return recorded == BEST_EFFORT
    spec = pod.get("spec")
    return computed_best_effort(spec if isinstance(spec, MAPPING) else {})

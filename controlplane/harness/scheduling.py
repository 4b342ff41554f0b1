"""What the real scheduler decided for each pod: the node it bound, or why none would do.

A pod is decided when it has ``spec.nodeName`` (bound) or a ``PodScheduled`` condition
with status False and reason ``Unschedulable``, whose message is the scheduler's
``FailedScheduling`` text: ``0/12 nodes are available: 2 Insufficient cpu, 1 node(s) were
unschedulable, ... preemption: ...``. :func:`reasons` turns that text into a count of
nodes per reason, so a test can compare it, reason by reason, with a prediction.

Why the condition and not the Event: the scheduler writes both with the same message, but
Events are rate-limited and may be aggregated, while the condition is always the last word.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controlplane.harness.process import ComponentError

_HEAD = re.compile(r"^0/(\d+) nodes are available: ")
_ITEM = re.compile(r"^(\d+) (.+)$")


@dataclass(frozen=True, slots=True)
class Outcome:
    """One pod's scheduling decision: ``node`` when bound, else the scheduler's message."""

    pod: str
    node: str | None
    message: str = ""

    @property
    def bound(self) -> bool:
        """Whether the scheduler bound the pod to a node."""
        return self.node is not None


def reasons(message: str) -> Counter[str]:
    """Nodes per reason in a FailedScheduling message (``{"Insufficient cpu": 2, ...}``).

    Only the part before the first ``". "`` counts: what follows is the preemption
    attempt's own summary, which repeats the node total with other words. A reason without
    a count is a pre-filter's refusal of the pod as a whole, so it stands for every node.
    Raises ValueError for a message of another shape.
    """
    head = _HEAD.match(message)
    if head is None:
        raise ValueError(f"not a per-node FailedScheduling message: {message!r}")
    total = int(head.group(1))
    body = message[head.end() :].split(". ", 1)[0].rstrip(".")
    counted: Counter[str] = Counter()
    for part in body.split(", "):
        item = _ITEM.match(part)
        if item is None:
            counted[part] += total
        else:
            counted[item.group(2)] += int(item.group(1))
    return counted


def decision(pod: Any) -> Outcome | None:
    """The decision recorded on ``pod`` (a client model), or ``None`` while it has none."""
    name = pod.metadata.name
    if pod.spec.node_name:
        return Outcome(name, pod.spec.node_name)
    for condition in pod.status.conditions or []:
        if (
            condition.type == "PodScheduled"
            and condition.status == "False"
            and condition.reason == "Unschedulable"
        ):
            return Outcome(name, None, condition.message or "")
    return None


def decisions(
    api_client: Any, namespace: str, names: Iterable[str], *, timeout: float = 120.0
) -> dict[str, Outcome]:
    """Wait until the scheduler has decided every pod of ``names``; their outcomes.

    Why a generous timeout: an unschedulable pod is retried with back-off, and its first
    attempt may wait behind a hundred others on a loaded machine. Raises
    :class:`ComponentError` naming the pods still undecided.
    """
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    wanted = set(names)
    found: dict[str, Outcome] = {}
    deadline = time.monotonic() + timeout
    while True:
        for pod in core.list_namespaced_pod(namespace).items:
            if pod.metadata.name in wanted:
                outcome = decision(pod)
                if outcome is not None:
                    found[pod.metadata.name] = outcome
        missing = wanted - set(found)
        if not missing:
            return found
        if time.monotonic() > deadline:
            raise ComponentError(
                f"the scheduler decided nothing within {timeout:g} s for "
                f"{len(missing)} pods: {', '.join(sorted(missing)[:10])}"
            )
        time.sleep(0.5)

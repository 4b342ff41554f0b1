"""``availability``: the server's Deployment is protected against the usual ways to lose it.

The Deployment is the one ``gather`` found (the chart's: named like both webhook
configurations, :attr:`Installation.name`, in the installation's namespace, else the one
there that runs ``serve``); an installation built without it is looked up by that name.
Four findings:

* replicas: two or more. One is a warning, and a failure when any webhook fails closed
  (``failurePolicy: Fail``, the API's default): a node drain, an eviction or a crash then
  refuses every request the webhook covers until the pod is back.
* the PodDisruptionBudget selecting its pods: it must let at least one pod go (with
  ``minAvailable`` equal to the replicas no eviction ever succeeds, and a node drain waits
  forever) and keep at least one (a budget that lets every replica go protects nothing).
  Percentages round up, as the disruption controller rounds them.
* a ``priorityClassName``: without one the pods are among the first preempted, and a node
  under pressure evicts them before the workloads that wait on them.
* ready replicas equal to the replicas: none ready is a failure (every call fails or, for
  fail-open webhooks, is skipped); fewer is a warning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from webhooks.install.doctor import rest
from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation
from webhooks.install.doctor.scope import fails_closed
from webhooks.k8s.selectors import matches

CHECK: Final = "availability"

DEPLOYMENT_PATH: Final = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
BUDGETS_PATH: Final = "/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"


def fail_closed(configurations: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names of the webhooks that fail closed (an absent policy is the API's ``Fail``)."""
    return [
        str(hook.get("name", ""))
        for configuration in configurations
        for hook in configuration.get("webhooks") or []
        if isinstance(hook, dict) and fails_closed(hook)
    ]


def _scaled(value: Any, replicas: int) -> int | None:
    """An int-or-percent of ``replicas``, rounded up; ``None`` when it cannot be read."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            return None
        return math.ceil(replicas * percent / 100)
    return None


def evictable(budget: Mapping[str, Any], replicas: int) -> int | None:
    """How many of ``replicas`` healthy pods ``budget`` lets be evicted at once."""
    spec = budget.get("spec") or {}
    if "minAvailable" in spec:
        minimum = _scaled(spec["minAvailable"], replicas)
        return None if minimum is None else max(replicas - minimum, 0)
    if "maxUnavailable" in spec:
        return _scaled(spec["maxUnavailable"], replicas)
    return replicas


def replicas_finding(replicas: int, closed: Sequence[str]) -> Finding:
    """Two or more replicas; one fails when a webhook fails closed."""
    if replicas >= 2:
        return Finding(CHECK, Status.OK, f"{replicas} replicas")
    fix = "run two or more replicas (the chart: replicaCount: 2)"
    if closed:
        return Finding(
            CHECK,
            Status.FAIL,
            f"{replicas} replica(s) behind the fail-closed webhook(s) {', '.join(closed)}: "
            "while it is down (a drain, an eviction, a crash) every request they cover "
            "is refused",
            fix,
        )
    return Finding(
        CHECK,
        Status.WARN,
        f"{replicas} replica(s): while it is down, the webhooks are skipped",
        fix,
    )


def budget_findings(
    budgets: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, Any], replicas: int
) -> list[Finding]:
    """The budgets selecting the pods: each lets at least one go and keeps at least one."""
    selecting = []
    for budget in budgets:
        selector = (budget.get("spec") or {}).get("selector")
        try:
            if matches(selector if isinstance(selector, dict) else {}, pod_labels):
                selecting.append(budget)
        except (KeyError, TypeError, AttributeError):
            continue
    if not selecting:
        if replicas < 2:
            return []
        return [
            Finding(
                CHECK,
                Status.WARN,
                "no PodDisruptionBudget selects the pods: a drain may evict every replica at once",
                "add one with minAvailable: 1 (the chart: podDisruptionBudget.enabled: true)",
            )
        ]
    findings = []
    for budget in selecting:
        name = str((budget.get("metadata") or {}).get("name", ""))
        spec = budget.get("spec") or {}
        said = ", ".join(f"{k} {spec[k]}" for k in ("minAvailable", "maxUnavailable") if k in spec)
        allowed = evictable(budget, replicas)
        if allowed is None:
            findings.append(
                Finding(
                    CHECK,
                    Status.WARN,
                    f"PodDisruptionBudget {name} ({said}) could not be read",
                    "give it an integer or a percentage",
                )
            )
        elif allowed < 1:
            findings.append(
                Finding(
                    CHECK,
                    Status.FAIL,
                    f"PodDisruptionBudget {name} ({said}) with {replicas} replica(s) lets no "
                    "pod be evicted: every node drain that meets one waits forever",
                    f"set minAvailable to at most {max(replicas - 1, 0)} or run more replicas "
                    "(the chart: podDisruptionBudget.minAvailable below replicaCount)",
                )
            )
        elif allowed >= replicas:
            findings.append(
                Finding(
                    CHECK,
                    Status.WARN,
                    f"PodDisruptionBudget {name} ({said}) lets all {replicas} replicas be "
                    "evicted at once: it protects nothing",
                    "set minAvailable: 1 or more",
                )
            )
        else:
            findings.append(
                Finding(
                    CHECK,
                    Status.OK,
                    f"PodDisruptionBudget {name} lets {allowed} of {replicas} replicas be "
                    "evicted at once",
                )
            )
    return findings


def priority_finding(template_spec: Mapping[str, Any]) -> Finding:
    """A priority class is set on the pods."""
    name = template_spec.get("priorityClassName")
    if isinstance(name, str) and name:
        return Finding(CHECK, Status.OK, f"priorityClassName {name}")
    return Finding(
        CHECK,
        Status.WARN,
        "no priorityClassName: the pods are among the first preempted or evicted under "
        "node pressure",
        "set one (the chart's default: priorityClassName: system-cluster-critical)",
    )


def ready_finding(replicas: int, ready: int) -> Finding:
    """Every replica is ready; none ready fails."""
    if ready >= replicas:
        return Finding(CHECK, Status.OK, f"{ready} of {replicas} replicas ready")
    fix = "see why with kubectl describe pods and the server's /readyz"
    status = Status.FAIL if ready == 0 else Status.WARN
    return Finding(CHECK, status, f"{ready} of {replicas} replicas ready", fix)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def judge(
    deployment: Mapping[str, Any],
    budgets: Sequence[Mapping[str, Any]] | None,
    configurations: Sequence[Mapping[str, Any]],
) -> list[Finding]:
    """Every finding for one Deployment, its namespace's budgets (``None``: unread, no
    finding about them) and the configurations."""
    spec = deployment.get("spec") or {}
    template = spec.get("template") or {}
    pod_labels = (template.get("metadata") or {}).get("labels") or {}
    replicas = _int(spec.get("replicas"), 1)
    ready = _int((deployment.get("status") or {}).get("readyReplicas"), 0)
    return [
        replicas_finding(replicas, fail_closed(configurations)),
        *(budget_findings(budgets, pod_labels, replicas) if budgets is not None else ()),
        priority_finding(template.get("spec") or {}),
        ready_finding(replicas, ready),
    ]


def _deployment(installation: Installation) -> dict[str, Any] | Finding:
    """The Deployment ``gather`` found, else the one named like the configurations."""
    if installation.deployment is not None:
        return installation.deployment
    where = f"{installation.namespace}/{installation.name}"
    path = DEPLOYMENT_PATH.format(namespace=installation.namespace, name=installation.name)
    try:
        return rest.get(installation, path)
    except rest.Refused as exc:
        found = "there is no such Deployment" if exc.status == 404 else exc.message
        return Finding(
            CHECK,
            Status.WARN,
            f"Deployment {where} could not be read ({found}): replicas, budget and "
            "priority could not be judged",
            "point doctor at the installation (--name, --namespace)",
        )


def check(installation: Installation) -> list[Finding]:
    """The Deployment, budget and priority of the installation (see the module's docstring)."""
    deployment = _deployment(installation)
    if isinstance(deployment, Finding):
        return [deployment]
    namespace = (deployment.get("metadata") or {}).get("namespace") or installation.namespace
    try:
        listed = rest.get(installation, BUDGETS_PATH.format(namespace=namespace))
        budgets = [b for b in listed.get("items") or [] if isinstance(b, dict)]
    except rest.Refused as exc:
        unread = Finding(
            CHECK,
            Status.WARN,
            f"the PodDisruptionBudgets of {namespace} could not be read: {exc.message}",
            "let doctor's credentials list poddisruptionbudgets",
        )
        return [*judge(deployment, None, installation.configurations), unread]
    return judge(deployment, budgets, installation.configurations)

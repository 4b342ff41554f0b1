"""``fail-closed-scope``: no fail-closed webhook covers Nodes, Leases or the server's namespace.

Why: a webhook that fails closed refuses what it covers while its server is down, and these
three are what bring the server back. Kubelets write Nodes (and their status) and node
Leases (``kube-node-lease``); refused, Nodes go NotReady and their pods, the server's
included, are evicted. The server's own pods are created in its namespace; refused, it can
never restart (the self-deadlock the Kubernetes webhook good practices warn about). The
installation's own webhooks are judged ``fail``; those of other configurations ``warn``
(they are not this installation's to fix, but they deadlock it all the same).

Which namespaces a webhook sees is decided by its ``namespaceSelector`` against the
namespace's labels (``kubernetes.io/metadata.name`` is set by the API server on every
namespace); Nodes are cluster-scoped and no namespaceSelector narrows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation
from webhooks.install.doctor.scope import fails_closed, hook_covers
from webhooks.install.webhookconfig import NAMESPACE_NAME_LABEL
from webhooks.k8s.selectors import matches, selector_problems

CHECK: Final = "fail-closed-scope"
NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
WRITES: Final = ("CREATE", "UPDATE")


def check(installation: Installation) -> list[Finding]:
    """A finding per fail-closed webhook covering one of the three; one ok when none does."""
    own_labels = dict(installation.namespace_labels or {})
    own_labels.setdefault(NAMESPACE_NAME_LABEL, installation.namespace)
    findings: list[Finding] = []
    looked = 0
    for ours, configuration in [
        *((True, c) for c in installation.configurations),
        *((False, c) for c in installation.others),
    ]:
        for hook in configuration.get("webhooks") or []:
            if not fails_closed(hook):
                continue
            looked += 1
            for what in covered(hook, installation.namespace, own_labels):
                findings.append(_finding(ours, configuration, hook, what, installation))
    for what, why in installation.unread.items():
        if what.endswith("WebhookConfigurations"):
            findings.append(
                Finding(
                    CHECK,
                    Status.WARN,
                    f"cannot read other {what}: {why}",
                    "give the kubeconfig list access to webhook configurations",
                )
            )
    if not findings:
        findings.append(
            Finding(
                CHECK,
                Status.OK,
                f"none of the {looked} fail-closed webhook(s) in the cluster covers Nodes, "
                f"node Leases or namespace {installation.namespace}",
            )
        )
    return findings


def covered(hook: Mapping[str, Any], namespace: str, labels: Mapping[str, str]) -> list[str]:
    """What of the three ``hook`` covers, in words (empty: none)."""
    found = []
    if hook_covers(hook, "", "nodes", WRITES, namespaced=False) or hook_covers(
        hook, "", "nodes", WRITES, namespaced=False, subresource="status"
    ):
        found.append("Nodes")
    lease_labels = {NAMESPACE_NAME_LABEL: NODE_LEASE_NAMESPACE}
    if hook_covers(hook, "coordination.k8s.io", "leases", WRITES, namespaced=True) and _selects(
        hook, lease_labels
    ):
        found.append(f"Leases in {NODE_LEASE_NAMESPACE}")
    if hook_covers(hook, "", "pods", ("CREATE",), namespaced=True) and _selects(hook, labels):
        found.append(f"Pods in namespace {namespace} (the server's own)")
    return found


def _selects(hook: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether ``hook``'s namespaceSelector selects a namespace with ``labels`` (an invalid
    one is stored by no API server; it is taken as selecting, the safe side)."""
    selector = hook.get("namespaceSelector") or {}
    if selector_problems(selector):
        return True
    return matches(selector, labels)


def _finding(
    ours: bool,
    configuration: Mapping[str, Any],
    hook: Mapping[str, Any],
    what: str,
    installation: Installation,
) -> Finding:
    kind = configuration.get("kind") or "WebhookConfiguration"
    name = (configuration.get("metadata") or {}).get("name")
    where = f"{kind} {name} webhook {hook.get('name')}"
    reason = (
        f"{where} fails closed (failurePolicy Fail) and covers {what}: while its server is down"
    )
    reason += (
        " Nodes cannot heartbeat" if not what.startswith("Pods") else " the server cannot restart"
    )
    if not ours:
        return Finding(
            CHECK,
            Status.WARN,
            reason,
            f"not this installation's: ask its owner to exclude {what} (rules, namespaceSelector) "
            "or set failurePolicy Ignore",
        )
    if what == "Nodes":
        fix = (
            "set webhooks.nodes.failurePolicy=Ignore (webhook-config --nodes-failure-policy Ignore)"
        )
    elif what.startswith("Pods"):
        fix = (
            f"keep {installation.namespace} in the namespaceSelector's "
            f"{NAMESPACE_NAME_LABEL} NotIn list (the chart always renders it: helm upgrade)"
        )
    else:
        fix = f"keep {NODE_LEASE_NAMESPACE} excluded (webhooks.excludeNamespaces) and re-render"
    return Finding(CHECK, Status.FAIL, reason, fix)

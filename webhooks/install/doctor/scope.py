"""What an admission rule covers, as the API server matches it (admissionregistration/v1).

Why a module: ``fail-closed-scope`` and ``timeouts`` both ask "is this request sent to that
webhook", with the API server's wildcards: ``*`` in groups and operations, ``*`` for every
resource, ``*/*`` for every resource and subresource, ``R/*`` for R's subresources, and a
rule's ``scope`` (``Cluster``, ``Namespaced``, ``*``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

#: The API server's default failurePolicy (admissionregistration.k8s.io/v1).
DEFAULT_FAILURE_POLICY: Final = "Fail"
#: The API server's default timeoutSeconds (admissionregistration.k8s.io/v1).
DEFAULT_TIMEOUT_SECONDS: Final = 10


def fails_closed(hook: Mapping[str, Any]) -> bool:
    """Whether a call that fails refuses the request (``failurePolicy: Fail``, the default)."""
    return (hook.get("failurePolicy") or DEFAULT_FAILURE_POLICY) == "Fail"


def rule_covers(
    rule: Mapping[str, Any],
    group: str,
    resource: str,
    operations: Iterable[str],
    *,
    namespaced: bool,
    subresource: str = "",
) -> bool:
    """Whether ``rule`` sends a request for ``group``/``resource`` (``/subresource``) with
    one of ``operations``."""
    groups = rule.get("apiGroups") or []
    ops = rule.get("operations") or []
    scope = rule.get("scope") or "*"
    if group not in groups and "*" not in groups:
        return False
    if "*" not in ops and not any(op in ops for op in operations):
        return False
    if scope not in ("*", "Namespaced" if namespaced else "Cluster"):
        return False
    resources = rule.get("resources") or []
    if subresource:
        wanted = {f"{resource}/{subresource}", f"{resource}/*", f"*/{subresource}", "*/*"}
    else:
        wanted = {resource, "*", "*/*"}
    return any(r in wanted for r in resources)


def hook_covers(
    hook: Mapping[str, Any],
    group: str,
    resource: str,
    operations: Iterable[str],
    *,
    namespaced: bool,
    subresource: str = "",
) -> bool:
    """Whether any of ``hook``'s rules covers the request (:func:`rule_covers`)."""
    ops = tuple(operations)
    return any(
        rule_covers(rule, group, resource, ops, namespaced=namespaced, subresource=subresource)
        for rule in hook.get("rules") or []
    )

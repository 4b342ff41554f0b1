"""Installing exported policies on an API server, and knowing when it runs them.

The API server loads policies through informers and recompiles them on its own schedule, so
a request sent right after ``kubectl apply`` may not meet them. Two sentinels (a mutating
and a validating policy for pods carrying a label only the sentinel probe uses) are created
*after* the exported objects; informers deliver events in resourceVersion order, so once
both sentinels act, every object created before them is loaded too.

The MutatingAdmissionPolicy sentinel is at the API version the running release serves
(:data:`controlplane.release.RELEASE`; ``v1beta1`` on 1.34 and 1.35, whose test API servers
turn the gate on); ValidatingAdmissionPolicy is ``v1`` on every supported release.
"""

from __future__ import annotations

import time
from typing import Any

from controlplane.harness.rest import Answer, Rest
from controlplane.release import RELEASE

SENTINEL_LABEL = "placement-webhooks.io/sentinel"
#: ValidatingAdmissionPolicy's API, the same on every supported release.
API = "admissionregistration.k8s.io/v1"
#: MutatingAdmissionPolicy's API on the running release.
MUTATING_API = RELEASE.mutating_policy_api

_MATCH = {
    "resourceRules": [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    ]
}
_CONDITION = [
    {
        "name": "sentinel",
        "expression": f"'{SENTINEL_LABEL}' in object.metadata.?labels.orValue({{}})",
    }
]

SENTINELS: list[dict[str, Any]] = [
    {
        "apiVersion": MUTATING_API,
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "zz-sentinel"},
        "spec": {
            "matchConstraints": _MATCH,
            "matchConditions": _CONDITION,
            "reinvocationPolicy": "Never",
            "mutations": [
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {
                        "expression": (
                            "[JSONPatch{op: 'add', path: '/metadata/annotations',"
                            " value: {'placement-webhooks.io/sentinel': 'seen'}}]"
                        )
                    },
                }
            ],
        },
    },
    {
        "apiVersion": MUTATING_API,
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "zz-sentinel"},
        "spec": {"policyName": "zz-sentinel"},
    },
    {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "zz-sentinel"},
        "spec": {
            "matchConstraints": _MATCH,
            "matchConditions": _CONDITION,
            "validations": [{"expression": "false", "message": "sentinel"}],
        },
    },
    {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "zz-sentinel"},
        "spec": {"policyName": "zz-sentinel", "validationActions": ["Warn"]},
    },
]


def ensure_namespace(rest: Rest, name: str, metadata: dict[str, Any] | None = None) -> Answer:
    """Create Namespace ``name`` (labels, annotations from ``metadata``) and its ``default``
    ServiceAccount, which the ServiceAccount plugin requires of every pod."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, **(metadata or {})}}
    answer = rest.create("/api/v1/namespaces", body)
    rest.create(
        f"/api/v1/namespaces/{name}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
    )
    return answer


def _sentinel_acts(rest: Rest) -> bool:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sentinel", "labels": {SENTINEL_LABEL: "yes"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }
    answer = rest.create("/api/v1/namespaces/default/pods?dryRun=All", pod)
    annotations = answer.body["metadata"].get("annotations", {}) if answer.allowed else {}
    mutated = annotations.get(SENTINEL_LABEL) == "seen"
    return mutated and any(w.endswith("sentinel") for w in answer.warnings)


def install(rest: Rest, objects: list[dict[str, Any]], timeout: float = 60.0) -> None:
    """Create ``objects`` (exported policies and bindings), then wait until they are in force."""
    ensure_namespace(rest, "default")
    rest.apply_all(objects)
    rest.apply_all(SENTINELS)
    deadline = time.monotonic() + timeout
    while not _sentinel_acts(rest):
        if time.monotonic() > deadline:
            raise TimeoutError("the API server did not load the exported policies in time")
        time.sleep(0.2)


def type_checking(rest: Rest, names: list[str], timeout: float = 60.0) -> dict[str, Any]:
    """Each ValidatingAdmissionPolicy's ``status.typeChecking`` once the controller wrote it.

    The status controller (kube-controller-manager's
    ``validatingadmissionpolicy-status-controller``) checks every expression against the
    schema of what the policy matches; a policy with type errors is accepted and the errors
    appear only here.
    """
    found: dict[str, Any] = {}
    deadline = time.monotonic() + timeout
    while len(found) < len(names):
        for name in names:
            answer = rest.call("GET", f"/apis/{API}/validatingadmissionpolicies/{name}")
            status = answer.body.get("status") or {}
            generation = answer.body["metadata"].get("generation")
            if status.get("observedGeneration") == generation:
                found[name] = status.get("typeChecking") or {}
        if time.monotonic() > deadline:
            missing = sorted(set(names) - set(found))
            raise TimeoutError(f"no typeChecking status for {missing}")
        time.sleep(0.5)
    return found

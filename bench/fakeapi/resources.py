"""The resources the fake serves: their paths, groups, versions and kinds, and the route from
a request path to one.

Why a table of its own: the store keys objects by plural, the verbs answer with each kind's
apiVersion, and the transport routes request paths; all three read this one table, so
serving one more resource is one row here.

Cluster-scoped: RuntimeClasses (``node.k8s.io/v1``), Namespaces and Nodes (``v1``), the two
webhook configurations (``admissionregistration.k8s.io/v1``), DeviceClasses, ResourceSlices
and DeviceTaintRules (``resource.k8s.io/v1``) and the cluster-wide report kinds. Namespaced,
each listed across all namespaces or in one: ResourceClaims and ResourceClaimTemplates, the
workloads ``audit`` reads (Pods, PodTemplates, ReplicationControllers, Deployments,
ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs), the report kinds of OpenReports and
wgpolicyk8s, and Secrets.
"""

from __future__ import annotations

ADMISSION = "admissionregistration.k8s.io"
DRA = "resource.k8s.io"

#: URL prefix → (plural, group, apiVersion, kind) for the collections served.
COLLECTIONS = {
    "/apis/node.k8s.io/v1/runtimeclasses": (
        "runtimeclasses",
        "node.k8s.io",
        "node.k8s.io/v1",
        "RuntimeClass",
    ),
    "/api/v1/namespaces": ("namespaces", "", "v1", "Namespace"),
    f"/apis/{ADMISSION}/v1/mutatingwebhookconfigurations": (
        "mutatingwebhookconfigurations",
        ADMISSION,
        f"{ADMISSION}/v1",
        "MutatingWebhookConfiguration",
    ),
    f"/apis/{ADMISSION}/v1/validatingwebhookconfigurations": (
        "validatingwebhookconfigurations",
        ADMISSION,
        f"{ADMISSION}/v1",
        "ValidatingWebhookConfiguration",
    ),
    "/api/v1/nodes": ("nodes", "", "v1", "Node"),
    f"/apis/{DRA}/v1/deviceclasses": ("deviceclasses", DRA, f"{DRA}/v1", "DeviceClass"),
    f"/apis/{DRA}/v1/resourceslices": ("resourceslices", DRA, f"{DRA}/v1", "ResourceSlice"),
    f"/apis/{DRA}/v1/devicetaintrules": (
        "devicetaintrules",
        DRA,
        f"{DRA}/v1",
        "DeviceTaintRule",
    ),
    "/apis/openreports.io/v1alpha1/clusterreports": (
        "clusterreports",
        "openreports.io",
        "openreports.io/v1alpha1",
        "ClusterReport",
    ),
    "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports": (
        "clusterpolicyreports",
        "wgpolicyk8s.io",
        "wgpolicyk8s.io/v1alpha2",
        "ClusterPolicyReport",
    ),
}

#: plural → (API path, group, apiVersion, kind) for the namespaced collections served, each
#: at ``<path>/<plural>`` (every namespace) and ``<path>/namespaces/<ns>/<plural>[/<name>]``.
NAMESPACED = {
    "pods": ("/api/v1", "", "v1", "Pod"),
    "podtemplates": ("/api/v1", "", "v1", "PodTemplate"),
    "replicationcontrollers": ("/api/v1", "", "v1", "ReplicationController"),
    "deployments": ("/apis/apps/v1", "apps", "apps/v1", "Deployment"),
    "replicasets": ("/apis/apps/v1", "apps", "apps/v1", "ReplicaSet"),
    "statefulsets": ("/apis/apps/v1", "apps", "apps/v1", "StatefulSet"),
    "daemonsets": ("/apis/apps/v1", "apps", "apps/v1", "DaemonSet"),
    "jobs": ("/apis/batch/v1", "batch", "batch/v1", "Job"),
    "cronjobs": ("/apis/batch/v1", "batch", "batch/v1", "CronJob"),
    "resourceclaims": (f"/apis/{DRA}/v1", DRA, f"{DRA}/v1", "ResourceClaim"),
    "resourceclaimtemplates": (f"/apis/{DRA}/v1", DRA, f"{DRA}/v1", "ResourceClaimTemplate"),
    "reports": (
        "/apis/openreports.io/v1alpha1",
        "openreports.io",
        "openreports.io/v1alpha1",
        "Report",
    ),
    "policyreports": (
        "/apis/wgpolicyk8s.io/v1alpha2",
        "wgpolicyk8s.io",
        "wgpolicyk8s.io/v1alpha2",
        "PolicyReport",
    ),
    "secrets": ("/api/v1", "", "v1", "Secret"),
}
#: Namespaced kinds whose changes watch streams carry (every namespace's).
WATCHED_NAMESPACED = frozenset({"resourceclaims", "resourceclaimtemplates"})
#: The report kinds: written with server-side apply and deleted by ``audit``.
REPORTS = frozenset({"reports", "clusterreports", "policyreports", "clusterpolicyreports"})
KINDS = {kind: plural for plural, _, _, kind in COLLECTIONS.values()}
KINDS.update((kind, plural) for plural, (_, _, _, kind) in NAMESPACED.items())


def info(plural: str) -> tuple[str, str, str, bool]:
    """(group, apiVersion, kind, namespaced) of a plural the fake serves."""
    if plural in NAMESPACED:
        _, group, api_version, kind = NAMESPACED[plural]
        return group, api_version, kind, True
    _, group, api_version, kind = next(c for c in COLLECTIONS.values() if c[0] == plural)
    return group, api_version, kind, False


def key_of(plural: str, name: str, namespace: str | None = None) -> str:
    """The key of a stored object: ``name``, or ``namespace/name`` for a namespaced kind.

    Why the namespace comes first: a list in one namespace is the keys with its prefix, and
    a page's ``continue`` token is the last key returned.
    """
    return f"{namespace}/{name}" if plural in NAMESPACED else name


def route(
    path: str, device_taint_rule_version: str = "v1"
) -> tuple[str, str | None, str | None, str | None]:
    """(list|get, plural, name, namespace) for a request path; plural ``None`` when unknown.

    DeviceTaintRules are served at ``device_taint_rule_version`` only: the path of any other
    version is unknown, as on an API server that serves one version of the kind.
    """
    rules = f"/apis/{DRA}/{device_taint_rule_version}/devicetaintrules"
    canonical = f"/apis/{DRA}/v1/devicetaintrules"
    if rules != canonical:
        if path.startswith(canonical):
            return "get", None, None, None
        if path.startswith(rules):
            path = canonical + path[len(rules) :]
    for plural, (base, *_rest) in NAMESPACED.items():
        if path == f"{base}/{plural}":
            return "list", plural, None, None
        if path.startswith(f"{base}/namespaces/"):
            parts = path[len(f"{base}/namespaces/") :].split("/")
            if len(parts) in (2, 3) and parts[1] == plural and all(parts):
                if len(parts) == 2:
                    return "list", plural, None, parts[0]
                return "get", plural, parts[2], parts[0]
    for prefix, (plural, *_rest) in COLLECTIONS.items():
        if path == prefix:
            return "list", plural, None, None
        if path.startswith(prefix + "/") and "/" not in path[len(prefix) + 1 :]:
            return "get", plural, path[len(prefix) + 1 :], None
    return "get", None, None, None

"""Small helpers for the objects every test needs, made the way a cluster would make them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from controlplane.harness.components import ApiServer
from controlplane.harness.pki import write_kubeconfig
from controlplane.harness.process import wait_until


def create_namespace(
    api_client: Any,
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Create a Namespace and its ``default`` ServiceAccount; returns the stored Namespace.

    Why the account: the ServiceAccount admission plugin refuses a pod whose account does
    not exist, and only a controller-manager makes ``default`` by itself. Creating it here
    (and accepting "already exists") gives every API server, with or without one, the same
    behaviour, so the differential suite never compares a refusal that is only about that.
    """
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api_client)
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    stored = core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
    try:
        core.create_namespaced_service_account(
            name, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        )
    except ApiException as exc:
        if exc.status != 409:
            raise
    namespace: dict[str, Any] = api_client.sanitize_for_serialization(stored)
    return namespace


def pod_manifest(name: str, **spec: Any) -> dict[str, Any]:
    """A minimal Pod (one pause container); ``spec`` entries are added to its spec."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}], **spec},
    }


def daemonset_manifest(name: str, template_spec: Mapping[str, Any]) -> dict[str, Any]:
    """A DaemonSet whose pods are ``template_spec``'s (copied), labelled ``app: <name>``.

    Why here: the webhook suite, the differential corpus and the native cases all create
    DaemonSets, and one shape means a difference between them is never about the manifest.
    """
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": dict(template_spec)},
        },
    }


def create_pods(
    api_client: Any, namespace: str, pods: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Create the pods in ``namespace``; returns them as stored (admitted), by name.

    Why the stored form: admission changed them (tolerations, overhead, the RuntimeClass's
    scheduling), and what a test compares is what the scheduler and ``explain`` then read.
    """
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    stored: dict[str, dict[str, Any]] = {}
    for pod in pods:
        made = core.create_namespaced_pod(namespace, dict(pod))
        stored[made.metadata.name] = api_client.sanitize_for_serialization(made)
    return stored


def delete_pods(api_client: Any, namespace: str, *, timeout: float = 60.0) -> None:
    """Delete every pod of ``namespace`` at once and wait until they are gone.

    Why grace period 0: no kubelet runs, so a graceful deletion of a bound pod would keep it
    Terminating, holding its node's room in the scheduler's view, forever.
    """
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_until(
        lambda: not core.list_namespaced_pod(namespace).items,
        timeout=timeout,
        what=f"emptied of pods ({namespace})",
    )


def service_account_kubeconfig(
    server: ApiServer, api_client: Any, namespace: str, name: str, path: Path
) -> Path:
    """A kubeconfig for ServiceAccount ``namespace/name`` (created if missing), with a
    token from the TokenRequest API: exactly the identity a pod of that account has.

    Why: what a chart's RBAC grants is proved only by running the product under it.
    """
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api_client)
    try:
        core.create_namespaced_service_account(
            namespace, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        )
    except ApiException as exc:
        if exc.status != 409:
            raise
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    token = core.create_namespaced_service_account_token(name, namespace, request).status.token
    return write_kubeconfig(
        path, server=server.url, ca=server.credentials.serving.ca, token=token, name=name
    )

"""The chart's ``native.enabled`` on the real API server, against the default release.

The chart renders the release twice, as Helm would install it on the running Kubernetes
release: with its defaults (the webhooks) and with ``native.enabled`` (the policies packaged
for that Kubernetes release, the webhooks narrowed). Each is applied to an API server with
the in-tree twins off, so what changes a pod is the release alone, and ``serve`` runs behind
the release's Service. The native release registers webhooks for exactly the halves ``export
--hybrid`` leaves to the webhook on that Kubernetes release (from 1.35: no mutating webhook
and one validating webhook, ``/validate``, where ``serve --native`` runs runtime-class's
refusal of a missing RuntimeClass alone; on 1.34, whose CEL cannot express the default
mutations, the mutating one too); and a pod created in the cluster gets the tolerations the
webhook gives it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controlplane.harness import (
    ApiServerOptions,
    ControllerManagerOptions,
    ControlPlane,
    ControlPlaneOptions,
    NotBuilt,
    create_namespace,
    pod_manifest,
    running,
)
from controlplane.harness.admission import TWINS, AdmissionSetup
from controlplane.harness.apply import apply_objects, delete_objects
from controlplane.harness.components import DEFAULT_CONTROLLERS
from controlplane.harness.process import Component
from controlplane.harness.servicenet import loopback_service_range, service_flag
from controlplane.release import RELEASE
from tests.charts.render import values_file
from tests.controlplane.chart.served import WEBHOOK_KINDS, rendered, serve_release
from tests.controlplane.conftest import STARTS
from tests.waiting import eventually
from webhooks.core.config import load_config
from webhooks.export import export
from webhooks.k8s.releases import CEL_LISTS
from webhooks.plugins import REGISTRY

NOT_READY = "node.kubernetes.io/not-ready"


def packaged_for_release() -> Any:
    """``export --hybrid --kubernetes-version <running>`` of the chart's default values: what
    the chart packaged for this Kubernetes release."""
    values = values_file()
    document = {"plugins": values["plugins"], "exceptions": values.get("exceptions") or []}
    return export(load_config(document, REGISTRY), REGISTRY, hybrid=True, release=RELEASE)


RELEASES = {
    "webhooks": ("web", None),
    "native": ("nat", {"native": {"enabled": True}}),
}


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """An API server with the in-tree twins off: only the release changes pods."""
    options = ControlPlaneOptions(
        apiservers=(
            ApiServerOptions(
                name="chart",
                admission=AdmissionSetup(disable=tuple(TWINS.values())),
                extra_args=(service_flag(loopback_service_range()),),
            ),
        ),
        controller_manager=ControllerManagerOptions(controllers=DEFAULT_CONTROLLERS),
    )
    try:
        with running(options) as started:
            STARTS.append(("chart proofs, in-tree twins off", started.started_in or 0))
            yield started
    except NotBuilt as exc:
        pytest.fail(str(exc), pytrace=False)


def _pod(name: str) -> dict[str, Any]:
    """A pod with an extended resource: default tolerations and the resource's."""
    pod = pod_manifest(name)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"example.com/gpu": "1"}}
    return pod


def _tolerations(admin: Any, namespace: str, name: str, *, dry_run: bool = False) -> Any:
    core = client.CoreV1Api(admin)
    kwargs: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
    created = core.create_namespaced_pod(namespace, _pod(name), **kwargs)
    return admin.sanitize_for_serialization(created.spec.tolerations)


def _hooks(admin: Any, name: str) -> dict[str, list[str]]:
    """``{kind: [webhook name]}`` of the release's configurations (absent: no entry)."""
    api = client.AdmissionregistrationV1Api(admin)
    found: dict[str, list[str]] = {}
    for kind, read in (
        ("MutatingWebhookConfiguration", api.list_mutating_webhook_configuration),
        ("ValidatingWebhookConfiguration", api.list_validating_webhook_configuration),
    ):
        for configuration in read().items:
            if configuration.metadata.name.startswith(name):
                found.setdefault(kind, []).extend(h.name for h in configuration.webhooks or [])
    return found


def _install(
    plane: ControlPlane,
    admin: Any,
    mode: str,
    directory: Path,
    processes: list[Component],
) -> tuple[dict[str, list[str]], Any, list[dict[str, Any]]]:
    """Install one release, wait until it acts on pods, create a pod; what it registered,
    the pod's stored tolerations, and the release's objects (to remove)."""
    release, values = RELEASES[mode]
    namespace, apps = f"placement-{release}", f"{release}-apps"
    create_namespace(admin, namespace)
    create_namespace(admin, apps)
    objects = rendered(values, release, namespace, upgrade=False)
    apply_objects(admin, objects)
    serve_release(plane, admin, release, namespace, directory, processes=processes)

    def acting() -> bool:
        found = _tolerations(admin, apps, "probe", dry_run=True) or []
        return any(t.get("key") == NOT_READY for t in found)

    eventually(acting, f"the {mode} release acting on pods", 60)
    return _hooks(admin, release), _tolerations(admin, apps, "plain"), objects


def test_native_enabled_registers_no_webhook_for_an_exported_half_and_tolerates_alike(
    plane: ControlPlane, admin: Any, tmp_path: Path, processes: list[Component]
) -> None:
    results = {}
    for mode in RELEASES:
        hooks, tolerations, objects = _install(plane, admin, mode, tmp_path / mode, processes)
        results[mode] = (hooks, tolerations)
        delete_objects(admin, [o for o in objects if o["kind"] in WEBHOOK_KINDS])
        delete_objects(
            admin, [o for o in objects if o["apiVersion"].startswith("admissionregistration")]
        )
        # Nothing acts on pods any more before the next release: what it gives is its own.
        apps = f"{RELEASES[mode][0]}-apps"
        eventually(
            lambda apps=apps: not _tolerations(admin, apps, "gone", dry_run=True),
            f"the {mode} release gone",
            60,
        )
    webhooks, native = results["webhooks"], results["native"]
    phases = {phase for _, phase in packaged_for_release().webhook}
    kinds = {"mutate": "MutatingWebhookConfiguration", "validate": "ValidatingWebhookConfiguration"}
    assert native[0] == {kinds[p]: [f"{p}.nat-placement-webhooks.svc"] for p in sorted(phases)}
    if RELEASE.cel_offers(CEL_LISTS):
        assert phases == {"validate"}  # runtime-class's refusal alone (serve --native)
    assert webhooks[0]["MutatingWebhookConfiguration"]
    assert native[1] == webhooks[1]
    keys = [NOT_READY, "node.kubernetes.io/unreachable", "example.com/gpu"]
    assert [t["key"] for t in native[1]] == keys

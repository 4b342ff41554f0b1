"""The chart's release on the real API server, and ``serve`` standing in for its pods.

Shared by the chart proofs: render the chart (Helm's own engine, as ``make test`` does) for
the running release (its ``.Capabilities.KubeVersion``, as ``helm install`` sees it), apply
what it renders, and run ``serve`` behind the release's Service with the certificate
and config the chart made, so the API server's calls follow the chart's registration.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane.harness import ControlPlane, pod_manifest
from controlplane.harness.apply import apply_objects, delete_objects
from controlplane.harness.process import Component
from controlplane.harness.servicenet import (
    ServedService,
    chart_config,
    secret_to_dir,
    serve_behind_service,
    service_names,
    token_kubeconfig,
    with_cluster_dns,
)
from controlplane.release import KUBERNETES_VERSION
from tests.charts.render import is_hook, render
from tests.command import run_cli

REPO = Path(__file__).resolve().parents[3]

WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def rendered(
    values: dict[str, Any] | None, release: str, namespace: str, *, upgrade: bool = True
) -> list[dict[str, Any]]:
    """The release's objects (hooks left out), as ``helm upgrade`` (or install) renders them."""
    objects = render(
        values, name=release, namespace=namespace, upgrade=upgrade, kube_version=KUBERNETES_VERSION
    )
    return [
        obj
        for obj in objects
        if "helm.sh/hook" not in (obj.get("metadata", {}).get("annotations") or {})
    ]


def fullname_of(release: str) -> str:
    """The chart's full name for ``release`` (its ``placement-webhooks.fullname``)."""
    return release if "placement-webhooks" in release else f"{release}-placement-webhooks"


def hooks_of(
    event: str, values: dict[str, Any] | None, release: str, namespace: str, *, upgrade: bool
) -> list[dict[str, Any]]:
    """The hook objects of ``event`` (``post-install``, ``test``) in one render."""
    objects = render(
        values, name=release, namespace=namespace, upgrade=upgrade, kube_version=KUBERNETES_VERSION
    )
    return [
        obj
        for obj in objects
        if is_hook(obj) and event in obj["metadata"]["annotations"]["helm.sh/hook"].split(",")
    ]


def run_hook(
    plane: ControlPlane,
    admin: Any,
    hooks: list[dict[str, Any]],
    kind: str,
    namespace: str,
    directory: Path,
) -> subprocess.CompletedProcess[str]:
    """Play a hook's part: its account and role from the render, then its container's
    arguments run as that account (a TokenRequest token), with cluster DNS for the Service."""
    accounts = [o for o in hooks if o["kind"] in {"ServiceAccount", "ClusterRole"}]
    bindings = [o for o in hooks if o["kind"] == "ClusterRoleBinding"]
    apply_objects(admin, [*accounts, *bindings])
    [workload] = [o for o in hooks if o["kind"] == kind]
    pod = workload["spec"]["template"]["spec"] if kind == "Job" else workload["spec"]
    [container] = pod["containers"]
    kubeconfig = token_kubeconfig(
        plane.api, admin, namespace, pod["serviceAccountName"], directory / f"{kind}.kubeconfig"
    )
    command = [sys.executable, "-m", "webhooks", *container["args"]]
    command += ["--kubeconfig", str(kubeconfig)]
    args = container["args"]
    service = args[args.index("--name") + 1]  # the configurations and the Service share it
    names = service_names(admin, namespace, service)
    try:
        return subprocess.run(
            with_cluster_dns(command, names, directory / kind),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            check=False,
        )
    finally:
        delete_objects(admin, [*bindings, *accounts])


def ca_bundles(admin: Any, name: str) -> dict[str, bytes]:
    """``{webhook: caBundle PEM}`` of both configurations ``name``."""
    api = client.AdmissionregistrationV1Api(admin)
    found = {}
    for configuration in (
        api.read_mutating_webhook_configuration(name),
        api.read_validating_webhook_configuration(name),
    ):
        for hook in configuration.webhooks:
            found[hook.name] = base64.b64decode(hook.client_config.ca_bundle or "")
    return found


def pod_certificates(
    plane: ControlPlane, admin: Any, release: str, namespace: str, directory: Path
) -> Path:
    """The cert dir a pod of the release serves from, filled as the chart fills it.

    ``generate`` (its Secret ``<fullname>-tls`` exists): the Secret's files, as the volume
    mounts them. ``managed``: the sidecar's command, once, as the chart's ServiceAccount.
    """
    fullname = fullname_of(release)
    try:
        return secret_to_dir(admin, namespace, f"{fullname}-tls", directory)
    except ApiException as exc:
        if exc.status != 404:
            raise
    kubeconfig = token_kubeconfig(
        plane.api, admin, namespace, fullname, directory.parent / "sidecar.kubeconfig"
    )
    proc = run_cli(
        *("certs", "manage", "--once"),
        *("--secret", f"{fullname}-certs", "--namespace", namespace, "--service", fullname),
        *("--webhook-config", fullname, "--cert-dir", str(directory)),
        *("--kubeconfig", str(kubeconfig)),
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"certs manage failed: {proc.stderr.strip()}")
    return directory


def serve_release(
    plane: ControlPlane,
    admin: Any,
    release: str,
    namespace: str,
    directory: Path,
    *,
    cert_dir: Path | None = None,
    processes: list[Component] | None = None,
    deployment: dict[str, Any] | None = None,
) -> ServedService:
    """``serve`` with the release's config on its Service's ClusterIP.

    ``cert_dir``: where the certificate is (``tls.mode: managed``, filled by ``certs
    manage``); by default the chart's generated Secret ``<release>-tls``. ``deployment``:
    the release's Deployment as rendered, for a test that has not applied it yet; by
    default it is read from the API server.
    """
    fullname = fullname_of(release)
    if cert_dir is None:
        cert_dir = pod_certificates(plane, admin, release, namespace, directory / "certs")
    config = chart_config(admin, namespace, fullname, directory)
    served = serve_behind_service(
        plane.api,
        admin,
        namespace,
        fullname,
        cert_dir,
        config,
        directory / "serve",
        serve_options(deployment_args(admin, namespace, fullname, deployment)),
    )
    if processes is not None:
        processes.append(served.component)
    return served


#: ``serve`` options whose values are this machine's, not the pod's: the harness sets them.
LOCAL_OPTIONS = ("--config", "--cert-dir", "--bind", "--metrics-bind")


def deployment_args(
    admin: Any, namespace: str, fullname: str, rendered: dict[str, Any] | None
) -> list[str]:
    """The ``webhooks`` container's args: from ``rendered`` when given, else from the
    release's Deployment on the API server."""
    if rendered is not None:
        containers = rendered["spec"]["template"]["spec"]["containers"]
        [args] = [list(c.get("args") or []) for c in containers if c["name"] == "webhooks"]
        return args
    deployment = client.AppsV1Api(admin).read_namespaced_deployment(fullname, namespace)
    [container] = [c for c in deployment.spec.template.spec.containers if c.name == "webhooks"]
    return list(container.args or [])


def serve_options(args: list[str]) -> tuple[str, ...]:
    """The options the release's Deployment gives ``serve`` (``--native``, ``--workers``),
    but those naming files and addresses of the pod (:data:`LOCAL_OPTIONS`)."""
    assert args[0] == "serve", args
    kept: list[str] = []
    rest = iter(args[1:])
    for arg in rest:
        if arg in LOCAL_OPTIONS:
            next(rest)  # its value
        else:
            kept.append(arg)
    return tuple(kept)


def create_pod(admin: Any, namespace: str, name: str, *, dry_run: bool = False) -> None:
    """Create a one-container Pod (``dry_run``: ``dryRun=All``, nothing stored)."""
    core = client.CoreV1Api(admin)
    kwargs: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
    core.create_namespaced_pod(namespace, pod_manifest(name), **kwargs)


def refusal(admin: Any, namespace: str, name: str) -> str:
    """The API server's message refusing a Pod create ("" when it was admitted)."""
    try:
        create_pod(admin, namespace, name, dry_run=True)
    except ApiException as exc:
        return str(json.loads(exc.body).get("message", exc.body))
    return ""


def failure_policies(admin: Any, name: str) -> dict[str, str]:
    """``{webhook name: failurePolicy}`` of both configurations named ``name``."""
    api = client.AdmissionregistrationV1Api(admin)
    found: dict[str, str] = {}
    for read in (
        api.read_mutating_webhook_configuration,
        api.read_validating_webhook_configuration,
    ):
        try:
            configuration = read(name)
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise
        for hook in configuration.webhooks or []:
            found[hook.name] = hook.failure_policy
    return found

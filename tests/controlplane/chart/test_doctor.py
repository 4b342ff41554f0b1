"""``kubectl placement doctor`` on the real control plane, against the chart installed by Helm.

The release is installed with the real ``helm``; ``serve`` answers on its Service's ClusterIP
with the chart's certificate and config (:mod:`.served`); the controller-manager also runs
the EndpointSlice controller, and the Deployment's pods are bound to a heartbeating Node and
marked Ready (no kubelet runs here), so the Service's EndpointSlice is the controller's own
and the Deployment counts its replicas ready. ``doctor`` runs as a subprocess with
cluster DNS for the Service's names, as from a pod, through ``kubectl placement`` (the
real kubectl finding the plugin on PATH).

Proved: the healthy installation is every line ``ok`` and exit 0; then, one break at a
time (each undone before the next), the line naming the check and its fix: a caBundle of
another CA, a serving certificate near expiry and then expired, a Service selector that
selects nothing, another configuration failing closed over Node creates and the release's
own namespace, and a configuration edited so it no longer matches the render (undone by
the fix it names, ``helm upgrade --force-conflicts``: the edit owns the rules it changed).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane.harness import (
    ControlPlane,
    LeaseRenewer,
    node_manifest,
    write_node,
)
from controlplane.harness.helm import Helm
from controlplane.harness.process import Component
from controlplane.harness.servicenet import service_names, with_cluster_dns
from tests.controlplane.chart.conftest import FIGURES, chart_plane_options
from tests.controlplane.chart.served import ca_bundles, fullname_of, serve_release
from tests.controlplane.conftest import started_plane
from tests.waiting import eventually
from webhooks.certs import pki
from webhooks.install.doctor.run import CHECKS
from webhooks.install.webhookconfig import KINDS, ca_bundle_of, inject_ca_bundle

REPO = Path(__file__).resolve().parents[3]
RELEASE, NAMESPACE = "placement-webhooks", "placement-doctor"
FULLNAME = fullname_of(RELEASE)
#: The configurations as `helm upgrade` leaves them: each webhook at its configured policy.
VALUES = {"install": {"failOpenUntilReady": False}}
NODE = "doctor-node"
#: The chart's default replicaCount.
REPLICAS = 2
#: The console scripts of the virtualenv running the tests: where ``kubectl-placement`` is.
VENV_BIN = Path(sys.executable).parent
PLUGIN = VENV_BIN / "kubectl-placement"


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """The chart proofs' control plane, with the EndpointSlice controller running too."""
    options = chart_plane_options()
    assert options.controller_manager is not None
    manager = options.controller_manager
    controllers = (*manager.controllers, "endpointslice-controller")
    options = replace(options, controller_manager=replace(manager, controllers=controllers))
    with started_plane(options, "doctor proofs") as started:
        yield started


def _doctor(plane: ControlPlane, admin: Any, directory: Path) -> tuple[int, list[str]]:
    """``kubectl placement doctor`` as from a pod: exit code and lines.

    kubectl finds the plugin (this virtualenv's ``kubectl-placement``) on PATH; without a
    kubectl on this machine the plugin's console script is run directly.
    """
    flags = ["--kubeconfig", str(plane.api.kubeconfig)]
    command = [str(PLUGIN), *flags, "doctor", "--name", FULLNAME, "-n", NAMESPACE]
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        command = [kubectl, "placement", *command[1:]]
    names = service_names(admin, NAMESPACE, FULLNAME)
    env = {**os.environ, "PATH": os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])}
    proc = subprocess.run(
        with_cluster_dns(command, names, directory),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )
    assert not proc.stderr.strip(), proc.stderr
    return proc.returncode, proc.stdout.splitlines()


def _line(lines: list[str], prefix: str) -> str:
    found = [line for line in lines if line.startswith(prefix)]
    assert found, f"no line starting {prefix!r} in:\n" + "\n".join(lines)
    return found[0]


def _deployment_pods(admin: Any) -> list[Any]:
    apps, core = client.AppsV1Api(admin), client.CoreV1Api(admin)
    labels = apps.read_namespaced_deployment(FULLNAME, NAMESPACE).spec.selector.match_labels
    selector = ",".join(f"{key}={value}" for key, value in labels.items())
    return list(core.list_namespaced_pod(NAMESPACE, label_selector=selector).items)


def _ready_pods(admin: Any, renewer: LeaseRenewer) -> None:
    """The Deployment's own pods bound to a live Node and marked Ready as a kubelet would,
    so the EndpointSlice controller publishes them and the Deployment counts them ready."""
    core = client.CoreV1Api(admin)
    write_node(admin, node_manifest(NODE))
    renewer.add(NODE)
    eventually(lambda: len(_deployment_pods(admin)) == REPLICAS, "the pods created", limit=30)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for index, pod in enumerate(_deployment_pods(admin)):
        name = pod.metadata.name
        if not pod.spec.node_name:
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name},
                "target": {"kind": "Node", "name": NODE},
            }
            # Not preloaded: the client cannot read the answer back into a V1Binding.
            try:
                core.create_namespaced_pod_binding(name, NAMESPACE, binding, _preload_content=False)
            except ApiException as exc:
                if exc.status != 409:  # the scheduler bound it first
                    raise
        address = f"10.244.0.{10 + index}"
        status = {
            "status": {
                "phase": "Running",
                "podIP": address,
                "podIPs": [{"ip": address}],
                "conditions": [
                    {"type": t, "status": "True", "lastTransitionTime": now}
                    for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
                ],
            }
        }
        core.patch_namespaced_pod_status(name, NAMESPACE, status)
    apps = client.AppsV1Api(admin)
    eventually(
        lambda: (
            (apps.read_namespaced_deployment(FULLNAME, NAMESPACE).status.ready_replicas or 0)
            == REPLICAS
        ),
        "the Deployment counting its pods ready",
        limit=30,
    )


def _ready_endpoints(admin: Any) -> int:
    slices = client.DiscoveryV1Api(admin).list_namespaced_endpoint_slice(
        NAMESPACE, label_selector=f"kubernetes.io/service-name={FULLNAME}"
    )
    return sum(
        1
        for piece in slices.items
        for endpoint in piece.endpoints or []
        if endpoint.conditions is None or endpoint.conditions.ready is not False
    )


def _healthy(plane: ControlPlane, admin: Any, directory: Path) -> list[str]:
    code, lines = _doctor(plane, admin, directory)
    assert code == 0, "\n".join(lines)
    assert lines and all(line.startswith("ok ") for line in lines), "\n".join(lines)
    return lines


def test_doctor_says_ok_for_a_healthy_release_and_names_each_break_with_its_fix(
    plane: ControlPlane,
    admin: Any,
    helm: Helm,
    renewer: LeaseRenewer,
    tmp_path: Path,
    processes: list[Component],
) -> None:
    helm.install(RELEASE, NAMESPACE, VALUES, "--create-namespace")
    served = serve_release(plane, admin, RELEASE, NAMESPACE, tmp_path / "pods", processes=processes)
    _ready_pods(admin, renewer)
    eventually(lambda: _ready_endpoints(admin) == REPLICAS, "ready endpoints published", limit=30)

    lines = _healthy(plane, admin, tmp_path / "healthy")
    checks = list(dict.fromkeys(line.split()[1].rstrip(":") for line in lines))
    assert checks == [name for name, _ in CHECKS]
    FIGURES.append(("doctor on a healthy release", f"{len(lines)} lines, all ok"))
    FIGURES.extend(("doctor, healthy", line) for line in lines)

    _another_ca(plane, admin, tmp_path)
    _near_expiry(plane, admin, tmp_path, served.component, processes)
    _selector_selects_nothing(plane, admin, tmp_path)
    _fail_closed_elsewhere(plane, admin, tmp_path)
    _edited_configuration(plane, admin, helm, tmp_path)


def _another_ca(plane: ControlPlane, admin: Any, tmp_path: Path) -> None:
    """A caBundle of another CA: ``ca-bundle`` and ``round-trip`` fail, the fix says inject."""
    chain = ca_bundles(admin, FULLNAME)
    original = ca_bundle_of(next(iter(chain.values())))
    target = [(KINDS["validate"], FULLNAME)]
    inject_ca_bundle(admin, ca_bundle_of(pki.new_ca("another CA", days=30).cert), target)
    code, lines = _doctor(plane, admin, tmp_path / "another-ca")
    trust = _line(lines, f"fail ca-bundle: validate.{FULLNAME}.svc:")
    assert "the caBundle does not verify the certificate" in trust
    assert "fix: put the CA that signed the serving certificate in caBundle" in trust
    assert "not trusted" in _line(lines, f"fail round-trip: validate.{FULLNAME}.svc:")
    _line(lines, f"ok   ca-bundle: mutate.{FULLNAME}.svc:")
    assert code == 1
    inject_ca_bundle(admin, original, target)
    _healthy(plane, admin, tmp_path / "another-ca-undone")


def _near_expiry(
    plane: ControlPlane,
    admin: Any,
    tmp_path: Path,
    running: Component,
    processes: list[Component],
) -> None:
    """A serving certificate with days left: ``ca-bundle`` warns (exit 3), fix says renew."""
    chain = ca_bundles(admin, FULLNAME)
    original = ca_bundle_of(next(iter(chain.values())))
    ca = pki.new_ca("short-lived CA", days=365)
    leaf = pki.issue_leaf(
        ca,
        hosts=pki.service_hosts(FULLNAME, NAMESPACE),
        days=30,
        now=dt.datetime.now(dt.UTC) - dt.timedelta(days=25),
    )
    cert_dir = tmp_path / "short-certs"
    cert_dir.mkdir()
    (cert_dir / pki.CA_FILE).write_bytes(ca.cert)
    (cert_dir / pki.CERT_FILE).write_bytes(leaf.cert)
    (cert_dir / pki.KEY_FILE).write_bytes(leaf.key)
    targets = [(kind, FULLNAME) for kind in KINDS.values()]
    running.stop()
    short = serve_release(
        plane, admin, RELEASE, NAMESPACE, tmp_path / "short", cert_dir=cert_dir, processes=processes
    )
    inject_ca_bundle(admin, ca_bundle_of(ca.cert), targets)
    code, lines = _doctor(plane, admin, tmp_path / "near-expiry")
    warned = _line(lines, f"warn ca-bundle: mutate.{FULLNAME}.svc:")
    assert "expires in 5." in warned or "expires in 4." in warned, warned
    assert "under the 30 days it is renewed at" in warned
    assert "fix: renew the serving certificate" in warned
    assert code == 3, "\n".join(lines)
    FIGURES.append(("doctor on a certificate 5 days from expiry", warned.split(": ", 2)[2]))

    # Expired: the server reloads the files it serves from, and keeps the expired pair.
    expired = pki.issue_leaf(
        ca,
        hosts=pki.service_hosts(FULLNAME, NAMESPACE),
        days=30,
        now=dt.datetime.now(dt.UTC) - dt.timedelta(days=31),
    )
    (cert_dir / pki.KEY_FILE).write_bytes(expired.key)
    (cert_dir / pki.CERT_FILE).write_bytes(expired.cert)
    found: list[str] = []

    def said_expired() -> bool:
        code, lines = _doctor(plane, admin, tmp_path / "expired")
        found[:] = [line for line in lines if line.startswith("fail ca-bundle: mutate.")]
        return code == 1 and bool(found) and "expired" in found[0]

    eventually(said_expired, "doctor naming the expired certificate", limit=60)
    assert "fix: renew the serving certificate" in found[0]
    FIGURES.append(("doctor on an expired certificate", found[0].split(": ", 2)[2]))
    short.component.stop()
    serve_release(plane, admin, RELEASE, NAMESPACE, tmp_path / "again", processes=processes)
    inject_ca_bundle(admin, original, targets)
    _healthy(plane, admin, tmp_path / "near-expiry-undone")


def _selector_selects_nothing(plane: ControlPlane, admin: Any, tmp_path: Path) -> None:
    """A Service selector matching no pod: the controller empties the slice, and
    ``endpoints`` fails naming the selector and how to look."""
    core = client.CoreV1Api(admin)
    selector = dict(core.read_namespaced_service(FULLNAME, NAMESPACE).spec.selector)
    wrong = {"app.kubernetes.io/name": "nothing-at-all"}
    patch = {"spec": {"selector": {**dict.fromkeys(selector), **wrong}}}
    core.patch_namespaced_service(FULLNAME, NAMESPACE, patch)
    eventually(lambda: _ready_endpoints(admin) == 0, "the ready endpoints withdrawn", limit=30)
    code, lines = _doctor(plane, admin, tmp_path / "no-endpoints")
    failed = _line(lines, f"fail endpoints: Service {NAMESPACE}/{FULLNAME} has no ready endpoints")
    assert "selector app.kubernetes.io/name=nothing-at-all" in failed
    assert "fix: make the server's pods Ready" in failed
    assert code == 1
    core.patch_namespaced_service(
        FULLNAME, NAMESPACE, {"spec": {"selector": {**dict.fromkeys(wrong), **selector}}}
    )
    eventually(lambda: _ready_endpoints(admin) == REPLICAS, "the ready endpoints back", limit=30)
    _healthy(plane, admin, tmp_path / "no-endpoints-undone")


def _fail_closed_elsewhere(plane: ControlPlane, admin: Any, tmp_path: Path) -> None:
    """Another configuration failing closed over Node creates and Pods in the release's
    namespace: ``fail-closed-scope`` warns for each (not this installation's to fix).

    Node *creates* and this one namespace only, so nothing running here is refused while
    it exists (the Node is registered, the heartbeats are updates).
    """
    admission = client.AdmissionregistrationV1Api(admin)
    nowhere = {"service": {"name": "nowhere", "namespace": "default", "path": "/"}}
    guard = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "doctor-guard"},
        "webhooks": [
            {
                "name": "nodes.guard.example.com",
                "clientConfig": nowhere,
                "rules": [_rule("nodes")],
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 2,
            },
            {
                "name": "pods.guard.example.com",
                "clientConfig": nowhere,
                "rules": [_rule("pods")],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 2,
            },
        ],
    }
    admission.create_validating_webhook_configuration(guard)
    try:
        code, lines = _doctor(plane, admin, tmp_path / "guard")
    finally:
        admission.delete_validating_webhook_configuration("doctor-guard")
    nodes = _line(lines, "warn fail-closed-scope: ValidatingWebhookConfiguration doctor-guard")
    assert "webhook nodes.guard.example.com fails closed" in nodes
    assert "covers Nodes" in nodes
    assert "fix: not this installation's" in nodes
    own = [line for line in lines if "pods.guard.example.com" in line]
    assert own and f"covers Pods in namespace {NAMESPACE}" in own[0]
    assert code == 3, "\n".join(lines)
    _healthy(plane, admin, tmp_path / "guard-undone")


def _rule(resource: str) -> dict[str, Any]:
    return {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": [resource],
    }


def _edited_configuration(plane: ControlPlane, admin: Any, helm: Helm, tmp_path: Path) -> None:
    """A rule removed by hand: ``configurations`` fails naming the webhook and the field,
    and the fix it names (``helm upgrade``) makes doctor ok again."""
    admission = client.AdmissionregistrationV1Api(admin)
    stored = admission.read_validating_webhook_configuration(FULLNAME)
    rules = stored.webhooks[0].rules
    if len(rules) > 1:
        patch = [{"op": "remove", "path": "/webhooks/0/rules/0"}]
    else:
        assert len(rules[0].resources) > 1, "a rule with a resource to spare"
        patch = [{"op": "remove", "path": "/webhooks/0/rules/0/resources/0"}]
    admission.patch_validating_webhook_configuration(FULLNAME, patch)
    code, lines = _doctor(plane, admin, tmp_path / "edited")
    failed = _line(lines, "fail configurations: ValidatingWebhookConfiguration")
    assert f"webhook validate.{FULLNAME}.svc differs from the render in rules" in failed
    assert "fix: helm upgrade the release with --force-conflicts" in failed
    assert code == 1
    helm.upgrade(RELEASE, NAMESPACE, VALUES, "--force-conflicts")
    _healthy(plane, admin, tmp_path / "edited-undone")

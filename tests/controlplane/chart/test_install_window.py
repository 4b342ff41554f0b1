"""The install window and ``helm test`` with the real ``helm`` on the real control plane.

Pods cannot run here (no kubelet), so Helm installs without hooks and the test plays each
hook's part exactly: it creates the hook's account and role from the same render, mints that
account's token (TokenRequest), and runs the hook container's own arguments with cluster DNS
resolving the chart's Service (a private ``/etc/hosts``). ``serve`` stands in for the pods
behind the Service, with the chart's Secret and config. So what is proved is the chart's
registration, the chart's RBAC and the hook's command, against Helm's own install, upgrade
and rollback.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.charts.render import is_hook, render
from tests.controlplane.chart.served import failure_policies, refusal, serve_release
from tests.controlplane.harness import ControlPlane, create_namespace
from tests.controlplane.harness.apply import apply_objects, delete_objects
from tests.controlplane.harness.helm import Helm
from tests.controlplane.harness.process import Component
from tests.controlplane.harness.servicenet import (
    ServedService,
    service_names,
    token_kubeconfig,
    with_cluster_dns,
)
from tests.waiting import eventually

REPO = Path(__file__).resolve().parents[3]
RELEASE = "iw"
NAMESPACE = "placement-iw"
FULLNAME = "iw-placement-webhooks"


def _hooks(event: str, *, upgrade: bool) -> list[dict[str, Any]]:
    objects = render(None, name=RELEASE, namespace=NAMESPACE, upgrade=upgrade)
    return [
        obj
        for obj in objects
        if is_hook(obj) and event in obj["metadata"]["annotations"]["helm.sh/hook"].split(",")
    ]


def _run_hook(
    plane: ControlPlane, admin: Any, hooks: list[dict[str, Any]], kind: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """Create the hook's account and role, then run its container's arguments as that account."""
    accounts = [o for o in hooks if o["kind"] in {"ServiceAccount", "ClusterRole"}]
    bindings = [o for o in hooks if o["kind"] == "ClusterRoleBinding"]
    apply_objects(admin, [*accounts, *bindings])
    [workload] = [o for o in hooks if o["kind"] == kind]
    pod = workload["spec"]["template"]["spec"] if kind == "Job" else workload["spec"]
    [container] = pod["containers"]
    kubeconfig = token_kubeconfig(
        plane.api, admin, NAMESPACE, pod["serviceAccountName"], tmp_path / f"{kind}.kubeconfig"
    )
    command = [sys.executable, "-m", "webhooks", *container["args"]]
    command += ["--kubeconfig", str(kubeconfig)]
    names = service_names(admin, NAMESPACE, FULLNAME)
    proc = subprocess.run(
        with_cluster_dns(command, names, tmp_path / kind),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    delete_objects(admin, [*bindings, *accounts])
    return proc


def _bundles(admin: Any) -> dict[str, bytes]:
    api = client.AdmissionregistrationV1Api(admin)
    found = {}
    for configuration in (
        api.read_mutating_webhook_configuration(FULLNAME),
        api.read_validating_webhook_configuration(FULLNAME),
    ):
        for hook in configuration.webhooks:
            found[hook.name] = base64.b64decode(hook.client_config.ca_bundle or "")
    return found


def _answered_through_the_api_server(admin: Any, served: ServedService, name: str) -> bool:
    """A ``dryRun=All`` Pod create in a workload namespace reaches ``serve``, dry run marked."""
    if refusal(admin, "iw-apps", name):
        return False
    return any(r.get("name") == name and r.get("endpoint") == "/validate" for r in served.reviews())


def test_install_fails_open_the_hook_command_sets_fail_and_upgrade_and_rollback_keep_the_chain(
    plane: ControlPlane, admin: Any, helm: Helm, tmp_path: Path, processes: list[Component]
) -> None:
    helm.install(RELEASE, NAMESPACE, None, "--create-namespace")
    installed = failure_policies(admin, FULLNAME)
    assert installed == {
        f"mutate.{FULLNAME}.svc": "Ignore",
        f"validate.{FULLNAME}.svc": "Ignore",
    }, "helm install registers every webhook fail-open"
    chain = _bundles(admin)
    assert len(set(chain.values())) == 1 and b"BEGIN CERTIFICATE" in next(iter(chain.values()))

    served = serve_release(plane, admin, RELEASE, NAMESPACE, tmp_path / "pods", processes=processes)
    create_namespace(admin, "iw-apps")

    # The post-install hook: its own account and arguments, run by hand.
    hook = _run_hook(plane, admin, _hooks("post-install", upgrade=False), "Job", tmp_path)
    assert hook.returncode == 0, hook.stderr
    assert f"failurePolicy set validate.{FULLNAME}.svc=Fail" in hook.stdout
    assert failure_policies(admin, FULLNAME) == {
        f"mutate.{FULLNAME}.svc": "Ignore",
        f"validate.{FULLNAME}.svc": "Fail",
    }

    # `helm test` after an upgrade: that revision's test hooks (an account that may only
    # read), then a request through the API server, which the probe does not cover.
    helm.upgrade(RELEASE, NAMESPACE, None)
    assert failure_policies(admin, FULLNAME)[f"validate.{FULLNAME}.svc"] == "Fail"
    assert _bundles(admin) == chain, "helm upgrade keeps the generated chain (lookup)"
    test = _run_hook(plane, admin, _hooks("test", upgrade=True), "Pod", tmp_path)
    assert test.returncode == 0, test.stderr
    assert test.stdout.startswith("ok https://iw-placement-webhooks.placement-iw.svc:443/")
    eventually(
        lambda: _answered_through_the_api_server(admin, served, "through-the-api-server"),
        "a dryRun=All Pod create answered by serve through the chart's registration",
        limit=30,
    )

    # Rollback to the install revision re-applies its fail-open manifest, with the same chain.
    helm.rollback(RELEASE, NAMESPACE, 1)
    assert set(failure_policies(admin, FULLNAME).values()) == {"Ignore"}
    assert _bundles(admin) == chain
    # ...and the documented command closes it again.
    again = _run_hook(plane, admin, _hooks("post-install", upgrade=False), "Job", tmp_path)
    assert again.returncode == 0, again.stderr
    assert failure_policies(admin, FULLNAME)[f"validate.{FULLNAME}.svc"] == "Fail"
    served.component.stop()
    helm.run("uninstall", RELEASE, "--namespace", NAMESPACE)

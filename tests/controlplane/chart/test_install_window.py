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

from pathlib import Path
from typing import Any

from tests.controlplane.chart.served import (
    ca_bundles,
    failure_policies,
    hooks_of,
    refusal,
    run_hook,
    serve_release,
)
from tests.controlplane.harness import ControlPlane, create_namespace
from tests.controlplane.harness.helm import Helm
from tests.controlplane.harness.process import Component
from tests.controlplane.harness.servicenet import (
    ServedService,
)
from tests.waiting import eventually

REPO = Path(__file__).resolve().parents[3]
RELEASE = "iw"
NAMESPACE = "placement-iw"
FULLNAME = "iw-placement-webhooks"


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
    chain = ca_bundles(admin, FULLNAME)
    assert len(set(chain.values())) == 1 and b"BEGIN CERTIFICATE" in next(iter(chain.values()))

    served = serve_release(plane, admin, RELEASE, NAMESPACE, tmp_path / "pods", processes=processes)
    create_namespace(admin, "iw-apps")

    # The post-install hook: its own account and arguments, run by hand.
    hook = run_hook(
        plane,
        admin,
        hooks_of("post-install", None, RELEASE, NAMESPACE, upgrade=False),
        "Job",
        NAMESPACE,
        tmp_path,
    )
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
    assert ca_bundles(admin, FULLNAME) == chain, "helm upgrade keeps the generated chain (lookup)"
    test = run_hook(
        plane,
        admin,
        hooks_of("test", None, RELEASE, NAMESPACE, upgrade=True),
        "Pod",
        NAMESPACE,
        tmp_path,
    )
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
    assert ca_bundles(admin, FULLNAME) == chain
    # ...and the documented command closes it again.
    again = run_hook(
        plane,
        admin,
        hooks_of("post-install", None, RELEASE, NAMESPACE, upgrade=False),
        "Job",
        NAMESPACE,
        tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert failure_policies(admin, FULLNAME)[f"validate.{FULLNAME}.svc"] == "Fail"
    served.component.stop()
    helm.run("uninstall", RELEASE, "--namespace", NAMESPACE)

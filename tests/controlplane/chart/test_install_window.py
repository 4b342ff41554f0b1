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

import pytest

from controlplane.harness import ControlPlane, create_namespace
from controlplane.harness.helm import Helm
from controlplane.harness.process import Component
from controlplane.harness.servicenet import (
    ServedService,
)
from tests.controlplane.chart.served import (
    ca_bundles,
    failure_policies,
    fullname_of,
    hooks_of,
    refusal,
    run_hook,
    serve_release,
)
from tests.waiting import eventually

REPO = Path(__file__).resolve().parents[3]


def _answered_through_the_api_server(
    admin: Any, served: ServedService, apps: str, name: str
) -> bool:
    """A ``dryRun=All`` Pod create in a workload namespace reaches ``serve``."""
    if refusal(admin, apps, name):
        return False
    return any(r.get("name") == name and r.get("endpoint") == "/validate" for r in served.reviews())


@pytest.mark.parametrize(
    ("values", "release"),
    [
        pytest.param(None, "iw", id="the default chart (tls.mode auto: managed)"),
        pytest.param({"tls": {"mode": "generate"}}, "iwg", id="tls.mode generate"),
    ],
)
def test_install_fails_open_the_hook_command_sets_fail_and_upgrade_and_rollback_keep_the_chain(
    plane: ControlPlane,
    admin: Any,
    helm: Helm,
    tmp_path: Path,
    processes: list[Component],
    values: dict[str, Any] | None,
    release: str,
) -> None:
    namespace, fullname = f"placement-{release}", fullname_of(release)
    helm.install(release, namespace, values, "--create-namespace")
    try:
        _install_window(plane, admin, helm, tmp_path, processes, values, release)
    finally:
        helm.run("uninstall", release, "--namespace", namespace, check=False)
    assert not failure_policies(admin, fullname), "uninstall removes both configurations"


def _install_window(
    plane: ControlPlane,
    admin: Any,
    helm: Helm,
    tmp_path: Path,
    processes: list[Component],
    values: dict[str, Any] | None,
    release: str,
) -> None:
    namespace, apps, fullname = f"placement-{release}", f"{release}-apps", fullname_of(release)
    installed = failure_policies(admin, fullname)
    assert installed == {
        f"mutate.{fullname}.svc": "Ignore",
        f"validate.{fullname}.svc": "Ignore",
    }, "helm install registers every webhook fail-open"

    # The pods: with generate the chain came with the render; managed pods publish theirs.
    served = serve_release(plane, admin, release, namespace, tmp_path / "pods", processes=processes)
    chain = ca_bundles(admin, fullname)
    assert len(set(chain.values())) == 1 and b"BEGIN CERTIFICATE" in next(iter(chain.values()))
    create_namespace(admin, apps)

    # The post-install hook: its own account and arguments, run by hand.
    install_hooks = hooks_of("post-install", values, release, namespace, upgrade=False)
    hook = run_hook(plane, admin, install_hooks, "Job", namespace, tmp_path)
    assert hook.returncode == 0, hook.stderr
    assert f"failurePolicy set validate.{fullname}.svc=Fail" in hook.stdout
    assert failure_policies(admin, fullname) == {
        f"mutate.{fullname}.svc": "Ignore",
        f"validate.{fullname}.svc": "Fail",
    }

    # `helm test` after an upgrade: that revision's test hooks (an account that may only
    # read), then a request through the API server, which the probe does not cover.
    helm.upgrade(release, namespace, values)
    assert failure_policies(admin, fullname)[f"validate.{fullname}.svc"] == "Fail"
    assert ca_bundles(admin, fullname) == chain, "helm upgrade keeps the chain"
    test_hooks = hooks_of("test", values, release, namespace, upgrade=True)
    test = run_hook(plane, admin, test_hooks, "Pod", namespace, tmp_path)
    assert test.returncode == 0, test.stderr
    assert test.stdout.startswith(f"ok https://{fullname}.{namespace}.svc:443/")
    eventually(
        lambda: _answered_through_the_api_server(admin, served, apps, "through-the-api-server"),
        "a dryRun=All Pod create answered by serve through the chart's registration",
        limit=30,
    )

    # Rollback to the install revision re-applies its fail-open manifest, with the same chain.
    helm.rollback(release, namespace, 1)
    assert set(failure_policies(admin, fullname).values()) == {"Ignore"}
    assert ca_bundles(admin, fullname) == chain
    # ...and the documented command closes it again.
    again = run_hook(plane, admin, install_hooks, "Job", namespace, tmp_path)
    assert again.returncode == 0, again.stderr
    assert failure_policies(admin, fullname)[f"validate.{fullname}.svc"] == "Fail"

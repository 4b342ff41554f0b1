"""``tls.mode: managed`` with the real ``helm`` on the real control plane.

``certs manage`` runs with the arguments of the chart's own sidecar and a token of the
chart's own ServiceAccount (TokenRequest), so it can do exactly what the chart's Role and
ClusterRole grant; ``serve`` uses the files it writes, behind the chart's Service. Proved:
the pods fill the empty Secret and inject the caBundle by server-side apply over the
Helm-owned configurations; upgrade and rollback keep both; two replicas starting at once
agree on one CA; the switch from ``generate`` has a window of failed calls, which is why an
existing ``generate`` release keeps ``generate`` by default.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane.harness import ControlPlane, create_namespace
from controlplane.harness.helm import Helm
from controlplane.harness.process import Component
from controlplane.harness.servicenet import token_kubeconfig
from tests.controlplane.chart.conftest import FIGURES
from tests.controlplane.chart.served import (
    ca_bundles,
    failure_policies,
    fullname_of,
    hooks_of,
    refusal,
    rendered,
    run_hook,
    serve_release,
)
from tests.waiting import eventually

REPO = Path(__file__).resolve().parents[3]
MANAGED = {"tls": {"mode": "managed"}}
HELM_OWNERSHIP = ("meta.helm.sh/release-name", "meta.helm.sh/release-namespace")


def _sidecar_args(values: dict[str, Any] | None, release: str, namespace: str) -> list[str]:
    [deployment] = [o for o in rendered(values, release, namespace) if o["kind"] == "Deployment"]
    [sidecar] = deployment["spec"]["template"]["spec"]["initContainers"]
    assert sidecar["restartPolicy"] == "Always", "a native sidecar"
    return list(sidecar["args"])


def _manage(
    plane: ControlPlane,
    admin: Any,
    release: str,
    namespace: str,
    cert_dir: Path,
    *,
    values: dict[str, Any] | None = MANAGED,
) -> list[str]:
    """The sidecar's command, once, as the chart's ServiceAccount; what it may run."""
    args = _sidecar_args(values, release, namespace)
    args[args.index("--cert-dir") + 1] = str(cert_dir)
    kubeconfig = token_kubeconfig(
        plane.api, admin, namespace, fullname_of(release), cert_dir.parent / "sa.kubeconfig"
    )
    return [sys.executable, "-m", "webhooks", *args, "--once", "--kubeconfig", str(kubeconfig)]


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )


def _secret(admin: Any, namespace: str, name: str) -> Any:
    return client.CoreV1Api(admin).read_namespaced_secret(name, namespace)


def _owner_of_ca_bundle(admin: Any, name: str) -> set[str]:
    configuration = client.AdmissionregistrationV1Api(admin).read_validating_webhook_configuration(
        name
    )
    return {
        entry.manager
        for entry in configuration.metadata.managed_fields
        if "caBundle" in str(entry.fields_v1)
    }


def test_managed_certificates_survive_helm_upgrade_and_rollback(
    plane: ControlPlane, admin: Any, helm: Helm, tmp_path: Path, processes: list[Component]
) -> None:
    release, namespace = "mg", "placement-mg"
    fullname = fullname_of(release)
    secret_name = f"{fullname}-certs"
    helm.install(release, namespace, MANAGED, "--create-namespace")
    assert not (_secret(admin, namespace, secret_name).data or {}), "rendered empty"
    assert set(ca_bundles(admin, fullname).values()) == {b""}, "no caBundle in the render"

    # The sidecar, as the chart's ServiceAccount: fills the Secret, the files, the caBundle.
    first = _run(_manage(plane, admin, release, namespace, tmp_path / "pod-a" / "tls"))
    assert first.returncode == 0, first.stderr
    secret = _secret(admin, namespace, secret_name)
    bundle = base64.b64decode(secret.data["ca.crt"])
    assert set(ca_bundles(admin, fullname).values()) == {bundle}
    assert (tmp_path / "pod-a" / "tls" / "ca.crt").read_bytes() == bundle
    assert "placement-webhooks" in _owner_of_ca_bundle(admin, fullname)
    for key in HELM_OWNERSHIP:
        assert key in (secret.metadata.annotations or {}), f"the Secret kept {key}"

    # Its account reaches nothing else: not another Secret in the namespace.
    sa = token_kubeconfig(plane.api, admin, namespace, fullname, tmp_path / "other.kubeconfig")
    with client.ApiClient(_config(sa)) as as_pod:
        with pytest.raises(ApiException) as denied:
            client.CoreV1Api(as_pod).read_namespaced_secret("default-token", namespace)
        assert denied.value.status == 403

    served = serve_release(
        plane, admin, release, namespace, tmp_path / "pods",
        cert_dir=tmp_path / "pod-a" / "tls", processes=processes,
    )  # fmt: skip
    hook = run_hook(
        plane,
        admin,
        hooks_of("post-install", MANAGED, release, namespace, upgrade=False),
        "Job",
        namespace,
        tmp_path,
    )
    assert hook.returncode == 0, hook.stderr
    create_namespace(admin, "mg-apps")
    eventually(
        lambda: (
            refusal(admin, "mg-apps", "answered") == ""
            and any(r.get("namespace") == "mg-apps" for r in served.reviews())
        ),
        "a Pod create answered through the managed chain",
        limit=30,
    )
    data = secret.data

    for step, act in (
        ("upgrade", lambda: helm.upgrade(release, namespace, {**MANAGED, "replicaCount": 3})),
        ("rollback", lambda: helm.rollback(release, namespace, 1)),
    ):
        act()
        kept = _secret(admin, namespace, secret_name)
        assert kept.data == data, f"helm {step} kept the Secret's data"
        assert set(ca_bundles(admin, fullname).values()) == {bundle}, f"{step} kept the bundle"
        again = _run(_manage(plane, admin, release, namespace, tmp_path / "pod-a" / "tls"))
        assert again.returncode == 0, again.stderr
        assert again.stdout == "", f"after {step} the sidecar had nothing to repair"
    assert refusal(admin, "mg-apps", "after-rollback") == ""


def _config(kubeconfig: Path) -> Any:
    from kubernetes import config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return configuration


def test_two_sidecars_starting_at_once_agree_on_one_ca(
    plane: ControlPlane, admin: Any, helm: Helm, tmp_path: Path
) -> None:
    release, namespace = "race", "placement-race"
    fullname = fullname_of(release)
    helm.install(release, namespace, MANAGED, "--create-namespace")
    core = client.CoreV1Api(admin)
    for round_ in range(4):
        # An empty Secret again, as a fresh install (or `helm upgrade --force`) leaves it.
        secret = core.read_namespaced_secret(f"{fullname}-certs", namespace)
        secret.data = None
        core.replace_namespaced_secret(f"{fullname}-certs", namespace, secret)
        commands = [
            _manage(plane, admin, release, namespace, tmp_path / f"{round_}-{pod}" / "tls")
            for pod in ("a", "b")
        ]
        pipe = subprocess.PIPE
        started = [
            subprocess.Popen(c, cwd=REPO, stdout=pipe, stderr=pipe, text=True) for c in commands
        ]
        outcomes = [(p.wait(timeout=120), *p.communicate()) for p in started]
        assert all(code == 0 for code, _, _ in outcomes), outcomes
        stored = base64.b64decode(
            core.read_namespaced_secret(f"{fullname}-certs", namespace).data["ca.crt"]
        )
        for pod in ("a", "b"):
            assert (tmp_path / f"{round_}-{pod}" / "tls" / "ca.crt").read_bytes() == stored
        assert set(ca_bundles(admin, fullname).values()) == {stored}
        created = sum("Secret: " in out for _, out, _ in outcomes)
        FIGURES.append((f"two sidecars at once, round {round_}", f"{created} wrote a new CA"))


def test_switching_a_generate_release_to_managed_fails_calls_until_every_pod_serves_the_new_ca(
    plane: ControlPlane, admin: Any, helm: Helm, tmp_path: Path, processes: list[Component]
) -> None:
    release, namespace = "sw", "placement-sw"
    fullname = fullname_of(release)
    generate = {"tls": {"mode": "generate"}}
    helm.install(release, namespace, generate, "--create-namespace")
    old = serve_release(plane, admin, release, namespace, tmp_path / "old", processes=processes)
    hook = run_hook(
        plane,
        admin,
        hooks_of("post-install", generate, release, namespace, upgrade=False),
        "Job",
        namespace,
        tmp_path,
    )
    assert hook.returncode == 0, hook.stderr
    create_namespace(admin, "sw-apps")
    assert failure_policies(admin, fullname)[f"validate.{fullname}.svc"] == "Fail"
    eventually(lambda: refusal(admin, "sw-apps", "before") == "", "answered before the switch")

    helm.upgrade(release, namespace, MANAGED)
    # Helm removed the caBundle it owned and the generated Secret; the old pods still serve.
    assert set(ca_bundles(admin, fullname).values()) == {b""}
    assert "failed calling webhook" in refusal(admin, "sw-apps", "no-bundle")
    # The first new pod publishes its CA: the old pods' certificate no longer chains to it.
    assert _run(_manage(plane, admin, release, namespace, tmp_path / "new" / "tls")).returncode == 0
    message = eventually(lambda: refusal(admin, "sw-apps", "old-pods"), "refused by old pods")
    assert "x509" in message or "certificate" in message
    # Once no old pod answers, calls succeed again.
    old.component.stop()
    serve_release(
        plane, admin, release, namespace, tmp_path / "newpods",
        cert_dir=tmp_path / "new" / "tls", processes=processes,
    )  # fmt: skip
    eventually(lambda: refusal(admin, "sw-apps", "after") == "", "answered after the switch")
    FIGURES.append(
        (
            "generate -> managed on one upgrade",
            "fail-closed calls refused from the upgrade until the last old pod is gone",
        )
    )


def test_the_default_is_managed_for_installs_and_keeps_an_existing_generate_release(
    plane: ControlPlane, admin: Any, helm: Helm
) -> None:
    # Issue 21's done-when, with Helm itself: two template runs of the default install.
    assert helm.template("tpl", "placement-tpl", None) == helm.template(
        "tpl", "placement-tpl", None
    )

    # A release installed on generate (the previous default) keeps it through a default
    # upgrade: same Secret, same caBundle, no sidecar; no switch window.
    old, old_ns = "keep", "placement-keep"
    helm.install(old, old_ns, {"tls": {"mode": "generate"}}, "--create-namespace")
    chain = ca_bundles(admin, fullname_of(old))
    helm.upgrade(old, old_ns, None)
    assert ca_bundles(admin, fullname_of(old)) == chain
    deployment = client.AppsV1Api(admin).read_namespaced_deployment(fullname_of(old), old_ns)
    assert not deployment.spec.template.spec.init_containers
    # (Its validating webhook now fails closed with nothing serving: it must go first.)
    helm.run("uninstall", old, "--namespace", old_ns)

    # A new install with the defaults is managed: the empty Secret, the sidecar, no bundle.
    new, new_ns = "fresh", "placement-fresh"
    helm.install(new, new_ns, None, "--create-namespace")
    assert set(ca_bundles(admin, fullname_of(new)).values()) == {b""}
    fresh = client.AppsV1Api(admin).read_namespaced_deployment(fullname_of(new), new_ns)
    assert [c.name for c in fresh.spec.template.spec.init_containers] == ["certs"]
    assert _secret(admin, new_ns, f"{fullname_of(new)}-certs").data is None
    # ...and stays managed on a default upgrade (no generate Secret to find).
    helm.upgrade(new, new_ns, None)
    upgraded = client.AppsV1Api(admin).read_namespaced_deployment(fullname_of(new), new_ns)
    assert [c.name for c in upgraded.spec.template.spec.init_containers] == ["certs"]

"""tls.mode managed: the render holds no certificate (stable for GitOps), the pods' sidecar
fills an empty Secret and the caBundle, with access to exactly those objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.charts.render import (
    NAMESPACE,
    RELEASE,
    chart_finding,
    is_hook,
    of_kind,
    one,
    released,
    render,
)
from webhooks.cli.certs import certs as certs_command
from webhooks.cli.serve import serve

MANAGED = {"tls": {"mode": "managed"}}
MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"


def configurations(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in (MUTATING, VALIDATING)]


def granted(role: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {
        (group, resource, name, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for name in rule.get("resourceNames", ["*"])
        for verb in rule["verbs"]
    }


def test_two_template_runs_render_identical_objects() -> None:
    # The GitOps point: nothing in a managed render is generated, so re-rendering changes nothing.
    assert render(MANAGED) == render(MANAGED)
    assert configurations(render(MANAGED, upgrade=True)) == configurations(
        render(MANAGED, upgrade=True)
    )


def test_two_template_runs_of_the_default_install_render_identical_configurations() -> None:
    # Issue 21's done-when. The default, tls.mode auto, is managed for an install and for
    # every offline render (no Secret can be looked up), so nothing in it is generated.
    assert configurations(render()) == configurations(render())
    assert render() == render()
    assert render(upgrade=True) == render(upgrade=True)


def test_generate_is_still_not_render_stable_and_says_so() -> None:
    # Why auto is managed whenever it can be: docs/operations.md ("TLS modes").
    generate = {"tls": {"mode": "generate"}}
    assert configurations(render(generate)) != configurations(render(generate))


def test_the_default_install_is_managed() -> None:
    assert render() == render(MANAGED)


def test_no_ca_bundle_and_an_empty_secret_are_rendered() -> None:
    objects = render(MANAGED)
    for config in configurations(objects):
        assert all("caBundle" not in hook["clientConfig"] for hook in config["webhooks"])
        assert "cert-manager.io/inject-ca-from" not in config["metadata"]["annotations"]
    secret = one(objects, "Secret")
    assert secret["metadata"]["name"] == f"{RELEASE}-certs"
    assert secret["type"] == "Opaque"
    assert "data" not in secret and "stringData" not in secret


def test_the_sidecar_fills_the_cert_dir_the_server_reads_before_it_starts() -> None:
    pod = one(render(MANAGED), "Deployment")["spec"]["template"]["spec"]
    [sidecar] = pod["initContainers"]
    [server] = pod["containers"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["startupProbe"]["exec"]["command"] == [
        "placement-webhooks",
        "certs",
        "inspect",
        "/etc/placement-webhooks/tls",
    ]
    group, command, *args = sidecar["args"]
    assert (group, command) == ("certs", "manage")
    manage = certs_command.commands["manage"].make_context("manage", list(args))
    assert manage.params["secret"] == f"{RELEASE}-certs"
    assert manage.params["namespace"] == NAMESPACE
    assert manage.params["service"] == RELEASE
    assert manage.params["webhook_configuration"] == RELEASE
    assert (manage.params["days"], manage.params["renew_days"]) == (90, 30)
    serve_args = serve.make_context("serve", list(server["args"][1:])).params
    assert manage.params["cert_dir"] == serve_args["cert_dir"]
    volume = next(v for v in pod["volumes"] if v["name"] == "tls")
    assert volume == {"name": "tls", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}
    mounts = {m["name"]: m for m in server["volumeMounts"]}
    assert mounts["tls"]["readOnly"] is True
    assert sidecar["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_pods_may_touch_exactly_their_secret_and_their_two_configurations() -> None:
    objects = released(render(MANAGED))
    role = one(objects, "Role")
    assert granted(role) == {
        ("", "secrets", f"{RELEASE}-certs", "get"),
        ("", "secrets", f"{RELEASE}-certs", "update"),
    }
    binding = one(objects, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == RELEASE
    cluster = granted(one(objects, "ClusterRole"))
    writes = {g for g in cluster if g[0] == "admissionregistration.k8s.io"}
    assert writes == {
        ("admissionregistration.k8s.io", resource, RELEASE, verb)
        for resource in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
        for verb in ("get", "patch")
    }


def test_other_modes_grant_no_secret_or_configuration_access() -> None:
    objects = released(render({"tls": {"mode": "generate"}}))
    assert of_kind(objects, "Role") == []
    cluster = granted(one(objects, "ClusterRole"))
    assert not {g for g in cluster if g[0] == "admissionregistration.k8s.io"}


def test_the_install_hook_waits_for_the_pods_to_publish_the_ca_bundle() -> None:
    job = one([o for o in render(MANAGED) if is_hook(o)], "Job")
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--wait") + 1] == "240"


# The auto default offline: its one lookup answered from a file, as a live cluster would.
AUTO_LOOKUP = (
    'lookup "v1" "Secret" .Release.Namespace '
    '(printf "%s-tls" (include "placement-webhooks.fullname" .))'
)


def _chart_finding_a_generate_secret(tmp_path: Path) -> Path:
    import base64

    pem = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()
    secret = {"apiVersion": "v1", "kind": "Secret", "data": {"ca.crt": pem}}
    return chart_finding(tmp_path, "_helpers.tpl", AUTO_LOOKUP, secret)


@pytest.mark.parametrize(
    ("upgrade", "mode"),
    [
        pytest.param(True, "generate", id="an upgrade of a release on generate stays on it"),
        pytest.param(False, "managed", id="an install is managed whatever it finds"),
    ],
)
def test_auto_keeps_a_generate_release_on_generate(
    tmp_path: Path, upgrade: bool, mode: str
) -> None:
    chart = _chart_finding_a_generate_secret(tmp_path)
    objects = render(None, chart_dir=chart, upgrade=upgrade)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    secret_names = {s["metadata"]["name"] for s in of_kind(released(objects), "Secret")}
    if mode == "generate":
        assert "initContainers" not in pod
        assert secret_names == {f"{RELEASE}-tls"}
    else:
        assert [c["name"] for c in pod["initContainers"]] == ["certs"]
        assert secret_names == {f"{RELEASE}-certs"}


def test_auto_without_a_generate_secret_upgrades_as_managed() -> None:
    assert render(None, upgrade=True) == render(MANAGED, upgrade=True)

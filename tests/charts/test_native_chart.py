"""The chart's ``native.enabled``: the packaged native policies are current, installed with the
release's names, the webhooks narrowed to exactly what ``webhook-config --native`` keeps, and
the server told so (``serve --native``)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.charts import native
from tests.charts.render import NAMESPACE, RELEASE, notes, of_kind, render
from webhooks.cli import main
from webhooks.core.config import load_config
from webhooks.export import export
from webhooks.k8s.releases import RELEASES, release
from webhooks.plugins import REGISTRY

ON = {"native": {"enabled": True}}
POLICY_KINDS = (
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
)


def _policies(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in POLICY_KINDS]


def _hooks(objects: list[dict[str, Any]]) -> dict[str, str]:
    return {
        w["name"]: w["clientConfig"]["service"]["path"]
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for o in of_kind(objects, kind)
        for w in o["webhooks"]
    }


def test_the_packaged_native_files_are_what_export_makes_of_the_default_values() -> None:
    for path, text in native.generate().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: make chart-native"


def test_by_default_the_chart_installs_no_native_policy() -> None:
    assert _policies(render()) == []


def test_native_enabled_installs_the_exported_policies_under_the_release_s_names() -> None:
    objects = _policies(render(ON))
    assert objects
    text = yaml.safe_dump_all(objects)
    assert native.FULLNAME not in text and native.NAMESPACE not in text
    assert {o["metadata"]["name"].split("-runtime-class")[0] for o in objects} >= {RELEASE}
    mutating = next(o for o in objects if o["metadata"]["name"] == RELEASE)
    selector = mutating["spec"]["matchConstraints"]["namespaceSelector"]
    assert selector["matchExpressions"][0]["values"][0] == NAMESPACE


def test_native_enabled_creates_no_webhook_for_an_exported_half() -> None:
    """The default install keeps one webhook, /validate, where the server started with
    --native runs runtime-class's refusal of a missing class alone."""
    objects = render(ON)
    assert _hooks(objects) == {f"validate.{RELEASE}.svc": "/validate"}
    [hook] = of_kind(objects, "ValidatingWebhookConfiguration")[0]["webhooks"]
    assert hook["rules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["pods"],
        }
    ]


def _serve_args(objects: list[dict[str, Any]]) -> list[str]:
    [deployment] = of_kind(objects, "Deployment")
    [server] = [
        c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "webhooks"
    ]
    return list(server["args"])


@pytest.mark.parametrize(
    ("values", "native_flag"),
    [
        pytest.param(None, False, id="by default the server runs every enabled half"),
        pytest.param(ON, True, id="native.enabled starts the server with --native"),
    ],
)
def test_the_server_is_told_what_the_webhooks_were_registered_for(
    values: dict[str, Any] | None, native_flag: bool
) -> None:
    args = _serve_args(render(values))
    assert args[0] == "serve"
    assert ("--native" in args) is native_flag


def test_the_chart_s_webhooks_are_webhook_config_native_s() -> None:
    result = CliRunner().invoke(
        main,
        [
            "webhook-config",
            "--native",
            "--name",
            RELEASE,
            "--namespace",
            NAMESPACE,
            "--service",
            RELEASE,
        ],
    )
    assert result.exit_code == 0, result.output
    printed = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert _hooks(printed) == _hooks(render(ON))


@pytest.mark.parametrize(
    ("values", "refused"),
    [
        pytest.param(
            {"plugins": {"dedicated-nodes": {"enabled": True}}},
            "made for the chart's default plugins",
            id="another plugin set",
        ),
        pytest.param(
            {"exceptions": [{"name": "x", "plugins": ["*"], "namespaces": ["a"]}]},
            "made for the chart's default exceptions",
            id="an exception",
        ),
        pytest.param(
            {"webhooks": {"excludeNamespaces": ["kube-system"]}},
            "default webhooks.excludeNamespaces",
            id="other excluded namespaces",
        ),
        pytest.param(
            {"webhooks": {"perPlugin": True}},
            "native.enabled with webhooks.perPlugin",
            id="a webhook per plugin, which would not run the kept halves as one chain",
        ),
    ],
)
def test_values_the_packaged_policies_do_not_fit_are_refused(
    values: dict[str, Any], refused: str
) -> None:
    with pytest.raises(Exception, match=refused):
        render({**ON, **values})


# --------------------------------------------------------------------------- per release


def _api_versions(objects: list[dict[str, Any]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for obj in _policies(objects):
        found.setdefault(obj["kind"], set()).add(obj["apiVersion"])
    return found


def test_the_releases_template_is_made_from_the_table_of_releases() -> None:
    text = native.RELEASES_TPL.read_text(encoding="utf-8")
    assert text == native.releases_template(), "_releases.tpl is stale: make chart-native"
    for row in RELEASES:
        assert f'name: "{row.name}"\nmutatingPolicyApi: {row.mutating_policy_api}\n' in text


@pytest.mark.parametrize(
    ("kube_version", "mutating", "webhook"),
    [
        pytest.param(
            "1.34.0",
            "admissionregistration.k8s.io/v1beta1",
            {f"mutate.{RELEASE}.svc": "/mutate", f"validate.{RELEASE}.svc": "/validate"},
            id="1.34: v1beta1, and the webhook keeps the mutations its CEL cannot express",
        ),
        pytest.param(
            "v1.35.4-eks-4a5b6c",
            "admissionregistration.k8s.io/v1beta1",
            {f"validate.{RELEASE}.svc": "/validate"},
            id="1.35 (a vendor's version): v1beta1",
        ),
        pytest.param(
            "1.36.0",
            "admissionregistration.k8s.io/v1",
            {f"validate.{RELEASE}.svc": "/validate"},
            id="1.36: v1",
        ),
        pytest.param(
            "1.37.2",
            "admissionregistration.k8s.io/v1",
            {f"validate.{RELEASE}.svc": "/validate"},
            id="1.37: v1",
        ),
        pytest.param(
            "1.40.0",
            "admissionregistration.k8s.io/v1",
            {f"validate.{RELEASE}.svc": "/validate"},
            id="a release newer than the table: the newest's",
        ),
    ],
)
def test_native_enabled_installs_what_export_makes_for_the_cluster_s_release(
    kube_version: str, mutating: str, webhook: dict[str, str]
) -> None:
    objects = render(ON, kube_version=kube_version)
    found = _api_versions(objects)
    assert found["MutatingAdmissionPolicy"] == {mutating}
    assert found["MutatingAdmissionPolicyBinding"] == {mutating}
    assert _hooks(objects) == webhook
    name = release(kube_version).name
    args = _serve_args(objects)
    assert args[args.index("--kubernetes-version") + 1] == name
    kept = export_for_chart(name).webhook
    assert {phase for _, phase in kept} == {path.lstrip("/") for path in webhook.values()}


def export_for_chart(name: str) -> Any:
    """``export --hybrid --kubernetes-version name`` of the chart's default values."""
    values = native.values_file()
    document = {"plugins": values["plugins"], "exceptions": values.get("exceptions") or []}
    return export(load_config(document, REGISTRY), REGISTRY, hybrid=True, release=release(name))


def test_native_enabled_on_a_release_below_the_oldest_fails_naming_the_supported_ones() -> None:
    with pytest.raises(Exception, match=r"oldest supported release is 1\.34 \(supported: 1\.34"):
        render(ON, kube_version="1.33.5")


def test_below_the_oldest_release_the_chart_without_native_policies_still_renders() -> None:
    assert render(kube_version="1.33.5")


@pytest.mark.parametrize(
    ("kube_version", "gate"),
    [
        pytest.param("1.34.0", True, id="on 1.34 the notes say the gate is needed"),
        pytest.param("1.35.0", True, id="on 1.35 too"),
        pytest.param("1.36.0", False, id="on 1.36 no gate"),
    ],
)
def test_the_notes_say_when_the_cluster_needs_the_gate(kube_version: str, gate: bool) -> None:
    text = notes(ON, kube_version=kube_version)
    assert ("--feature-gates=MutatingAdmissionPolicy=true" in text) is gate
    assert f"made for Kubernetes {release(kube_version).name}" in text

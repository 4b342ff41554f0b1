"""Static admission manifests (KEP-5793): names, layout, flags per release, what cannot go.

The rules mirrored are the API server's, read in ``k8s.io/apiserver@v0.37.2``
(``pkg/admission/plugin/manifest/validation.go``, ``.../policy/manifest/loader/loader.go``);
``tests/controlplane/test_static_manifests.py`` proves the output on the real server.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from tests.command import invoke_cli
from webhooks.cli.staticdir import STATIC_MARK, render_static
from webhooks.core.config import Config, load_config
from webhooks.export import NOT_EXPORTED, export
from webhooks.export.static import (
    ADMISSION_CONFIGURATION,
    PARAMS_WHY,
    POLICY_PLUGINS,
    SUFFIX,
    WEBHOOK_PLUGINS,
    StaticUnsupported,
    static_manifests,
    static_name,
)
from webhooks.install.webhookconfig import WebhookSettings, configurations, plugin_table
from webhooks.k8s.releases import NEWEST, RELEASES, STATIC_ADMISSION, release
from webhooks.plugins import REGISTRY

DIRECTORY = "/etc/kubernetes/placement-webhooks"


def _config(text: str = "") -> Config:
    return load_config(yaml.safe_load(text) if text else None, REGISTRY)


def _objects(config: Config | None = None) -> list[dict[str, Any]]:
    return list(export(config or _config(), REGISTRY, static=True).objects)


def _all(files: Any) -> list[dict[str, Any]]:
    return [obj for file in files for obj in file.objects]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("placement-webhooks", "placement-webhooks.static.k8s.io", id="gains it"),
        pytest.param("a.static.k8s.io", "a.static.k8s.io", id="is not doubled"),
        pytest.param("a.static", "a.static.static.k8s.io", id="a near miss still gains it"),
    ],
)
def test_every_static_name_ends_in_the_reserved_suffix(name: str, expected: str) -> None:
    assert static_name(name) == expected


def test_every_object_and_every_binding_s_policy_has_the_suffix() -> None:
    manifests = static_manifests(_objects(), NEWEST, DIRECTORY)
    objects = _all(manifests.files[1:])
    assert objects and all(o["metadata"]["name"].endswith(SUFFIX) for o in objects)
    policies = {o["metadata"]["name"] for o in objects if "policyName" not in o["spec"]}
    bindings = [o["spec"]["policyName"] for o in objects if "policyName" in o["spec"]]
    assert bindings and set(bindings) <= policies


def test_each_policy_has_a_file_of_its_own_with_its_binding_in_its_plugin_s_directory() -> None:
    manifests = static_manifests(_objects(), NEWEST, DIRECTORY)
    assert manifests.owned == ("mutating-policies", "validating-policies")
    for file in manifests.files[1:]:
        directory, _, name = file.path.partition("/")
        kinds = [o["kind"] for o in file.objects]
        expected = "mutating" if kinds[0].startswith("Mutating") else "validating"
        assert directory == f"{expected}-policies"
        assert name == f"{file.objects[0]['metadata']['name']}.yaml"
        assert kinds == [kinds[0], f"{kinds[0]}Binding"]


def test_the_admission_configuration_names_each_plugin_s_directory_absolutely() -> None:
    manifests = static_manifests(_objects(), NEWEST, DIRECTORY)
    first = manifests.files[0]
    assert first.path == ADMISSION_CONFIGURATION
    (configuration,) = first.objects
    assert configuration["kind"] == "AdmissionConfiguration"
    found = [
        (p["name"], p["configuration"]["kind"], p["configuration"]["staticManifestsDir"])
        for p in configuration["plugins"]
    ]
    assert found == [
        (
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyConfiguration",
            f"{DIRECTORY}/mutating-policies",
        ),
        (
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyConfiguration",
            f"{DIRECTORY}/validating-policies",
        ),
        (
            "MutatingAdmissionWebhook",
            "WebhookAdmissionConfiguration",
            f"{DIRECTORY}/mutating-webhooks",
        ),
        (
            "ValidatingAdmissionWebhook",
            "WebhookAdmissionConfiguration",
            f"{DIRECTORY}/validating-webhooks",
        ),
    ]
    assert manifests.directories == tuple(d.rsplit("/", 1)[1] for _, _, d in found)
    webhook = configuration["plugins"][2]["configuration"]
    assert webhook["kubeConfigFile"] == ""


def _webhooks(**client: Any) -> list[dict[str, Any]]:
    settings = WebhookSettings(**client)
    return configurations(settings, plugin_table(REGISTRY), [p.name for p in REGISTRY])


def test_webhook_configurations_called_by_url_go_to_the_webhook_directories() -> None:
    objects = _webhooks(url="https://10.0.0.1:8443")
    manifests = static_manifests(objects, NEWEST, DIRECTORY, WEBHOOK_PLUGINS)
    assert manifests.owned == ("mutating-webhooks", "validating-webhooks")
    assert [f.path for f in manifests.files[1:]] == [
        "mutating-webhooks/placement-webhooks.static.k8s.io.yaml",
        "validating-webhooks/placement-webhooks.static.k8s.io.yaml",
    ]
    urls = [w["clientConfig"]["url"] for f in manifests.files[1:] for w in f.objects[0]["webhooks"]]
    assert urls and all(u.startswith("https://10.0.0.1:8443/") for u in urls)


@pytest.mark.parametrize(
    ("objects", "owns", "message"),
    [
        pytest.param(
            _webhooks,
            WEBHOOK_PLUGINS,
            "must be called by URL",
            id="a webhook called through a Service",
        ),
        pytest.param(
            lambda: [{**_objects()[0], "apiVersion": "admissionregistration.k8s.io/v1beta1"}],
            POLICY_PLUGINS,
            "only v1 is loaded",
            id="a v1beta1 policy",
        ),
        pytest.param(
            lambda: list(export(_config(), REGISTRY).objects),
            POLICY_PLUGINS,
            "can have no params",
            id="a policy with a param",
        ),
    ],
)
def test_what_the_loaders_refuse_is_refused_here(objects: Any, owns: Any, message: str) -> None:
    with pytest.raises(StaticUnsupported, match=message):
        static_manifests(objects(), NEWEST, DIRECTORY, owns)


@pytest.mark.parametrize(
    ("version", "flags"),
    [
        pytest.param(
            "1.37",
            [f"--admission-control-config-file={DIRECTORY}/{ADMISSION_CONFIGURATION}"],
            id="1.37 loads them by default: only the configuration file",
        ),
        pytest.param(
            "1.36",
            [
                f"--admission-control-config-file={DIRECTORY}/{ADMISSION_CONFIGURATION}",
                f"--feature-gates={STATIC_ADMISSION}=true",
            ],
            id="1.36 has the gate off (alpha): it is turned on",
        ),
    ],
)
def test_the_flags_follow_the_release_s_gate(version: str, flags: list[str]) -> None:
    assert list(static_manifests(_objects(), release(version), DIRECTORY).flags) == flags


@pytest.mark.parametrize(
    "row", [pytest.param(r, id=r.name) for r in RELEASES if STATIC_ADMISSION not in r.gates]
)
def test_a_release_without_the_gate_is_refused_with_the_reason(row: Any) -> None:
    with pytest.raises(StaticUnsupported, match=rf"{row.name} .*no {STATIC_ADMISSION}.*1\.36"):
        static_manifests(_objects(), row, DIRECTORY)


def test_a_relative_directory_is_refused() -> None:
    with pytest.raises(StaticUnsupported, match="absolute"):
        static_manifests(_objects(), NEWEST, "placement")


def test_a_plugin_whose_policies_need_params_is_not_exported_and_leaves_no_param() -> None:
    result = export(_config(), REGISTRY, static=True)
    line = next(line for line in result.lines if line.subject == "plugins.runtime-class")
    assert (line.verdict, line.why) == (NOT_EXPORTED, PARAMS_WHY)
    assert all("paramKind" not in o["spec"] and "paramRef" not in o["spec"] for o in result.objects)
    names = [o["metadata"]["name"] for o in result.objects]
    assert not any("runtime-class" in str(name) for name in names)
    conditions = [c["name"] for o in result.objects for c in o["spec"].get("matchConditions", [])]
    assert "not-a-runtime-class-pod" not in conditions


def test_without_params_the_static_export_is_the_ordinary_one() -> None:
    config = _config("plugins: {runtime-class: {enabled: false}}")
    assert export(config, REGISTRY, static=True) == export(config, REGISTRY)


def _documents(text: str) -> list[str]:
    """The parts the API server's loader decodes: split at ``---`` lines, blank ones skipped."""
    parts = re.split(r"^---\s*$", text, flags=re.MULTILINE)
    return [part.strip() for part in parts if part.strip()]


def test_a_written_file_has_no_document_without_a_kind() -> None:
    manifests = static_manifests(_objects(), NEWEST, DIRECTORY)
    for file in manifests.files:
        text = render_static(file.objects, ["a comment"])
        assert text.startswith(STATIC_MARK + "\n")
        documents = [yaml.safe_load(part) for part in _documents(text)]
        assert [d["kind"] for d in documents] == [o["kind"] for o in file.objects]


# --------------------------------------------------------------------------- the command


def _invoke(*args: str) -> Result:
    return invoke_cli(["export", *args])


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_the_command_writes_the_layout_and_prints_the_flags(tmp_path: Path) -> None:
    result = _invoke("--static-manifests", str(tmp_path), "--plugin", "taint-toleration-rules")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert _tree(tmp_path) == [
        ADMISSION_CONFIGURATION,
        "validating-policies/placement-webhooks-taint-toleration-rules.static.k8s.io.yaml",
    ]
    assert (tmp_path / "mutating-policies").is_dir()
    flag = f"--admission-control-config-file={tmp_path}/{ADMISSION_CONFIGURATION}"
    assert f"kube-apiserver flags: {flag}" in result.stderr
    assert f"# kube-apiserver {flag}" in (tmp_path / ADMISSION_CONFIGURATION).read_text()


def test_the_server_dir_is_what_the_admission_configuration_names(tmp_path: Path) -> None:
    result = _invoke("--static-manifests", str(tmp_path), "--server-dir", DIRECTORY)
    assert result.exit_code == 1, result.output
    written = next(yaml.safe_load_all((tmp_path / ADMISSION_CONFIGURATION).read_text()))
    dirs = [p["configuration"]["staticManifestsDir"] for p in written["plugins"]]
    assert all(d.startswith(f"{DIRECTORY}/") for d in dirs) and len(dirs) == 4


def test_a_re_export_removes_its_own_stale_files_and_nobody_else_s(tmp_path: Path) -> None:
    assert _invoke("--static-manifests", str(tmp_path)).exit_code == 1
    foreign = tmp_path / "validating-policies" / "site-policy.static.k8s.io.yaml"
    foreign.write_text("apiVersion: admissionregistration.k8s.io/v1\n")
    result = _invoke("--static-manifests", str(tmp_path), "--plugin", "taint-toleration-rules")
    assert result.exit_code == 0, result.output
    assert _tree(tmp_path) == [
        ADMISSION_CONFIGURATION,
        "validating-policies/placement-webhooks-taint-toleration-rules.static.k8s.io.yaml",
        "validating-policies/site-policy.static.k8s.io.yaml",
    ]


def test_export_and_webhook_config_share_one_directory(tmp_path: Path) -> None:
    first = _invoke("--static-manifests", str(tmp_path), "--plugin", "taint-toleration-rules")
    configuration = (tmp_path / ADMISSION_CONFIGURATION).read_text()
    url = "https://10.0.0.1:8443"
    second = invoke_cli(["webhook-config", "--url", url, "--static-manifests", str(tmp_path)])
    assert (first.exit_code, second.exit_code) == (0, 0), second.output
    assert (tmp_path / ADMISSION_CONFIGURATION).read_text() == configuration
    assert _tree(tmp_path) == [
        ADMISSION_CONFIGURATION,
        "mutating-webhooks/placement-webhooks.static.k8s.io.yaml",
        "validating-policies/placement-webhooks-taint-toleration-rules.static.k8s.io.yaml",
        "validating-webhooks/placement-webhooks.static.k8s.io.yaml",
    ]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="without --url"),
        pytest.param(["--url", "https://h", "--inject", "--ca-file", "x"], id="with --inject"),
    ],
)
def test_webhook_config_static_needs_a_url_and_no_injection(
    tmp_path: Path, args: list[str]
) -> None:
    result = invoke_cli(["webhook-config", *args, "--static-manifests", str(tmp_path)])
    assert result.exit_code == 2
    assert "--static-manifests needs --url and no --inject" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["-o", "x.yaml", "--static-manifests", "d"],
            "--static-manifests writes DIR; give it or -o, not both",
            id="both outputs",
        ),
        pytest.param(
            ["--server-dir", DIRECTORY],
            "--server-dir says where --static-manifests DIR is on the server: give both",
            id="a server directory for nothing",
        ),
        pytest.param(
            ["--static-manifests", "d", "--hybrid"],
            "--hybrid --static-manifests: static manifests cannot hold runtime-class",
            id="hybrid where static manifests cannot hold what the webhook leaves to policies",
        ),
    ],
)
def test_unusable_combinations_exit_2_in_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    args = [str(tmp_path / a) if a in ("d", "x.yaml") else a for a in args]
    result = _invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1

"""Finding the running config the way the chart lays it out, and the checks' order."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.install.doctor.building import charted
from webhooks.install.doctor import run as running
from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.gather import config_source, option_value, serve_args, service_keys
from webhooks.install.doctor.installation import Installation


def _deployment() -> dict[str, Any]:
    deployment = charted(None).deployment
    assert deployment is not None
    return copy.deepcopy(deployment)


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_the_charts_deployment_runs_serve_with_its_configmap() -> None:
    deployment = _deployment()
    args = serve_args(deployment)
    assert args is not None and args[0] == "serve"
    path = option_value(args, "--config")
    assert path == "/etc/placement-webhooks/config.yaml"
    assert config_source(deployment, path) == ("placement-webhooks", "config.yaml")


def test_a_directory_mount_takes_the_files_name_as_the_key() -> None:
    deployment = _deployment()
    spec = deployment["spec"]["template"]["spec"]
    [container] = spec["containers"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "config"]
    mount["mountPath"] = "/etc/placement-webhooks/config"
    del mount["subPath"]
    assert config_source(deployment, "/etc/placement-webhooks/config/policy.yaml") == (
        "placement-webhooks",
        "policy.yaml",
    )


@pytest.mark.parametrize(
    ("path", "words"),
    [
        pytest.param("/elsewhere/config.yaml", "no volume of the serve container holds",
                     id="a path no volume holds"),
        pytest.param("/etc/placement-webhooks/tls/config.yaml", "not a ConfigMap",
                     id="a path in a volume that is no ConfigMap"),
    ],
)  # fmt: skip
def test_a_config_the_chart_would_not_mount_says_why(path: str, words: str) -> None:
    deployment = _deployment()
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    container["volumeMounts"] = [m for m in container["volumeMounts"] if m["name"] != "config"]
    source = config_source(deployment, path)
    assert isinstance(source, str) and words in source


@pytest.mark.parametrize(
    ("args", "value"),
    [
        pytest.param(["serve", "--config", "/c.yaml"], "/c.yaml", id="a separate value"),
        pytest.param(["serve", "--config=/c.yaml"], "/c.yaml", id="an attached value"),
        pytest.param(["serve"], None, id="no option"),
    ],
)
def test_option_values(args: list[str], value: str | None) -> None:
    assert option_value(args, "--config") == value


def test_a_deployment_without_serve_has_no_serve_args() -> None:
    deployment = _deployment()
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    container["args"] = ["certs", "manage"]
    assert serve_args(deployment) is None
    assert serve_args(None) is None


def test_the_services_called_are_listed_once() -> None:
    assert service_keys(charted({"webhooks": {"perPlugin": True}}).configurations) == [
        "placement/placement-webhooks"
    ]


def test_checks_run_in_their_printed_order_with_stable_ids() -> None:
    ids = [name for name, _ in running.CHECKS]
    assert ids[:6] == [
        "configurations",
        "ca-bundle",
        "endpoints",
        "round-trip",
        "fail-closed-scope",
        "timeouts",
    ]
    assert len(set(ids)) == len(ids)


def test_a_check_that_raises_is_a_fail_line_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(_installation: Installation) -> list[Finding]:
        raise KeyError("spec")

    def fine(_installation: Installation) -> list[Finding]:
        return [Finding("fine", Status.OK, "fine")]

    monkeypatch.setattr(running, "CHECKS", (("broken", broken), ("fine", fine)))
    findings = running.run(charted(None))
    assert [(f.check, f.status) for f in findings] == [
        ("broken", Status.FAIL),
        ("fine", Status.OK),
    ]
    assert "KeyError" in findings[0].reason

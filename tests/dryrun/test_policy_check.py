"""``check`` under a staged policy: warnings that do not fail, ``--enforce-all``, exceptions."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.command import invoke_cli

MANIFESTS = """\
apiVersion: v1
kind: Namespace
metadata:
  name: ml
  labels: {placement-webhooks.io/dedicated: gpu-team}
---
apiVersion: v1
kind: Namespace
metadata:
  name: web
  labels: {env: prod}
---
apiVersion: v1
kind: Pod
metadata:
  name: sneaky
  namespace: web
  labels: {app: sneaky}
spec:
  containers: [{name: app, image: nginx}]
  tolerations:
  - {key: dedicated, operator: Equal, value: gpu-team, effect: NoSchedule}
"""


def run(tmp_path: Path, config: dict[str, Any], *args: str) -> tuple[int, str, str]:
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    (tmp_path / "in.yaml").write_text(MANIFESTS)
    result = invoke_cli(
        ["check", "--config", str(tmp_path / "config.yaml"), *args, str(tmp_path / "in.yaml")]
    )
    return result.exit_code, result.stdout, result.stderr


def dedicated(**section: Any) -> dict[str, Any]:
    return {"plugins": {"dedicated-nodes": {"enabled": True, **section}}}


@pytest.mark.parametrize(
    ("action", "code"),
    [("enforce", 1), ("warn", 0), ("audit", 0)],
    ids=["enforce", "warn", "audit"],
)
def test_only_enforced_violations_fail_the_run(tmp_path: Path, action: str, code: int) -> None:
    exit_code, out, _ = run(tmp_path, dedicated(action=action))
    assert exit_code == code
    line = next(x for x in out.splitlines() if "dedicated-nodes:" in x)
    assert ("warning: toleration" in line) is (action != "enforce")


def test_enforce_all_fails_on_what_warn_lets_through(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, dedicated(action="warn"), "--enforce-all")
    assert code == 1
    assert "1 violation" in out.splitlines()[-1]


def test_an_override_for_the_namespace_decides_offline_too(tmp_path: Path) -> None:
    override = [{"namespaceSelector": {"matchLabels": {"env": "prod"}}, "action": "enforce"}]
    code, _, _ = run(tmp_path, dedicated(action="warn", actionOverrides=override))
    assert code == 1


def test_warnings_in_every_format(tmp_path: Path) -> None:
    outputs = {fmt: tmp_path / f"out.{fmt}" for fmt in ("sarif", "github", "junit", "json")}
    args = [arg for fmt, path in outputs.items() for arg in ("-o", f"{fmt}={path}")]
    code, _, _ = run(tmp_path, dedicated(action="warn"), *args)
    assert code == 0
    sarif = json.loads(outputs["sarif"].read_text())
    assert [r["level"] for r in sarif["runs"][0]["results"]] == ["warning"]
    assert outputs["github"].read_text().startswith("::warning file=")
    junit = ET.fromstring(outputs["junit"].read_text())
    (skipped,) = junit.findall(".//testcase/skipped")
    assert "toleration dedicated=gpu-team" in (skipped.get("message") or "")
    report = json.loads(outputs["json"].read_text())
    assert report["summary"]["warnings"] == 1 and report["summary"]["violations"] == 0
    (pod,) = [o for o in report["objects"] if o["kind"] == "Pod"]
    assert pod["violations"][0]["action"] == "warn"


def test_excepted_objects_are_listed_under_the_exception(tmp_path: Path) -> None:
    config = {
        **dedicated(),
        "exceptions": [
            {"name": "sneaky-ok", "plugins": ["dedicated-nodes"], "namespaces": ["web"]}
        ],
    }
    code, out, _ = run(tmp_path, config)
    assert code == 0
    assert "sneaky-ok: Pod web/sneaky: dedicated-nodes skipped: exception sneaky-ok" in out
    assert "1 skipped by exceptions" in out.splitlines()[-1]


def test_an_expired_exception_is_a_warning_and_no_longer_excepts(tmp_path: Path) -> None:
    config = {
        **dedicated(),
        "exceptions": [
            {
                "name": "old",
                "plugins": ["dedicated-nodes"],
                "namespaces": ["web"],
                "expires": "2020-01-01T00:00:00Z",
            }
        ],
    }
    code, out, _ = run(tmp_path, config)
    assert code == 1
    assert "old: warning: exception old has expired and no longer exempts this object" in out


# --- a skip is reported only where something was skipped (issue 19) ---------------------------

GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: dcgm, namespace: kube-system}
spec:
  containers:
  - name: exporter
    image: registry.example/dcgm-exporter:3
    resources: {limits: {nvidia.com/gpu: 1}}
"""
ERT = "extended-resource-toleration"
ADDED = f"{ERT}: Pod kube-system/dcgm: added nvidia.com/gpu:NoSchedule (Exists)"

#: (id, config, the skip line or None, the summary's tail)
SKIPS: list[tuple[str, dict[str, Any], str | None, str]] = [
    (
        "with enforcement off (the default), exemptNamespaces skips nothing and is not reported",
        {},
        None,
        "0 violations, 2 mutations",
    ),
    (
        "with enforcement on, the validation it skips is reported as validation",
        {"plugins": {ERT: {"enforce": {"guarded": [{"taintKey": "nvidia.com/gpu"}]}}}},
        f"{ERT}.exemptNamespaces: Pod kube-system/dcgm: {ERT} validation skipped: exception "
        f"{ERT}.exemptNamespaces covers this object",
        "0 violations, 2 mutations, 1 skipped by exceptions",
    ),
]


@pytest.mark.parametrize(
    ("config", "skipped", "summary"), [c[1:] for c in SKIPS], ids=[c[0] for c in SKIPS]
)
def test_a_kube_system_gpu_pod_gets_its_toleration_and_a_skip_only_where_one_happened(
    tmp_path: Path, config: dict[str, Any], skipped: str | None, summary: str
) -> None:
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    (tmp_path / "gpu.yaml").write_text(GPU_POD)
    result = invoke_cli(
        ["check", "--config", str(tmp_path / "config.yaml"), str(tmp_path / "gpu.yaml")]
    )
    assert result.exit_code == 0
    lines = [line.split(": ", 1)[1] for line in result.stdout.splitlines()[:-1]]
    assert ADDED in lines
    assert [line for line in lines if "skipped" in line] == ([skipped] if skipped else [])
    assert result.stdout.splitlines()[-1].endswith(summary)


def test_an_exception_for_both_halves_still_says_the_plugin_was_skipped(tmp_path: Path) -> None:
    exception = {"name": "dcgm", "plugins": [ERT], "namespaces": ["kube-system"]}
    (tmp_path / "config.yaml").write_text(json.dumps({"exceptions": [exception]}))
    (tmp_path / "gpu.yaml").write_text(GPU_POD)
    result = invoke_cli(
        ["check", "--config", str(tmp_path / "config.yaml"), str(tmp_path / "gpu.yaml")]
    )
    assert f"dcgm: Pod kube-system/dcgm: {ERT} skipped: exception dcgm covers this object" in (
        result.stdout
    )
    assert ADDED not in result.stdout

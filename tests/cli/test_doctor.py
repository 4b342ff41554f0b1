"""``placement-webhooks doctor`` end to end against the fake API: lines, JSON, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.command import invoke_cli
from tests.fakeapi import FakeApiServer
from tests.install.doctor.building import NAMESPACE, charted

pytestmark = pytest.mark.e2e


def _doctor(fake: FakeApiServer, tmp_path: Path, *args: str) -> tuple[int, str]:
    for configuration in charted(None).configurations:
        fake.put({**configuration, "apiVersion": "admissionregistration.k8s.io/v1"})
    kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
    result = invoke_cli(
        ["doctor", f"--kubeconfig={kubeconfig}", "-n", NAMESPACE, "--timeout", "2", *args]
    )
    return result.exit_code, result.output


def test_one_line_per_finding_and_exit_1_on_a_failure(fake: FakeApiServer, tmp_path: Path) -> None:
    code, output = _doctor(fake, tmp_path)
    lines = output.splitlines()
    assert code == 1
    assert all(line.split()[0] in {"ok", "warn", "fail"} for line in lines), output
    assert any(
        line.startswith("fail endpoints: Service placement/placement-webhooks") for line in lines
    )
    assert any(line.startswith("ok   timeouts:") for line in lines)


def test_json_output_carries_the_same_findings(fake: FakeApiServer, tmp_path: Path) -> None:
    code, output = _doctor(fake, tmp_path, "--output", "json")
    rows = json.loads(output)
    assert code == 1
    assert {row["status"] for row in rows} <= {"ok", "warn", "fail"}
    assert {"check", "status", "reason", "fix"} == set(rows[0])


def test_an_unusable_kubeconfig_is_exit_2_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nothing"
    result = invoke_cli(["doctor", f"--kubeconfig={missing}"])
    assert result.exit_code == 2
    assert result.output.count("\n") <= 1
    assert "no usable cluster credentials" in result.output

"""``placement-webhooks export`` through click's runner: outputs, the report, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import Result

from tests.command import invoke_cli


def _invoke(*args: str) -> Result:
    return invoke_cli(["export", *args])


def test_everything_exact_exits_0_and_prints_the_objects_with_the_report_as_their_head() -> None:
    result = _invoke("--plugin", "default-toleration-seconds")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("# plugins.default-toleration-seconds: exact\n")
    kinds = [d["kind"] for d in yaml.safe_load_all(out) if d]
    assert kinds == ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"]
    assert "plugins.default-toleration-seconds: exact" in result.stderr


def test_something_not_exported_exactly_exits_1_and_the_report_says_what() -> None:
    result = _invoke()
    assert result.exit_code == 1
    assert "plugins.runtime-class: exact except: " in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--plugin", "nope"], "--plugin: unknown plugin 'nope'", id="an unknown plugin"
        ),
        pytest.param(["--config", "/nonexistent.yaml"], "config", id="a config that is not there"),
    ],
)
def test_unusable_input_exits_2_in_one_line(args: list[str], message: str) -> None:
    result = _invoke(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_directory_gets_one_file_per_object_in_apply_order(tmp_path: Path) -> None:
    result = _invoke("--plugin", "daemonset-tolerations", "-o", str(tmp_path))
    assert result.exit_code == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[0].startswith("00-mutatingadmissionpolicy-")
    assert all(len(list(yaml.safe_load_all(p.read_text()))) == 1 for p in tmp_path.iterdir())


def test_a_file_gets_the_whole_stream(tmp_path: Path) -> None:
    target = tmp_path / "native.yaml"
    result = _invoke("-o", str(target))
    assert result.exit_code == 1
    assert target.read_text().startswith("# plugins.")
    assert result.stdout == ""


def test_the_same_config_file_drives_it_as_drives_the_server(tmp_path: Path) -> None:
    config = tmp_path / "placement.yaml"
    config.write_text("plugins:\n  anti-affinity-topology: {enabled: true, action: warn}\n")
    result = _invoke("--config", str(config), "--plugin", "anti-affinity-topology")
    bindings = [d for d in yaml.safe_load_all(result.stdout) if d and d["kind"].endswith("Binding")]
    assert bindings[0]["spec"]["validationActions"] == ["Warn", "Audit"]


@pytest.mark.parametrize("hybrid", [[], ["--hybrid"]], ids=["whole", "hybrid"])
def test_the_yaml_head_and_stderr_carry_the_same_consistent_report(
    tmp_path: Path, hybrid: list[str]
) -> None:
    config = tmp_path / "placement.yaml"
    config.write_text("plugins:\n  pod-toleration-restriction: {enabled: true}\n")
    result = _invoke("--config", str(config), *hybrid)
    head = [line[2:] for line in result.stdout.splitlines() if line.startswith("# plugins.")]
    assert head == result.stderr.splitlines()
    mutation = next(line for line in head if line.startswith("plugins.pod-toleration-restriction."))
    assert mutation.startswith("plugins.pod-toleration-restriction.mutation: not exported: ")
    assert ("; hybrid: stays on the webhook" in mutation) == bool(hybrid)

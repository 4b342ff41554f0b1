"""``check``, ``mutate`` and ``explain`` on kinds that take a built-in's name in another group.

The manifests under tests/fixtures/manifests/kinds each stand for a class of real files:
an advanced-workload operator's DaemonSet, a batch scheduler's Job whose pods are under
``spec.tasks[].template``, a custom resource whose kind is Pod, and a DaemonSet written
for the ``extensions`` group that carried DaemonSets before ``apps``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.command import ROOT, invoke_cli

KINDS = ROOT / "tests" / "fixtures" / "manifests" / "kinds"
DEPLOY = ROOT / "tests" / "fixtures" / "manifests" / "deploy"
FULL = ROOT / "tests" / "fixtures" / "placement.yaml"

CASES = [
    pytest.param(
        KINDS / "other-group-daemonset.yaml",
        {"DaemonSet.apps.kruise.io": 1},
        0,
        id="a DaemonSet of another group is skipped and reported, never given DaemonSet defaults",
    ),
    pytest.param(
        KINDS / "batch-scheduler-job.yaml",
        {"Job.batch.volcano.sh": 1},
        0,
        id="a Job of another group with spec.tasks[].template is skipped, not a checked Job",
    ),
    pytest.param(
        KINDS / "pod-of-another-group.yaml",
        {"Pod.sandbox.example.dev": 1},
        0,
        id="a kind Pod of another group is skipped, its invalid toleration never judged",
    ),
    pytest.param(
        KINDS / "legacy-extensions-daemonset.yaml",
        {},
        1,
        id="an extensions/v1beta1 DaemonSet is checked as the apps DaemonSet",
    ),
    pytest.param(
        DEPLOY / "node-exporter-daemonset.yaml",
        {},
        1,
        id="an apps/v1 DaemonSet is checked as before",
    ),
]


@pytest.mark.parametrize("config", [(), ("--config", str(FULL))], ids=["default", "full"])
@pytest.mark.parametrize(("path", "skipped", "objects"), CASES)
def test_check_counts_a_foreign_kind_as_skipped_in_json(
    path: Path, skipped: dict[str, int], objects: int, config: tuple[str, ...]
) -> None:
    result = invoke_cli(["check", *config, "--output", "json", str(path)])
    report = json.loads(result.stdout)
    assert report["summary"]["objects"] == objects
    assert report["summary"]["skipped"] == skipped
    expected = [label.partition(".") for label in skipped]
    assert [(s["kind"], s["apiVersion"].rpartition("/")[0]) for s in report["skipped"]] == [
        (kind, group) for kind, _, group in expected
    ]
    assert result.exit_code == 0
    if skipped:
        assert report["objects"] == []


@pytest.mark.parametrize(("path", "skipped", "objects"), CASES)
def test_check_says_skipped_in_text_and_sarif(
    path: Path, skipped: dict[str, int], objects: int
) -> None:
    text = invoke_cli(["check", str(path)]).stdout
    sarif = json.loads(invoke_cli(["check", "--output", "sarif", str(path)]).stdout)
    notes = sarif["runs"][0]["invocations"][0].get("toolExecutionNotifications", [])
    lines = [line for line in text.splitlines() if ": skipped: " in line]
    assert len(lines) == len(notes) == len(skipped)
    for label in skipped:
        assert f"skipped: {label} 1" in text.splitlines()[-1]
        kind, _, group = label.partition(".")
        assert all(n["level"] == "note" and group in n["message"]["text"] for n in notes)
        assert all("not the built-in" in line and kind in line for line in lines)
    assert f"{objects} object" in text.splitlines()[-1]


@pytest.mark.parametrize("config", [(), ("--config", str(FULL))], ids=["default", "full"])
@pytest.mark.parametrize(("path", "skipped", "objects"), CASES)
def test_mutate_prints_a_foreign_kind_unchanged_and_says_it_skipped_it(
    path: Path, skipped: dict[str, int], objects: int, config: tuple[str, ...]
) -> None:
    result = invoke_cli(["mutate", *config, str(path)])
    assert result.exit_code == 0, result.stderr
    written = list(yaml.safe_load_all(result.stdout))
    original = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    assert (written == original) is bool(skipped)
    assert result.stderr.count(": skipped: ") == len(skipped)


def test_mutate_output_of_the_kinds_passes_check_fail_on_mutation() -> None:
    out = invoke_cli(["mutate", str(KINDS)]).stdout
    again = invoke_cli(["check", "--fail-on-mutation", "-"], stdin=out)
    assert again.exit_code == 0, again.stdout
    assert "DaemonSet.apps.kruise.io 1" in again.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    ("path", "placed"),
    [
        pytest.param(
            KINDS / "other-group-daemonset.yaml",
            False,
            id="explain does not place another group's DaemonSet as DaemonSet pods, and says so",
        ),
        pytest.param(
            KINDS / "legacy-extensions-daemonset.yaml",
            True,
            id="explain places an extensions DaemonSet's pods as a DaemonSet's",
        ),
    ],
)
def test_explain_places_only_built_in_kinds(tmp_path: Path, path: Path, placed: bool) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n", encoding="utf-8")
    result = invoke_cli(["explain", "--nodes", str(nodes), str(path)])
    assert ("skipped: " in result.stderr) is not placed
    assert ("pods of DaemonSet" in result.stdout) is placed

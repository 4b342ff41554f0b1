"""Output formats: golden files over the fixture tree, SARIF against its schema, JUnit as XML.

Golden files live in tests/fixtures/golden/. They record what this tree's plugins do to
tests/fixtures/manifests/; after adding or changing a plugin, regenerate them with

    UPDATE_GOLDEN=1 pytest tests/dryrun/test_formats.py

and review the diff like any other change of behaviour.
"""

from __future__ import annotations

import hashlib
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import webhooks.cli.check as commands
from tests.command import invoke_cli
from tests.dryrun import fakes
from webhooks.dryrun import render
from webhooks.dryrun.engine import Engine
from webhooks.dryrun.report import Report
from webhooks.dryrun.run import admit_all
from webhooks.manifests.reader import read, split

FIXTURES = Path(__file__).parent.parent / "fixtures"
GOLDEN = FIXTURES / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
FILES = {
    "text": "check.txt",
    "json": "check.json",
    "junit": "check.junit.xml",
    "sarif": "check.sarif",
    "github": "check.github.txt",
}


#: The OASIS SARIF 2.1.0 (errata 01) schema, kept unchanged (see its README for origin).
SARIF_SCHEMA = FIXTURES / "sarif" / "sarif-schema-2.1.0.json"
SARIF_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


def _sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema)


def test_the_sarif_schema_is_the_oasis_2_1_0_schema_unchanged() -> None:
    assert hashlib.sha256(SARIF_SCHEMA.read_bytes()).hexdigest() == SARIF_SCHEMA_SHA256
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    jsonschema.Draft4Validator.check_schema(schema)


def _compare(name: str, actual: str) -> None:
    golden = GOLDEN / name
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
    assert golden.exists(), f"{golden} missing: run with UPDATE_GOLDEN=1 to create it"
    assert actual == golden.read_text(encoding="utf-8"), (
        f"{name} differs from its golden file; if the change is intended, "
        "regenerate with UPDATE_GOLDEN=1"
    )


@pytest.fixture
def in_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)
    monkeypatch.setattr(commands, "version", lambda: "0.0.0-test")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("outputs")
    mp = pytest.MonkeyPatch()
    mp.chdir(FIXTURES)
    mp.setattr(commands, "version", lambda: "0.0.0-test")
    try:
        args = ["check", "--config", "placement.yaml", "manifests"]
        for fmt in FILES:
            args += ["--output", f"{fmt}={out / fmt}"]
        result = invoke_cli(args)
    finally:
        mp.undo()
    assert result.exit_code in (0, 1), result.output
    assert result.stdout == "", "every format went to its own file"
    return {fmt: (out / fmt).read_text(encoding="utf-8") for fmt in FILES}


@pytest.mark.parametrize("fmt", list(FILES), ids=[f"the {f} report" for f in FILES])
def test_check_output_matches_its_golden_file(outputs: dict[str, str], fmt: str) -> None:
    _compare(FILES[fmt], outputs[fmt])


def test_mutate_output_matches_its_golden_file(in_fixtures: None) -> None:
    result = invoke_cli(["mutate", "manifests"])
    assert result.exit_code in (0, 1), result.stderr
    _compare("mutate.yaml", result.stdout)


def test_the_sarif_report_validates_against_the_sarif_2_1_0_schema(outputs: dict[str, str]) -> None:
    _sarif_validator().validate(json.loads(outputs["sarif"]))


def test_the_junit_report_is_xml_with_a_case_per_object(outputs: dict[str, str]) -> None:
    root = ET.fromstring(outputs["junit"])
    report = json.loads(outputs["json"])
    cases = root.findall("./testsuite/testcase")
    assert root.tag == "testsuites"
    assert len(cases) == report["summary"]["objects"] + len(report["skipped"])
    assert len(root.findall("./testsuite/testcase[@name='skipped']")) == len(report["skipped"])
    assert int(root.get("tests", "-1")) == len(cases)
    assert int(root.get("failures", "-1")) == len(root.findall("./testsuite/testcase/failure"))


# --- the acceptance scenario, through the real plugins ---------------------------------


def _deploy_report(**options: Any) -> tuple[Report, render.Options]:
    sources, problems = read([str(FIXTURES / "manifests" / "deploy")])
    assert problems == []
    docs = [d for s in sources for d in split(s)[0]]
    config = yaml.safe_load((FIXTURES / "placement.yaml").read_text(encoding="utf-8"))
    admission = fakes.admission(config=config)
    report = admit_all(Engine(admission), docs, Report(files=len(sources)))
    rules = render.rules_of(admission.registry.plugins)
    return report, render.Options(rules=rules, **options)


def _line_of(path: str, text: str) -> int:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_sarif_has_a_result_per_violation_at_the_offending_line() -> None:
    report, options = _deploy_report()
    data = json.loads(render.sarif(report, options))
    _sarif_validator().validate(data)
    results = data["runs"][0]["results"]
    where = {
        (
            r["ruleId"],
            Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name,
        ): r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in results
    }
    deploy = FIXTURES / "manifests" / "deploy"
    assert where == {
        ("anti-affinity-topology", "web-deployment.yaml"): _line_of(
            str(deploy / "web-deployment.yaml"), "topologyKey: topology.kubernetes.io/zone"
        ),
        ("taint-toleration-rules", "gpu-node.yaml"): _line_of(
            str(deploy / "gpu-node.yaml"), "effect: NoScheduleNoAdmit"
        ),
    }
    rule_ids = [r["id"] for r in data["runs"][0]["tool"]["driver"]["rules"]]
    assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in results)


def test_sarif_fingerprints_are_stable_and_distinct() -> None:
    first = json.loads(render.sarif(*_deploy_report()))
    second = json.loads(render.sarif(*_deploy_report()))
    prints = [r["partialFingerprints"] for r in first["runs"][0]["results"]]
    assert prints == [r["partialFingerprints"] for r in second["runs"][0]["results"]]
    assert len({p[render.FINGERPRINT] for p in prints}) == len(prints)


def test_mutations_become_failing_results_only_under_fail_on_mutation() -> None:
    quiet = json.loads(render.sarif(*_deploy_report()))["runs"][0]["results"]
    strict = json.loads(render.sarif(*_deploy_report(fail_on_mutation=True)))["runs"][0]["results"]
    assert {r["ruleId"] for r in quiet} == {"anti-affinity-topology", "taint-toleration-rules"}
    assert {"daemonset-tolerations", "extended-resource-toleration"} <= {
        r["ruleId"] for r in strict
    }


def test_the_text_report_names_violations_and_what_pods_receive() -> None:
    report, options = _deploy_report()
    text = render.text(report, options)
    deploy = FIXTURES / "manifests" / "deploy"
    node = deploy / "gpu-node.yaml"
    line = _line_of(str(node), "NoScheduleNoAdmit")
    assert f"{node}:{line}: taint-toleration-rules: spec.taints[1].effect: Unsupported" in text
    assert "daemonset-tolerations: DaemonSet monitoring/node-exporter: added" in text
    assert (
        "extended-resource-toleration: pods of Job ml/train-resnet: "
        "added nvidia.com/gpu:NoSchedule (Exists)"
    ) in text
    assert report.exit_code() == 1


def test_github_annotations_escape_messages_and_properties() -> None:
    report, options = _deploy_report()
    lines = render.github(report, options).splitlines()
    assert len(lines) == 2
    assert all(line.startswith("::error file=") for line in lines)
    assert any(
        ",title=taint-toleration-rules::spec.taints[1].effect: Unsupported value: "
        '"NoScheduleNoAdmit"' in line
        for line in lines
    )
    assert render._escape("a,b:c%\nd", prop=True) == "a%2Cb%3Ac%25%0Ad"


def test_json_lists_violations_with_fields_and_mutations_with_patches() -> None:
    report, options = _deploy_report()
    data = json.loads(render.json(report, options))
    by_kind = {o["kind"]: o for o in data["objects"]}
    node = by_kind["Node"]["violations"][0]
    assert (node["rule"], node["field"]) == ("taint-toleration-rules", "spec.taints[1].effect")
    job = by_kind["Job"]["mutations"][0]
    assert job["target"] == "pod"
    assert {"op": "add", "path": "/spec/tolerations", "value": job["patch"][0]["value"]} == job[
        "patch"
    ][0]
    assert data["summary"]["exitCode"] == 1


def test_unusable_inputs_appear_in_every_format(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bad.yaml").write_text("kind: Pod\nmetadata: {name: [\n")
    (tmp_path / "in" / "good.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    args = ["check", str(tmp_path / "in")]
    for fmt in FILES:
        args += ["--output", f"{fmt}={tmp_path / fmt}"]
    result = invoke_cli(args)
    assert result.exit_code == 2
    out = {fmt: (tmp_path / fmt).read_text() for fmt in FILES}
    sarif = json.loads(out["sarif"])
    _sarif_validator().validate(sarif)
    (invocation,) = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith(
        "file:///"
    )
    errors = ET.fromstring(out["junit"]).findall("./testsuite/testcase/error")
    assert len(errors) == 1 and errors[0].get("type") == "input"
    assert out["github"].startswith(f"::error file={tmp_path / 'in' / 'bad.yaml'},line=3,")
    assert json.loads(out["json"])["problems"][0]["line"] == 3
    assert "1 unusable input" in out["text"]

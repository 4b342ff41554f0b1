"""``check --schema`` as a user runs it: removed and unknown kinds, CRDs, schema locations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes_validate")

from tests.command import invoke_cli
from tests.dryrun.test_formats import _sarif_validator

#: A fixed release, so a newer schema package cannot change what these tests see.
SCHEMA = ("--schema", "--kubernetes-version", "1.30")

OLD_DEPLOYMENT = """\
apiVersion: extensions/v1beta1
kind: Deployment
metadata:
  name: old
spec:
  template:
    spec:
      containers:
      - name: c
        image: nginx
      tolerationz: []
"""
WIDGET = """\
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g}
spec:
  size: 2
  colour: red
"""
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
"""


def _check(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = invoke_cli(["check", *args], stdin=stdin)
    return result.exit_code, result.stdout, result.stderr


EXITS = [
    pytest.param([*SCHEMA, "-"], OLD_DEPLOYMENT, 1, id="a removed apiVersion fails the run"),
    pytest.param([*SCHEMA, "-"], WIDGET, 1, id="a kind no schema covers fails the run"),
    pytest.param(
        [*SCHEMA, "--missing-schemas", "warn", "-"], WIDGET, 0, id="warn reports it and passes"
    ),
    pytest.param(
        [*SCHEMA, "--missing-schemas", "skip", "-"],
        OLD_DEPLOYMENT,
        1,
        id="skip does not pass a removed apiVersion: it is known, and refused",
    ),
    pytest.param(
        [*SCHEMA, "-"], CRD + "---\n" + WIDGET, 1, id="a CRD among the inputs checks its kind"
    ),
    pytest.param(
        [*SCHEMA, "-"],
        CRD + "---\n" + WIDGET.replace("  colour: red\n", ""),
        0,
        id="a custom resource that matches its CRD passes",
    ),
    pytest.param(["-"], OLD_DEPLOYMENT, 0, id="without --schema nothing of this is checked"),
]


@pytest.mark.parametrize(("args", "stdin", "code"), EXITS)
def test_exit_codes(args: list[str], stdin: str, code: int) -> None:
    assert _check(*args, stdin=stdin)[0] == code


USAGE = [
    pytest.param(["--schema-location", "x", "-"], "--schema-location needs --schema", id="loc"),
    pytest.param(["--missing-schemas", "warn", "-"], "--missing-schemas needs --schema", id="m"),
    pytest.param(
        [*SCHEMA, "--schema-location", "", "-"],
        'an empty --schema-location argument ("")',
        id="an empty location",
    ),
    pytest.param([*SCHEMA, "--schema-location", "-", "-"], "stdin holds the manifests", id="stdin"),
    pytest.param(
        [*SCHEMA, "--schema-location", "/nonexistent/crds", "-"],
        "--schema-location /nonexistent/crds: cannot read: No such file or directory",
        id="a missing location",
    ),
]


@pytest.mark.parametrize(("args", "message"), USAGE)
def test_unusable_schema_options_exit_2_with_a_reason(args: list[str], message: str) -> None:
    code, out, err = _check(*args, stdin=OLD_DEPLOYMENT)
    assert code == 2
    assert message in err
    assert out == "", "no report on an unusable schema option"


def test_a_bad_schema_file_stops_the_run_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "example.com" / "gadget_v1.json"
    bad.parent.mkdir()
    bad.write_text('{"type": "object", "properties": {"size": {"type": 5}}}')
    code, out, err = _check(*SCHEMA, "--schema-location", str(bad), "-", stdin=WIDGET)
    assert code == 2
    assert f"--schema-location {bad}:1: not a valid JSON schema at properties/size/type" in err
    assert out == ""


def test_a_schema_location_checks_a_custom_resource(tmp_path: Path) -> None:
    (tmp_path / "crd.yaml").write_text(CRD)
    code, out, _ = _check(*SCHEMA, "--schema-location", str(tmp_path), "-", stdin=WIDGET)
    assert code == 1
    assert '<stdin>:6: schema: spec: Additional properties are not allowed ("colour"' in out


def _json(*args: str, stdin: str) -> dict[str, Any]:
    code, out, _ = _check(*args, "--output", "json", "-", stdin=stdin)
    assert code in (0, 1)
    report: dict[str, Any] = json.loads(out)
    return report


def test_the_json_report_carries_the_removal_as_a_failing_schema_finding() -> None:
    report = _json(*SCHEMA, stdin=OLD_DEPLOYMENT)
    findings = [f for o in report["objects"] for f in o["violations"] if f["rule"] == "schema"]
    assert findings[0] == {
        "rule": "schema",
        "type": "schema",
        "level": "error",
        "target": "object",
        "field": "apiVersion",
        "line": 1,
        "message": "extensions/v1beta1 Deployment was removed in Kubernetes 1.16; use apps/v1",
    }
    assert report["summary"]["schema"] == len(findings)
    assert report["summary"]["exitCode"] == 1


def test_a_warned_missing_schema_is_a_warning_not_a_schema_error() -> None:
    report = _json(*SCHEMA, "--missing-schemas", "warn", stdin=WIDGET)
    ((finding,),) = [o["violations"] for o in report["objects"]]
    assert (finding["level"], finding["field"]) == ("warning", "apiVersion")
    assert (report["summary"]["schema"], report["summary"]["warnings"]) == (0, 1)


@pytest.mark.parametrize(
    ("missing", "level"),
    [("error", "error"), ("warn", "warning")],
    ids=["a removal and a missing schema as errors", "a missing schema as a warning"],
)
def test_sarif_carries_the_new_findings_as_results(missing: str, level: str) -> None:
    code, out, _ = _check(
        *SCHEMA,
        "--missing-schemas",
        missing,
        "--output",
        "sarif",
        "-",
        stdin=OLD_DEPLOYMENT + "---\n" + WIDGET,
    )
    assert code == 1
    data = json.loads(out)
    _sarif_validator().validate(data)
    results = [r for r in data["runs"][0]["results"] if r["ruleId"] == "schema"]
    found = {
        (r["level"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results
    }
    assert ("error", 1) in found, "the removal, at its apiVersion line"
    assert (level, 13) in found, "the missing schema, at the Gadget's apiVersion line"


def test_a_catalog_file_found_unusable_mid_run_exits_2_with_no_report(tmp_path: Path) -> None:
    bad = tmp_path / "example.com" / "gadget_v1.json"
    bad.parent.mkdir()
    bad.write_text("[1, 2]\n")
    code, out, err = _check(*SCHEMA, "--schema-location", str(tmp_path), "-", stdin=WIDGET)
    assert code == 2
    assert f"--schema-location {bad}: not one JSON schema" in err
    assert out == ""

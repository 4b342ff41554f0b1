"""``check`` and ``mutate`` as a user runs them: exit codes, stdin, outputs, a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.offline import fakes
from webhooks.cli import dryrun_commands as commands
from webhooks.cli import main
from webhooks.core.config import load_config
from webhooks.core.plugin import Registry
from webhooks.manifests.reader import parse_field
from webhooks.plugins import ORDER

ROOT = Path(__file__).parent.parent.parent
DEPLOY = ROOT / "tests" / "fixtures" / "manifests" / "deploy"

NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n"
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
"""
UNKNOWN_FIELD = DEPLOYMENT + "      tolerationz: []\n"


def _check(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "code"),
    [
        (["-"], NODE, 0),
        (["-"], DEPLOYMENT, 0),
        (["--fail-on-mutation", "-"], DEPLOYMENT, 1),
        (["--fail-on-mutation", "-"], NODE, 0),
        (["--schema", "-"], UNKNOWN_FIELD, 1),
        (["--schema", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndatta: {}\n", 1),
        (["--schema", "-"], "apiVersion: example.com/v1\nkind: Widget\nspec: {x: 1}\n", 0),
        (["--schema", "--kubernetes-version", "1.30", "-"], DEPLOYMENT, 0),
        (["-"], "kind: [\n", 2),
        (["-"], "", 2),
        (["-"], "# only a comment\n---\n", 2),
    ],
    ids=[
        "a clean object exits 0",
        "mutations alone do not fail a run",
        "mutations fail a run under --fail-on-mutation",
        "--fail-on-mutation passes when nothing would change",
        "an unknown field fails --schema",
        "--schema checks kinds admission skips",
        "--schema leaves kinds without a schema alone",
        "a valid object passes --schema at a chosen version",
        "unparsable YAML exits 2",
        "an empty input is unusable, as kubectl refuses to apply nothing",
        "an input of comments and separators holds no manifest",
    ],
)
def test_exit_codes(args: list[str], stdin: str, code: int) -> None:
    assert _check(*args, stdin=stdin)[0] == code


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no input"),
        (["--output", "xml", "-"], "unknown format 'xml'"),
        (["--output", "json=", "-"], "missing file name"),
        (["--output", "json", "--output", "text", "-"], "at most one format can go to stdout"),
        (["--kubernetes-version", "1.30", "-"], "--kubernetes-version needs --schema"),
        (["--schema", "--kubernetes-version", "9.99", "-"], "schemas cover"),
        (["--schema", "--kubernetes-version", "latest", "-"], "expected MAJOR.MINOR"),
        (["--config", "/nonexistent/config.yaml", "-"], "cannot read config file"),
    ],
    ids=[
        "no paths",
        "an unknown format",
        "an empty file name",
        "two formats on stdout",
        "a version without --schema",
        "a version the schemas do not cover",
        "a version that is not a version",
        "a missing config file",
    ],
)
def test_usage_errors_exit_2_with_a_reason(args: list[str], message: str) -> None:
    code, _, err = _check(*args, stdin=NODE)
    assert code == 2
    assert message in err


def test_parse_errors_are_reported_as_file_line_reason(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(NODE)
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [x\n")
    code, out, err = _check(str(tmp_path), "--output", "json")
    assert code == 2
    assert err.startswith(f"{tmp_path / 'bad.yaml'}:5: invalid YAML: ")
    report = json.loads(out)
    assert report["summary"]["objects"] == 1, "the readable file is still checked"
    assert report["problems"][0]["line"] == 5


def test_a_missing_input_is_reported_and_exits_2(tmp_path: Path) -> None:
    code, _, err = _check(str(tmp_path / "nope.yaml"))
    assert code == 2
    assert "nope.yaml: cannot read: No such file or directory" in err


def test_several_outputs_each_go_to_their_own_file(tmp_path: Path) -> None:
    sarif, junit = tmp_path / "out.sarif", tmp_path / "out.xml"
    code, out, _ = _check(
        "--output",
        f"sarif={sarif}",
        "--output",
        f"junit={junit}",
        "--output",
        "text",
        "-",
        stdin=DEPLOYMENT,
    )
    assert code == 0
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert junit.read_text().startswith("<?xml")
    assert out.startswith("<stdin>:1: default-toleration-seconds: pods of Deployment default/web:")


def test_stdin_can_be_named_and_namespaced() -> None:
    code, out, _ = _check(
        "--stdin-name", "chart.yaml", "-n", "team-a", "--output", "json", "-", stdin=DEPLOYMENT
    )
    assert code == 0
    (obj,) = json.loads(out)["objects"]
    assert (obj["path"], obj["namespace"]) == ("chart.yaml", "team-a")


def test_schema_errors_point_at_the_unknown_field() -> None:
    code, out, _ = _check("--schema", "-", stdin=UNKNOWN_FIELD)
    assert code == 1
    assert "<stdin>:15: schema: spec.template.spec: Additional properties are not allowed" in out
    assert out.count("tolerationz") == 1, "the same error after mutation is not repeated"


def test_schema_without_the_package_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes_validate", None)
    code, _, err = _check("--schema", "-", stdin=NODE)
    assert code == 2
    assert "pip install 'placement-webhooks[schema]'" in err


def test_colour_only_when_asked_or_on_a_terminal() -> None:
    plain = _check("-", stdin=DEPLOYMENT)[1]
    coloured = _check("--color", "always", "-", stdin=DEPLOYMENT)[1]
    assert "\x1b[" not in plain
    assert "\x1b[" in coloured


def test_mutate_keeps_document_order_lists_and_other_kinds() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n---\n"
        + DEPLOYMENT
        + "---\napiVersion: v1\nkind: List\nitems:\n- "
        + NODE.replace("\n", "\n  ").rstrip()
        + "\n"
    )
    result = CliRunner().invoke(main, ["mutate", "-"], input=text)
    assert result.exit_code == 0, result.stderr
    docs = result.stdout.split("---\n")[1:]
    assert [d.splitlines()[1] for d in docs] == [
        "kind: ConfigMap",
        "kind: Deployment",
        "kind: List",
    ]
    assert "node.kubernetes.io/not-ready" in docs[1]


def test_mutate_prints_nothing_when_an_input_is_unusable() -> None:
    result = CliRunner().invoke(main, ["mutate", "-"], input=DEPLOYMENT + "---\nkind: [\n")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("<stdin>:")


def _run(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "webhooks", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_mutate_output_is_a_fixed_point_for_check_in_a_real_pipeline() -> None:
    manifests = b"".join(b"---\n" + p.read_bytes() for p in sorted(DEPLOY.glob("*.yaml")))
    mutated = _run("mutate", "-", stdin=manifests)
    assert mutated.returncode in (0, 1), mutated.stderr
    checked = _run("check", "--fail-on-mutation", "--output", "json", "-", stdin=mutated.stdout)
    report = json.loads(checked.stdout)
    assert report["summary"]["objects"] == 4
    assert report["summary"]["mutations"] == 0
    assert all(not o["mutations"] for o in report["objects"])
    assert checked.returncode == mutated.returncode


def test_check_on_the_acceptance_directory_lists_what_the_gpu_job_receives() -> None:
    result = _run("check", str(DEPLOY), stdin=b"")
    text = result.stdout.decode()
    assert result.returncode in (0, 1)
    gpu = "pods of Job ml/train-resnet: added nvidia.com/gpu:NoSchedule (Exists)"
    assert f"{DEPLOY / 'gpu-job.yaml'}:1: extended-resource-toleration: {gpu}" in text
    assert f"{DEPLOY / 'node-exporter-daemonset.yaml'}:1: " in text


def test_every_violation_on_the_acceptance_directory_points_at_its_field() -> None:
    result = _run("check", "--output", "json", str(DEPLOY), stdin=b"")
    report = json.loads(result.stdout)
    violations = [(o["path"], v) for o in report["objects"] for v in o["violations"]]
    if not violations:
        pytest.skip("no validating plugin in this tree reports on the acceptance manifests")
    assert result.returncode == 1
    for path, violation in violations:
        tokens = parse_field(violation["field"])
        if not tokens:
            continue
        line = Path(path).read_text().splitlines()[violation["line"] - 1]
        last = tokens[-1]
        if isinstance(last, int):
            assert line.lstrip().startswith("- "), (path, violation)
        else:
            assert str(last) in line, (path, violation)


def test_objects_files_supply_cluster_context(tmp_path: Path) -> None:
    objects = tmp_path / "cluster.yaml"
    objects.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
    code, out, _ = _check("--objects", str(objects), "--output", "json", "-", stdin=NODE)
    assert code == 0
    assert json.loads(out)["summary"]["objects"] == 1
    code, _, err = _check("--objects", str(tmp_path / "missing.yaml"), "-", stdin=NODE)
    assert code == 2
    assert "missing.yaml: cannot read" in err


def test_an_unwritable_output_file_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _check(
        "--output", f"json={tmp_path / 'no' / 'such' / 'dir.json'}", "-", stdin=NODE
    )
    assert code == 2
    assert "cannot write" in err


@pytest.fixture
def with_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI over this tree's plugins plus the stand-in validators of tests/offline/fakes."""
    registry = Registry([*ORDER, *fakes.FAKES])
    monkeypatch.setattr(commands, "REGISTRY", registry)
    monkeypatch.setattr(commands, "load_config", lambda path: load_config(None, registry))


def test_check_names_each_violation_with_file_and_line(with_fakes: None) -> None:
    code, out, _ = _check(str(DEPLOY))
    assert code == 1
    assert f"{DEPLOY / 'gpu-node.yaml'}:15: taint-effects: unsupported effect" in out
    assert f"{DEPLOY / 'web-deployment.yaml'}:25: hostname-only: " in out


def test_mutate_prints_everything_and_reports_violations_on_stderr(with_fakes: None) -> None:
    result = CliRunner().invoke(main, ["mutate", str(DEPLOY)])
    assert result.exit_code == 1
    assert result.stdout.count("\n---\n") + result.stdout.startswith("---\n") == 4
    assert f"{DEPLOY / 'gpu-node.yaml'}:15: taint-effects: " in result.stderr
    assert "key: node.kubernetes.io/unschedulable" in result.stdout

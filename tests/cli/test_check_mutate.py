"""``check`` and ``mutate`` as a user runs them: exit codes, stdin, outputs, a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import webhooks.cli.check as check_command
import webhooks.cli.mutate as mutate_command
from tests.command import ROOT, invoke_cli, run_cli
from tests.dryrun import fakes
from webhooks.core.config import load_config
from webhooks.core.plugin import Registry
from webhooks.dryrun import engine as commands
from webhooks.dryrun import run
from webhooks.manifests.decode import decode
from webhooks.manifests.reader import parse_field
from webhooks.manifests.tree import depth
from webhooks.plugins import ORDER

#: ``--schema`` at a fixed Kubernetes version, so a newer kubernetes-validate (whose newest
#: schemas are the default) cannot change what these tests see.
SCHEMA = ("--schema", "--kubernetes-version", "1.37")
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
    result = invoke_cli(["check", *args], stdin=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "code"),
    [
        (["-"], NODE, 0),
        (["-"], DEPLOYMENT, 0),
        (["--fail-on-mutation", "-"], DEPLOYMENT, 1),
        (["--fail-on-mutation", "-"], NODE, 0),
        ([*SCHEMA, "-"], UNKNOWN_FIELD, 1),
        ([*SCHEMA, "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndatta: {}\n", 1),
        ([*SCHEMA, "-"], "apiVersion: example.com/v1\nkind: Widget\nspec: {x: 1}\n", 1),
        (
            [*SCHEMA, "--missing-schemas", "skip", "-"],
            "apiVersion: example.com/v1\nkind: Widget\nspec: {x: 1}\n",
            0,
        ),
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
        "--schema fails a kind no schema covers, as kubeconform does",
        "--missing-schemas skip leaves kinds without a schema alone",
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
        (["--config", "/nonexistent/config.yaml", "-"], "cannot read: No such file or directory"),
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
    code, out, _ = _check(*SCHEMA, "-", stdin=UNKNOWN_FIELD)
    assert code == 1
    assert "<stdin>:15: schema: spec.template.spec: Additional properties are not allowed" in out
    assert out.count("tolerationz") == 1, "the same error after mutation is not repeated"


def test_schema_without_the_package_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes_validate", None)
    code, _, err = _check(*SCHEMA, "-", stdin=NODE)
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
    result = invoke_cli(["mutate", "-"], stdin=text)
    assert result.exit_code == 0, result.stderr
    docs = result.stdout.split("---\n")[1:]
    assert [d.splitlines()[1] for d in docs] == [
        "kind: ConfigMap",
        "kind: Deployment",
        "kind: List",
    ]
    assert "node.kubernetes.io/not-ready" in docs[1]


def test_mutate_prints_nothing_when_an_input_is_unusable() -> None:
    result = invoke_cli(["mutate", "-"], stdin=DEPLOYMENT + "---\nkind: [\n")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("<stdin>:")


@pytest.mark.parametrize("command", ["check", "mutate"])
@pytest.mark.parametrize(
    "document",
    [
        pytest.param("This is garbage\n", id="a text scalar"),
        pytest.param("- a\n- b\n", id="a list"),
        pytest.param("42\n", id="a number"),
    ],
)
def test_a_document_that_is_not_an_object_is_unusable_input(command: str, document: str) -> None:
    """kubectl refuses such a stream whole, so neither command may pass it or print it."""
    result = invoke_cli([command, "-"], stdin=DEPLOYMENT + "---\n" + document)
    assert result.exit_code == 2
    line = DEPLOYMENT.count("\n") + 2
    assert f"<stdin>:{line}: not a Kubernetes object: the document is a" in result.stderr
    if command == "mutate":
        assert result.stdout == ""


def _run(*args: str, stdin: bytes, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return run_cli(*args, stdin=stdin, timeout=timeout, text=False)


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
    """The CLI over this tree's plugins plus the stand-in validators of tests/dryrun/fakes."""
    registry = Registry([*ORDER, *fakes.FAKES])
    for module in (check_command, mutate_command):
        monkeypatch.setattr(module, "read_config_or_exit", lambda path: load_config(None, registry))
    monkeypatch.setattr(check_command, "REGISTRY", registry)
    monkeypatch.setattr(run, "REGISTRY", registry)


def test_check_names_each_violation_with_file_and_line(with_fakes: None) -> None:
    code, out, _ = _check(str(DEPLOY))
    assert code == 1
    assert f"{DEPLOY / 'gpu-node.yaml'}:15: taint-effects: unsupported effect" in out
    assert f"{DEPLOY / 'web-deployment.yaml'}:25: hostname-only: " in out


def test_mutate_prints_everything_and_reports_violations_on_stderr(with_fakes: None) -> None:
    result = invoke_cli(["mutate", str(DEPLOY)])
    assert result.exit_code == 1
    assert result.stdout.count("\n---\n") + result.stdout.startswith("---\n") == 4
    assert f"{DEPLOY / 'gpu-node.yaml'}:15: taint-effects: " in result.stderr
    assert "key: node.kubernetes.io/unschedulable" in result.stdout


# --- hostile input: kubectl's outcome, or one `file:line: reason` line and exit 2 -----------


def _bomb() -> str:
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: lol}", "data:"]
    lines.append('  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _deep_pod(levels: int) -> str:
    # A Pod with an unknown field nested `levels` lists deep, in flow style.
    return (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: deep\nspec:\n"
        "  containers: [{name: c, image: nginx}]\n"
        "  extra: " + "[" * levels + "]" * levels + "\n"
    )


def _deep_crd(levels: int) -> str:
    # A CustomResourceDefinition whose schema nests `levels` objects: the schema descends.
    schema = "{type: object, properties: {a: " * levels + "{type: string}" + "}}" * levels
    return (
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: widgets.example.com}\nspec:\n  group: example.com\n"
        "  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n"
        "  - name: v1\n    served: true\n    storage: true\n"
        f"    schema: {{openAPIV3Schema: {schema}}}\n"
    )


def _one_line_error(err: str, start: str) -> None:
    lines = err.strip().splitlines()
    assert lines and lines[0].startswith(start), err
    assert "Traceback" not in err


def test_an_alias_bomb_is_refused_at_its_line_without_expanding_it() -> None:
    code, _, err = _check(*SCHEMA, "-", stdin=_bomb())
    assert code == 2
    _one_line_error(err, "<stdin>:")
    assert "excessive aliasing" in err


@pytest.mark.parametrize("command", ["check", "mutate"])
def test_depth_500_checks_and_mutates_end_to_end(command: str) -> None:
    result = invoke_cli([command, "-"], stdin=_deep_pod(500))
    assert result.exit_code == 0, result.stderr
    if command == "mutate":
        again = invoke_cli(["check", "--fail-on-mutation", "-"], stdin=result.stdout)
        assert again.exit_code == 0, again.stdout
        (written,) = [raw.value for raw in decode(result.stdout).documents]
        assert depth(written["spec"]["extra"]) == 500


def test_depth_500_passes_check_schema_with_the_unknown_field_reported() -> None:
    code, out, err = _check(*SCHEMA, "-", stdin=_deep_pod(500))
    assert code == 1, err
    assert '<stdin>:7: schema: spec: Additional properties are not allowed ("extra"' in out


def test_a_crd_whose_schema_nests_a_thousand_levels_passes_check_schema() -> None:
    code, out, err = _check(*SCHEMA, "--output", "json", "-", stdin=_deep_crd(500))
    assert (code, err) == (0, "")
    assert json.loads(out)["summary"]["schema"] == 0


def test_past_10000_levels_is_refused_as_kubectl_refuses_it() -> None:
    code, _, err = _check("-", stdin=_deep_pod(10_001))
    assert code == 2
    _one_line_error(err, "<stdin>:7: exceeded max depth of 10000")


def test_an_object_python_cannot_process_is_unusable_input(monkeypatch: pytest.MonkeyPatch) -> None:
    def recurse(*args: object) -> None:
        raise RecursionError

    monkeypatch.setattr(commands.Engine, "admit", recurse)
    code, _, err = _check("-", stdin=_deep_pod(3))
    assert code == 2
    _one_line_error(err, "<stdin>:1: nested too deeply to check (5 levels)")
    result = invoke_cli(["mutate", "-"], stdin=_deep_pod(3))
    assert (result.exit_code, result.stdout) == (2, "")


ALIASED = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
scheduling:
  nodeSelector: {sandbox: gvisor}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: &labels
    app: web
spec:
  runtimeClassName: gvisor
  nodeSelector: *labels
  containers: [{name: web, image: nginx}]
"""


def test_an_aliased_node_selector_does_not_write_into_the_labels() -> None:
    result = invoke_cli(["mutate", "-"], stdin=ALIASED)
    assert result.exit_code == 0, result.stderr
    pod = yaml.safe_load_all(result.stdout)
    stored = next(doc for doc in pod if doc["kind"] == "Pod")
    assert stored["metadata"]["labels"] == {"app": "web"}
    assert stored["spec"]["nodeSelector"] == {"app": "web", "sandbox": "gvisor"}


POD_JSON = (
    '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s"}, "spec": {"containers": []}}'
)
READ_AS_KUBECTL = [
    ("UTF-16 with a byte-order mark", "\ufeff" + NODE, "utf-16-le", 1),
    (
        "a stream of JSON objects",
        (POD_JSON % "a") + (POD_JSON % "b") + "\n" + (POD_JSON % "c"),
        "utf-8",
        3,
    ),
    (
        "a separator with a comment",
        NODE + "---# the second\n" + NODE.replace("n1", "n2"),
        "utf-8",
        2,
    ),
]


@pytest.mark.parametrize(
    ("text", "encoding", "objects"),
    [r[1:] for r in READ_AS_KUBECTL],
    ids=[r[0] for r in READ_AS_KUBECTL],
)
def test_input_kubectl_reads_is_checked(
    tmp_path: Path, text: str, encoding: str, objects: int
) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes(text.encode(encoding))
    code, out, err = _check("--output", "json", str(path))
    assert err == ""
    assert code == 0
    assert json.loads(out)["summary"]["objects"] == objects


TOLERATION = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: nginx}]
  tolerations:
  - {key: k, operator: Exists, effect: NoExecute, tolerationSeconds: %s}
"""


@pytest.mark.parametrize("seconds", ["300.0", "1e3", "300"])
def test_integral_float_seconds_are_integers_as_the_api_server_receives_them(seconds: str) -> None:
    code, out, _ = _check(*SCHEMA, "--output", "json", "-", stdin=TOLERATION % seconds)
    assert code == 0, out
    assert json.loads(out)["summary"]["violations"] == 0


def test_infinite_seconds_are_refused_at_their_line() -> None:
    code, _, err = _check("-", stdin=TOLERATION % ".inf")
    assert code == 2
    _one_line_error(err, "<stdin>:7: .inf is not a number JSON can carry")


def test_a_path_without_manifests_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("not a manifest\n")
    code, out, err = _check(str(tmp_path))
    assert code == 2
    assert err == f"{tmp_path}: no manifests found: no *.yaml, *.yml or *.json file\n"
    assert "1 unusable input" in out


def test_schema_messages_show_values_as_json_and_cut_long_ones() -> None:
    text = TOLERATION.replace(
        "tolerationSeconds: %s", "value: yes, tolerationSeconds: " + "9" * 400
    )
    code, out, _ = _check(*SCHEMA, "-", stdin=text)
    assert code == 1
    assert "spec.tolerations[0].value: true is not of type string or null" in out
    assert "True" not in out
    schema = [line for line in out.splitlines() if ": schema: " in line]
    assert len(schema) == 2
    assert max(len(line) for line in schema) < 200, "a 400-digit value is cut"


SEGFAULT_CLASS = [
    ("an alias bomb under --schema", ["check", *SCHEMA, "-"], _bomb(), 2),
    ("30,000 levels of flow lists", ["check", "-"], _deep_pod(30_000), 2),
    ("30,000 levels of block lists", ["check", "-"], "a:\n" + "- " * 30_000 + "x\n", 2),
    ("10,000 levels through mutate", ["mutate", "-"], _deep_pod(9_996), 0),
]


@pytest.mark.parametrize(
    ("args", "stdin", "code"),
    [s[1:] for s in SEGFAULT_CLASS],
    ids=[s[0] for s in SEGFAULT_CLASS],
)
def test_input_that_crashed_the_process_now_gets_an_answer(
    args: list[str], stdin: str, code: int
) -> None:
    result = _run(*args, stdin=stdin.encode(), timeout=120)
    err = result.stderr.decode()
    assert result.returncode == code, err[-2000:]
    if code == 2:
        _one_line_error(err, "<stdin>:")
    else:
        assert err == ""


AS_KUBECTL = ROOT / "tests" / "fixtures" / "as-kubectl-reads"
SANDBOXED = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: shop}
spec:
  runtimeClassName: gvisor
  containers: [{name: c, image: nginx}]
"""


def test_objects_and_nodes_take_a_directory_as_paths_do() -> None:
    code, out, err = _check("--objects", str(AS_KUBECTL), "--output", "json", "-", stdin=SANDBOXED)
    assert (code, err) == (0, "")
    (obj,) = json.loads(out)["objects"]
    assert "runtime-class" in obj["mutations"][0]["plugins"]
    result = invoke_cli(
        ["explain", "--nodes", str(AS_KUBECTL / "nodes"), "--objects", str(AS_KUBECTL), "-"],
        stdin=SANDBOXED,
    )
    assert result.exit_code == 0, result.output
    assert "fits 1 of 2 nodes: worker-1" in result.stdout

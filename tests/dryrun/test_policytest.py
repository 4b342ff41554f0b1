"""``placement-webhooks test``: suites, results, subset matching, outputs and exit codes."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.command import invoke_cli, run_cli
from webhooks.dryrun import engine, judging
from webhooks.dryrun.judging import Verdict, differences
from webhooks.dryrun.policytest import Results, run_suites
from webhooks.dryrun.policytest_render import flow

ROOT = Path(__file__).parent.parent.parent
EXAMPLE = ROOT / "examples" / "policy-tests"

NAMESPACES = """\
apiVersion: v1
kind: Namespace
metadata: {name: ml, labels: {placement-webhooks.io/dedicated: gpu}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {env: prod}}
---
apiVersion: v1
kind: Namespace
metadata: {name: sandbox}
---
apiVersion: v1
kind: Namespace
metadata: {name: monitoring}
"""

GPU_TOLERATION = "{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}"
RESOURCES = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: intruder, namespace: shop}}
spec:
  containers: [{{name: app, image: nginx}}]
  tolerations: [{GPU_TOLERATION}]
---
apiVersion: v1
kind: Pod
metadata: {{name: quiet, namespace: sandbox}}
spec:
  containers: [{{name: app, image: nginx}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: exporter, namespace: monitoring, labels: {{app: exporter}}}}
spec:
  containers: [{{name: app, image: exporter}}]
  tolerations: [{{operator: Exists}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: storefront, namespace: shop}}
spec:
  selector: {{matchLabels: {{app: storefront}}}}
  template:
    metadata: {{labels: {{app: storefront}}}}
    spec:
      containers: [{{name: web, image: nginx}}]
      tolerations: [{GPU_TOLERATION}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: badkeys, namespace: shop}}
spec:
  selector: {{matchLabels: {{app: badkeys}}}}
  template:
    metadata: {{labels: {{app: badkeys}}}}
    spec:
      containers: [{{name: web, image: nginx}}]
      tolerations: [{{key: "bad key", operator: Exists}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: monitoring}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers: [{{name: agent, image: agent}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, namespace: shop}}
spec:
  selector: {{matchLabels: {{app: db}}}}
  serviceName: db
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers: [{{name: db, image: postgres}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: plain}}
spec:
  containers: [{{name: app, image: nginx}}]
---
apiVersion: v1
kind: Node
metadata: {{name: n1}}
spec:
  taints: [{{key: dedicated, value: gpu, effect: NoSchedule}}]
"""


def dedicated(**section: Any) -> dict[str, Any]:
    return {"plugins": {"dedicated-nodes": {"enabled": True, **section}}}


def excepting(plugins: list[str], **extra: Any) -> dict[str, Any]:
    exception = {"name": "exporter", "plugins": plugins, "namespaces": ["monitoring"], **extra}
    return {**dedicated(), "exceptions": [exception]}


def write_suite(
    directory: Path,
    expect: list[dict[str, Any]],
    config: Any = None,
    resources: str = RESOURCES,
    **extra: Any,
) -> Path:
    """A suite with the shared namespaces and resources; returns the suite file."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "namespaces.yaml").write_text(NAMESPACES)
    (directory / "workloads").mkdir(exist_ok=True)
    (directory / "workloads" / "all.yaml").write_text(resources)
    suite: dict[str, Any] = {"name": "suite", "objects": ["namespaces.yaml"]}
    suite["resources"] = ["workloads/"]
    if config is not None:
        suite["config"] = config
    suite.update(extra)
    suite["expect"] = expect
    path = directory / "policy.test.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def one(tmp_path: Path, expectation: dict[str, Any], config: Any = None) -> Verdict:
    results = run_suites([str(write_suite(tmp_path, [expectation], config))])
    assert not results.problems, results.problems
    (verdict,) = results.verdicts
    return verdict


def pod(namespace: str, name: str) -> dict[str, str]:
    return {"kind": "Pod", "namespace": namespace, "name": name}


def cli(*args: str) -> tuple[int, str, str]:
    result = invoke_cli(["test", *args])
    return result.exit_code, result.stdout, result.stderr


# --- what each result means ------------------------------------------------------------------

OVERRIDE = [{"namespaceSelector": {"matchLabels": {"env": "prod"}}, "action": "enforce"}]
STOREFRONT = {"kind": "Deployment", "namespace": "shop", "name": "storefront"}
NO_RULES = {**dedicated(), "plugins": {"taint-toleration-rules": {"enabled": False}}}

RESULT_CASES = [
    ("an enforced violation by the plugin is fail",
     dedicated(), pod("shop", "intruder"), "dedicated-nodes", "fail"),
    ("a warn-mode violation is warn",
     dedicated(action="warn"), pod("shop", "intruder"), "dedicated-nodes", "warn"),
    ("an audit-mode violation is warn too",
     dedicated(action="audit"), pod("shop", "intruder"), "dedicated-nodes", "warn"),
    ("an override that enforces in the object's namespace makes it fail",
     dedicated(action="warn", actionOverrides=OVERRIDE), pod("shop", "intruder"),
     "dedicated-nodes", "fail"),
    ("a plugin that judged the object and found nothing is pass",
     dedicated(), pod("sandbox", "quiet"), "dedicated-nodes", "pass"),
    ("another plugin's violation leaves this plugin pass",
     dedicated(), pod("shop", "badkeys-pod"), "dedicated-nodes", "pass"),
    ("without a plugin, any enforced violation is fail",
     dedicated(), pod("shop", "badkeys-pod"), None, "fail"),
    ("a violation in a workload's template is fail for its Pods too",
     dedicated(), pod("shop", "badkeys-pod"), "taint-toleration-rules", "fail"),
    ("without a plugin, a warn-mode violation and no enforced one is warn",
     dedicated(action="warn"), pod("shop", "intruder"), None, "warn"),
    ("an exception that applies to the plugin is skip",
     excepting(["dedicated-nodes"]), pod("monitoring", "exporter"), "dedicated-nodes", "skip"),
    ("exemptNamespaces, an exception for the validating half, is skip",
     dedicated(exemptNamespaces=["monitoring"]), pod("monitoring", "exporter"),
     "dedicated-nodes", "skip"),
    ("exemptNamespaces with enforcement off skips nothing: pass",
     dedicated(enforce=False, exemptNamespaces=["monitoring"]), pod("monitoring", "exporter"),
     "dedicated-nodes", "pass"),
    ("an expired exception no longer applies: the violation decides",
     excepting(["dedicated-nodes"], expires="2020-01-01T00:00:00Z"),
     pod("monitoring", "exporter"), "dedicated-nodes", "fail"),
    ("without a plugin, an exception for one plugin leaves the chain pass",
     excepting(["dedicated-nodes"]), pod("monitoring", "exporter"), None, "pass"),
    ("without a plugin, exceptions for every plugin make it skip",
     excepting(["*"]), pod("monitoring", "exporter"), None, "skip"),
    ("a plugin that does not admit the kind is skip (dedicated-nodes judges Pods only)",
     dedicated(), STOREFRONT, "dedicated-nodes", "skip"),
    ("a workload is judged apart from its Pods",
     dedicated(), STOREFRONT, None, "pass"),
    ("the workload's Pods are judged as the controller creates them",
     dedicated(), pod("shop", "storefront-pod"), "dedicated-nodes", "fail"),
    ("a plugin the config leaves disabled is skip, not pass",
     None, pod("sandbox", "quiet"), "dedicated-nodes", "skip"),
    ("a kind no enabled plugin admits is skip for the whole chain",
     NO_RULES, {"kind": "Node", "name": "n1"}, None, "skip"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("config", "resource", "plugin", "result"),
    [case[1:] for case in RESULT_CASES],
    ids=[case[0] for case in RESULT_CASES],
)
def test_results(
    tmp_path: Path, config: Any, resource: dict[str, str], plugin: str | None, result: str
) -> None:
    expectation: dict[str, Any] = {"resource": resource, "result": result}
    if plugin is not None:
        expectation["plugin"] = plugin
    verdict = one(tmp_path, expectation, config)
    assert verdict.found == result, verdict.reasons
    assert verdict.passed


SKIP_REASONS = [
    ("a disabled plugin says so", None, pod("sandbox", "quiet"), "dedicated-nodes",
     "dedicated-nodes is not enabled in the config"),
    ("a plugin for other kinds says which it admits", dedicated(), STOREFRONT, "dedicated-nodes",
     "dedicated-nodes does not admit deployments.apps (it admits pods)"),
    ("an exception is named", excepting(["dedicated-nodes"]), pod("monitoring", "exporter"),
     "dedicated-nodes", "exception exporter skips dedicated-nodes for this object"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("config", "resource", "plugin", "reason"),
    [case[1:] for case in SKIP_REASONS],
    ids=[case[0] for case in SKIP_REASONS],
)
def test_skip_says_why(
    tmp_path: Path, config: Any, resource: dict[str, str], plugin: str, reason: str
) -> None:
    verdict = one(tmp_path, {"resource": resource, "plugin": plugin, "result": "pass"}, config)
    assert verdict.found == "skip"
    assert verdict.reasons == (reason,)


# --- which object a resource names -----------------------------------------------------------

OBJECT_CASES = [
    ("a workload's name means the workload as admission stores it",
     {"kind": "DaemonSet", "namespace": "monitoring", "name": "agent"},
     {"spec": {"template": {"spec": {"tolerations": [
         {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}}}}),
    ("<workload>-pod means the Pod its controller would create",
     pod("shop", "storefront-pod"),
     {"metadata": {"labels": {"app": "storefront"},
                   "ownerReferences": [{"kind": "ReplicaSet", "name": "storefront"}]},
      "spec": {"tolerations": [
          {"key": "node.kubernetes.io/not-ready", "tolerationSeconds": 300}]}}),
    ("a StatefulSet's Pod is <name>-pod too, whatever name the controller gives it",
     pod("shop", "db-pod"), {"metadata": {"name": "db-0"}}),
    ("a namespace left out means default, as for the manifest",
     {"kind": "Pod", "name": "plain"}, {"metadata": {"namespace": "default"}}),
    ("a Node has no namespace",
     {"kind": "Node", "name": "n1"}, {"spec": {"taints": [{"key": "dedicated"}]}}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("resource", "subset"),
    [case[1:] for case in OBJECT_CASES],
    ids=[case[0] for case in OBJECT_CASES],
)
def test_resources_name_the_stored_object(
    tmp_path: Path, resource: dict[str, str], subset: dict[str, Any]
) -> None:
    verdict = one(tmp_path, {"resource": resource, "result": "pass", "object": subset})
    assert verdict.differences == ()
    assert verdict.passed, verdict.reasons


def test_a_pod_manifest_named_like_a_workloads_pod_wins(tmp_path: Path) -> None:
    literal = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: db-pod, namespace: shop}\n"
    literal += "spec: {containers: [{name: app, image: mine}]}\n"
    path = write_suite(
        tmp_path,
        [{"resource": pod("shop", "db-pod"), "result": "pass", "object": {"kind": "Pod"}}],
        resources=RESOURCES + literal,
    )
    (verdict,) = run_suites([str(path)]).verdicts
    assert verdict.subject == "Pod shop/db-pod"


UNKNOWN_CASES = [
    ("a name nothing has is a failure that names it", pod("sandbox", "nope"),
     "no Pod sandbox/nope among the resources (Pod objects there: default/plain, "),
    ("a Pod named after no workload hints at <workload>-pod", pod("shop", "storefront"),
     "a workload's Pods are named <workload>-pod"),
    ("a Namespace is cluster context, never admitted",
     {"kind": "Namespace", "name": "ml"}, "Namespace objects are cluster context"),
    ("a workload nothing has names it", STOREFRONT | {"name": "shopfront"},
     "no Deployment shop/shopfront among the resources (Deployment objects there: "
     "shop/badkeys, shop/storefront)"),
    ("a kind that is not admitted says which are",
     {"kind": "ConfigMap", "name": "x"}, "kind ConfigMap is not admitted (admitted: Pod,"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("resource", "message"),
    [case[1:] for case in UNKNOWN_CASES],
    ids=[case[0] for case in UNKNOWN_CASES],
)
def test_an_unknown_resource_fails_and_names_it(
    tmp_path: Path, resource: dict[str, str], message: str
) -> None:
    verdict = one(tmp_path, {"resource": resource, "result": "pass"})
    assert verdict.found is None
    assert not verdict.passed
    assert message in verdict.reasons[0]


def test_two_objects_of_one_name_are_ambiguous(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path, [{"resource": pod("sandbox", "quiet"), "result": "pass"}], resources=RESOURCES * 2
    )
    (verdict,) = run_suites([str(path)]).verdicts
    assert verdict.found is None
    assert "Pod sandbox/quiet names 2 admitted objects" in verdict.reasons[0]


# --- subset matching -------------------------------------------------------------------------

TOLERATIONS = {
    "tolerations": [
        {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "b", "operator": "Equal", "value": "1"},
    ]
}
SUBSET_CASES = [
    ("a map matches when every expected key matches, whatever else is there",
     {"tolerations": []}, TOLERATIONS, []),
    ("an empty map matches any map", {}, TOLERATIONS, []),
    ("list elements match in any order",
     {"tolerations": [{"key": "b"}, {"key": "a"}]}, TOLERATIONS, []),
    ("an expected list element may be a subset of an actual one",
     {"tolerations": [{"key": "a", "effect": "NoSchedule"}]}, TOLERATIONS, []),
    ("a list element that matches none is reported at the list",
     {"tolerations": [{"key": "a", "effect": "NoExecute"}]}, TOLERATIONS,
     [("tolerations", "no element")]),
    ("a key the object lacks never matches, even null",
     {"nodeSelector": None}, TOLERATIONS, [("nodeSelector", "missing")]),
    ("a string is not a number", {"n": 300}, {"n": "300"}, [("n", "different")]),
    ("a boolean is not a number", {"n": True}, {"n": 1}, [("n", "different")]),
    ("a map where a list is expected is different",
     {"tolerations": [{"key": "a"}]}, {"tolerations": {"key": "a"}},
     [("tolerations", "different")]),
    ("a list where a map is expected is different",
     {"tolerations": {"key": "a"}}, TOLERATIONS, [("tolerations", "different")]),
    ("keys with dots are bracketed in the path",
     {"metadata": {"labels": {"app.kubernetes.io/name": "x"}}},
     {"metadata": {"labels": {}}}, [("metadata.labels[app.kubernetes.io/name]", "missing")]),
    ("every difference is reported, not just the first",
     {"a": 1, "b": {"c": 2}}, {"a": 2, "b": {"c": 3}}, [("a", "different"), ("b.c", "different")]),
    ("scalars inside lists must be equal",
     {"values": ["gpu", "tpu"]}, {"values": ["gpu"]}, [("values", "no element")]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("expected", "actual", "found"),
    [case[1:] for case in SUBSET_CASES],
    ids=[case[0] for case in SUBSET_CASES],
)
def test_subset_matching(expected: Any, actual: Any, found: list[tuple[str, str]]) -> None:
    assert [(d.where, d.problem) for d in differences(expected, actual)] == found


FLOW_CASES = [
    ("maps and lists read like a test file",
     {"key": "dedicated", "values": ["gpu"]}, "{key: dedicated, values: [gpu]}"),
    ("strings that would read as other types are quoted",
     ["true", "300", "", True, 300, None], '["true", "300", "", true, 300, null]'),
    ("long values are cut", "x" * 300, "x" * 200 + "…"),
    ("long lists are cut", list(range(100)), ", ".join(map(str, range(100)))[:199].join("[…")),
    ("long maps are cut", {f"k{i}": i for i in range(100)},
     "{" + ", ".join(f"k{i}: {i}" for i in range(100))[:199] + "…"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "shown"), [c[1:] for c in FLOW_CASES], ids=[c[0] for c in FLOW_CASES]
)
def test_values_are_shown_in_flow_style(value: Any, shown: str) -> None:
    assert flow(value) == shown


def test_a_deep_found_value_is_shown_without_recursing_into_all_of_it() -> None:
    deep: Any = "bottom"
    for _ in range(5000):
        deep = {"a": deep}
    assert flow(deep).startswith("{a: {a: ")
    assert "{…}" in flow(deep)


def test_a_failure_shows_what_was_expected_and_what_was_found(tmp_path: Path) -> None:
    subset = {
        "metadata": {"labels": {"app": "storefront", "tier": "web"}},
        "spec": {"priority": "high", "tolerations": [{"key": "dedicated", "value": "tpu"}]},
    }
    expectation = {"resource": pod("shop", "storefront-pod"), "result": "fail", "object": subset}
    path = write_suite(tmp_path, [expectation], dedicated())
    code, out, _ = cli(str(path))
    assert code == 1
    assert out.splitlines()[1:-1] == [
        "    result: fail, as expected (pods of Deployment shop/storefront)",
        "    object metadata.labels.tier: missing",
        "      expected: web",
        "      found:    no such key (keys there: app)",
        "    object spec.priority: missing",
        "      expected: high",
        "      found:    no such key (keys there: containers, tolerations)",
        "    object spec.tolerations: no element contains the expected one",
        "      expected: {key: dedicated, value: tpu}",
        "      found:    3 elements:",
        "        - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}",
        "        - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, "
        "tolerationSeconds: 300}",
        "        - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, "
        "tolerationSeconds: 300}",
    ]
    different = {**expectation, "object": {"metadata": {"labels": {"app": "shop"}}}}
    code, out, _ = cli(str(write_suite(tmp_path / "b", [different], dedicated())))
    assert out.splitlines()[2:5] == [
        "    object metadata.labels.app: different",
        "      expected: shop",
        "      found:    storefront",
    ]


def test_junit_names_where_the_object_differs(tmp_path: Path) -> None:
    subset = {"metadata": {"labels": {"tier": "web"}}, "spec": {"priority": "high"}}
    expectation = {"resource": pod("sandbox", "quiet"), "result": "pass", "object": subset}
    report = tmp_path / "report.xml"
    cli(str(write_suite(tmp_path, [expectation])), "-o", f"junit={report}")
    failure = ET.fromstring(report.read_text()).find(".//failure")
    assert failure is not None
    assert failure.get("message") == "object differs at metadata.labels, spec.priority"


def test_an_object_too_deep_to_compare_is_unusable_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def recurse(*args: object, **kwargs: object) -> None:
        raise RecursionError

    monkeypatch.setattr(judging, "differences", recurse)
    expectation = {"resource": pod("sandbox", "quiet"), "result": "pass", "object": {}}
    results = run_suites([str(write_suite(tmp_path, [expectation]))])
    assert [p.reason for p in results.problems] == ["object: nested too deeply to compare"]


def test_resources_the_dry_run_cannot_admit_are_unusable_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def recurse(*args: object, **kwargs: object) -> None:
        raise RecursionError

    monkeypatch.setattr(engine.Engine, "admit", recurse)
    results = run_suites([str(write_suite(tmp_path, [QUIET]))])
    assert results.verdicts == []
    assert results.problems[0].reason.startswith("nested too deeply to check")


# --- configs, objects, discovery -------------------------------------------------------------


def test_a_config_path_is_relative_to_the_suite(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(dedicated()))
    path = write_suite(
        tmp_path / "suites",
        [{"resource": pod("shop", "intruder"), "plugin": "dedicated-nodes", "result": "fail"}],
        config="../policy.yaml",
    )
    assert run_suites([str(path)]).verdicts[0].passed


def test_an_inline_config_is_a_mapping(tmp_path: Path) -> None:
    verdict = one(
        tmp_path,
        {"resource": pod("shop", "intruder"), "plugin": "dedicated-nodes", "result": "warn"},
        dedicated(action="warn"),
    )
    assert verdict.passed


def test_objects_give_the_namespaces_their_labels(tmp_path: Path) -> None:
    expectation = {
        "resource": pod("ml", "train"),
        "plugin": "dedicated-nodes",
        "result": "pass",
        "object": {"spec": {"tolerations": [{"key": "dedicated", "value": "gpu"}]}},
    }
    train = "apiVersion: v1\nkind: Pod\nmetadata: {name: train, namespace: ml}\n"
    train += "spec: {containers: [{name: t, image: t}]}\n"
    with_objects = write_suite(tmp_path / "a", [expectation], dedicated(), resources=train)
    assert run_suites([str(with_objects)]).verdicts[0].passed
    without = write_suite(tmp_path / "b", [expectation], dedicated(), resources=train)
    text = without.read_text().replace("objects:\n- namespaces.yaml\n", "")
    without.write_text(text)
    (verdict,) = run_suites([str(without)]).verdicts
    assert [d.where for d in verdict.differences] == ["spec.tolerations"]


def test_suites_are_found_recursively_as_the_manifest_reader_walks(tmp_path: Path) -> None:
    expectation = [{"resource": pod("sandbox", "quiet"), "result": "pass"}]
    for name in ("b", "a/z", "a/c", ".hidden"):
        write_suite(tmp_path / name, expectation)
    (tmp_path / "a" / "c" / "notes.yaml").write_text("name: not a suite\n")
    results = run_suites([str(tmp_path)])
    assert not results.problems
    assert [Path(v.suite.path).parent.name for v in results.verdicts] == [
        ".hidden",
        "c",
        "z",
        "b",
    ], "kubectl's order, hidden directories included"


def test_a_file_named_on_the_command_line_runs_whatever_its_name(tmp_path: Path) -> None:
    path = write_suite(tmp_path, [{"resource": pod("sandbox", "quiet"), "result": "pass"}])
    renamed = path.rename(tmp_path / "suite.yaml")
    assert run_suites([str(renamed)]).verdicts[0].passed


def test_each_yaml_document_is_a_suite(tmp_path: Path) -> None:
    path = write_suite(tmp_path, [{"resource": pod("sandbox", "quiet"), "result": "pass"}])
    text = path.read_text()
    path.write_text(text + "---\n" + text.replace("name: suite", "name: again"))
    results = run_suites([str(path)])
    assert results.suites == 2
    assert [v.suite.name for v in results.verdicts] == ["suite", "again"]


# --- unusable input: exit 2, one line each ---------------------------------------------------

QUIET = {"resource": pod("sandbox", "quiet"), "result": "pass"}


def _replace(old: str, new: str) -> Any:
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new)

    return edit


UNUSABLE_CASES = [
    ("a suite that does not parse", _replace("name: suite", "name: [suite"),
     "policy.test.yaml:2: invalid YAML"),
    ("a suite without a name", _replace("name: suite\n", ""),
     "policy.test.yaml:1: name: required"),
    ("an unknown key in a suite", _replace("name: suite", "name: suite\nnamespace: x"),
     "policy.test.yaml:2: namespace: unknown key (known keys: name, config, objects,"),
    ("a config that does not load names the file and the key",
     _replace("name: suite", "name: suite\nconfig: bad.yaml"),
     "policy.test.yaml:2: config: {dir}/bad.yaml: plugins.nope: unknown plugin"),
    ("an inline config with an unknown key points at the key's line",
     _replace("name: suite", "name: suite\nconfig:\n  plugins:\n    nope: {}"),
     "policy.test.yaml:4: config.plugins.nope: unknown plugin"),
    ("a resources path that does not exist",
     _replace("- workloads/", "- missing/"),
     "policy.test.yaml:5: resources: missing/: no such file or directory"),
    ("an objects file that does not parse is reported at its own line",
     _replace("- namespaces.yaml", "- broken.yaml"), "broken.yaml:2: invalid YAML"),
    ("a suite without expectations", _replace("expect:\n- resource", "other:\n- resource"),
     "policy.test.yaml:6: other: unknown key"),
    ("an unknown plugin", _replace("result: pass", "result: pass\n  plugin: dedicated"),
     "policy.test.yaml:12: expect[0].plugin: unknown plugin 'dedicated' (known plugins: "),
    ("an unknown result", _replace("result: pass", "result: passes"),
     "policy.test.yaml:11: expect[0].result: must be one of pass, fail, warn, skip, got 'passes'"),
    ("a resource without a kind", _replace("    kind: Pod\n", ""),
     "policy.test.yaml:7: expect[0].resource.kind: required: a non-empty string"),
    ("a suite that is not a mapping", lambda text: "- name: suite\n",
     "policy.test.yaml:1: a test suite must be a mapping"),
    ("a config of another type", _replace("name: suite", "name: suite\nconfig: [a]"),
     "policy.test.yaml:2: config: must be a path relative to this file, or a mapping"),
    ("a suite without resources", _replace("resources:\n- workloads/\n", ""),
     "policy.test.yaml:1: resources: required: a list of paths"),
    ("objects that are not paths", _replace("- namespaces.yaml", "- {a: b}"),
     "policy.test.yaml:2: objects: must be a list of paths"),
    ("a resource that does not parse is reported at its own line",
     _replace("- workloads/", "- broken.yaml"), "broken.yaml:2: invalid YAML"),
    ("a suite without expect", _replace("expect:\n- resource", "expect: []\nx:\n- resource"),
     "policy.test.yaml:7: x: unknown key"),
    ("an empty expect", lambda text: text.split("expect:")[0] + "expect: []\n",
     "policy.test.yaml:6: expect: required: a list of expectations"),
    ("an expectation that is not a mapping",
     lambda text: text.split("expect:")[0] + "expect: [pass]\n",
     "policy.test.yaml:6: expect[0]: must be a mapping with resource and result"),
    ("a resource that is not a mapping", _replace("- resource:\n", "- resource: Pod\n  object:\n"),
     "policy.test.yaml:7: expect[0].resource: required: a mapping"),
    ("an object that is not a mapping", _replace("result: pass", "result: pass\n  object: []"),
     "policy.test.yaml:12: expect[0].object: must be a mapping"),
    ("a name YAML reads as a boolean, as kubectl does", _replace("name: quiet", "name: y"),
     'policy.test.yaml:10: expect[0].resource.name: must be a string, got true (quote the value)'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "message"),
    [case[1:] for case in UNUSABLE_CASES],
    ids=[case[0] for case in UNUSABLE_CASES],
)
def test_unusable_input_exits_2_with_file_line_reason(
    tmp_path: Path, edit: Any, message: str
) -> None:
    path = write_suite(tmp_path, [QUIET])
    (tmp_path / "bad.yaml").write_text("plugins: {nope: {}}\n")
    (tmp_path / "broken.yaml").write_text("kind: [\n")
    path.write_text(edit(path.read_text()))
    code, out, err = cli(str(path))
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith(str(tmp_path / message.format(dir=tmp_path)).replace("//", "/")), line
    assert out.splitlines()[-1].endswith("; 1 unusable input")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "{p}/nothing: no such file or directory"),
        (lambda p: (p / "nothing").mkdir(), "{p}/nothing: no test suites found: no *.test.yaml"),
        (lambda p: (p / "nothing").write_text("# empty\n"), "{p}/nothing: no test suite: the file"),
    ],
    ids=["a PATH that does not exist", "a directory without suites", "an empty suite file"],
)
def test_a_path_without_suites_exits_2(tmp_path: Path, make: Any, message: str) -> None:
    make(tmp_path)
    code, _, err = cli(str(tmp_path / "nothing"))
    assert code == 2
    assert err.startswith(message.format(p=tmp_path))


def test_no_path_is_a_usage_error() -> None:
    code, _, err = cli()
    assert code == 2
    assert "no input" in err


def test_other_suites_still_run_beside_an_unusable_one(tmp_path: Path) -> None:
    write_suite(tmp_path / "good", [QUIET])
    bad = write_suite(tmp_path / "bad", [QUIET])
    bad.write_text(bad.read_text().replace("name: suite\n", ""))
    code, out, _ = cli(str(tmp_path))
    assert code == 2
    assert out.startswith("PASS ")
    assert "1 expectation in 1 suite: 1 passed, 0 failed; 1 unusable input" in out


# --- the command: exit codes, text and JUnit -------------------------------------------------


def test_exit_0_when_every_expectation_holds_1_when_one_does_not(tmp_path: Path) -> None:
    good = write_suite(tmp_path / "good", [QUIET])
    assert cli(str(good))[0] == 0
    wrong = {**QUIET, "result": "fail"}
    bad = write_suite(tmp_path / "bad", [QUIET, wrong])
    code, out, err = cli(str(bad))
    assert code == 1
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"PASS {bad}:7: suite: Pod sandbox/quiet: pass"
    assert lines[1] == f"FAIL {bad}:12: suite: Pod sandbox/quiet: fail"
    assert lines[2] == "    result: expected fail, found pass (Pod sandbox/quiet)"
    assert lines[-1] == "2 expectations in 1 suite: 1 passed, 1 failed"


def test_junit_to_a_file_and_text_still_to_stdout(tmp_path: Path) -> None:
    wrong = {"resource": pod("shop", "intruder"), "plugin": "dedicated-nodes", "result": "pass"}
    unknown = {**QUIET, "resource": pod("x", "nobody")}
    path = write_suite(tmp_path, [QUIET, wrong, unknown], dedicated())
    report = tmp_path / "report.xml"
    code, out, _ = cli(str(path), "--output", f"junit={report}")
    assert code == 1
    assert out.startswith("PASS ")
    root = ET.fromstring(report.read_text())
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "2", "0")
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "suite"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "Pod sandbox/quiet: pass",
        "Pod shop/intruder [dedicated-nodes]: pass",
        "Pod x/nobody: pass",
    ]
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure is not None
    assert failure.get("message") == "expected pass, found fail"
    assert "dedicated-nodes: toleration dedicated=gpu:NoSchedule (Equal)" in (failure.text or "")
    unknown = cases[2].find("failure")
    assert unknown is not None
    assert (unknown.get("message") or "").startswith("no Pod x/nobody among the resources")


def test_junit_lists_unusable_input_as_errors(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    code, _, _ = cli(str(tmp_path / "missing"), "-o", f"junit={report}")
    assert code == 2
    root = ET.fromstring(report.read_text())
    assert root.get("errors") == "1"
    (error,) = root.findall(".//testcase/error")
    assert "no such file or directory" in (error.get("message") or "")


def test_junit_alone_on_stdout_replaces_the_text(tmp_path: Path) -> None:
    code, out, _ = cli(str(write_suite(tmp_path, [QUIET])), "-o", "junit")
    assert code == 0
    assert out.startswith('<?xml version="1.0"')


def test_results_count_failures_and_problems() -> None:
    assert Results().exit_code() == 0


# --- the example suite, as a user runs it ----------------------------------------------------


def test_the_example_suite_passes_in_a_real_process() -> None:
    result = run_cli("test", "examples/policy-tests")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert all(line.startswith("PASS examples/policy-tests/") for line in lines[:-1])
    assert lines[-1] == "7 expectations in 1 suite: 7 passed, 0 failed"


def test_one_wrong_expectation_fails_the_suite_naming_it_and_showing_the_difference(
    tmp_path: Path,
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "suite")
    path = tmp_path / "suite" / "gpu-team.test.yaml"
    text = path.read_text()
    wrong = text.replace(
        "effect: NoSchedule}\n        - {key: nvidia.com/gpu",
        "effect: NoExecute}\n        - {key: nvidia.com/gpu",
    )
    assert wrong != text
    path.write_text(wrong)
    result = run_cli("test", "suite", cwd=tmp_path)
    assert result.returncode == 1
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failed == [
        "FAIL suite/gpu-team.test.yaml:7: gpu nodes belong to the ml team: "
        "Pod ml/train-pod [dedicated-nodes]: pass + object"
    ]
    after = result.stdout.split(failed[0] + "\n", 1)[1].splitlines()
    assert after[:4] == [
        "    result: pass, as expected (pods of Job ml/train)",
        "    object spec.tolerations: no element contains the expected one",
        "      expected: {key: dedicated, operator: Equal, value: gpu, effect: NoExecute}",
        "      found:    4 elements:",
    ]
    assert "        - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}" in after
    assert result.stdout.splitlines()[-1] == "7 expectations in 1 suite: 6 passed, 1 failed"


def test_the_readme_shows_the_example_suite_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Policy tests") :]
    block = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    example = yaml.safe_load((EXAMPLE / "gpu-team.test.yaml").read_text())
    assert {k: v for k, v in block.items() if k != "expect"} == {
        k: v for k, v in example.items() if k != "expect"
    }
    for expectation in block["expect"]:
        shown = {k: v for k, v in expectation.items() if k != "object"}
        assert any(shown.items() <= e.items() for e in example["expect"]), expectation

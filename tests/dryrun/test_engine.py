"""The engine: each manifest admitted as written and as its Pods, findings at their lines."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.dryrun import fakes
from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.patch import Editor
from webhooks.core.plugin import Context
from webhooks.core.result import Result
from webhooks.core.review import AdmissionRequest
from webhooks.dryrun.engine import Engine, context_cluster, describe_patch
from webhooks.dryrun.report import Report
from webhooks.dryrun.run import admit_all
from webhooks.manifests.reader import Document, Source, split

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    metadata:
      labels:
        app: web
    spec:
      tolerations:
      - key: Dedicated
        operator: Exists
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: topology.kubernetes.io/zone
      containers:
      - name: web
        image: nginx
"""

DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: monitoring
spec:
  template:
    spec:
      containers:
      - name: agent
        image: agent
        resources:
          limits:
            example.com/nic: 1
"""

NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: n1
spec:
  taints:
  - key: a
    effect: NoSchedule
  - key: b
    effect: NoScheduleNoAdmit
"""


def _docs(text: str, name: str = "m.yaml") -> list[Document]:
    docs, problem = split(Source(name, text))
    assert problem is None
    return docs


def _run(text: str, admission: Admission, **kw: Any) -> Report:
    docs = _docs(text)
    return admit_all(Engine(admission, **kw), docs, Report(files=1))


def _one(report: Report) -> Any:
    assert len(report.checked) == 1
    return report.checked[0]


def test_a_template_violation_is_reported_once_at_the_key_line() -> None:
    checked = _one(_run(DEPLOYMENT, fakes.admission(fakes.LOWER_KEYS)))
    found = [f for f in checked.findings if f.rule == "lower-keys"]
    assert [(f.field, f.line, f.target) for f in found] == [
        ("spec.template.spec.tolerations[0].key", 12, "object")
    ]


def test_a_pod_only_violation_points_at_the_template_field() -> None:
    checked = _one(_run(DEPLOYMENT, fakes.admission(fakes.HOSTNAME_ONLY)))
    (finding,) = [f for f in checked.findings if f.rule == "hostname-only"]
    assert finding.target == "pod"
    assert finding.field == (
        "spec.template.spec.affinity.podAntiAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"
    )
    assert finding.line == 17


def test_node_taint_errors_under_metadata_point_at_spec_taints() -> None:
    checked = _one(_run(NODE, fakes.admission(fakes.TAINT_EFFECTS)))
    (finding,) = [f for f in checked.findings if f.rule == "taint-effects"]
    assert (finding.field, finding.line) == ("metadata.taints[1].effect", 10)


def test_the_daemonset_template_is_mutated_and_its_pods_are_built_from_the_stored_template() -> (
    None
):
    checked = _one(_run(DAEMONSET, fakes.admission()))
    by_target = {f.target: f for f in checked.findings if f.type == "mutation"}
    assert by_target["object"].plugins == ("daemonset-tolerations",)
    assert by_target["object"].patch[0]["path"].startswith("/spec/template/spec/tolerations")
    # the Pod already carries the stored template's tolerations, so the DaemonSet defaults
    # leave it alone; the Pod's own plugins act, and limits reached requests before they looked
    assert "daemonset-tolerations" not in by_target["pod"].plugins
    assert "example.com/nic:NoSchedule (Exists)" in " ".join(by_target["pod"].summaries)


def test_the_engine_keeps_each_object_as_stored_for_explain() -> None:
    checked = _one(_run(DAEMONSET, fakes.admission()))
    keys = [t["key"] for t in checked.stored["pod"]["spec"]["tolerations"]]
    assert "node.kubernetes.io/unreachable" in keys and "example.com/nic" in keys
    template = checked.stored["object"]["spec"]["template"]["spec"]
    assert "example.com/nic" not in [t["key"] for t in template["tolerations"]]


def test_the_expanded_daemonset_pod_carries_a_controller_owner_reference() -> None:
    seen: list[dict[str, Any]] = []

    def spy(req: Any, pod: dict[str, Any], ctx: Any) -> list[Any]:
        seen.append(pod)
        return []

    plugin = fakes.Plugin(
        "spy",
        "records pods",
        fakes.Nothing,
        validate=fakes.Validator(spy, frozenset({fakes.PODS}), fakes.BOTH),
    )
    _run(DAEMONSET, fakes.admission(plugin, real=False))
    (pod,) = seen
    assert pod["metadata"]["namespace"] == "monitoring"
    assert pod["metadata"]["ownerReferences"][0] == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "agent",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"example.com/nic": 1}


def test_a_mutator_that_never_converges_is_a_convergence_finding() -> None:
    report = _run(DEPLOYMENT, fakes.admission(fakes.RESTLESS, real=False))
    (finding,) = [f for f in _one(report).findings if f.type == "convergence"]
    assert finding.plugins == ("restless",)
    assert "/metadata/annotations/passes" in finding.message
    assert report.exit_code() == 1


def test_mutations_are_still_reported_when_validators_deny() -> None:
    checked = _one(_run(DEPLOYMENT, fakes.admission(fakes.HOSTNAME_ONLY)))
    types = {f.type for f in checked.findings}
    assert types == {"violation", "mutation"}


@pytest.mark.parametrize(
    ("text", "namespace", "expected"),
    [
        (DEPLOYMENT, "team-a", "team-a"),
        (DAEMONSET, "team-a", "monitoring"),
        (NODE, "team-a", ""),
    ],
    ids=[
        "a manifest without a namespace takes --namespace",
        "a manifest's own namespace wins",
        "a cluster-scoped object has none",
    ],
)
def test_namespaces(text: str, namespace: str, expected: str) -> None:
    checked = _one(_run(text, fakes.admission(), namespace=namespace))
    assert checked.namespace == expected


def test_other_kinds_are_counted_and_context_kinds_feed_the_cluster() -> None:
    text = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
---
just: a mapping
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  runtimeClassName: gvisor
  containers: [{name: a, image: b}]
---
apiVersion: v1
kind: Pod
metadata: {name: q}
spec:
  runtimeClassName: kata
  containers: [{name: a, image: b}]
"""
    docs = _docs(text)
    cluster = context_cluster(docs, StaticCluster())
    report = admit_all(Engine(fakes.admission(fakes.SANDBOXED, cluster=cluster)), docs, Report())
    assert report.context == {"RuntimeClass": 1}
    assert report.skipped == {"ConfigMap": 1, "(not a Kubernetes object)": 1}
    denied = [c.name for c in report.checked if c.failed]
    assert denied == ["q"]


def _apply_all(engine: Engine, docs: list[Document]) -> str:
    out = []
    for doc in docs:
        checked = engine.admit(doc)
        out.append(engine.written_object(checked) if checked is not None else doc.obj)
    return yaml.safe_dump_all(out, sort_keys=False)


@pytest.mark.parametrize(
    "text",
    [DEPLOYMENT, DAEMONSET, NODE],
    ids=["a Deployment", "a DaemonSet", "a Node"],
)
def test_written_manifests_are_a_fixed_point(text: str) -> None:
    admission = fakes.admission(fakes.DAEMON_DEFAULTS)
    engine = Engine(admission)
    once = _apply_all(engine, _docs(text))
    report = admit_all(engine, _docs(once, "once.yaml"), Report())
    assert [f for c in report.checked for f in c.findings if f.type == "mutation"] == []


def test_a_deployment_template_receives_what_its_pods_would() -> None:
    engine = Engine(fakes.admission())
    (doc,) = _docs(DEPLOYMENT)
    checked = engine.admit(doc)
    assert checked is not None
    written = engine.written_object(checked)
    keys = [t.get("key") for t in written["spec"]["template"]["spec"]["tolerations"]]
    assert keys == ["Dedicated", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert "namespace" not in written["metadata"], "API-side defaults stay out of the output"
    assert doc.obj["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "Dedicated", "operator": "Exists"}
    ], "the parsed manifest is never modified"


def test_pod_labels_added_by_a_mutator_land_in_the_template_metadata() -> None:
    engine = Engine(fakes.admission(fakes.RESTLESS, real=False))
    (doc,) = _docs(DAEMONSET)
    checked = engine.admit(doc)
    assert checked is not None
    written = engine.written_object(checked)
    assert written["spec"]["template"]["metadata"] == {"annotations": {"passes": "1"}}


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        (
            [
                {
                    "op": "add",
                    "path": "/spec/tolerations",
                    "value": [{"key": "a", "operator": "Exists"}],
                }
            ],
            "adds toleration a:* (Exists)",
        ),
        (
            [
                {
                    "op": "add",
                    "path": "/spec/tolerations/-",
                    "value": {"key": "b", "effect": "NoSchedule"},
                },
                {"op": "replace", "path": "/spec/overhead", "value": {"cpu": "1"}},
                {"op": "remove", "path": "/spec/nodeSelector/x"},
            ],
            "adds toleration b:NoSchedule (Equal); sets /spec/overhead; "
            "removes /spec/nodeSelector/x",
        ),
    ],
    ids=["a new tolerations array", "an appended toleration and other operations"],
)
def test_patch_summaries_read_as_sentences(patch: list[dict[str, Any]], expected: str) -> None:
    assert describe_patch(patch) == expected


def _bogus(req: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    editor = Editor(pod)
    editor.set(("spec", "bogusField"), True)
    return Result(editor.obj, editor.patch)


def test_schema_runs_before_and_after_mutation_on_the_written_manifest() -> None:
    pytest.importorskip("kubernetes_validate")
    from webhooks.dryrun.schema import KubernetesSchema

    bogus = fakes.Plugin(
        "bogus",
        "adds a field no schema knows",
        fakes.Nothing,
        mutate=fakes.Mutator(_bogus, frozenset({fakes.PODS}), fakes.BOTH),
    )
    text = DEPLOYMENT.replace("spec:\n  template:", "spec:\n  selector: {}\n  template:")
    report = _run(text, fakes.admission(bogus, real=False), schema=KubernetesSchema("1.30"))
    (finding,) = [f for f in _one(report).findings if f.type == "schema"]
    assert finding.message.startswith("after mutation: spec.template.spec: Additional properties")
    assert finding.field == "spec.template.spec.bogusField"
    assert finding.line == 11, "a field the manifest lacks is shown at its parent"


def _pathless(req: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Any]:
    return [fakes.Violation("pods is forbidden: no reason given")]


def test_a_pod_violation_without_a_field_points_at_the_template() -> None:
    plugin = fakes.Plugin(
        "pathless",
        "denies pods",
        fakes.Nothing,
        validate=fakes.Validator(_pathless, frozenset({fakes.PODS}), fakes.BOTH),
    )
    checked = _one(_run(DEPLOYMENT, fakes.admission(plugin, real=False)))
    (finding,) = checked.findings
    assert (finding.field, finding.line, finding.target) == ("", 6, "pod")


@pytest.mark.parametrize(
    ("obj", "patch", "result"),
    [
        (
            {"kind": "Job"},
            [{"op": "add", "path": "/spec/template/metadata/labels/a~1b", "value": "x"}],
            {"kind": "Job", "spec": {"template": {"metadata": {"labels": {"a/b": "x"}}}}},
        ),
        (
            {"spec": {"list": [{"a": 1}]}},
            [{"op": "add", "path": "/spec/list/0/b", "value": 2}],
            {"spec": {"list": [{"a": 1, "b": 2}]}},
        ),
        (
            {"spec": {"list": []}},
            [
                {"op": "add", "path": "/spec/list/3/b", "value": 2},
                {"op": "replace", "path": "/spec/missing", "value": 1},
                {"op": "add", "path": "/spec/ok", "value": 1},
            ],
            {"spec": {"list": [], "ok": 1}},
        ),
    ],
    ids=[
        "missing parents of an add are created",
        "an add inside a list item",
        "operations that cannot apply are skipped",
    ],
)
def test_applying_a_patch_to_the_manifest(
    obj: dict[str, Any], patch: list[dict[str, Any]], result: dict[str, Any]
) -> None:
    from webhooks.dryrun.engine import _patch_manifest

    assert _patch_manifest(obj, patch) == result

"""Expansion: the Pod a controller would create, API defaulting, and paths back to templates."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhooks.dryrun.expand import (
    KIND_NAMES,
    default_requests,
    object_target,
    pod_from,
    pod_target,
    template_field,
    template_pointer,
)


def key(kind: str) -> tuple[str, str]:
    """The built-in (group, kind) of a kind name."""
    return (KIND_NAMES[kind].group, kind)


def _pod(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init is not None:
        spec["initContainers"] = init
    return {"kind": "Pod", "spec": spec}


def _c(**resources: Any) -> dict[str, Any]:
    return {"name": "c", "image": "i", "resources": resources}


@pytest.mark.parametrize(
    ("pod", "requests"),
    [
        (_pod(_c(limits={"nvidia.com/gpu": 1})), [{"nvidia.com/gpu": 1}]),
        (
            _pod(_c(limits={"cpu": "2", "memory": "1Gi"}, requests={"cpu": "1"})),
            [{"cpu": "1", "memory": "1Gi"}],
        ),
        (_pod(_c(requests={"cpu": "1"})), [{"cpu": "1"}]),
        (_pod(_c()), [None]),
        (
            _pod(_c(), init=[_c(limits={"example.com/fpga": 1})]),
            [None, {"example.com/fpga": 1}],
        ),
    ],
    ids=[
        "limits only become requests",
        "a request already set is kept, a missing one is copied",
        "requests without limits are left alone",
        "no resources at all stay absent",
        "init containers are defaulted too",
    ],
)
def test_limits_are_copied_into_missing_requests(
    pod: dict[str, Any], requests: list[dict[str, Any] | None]
) -> None:
    before = copy.deepcopy(pod)
    out = default_requests(pod)
    spec = out["spec"]
    found = [
        c["resources"].get("requests")
        for c in [*spec["containers"], *spec.get("initContainers", [])]
    ]
    assert found == requests
    assert pod == before, "defaulting is copy-on-write"


def test_an_unchanged_pod_is_returned_as_is() -> None:
    pod = _pod(_c(requests={"cpu": "1"}))
    assert default_requests(pod) is pod


WORKLOADS = {
    "Deployment": {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"tier": "front"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}, "name": "x"},
                "spec": {"containers": [_c(limits={"cpu": "1"})]},
            }
        },
    },
    "CronJob": {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [_c()]}}}}},
    },
    "StatefulSet": {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"template": {"spec": {"containers": [_c()]}}},
    },
    "PodTemplate": {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t"},
        "template": {"spec": {"containers": [_c()]}},
    },
}


@pytest.mark.parametrize(
    ("kind", "meta"),
    [
        (
            "Deployment",
            {
                "namespace": "shop",
                "generateName": "web-",
                "labels": {"app": "web"},
                "annotations": {"a": "b"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": "web",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
        ),
        (
            "CronJob",
            {
                "namespace": "shop",
                "generateName": "nightly-",
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": "nightly",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
        ),
        ("PodTemplate", {"namespace": "shop", "generateName": "t-"}),
    ],
    ids=[
        "a Deployment's Pods carry template labels and annotations, owned by a ReplicaSet",
        "a CronJob's Pods come from the job template, owned by a Job",
        "a PodTemplate's Pods have no controller",
    ],
)
def test_pod_metadata_comes_from_the_template(kind: str, meta: dict[str, Any]) -> None:
    pod = pod_from(WORKLOADS[kind], key(kind), "shop")
    assert pod is not None
    assert pod["metadata"] == meta
    assert pod["kind"] == "Pod" and pod["apiVersion"] == "v1"


def test_statefulset_pods_have_ordinal_names() -> None:
    pod = pod_from(WORKLOADS["StatefulSet"], key("StatefulSet"), "db")
    assert pod is not None and pod["metadata"]["name"] == "db-0"


@pytest.mark.parametrize(
    "workload",
    [
        pytest.param({"kind": "Deployment"}, id="a Deployment without a spec"),
        pytest.param({"kind": "Deployment", "spec": {}}, id="a Deployment without a template"),
        pytest.param({"kind": "Deployment", "spec": {"template": None}}, id="a null template"),
        pytest.param({"kind": "Deployment", "spec": {"template": {}}}, id="a template, no spec"),
    ],
)
def test_a_missing_template_makes_pods_with_an_empty_spec(workload: dict[str, Any]) -> None:
    """As the API server decodes the workload: the controller's Pods have an empty spec."""
    pod = pod_from(workload, key("Deployment"), "x")
    assert pod is not None and pod["spec"] == {}


@pytest.mark.parametrize(
    ("workload", "kind"),
    [
        pytest.param({"kind": "Pod"}, "Pod", id="a Pod makes no Pods"),
        pytest.param({"kind": "Deployment", "spec": "x"}, "Deployment", id="a spec not an object"),
        pytest.param(
            {"kind": "Job", "spec": {"template": {"spec": []}}},
            "Job",
            id="a pod spec not an object",
        ),
    ],
)
def test_a_workload_whose_template_cannot_be_read_has_no_pods(
    workload: dict[str, Any], kind: str
) -> None:
    assert pod_from(workload, key(kind), "x") is None


def test_requests_for_the_object_and_its_pods() -> None:
    workload = WORKLOADS["Deployment"]
    own = object_target(workload, key("Deployment"), "shop")
    assert (own.request.group, own.request.resource, own.request.version) == (
        "apps",
        "deployments",
        "v1",
    )
    assert own.request.object is not None
    assert own.request.object["metadata"]["namespace"] == "shop"
    assert "namespace" not in workload["metadata"]
    pods = pod_target(workload, key("Deployment"), "shop")
    assert pods is not None
    assert (pods.role, pods.request.resource, pods.request.namespace) == ("pod", "pods", "shop")
    assert pods.request.user["username"] == (
        "system:serviceaccount:kube-system:replicaset-controller"
    )
    assert pods.request.object is not None
    assert pods.request.object["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_a_node_request_is_cluster_scoped() -> None:
    target = object_target(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}, key("Node"), "x"
    )
    assert (target.request.namespace, target.request.name) == ("", "n")
    assert (
        target.request.object is not None and "namespace" not in target.request.object["metadata"]
    )


@pytest.mark.parametrize(
    ("kind", "pod_field", "field"),
    [
        ("Deployment", "spec.tolerations[2].key", "spec.template.spec.tolerations[2].key"),
        ("CronJob", "spec", "spec.jobTemplate.spec.template.spec"),
        ("DaemonSet", "metadata.labels[app]", "spec.template.metadata.labels[app]"),
        ("Job", "metadata.name", "spec.template"),
        ("PodTemplate", "spec.affinity", "template.spec.affinity"),
        ("Pod", "spec.tolerations[0]", "spec.tolerations[0]"),
        ("StatefulSet", "", "spec.template"),
    ],
    ids=[
        "a spec field lands under the template's spec",
        "a CronJob's pod spec is two templates deep",
        "template labels map to template metadata",
        "a pod name has no template counterpart",
        "a PodTemplate keeps its template at the top",
        "a Pod maps to itself",
        "no field points at the template",
    ],
)
def test_template_field(kind: str, pod_field: str, field: str) -> None:
    assert template_field(key(kind), pod_field) == field


@pytest.mark.parametrize(
    ("kind", "pointer", "expected"),
    [
        ("Deployment", "/spec/tolerations/-", "/spec/template/spec/tolerations/-"),
        ("CronJob", "/spec/overhead", "/spec/jobTemplate/spec/template/spec/overhead"),
        ("Job", "/metadata/annotations/a~1b", "/spec/template/metadata/annotations/a~1b"),
        ("ReplicaSet", "/metadata/ownerReferences/0", None),
        ("ReplicaSet", "/status", None),
        ("Pod", "/spec/tolerations", "/spec/tolerations"),
    ],
    ids=[
        "an appended toleration",
        "a CronJob spec field",
        "an escaped annotation key",
        "owner references belong to the controller",
        "status is not in a template",
        "a Pod maps to itself",
    ],
)
def test_template_pointer(kind: str, pointer: str, expected: str | None) -> None:
    assert template_pointer(key(kind), pointer) == expected

"""Stored objects turned back into the CREATE admission saw; skips; controllers."""

from __future__ import annotations

from typing import Any

import pytest

from bench import stored as cluster
from webhooks.audit.recreate import as_created, controller, skip_reason
from webhooks.audit.results import Ref

STORED = cluster.pod(
    "web-5d8f7c9b4-0a1b2",
    "shop",
    controller=("ReplicaSet", "web-5d8f7c9b4"),
    labels={"app": "web"},
)
CREATED = as_created(STORED)


@pytest.mark.parametrize(
    "path",
    [
        ("status",),
        ("metadata", "uid"),
        ("metadata", "resourceVersion"),
        ("metadata", "managedFields"),
        ("metadata", "creationTimestamp"),
        ("metadata", "name"),
        ("spec", "nodeName"),
    ],
    ids=[
        "the status is the kubelet's",
        "the uid is the API server's",
        "the resourceVersion is the API server's",
        "managedFields are the API server's",
        "the creation time is the API server's",
        "a name made from generateName was not in the request",
        "the node is the scheduler's binding",
    ],
)
def test_what_was_set_after_admission_is_left_out(path: tuple[str, ...]) -> None:
    node: Any = CREATED
    for part in path[:-1]:
        node = node[part]
    assert path[-1] not in node


@pytest.mark.parametrize(
    "path",
    [
        ("metadata", "generateName"),
        ("metadata", "namespace"),
        ("metadata", "labels"),
        ("metadata", "ownerReferences"),
        ("spec", "tolerations"),
        ("spec", "volumes"),
        ("spec", "serviceAccountName"),
        ("spec", "restartPolicy"),
    ],
    ids=[
        "generateName was in the request",
        "the namespace was in the request",
        "labels were in the request",
        "the controller reference was in the request",
        "tolerations admission saw are kept",
        "the service-account token volume was added before the webhooks ran",
        "the ServiceAccount plugin's default was there at admission",
        "API defaults were there at admission",
    ],
)
def test_what_admission_saw_is_kept(path: tuple[str, ...]) -> None:
    node: Any = CREATED
    original: Any = STORED
    for part in path:
        node, original = node[part], original[part]
    assert node == original


def test_a_statefulset_pod_keeps_the_name_its_controller_gave_it() -> None:
    stored = cluster.pod("db-0", "shop", controller=("StatefulSet", "db"), generated=False)
    assert as_created(stored)["metadata"]["name"] == "db-0"


def test_the_stored_object_is_not_changed() -> None:
    stored = cluster.pod("solo", "shop")
    before = repr(stored)
    as_created(stored)
    assert repr(stored) == before


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        (
            cluster.pod(
                "etcd-cp1",
                "kube-system",
                controller=("Node", "cp1"),
                generated=False,
                annotations={"kubernetes.io/config.mirror": "abc"},
            ),
            "mirror pod of a static pod: the kubelet runs it whatever admission says",
        ),
        (
            cluster.pod("backup-1-x", "ops", phase="Succeeded"),
            "finished (Succeeded): admission will not see it again",
        ),
        (
            cluster.pod("backup-2-y", "ops", phase="Failed"),
            "finished (Failed): admission will not see it again",
        ),
        (cluster.pod("web", "shop"), None),
        (cluster.pod("queued", "shop", phase="Pending"), None),
    ],
    ids=[
        "a mirror pod is skipped",
        "a succeeded pod is skipped",
        "a failed pod is skipped",
        "a running pod is admitted",
        "a pending pod is admitted",
    ],
)
def test_which_pods_are_not_admitted(pod: dict[str, Any], reason: str | None) -> None:
    assert skip_reason(pod) == reason


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([], None),
        ([{**cluster.owner("ReplicaSet", "web-1", "shop"), "controller": False}], None),
        (
            [cluster.owner("ReplicaSet", "web-1", "shop")],
            Ref("apps/v1", "ReplicaSet", "shop", "web-1", "replicaset-shop-web-1"),
        ),
    ],
    ids=[
        "no owner, no controller",
        "an owner that is not the controller does not count",
        "the controller owner, in the object's namespace",
    ],
)
def test_the_controller_of_an_object(refs: list[dict[str, Any]], expected: Ref | None) -> None:
    pod = cluster.pod("p", "shop")
    pod["metadata"]["ownerReferences"] = refs
    assert controller(pod) == expected

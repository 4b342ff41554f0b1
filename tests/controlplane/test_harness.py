"""The harness proves itself: a real API server stores, a real scheduler binds, a real
controller-manager watches written Nodes, and a failed start explains itself and cleans up."""

from __future__ import annotations

import os
from typing import Any

import pytest
from kubernetes import client

from controlplane.harness import (
    AdmissionSetup,
    ApiServerOptions,
    ComponentError,
    ControlPlane,
    ControlPlaneOptions,
    LeaseRenewer,
    node_manifest,
    pod_manifest,
    running,
    write_node,
)
from controlplane.harness.nodes import NOT_READY, UNREACHABLE
from controlplane.release import KUBERNETES_VERSION
from tests.waiting import eventually


def _taint_keys(core: client.CoreV1Api, node: str) -> set[str]:
    return {t.key for t in core.read_node(node).spec.taints or []}


def test_the_api_server_reports_the_pinned_release(control_plane: ControlPlane) -> None:
    status, version = control_plane.api.get("/version")
    assert status == 200
    assert version["gitVersion"] == KUBERNETES_VERSION


def test_a_pod_created_through_the_python_client_is_stored_with_in_tree_defaults(
    api_client: Any, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    assert core.read_namespace(namespace).status.phase == "Active"
    core.create_namespaced_pod(namespace, pod_manifest("hello"))
    stored = core.read_namespaced_pod("hello", namespace)
    # DefaultTolerationSeconds is on by default in kube-apiserver: its two entries prove
    # that the pod went through the real admission chain, not just into storage.
    seconds = {t.key: t.toleration_seconds for t in stored.spec.tolerations}
    assert seconds == {NOT_READY: 300, UNREACHABLE: 300}
    assert stored.spec.service_account_name == "default"


def test_a_written_node_with_its_lease_becomes_schedulable_and_the_scheduler_binds_to_it(
    api_client: Any, namespace: str, lease_renewer: LeaseRenewer
) -> None:
    core = client.CoreV1Api(api_client)
    node = write_node(api_client, node_manifest("node-bind", labels={"pool": "bind"}))
    lease_renewer.add("node-bind")
    lease = client.CoordinationV1Api(api_client).read_namespaced_lease(
        "node-bind", "kube-node-lease"
    )
    assert lease.spec.holder_identity == "node-bind"
    assert lease.metadata.owner_references[0].uid == node["metadata"]["uid"]
    # TaintNodesByCondition taints every new Node not-ready; the node lifecycle controller
    # lifts it once it sees the written Ready condition.
    eventually(lambda: NOT_READY not in _taint_keys(core, "node-bind"), "not-ready taint lifted")
    core.create_namespaced_pod(namespace, pod_manifest("placed", nodeSelector={"pool": "bind"}))
    bound = eventually(
        lambda: core.read_namespaced_pod("placed", namespace).spec.node_name,
        "the scheduler binds the pod",
        limit=30,
    )
    assert bound == "node-bind"


def test_a_node_whose_lease_stops_is_tainted_unreachable_by_the_controller_manager(
    api_client: Any, lease_renewer: LeaseRenewer
) -> None:
    core = client.CoreV1Api(api_client)
    write_node(api_client, node_manifest("node-fail"))
    lease_renewer.add("node-fail")
    eventually(lambda: NOT_READY not in _taint_keys(core, "node-fail"), "not-ready taint lifted")
    lease_renewer.stop_node("node-fail")
    # Grace period 10 s (the harness default) plus a few monitor periods.
    eventually(
        lambda: UNREACHABLE in _taint_keys(core, "node-fail"),
        "unreachable taint after the grace period",
        limit=40,
    )
    ready = next(c for c in core.read_node("node-fail").status.conditions if c.type == "Ready")
    assert ready.status == "Unknown"


@pytest.mark.parametrize(
    ("api_options", "said"),
    [
        pytest.param(
            ApiServerOptions(extra_args=("--no-such-flag",)),
            "unknown flag: --no-such-flag",
            id="an API server with a flag it does not know",
        ),
        pytest.param(
            ApiServerOptions(admission=AdmissionSetup(enable=("NoSuchPlugin",))),
            "NoSuchPlugin",
            id="an API server asked for an admission plugin it does not have",
        ),
    ],
)
def test_a_component_that_dies_at_start_is_reported_with_its_log_and_nothing_is_left(
    api_options: ApiServerOptions, said: str
) -> None:
    plane = ControlPlane(
        ControlPlaneOptions(
            apiservers=(api_options,), scheduler=False, controller_manager=None, timeout=30
        )
    )
    with pytest.raises(ComponentError) as caught:
        plane.start()
    message = str(caught.value)
    assert "kube-apiserver[main] exited" in message
    assert said in message  # the tail of its log says why
    assert not plane.directory.exists()
    assert plane.etcd is not None
    for component in (plane.etcd.component, plane.apiservers["main"].component):
        with pytest.raises(ProcessLookupError):
            os.killpg(component.proc.pid, 0)  # no process of its group is left


def test_two_api_servers_on_one_etcd_are_separate_clusters() -> None:
    options = ControlPlaneOptions(
        apiservers=(ApiServerOptions(name="a"), ApiServerOptions(name="b")),
        scheduler=False,
        controller_manager=None,
    )
    with running(options) as plane:
        a, b = plane.apiservers["a"], plane.apiservers["b"]
        assert a.url != b.url
        status, _ = a.request(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "only-in-a"}},
        )
        assert status == 201
        assert a.get("/api/v1/namespaces/only-in-a")[0] == 200
        assert b.get("/api/v1/namespaces/only-in-a")[0] == 404

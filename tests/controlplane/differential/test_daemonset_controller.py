"""The DaemonSet default tolerations: the real DaemonSet controller against our webhook.

On ``in-tree`` (the controller-manager works against it), DaemonSets are created and the
real DaemonSet controller builds their pods for two written Nodes, through the in-tree
plugins. On ``webhooks`` (same config, same etcd, no controller), the same DaemonSets are
created (their stored templates carry what our webhook wrote in) and, for every pod the
controller made, two pods are sent: (a) the raw template's pod, as a client would create it
for that node, and (b) the stored template's pod, as a DaemonSet controller on that cluster
would build it. Each is compared with the controller's pod, field by field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    LeaseRenewer,
    node_manifest,
    write_node,
)
from controlplane.harness.components import ApiServer
from controlplane.harness.modes import apiserver_options
from tests.controlplane.conftest import started_plane
from tests.controlplane.differential import apply
from tests.controlplane.differential.corpus import RUNTIME_CLASSES, Case, Request, compare, observe
from tests.controlplane.differential.daemonsets import DaemonCase, daemon_cases, pod_for
from tests.controlplane.differential.report import REPORTS, Report
from tests.controlplane.differential.test_differential import CONFIGS
from tests.waiting import eventually

NODES = ("dn1", "dn2")
COUNT = 30


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    config = CONFIGS / "namespaces.yaml"
    options = ControlPlaneOptions(
        apiservers=(apiserver_options("in-tree", config), apiserver_options("webhooks", config)),
        scheduler=False,
        components_for="in-tree",
    )
    with started_plane(
        options, "differential DaemonSets: 2 API servers, controller-manager"
    ) as started:
        yield started


def _as_case(case: DaemonCase) -> Case:
    """The corpus's shape, so namespaces and cluster objects are made the same way."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}}
    return Case(case.id, case.namespace, RUNTIME_CLASSES, Request("CREATE", pod))


def _pods(api: ApiServer, namespace: str, name: str) -> list[dict[str, Any]]:
    status, found = api.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{name}")
    assert status == 200, found
    pods: list[dict[str, Any]] = found["items"]
    return pods


def test_our_webhook_gives_daemonset_pods_what_the_real_controller_gives_them(
    plane: ControlPlane,
) -> None:
    in_tree, webhooks = plane.apiservers["in-tree"], plane.apiservers["webhooks"]
    corpus = list(daemon_cases(7, COUNT))
    for api in (in_tree, webhooks):
        apply.prepare(api, [_as_case(c) for c in corpus])
    with in_tree.client() as api_client:
        renewer = LeaseRenewer(api_client, interval=1.0)
        try:
            for node in NODES:
                write_node(api_client, node_manifest(node))
                renewer.add(node)
            for node in NODES:
                eventually(
                    lambda n=node: not in_tree.get(f"/api/v1/nodes/{n}")[1]["spec"].get("taints"),
                    f"{node} Ready and untainted",
                    limit=60,
                )
            stored: dict[str, dict[str, Any]] = {}
            for case in corpus:
                namespace = case.namespace["metadata"]["name"]
                path = f"/apis/apps/v1/namespaces/{namespace}/daemonsets"
                created = in_tree.call("POST", path, case.daemonset)
                assert created.status == 201, created.body
                ours = webhooks.call("POST", path, case.daemonset)
                assert ours.status == 201, ours.body
                stored[case.id] = ours.body
            made = {
                case.id: eventually(
                    lambda c=case: (
                        pods
                        if len(pods := _pods(in_tree, c.namespace["metadata"]["name"], c.id))
                        == len(NODES)
                        else None
                    ),
                    f"the controller's pods of {case.id}",
                    limit=60,
                )
                for case in corpus
            }
        finally:
            renewer.close()
    report = Report("daemonset", len(corpus) * len(NODES) * 2)
    for case in corpus:
        namespace = case.namespace["metadata"]["name"]
        ours = stored[case.id]
        for index, controller_pod in enumerate(made[case.id]):
            reference = observe("create", 201, {**controller_pod, "kind": "Pod"})  # list items
            for variant, template in (
                ("raw template", case.daemonset["spec"]["template"]),
                ("stored template", ours["spec"]["template"]),
            ):
                name = f"{case.id}-{index}-{variant.split()[0]}"
                pod = pod_for(case, template, controller_pod, ours["metadata"]["uid"], name)
                answer = webhooks.call("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
                other = observe("create", answer.status, answer.body)
                differences = compare(reference, other)
                shown = Case(f"{case.id} ({variant})", case.namespace, (), Request("CREATE", pod))
                shown = Case(
                    shown.id,
                    shown.namespace,
                    (),
                    shown.request,
                    frozenset({"daemonset-tolerations"}),
                )
                report.add("webhooks", shown, differences, ("", ""), reference, other)
    REPORTS.append(report)
    unexplained = report.unexplained()
    assert not unexplained, "\n\n".join(unexplained[:10]) + f"\n\n{len(unexplained)} unexplained"

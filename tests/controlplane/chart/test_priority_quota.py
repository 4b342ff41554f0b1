"""``priorityClassName: system-cluster-critical`` and the chart's ResourceQuota, on real API
servers.

Kubernetes lets a cluster limit the two critical priority classes to ``kube-system``: the
ResourceQuota admission plugin, configured with them as ``limitedResources``, refuses a pod
of either class in any namespace without a quota scoped to its class (upstream's "limit
priority class consumption by default"; managed clusters such as GKE run with it). A stock
kube-apiserver does not. Two API servers on one etcd, one configured so and one stock: the
webhook pod, as the chart's Deployment makes it, is created beside the chart's quota on
both, refused without it on the limiting one, and admitted without it on the stock one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane.harness import (
    AdmissionSetup,
    ApiServerOptions,
    ControlPlane,
    create_namespace,
)
from controlplane.harness.apply import apply_objects
from tests.controlplane.chart.conftest import FIGURES, chart_plane_options
from tests.controlplane.chart.served import rendered
from tests.controlplane.conftest import started_plane
from tests.waiting import eventually

CRITICAL = ["system-cluster-critical", "system-node-critical"]
LIMITED = AdmissionSetup(
    configuration={
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [
            {
                "name": "ResourceQuota",
                "configuration": {
                    "apiVersion": "apiserver.config.k8s.io/v1",
                    "kind": "ResourceQuotaConfiguration",
                    "limitedResources": [
                        {
                            "resource": "pods",
                            "matchScopes": [
                                {"scopeName": "PriorityClass", "operator": "In", "values": CRITICAL}
                            ],
                        }
                    ],
                },
            }
        ],
    }
)


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """A limiting API server (with the controllers) and a stock one, on one etcd."""
    options = chart_plane_options()
    [limiting] = options.apiservers
    options = type(options)(
        apiservers=(
            ApiServerOptions(name="limited", admission=LIMITED, extra_args=limiting.extra_args),
            ApiServerOptions(name="stock"),
        ),
        controller_manager=options.controller_manager,
        components_for="limited",
    )
    with started_plane(options, "chart proofs, two API servers") as started:
        yield started


def _webhook_pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "webhook", "labels": template["metadata"]["labels"]},
        "spec": template["spec"],
    }


def _create(admin: Any, namespace: str, pod: dict[str, Any]) -> str:
    try:
        client.CoreV1Api(admin).create_namespaced_pod(namespace, pod)
    except ApiException as exc:
        return str(json.loads(exc.body).get("message"))
    return ""


@pytest.mark.parametrize(
    ("server", "quota", "admitted"),
    [
        pytest.param("limited", True, True, id="limiting API server, with the chart's quota"),
        pytest.param("limited", False, False, id="limiting API server, without it"),
        pytest.param("stock", False, True, id="stock API server, without it"),
    ],
)
def test_a_system_cluster_critical_webhook_pod_and_the_charts_quota(
    plane: ControlPlane, server: str, quota: bool, admitted: bool
) -> None:
    namespace = f"crit-{server}-{'with' if quota else 'without'}"
    objects = rendered(None, "crit", namespace)
    pod = _webhook_pod(objects)
    assert pod["spec"]["priorityClassName"] == "system-cluster-critical"
    with plane.apiservers[server].client() as admin:
        create_namespace(admin, namespace)
        keep = {"ServiceAccount"} | ({"ResourceQuota"} if quota else set())
        apply_objects(admin, [o for o in objects if o["kind"] in keep])
        if admitted:
            # With a quota, once the quota controller has computed its status.
            eventually(lambda: _create(admin, namespace, pod) == "", "admitted", limit=60)
            stored = client.CoreV1Api(admin).read_namespaced_pod("webhook", namespace)
            assert stored.spec.priority == 2000000000
            FIGURES.append((f"critical pod, {namespace}", "admitted"))
        else:
            message = _create(admin, namespace, pod)
            assert "insufficient quota to match these scopes" in message
            assert "system-cluster-critical" in message
            FIGURES.append((f"critical pod, {namespace}", message))

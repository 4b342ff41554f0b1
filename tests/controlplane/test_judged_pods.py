"""One call per pod, on the real API server: with the mutating webhook failing closed, the
validating webhook is left out for pods no enabled validating check can judge, and nothing
the API server answers changes.

Two API servers on one etcd, both ``MODE=webhooks`` with the built-in defaults and
``--mutating-failure-policy=Fail``: ``judged`` registered as ``webhook-config`` prints it
(the match condition ``a-pod-a-validating-check-can-judge``), ``every`` with
``--validate-every-pod``. The same pods, valid and not, go to both; their answers (status
and message) must be equal, and ``serve``'s own counters say which ones reached
``/validate``. A stopped ``serve`` must still refuse a plain pod: the mutating call, failing
closed, is its guard now.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.harness import ControlPlane, ControlPlaneOptions, create_namespace, webhookserver
from controlplane.harness.modes import apiserver_options
from controlplane.release import RELEASE
from tests.controlplane.conftest import started_plane
from webhooks.k8s.releases import TOLERATION_COMPARISONS

NAMESPACE = "judged"
CLOSED = ("--mutating-failure-policy=Fail",)
IMAGE = "registry.k8s.io/pause:3.10"
#: The comparison-operator gate, where the release has it (not 1.34): the API server then
#: accepts what the policy refuses; without it the API server refuses ``Lt`` itself.
GATES = (
    (f"--feature-gates={TOLERATION_COMPARISONS}=true",)
    if TOLERATION_COMPARISONS in RELEASE.gates
    else ()
)
#: /validate calls an ``Lt`` toleration costs: none where the API server refuses it first.
LT_CALLS = 1 if GATES else 0


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": IMAGE}], **spec},
    }


GPU = {
    "containers": [{"name": "c", "image": IMAGE, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
}

#: (id, pod, status, /validate calls with the condition, without it)
CASES = [
    ("a plain pod costs one call", _pod("plain"), 201, 0, 1),
    ("a pod asking for a GPU costs one call", _pod("gpu", **GPU), 201, 0, 1),
    (
        "a pod with a valid toleration costs one call",
        _pod("tolerates", tolerations=[{"key": "team", "operator": "Exists"}]),
        201,
        0,
        1,
    ),
    (
        "an invalid toleration key is refused by the API server before any validating call",
        _pod("badkey", tolerations=[{"key": "a/b/c", "operator": "Exists"}]),
        422,
        0,
        0,
    ),
    (
        "tolerationSeconds on a NoSchedule toleration is refused by the API server too",
        _pod(
            "badseconds",
            tolerations=[
                {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}
            ],
        ),
        422,
        0,
        0,
    ),
    (
        "a comparison operator is refused: by policy where the gate exists, else by the server",
        _pod("lt", tolerations=[{"key": "cores", "operator": "Lt", "value": "8"}]),
        422,
        LT_CALLS,
        LT_CALLS,
    ),
    (
        "a missing RuntimeClass is refused by the mutating call",
        _pod("missing", runtimeClassName="missing"),
        403,
        0,
        0,
    ),
    (
        "an overhead the pod set itself is sent and refused",
        _pod("overhead", overhead={"cpu": "100m"}),
        403,
        1,
        1,
    ),
]


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    base = apiserver_options("webhooks")
    base = dataclasses.replace(base, extra_args=(*base.extra_args, *GATES))
    judged = dataclasses.replace(base, name="judged", webhook_args=CLOSED)
    every = dataclasses.replace(base, name="every", webhook_args=(*CLOSED, "--validate-every-pod"))
    options = ControlPlaneOptions(
        apiservers=(judged, every), scheduler=False, controller_manager=None
    )
    with started_plane(options, "webhooks mode twice, mutation failing closed") as started:
        for server in started.apiservers.values():
            with server.client() as api_client:
                create_namespace(api_client, NAMESPACE)
        yield started


@pytest.mark.parametrize(
    ("pod", "status", "judged_calls", "every_calls"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_answer_is_the_same_and_only_judged_pods_cost_a_validating_call(
    plane: ControlPlane, pod: dict[str, Any], status: int, judged_calls: int, every_calls: int
) -> None:
    answers = {}
    for name, server in plane.apiservers.items():
        webhook = plane.webhooks[name]
        before = webhookserver.calls(webhook).get("/validate", 0)
        answer = server.call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod)
        after = webhookserver.calls(webhook).get("/validate", 0)
        answers[name] = (answer.status, answer.message, after - before)
    assert answers["judged"][:2] == answers["every"][:2]
    assert (answers["judged"][0], answers["judged"][2], answers["every"][2]) == (
        status,
        judged_calls,
        every_calls,
    )


def test_a_stopped_server_still_refuses_a_plain_pod_through_the_mutating_call(
    plane: ControlPlane,
) -> None:
    plane.webhooks["judged"].component.stop()
    answer = plane.apiservers["judged"].call(
        "POST", f"/api/v1/namespaces/{NAMESPACE}/pods", _pod("unguarded")
    )
    assert answer.status == 500, answer.body
    assert 'failed calling webhook "mutate.placement-webhooks.svc"' in answer.message

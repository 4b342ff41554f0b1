"""Behind the in-tree plugins (MODE=managed): reinvocation, and namespaceOverrides against the
real DefaultTolerationSeconds.

What the API server does after a mutating webhook changed the object (``reinvocation.go``
and the mutating dispatcher in k8s.io/apiserver): it runs the whole mutating chain once
more, *every* in-tree plugin included, and calls a webhook registered with
``reinvocationPolicy: IfNeeded`` again only if the object changed after its last call; then
it stops, whatever changed in that second round. The audit log shows each webhook call as
``mutation.webhook.admission.k8s.io/round_<r>_index_<i>``, so the rounds are read there.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.harness import (
    ApiServer,
    ControlPlaneOptions,
    auditlog,
    create_namespace,
    pod_manifest,
)
from controlplane.harness.modes import apiserver_options
from controlplane.harness.nodes import NOT_READY, UNREACHABLE
from tests.controlplane.conftest import started_plane
from tests.waiting import eventually

CONFIG = Path(__file__).parent / "configs" / "managed-reinvocation.yaml"
NOT_READY_SECONDS = "placement-webhooks.io/not-ready-seconds"
UNREACHABLE_SECONDS = "placement-webhooks.io/unreachable-seconds"
WEBHOOK = "mutate.placement-webhooks.svc"
_names = itertools.count()


def _noexecute(key: str, seconds: int | None = None) -> dict[str, Any]:
    toleration: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


def _noschedule(key: str) -> dict[str, Any]:
    return {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoSchedule"}


NR300 = _noexecute(NOT_READY, 300)
UR300 = _noexecute(UNREACHABLE, 300)
DAEMON_DEFAULTS = [
    _noexecute(NOT_READY),
    _noexecute(UNREACHABLE),
    *(_noschedule(k) for k in ("disk-pressure", "memory-pressure", "pid-pressure")),
    _noschedule("unschedulable"),
]


@pytest.fixture(scope="module")
def api() -> Iterator[ApiServer]:
    """MODE=managed with an audit log; no scheduler or controller-manager is needed."""
    options = ControlPlaneOptions(
        apiservers=(dataclasses.replace(apiserver_options("managed", CONFIG), audit=True),),
        scheduler=False,
        controller_manager=None,
    )
    with started_plane(options, "managed mode, audit log") as plane:
        yield plane.api


def _namespace(api: ApiServer, **annotations: str) -> str:
    name = f"m{next(_names)}"
    with api.client() as api_client:
        create_namespace(api_client, name, annotations=annotations)
    return name


def _create(api: ApiServer, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
    answer = api.call("POST", f"/api/v1/namespaces/{namespace}/pods", manifest)
    assert answer.status == 201, answer.body
    stored: dict[str, Any] = answer.body
    return stored


def _rounds(api: ApiServer, namespace: str, name: str) -> list[tuple[int, bool]]:
    """(round, mutated) of each call of our mutating webhook for the pod's create."""
    events = eventually(
        lambda: auditlog.find(
            api.audit_log, verb="create", resource="pods", name=name, namespace=namespace
        ),
        f"the audit event of {namespace}/{name}",
    )
    calls = auditlog.mutation_rounds(events[-1])
    assert {c["webhook"] for c in calls} == {WEBHOOK}
    return [(c["round"], c["mutated"]) for c in calls]


def _runtime_class(api: ApiServer, name: str) -> None:
    answer = api.call(
        "POST",
        "/apis/node.k8s.io/v1/runtimeclasses",
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            "handler": name,
            "scheduling": {"nodeSelector": {"sandbox": name}},
        },
    )
    assert answer.status == 201, answer.body


def _daemon_pod(name: str, **spec: Any) -> dict[str, Any]:
    manifest = pod_manifest(name, **spec)
    manifest["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "agent",
            "uid": "6f1c8d52-0c4e-4c53-9a3b-6c1f7e0d2a10",
            "controller": True,
        }
    ]
    return manifest


def test_a_webhook_that_changes_nothing_is_called_once(api: ApiServer) -> None:
    namespace = _namespace(api)
    stored = _create(api, namespace, pod_manifest("plain"))
    # In-tree DefaultTolerationSeconds added both entries before the webhook ran.
    assert stored["spec"]["tolerations"] == [
        _noexecute(NOT_READY, 300),
        _noexecute(UNREACHABLE, 300),
    ]
    assert _rounds(api, namespace, "plain") == [(0, False)]


def test_a_change_the_in_tree_plugins_leave_alone_is_not_reinvoked(api: ApiServer) -> None:
    namespace = _namespace(api, **{NOT_READY_SECONDS: "30"})
    stored = _create(api, namespace, pod_manifest("tuned"))
    assert stored["spec"]["tolerations"] == [
        _noexecute(NOT_READY, 30),
        _noexecute(UNREACHABLE, 300),
    ]
    # Round 1 ran the in-tree plugins again (DefaultTolerationSeconds found both covered):
    # the object did not change after the webhook, so the webhook was not called again.
    assert _rounds(api, namespace, "tuned") == [(0, True)]


def test_the_in_tree_plugins_rerun_after_the_webhook_and_the_webhook_is_reinvoked_once(
    api: ApiServer,
) -> None:
    """The DaemonSet defaults our webhook appends to a wildcard-tolerating pod are what
    RuntimeClass's superset merge removes: in-tree RuntimeClass runs again after the
    webhook (round 1 exists only because the object changed after round 0), the webhook is
    reinvoked and appends them again, and the API server stops there."""
    _runtime_class(api, "gvisor")
    namespace = _namespace(api)
    wildcard = {"operator": "Exists"}
    stored = _create(
        api,
        namespace,
        _daemon_pod("agent-x", runtimeClassName="gvisor", tolerations=[wildcard]),
    )
    assert _rounds(api, namespace, "agent-x") == [(0, True), (1, True)]
    assert stored["spec"]["tolerations"] == [wildcard, *DAEMON_DEFAULTS]
    assert stored["spec"]["nodeSelector"] == {"sandbox": "gvisor"}


OVERRIDES = [
    pytest.param(
        {NOT_READY_SECONDS: "30", UNREACHABLE_SECONDS: "60"},
        [],
        [_noexecute(NOT_READY, 30), _noexecute(UNREACHABLE, 60)],
        id="the in-tree 300 s entries are rewritten to the namespace's seconds",
    ),
    pytest.param(
        {NOT_READY_SECONDS: "30", UNREACHABLE_SECONDS: "60"},
        [_noexecute(UNREACHABLE, 120)],
        [_noexecute(UNREACHABLE, 120), _noexecute(NOT_READY, 30)],
        id="a user's own seconds stay, the in-tree entry appended after it is rewritten",
    ),
    pytest.param(
        {NOT_READY_SECONDS: "0"},
        [],
        [_noexecute(NOT_READY, 0), _noexecute(UNREACHABLE, 300)],
        id="zero seconds: evicted as soon as the node is not ready",
    ),
    pytest.param(
        {NOT_READY_SECONDS: "soon"},
        [],
        [_noexecute(NOT_READY, 300), _noexecute(UNREACHABLE, 300)],
        id="an annotation that is not a number leaves the in-tree default",
    ),
]


@pytest.mark.parametrize(("annotations", "own", "expected"), OVERRIDES)
def test_namespace_overrides_rewrite_what_the_real_default_toleration_seconds_added(
    api: ApiServer, annotations: dict[str, str], own: list[dict[str, Any]], expected: Any
) -> None:
    namespace = _namespace(api, **annotations)
    stored = _create(api, namespace, pod_manifest("p", tolerations=own))
    assert stored["spec"]["tolerations"] == expected

"""With ``serve`` stalled or stopped: what the API server answers, and how fast.

The registration is ``webhook-config``'s default: the mutating webhook fails open
(``failurePolicy: Ignore``), the validating one closed (``Fail``), each with
``timeoutSeconds: 5``. A stalled server (SIGSTOP: the kernel still accepts connections, no
one answers) costs each webhook its full timeout; a stopped one refuses the connection at
once. The bounds below are the point of these tests, so they are wide enough for a loaded
machine and tight enough to tell "timed out" from "refused".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    auditlog,
    create_namespace,
    pod_manifest,
    webhookserver,
)
from controlplane.harness.modes import apiserver_options
from tests.controlplane.conftest import started_plane
from tests.waiting import eventually

TIMEOUT = 5  # webhook-config's default timeoutSeconds
FAILED_OPEN = "failed-open.mutation.webhook.admission.k8s.io/round_0_index_0"
NAMESPACE = "stalls"


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """MODE=webhooks with the built-in defaults and an audit log; nothing else runs."""
    api = dataclasses.replace(apiserver_options("webhooks"), audit=True)
    options = ControlPlaneOptions(apiservers=(api,), scheduler=False, controller_manager=None)
    with started_plane(options, "webhooks mode, audit log") as started:
        with started.api.client() as api_client:
            create_namespace(api_client, NAMESPACE)
        yield started


def _create(plane: ControlPlane, name: str) -> Any:
    return plane.api.call(
        "POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod_manifest(name), timeout=60
    )


def _refusal(reason: str) -> str:
    """The message of a failed validating call, as kube-apiserver words it."""
    return (
        r'Internal error occurred: failed calling webhook "validate\.placement-webhooks\.svc": '
        r'failed to call webhook: Post "https://127\.0\.0\.1:\d+/validate\?timeout=5s": ' + reason
    )


def _failed_open(plane: ControlPlane, name: str) -> bool:
    events = auditlog.find(
        plane.api.audit_log, verb="create", resource="pods", name=name, namespace=NAMESPACE
    )
    return bool(events) and FAILED_OPEN in (events[-1].get("annotations") or {})


def test_a_stalled_server_costs_each_webhook_its_timeout_then_fails_open_and_closed(
    plane: ControlPlane,
) -> None:
    webhook = plane.webhooks[plane.api.name]
    webhookserver.pause(webhook)
    try:
        answer = _create(plane, "stalled")
    finally:
        webhookserver.resume(webhook)
    # Mutate waits TIMEOUT, is ignored; validate waits TIMEOUT, refuses: 2 x 5 s in all.
    assert answer.status == 500, answer.body
    assert re.fullmatch(_refusal("context deadline exceeded"), answer.message), answer.message
    assert 2 * TIMEOUT - 0.5 <= answer.seconds < 2 * TIMEOUT + 5, answer.seconds
    print(f"stalled serve: pod create refused in {answer.seconds:.3f} s")
    eventually(lambda: _failed_open(plane, "stalled"), "the failed-open audit annotation")
    # Resumed, the server answers again at once: nothing was left broken.
    again = _create(plane, "resumed")
    assert again.status == 201, again.body
    assert again.seconds < TIMEOUT


def test_a_stopped_server_is_skipped_by_mutate_and_refused_by_validate_at_once(
    plane: ControlPlane,
) -> None:
    webhook = plane.webhooks[plane.api.name]
    webhook.component.stop()
    answer = _create(plane, "stopped")
    assert answer.status == 500, answer.body
    reason = r"dial tcp 127\.0\.0\.1:\d+: connect: connection refused"
    assert re.fullmatch(_refusal(reason), answer.message), answer.message
    assert answer.seconds < 3, answer.seconds  # no timeout waited: refused in milliseconds
    print(f"stopped serve: pod create refused in {answer.seconds:.3f} s")
    eventually(lambda: _failed_open(plane, "stopped"), "the failed-open audit annotation")
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets"
    refused = plane.api.call("POST", path, daemonset)
    # DaemonSets go to both webhooks (taint-toleration-rules validates every template): the
    # fail-closed one refuses them at once too.
    assert refused.status == 500 and refused.seconds < 3, (refused.status, refused.seconds)

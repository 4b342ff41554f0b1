"""`placement-webhooks review --plugin runtime-class --objects examples/runtimeclass.yaml`, run
as a real subprocess on the example RuntimeClass shipped in the repository."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.command import run_cli
from tests.reviews import pod, review
from webhooks.core.review import decode_patch

EXAMPLE = "examples/runtimeclass.yaml"
TIMEOUT = 60.0


def run_review(obj: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Pipe one AdmissionReview for ``obj`` into ``python -m webhooks review``."""
    done = run_cli(
        *("review", "--plugin", "runtime-class", "--objects", EXAMPLE, "-"),
        stdin=json.dumps(review(obj, uid="7f9c0a52-rc")),
        timeout=TIMEOUT,
    )
    return done, json.loads(done.stdout) if done.stdout else {}


def test_the_example_runtime_class_sets_overhead_and_scheduling() -> None:
    done, answer = run_review(pod(name="sandboxed", runtimeClassName="gvisor"))
    assert done.returncode == 0, done.stderr
    response = answer["response"]
    assert (answer["apiVersion"], answer["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert response["uid"] == "7f9c0a52-rc"
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    assert decode_patch(answer) == [
        {"op": "add", "path": "/spec/overhead", "value": {"cpu": "250m", "memory": "120Mi"}},
        {
            "op": "add",
            "path": "/spec/nodeSelector",
            "value": {"sandbox.example.com/runtime": "gvisor"},
        },
        {
            "op": "add",
            "path": "/spec/tolerations",
            "value": [
                {
                    "key": "sandbox.example.com/runtime",
                    "operator": "Equal",
                    "value": "gvisor",
                    "effect": "NoSchedule",
                }
            ],
        },
    ]
    assert response["auditAnnotations"] == {
        "runtime-class": 'RuntimeClass "gvisor" set overhead, nodeSelector, tolerations'
    }


@pytest.mark.parametrize(
    "overhead",
    [{"cpu": "500m", "memory": "120Mi"}, {"cpu": "250m"}],
    ids=["a larger cpu overhead is refused", "an overhead missing memory is refused"],
)
def test_a_pod_with_a_differing_overhead_is_denied_with_the_upstream_message(
    overhead: dict[str, str],
) -> None:
    done, answer = run_review(pod(name="sandboxed", runtimeClassName="gvisor", overhead=overhead))
    assert done.returncode == 0, done.stderr
    response = answer["response"]
    assert response["allowed"] is False
    assert "patch" not in response
    assert response["status"] == {
        "code": 403,
        "reason": "Forbidden",
        "message": 'pods "sandboxed" is forbidden: pod rejected: '
        "Pod's Overhead doesn't match RuntimeClass's defined Overhead",
    }


def test_an_equal_overhead_in_other_units_is_rewritten_in_the_runtime_class_spelling() -> None:
    obj = pod(
        name="sandboxed",
        runtimeClassName="gvisor",
        overhead={"cpu": "0.25", "memory": "125829120"},
        nodeSelector={"sandbox.example.com/runtime": "gvisor"},
    )
    done, answer = run_review(obj)
    assert done.returncode == 0, done.stderr
    assert answer["response"]["allowed"] is True
    patch = decode_patch(answer)
    assert patch[0] == {
        "op": "replace",
        "path": "/spec/overhead",
        "value": {"cpu": "250m", "memory": "120Mi"},
    }
    assert all(op["path"] != "/spec/nodeSelector" for op in patch)


def test_an_unknown_runtime_class_is_denied_as_not_found() -> None:
    done, answer = run_review(pod(name="sandboxed", runtimeClassName="kata"))
    assert done.returncode == 0, done.stderr
    assert answer["response"]["status"]["message"] == (
        'pods "sandboxed" is forbidden: pod rejected: RuntimeClass "kata" not found'
    )

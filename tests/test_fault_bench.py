"""The fault bench's own judgements: what a stored pod owes, how recovery is read, metric labels.

Why unit tests for a bench: its headline figure, pods admitted without the policy, must be
0 for the right reason; a check that never found anything missing would print 0 too.
"""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.harness.creators import Outcome, recovery
from controlplane.harness.faultstorm import samples
from controlplane.harness.policycheck import missing

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
GROUP_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
PIN = {"key": "dedicated", "operator": "In", "values": ["a"]}


def _pod(*, gpu: bool = False, tolerations: Any = (), terms: Any = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main"}
    if gpu:
        container["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    spec: dict[str, Any] = {"containers": [container], "tolerations": list(tolerations)}
    if terms is not None:
        required = {"nodeSelectorTerms": terms}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
    return {"metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(
    ("pod", "group", "lacks"),
    [
        pytest.param(_pod(), "", [], id="a pod owed nothing lacks nothing"),
        pytest.param(
            _pod(gpu=True), "", ["toleration nvidia.com/gpu"], id="a GPU pod needs the toleration"
        ),
        pytest.param(
            _pod(gpu=True, tolerations=[GPU_TOLERATION]), "", [], id="a tolerated GPU pod is fine"
        ),
        pytest.param(
            _pod(),
            "a",
            ["toleration dedicated=a", "affinity dedicated In [a]"],
            id="a tenant pod without either is missing both",
        ),
        pytest.param(
            _pod(tolerations=[GROUP_TOLERATION], terms=[{"matchExpressions": [PIN]}]),
            "a",
            [],
            id="a tenant pod with toleration and pin is fine",
        ),
        pytest.param(
            _pod(
                tolerations=[GROUP_TOLERATION],
                terms=[{"matchExpressions": [PIN]}, {"matchExpressions": []}],
            ),
            "a",
            ["affinity dedicated In [a]"],
            id="every required term must carry the pin",
        ),
        pytest.param(
            _pod(
                tolerations=[{**GROUP_TOLERATION, "value": "b"}],
                terms=[{"matchExpressions": [PIN]}],
            ),
            "a",
            ["toleration dedicated=a"],
            id="another group's toleration does not count",
        ),
    ],
)
def test_missing_names_what_a_stored_pod_lacks(pod: Any, group: str, lacks: list[str]) -> None:
    assert missing(pod, group) == lacks


@pytest.mark.parametrize(
    ("outcomes", "first", "steady", "failures_after"),
    [
        pytest.param([(11, True)], 1.0, 1.0, 0, id="no failure: steady at the first success"),
        pytest.param(
            [(10.5, False), (11, True), (12, False), (13, True)],
            1.0,
            3.0,
            2,
            id="steady only after the last failure",
        ),
        pytest.param(
            [(5, False), (9, True), (12, True)],
            2.0,
            2.0,
            0,
            id="failures during the fault end at its end",
        ),
        pytest.param([(12, False)], None, None, 1, id="no success after: no recovery"),
    ],
)
def test_recovery_counts_from_the_fault_end(
    outcomes: list[tuple[float, bool]],
    first: float | None,
    steady: float | None,
    failures_after: int,
) -> None:
    got = recovery([Outcome(at, ok, 201 if ok else 500) for at, ok in outcomes], 4.0, 10.0)
    assert (got.first, got.steady, got.failures_after) == (first, steady, failures_after)


def test_samples_read_labels_with_commas_and_quotes() -> None:
    text = (
        "# HELP x\n"
        'apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",'
        'name="mutate.a,b",rejection_code="503",type="admit"} 4\n'
        'apiserver_admission_webhook_rejection_count_other{name="x"} 9\n'
    )
    found = list(samples(text, "apiserver_admission_webhook_rejection_count"))
    assert found == [
        (
            {
                "error_type": "calling_webhook_error",
                "name": "mutate.a,b",
                "rejection_code": "503",
                "type": "admit",
            },
            4.0,
        )
    ]

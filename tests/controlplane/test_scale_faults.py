"""One of two webhook replicas SIGKILLed in the middle of a pod-create storm.

The small version of ``bench/scale/faults.py``'s first row: its own control plane, two
``serve`` replicas behind the modelled Service (:mod:`controlplane.harness.endpoints`),
registered as ``webhook-config --mutating-failure-policy=Fail`` prints them; a Deployment
of a few hundred GPU pods in a tenant namespace plus client threads creating pods, and one
replica killed four seconds in. Every stored pod is read back.

What must hold: no pod is stored without its policy (the tenant's toleration and node
affinity, the GPU toleration): a failure policy of ``Fail`` refuses what could not be
admitted, and the Namespace probe after the storm proves serve's caches still follow the
cluster. Failed creates are bounded, not zero: kube-apiserver calls a webhook once
(``mutating/dispatcher.go`` makes one ``Do``) and its REST client retries a broken
connection only for GET (``client-go/rest/request.go``), so the reviews the killed replica
held at that instant fail, and so do the connections the API server dials to its address
before the endpoint leaves the rotation (the kubelet's 1 s relist plus kube-proxy's 1 s
sync). Measured here: 1 or 2 failed creates of about 1,200 in four runs (300 Deployment
pods); the bound, 8, is the reviews a replica can hold (serve's 2 workers × 4 threads), and
every failure must be a broken or refused connection, never a refusal of another kind. With
3,000 pods, where the ReplicaSet controller's bursts make the API server dial more
connections, the bench measured 58 of 3,452.
"""

from __future__ import annotations

import pytest

from controlplane.harness import NotBuilt
from controlplane.harness.faultstorm import StormOptions, run_fault
from tests.controlplane.conftest import FIGURES

#: serve's default 2 workers × 4 threads: the reviews a replica can hold when it is killed.
IN_FLIGHT_BOUND = 8


def test_one_replica_killed_mid_storm_admits_no_pod_without_its_policy() -> None:
    options = StormOptions(pods=300, threads=2, lead=4.0, tail=6.0, settle=60.0)
    try:
        result = run_fault("replica-killed", options, say=lambda _line: None)
    except NotBuilt as exc:
        pytest.fail(str(exc), pytrace=False)
    FIGURES.append(
        f"replica killed mid-storm: {result.failed} of {result.attempted} creates failed,"
        f" {result.unpoliced} of {result.stored} stored pods without the policy"
    )
    assert result.unpoliced == 0, result.unpoliced_examples
    assert result.stored >= options.pods + 20, "the Deployment and the late pods were stored"
    assert result.deployment_seconds is not None, result.notes
    assert result.failed <= IN_FLIGHT_BOUND, (result.top_error, result.notes)
    connection = ("connection reset by peer", "EOF", "connection refused", "broken pipe")
    for message, _count in result.errors:
        assert any(cause in message for cause in connection), message
    assert result.recovery is not None and result.recovery.steady is not None

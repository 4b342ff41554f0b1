"""``apis``: the gates and APIs enabled settings need, from /metrics and discovery."""

from __future__ import annotations

from typing import Any

import pytest

from tests.install.doctor.fakeclient import FakeClient, installation, status
from webhooks.install.doctor import apis
from webhooks.install.doctor.findings import Status

NODE = ("GET", "/apis/node.k8s.io/v1")
DRA = ("GET", "/apis/resource.k8s.io/v1")
METRICS = ("GET", "/metrics")
SERVED_NODE = (200, {"resources": [{"name": "runtimeclasses"}]})
SERVED_DRA = (
    200,
    {
        "resources": [
            {"name": "deviceclasses"},
            {"name": "resourceclaims"},
            {"name": "resourceclaimtemplates"},
        ]
    },
)
DEVICE_CLAIMS = {"plugins": {"extended-resource-toleration": {"deviceClaims": True}}}
COMPARISONS = {"plugins": {"taint-toleration-rules": {"comparisonOperators": True}}}


def _metrics(**gates: int) -> tuple[int, str]:
    lines = [
        "# TYPE kubernetes_feature_enabled gauge",
        *(f'kubernetes_feature_enabled{{name="{n}",stage="ALPHA"}} {v}' for n, v in gates.items()),
        'apiserver_request_total{code="200"} 12',
    ]
    return 200, "\n".join(lines) + "\n"


def _statuses(found: list[Any], needle: str) -> list[Status]:
    return [f.status for f in found if needle in f.reason]


@pytest.mark.parametrize(
    ("config", "version", "metrics", "needle", "expected"),
    [
        pytest.param(
            DEVICE_CLAIMS,
            "v1.34.4",
            _metrics(DRAExtendedResource=0),
            "deviceClaims",
            [Status.FAIL],
            id="deviceClaims on 1.34 with the alpha gate off fails",
        ),
        pytest.param(
            DEVICE_CLAIMS,
            "v1.34.4",
            _metrics(DRAExtendedResource=1),
            "deviceClaims",
            [Status.OK],
            id="deviceClaims on 1.34 with the gate turned on by flag is ok",
        ),
        pytest.param(
            DEVICE_CLAIMS,
            "v1.34.4",
            status(403, 'forbidden: User "x" cannot get path "/metrics"'),
            "deviceClaims",
            [Status.WARN],
            id="deviceClaims on 1.34 with unreadable metrics warns: only the default is known",
        ),
        pytest.param(
            DEVICE_CLAIMS,
            "v1.37.2",
            status(403, "forbidden"),
            "deviceClaims",
            [Status.OK],
            id="deviceClaims where the gate is on by default is ok without metrics",
        ),
        pytest.param(
            DEVICE_CLAIMS,
            "v1.37.2",
            _metrics(DRAExtendedResource=0),
            "deviceClaims",
            [Status.FAIL],
            id="a gate on by default but turned off by flag fails",
        ),
        pytest.param(
            COMPARISONS,
            "v1.37.2",
            _metrics(TaintTolerationComparisonOperators=0),
            "comparisonOperators",
            [Status.FAIL],
            id="comparisonOperators behind the alpha gate, off, fails",
        ),
        pytest.param(
            None,
            "v1.37.2",
            _metrics(),
            "plugins.",
            [],
            id="the defaults need no gate",
        ),
    ],
)
def test_each_setting_that_needs_a_gate_is_judged_by_the_server_s_own_gates(
    config: dict[str, Any] | None,
    version: str,
    metrics: tuple[int, Any],
    needle: str,
    expected: list[Status],
) -> None:
    client = FakeClient({METRICS: metrics, NODE: SERVED_NODE, DRA: SERVED_DRA})
    found = apis.check(installation(client, config, version=version))
    assert _statuses(found, needle) == expected
    for finding in found:
        assert finding.check == "apis"
        assert (finding.status == Status.OK) == (finding.fix == "")


def test_a_failing_gate_says_which_flag_turns_it_on() -> None:
    client = FakeClient(
        {METRICS: _metrics(DRAExtendedResource=0), NODE: SERVED_NODE, DRA: SERVED_DRA}
    )
    found = apis.check(installation(client, DEVICE_CLAIMS, version="v1.34.4"))
    [failing] = [f for f in found if f.status == Status.FAIL]
    assert "--feature-gates=DRAExtendedResource=true" in failing.fix
    assert "plugins.extended-resource-toleration.deviceClaims" in failing.fix


def test_a_gate_absent_from_the_release_says_where_it_starts() -> None:
    # 1.34 has no such gate, so its metrics do not name it.
    client = FakeClient({METRICS: _metrics(DRAExtendedResource=0), NODE: SERVED_NODE})
    found = apis.check(installation(client, COMPARISONS, version="v1.34.4"))
    [failing] = [f for f in found if f.status == Status.FAIL]
    assert failing.fix.startswith("upgrade to Kubernetes 1.35")


@pytest.mark.parametrize(
    ("dra", "expected"),
    [
        pytest.param(
            SERVED_DRA, Status.OK, id="resource.k8s.io/v1 served: the claims are readable"
        ),
        pytest.param(
            status(404, "the server could not find the requested resource"),
            Status.FAIL,
            id="resource.k8s.io/v1 not served fails for the settings that read claims",
        ),
        pytest.param(
            (200, {"resources": [{"name": "deviceclasses"}]}),
            Status.FAIL,
            id="a group serving only some of the resources fails for the missing ones",
        ),
    ],
)
def test_the_groups_enabled_settings_read_are_served(
    dra: tuple[int, Any], expected: Status
) -> None:
    client = FakeClient({METRICS: _metrics(DRAExtendedResource=1), NODE: SERVED_NODE, DRA: dra})
    found = apis.check(installation(client, DEVICE_CLAIMS))
    claims = [f for f in found if f.reason.startswith("ResourceClaim (")]
    assert [f.status for f in claims] == [expected]
    if expected == Status.FAIL:
        assert "plugins.extended-resource-toleration" in claims[0].reason
        assert "--runtime-config=resource.k8s.io/v1=true" in claims[0].fix


def test_without_dra_settings_only_runtime_classes_are_asked_for() -> None:
    client = FakeClient({METRICS: _metrics(), NODE: SERVED_NODE})
    found = apis.check(installation(client))
    assert [f.reason for f in found] == ["RuntimeClass (node.k8s.io/v1) is served"]
    assert DRA not in [(m, p) for m, p, _ in client.asked]


def test_an_unknown_configuration_is_a_warning_saying_why() -> None:
    [finding] = apis.check(installation(FakeClient(), known=False))
    assert finding.status == Status.WARN
    assert "no ConfigMap placement-webhooks" in finding.reason


def test_an_unknown_release_is_said() -> None:
    client = FakeClient({METRICS: _metrics(), NODE: SERVED_NODE})
    found = apis.check(installation(client, version="v1.20.0"))
    assert any(f.status == Status.WARN and "judged as Kubernetes" in f.reason for f in found)


def test_a_server_that_does_not_answer_is_a_warning_not_an_exception() -> None:
    timeout = TimeoutError("read timed out")
    client = FakeClient({METRICS: timeout, NODE: timeout, DRA: timeout})
    found = apis.check(installation(client, DEVICE_CLAIMS, version="v1.34.4"))
    assert {f.status for f in found} == {Status.WARN}
    assert any("read timed out" in f.reason for f in found)

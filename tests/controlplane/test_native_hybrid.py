"""The hybrid installation against the webhooks alone, on the real API server: the policies
``export --hybrid`` prints and ``serve`` registered with ``webhook-config --native`` on one API
server, ``MODE=webhooks`` on the other, the same config and corpus.

A hybrid never runs a rule twice and keeps on the webhook whatever a policy cannot do
exactly (runtime-class's refusal of a missing RuntimeClass, dedicated-nodes' warnings), so
nothing may differ, not even what the report calls ``exact except``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controlplane.conftest import STARTS
from tests.controlplane.native import cases
from tests.controlplane.native.observe import Case, differences, run
from tests.controlplane.native.pair import Pair, pair

CONFIGS = Path(__file__).parent / "configs"
CORPUS_SIZE = 300


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(None, id="the built-in defaults (the chart's native.enabled)"),
        pytest.param(CONFIGS / "native-all.yaml", id="every plugin a policy can express"),
    ],
)
def hybrid(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """A hybrid API server and a webhooks-only one for one config."""
    with pair(request.param, hybrid=True) as started:
        STARTS.append(("hybrid + webhooks, 2 API servers", started.plane.started_in or 0))
        yield started


def test_the_hybrid_answers_every_case_as_the_webhooks_alone_do(
    hybrid: Pair, capsys: pytest.CaptureFixture[str]
) -> None:
    tally: Counter[str] = Counter()
    different = []
    for index, case in enumerate(cases.generated(CORPUS_SIZE, seed=20)):
        namespace = f"h{index}"
        found = differences(
            run(hybrid.webhooks, case, namespace), run(hybrid.native, case, namespace)
        )
        tally["differ" if found else "agree"] += 1
        if found:
            different.append(f"{case.id}: " + "; ".join(found))
    with capsys.disabled():
        print(f"\nhybrid vs webhooks, {CORPUS_SIZE} cases: {dict(tally)}")
    assert different == []


def test_a_default_pod_gets_the_webhook_s_tolerations_from_the_api_server_alone(
    hybrid: Pair,
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plain"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": cases.IMAGE,
                    "resources": {"limits": {"example.com/gpu": "1"}},
                }
            ]
        },
    }
    case = Case("plain", {}, pod)
    webhook, native = run(hybrid.webhooks, case, "plain"), run(hybrid.native, case, "plain")
    assert (
        native.fields["tolerations"]
        == webhook.fields["tolerations"]
        == [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ]
    )


def test_a_pod_naming_a_missing_runtime_class_is_refused_by_the_webhook_the_hybrid_keeps(
    hybrid: Pair,
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "missing"},
        "spec": {
            "runtimeClassName": "rc-missing",
            "containers": [{"name": "main", "image": cases.IMAGE}],
        },
    }
    observed = run(hybrid.native, Case("missing", {}, pod), "missing")
    assert observed.reason == 'pod rejected: RuntimeClass "rc-missing" not found'

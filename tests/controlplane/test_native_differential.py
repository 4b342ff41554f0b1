"""The exported policies against the webhooks, on the real API server: the same corpus sent to
an API server running the policies alone (no webhooks, the in-tree twins off) and to one in
``MODE=webhooks``, with one config each, for the built-in defaults and for every plugin on.

Every plugin the report calls ``exact`` must give the same answer (allowed or refused), the
same stored tolerations, nodeSelector, affinity and overhead, and warn where the webhook
warns. What the report calls ``exact except`` is allowed to differ exactly as it says, and
each such difference is also shown on its own below; anything else is unexplained and fails.

On a release whose CEL cannot express a plugin's half, ``export`` refuses it with the reason
and the native API server runs as a hybrid installation (:mod:`.native.pair`): the corpus
then holds the rest to the webhooks, and a test about a refused half says so and skips.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.harness.nativepolicies import ensure_namespace, type_checking
from tests.controlplane.conftest import STARTS
from tests.controlplane.native import cases
from tests.controlplane.native.observe import Case, Observation, differences, run
from tests.controlplane.native.pair import Pair, pair

CONFIGS = Path(__file__).parent / "configs"
CORPUS_SIZE = 400

NOT_FOUND = 'pod rejected: RuntimeClass "'
DEVICE_CLASS = "gpu.example.com"

#: DRA objects for the claim case: a class that declares no extended resource name.
DRA_OBJECTS: list[dict[str, Any]] = [
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {},
    }
]


def explained(webhook: Observation, native: Observation) -> str:
    """Which documented difference explains a disagreement ("" when none does).

    * runtime-class: a pod naming a RuntimeClass that does not exist is refused by the
      webhook and admitted natively (the report's ``exact except`` for runtime-class);
    * dedicated-nodes: the webhook warns about what it pinned, a policy cannot warn.
    """
    if not webhook.allowed and webhook.reason.startswith(NOT_FOUND):
        return "a RuntimeClass that does not exist"
    if webhook.allowed and native.allowed and webhook.fields == native.fields:
        missing = set(webhook.warned) - set(native.warned)
        notes = [
            w
            for w, p in zip(webhook.warnings, webhook.warned, strict=True)
            if p == "dedicated-nodes"
        ]
        only_notes = all(n.startswith(("added ", "nodeSelectorTerms[")) for n in notes)
        if missing == {"dedicated-nodes"} and set(native.warned) <= set(webhook.warned):
            return "dedicated-nodes' notes" if only_notes else ""
    return ""


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(None, id="the built-in defaults"),
        pytest.param(CONFIGS / "native-all.yaml", id="every plugin a policy can express"),
    ],
)
def both(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """A native and a webhook API server for one config."""
    with pair(request.param, DRA_OBJECTS) as started:
        STARTS.append(("native + webhooks, 2 API servers", started.plane.started_in or 0))
        yield started


def test_the_api_server_accepts_every_exported_policy_and_type_checks_it_clean(
    both: Pair,
) -> None:
    found = type_checking(both.native, both.policy_names)
    assert set(found) == set(both.policy_names)
    assert found or both.refused
    assert all(not checking.get("expressionWarnings") for checking in found.values())


def test_every_exact_plugin_answers_as_the_webhook_does_on_the_corpus(
    both: Pair, capsys: pytest.CaptureFixture[str]
) -> None:
    tally: Counter[str] = Counter()
    unexplained = []
    for index, case in enumerate(cases.generated(CORPUS_SIZE)):
        namespace = f"n{index}"
        webhook, native = run(both.webhooks, case, namespace), run(both.native, case, namespace)
        found = differences(webhook, native)
        if not found:
            tally["agree"] += 1
            continue
        why = explained(webhook, native)
        if why:
            tally[f"explained: {why}"] += 1
        else:
            unexplained.append(f"{case.id}: " + "; ".join(found))
    with capsys.disabled():
        print(f"\nnative vs webhooks, {CORPUS_SIZE} cases: {dict(sorted(tally.items()))}")
    assert unexplained == []


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": cases.IMAGE}], **spec},
    }


def test_a_pod_naming_a_runtime_class_that_does_not_exist_is_refused_only_by_the_webhook(
    both: Pair,
) -> None:
    if both.refused:
        pytest.skip(f"a hybrid here, whose webhook keeps this refusal: {sorted(both.refused)}")
    case = Case("missing", {}, _pod("missing", runtimeClassName="rc-missing"))
    webhook, native = run(both.webhooks, case, "missing"), run(both.native, case, "missing")
    assert webhook.reason == 'pod rejected: RuntimeClass "rc-missing" not found'
    assert native.allowed
    assert native.fields["tolerations"] is None  # none of the chain's changes either


def test_a_dedicated_pod_is_pinned_alike_but_only_the_webhook_says_so(both: Pair) -> None:
    if "dedicated-nodes" not in both.exported.plugins:
        pytest.skip("dedicated-nodes is not enabled in this config")
    if both.refused:
        pytest.skip(
            f"a hybrid here (the release refuses {sorted(both.refused)}), whose webhook keeps "
            "dedicated-nodes' mutating half, notes and all"
        )
    case = Case("pinned", {"name": "gpu-team"}, _pod("pinned"))
    webhook, native = run(both.webhooks, case, "gpu-team"), run(both.native, case, "gpu-team")
    assert webhook.fields == native.fields
    assert native.fields["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "dedicated", "operator": "In", "values": ["gpu"]}
                        ]
                    }
                ]
            }
        }
    }
    assert webhook.warned == ("dedicated-nodes", "dedicated-nodes")
    assert native.warnings == ()


def test_a_pod_with_a_device_claim_is_judged_only_by_the_webhook(both: Pair) -> None:
    if "placement-webhooks-extended-resource-toleration" not in both.policy_names:
        pytest.skip("extended-resource-toleration's enforce is off in this config")
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "claims"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}]
                }
            }
        },
    }
    pod = _pod(
        "claims",
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
        tolerations=[{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    case = Case("claims", {}, pod)
    observed = []
    for rest in (both.webhooks, both.native):
        ensure_namespace(rest, "claims")
        rest.apply_all([template])
        observed.append(run(rest, case, "claims"))
    webhook, native = observed
    assert not webhook.allowed
    assert "lets this pod onto nodes reserved for example.com/gpu" in webhook.reason
    assert native.allowed


def _tolerating(name: str, key: str, resources: dict[str, str]) -> dict[str, Any]:
    pod = _pod(name, tolerations=[{"key": key, "operator": "Exists", "effect": "NoSchedule"}])
    pod["spec"]["containers"][0]["resources"] = {"limits": resources}
    return pod


#: native-all.yaml guards example.com/gpu, earned by its own name, example.com/gpu-shared
#: and any example.com/mig-* resource; a pod, whether the config should admit it.
EARNED: list[Any] = [
    pytest.param(
        _tolerating("mig", "example.com/gpu", {"example.com/mig-1g": "1"}),
        True,
        id="a MIG-style request earns the guarded taint through its prefix alike",
    ),
    pytest.param(
        _tolerating("shared", "example.com/gpu", {"example.com/gpu-shared": "1"}),
        True,
        id="an exact earning name earns it alike",
    ),
    pytest.param(
        _tolerating("mesh", "mesh.example.io/not-ready", {"cpu": "100m"}),
        True,
        id="a key nobody guards is admitted alike",
    ),
    pytest.param(
        _tolerating("squatter", "example.com/gpu", {"example.com/gpu-sharedx": "1"}),
        False,
        id="a name that only starts with an exact earning name is refused alike",
    ),
    pytest.param(
        _tolerating("cpu", "example.com/gpu", {"cpu": "100m"}),
        False,
        id="a pod requesting nothing that earns the guarded taint is refused alike",
    ),
]


@pytest.mark.parametrize(("pod", "allowed"), EARNED)
def test_what_earns_a_guarded_taint_is_judged_alike(
    both: Pair, pod: dict[str, Any], allowed: bool
) -> None:
    if "placement-webhooks-extended-resource-toleration" not in both.policy_names:
        pytest.skip("extended-resource-toleration's enforce is off in this config")
    name = pod["metadata"]["name"]
    case = Case(name, {}, pod)
    webhook, native = (
        run(both.webhooks, case, f"earn-{name}"),
        run(both.native, case, f"earn-{name}"),
    )
    assert differences(webhook, native) == []
    assert webhook.allowed is allowed
    earners = "earns it (example.com/gpu, example.com/gpu-shared, any example.com/mig-* resource)"
    assert all(earners in o.reason for o in (webhook, native) if not allowed)


@pytest.mark.parametrize(
    ("count", "alike"),
    [
        pytest.param(100, True, id="a hundred tolerations on one key merge alike"),
        pytest.param(200, False, id="two hundred exceed the API server's CEL cost limit"),
    ],
)
def test_the_runtime_class_merge_is_bounded_by_the_cel_cost_limit(
    both: Pair, count: int, alike: bool
) -> None:
    """The report's second ``exact except`` for runtime-class: the webhook merges any number
    of tolerations, a policy only as many as one expression's cost budget allows."""
    if ("runtime-class", "mutate") in both.refused:
        pytest.skip(both.refusal("runtime-class"))
    tolerations = [
        {"key": "team", "operator": "Equal", "value": f"v{i}", "effect": "NoSchedule"}
        for i in range(count)
    ]
    pod = _pod(f"many{count}", runtimeClassName="rc-sandbox", tolerations=tolerations)
    case = Case(f"many{count}", {}, pod)
    webhook = run(both.webhooks, case, f"many{count}")
    native = run(both.native, case, f"many{count}")
    assert webhook.allowed
    if alike:
        assert differences(webhook, native) == []
    else:
        assert not native.allowed and "cost limit exceeded" in native.reason

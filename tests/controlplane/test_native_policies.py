"""Native policies on the real API server, one behaviour at a time: the example config's
policies are accepted and type-check clean, a staged rollout (actions per namespace, an
exception) answers as the webhook does, an expired exception is the difference the report
names, there is no JSON decoder for PodTolerationRestriction's annotations, and a
RuntimeClass policy recreated after its last removal no longer sees new RuntimeClasses.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.harness import ControllerManagerOptions, ControlPlaneOptions, running
from controlplane.harness.admission import read
from controlplane.harness.nativepolicies import API, ensure_namespace, install, type_checking
from controlplane.harness.rest import Rest, collection
from tests.controlplane.conftest import STARTS
from tests.controlplane.native import cases
from tests.controlplane.native.observe import Case, Observation, run
from tests.controlplane.native.pair import CONTROLLERS, Pair, export_here, native_options, pair

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = Path(__file__).parent / "configs"
EXAMPLE = ROOT / "examples" / "policy-tests" / "placement.yaml"
FOREIGN = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def rollout() -> Iterator[Pair]:
    """A native and a webhook API server for the staged-rollout config."""
    with pair(CONFIGS / "native-rollout.yaml") as started:
        STARTS.append(("native + webhooks, rollout", started.plane.started_in or 0))
        yield started


def _pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": cases.IMAGE}], **spec},
    }


def _both(rollout: Pair, case: Case, namespace: str) -> tuple[Observation, Observation]:
    return run(rollout.webhooks, case, namespace), run(rollout.native, case, namespace)


def test_the_example_config_s_policies_are_accepted_and_type_check_clean() -> None:
    """``placement-webhooks export --config examples/policy-tests/placement.yaml``: what a new
    user tries first, on an API server of its own."""
    options = ControlPlaneOptions(
        apiservers=(native_options(),),
        scheduler=False,
        controller_manager=ControllerManagerOptions(controllers=CONTROLLERS),
    )
    with running(options) as plane:
        rest = Rest(plane.api)
        exported = export_here(read(EXAMPLE))
        install(rest, list(exported.objects))
        names = [
            o["metadata"]["name"]
            for o in exported.objects
            if o["kind"] == "ValidatingAdmissionPolicy"
        ]
        found = type_checking(rest, names)
    assert set(found) == set(names)
    assert all(not checking.get("expressionWarnings") for checking in found.values())


@pytest.mark.parametrize(
    ("namespace", "metadata", "labels", "refused", "warned"),
    [
        pytest.param("prod", {"labels": {"env": "prod"}}, {}, True, False, id="production refuses"),
        pytest.param("dev", {}, {}, False, True, id="elsewhere it warns"),
        pytest.param(
            "monitoring", {}, {"app": "dcgm-exporter"}, False, False, id="the exception is silent"
        ),
    ],
)
def test_a_staged_rollout_answers_as_the_webhook_does(
    rollout: Pair,
    namespace: str,
    metadata: dict[str, Any],
    labels: dict[str, str],
    refused: bool,
    warned: bool,
) -> None:
    case = Case(
        namespace, {"name": namespace, **metadata}, _pod(namespace, labels, tolerations=[FOREIGN])
    )
    webhook, native = _both(rollout, case, namespace)
    assert (not webhook.allowed, not native.allowed) == (refused, refused)
    assert webhook.reason == native.reason
    assert (bool(webhook.warnings), bool(native.warnings)) == (warned, warned)
    assert webhook.warnings == native.warnings


def test_an_expired_exception_still_applies_natively(rollout: Pair) -> None:
    """The report: exceptions[1] (zone-spread-trial): exact except: expires ... not applied."""
    if rollout.refused and ("anti-affinity-topology", "validate") in rollout.exported.webhook:
        pytest.skip(
            "a hybrid here (the release refuses "
            f"{sorted(rollout.refused)}): the webhook keeps this half, expiry and all"
        )
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "topology.kubernetes.io/zone",
    }
    spec = {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }
    case = Case("trial", {"name": "trial"}, _pod("trial", **spec))
    webhook, native = _both(rollout, case, "trial")
    assert not webhook.allowed and "TopologyKey topology.kubernetes.io/zone" in webhook.reason
    assert native.allowed
    lines = export_here(read(CONFIGS / "native-rollout.yaml")).report()
    assert any(
        line.startswith("exceptions[1] (zone-spread-trial): exact except:") for line in lines
    )


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param("json.decode(s)", id="no json library"),
        pytest.param("base64.decode(s)", id="no encoders library"),
        pytest.param("s.parseJSON()", id="no JSON member function"),
    ],
)
def test_admission_cel_has_no_json_decoder_for_namespace_annotations(
    rollout: Pair, expression: str
) -> None:
    """Why pod-toleration-restriction is not exported: its annotations are JSON lists."""
    annotation = "scheduler.alpha.kubernetes.io/defaultTolerations"
    policy = {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "json-probe"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "variables": [
                {"name": "s", "expression": f"namespaceObject.metadata.annotations['{annotation}']"}
            ],
            "validations": [
                {"expression": f"size({expression.replace('s', 'variables.s', 1)}) >= 0"}
            ],
        },
    }
    answer = rollout.native.create(f"/apis/{API}/validatingadmissionpolicies", policy)
    assert answer.status == 422
    assert (
        "undeclared reference" in answer.message or "found no matching overload" in answer.message
    )


def test_a_runtime_class_policy_made_again_after_its_last_removal_sees_no_new_runtime_class() -> (
    None
):
    """Upstream: a param kind's informer for a built-in type comes from the API server's
    shared factory, which never restarts an informer it has stopped, and the last policy
    with that param kind going away stops it. With the in-tree RuntimeClass plugin off,
    nothing else keeps it running (docs/native.md, "Operating").
    """
    options = ControlPlaneOptions(
        apiservers=(native_options(),), scheduler=False, controller_manager=None
    )
    with running(options) as plane:
        rest = Rest(plane.api)
        rest.apply_all(cases.runtime_class_objects())
        exported = export_here(read(None), ("runtime-class",))
        if ("runtime-class", "mutate") in exported.refused:
            pytest.skip(next(line for line in exported.report() if "on Kubernetes" in line))
        objects = list(exported.objects)
        install(rest, objects)
        ensure_namespace(rest, "p")
        before = rest.create(
            "/api/v1/namespaces/p/pods?dryRun=All", _pod("a", runtimeClassName="rc-overhead")
        )
        for obj in reversed(objects):
            rest.call("DELETE", f"{collection(obj)}/{obj['metadata']['name']}")
        time.sleep(3)  # the policy sources notice, and stop the param informer
        later = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": "runc"}
        rest.apply_all(
            [later | {"metadata": {"name": "rc-later"}, "overhead": {"podFixed": {"cpu": "1"}}}]
        )
        rest.apply_all(objects)
        time.sleep(5)
        old = rest.create(
            "/api/v1/namespaces/p/pods?dryRun=All", _pod("b", runtimeClassName="rc-overhead")
        )
        new = rest.create(
            "/api/v1/namespaces/p/pods?dryRun=All", _pod("c", runtimeClassName="rc-later")
        )
    assert before.body["spec"]["overhead"] == {"cpu": "100m", "memory": "20Mi"}
    assert old.body["spec"]["overhead"] == {"cpu": "100m", "memory": "20Mi"}
    assert "overhead" not in new.body["spec"]

"""pod-node-selector: upstream's PodNodeSelector (spec §6), through the real chain."""

from __future__ import annotations

from typing import Any

import pytest

from tests.reviews import apply, decide_alone, pod
from webhooks.cluster.files import StaticCluster
from webhooks.core.config import load_config
from webhooks.core.plugin import Phase
from webhooks.core.result import Outcome
from webhooks.plugins import REGISTRY
from webhooks.plugins.pod_node_selector import CONFLICT, NAME, NOT_WHITELISTED

NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"


def decide(obj: dict[str, Any], **kw: Any) -> Outcome:
    return decide_alone(NAME, obj, **kw)


def forbidden(name: str, reason: str) -> str:
    return f'pods "{name}" is forbidden: {reason}'


def test_it_is_off_by_default_as_upstream() -> None:
    config = load_config(None, REGISTRY)
    assert not config.plugins[NAME].enabled
    assert config.settings(NAME).cluster_default_node_selector == ""


MERGES: list[tuple[str, dict[str, str] | None, dict[str, Any], dict[str, str] | None]] = [
    (
        "the annotation is merged into nodeSelector",
        {NODE_SELECTOR: "pool=a,kubernetes.io/arch=amd64"},
        {},
        {"pool": "a", "kubernetes.io/arch": "amd64"},
    ),
    (
        "the pod's own keys are kept",
        {NODE_SELECTOR: "pool=a"},
        {"nodeSelector": {"disk": "ssd"}},
        {"disk": "ssd", "pool": "a"},
    ),
    ("an absent annotation falls back to the cluster default", None, {}, {"tier": "general"}),
    ("an empty annotation blocks the cluster default", {NODE_SELECTOR: ""}, {}, None),
    (
        "an equal pair changes nothing",
        {NODE_SELECTOR: "pool=a"},
        {"nodeSelector": {"pool": "a"}},
        {"pool": "a"},
    ),
    (
        "spaces around keys and values are trimmed, as labels.ConvertSelectorToLabelsMap does",
        {NODE_SELECTOR: " pool = a , disk=ssd"},
        {},
        {"pool": "a", "disk": "ssd"},
    ),
]


@pytest.mark.parametrize(
    ("annotations", "spec", "want"), [c[1:] for c in MERGES], ids=[c[0] for c in MERGES]
)
def test_the_namespace_selector_is_merged_on_create(
    annotations: dict[str, str] | None, spec: dict[str, Any], want: dict[str, str] | None
) -> None:
    obj = pod(namespace="web", **spec)
    outcome = decide(
        obj,
        annotations=annotations,
        settings={"clusterDefaultNodeSelector": "tier=general"},
        phases=("mutate",),
    )
    assert outcome.allowed, outcome.message
    assert apply(obj, outcome.patch)["spec"].get("nodeSelector") == want


def test_the_patch_escapes_slashes_and_the_audit_annotation_says_where_from() -> None:
    outcome = decide(
        pod(namespace="web", nodeSelector={"a": "b"}),
        annotations={NODE_SELECTOR: "kubernetes.io/arch=amd64"},
    )
    assert outcome.patch == [
        {"op": "add", "path": "/spec/nodeSelector/kubernetes.io~1arch", "value": "amd64"}
    ]
    assert outcome.audit_annotations == {
        NAME: "nodeSelector gained kubernetes.io/arch=amd64 from namespace annotation"
    }
    assert outcome.warnings == ()


DENIALS: list[tuple[str, dict[str, Any], dict[str, str] | None, dict[str, Any], str]] = [
    (
        "a pod selector that contradicts the namespace's",
        pod(namespace="web", nodeSelector={"pool": "b"}),
        {NODE_SELECTOR: "pool=a"},
        {},
        forbidden("web", CONFLICT),
    ),
    (
        "a pod selector that contradicts the cluster default",
        pod(namespace="web", nodeSelector={"tier": "gpu"}),
        None,
        {"clusterDefaultNodeSelector": "tier=general"},
        forbidden("web", CONFLICT),
    ),
    (
        "a pair outside the namespace's whitelist",
        pod(namespace="web", nodeSelector={"pool": "cpu"}),
        None,
        {"nodeSelectorWhitelist": {"web": "pool=gpu"}},
        forbidden("web", NOT_WHITELISTED),
    ),
    (
        "the whitelist applies to the merged selector",
        pod(namespace="web"),
        {NODE_SELECTOR: "zone=a"},
        {"nodeSelectorWhitelist": {"web": "pool=gpu"}},
        forbidden("web", NOT_WHITELISTED),
    ),
    (
        "a pod with only generateName is named as upstream names it: not at all",
        {**pod(namespace="web", nodeSelector={"pool": "b"}), "metadata": {"generateName": "w-"}},
        {NODE_SELECTOR: "pool=a"},
        {},
        f"pods is forbidden: {CONFLICT}",
    ),
    (
        "an annotation that does not parse names the namespace and the annotation",
        pod(namespace="web"),
        {NODE_SELECTOR: "pool in (a)"},
        {},
        f"namespace 'web' annotation {NODE_SELECTOR}: invalid selector: [pool in (a)]",
    ),
]


#: The validating half sees the merged object, so a pod that only the merge makes wrong is
#: refused by the mutating half alone.
DENIAL_CASES = [
    (phase, *case[1:])
    for case in DENIALS
    for phase in ("mutate", "validate")
    if phase == "mutate" or case[1]["spec"].get("nodeSelector")
]
DENIAL_IDS = [
    f"{phase}: {case[0]}"
    for case in DENIALS
    for phase in ("mutate", "validate")
    if phase == "mutate" or case[1]["spec"].get("nodeSelector")
]


@pytest.mark.parametrize(
    ("phase", "obj", "annotations", "settings", "message"), DENIAL_CASES, ids=DENIAL_IDS
)
def test_both_halves_deny_with_upstreams_message(
    phase: Phase,
    obj: dict[str, Any],
    annotations: dict[str, str] | None,
    settings: dict[str, Any],
    message: str,
) -> None:
    outcome = decide(
        obj, annotations=annotations, settings=settings, phases=(phase,), namespace="web"
    )
    assert (outcome.allowed, outcome.code, outcome.message) == (False, 403, message)
    assert outcome.violations[0].field == "spec.nodeSelector"


WHITELISTED: list[tuple[str, dict[str, str], bool]] = [
    ("a whitelisted pair is allowed", {"pool": "gpu"}, True),
    ("another value is refused", {"pool": "cpu"}, False),
    ("a key outside the whitelist is refused", {"zone": "a"}, False),
    ("no nodeSelector is allowed", {}, True),
]


@pytest.mark.parametrize(
    ("selector", "allowed"), [c[1:] for c in WHITELISTED], ids=[c[0] for c in WHITELISTED]
)
def test_the_per_namespace_whitelist(selector: dict[str, str], allowed: bool) -> None:
    settings = {"nodeSelectorWhitelist": {"web": "pool=gpu"}}
    outcome = decide(pod(namespace="web", nodeSelector=selector), settings=settings)
    assert outcome.allowed is allowed


def test_another_namespaces_whitelist_does_not_apply() -> None:
    settings = {"nodeSelectorWhitelist": {"other": "pool=gpu"}}
    assert decide(pod(namespace="web", nodeSelector={"zone": "a"}), settings=settings).allowed


def test_update_is_not_handled_as_upstream() -> None:
    obj = pod(namespace="web", nodeSelector={"pool": "b"})
    outcome = decide(obj, annotations={NODE_SELECTOR: "pool=a"}, operation="UPDATE", old=obj)
    assert outcome.allowed and outcome.patch == []


def test_a_missing_namespace_still_gets_the_cluster_default() -> None:
    obj = pod(namespace="nowhere")
    settings = {"clusterDefaultNodeSelector": "tier=general"}
    outcome = decide(obj, settings=settings, cluster=StaticCluster())
    assert apply(obj, outcome.patch)["spec"]["nodeSelector"] == {"tier": "general"}


@pytest.mark.parametrize(
    "spec",
    [{"nodeSelector": "junk", "containers": []}, "junk"],
    ids=["a nodeSelector that is not a map", "a spec that is not an object"],
)
def test_malformed_fields_are_left_for_api_validation(spec: Any) -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    outcome = decide(obj, annotations={NODE_SELECTOR: "pool=a"}, namespace="web")
    assert outcome.allowed and outcome.patch == []

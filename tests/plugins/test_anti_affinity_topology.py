"""anti-affinity-topology mirrors LimitPodHardAntiAffinityTopology (spec §7)."""

from __future__ import annotations

from typing import Any

import pytest

from tests import reviews
from tests.reviews import pod, request
from webhooks.core.config import ConfigError, load_config
from webhooks.core.plugin import Context
from webhooks.core.result import Violation
from webhooks.plugins import REGISTRY
from webhooks.plugins.anti_affinity_topology import Settings, validate

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
PATH = f"spec.affinity.podAntiAffinity.{REQUIRED}"
SELECTOR = {"matchExpressions": [{"key": "security", "operator": "In", "values": ["S2"]}]}


def term(key: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"labelSelector": SELECTOR, "namespaces": [""]}
    if key is not None:
        out["topologyKey"] = key
    return out


def weighted(key: str) -> dict[str, Any]:
    return {"weight": 5, "podAffinityTerm": term(key)}


def anti(required: list[Any] | None = None, preferred: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if required is not None:
        body[REQUIRED] = required
    if preferred is not None:
        body[PREFERRED] = preferred
    return {"podAntiAffinity": body}


def denial(key: str, name: str = "web") -> str:
    return (
        f'pods "{name}" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has '
        f"TopologyKey {key} but only key kubernetes.io/hostname is allowed"
    )


# (id, affinity, expected violation or None)
CASES: list[tuple[str, dict[str, Any] | None, Violation | None]] = [
    ("a pod without affinity is allowed", None, None),
    ("an empty affinity is allowed", {}, None),
    ("a preferred term over az is allowed", anti(preferred=[weighted("az")]), None),
    (
        "required hostname plus preferred az is allowed",
        anti(required=[term(HOST)], preferred=[weighted("az")]),
        None,
    ),
    ("required hostname is allowed", anti(required=[term(HOST)]), None),
    (
        "required ' zone ' is refused without trimming",
        anti(required=[term(" zone ")]),
        Violation(denial(" zone "), f"{PATH}[0].topologyKey"),
    ),
    (
        "a list whose middle element is bad is refused at that element",
        anti(required=[term(HOST), term(" zone "), term(HOST)]),
        Violation(denial(" zone "), f"{PATH}[1].topologyKey"),
    ),
    (
        "an empty key is refused and leaves two spaces in the message",
        anti(required=[term("")]),
        Violation(denial(""), f"{PATH}[0].topologyKey"),
    ),
    (
        "a missing key counts as empty",
        anti(required=[term(None)]),
        Violation(denial(""), f"{PATH}[0].topologyKey"),
    ),
    (
        "the comparison is case-sensitive",
        anti(required=[term("Kubernetes.io/hostname")]),
        Violation(denial("Kubernetes.io/hostname"), f"{PATH}[0].topologyKey"),
    ),
    (
        "only the first of two offending terms is reported",
        anti(required=[term(ZONE), term("topology.kubernetes.io/region")]),
        Violation(denial(ZONE), f"{PATH}[0].topologyKey"),
    ),
    (
        "required pod affinity terms are not checked",
        {"podAffinity": {REQUIRED: [term(ZONE)], PREFERRED: [weighted(ZONE)]}},
        None,
    ),
    (
        "pod affinity over a zone next to hostname anti-affinity is allowed",
        {"podAffinity": {REQUIRED: [term(ZONE)]}, **anti(required=[term(HOST)])},
        None,
    ),
    ("an empty required list is allowed", anti(required=[]), None),
    (
        "a term that is not an object is skipped and the next one checked",
        anti(required=["junk", term(ZONE)]),
        Violation(denial(ZONE), f"{PATH}[1].topologyKey"),
    ),
]


def _pod(affinity: dict[str, Any] | None, **meta: Any) -> dict[str, Any]:
    obj = pod() if affinity is None else pod(affinity=affinity)
    if meta:
        obj["metadata"] = {k: v for k, v in {**obj["metadata"], **meta}.items() if v is not None}
    return obj


@pytest.mark.parametrize(
    ("affinity", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_inter_pod_affinity_admission(
    affinity: dict[str, Any] | None, expected: Violation | None, operation: str
) -> None:
    obj = _pod(affinity)
    old = obj if operation == "UPDATE" else None
    found = validate(request(obj, operation=operation, old=old), obj, Context(Settings()))
    assert found == ([] if expected is None else [expected])


def test_a_pod_with_only_generate_name_is_refused_without_a_name() -> None:
    obj = _pod(anti(required=[term(ZONE)]), name=None, generateName="web-")
    [violation] = validate(request(obj), obj, Context(Settings()))
    assert violation.message == (
        "pods is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has "
        "TopologyKey topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed"
    )


CUSTOM: list[tuple[str, tuple[str, ...], str, str | None]] = [
    ("a configured zone key is allowed", (HOST, ZONE), ZONE, None),
    (
        "a key outside a longer list names every allowed key",
        (HOST, ZONE),
        "topology.kubernetes.io/region",
        "affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey "
        "topology.kubernetes.io/region but only keys kubernetes.io/hostname, "
        "topology.kubernetes.io/zone are allowed",
    ),
    (
        "a single custom key keeps upstream's sentence",
        (ZONE,),
        HOST,
        "affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey "
        "kubernetes.io/hostname but only key topology.kubernetes.io/zone is allowed",
    ),
]


@pytest.mark.parametrize(
    ("allowed", "key", "reason"), [c[1:] for c in CUSTOM], ids=[c[0] for c in CUSTOM]
)
def test_allowed_topology_keys_from_the_config_file(
    allowed: tuple[str, ...], key: str, reason: str | None
) -> None:
    config = load_config(
        {"plugins": {"anti-affinity-topology": {"allowedTopologyKeys": list(allowed)}}},
        REGISTRY,
    )
    settings = config.settings("anti-affinity-topology")
    assert settings == Settings(allowed)
    obj = _pod(anti(required=[term(key)]))
    found = validate(request(obj), obj, Context(settings))
    assert [v.message for v in found] == (
        [] if reason is None else [f'pods "web" is forbidden: {reason}']
    )


BAD_CONFIG: list[tuple[str, Any, str]] = [
    (
        "an empty list names the key",
        [],
        "plugins.anti-affinity-topology.allowedTopologyKeys: must list at least one key",
    ),
    (
        "an empty key names the key",
        [HOST, ""],
        "plugins.anti-affinity-topology.allowedTopologyKeys: an empty key cannot be allowed",
    ),
    (
        "a bare string is not a list",
        HOST,
        "plugins.anti-affinity-topology.allowedTopologyKeys: must be a list",
    ),
    (
        "a non-string entry names its index",
        [HOST, 5],
        "plugins.anti-affinity-topology.allowedTopologyKeys[1]: must be a string",
    ),
]


@pytest.mark.parametrize(
    ("value", "message"), [c[1:] for c in BAD_CONFIG], ids=[c[0] for c in BAD_CONFIG]
)
def test_unusable_allowed_topology_keys_are_config_errors(value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(
            {"plugins": {"anti-affinity-topology": {"allowedTopologyKeys": value}}}, REGISTRY
        )
    assert str(caught.value).startswith(message)


ENABLED = {"plugins": {"anti-affinity-topology": {"enabled": True}}}


def test_it_is_off_by_default_as_upstream() -> None:
    obj = _pod(anti(required=[term(ZONE)]))
    assert reviews.decide(obj, phases=("validate",)).allowed
    assert not reviews.decide(obj, config=ENABLED, phases=("validate",)).allowed


def test_an_update_is_rechecked_even_when_affinity_did_not_change() -> None:
    obj = _pod(anti(required=[term(ZONE)]))
    relabelled = {**obj, "metadata": {**obj["metadata"], "labels": {"app": "web", "tier": "x"}}}
    outcome = reviews.decide(
        relabelled, config=ENABLED, phases=("validate",), operation="UPDATE", old=obj
    )
    assert not outcome.allowed
    assert (outcome.code, outcome.reason) == (403, "Forbidden")
    assert outcome.message == denial(ZONE)
    assert outcome.violations[0].field == f"{PATH}[0].topologyKey"
    assert outcome.denied_by == ("anti-affinity-topology",)


def test_a_workload_template_is_not_checked() -> None:
    template = _pod(anti(required=[term(ZONE)]))
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    assert reviews.decide(deployment, config=ENABLED, phases=("validate",)).allowed

"""Contract tests every plugin passes, parametrized over the registry (upstream's TestHandles
and TestOtherResources, plus patch and idempotence properties).

Tests that need an object run once per example object a half handles, so a plugin serving
several resources (DaemonSets and Pods, say) is held to the contract on each of them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests import reviews
from tests.plugins.examples import (
    BAD_SETTINGS,
    EXAMPLES,
    LOOKS_UP,
    MORE_EXAMPLES,
    SETTINGS,
    example_objects,
)
from tests.reviews import RESOURCES, Unreachable, apply, request
from webhooks.core.admission import Admission
from webhooks.core.config import ConfigError, load_config
from webhooks.core.plugin import PHASES, Mutator, Phase, Plugin, Validator
from webhooks.plugins import REGISTRY

HALVES = [
    (plugin, phase)
    for plugin in REGISTRY
    for phase in ("mutate", "validate")
    if plugin.half(phase) is not None  # type: ignore[arg-type]
]
IDS = [f"{p.name} {phase}" for p, phase in HALVES]
CONFIG = load_config(None, REGISTRY)
EXAMPLE_CONFIG = load_config({"plugins": SETTINGS}, REGISTRY)


def _group_resource(obj: dict[str, Any]) -> tuple[str, str]:
    group, _, resource = RESOURCES[obj["kind"]]
    return group, resource


def _handled(half: Mutator | Validator, obj: dict[str, Any]) -> bool:
    return _group_resource(obj) in half.resources


CASES = [
    (plugin, phase, obj)
    for plugin, phase in HALVES
    for obj in example_objects(plugin.name)
    if _handled(plugin.half(phase), obj)  # type: ignore[arg-type]
]
CASE_IDS = [f"{p.name} {phase} {obj['kind']}" for p, phase, obj in CASES]
MUTATE_CASES = [c for c in CASES if c[1] == "mutate"]
MUTATE_IDS = [i for c, i in zip(CASES, CASE_IDS, strict=True) if c[1] == "mutate"]


def _decide(plugin: Plugin, phase: Phase, obj: dict[str, Any], **kw: Any) -> Any:
    _, cluster = EXAMPLES[plugin.name]
    return reviews.decide(
        obj, config=EXAMPLE_CONFIG, cluster=cluster, phases=(phase,), only=plugin.name, **kw
    )


def _acts(outcome: Any) -> bool:
    return bool(outcome.patch) or not outcome.allowed


def test_every_plugin_has_a_contract_example() -> None:
    assert set(EXAMPLES) == set(REGISTRY.names)
    assert set(MORE_EXAMPLES) <= set(REGISTRY.names)


@pytest.mark.parametrize("plugin", list(REGISTRY), ids=list(REGISTRY.names))
def test_every_example_object_is_handled_by_its_plugin(plugin: Plugin) -> None:
    for obj in example_objects(plugin.name):
        assert any(_handled(half, obj) for half in (plugin.mutate, plugin.validate) if half)


@pytest.mark.parametrize(("plugin", "phase"), HALVES, ids=IDS)
def test_every_half_has_an_example_it_handles(plugin: Plugin, phase: Phase) -> None:
    assert any(p is plugin and ph == phase for p, ph, _ in CASES)


@pytest.mark.parametrize(("plugin", "phase", "obj"), CASES, ids=CASE_IDS)
def test_declared_operations_are_handled(plugin: Plugin, phase: Phase, obj: dict[str, Any]) -> None:
    half = plugin.half(phase)
    assert half is not None
    acted = False
    for operation in sorted(half.operations):
        old = copy.deepcopy(obj) if operation == "UPDATE" else None
        acted |= _acts(_decide(plugin, phase, obj, operation=operation, old=old))
    assert acted, "the example must make this half act on a declared operation"


@pytest.mark.parametrize(("plugin", "phase", "obj"), CASES, ids=CASE_IDS)
@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_undeclared_operations_are_no_ops(
    plugin: Plugin, phase: Phase, obj: dict[str, Any], operation: str
) -> None:
    half = plugin.half(phase)
    assert half is not None
    if operation in half.operations:
        pytest.skip("declared")
    outcome = _decide(plugin, phase, obj, operation=operation, old=copy.deepcopy(obj))
    assert outcome.allowed and not outcome.patch


@pytest.mark.parametrize(("plugin", "phase", "obj"), CASES, ids=CASE_IDS)
@pytest.mark.parametrize("sub", ["status", "binding", "eviction", "ephemeralcontainers", "resize"])
def test_subresources_are_left_alone(
    plugin: Plugin, phase: Phase, obj: dict[str, Any], sub: str
) -> None:
    outcome = _decide(plugin, phase, obj, sub_resource=sub, operation="UPDATE", old=obj)
    assert outcome.allowed and not outcome.patch


@pytest.mark.parametrize(("plugin", "phase"), HALVES, ids=IDS)
def test_other_resources_are_left_alone(plugin: Plugin, phase: Phase) -> None:
    half = plugin.half(phase)
    assert half is not None
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}}
    assert ("", "configmaps") not in half.resources
    outcome = _decide(plugin, phase, other, kind="ConfigMap")
    assert outcome.allowed and not outcome.patch


RESOURCE_HALVES = [
    (plugin, phase, kind)
    for plugin, phase in HALVES
    for kind, (group, _, resource) in RESOURCES.items()
    if (group, resource) in plugin.half(phase).resources  # type: ignore[union-attr]
]


@pytest.mark.parametrize(
    ("plugin", "phase", "kind"),
    RESOURCE_HALVES,
    ids=[f"{p.name} {phase} on {kind}" for p, phase, kind in RESOURCE_HALVES],
)
def test_an_object_of_the_wrong_kind_is_a_bad_request_or_ignored(
    plugin: Plugin, phase: Phase, kind: str
) -> None:
    group, _, resource = RESOURCES[kind]
    wrong = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    outcome = _decide(plugin, phase, wrong, kind="Secret", group=group, resource=resource)
    if plugin.wrong_kind is None:
        assert outcome.allowed and not outcome.patch
    else:
        assert not outcome.allowed
        assert (outcome.code, outcome.reason) == (400, "BadRequest")
        assert outcome.message == plugin.wrong_kind.format(kind="*core.Secret", expected=kind)


@pytest.mark.parametrize(("plugin", "phase", "obj"), CASES, ids=CASE_IDS)
def test_the_input_is_never_mutated(plugin: Plugin, phase: Phase, obj: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    _decide(plugin, phase, obj)
    assert obj == before


@pytest.mark.parametrize(("plugin", "phase", "obj"), MUTATE_CASES, ids=MUTATE_IDS)
def test_the_patch_applies_and_a_second_run_gives_no_patch(
    plugin: Plugin, phase: Phase, obj: dict[str, Any]
) -> None:
    outcome = _decide(plugin, phase, obj)
    assert outcome.patch, "the example must produce a patch"
    patched = apply(obj, outcome.patch)
    assert patched == outcome.obj
    again = _decide(plugin, phase, patched)
    assert again.patch == []


LOOKUP_PHASES: list[tuple[Phase, ...]] = [("mutate",), ("validate",), PHASES]


@pytest.mark.parametrize("phases", LOOKUP_PHASES, ids=["mutate", "validate", "both phases"])
@pytest.mark.parametrize("plugin", list(REGISTRY), ids=list(REGISTRY.names))
def test_a_failed_lookup_is_an_internal_error(plugin: Plugin, phases: tuple[Phase, ...]) -> None:
    """Upstream answers a lookup it cannot complete with an internal error: neither a denial
    (the pod may be fine) nor an admission (the policy was not applied)."""
    obj, cluster = EXAMPLES[plugin.name]
    unreachable = Unreachable()
    kw = {"config": EXAMPLE_CONFIG, "phases": phases, "only": plugin.name}
    outcome = reviews.decide(obj, cluster=unreachable, **kw)
    if plugin.name not in LOOKS_UP:
        assert unreachable.lookups == 0
        assert outcome == reviews.decide(obj, cluster=cluster, **kw)
        return
    assert unreachable.lookups > 0
    assert (outcome.allowed, outcome.code, outcome.reason) == (False, 500, "InternalError")
    assert "cluster lookup failed: timed out" in outcome.message


BAD = [
    *((name, *case) for name, cases in BAD_SETTINGS.items() for case in cases),
    *(
        (name, "a key it does not have", {"noSuchSetting": 1}, "noSuchSetting: unknown key")
        for name in REGISTRY.names
    ),
]


@pytest.mark.parametrize(
    ("plugin", "section", "message"),
    [(name, section, message) for name, _, section, message in BAD],
    ids=[f"{name}: {case}" for name, case, _, _ in BAD],
)
def test_a_bad_setting_names_its_key(plugin: str, section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"plugins": {plugin: section}}, REGISTRY)
    assert str(caught.value).startswith(f"plugins.{plugin}.{message}")


def test_the_whole_default_chain_is_idempotent() -> None:
    admission = Admission(REGISTRY, CONFIG)
    for name in REGISTRY.names:
        for obj in example_objects(name):
            first = admission.decide(request(obj), ("mutate",))
            if not first.allowed:
                continue
            patched = apply(obj, first.patch)
            assert admission.decide(request(patched), ("mutate",)).patch == []

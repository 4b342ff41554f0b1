"""Contract tests every plugin passes, parametrized over the registry (upstream's TestHandles
and TestOtherResources, plus patch and idempotence properties)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.plugins.examples import EXAMPLES, SETTINGS
from tests.reviews import RESOURCES, apply, request
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.plugin import Phase, Plugin
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


def _decide(plugin: Plugin, phase: Phase, obj: dict[str, Any], **kw: Any) -> Any:
    _, cluster = EXAMPLES[plugin.name]
    admission = Admission(REGISTRY, EXAMPLE_CONFIG, cluster)
    return admission.decide(request(obj, **kw), (phase,), plugin.name)


def _acts(outcome: Any) -> bool:
    return bool(outcome.patch) or not outcome.allowed


def test_every_plugin_has_a_contract_example() -> None:
    assert set(EXAMPLES) == set(REGISTRY.names)


@pytest.mark.parametrize(("plugin", "phase"), HALVES, ids=IDS)
def test_declared_operations_are_handled(plugin: Plugin, phase: Phase) -> None:
    obj, _ = EXAMPLES[plugin.name]
    half = plugin.half(phase)
    assert half is not None
    acted = False
    for operation in sorted(half.operations):
        old = copy.deepcopy(obj) if operation == "UPDATE" else None
        acted |= _acts(_decide(plugin, phase, obj, operation=operation, old=old))
    assert acted, "the example must make this half act on a declared operation"


@pytest.mark.parametrize(("plugin", "phase"), HALVES, ids=IDS)
@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_undeclared_operations_are_no_ops(plugin: Plugin, phase: Phase, operation: str) -> None:
    obj, _ = EXAMPLES[plugin.name]
    half = plugin.half(phase)
    assert half is not None
    if operation in half.operations:
        pytest.skip("declared")
    outcome = _decide(plugin, phase, obj, operation=operation, old=copy.deepcopy(obj))
    assert outcome.allowed and not outcome.patch


@pytest.mark.parametrize(("plugin", "phase"), HALVES, ids=IDS)
@pytest.mark.parametrize("sub", ["status", "binding", "eviction", "ephemeralcontainers", "resize"])
def test_subresources_are_left_alone(plugin: Plugin, phase: Phase, sub: str) -> None:
    obj, _ = EXAMPLES[plugin.name]
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


@pytest.mark.parametrize(("plugin", "phase"), HALVES, ids=IDS)
def test_an_object_of_the_wrong_kind_is_a_bad_request_or_ignored(
    plugin: Plugin, phase: Phase
) -> None:
    half = plugin.half(phase)
    assert half is not None
    group, _, resource = next(
        (g, v, r) for k, (g, v, r) in RESOURCES.items() if (g, r) in half.resources
    )
    wrong = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    outcome = _decide(plugin, phase, wrong, kind="Secret", group=group, resource=resource)
    if plugin.wrong_kind is None:
        assert outcome.allowed and not outcome.patch
    else:
        assert not outcome.allowed
        assert (outcome.code, outcome.reason) == (400, "BadRequest")
        assert "*core.Secret" in outcome.message


@pytest.mark.parametrize(("plugin", "phase"), HALVES, ids=IDS)
def test_the_input_is_never_mutated(plugin: Plugin, phase: Phase) -> None:
    obj, _ = EXAMPLES[plugin.name]
    before = copy.deepcopy(obj)
    _decide(plugin, phase, obj)
    assert obj == before


@pytest.mark.parametrize(
    ("plugin", "phase"),
    [h for h in HALVES if h[1] == "mutate"],
    ids=[i for h, i in zip(HALVES, IDS, strict=True) if h[1] == "mutate"],
)
def test_the_patch_applies_and_a_second_run_gives_no_patch(plugin: Plugin, phase: Phase) -> None:
    obj, _ = EXAMPLES[plugin.name]
    outcome = _decide(plugin, phase, obj)
    assert outcome.patch, "the example must produce a patch"
    patched = apply(obj, outcome.patch)
    assert patched == outcome.obj
    again = _decide(plugin, phase, patched)
    assert again.patch == []


def test_the_whole_default_chain_is_idempotent() -> None:
    admission = Admission(REGISTRY, CONFIG)
    for obj, _ in EXAMPLES.values():
        first = admission.decide(request(obj), ("mutate",))
        if not first.allowed:
            continue
        patched = apply(obj, first.patch)
        assert admission.decide(request(patched), ("mutate",)).patch == []
